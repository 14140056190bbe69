"""The stock partitioning path and partition-planner on the same graph and support table, one run.

    python scripts/side_by_side.py GRAPH.json [GRAPH.json ...] [--timeout SECONDS]

For each bridge JSON document: rebuild its FX graph (placeholders, call_function nodes with their
arguments and users, the output), then time

- the stock path: torch.fx's ``CapabilityBasedPartitioner`` as ``CoreMLPartitioner`` builds it
  (``allows_single_node_partition=True``; the constructor builds the per-node descendant sets),
  ``propose_partitions()``, and ``fuser_utils.validate_partition`` on every proposed partition;
- partition-planner end to end through its Python binding: parse the same JSON text, analyse, plan,
  verify the plan with the independent checker, and emit the plan JSON.

Both read the document's own ``supported`` table. The stock path runs in a child process so that a
graph it cannot finish within ``--timeout`` (default 600 s) is reported as such. Prints one line per
graph with both times, their ratio and the partition counts. Needs torch and partition_planner.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import time
from pathlib import Path


def _fx_graph(doc: dict):
    """The document's graph as a torch.fx GraphModule whose nodes keep the document's names."""
    import torch
    import torch.fx as fx

    graph = fx.Graph()
    made: dict = {}

    def target_of(name: str):
        # A distinct callable per op target: FX only needs something callable to call.
        if name not in made:
            def op(*args, **kwargs):  # pragma: no cover - never executed
                raise RuntimeError(name)

            op.__name__ = name.replace(".", "_")
            made[name] = op
        return made[name]

    nodes: dict = {}

    def arg(value):
        if isinstance(value, dict):
            if set(value) == {"node"}:
                return nodes[value["node"]]
            return {k: arg(v) for k, v in value.items()}
        if isinstance(value, list):
            return [arg(v) for v in value]
        return value

    for n in doc["nodes"]:
        if n["op"] == "placeholder":
            node = graph.placeholder(n["name"])
        elif n["op"] == "output":
            node = graph.output(arg(n["args"])[0])
        elif n["op"] == "get_attr":
            node = graph.create_node("get_attr", n["target"], name=n["name"])
        else:
            node = graph.create_node(
                "call_function", target_of(n["target"]), tuple(arg(n["args"])), arg(n.get("kwargs", {})), name=n["name"]
            )
        node.name = n["name"]
        nodes[n["name"]] = node
    return fx.GraphModule(torch.nn.Module(), graph)


def _stock(doc: dict, out) -> None:
    """Child process: build the FX graph (untimed), then time the stock path."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupportBase
    from torch.fx.passes.utils.fuser_utils import validate_partition

    supported = {
        n["name"] for n in doc["nodes"] if n["op"] == "call_function" and n.get("supported", n.get("delegation_tag") is not None)
    }

    class Support(OperatorSupportBase):
        def is_node_supported(self, submodules, node) -> bool:
            return node.name in supported

    gm = _fx_graph(doc)
    start = time.perf_counter()
    partitioner = CapabilityBasedPartitioner(gm, Support(), allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    valid = all(validate_partition(list(p.nodes)) for p in partitions)
    out.put((time.perf_counter() - start, len(partitions), valid))


def stock_path(doc: dict, timeout: float):
    """(seconds, partitions, all valid), or None when it did not finish within ``timeout``."""
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_stock, args=(doc, out))
    child.start()
    child.join(timeout)
    if child.is_alive():
        child.kill()
        child.join()
        return None
    return out.get() if not out.empty() else None


def planner_path(text: str, repeats: int = 5):
    """Median seconds of partition-planner end to end (JSON text in, plan JSON out), and the plan."""
    from partition_planner import _native

    times, plan = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        plan = _native.plan(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times), json.loads(plan)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="+", type=Path)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds the stock path may take per graph")
    args = parser.parse_args(argv)
    print(f"{'graph':<44} {'nodes':>9} {'stock path':>12} {'planner':>10} {'ratio':>9} {'stock parts':>11} {'planned':>8}")
    for path in args.graphs:
        text = path.read_text()
        doc = json.loads(text)
        planner_s, plan = planner_path(text)
        stock = stock_path(doc, args.timeout)
        nodes, planned = len(doc["nodes"]), plan["stats"]["partitions"]
        if stock is None:
            print(
                f"{path.stem:<44} {nodes:>9} {'>' + format(args.timeout, '.0f') + ' s':>12} {planner_s * 1e3:>8.2f}ms "
                f"{'>' + format(args.timeout / planner_s, '.0f') + 'x':>9} {'-':>11} {planned:>8}  (stock path not finished)"
            )
            continue
        stock_s, stock_parts, valid = stock
        note = "" if valid else "  (a stock partition failed validate_partition)"
        print(
            f"{path.stem:<44} {nodes:>9} {stock_s:>10.3f} s {planner_s * 1e3:>8.2f}ms {stock_s / planner_s:>8.0f}x "
            f"{stock_parts:>11} {planned:>8}{note}"
        )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

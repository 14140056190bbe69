"""Times the drop-in's partition() against stock CoreMLPartitioner.partition() on Qwen3.5 (issue #11).

    python scripts/bench_partition.py [--layers 24,64] [--runs 3] [--lowering-runs 3] [--profile]

Run it with the python of a venv holding executorch, coremltools and the partition_planner wheel
(scripts/test-all makes them), from the repository root. For each layer count it builds the
Qwen3.5 topology of ``partition_planner.testing.llm`` (random weights, shrunk widths; 64 layers
repeat the released pattern of three gated delta-net layers and one full attention layer), gets
the edge program stock's partition() receives inside ``to_edge_transform_and_lower`` once, then
times in this one process, each on a fresh deep copy (not timed), after a garbage collection, the
two sides run in turn:
- ``CoreMLPartitioner(...).partition(ep)`` against ``PlannedCoreMLPartitioner(...).partition(ep)``,
  take-over on, iOS18 (the median of ``--runs`` stock runs, at least 3, and of ``--planned-runs``);
- the whole ``to_edge_transform_and_lower`` from the exported program with either partitioner,
  Core ML conversion included (the median of ``--lowering-runs``; 0 skips it). With take-over on,
  stock fails on executorch 1.5 (SpecViolationError: the gated delta rule is CPU-only), so this
  row is timed with take-over off, which both lower.
``--profile`` prints where the planned partition() spends its time (cProfile, cumulative).

``--stock-only`` times stock's partition() alone and prints one JSON line per layer count: the fx
peer of ``scripts/bench_cli.py``.

``--conversion`` measures conversion probes (issue #30, docs/conversion.md) instead. For Qwen3.5 at
``--layers`` it times the drop-in's ``partition()`` with probes on, the verdict cache warm, against
probes off (``check_conversion=False``), in turn (``--planned-runs`` each). For each LLM of data/ it
then lowers the whole program (``to_edge_transform_and_lower``, take-over off as export_llm runs it)
once with a cold cache (a fresh directory: every distinct signature probed, the ops kept whole
before decomposition included), once warm and once with probes off, and prints the distinct
signatures, the probes run and the seconds they took.

``--cold`` times, for Qwen3.5 at ``--layers``, what a first export meets: the whole
``to_edge_transform_and_lower`` (take-over off, which both lower) with either partitioner, the
drop-in's verdict cache empty at each run (a fresh directory), in turn (``--lowering-runs`` each),
and inside it the seconds of ``partition()`` and of the partitioner's two calls together
(``ops_to_not_decompose``, which executorch calls twice before decomposing and once after
lowering, and ``partition()``): the drop-in probes and plans in the first.

``--small`` times small programs instead (``--runs`` of each, at least 31: they take a
millisecond): the seed models of ``partition_planner.testing`` (one sliced and one whole buffer
update), a linear layer with a residual add, and one Llama 3.2 layer, each with take-over on and
off, both partition()s called directly and inside ``to_edge_transform_and_lower``. A drop-in slower
than stock on a small single-partition program is a regression too.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import json
import logging
import os
import pstats
import statistics
import time
from importlib import metadata

import coremltools as ct
import torch
from executorch.backends.apple.coreml.compiler import CoreMLBackend
from executorch.backends.apple.coreml.partition import CoreMLPartitioner
from executorch.exir import to_edge_transform_and_lower
from executorch.exir.backend.partitioner import PartitionResult

from partition_planner import PlannedCoreMLPartitioner
from partition_planner.testing import SliceCache, WholeCache, llm, seed_steps

MODEL = "qwen3_5_0_8b"


def specs():
    return CoreMLBackend.generate_compile_specs(
        compute_precision=ct.precision.FLOAT32,
        compute_unit=ct.ComputeUnit.ALL,
        minimum_deployment_target=ct.target.iOS18,
    )


class _Untouched(CoreMLPartitioner):
    """Keeps what the Core ML partitioner keeps from decomposition, and tags nothing."""

    def partition(self, exported_program):
        return PartitionResult(tagged_exported_program=exported_program, partition_tags={})


def timed_in_turn(runs, prepare, counts):
    """Times each of ``runs`` (name -> function of ``prepare()``'s result) in turn, round after
    round, until each has had its ``counts[name]`` runs, so that a drift in the machine's speed
    falls on all alike; ``prepare`` and a garbage collection precede each run, untimed. Returns
    name -> (median, all times)."""
    times = {name: [] for name in runs}
    for round_ in range(max(counts.values())):
        for name, run in runs.items():
            if round_ >= counts[name]:
                continue
            arg = prepare()
            gc.collect()
            start = time.perf_counter()
            run(arg)
            times[name].append(time.perf_counter() - start)
    return {name: (statistics.median(t), t) for name, t in times.items()}


def fmt(seconds):
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


class LinearResidual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.linear(x)) + x


def edge_program(model, example):
    """The edge program stock's partition() receives inside to_edge_transform_and_lower."""
    exported = torch.export.export(model.eval().requires_grad_(False), example, strict=False)
    return exported, to_edge_transform_and_lower(copy.deepcopy(exported), partitioner=[_Untouched(compile_specs=specs())]).exported_program()


def small(runs):
    """Each small program, each take-over setting: both partition()s called directly on fresh copies
    of the edge program, in turn, and called where a user's call lands, inside
    to_edge_transform_and_lower (a deeper stack: stock's deprecation check reads every frame's
    source), the two lowerings in turn."""
    cases = {
        "seed: sliced buffer update": (SliceCache(), seed_steps()[0]),
        "seed: whole buffer update": (WholeCache(), seed_steps()[0]),
        "linear + residual add": (LinearResidual(), (torch.randn(2, 8),)),
        "Llama 3.2, 1 layer": llm("llama3_2_1b", n_layers=1),
    }
    count = max(31, runs)
    print(f"| program | nodes | take-over | called directly: stock | planned | stock / planned | in to_edge_transform_and_lower ({count // 4} runs): stock | planned | stock / planned |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for label, (model, example) in cases.items():
        exported, program = edge_program(model, example)
        fresh = lambda: copy.deepcopy(program)  # noqa: E731
        for take_over in (True, False):
            stock = lambda ep: CoreMLPartitioner(compile_specs=specs(), take_over_mutable_buffer=take_over).partition(ep)  # noqa: E731
            planned = lambda ep: PlannedCoreMLPartitioner(compile_specs=specs(), take_over_mutable_buffer=take_over, log_explanations=False).partition(ep)  # noqa: E731
            t = timed_in_turn({"stock": stock, "planned": planned}, fresh, {"stock": count, "planned": count})
            (s, _), (p, _) = t["stock"], t["planned"]
            inside = {"stock": [], "planned": []}
            for _ in range(count // 4):
                for side, cls in (("stock", CoreMLPartitioner), ("planned", PlannedCoreMLPartitioner)):
                    kwargs = {"log_explanations": False} if side == "planned" else {}
                    seconds = {"partition": 0.0, "ops_to_not_decompose": 0.0}
                    part = _timed_calls(cls, seconds)(compile_specs=specs(), take_over_mutable_buffer=take_over, **kwargs)
                    gc.collect()
                    to_edge_transform_and_lower(copy.deepcopy(exported), partitioner=[part])
                    inside[side].append(seconds)
            med = lambda side, both: statistics.median(  # noqa: E731
                r["partition"] + (r["ops_to_not_decompose"] if both else 0.0) for r in inside[side]
            )
            ls, lp, bs, bp = med("stock", False), med("planned", False), med("stock", True), med("planned", True)
            print(
                f"| {label} | {len(program.graph.nodes)} | {'on' if take_over else 'off'} | {s * 1e3:.2f} ms | {p * 1e3:.2f} ms | {s / p:.2f}× "
                f"| {ls * 1e3:.2f} ms | {lp * 1e3:.2f} ms | {ls / lp:.2f}× | {bs * 1e3:.2f} ms | {bp * 1e3:.2f} ms | {bs / bp:.2f}× |",
                flush=True,
            )


def _timed_calls(cls, seconds: dict):
    """``cls`` with ``partition()`` and ``ops_to_not_decompose()`` timed into ``seconds``."""

    class Timed(cls):
        def partition(self, exported_program):
            start = time.perf_counter()
            try:
                return super().partition(exported_program)
            finally:
                seconds["partition"] += time.perf_counter() - start

        def ops_to_not_decompose(self, ep):
            start = time.perf_counter()
            try:
                return super().ops_to_not_decompose(ep)
            finally:
                seconds["ops_to_not_decompose"] += time.perf_counter() - start

    return Timed


def cold(layers_list, runs):
    """A first export with the drop-in against stock: the whole lowering, the drop-in's cache empty."""
    import tempfile

    print(f"executorch {metadata.version('executorch')}, torch {metadata.version('torch')}, coremltools {metadata.version('coremltools')}")
    print("| Qwen3.5 | `partition()`: stock | drop-in | both calls: stock | drop-in | lowering: stock | drop-in | drop-in / stock |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for layers in layers_list:
        model, example = llm(MODEL, n_layers=layers)
        exported = torch.export.export(model.eval().requires_grad_(False), example, strict=False)
        measured = {"stock": [], "planned": []}

        def lower(side):
            seconds = {"partition": 0.0, "ops_to_not_decompose": 0.0}
            cls = _timed_calls(CoreMLPartitioner if side == "stock" else PlannedCoreMLPartitioner, seconds)
            kwargs = {} if side == "stock" else {"log_explanations": False}
            part = cls(compile_specs=specs(), take_over_mutable_buffer=False, **kwargs)
            with tempfile.TemporaryDirectory() as cache:
                os.environ["PARTITION_PLANNER_CACHE_DIR"] = cache
                program = copy.deepcopy(exported)
                gc.collect()
                start = time.perf_counter()
                to_edge_transform_and_lower(program, partitioner=[part])
                seconds["lowering"] = time.perf_counter() - start
                del os.environ["PARTITION_PLANNER_CACHE_DIR"]
            measured[side].append(seconds)

        for _ in range(max(1, runs)):
            for side in ("stock", "planned"):
                lower(side)
        med = {
            side: {k: statistics.median(r[k] for r in rows) for k in ("partition", "ops_to_not_decompose", "lowering")}
            for side, rows in measured.items()
        }
        s, p = med["stock"], med["planned"]
        both = lambda m: m["partition"] + m["ops_to_not_decompose"]  # noqa: E731
        print(
            f"| {layers} layers | {fmt(s['partition'])} | {fmt(p['partition'])} | {fmt(both(s))} | {fmt(both(p))} "
            f"| {fmt(s['lowering'])} | {fmt(p['lowering'])} | {p['lowering'] / s['lowering']:.3f}× |",
            flush=True,
        )


def _conversion_stats(part) -> dict:
    probes = part._conversion_probes()
    return {"signatures": len(probes.asked), "probed": probes.probed, "probe_seconds": probes.seconds}


def conversion(layers_list, planned_runs):
    """Probes on with a warm cache against probes off, and the cold cost on each data/ LLM."""
    import tempfile

    from partition_planner.testing import LLMS

    print(f"executorch {metadata.version('executorch')}, torch {metadata.version('torch')}, coremltools {metadata.version('coremltools')}")
    print("| Qwen3.5 | nodes | planned partition(), probes off | probes on, cache warm | on / off |")
    print("|---|---:|---:|---:|---:|")
    for layers in layers_list:
        _, program = edge_program(*llm(MODEL, n_layers=layers))
        fresh = lambda: copy.deepcopy(program)  # noqa: E731
        part = lambda check: PlannedCoreMLPartitioner(  # noqa: E731
            compile_specs=specs(), take_over_mutable_buffer=True, log_explanations=False, check_conversion=check
        )
        part(True).partition(fresh())  # fills the cache (untimed)
        runs = {"off": lambda ep: part(False).partition(ep), "on": lambda ep: part(True).partition(ep)}
        t = timed_in_turn(runs, fresh, {"off": max(3, planned_runs), "on": max(3, planned_runs)})
        (off, _), (on, _) = t["off"], t["on"]
        print(f"| {layers} layers | {len(program.graph.nodes):,} | {fmt(off)} | {fmt(on)} | {on / off:.2f}× |", flush=True)

    print("\n| LLM (data/) | nodes after lowering | distinct signatures | probes, cold cache | seconds in probes | lowering: cold | warm | probes off |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in LLMS:
        model, example = llm(name)
        exported = torch.export.export(model.eval().requires_grad_(False), example, strict=False)
        seconds, stats = {}, {}
        with tempfile.TemporaryDirectory() as cache:
            os.environ["PARTITION_PLANNER_CACHE_DIR"] = cache
            for label, check in (("cold", True), ("warm", True), ("off", False)):
                part = PlannedCoreMLPartitioner(compile_specs=specs(), take_over_mutable_buffer=False, log_explanations=False, check_conversion=check)
                gc.collect()
                start = time.perf_counter()
                manager = to_edge_transform_and_lower(copy.deepcopy(exported), partitioner=[part])
                seconds[label] = time.perf_counter() - start
                if check:
                    stats[label] = _conversion_stats(part)
            del os.environ["PARTITION_PLANNER_CACHE_DIR"]
        nodes = len(manager.exported_program().graph.nodes)
        cold = stats["cold"]
        assert stats["warm"]["probed"] == 0, stats
        print(
            f"| {name} | {nodes:,} | {cold['signatures']} | {cold['probed']} | {cold['probe_seconds']:.2f} s "
            f"| {fmt(seconds['cold'])} | {fmt(seconds['warm'])} | {fmt(seconds['off'])} |",
            flush=True,
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", default="24,64")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--planned-runs", type=int, default=7, help="runs of the planned partition() (cheap)")
    parser.add_argument("--lowering-runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--small", action="store_true", help="small programs instead of Qwen3.5")
    parser.add_argument("--conversion", action="store_true", help="conversion probes: warm against off, and the cold cost per data/ LLM")
    parser.add_argument("--cold", action="store_true", help="a first export: whole lowerings, the drop-in's cache empty, and the partitioner's calls inside")
    parser.add_argument("--stock-only", action="store_true", help="time stock partition() alone and print one JSON line (scripts/bench_cli.py's fx peer)")
    args = parser.parse_args()
    # The partitioners log every run; keep the table readable.
    logging.disable(logging.WARNING)
    if args.conversion:
        conversion([int(n) for n in args.layers.split(",")], args.planned_runs)
        return
    if args.cold:
        cold([int(n) for n in args.layers.split(",")], args.lowering_runs)
        return
    if args.small:
        print(f"executorch {metadata.version('executorch')}, torch {metadata.version('torch')}, coremltools {metadata.version('coremltools')}")
        small(args.runs)
        return
    rows = []
    for layers in [int(n) for n in args.layers.split(",")]:
        exported, program = edge_program(*llm(MODEL, n_layers=layers))
        nodes = len(program.graph.nodes)
        fresh = lambda: copy.deepcopy(program)  # noqa: E731
        stock = lambda ep: CoreMLPartitioner(compile_specs=specs(), take_over_mutable_buffer=True).partition(ep)  # noqa: E731
        if args.stock_only:
            (_, s_all) = timed_in_turn({"stock": stock}, fresh, {"stock": max(1, args.runs)})["stock"]
            versions = {p: metadata.version(p) for p in ("executorch", "torch", "coremltools")}
            print(json.dumps({"layers": layers, "nodes": nodes, "stock_seconds": s_all, "versions": versions}), flush=True)
            continue
        planned_part = lambda: PlannedCoreMLPartitioner(compile_specs=specs(), take_over_mutable_buffer=True, log_explanations=False)  # noqa: E731
        planned = lambda ep: planned_part().partition(ep)  # noqa: E731
        timings = timed_in_turn({"stock": stock, "planned": planned}, fresh, {"stock": max(3, args.runs), "planned": max(3, args.planned_runs)})
        (s, s_all), (p, p_all) = timings["stock"], timings["planned"]
        print(f"{layers} layers, {nodes} nodes: stock partition() {[fmt(t) for t in s_all]}, planned {[fmt(t) for t in p_all]}", flush=True)
        if args.profile:
            ep = fresh()
            part = planned_part()
            profile = cProfile.Profile()
            profile.runcall(part.partition, ep)
            pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
        row = {"layers": layers, "nodes": nodes, "stock": s, "planned": p}
        if args.lowering_runs:
            lower = lambda cls: lambda ep: to_edge_transform_and_lower(ep, partitioner=[cls(compile_specs=specs(), take_over_mutable_buffer=False)])  # noqa: E731
            fresh_exported = lambda: copy.deepcopy(exported)  # noqa: E731
            runs = {"stock": lower(CoreMLPartitioner), "planned": lower(PlannedCoreMLPartitioner)}
            timings = timed_in_turn(runs, fresh_exported, {"stock": args.lowering_runs, "planned": args.lowering_runs})
            (ls, ls_all), (lp, lp_all) = timings["stock"], timings["planned"]
            print(f"  to_edge_transform_and_lower: stock {[fmt(t) for t in ls_all]}, planned {[fmt(t) for t in lp_all]}", flush=True)
            row.update(lower_stock=ls, lower_planned=lp)
        rows.append(row)

    if args.stock_only:
        return
    print(f"\nexecutorch {metadata.version('executorch')}, torch {metadata.version('torch')}, coremltools {metadata.version('coremltools')}")
    print("| Qwen3.5 | nodes | stock partition() | planned partition() | ratio | stock lowering | planned lowering | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        lowering = (
            f"{fmt(r['lower_stock'])} | {fmt(r['lower_planned'])} | {r['lower_stock'] / r['lower_planned']:.2f}×"
            if "lower_stock" in r
            else "– | – | –"
        )
        print(f"| {r['layers']} layers | {r['nodes']:,} | {fmt(r['stock'])} | {fmt(r['planned'])} | {r['stock'] / r['planned']:.0f}× | {lowering} |")


if __name__ == "__main__":
    main()

"""executorch's backend operator suite, lowered in full with stock CoreMLPartitioner and with the
drop-in, side by side (issue #30, docs/conversion.md).

    python scripts/operator_suite.py run [--out FILE.jsonl] [--shard I/N] [--only SUBSTRING]
    python scripts/operator_suite.py summary FILE.jsonl [FILE.jsonl ...]

Run it with the python of a venv holding executorch, coremltools and the partition_planner wheel
(scripts/test-all makes them). ``run`` collects every case of the suite the wheel ships
(``executorch/backends/test/suite/operators``) as its Core ML flow builds it: each test function
called with a runner that records the model and inputs it is handed instead of running them. Every
case is exported once (``torch.export``, strict, as the suite's harness), then lowered by
``to_edge_transform_and_lower`` + ``to_executorch`` with the flow's partitioner (iOS15, the suite's
``EdgeCompileConfig(_check_ir_validity=False)``): stock ``CoreMLPartitioner``, then
``PlannedCoreMLPartitioner`` with its defaults (conversion probes on, verdicts cached). The flow's
skip patterns (argmin/argmax, skipped for on-device numerics) are not applied: lowering is what is
compared. One JSON line per case: where each side failed, if it did (``export``, ``lower`` before
partitioning, in ``coremltools`` conversion, ``partition``, ``to_executorch``), its delegates and
the ops inside them, the drop-in's CONVERTIBLE explanations, and, where stock fails in coremltools
and the drop-in lowers, the largest difference from eager of the lowered program run through each
delegate's original sub-program (``partition_planner.device.run_steps``, as the e2e suite runs).

``--shard I/N`` runs every N-th case from the I-th (0-based): two shards side by side use both
cores. ``summary`` reads the lines of one or more runs and prints the comparison as Markdown, and
exits 1 if the drop-in is worse than stock anywhere: a case stock lowers that the drop-in does not
lower with the same delegates and delegated ops, or a case stock fails in coremltools that the
drop-in does not lower with eager's values.
"""

from __future__ import annotations

import argparse
import collections
import copy
import importlib
import inspect
import json
import logging
import pkgutil
import sys
import time
import traceback
import unittest
from importlib import metadata

# Values a lowered program must reproduce (fp32 CPU runs of the delegates' original sub-programs).
TOLERANCE = 1e-4


def cases(only: str = ""):
    """(name, model, inputs, dynamic_shapes) of every case, in module and function order."""
    import pytest
    import torch
    from executorch.backends.test.suite import operators
    from executorch.backends.test.suite.flows.coreml import COREML_TEST_FLOW

    class Recorder:
        _flow = COREML_TEST_FLOW

        def __init__(self):
            self.seen = []

        def lower_and_run_model(self, model, inputs, generate_random_test_inputs=True, dynamic_shapes=None):
            self.seen.append((model, inputs, dynamic_shapes))

    for info in pkgutil.iter_modules(operators.__path__):
        if not info.name.startswith("test_"):
            continue
        module = importlib.import_module(f"{operators.__name__}.{info.name}")
        for name, test in sorted(vars(module).items()):
            if not name.startswith("test_") or getattr(test, "__module__", None) != operators.__name__:
                continue
            recorder = Recorder()
            try:
                torch.manual_seed(0)
                if "dtype" in inspect.signature(test).parameters:
                    test(recorder, torch.float32)
                else:
                    test(recorder)
            except (pytest.skip.Exception, unittest.SkipTest):
                pass
            for i, (model, inputs, dynamic_shapes) in enumerate(recorder.seen):
                case = f"{info.name}::{name}[{i}]"
                if only in case:
                    yield case, model, inputs, dynamic_shapes


def _error_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:200] if text else ''}".rstrip(": ")


def _where(error: BaseException, partitioned: bool) -> str:
    files = [frame.filename for frame in traceback.extract_tb(error.__traceback__)]
    if any("coremltools/" in f or "coreml_preprocess.py" in f for f in files):
        return "coremltools"
    if any(f.endswith("coreml_partitioner.py") or "partition_planner/" in f for f in files):
        return "partition"
    return "lower" if partitioned else "before partitioning"


def _delegated_ops(program) -> dict:
    from partition_planner.device import lowered_modules
    from partition_planner.export import target_name

    counts = collections.Counter()
    for lowered in lowered_modules(program):
        for node in lowered.original_module.graph.nodes:
            if node.op == "call_function":
                counts[target_name(node)] += 1
    return dict(sorted(counts.items()))


def _max_error(program, model, inputs) -> float:
    import torch

    from partition_planner.device import run_steps

    outputs, _ = run_steps(program, [inputs])
    expected = copy.deepcopy(model).eval()(*inputs)
    flat = lambda v: list(v) if isinstance(v, (tuple, list)) else [v]  # noqa: E731
    worst = 0.0
    for got, want in zip(flat(outputs[0]), flat(expected)):
        if isinstance(want, torch.Tensor):
            difference = (got.to(torch.float64) - want.to(torch.float64)).abs()
            worst = max(worst, float(difference.max()) if difference.numel() else 0.0)
    return worst


def lower(make, exported, model, inputs, numerics: bool) -> dict:
    """One side: ``to_edge_transform_and_lower`` + ``to_executorch`` of a copy of ``exported``."""
    import coremltools as ct
    from executorch.backends.apple.coreml.compiler import CoreMLBackend
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    partitioner = make(compile_specs=CoreMLBackend.generate_compile_specs(minimum_deployment_target=ct.target.iOS15))
    entered = []
    original = partitioner.partition

    def partition(program):
        entered.append(True)
        return original(program)

    partitioner.partition = partition
    start = time.perf_counter()
    out: dict = {}
    try:
        manager = to_edge_transform_and_lower(
            copy.deepcopy(exported), partitioner=[partitioner], compile_config=EdgeCompileConfig(_check_ir_validity=False)
        )
        program = manager.exported_program()
        out["delegated_ops"] = _delegated_ops(program)
        from partition_planner.device import lowered_modules

        out["delegates"] = len(lowered_modules(program))
        if numerics:
            out["max_error"] = _max_error(program, model, inputs)
        try:
            manager.to_executorch()
        except Exception as e:
            out.update(stage="to_executorch", error=_error_line(e))
        else:
            out["stage"] = "ok"
    except Exception as e:
        out.update(stage=_where(e, bool(entered)), error=_error_line(e))
    out["seconds"] = round(time.perf_counter() - start, 3)
    explanations = getattr(partitioner, "explanations", None)
    if explanations is not None:
        convertible = [e for e in explanations() if e["rule"] == "CONVERTIBLE" and e["scope"] == "plan"]
        if convertible:
            out["convertible"] = [{"nodes": e["nodes"], "message": e["message"]} for e in convertible]
        if getattr(partitioner, "decomposed_for_conversion", None):
            out["decomposed"] = sorted(str(op) for op in partitioner.decomposed_for_conversion)
    return out


def run(args) -> None:
    import torch
    from executorch.backends.apple.coreml.partition import CoreMLPartitioner

    from partition_planner import PlannedCoreMLPartitioner

    logging.disable(logging.WARNING)
    index, count = (int(p) for p in args.shard.split("/"))
    out = open(args.out, "a", encoding="utf-8") if args.out else sys.stdout
    versions = {p: metadata.version(p) for p in ("executorch", "torch", "coremltools")}
    for i, (case, model, inputs, dynamic_shapes) in enumerate(cases(args.only)):
        if i % count != index:
            continue
        row: dict = {"case": case, "versions": versions}
        try:
            model(*inputs)
            exported = torch.export.export(copy.deepcopy(model), inputs, dynamic_shapes=dynamic_shapes, strict=True)
        except Exception as e:
            row["stock"] = row["drop_in"] = {"stage": "export", "error": _error_line(e)}
        else:
            row["stock"] = lower(CoreMLPartitioner, exported, model, inputs, numerics=False)
            # Values are compared where the drop-in lowers what stock cannot.
            numerics = row["stock"]["stage"] == "coremltools"
            row["drop_in"] = lower(PlannedCoreMLPartitioner, exported, model, inputs, numerics=numerics)
        out.write(json.dumps(row) + "\n")
        out.flush()


def verdict(row: dict) -> str:
    """``same``, ``fixed`` (stock fails in coremltools, the drop-in lowers with eager's values),
    ``both fail`` (elsewhere than in coremltools, the same way) or ``worse``."""
    stock, drop_in = row["stock"], row["drop_in"]
    if stock["stage"] == "ok":
        same = drop_in["stage"] == "ok" and drop_in.get("delegated_ops") == stock.get("delegated_ops")
        same = same and drop_in.get("delegates") == stock.get("delegates")
        return "same" if same else "worse"
    if stock["stage"] == "coremltools":
        lowered = drop_in["stage"] == "ok" and drop_in.get("max_error", float("inf")) <= TOLERANCE
        return "fixed" if lowered else "worse"
    return "both fail" if drop_in["stage"] == stock["stage"] else "worse"


def summary(args) -> int:
    rows = {}
    for path in args.files:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    rows[row["case"]] = row
    if not rows:
        print("no cases")
        return 1
    versions = next(iter(rows.values()))["versions"]
    counts = collections.Counter(verdict(r) for r in rows.values())
    stages = collections.Counter((r["stock"]["stage"], r["drop_in"]["stage"]) for r in rows.values())
    print(
        f"executorch {versions['executorch']}, torch {versions['torch']}, coremltools {versions['coremltools']}: "
        f"{len(rows)} cases\n"
    )
    print("| stock | drop-in | cases |\n|---|---|---:|")
    for (s, d), n in sorted(stages.items(), key=lambda kv: -kv[1]):
        print(f"| {s} | {d} | {n} |")
    print("\n| verdict | cases |\n|---|---:|")
    for name in ("same", "fixed", "both fail", "worse"):
        print(f"| {name} | {counts.get(name, 0)} |")
    fixed = [r for r in rows.values() if verdict(r) == "fixed"]
    if fixed:
        print("\nStock fails inside coremltools, the drop-in lowers (largest difference from eager):\n")
        print("| case | stock's error | the drop-in | max error |\n|---|---|---|---:|")
        for r in sorted(fixed, key=lambda r: r["case"]):
            d = r["drop_in"]
            how = "; ".join(
                [f"{', '.join(e['nodes'])} on CPU" for e in d.get("convertible", []) if e["nodes"]]
                + [f"{op} decomposed" for op in d.get("decomposed", [])]
            )
            print(f"| `{r['case']}` | {r['stock']['error']} | {how} | {d['max_error']:.1e} |")
    worse = [r for r in rows.values() if verdict(r) == "worse"]
    for r in sorted(worse, key=lambda r: r["case"]):
        print(f"\nWORSE: {r['case']}\n  stock: {r['stock']}\n  drop-in: {r['drop_in']}")
    seconds = [(r["stock"].get("seconds", 0), r["drop_in"].get("seconds", 0)) for r in rows.values()]
    print(
        f"\nLowering time, all cases: stock {sum(s for s, _ in seconds):.0f} s, "
        f"drop-in {sum(d for _, d in seconds):.0f} s"
    )
    return 1 if worse else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="lower every case both ways, one JSON line per case")
    r.add_argument("--out", help="append the lines to this file (default: standard output)")
    r.add_argument("--shard", default="0/1", help="I/N: every N-th case from the I-th (default 0/1)")
    r.add_argument("--only", default="", help="only cases whose name holds this")
    s = sub.add_parser("summary", help="the comparison as Markdown; exit 1 where the drop-in is worse")
    s.add_argument("files", nargs="+")
    args = parser.parse_args()
    if args.command == "run":
        run(args)
        return 0
    return summary(args)


if __name__ == "__main__":
    sys.exit(main())

"""executorch's backend test suites, lowered in full with stock CoreMLPartitioner and with the
drop-in, side by side (docs/conversion.md): the operator suite (one op between a model's inputs and
outputs) and the model suite (torchvision and torchaudio models, static and dynamic shapes).

    python scripts/backend_suite.py run [--suite operators|models] [--out FILE.jsonl] [--shard I/N] [--only SUBSTRING]
    python scripts/backend_suite.py summary FILE.jsonl [FILE.jsonl ...]

Run it with the python of a venv holding executorch, coremltools and the partition_planner wheel
(scripts/test-all makes them; the model suite also wants torchvision). ``run`` collects every case
of the suite the wheel ships (``executorch/backends/test/suite/operators`` or ``.../models``) as its
Core ML flow builds it: each test function called, once per parametrization, with a runner that
records the model, inputs and dynamic shapes it is handed instead of running them. A test module
that cannot be imported (torchaudio has no release for every torch) is reported, not run. Every
case is exported once (``torch.export``, strict, as the suite's harness), then lowered by
``to_edge_transform_and_lower`` + ``to_executorch`` with the flow's partitioner (iOS15, the suite's
``EdgeCompileConfig(_check_ir_validity=False)``): stock ``CoreMLPartitioner`` and
``PlannedCoreMLPartitioner`` with its defaults (conversion probes on), the drop-in with a verdict
cache of its own, empty at the start of each case, as a user exporting one model meets it. Which
side goes first alternates from case to case. The flow's skip patterns (argmin/argmax, skipped for
on-device numerics) are not applied: lowering is what is compared. One JSON line per case: where
each side failed, if it did (``export``, ``lower`` before partitioning, in ``coremltools``
conversion, ``partition``, ``to_executorch``), its delegates and the ops inside them, the seconds
``partition()``, ``ops_to_not_decompose()`` (every call) and the whole lowering took, the drop-in's probes (signatures, probes, conversions,
seconds) and CONVERTIBLE explanations, and the largest difference from eager of the drop-in's
lowered program run through each delegate's original sub-program
(``partition_planner.device.run_steps``, as the e2e suite runs): for the model suite always, for
the operator suite where stock fails in coremltools.

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
import json
import logging
import os
import statistics
import sys
import tempfile
import time
import traceback
from importlib import metadata

# Values a lowered program must reproduce (fp32 CPU runs of the delegates' original sub-programs),
# relative to the largest value eager gives (whole models add up rounding differences).
TOLERANCE = 1e-4


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


def _max_error(program, model, inputs) -> tuple[float, float]:
    """The largest difference from eager, and the largest eager value it is measured against."""
    import torch

    from partition_planner.device import run_steps

    outputs, _ = run_steps(program, [inputs])
    expected = copy.deepcopy(model).eval()(*inputs)
    flat = lambda v: list(v) if isinstance(v, (tuple, list)) else [v]  # noqa: E731
    worst, scale = 0.0, 0.0
    for got, want in zip(flat(outputs[0]), flat(expected)):
        if isinstance(want, torch.Tensor) and want.numel():
            difference = (got.to(torch.float64) - want.to(torch.float64)).abs()
            worst = max(worst, float(difference.max()))
            scale = max(scale, float(want.to(torch.float64).abs().max()))
    return worst, scale


def lower(make, exported, model, inputs, numerics: bool) -> dict:
    """One side: ``to_edge_transform_and_lower`` + ``to_executorch`` of a copy of ``exported``."""
    import coremltools as ct
    from executorch.backends.apple.coreml.compiler import CoreMLBackend
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    from partition_planner.device import delegated_ops, lowered_modules

    partitioner = make(compile_specs=CoreMLBackend.generate_compile_specs(minimum_deployment_target=ct.target.iOS15))
    # The seconds each of the partitioner's two calls took, every time executorch called it.
    partition_seconds, keep_seconds = [], []
    for name, seconds in (("partition", partition_seconds), ("ops_to_not_decompose", keep_seconds)):
        original = getattr(partitioner, name)

        def timed(program, original=original, seconds=seconds):
            start = time.perf_counter()
            try:
                return original(program)
            finally:
                seconds.append(time.perf_counter() - start)

        setattr(partitioner, name, timed)
    program = copy.deepcopy(exported)
    start = time.perf_counter()
    out: dict = {}
    try:
        manager = to_edge_transform_and_lower(
            program, partitioner=[partitioner], compile_config=EdgeCompileConfig(_check_ir_validity=False)
        )
        lowered = manager.exported_program()
        try:
            manager.to_executorch()
        except Exception as e:
            out.update(stage="to_executorch", error=_error_line(e))
        else:
            out["stage"] = "ok"
        out["seconds"] = round(time.perf_counter() - start, 3)
        out["delegated_ops"] = delegated_ops(lowered)
        out["delegates"] = len(lowered_modules(lowered))
        if numerics:
            out["max_error"], out["max_value"] = _max_error(lowered, model, inputs)
    except Exception as e:
        out.update(stage=_where(e, bool(partition_seconds)), error=_error_line(e))
        out["seconds"] = round(time.perf_counter() - start, 3)
    out["partition_seconds"] = [round(t, 4) for t in partition_seconds]
    out["ops_to_not_decompose_seconds"] = [round(t, 4) for t in keep_seconds]
    conversion = getattr(partitioner, "conversion", None)
    if conversion:
        out["probes"] = conversion[-1]
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
    from partition_planner.testing import backend_suite_cases

    logging.disable(logging.WARNING)
    index, count = (int(p) for p in args.shard.split("/"))
    out = open(args.out, "a", encoding="utf-8") if args.out else sys.stdout
    versions = {p: metadata.version(p) for p in ("executorch", "torch", "coremltools")}
    skipped: list = []
    for i, (case, model, inputs, dynamic_shapes) in enumerate(backend_suite_cases(args.suite, args.only, skipped)):
        if i % count != index:
            continue
        row: dict = {"suite": args.suite, "case": case, "versions": versions}
        try:
            model(*inputs)
            exported = torch.export.export(copy.deepcopy(model), inputs, dynamic_shapes=dynamic_shapes, strict=True)
        except Exception as e:
            row["stock"] = row["drop_in"] = {"stage": "export", "error": _error_line(e)}
        else:
            row["dynamic_shapes"] = dynamic_shapes is not None
            sides = [("stock", CoreMLPartitioner), ("drop_in", PlannedCoreMLPartitioner)]
            for side, make in sides if i % 2 == 0 else sides[::-1]:
                if side == "drop_in":
                    # An empty verdict cache for each case, as a user exporting one model meets it.
                    os.environ["PARTITION_PLANNER_CACHE_DIR"] = tempfile.mkdtemp(prefix="partition-planner-suite-")
                # Values are compared where the drop-in lowers: every model, and the operator cases
                # stock fails in coremltools (lowered second, the stock side is known then).
                numerics = args.suite == "models" or row.get("stock", {}).get("stage") == "coremltools"
                row[side] = lower(make, exported, model, inputs, numerics=side == "drop_in" and numerics)
            if args.suite == "operators" and row["stock"]["stage"] == "coremltools" and "max_error" not in row["drop_in"]:
                row["drop_in"] = lower(PlannedCoreMLPartitioner, exported, model, inputs, numerics=True)
        out.write(json.dumps(row) + "\n")
        out.flush()
    for entry in skipped:
        out.write(json.dumps({"suite": args.suite, "skipped": entry, "versions": versions}) + "\n")
    out.flush()


def _within_tolerance(side: dict) -> bool:
    worst = side.get("max_error", float("inf"))
    return worst <= TOLERANCE * max(1.0, side.get("max_value", 1.0))


def verdict(row: dict) -> str:
    """``same``, ``fixed`` (stock fails in coremltools, the drop-in lowers with eager's values),
    ``both fail`` (elsewhere than in coremltools, the same way) or ``worse``."""
    stock, drop_in = row["stock"], row["drop_in"]
    if stock["stage"] == "ok":
        same = drop_in["stage"] == "ok" and drop_in.get("delegated_ops") == stock.get("delegated_ops")
        same = same and drop_in.get("delegates") == stock.get("delegates")
        if "max_error" in drop_in:
            same = same and _within_tolerance(drop_in)
        return "same" if same else "worse"
    if stock["stage"] == "coremltools":
        return "fixed" if drop_in["stage"] == "ok" and _within_tolerance(drop_in) else "worse"
    return "both fail" if drop_in["stage"] == stock["stage"] else "worse"


def _median(values: list) -> float:
    return statistics.median(values) if values else float("nan")


def summary(args) -> int:
    rows, skipped = {}, {}
    for path in args.files:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    if "skipped" in row:
                        skipped[row["skipped"]["module"]] = row["skipped"]["reason"]
                    else:
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
    for module, reason in sorted(skipped.items()):
        print(f"Not built: `{module}` ({reason})\n")
    print("| stock | drop-in | cases |\n|---|---|---:|")
    for (s, d), n in sorted(stages.items(), key=lambda kv: -kv[1]):
        print(f"| {s} | {d} | {n} |")
    print("\n| verdict | cases |\n|---|---:|")
    for name in ("same", "fixed", "both fail", "worse"):
        print(f"| {name} | {counts.get(name, 0)} |")
    timed = [r for r in rows.values() if r["stock"].get("partition_seconds") and r["drop_in"].get("partition_seconds")]
    if any(r.get("suite") == "models" for r in rows.values()):
        print(
            "\n| case | delegates: stock | drop-in | `partition()`: stock | drop-in | both calls: stock | drop-in "
            "| lowering: stock | drop-in | ratio | max error |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        )
        for r in sorted(rows.values(), key=lambda r: r["case"]):
            s, d = r["stock"], r["drop_in"]
            sp, dp = sum(s.get("partition_seconds", [])), sum(d.get("partition_seconds", []))
            sb, db = sp + sum(s.get("ops_to_not_decompose_seconds", [])), dp + sum(d.get("ops_to_not_decompose_seconds", []))
            error = f"{d['max_error']:.1e}" if "max_error" in d else "-"
            print(
                f"| `{r['case'].split('::')[-1]}` | {s.get('delegates', s['stage'])} | {d.get('delegates', d['stage'])} "
                f"| {sp:.3f} s | {dp:.3f} s | {sb:.3f} s | {db:.3f} s "
                f"| {s['seconds']:.1f} s | {d['seconds']:.1f} s | {d['seconds'] / s['seconds']:.3f} | {error} |"
            )
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
    if timed:
        ratios = [sum(r["drop_in"]["partition_seconds"]) / sum(r["stock"]["partition_seconds"]) for r in timed]
        print(f"`partition()`, drop-in over stock: median {_median(ratios):.2f}x over {len(timed)} cases")
    return 1 if worse else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="lower every case both ways, one JSON line per case")
    r.add_argument("--suite", choices=("operators", "models"), default="operators")
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

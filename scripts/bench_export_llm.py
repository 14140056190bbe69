"""export_llm as a user runs it, stock against the planner, on the LLM topologies of partition_planner/params.

    python scripts/bench_export_llm.py [--models qwen3_5_0_8b,lfm2_5_350m,llama3_2_1b] [--runs 1] [OPTION=VALUE ...]

Run it with the python of a venv holding executorch, coremltools and the partition_planner wheel
(scripts/test-all makes them). For each topology (random weights, ``base.model_class=llama3``,
take-over off as export_llm builds the stock partitioner, iOS18) it runs, as whole processes and in
turn, ``python -m executorch.extension.llm.export.export_llm ARGS`` and ``python -m
partition_planner.export_llm ARGS``, each into a directory of its own, and reports per side the
wall time (median of ``--runs``), the Core ML delegate calls of the written ``.pte`` (read back with
executorch's program loader) and its size; for the planner also its partitions, states and
planning time from the plan beside the ``.pte``. Extra ``OPTION=VALUE`` arguments go to both (and
``planner.*`` ones to the planner only).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata, resources
from pathlib import Path

from partition_planner.testing import EXPORT_LLM_ARGUMENTS, LLMS, coreml_delegate_calls

COMMANDS = {
    "stock": "executorch.extension.llm.export.export_llm",
    "planned": "partition_planner.export_llm",
}


def run(side: str, name: str, extra: list, scratch: Path) -> dict:
    out = scratch / f"{side}-{name}"
    out.mkdir(parents=True, exist_ok=True)  # stock export_llm writes nothing into a missing directory
    params = resources.files("partition_planner") / "params" / LLMS[name]
    args = [*EXPORT_LLM_ARGUMENTS, f"base.params={params}", f"export.output_dir={out}"]
    args += [a for a in extra if side == "planned" or not a.startswith("planner.")]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", COMMANDS[side], *args], cwd=scratch, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    ptes = list(out.glob("*.pte"))
    if not ptes:
        return {"error": "no .pte written", "seconds": seconds}
    result = {"seconds": seconds, "calls": coreml_delegate_calls(ptes[0]), "bytes": ptes[0].stat().st_size}
    plans = list(out.glob("*.plan.json"))
    if plans:
        plan = json.loads(plans[0].read_text())
        result.update(partitions=plan["stats"]["partitions"], states=plan["stats"]["states"], stock_partitions=plan["stats"]["stock_partitions"])
        planning = [line for line in done.stdout.splitlines() if line.strip().startswith("planning:")]
        result["planning"] = planning[0].split(":", 1)[1].strip() if planning else "?"
    for old in ptes:
        old.unlink()  # the next run writes afresh
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(LLMS))
    parser.add_argument("--runs", type=int, default=1)
    args, extra = parser.parse_known_args()
    print(f"executorch {metadata.version('executorch')}, torch {metadata.version('torch')}, coremltools {metadata.version('coremltools')}")
    print("| topology | stock export_llm | planned | stock / planned | Core ML calls: stock, planned | .pte bytes: stock, planned | plan: partitions, states (stock proposal) | planning |")
    print("|---|---:|---:|---:|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="bench-export-llm-") as tmp:
        scratch = Path(tmp)
        for name in args.models.split(","):
            results = {"stock": [], "planned": []}
            for _ in range(args.runs):
                for side in COMMANDS:
                    results[side].append(run(side, name, extra, scratch))
            failed = [r["error"] for rs in results.values() for r in rs if "error" in r]
            if failed:
                print(f"| {name} | {failed[0]} |")
                continue
            s, p = (statistics.median(r["seconds"] for r in results[k]) for k in ("stock", "planned"))
            last_s, last_p = results["stock"][-1], results["planned"][-1]
            print(
                f"| {name} | {s:.1f} s | {p:.1f} s | {s / p:.2f}× | {last_s['calls']}, {last_p['calls']} | "
                f"{last_s['bytes']:,}, {last_p['bytes']:,} | {last_p['partitions']}, {last_p['states']} ({last_p['stock_partitions']}) | {last_p['planning']} |",
                flush=True,
            )


if __name__ == "__main__":
    main()

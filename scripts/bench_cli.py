"""Whole-process figures of the CLI, as a user runs it, beside the torch.fx peer, in one run (#15).

    python3 scripts/bench_cli.py [--runs 15] [--big-runs 5] [--peer-python VENV/bin/python] [--peer-runs 3]

Times ``partition-planner plan GRAPH --format json -o PLAN`` as whole processes (file read, parse,
plan, the checker's verification, the plan written), each case's runs taken in turn with the
others' so that a drift in the machine's speed falls on all alike. Wall time and peak memory come
from the kernel's accounting of each finished child (``os.wait4``). Cases:
- the 24-layer Qwen3.5 in data/ (take-over on, iOS18, 2,898 nodes);
- generated LLM-shaped graphs of 10^5 and 10^6 nodes (``partition-planner generate --seed 12``);
- ``partition-planner render GRAPH -o map.html`` (the HTML partition map, #13) of Qwen3.5 and of
  the 10^5-node graph, with the size of the page written.

With ``--peer-python`` (a venv holding executorch, coremltools and the wheel, as scripts/test-all
makes), the fx peer runs in the same run: ``scripts/bench_partition.py --stock-only`` builds the
same Qwen3.5 program and times stock ``CoreMLPartitioner.partition()`` (torch.fx's
CapabilityBasedPartitioner) in its process, model building excluded. The ratio divides that
in-process time by the planner's whole-process time, which favours the peer.

Build first: ``cargo build --release``. Figures go to docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QWEN = ROOT / "data/executorch-1.5.1/qwen3_5_0_8b_takeover_on_ios18.json"


def timed(argv: list[str]) -> tuple[float, int]:
    """One whole process: wall seconds and peak resident memory in bytes."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    # 0: planned; 1: planned, and the stock proposal the document carries breaks a rule.
    if code not in (0, 1):
        sys.exit(f"{' '.join(argv)} exited {code}: {err}")
    return wall, usage.ru_maxrss * 1024


def stats(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=str(ROOT / "target/release/partition-planner"))
    parser.add_argument("--runs", type=int, default=15, help="runs of the small cases (Qwen3.5, 10^5)")
    parser.add_argument("--big-runs", type=int, default=5, help="runs of the 10^6-node case")
    parser.add_argument("--peer-python", help="a venv's python with executorch: runs the fx peer")
    parser.add_argument("--peer-runs", type=int, default=3)
    args = parser.parse_args()
    binary = args.binary
    if not Path(binary).exists():
        sys.exit(f"{binary} does not exist: cargo build --release")

    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        tmp = Path(tmp)
        cases = {"Qwen3.5, 24 layers (data/)": (QWEN, args.runs)}
        for nodes, runs in ((100_000, args.runs), (1_000_000, args.big_runs)):
            path = tmp / f"generated-{nodes}.json"
            subprocess.run([binary, "generate", "--nodes", str(nodes), "--seed", "12", "-o", str(path)], check=True)
            cases[f"generated, {nodes:,} nodes"] = (path, runs)
        out = tmp / "plan.json"
        page = tmp / "map.html"
        sizes = {name: path.stat().st_size for name, (path, _) in cases.items()}
        commands = {name: [binary, "plan", str(path), "--format", "json", "-o", str(out)] for name, (path, _) in cases.items()}
        renders = {
            "render Qwen3.5 (data/)": QWEN,
            "render generated, 100,000 nodes": cases["generated, 100,000 nodes"][0],
        }
        for name, path in renders.items():
            commands[name] = [binary, "render", str(path), "-o", str(page)]
            cases[name] = (path, args.runs)
            sizes[name] = path.stat().st_size
        times: dict[str, list[float]] = {name: [] for name in cases}
        peaks: dict[str, list[int]] = {name: [] for name in cases}
        written: dict[str, int] = {}
        for name in cases:
            timed(commands[name])  # warm-up
        for round_ in range(max(runs for _, runs in cases.values())):
            for name, (_, runs) in cases.items():
                if round_ < runs:
                    wall, peak = timed(commands[name])
                    times[name].append(wall)
                    peaks[name].append(peak)
                    if name in renders:
                        written[name] = page.stat().st_size
        peer = None
        if args.peer_python:
            proc = subprocess.run(
                [args.peer_python, str(ROOT / "scripts/bench_partition.py"), "--stock-only", "--layers", "24", "--runs", str(args.peer_runs)],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                sys.exit(f"the fx peer failed:\n{proc.stderr[-3000:]}")
            peer = json.loads(proc.stdout.strip().splitlines()[-1])

    print(f"{time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} cores; `plan GRAPH --format json -o FILE` "
          "and `render GRAPH -o map.html`, whole processes")
    print("| command | document | runs | wall median | min–max | peak memory | written |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (_, runs) in cases.items():
        median, low, high = stats(times[name])
        page_size = f"{written[name] / 1e6:.1f} MB" if name in written else ""
        print(
            f"| {name} | {sizes[name] / 1e6:.1f} MB | {runs} | {median * 1e3:.1f} ms | {low * 1e3:.1f}–{high * 1e3:.1f} ms "
            f"| {max(peaks[name]) / 2**20:.0f} MiB | {page_size} |"
        )
    if peer:
        fx, fx_low, fx_high = stats(peer["stock_seconds"])
        ours = statistics.median(times["Qwen3.5, 24 layers (data/)"])
        versions = ", ".join(f"{k} {v}" for k, v in peer["versions"].items())
        print(
            f"\nfx peer ({versions}): stock CoreMLPartitioner.partition() on the same Qwen3.5 program "
            f"({peer['nodes']} nodes), in-process, {len(peer['stock_seconds'])} runs: median {fx:.2f} s "
            f"({fx_low:.2f}–{fx_high:.2f}); the planner's whole process {ours * 1e3:.1f} ms: {fx / ours:,.0f}×"
        )


if __name__ == "__main__":
    main()

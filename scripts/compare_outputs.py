"""Byte-for-byte comparison of two builds of the CLI: a restructuring must change no output.

    python3 scripts/compare_outputs.py --base OLD/partition-planner [--new target/release/partition-planner]
                                        [--big] [--keep DIR]

Runs both binaries over the same commands and compares standard output, standard error, the exit
code and every file written, byte for byte. The commands cover what a user sees:
- on every graph in data/: ``plan`` (text, JSON, with a manifest, with take-over off, with a
  per-layer cut and with a weight budget), ``check`` and ``check --stock`` (text and JSON),
  ``whatif`` (one change, and a batch of scenarios) and ``render`` in every format, with and
  without ``--plan``;
- on graphs the base binary generates (``generate --seed 12``) of 10^5 nodes and, with ``--big``,
  10^6 nodes: the same, except that ``render`` runs at 10^5 only.

Exits 1 and lists the differing commands if any output differs. Build the base first, e.g.
``git worktree add /tmp/base HEAD~1 && cargo build --release --manifest-path /tmp/base/Cargo.toml``.
"""

from __future__ import annotations

import argparse
import filecmp
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCENARIOS = "\n".join(
    [
        '{"name": "ios17", "changes": ["target=iOS17"]}',
        '{"name": "io", "changes": ["strategy=io"]}',
        '{"name": "per layer", "changes": ["cut-after=layers.*", "max-ops=400"]}',
        '{"name": "budget", "changes": ["max-weight-bytes=1MB", "take-over=off"]}',
    ]
)


def commands(graph: Path, small: bool) -> list[tuple[str, list[str]]]:
    """(label, argv after the binary) for one graph; OUT is replaced by a fresh output directory."""
    g = str(graph)
    out = [
        ("plan text", ["plan", g]),
        ("plan json", ["plan", g, "--format", "json", "-o", "OUT/plan.json"]),
        ("plan manifest", ["plan", g, "--emit-manifest", "OUT/manifest.json"]),
        ("plan take-over off", ["plan", g, "--take-over-mutable-buffer", "false", "--format", "json"]),
        ("plan cut per layer", ["plan", g, "--cut-after", "layers.*", "--max-partition-ops", "500"]),
        ("plan weight budget", ["plan", g, "--max-partition-weight-bytes", "1MB", "--format", "json"]),
        ("plan strategy io", ["plan", g, "--strategy", "io", "--cost", "call_overhead_us=50"]),
        ("check", ["check", g]),
        ("check json", ["check", g, "--format", "json"]),
        ("check stock", ["check", g, "--stock"]),
        ("check stock json 1.4", ["check", g, "--stock", "--executorch", "1.4", "--format", "json"]),
        ("whatif change", ["whatif", g, "--change", "take-over=off"]),
        ("whatif json", ["whatif", g, "--change", "strategy=cpu", "--format", "json"]),
        ("whatif scenarios", ["whatif", g, "--scenarios", "OUT/scenarios.jsonl"]),
    ]
    if small:
        out += [
            ("render html", ["render", g, "-o", "OUT/map.html"]),
            ("render svg", ["render", g, "--format", "svg", "-o", "OUT/map.svg"]),
            ("render dot", ["render", g, "--format", "dot", "-o", "OUT/map.dot"]),
            ("render model-explorer", ["render", g, "--format", "model-explorer", "-o", "OUT/me"]),
            ("render --plan", ["render", g, "--plan", "OUT/given.json", "-o", "OUT/given.html"]),
        ]
    return out


def run(binary: str, argv: list[str], workdir: Path, given_plan: Path) -> tuple[int, bytes, bytes]:
    workdir.mkdir(parents=True)
    (workdir / "scenarios.jsonl").write_text(SCENARIOS + "\n")
    (workdir / "given.json").write_bytes(given_plan.read_bytes())
    argv = [a.replace("OUT", str(workdir)) for a in argv]
    done = subprocess.run([binary, *argv], capture_output=True)
    # Paths of the run's own directory appear in messages; they are not output.
    scrub = lambda b: b.replace(str(workdir).encode(), b"OUT")  # noqa: E731
    return done.returncode, scrub(done.stdout), scrub(done.stderr)


def same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(same_tree(a / d, b / d) for d in cmp.common_dirs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="the binary built from the commit before")
    ap.add_argument("--new", default=str(ROOT / "target/release/partition-planner"))
    ap.add_argument("--big", action="store_true", help="also a generated 10^6-node graph")
    ap.add_argument("--keep", help="keep every output under this directory")
    args = ap.parse_args()

    scratch = Path(args.keep or tempfile.mkdtemp(prefix="compare-outputs-"))
    scratch.mkdir(parents=True, exist_ok=True)
    graphs = [(g, True) for g in sorted(ROOT.glob("data/executorch-*/*.json"))]
    for nodes in [100_000] + ([1_000_000] if args.big else []):
        path = scratch / f"generated-{nodes}.json"
        subprocess.run([args.base, "generate", "--nodes", str(nodes), "--seed", "12", "-o", str(path)], check=True)
        graphs.append((path, nodes <= 100_000))

    differing, count, exits = [], 0, {}
    for graph, small in graphs:
        name = graph.relative_to(ROOT) if graph.is_relative_to(ROOT) else graph.name
        # A plan for `render --plan`: the base's own, so both sides read the same file.
        given = scratch / "given" / f"{graph.parent.name}-{graph.name}"
        given.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([args.base, "plan", str(graph), "--format", "json", "-o", str(given)], check=True)
        for label, argv in commands(graph, small):
            count += 1
            key = f"{graph.parent.name}-{graph.stem}-{label.replace(' ', '_')}"
            base_dir, new_dir = scratch / "base" / key, scratch / "new" / key
            base = run(args.base, argv, base_dir, given)
            new = run(args.new, argv, new_dir, given)
            exits[base[0]] = exits.get(base[0], 0) + 1
            if base != new or not same_tree(base_dir, new_dir):
                differing.append(f"{name}: {label} (exit {base[0]} / {new[0]})")
        print(f"{name}: compared", file=sys.stderr)

    if not args.keep:
        subprocess.run(["rm", "-rf", str(scratch)])
    if differing:
        print(f"{len(differing)} of {count} commands differ:")
        print("\n".join(f"  {d}" for d in differing))
        return 1
    codes = ", ".join(f"{n} exit {code}" for code, n in sorted(exits.items()))
    print(f"all {count} commands identical on {len(graphs)} graphs ({codes})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

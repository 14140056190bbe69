"""``python -m partition_planner.conversion [info|clear]``: where conversion verdicts are kept and
how many, or remove them all."""

from __future__ import annotations

import argparse
import sys

from .cache import clear_cache, conversion_dir


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m partition_planner.conversion",
        description="The cache of coremltools conversion verdicts (docs/conversion.md).",
    )
    parser.add_argument("command", nargs="?", default="info", choices=["info", "clear"],
                        help="info: where the verdicts are and how many (default); clear: remove them all")
    args = parser.parse_args(argv)
    directory = conversion_dir()
    if args.command == "clear":
        removed = clear_cache()
        print(f"removed {removed} verdict file(s) from {directory}")
        return 0
    files = sorted(directory.glob("*.jsonl")) if directory.is_dir() else []
    print(f"conversion verdicts: {directory}")
    if not files:
        print("  (none)")
    for path in files:
        with open(path, encoding="utf-8") as f:
            lines = sum(1 for line in f if line.strip())
        print(f"  {path.name}: {lines} verdict(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

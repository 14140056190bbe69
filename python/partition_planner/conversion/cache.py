"""Verdicts kept on disk: one append-only JSON Lines file per (torch, executorch, coremltools)
triple, under the user's cache directory. A verdict depends on the signature it is keyed by and on
those versions only, so a second export of the same model, in any process, probes nothing.

Appends are single ``write`` calls of one line each, so two processes probing at once at worst
both probe a signature; a line cut short by a crash is skipped when read."""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
from importlib import metadata
from pathlib import Path

from .verdict import Verdict

ENV = "PARTITION_PLANNER_CACHE_DIR"
PACKAGES = ("torch", "executorch", "coremltools")
# What a probe converts and how its signature reads; a new layout starts a file of its own, so that
# no verdict of another kind of probe is read (layout 1 converted through the whole pass pipeline,
# and so refused at a probe's own boundary what converts in context).
LAYOUT = 2


def cache_root() -> Path:
    """``$PARTITION_PLANNER_CACHE_DIR``, else the platform's user cache directory
    (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on macOS), then
    ``partition-planner``."""
    given = os.environ.get(ENV)
    if given:
        return Path(given)
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "partition-planner"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "partition-planner"


def installed_versions() -> dict[str, str]:
    return dict(_installed_versions())


@functools.lru_cache(maxsize=None)
def _installed_versions() -> tuple:
    """Read from package metadata once a process: a few milliseconds each time, more than the
    whole of a warm cache's lookups on an LLM."""
    out = []
    for name in PACKAGES:
        try:
            out.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            out.append((name, "none"))
    return tuple(out)


def conversion_dir() -> Path:
    return cache_root() / "conversion"


def clear_cache() -> int:
    """Removes every kept verdict, of every version triple; returns how many files went."""
    directory = conversion_dir()
    if not directory.is_dir():
        return 0
    count = sum(1 for _ in directory.glob("*.jsonl"))
    shutil.rmtree(directory)
    _OPEN.clear()
    return count


class VerdictCache:
    """The verdicts of one version triple: read once per process, appended to as probes run."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._verdicts: dict[str, Verdict] | None = None

    @classmethod
    def for_installed(cls) -> "VerdictCache":
        """The cache of the installed torch, executorch and coremltools, shared by every
        partitioner of this process."""
        # Keyed by what decides the directory: asked once a partitioner, and paths are slow to
        # build next to a small program's whole plan.
        place = (os.environ.get(ENV), os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"))
        cache = _OPEN.get(place)
        if cache is None:
            versions = installed_versions()
            name = "_".join([f"probes-{LAYOUT}"] + [f"{k}-{versions[k]}" for k in PACKAGES])
            path = conversion_dir() / (name + ".jsonl")
            cache = _OPEN[place] = cls(path)
        return cache

    def verdicts(self) -> dict[str, Verdict]:
        """Every kept verdict by signature (read from disk on first use; not to be changed)."""
        if self._verdicts is None:
            self._verdicts = {}
            try:
                with open(self.path, encoding="utf-8") as f:
                    for line in f:
                        try:
                            entry = json.loads(line)
                            self._verdicts[entry["signature"]] = Verdict.from_json(entry)
                        except (ValueError, KeyError, TypeError):
                            continue  # a line cut short, or written by another layout
            except FileNotFoundError:
                pass
        return self._verdicts

    def get(self, signature: str) -> Verdict | None:
        return self.verdicts().get(signature)

    def put(self, signature: str, verdict: Verdict) -> None:
        self.verdicts()[signature] = verdict
        line = json.dumps({"signature": signature, **verdict.to_json(whole=True)}) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)
        except OSError:
            pass  # a read-only or full cache directory costs probes next time, nothing else

    def __len__(self) -> int:
        return len(self.verdicts())


# One cache object per cache directory in this process, so that every partitioner reads the file once.
_OPEN: dict[tuple, VerdictCache] = {}

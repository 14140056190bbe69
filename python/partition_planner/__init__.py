"""partition-planner's Python side.

- ``export_graph``: bridge JSON v1 of an ExecuTorch edge program (needs torch and executorch).
- ``plan`` / ``check``: the Rust planner and checker, JSON in and out (``partition_planner._native``).
- ``manifest``: one content key per delegate partition, for a Core ML cache to drop what changed.
- ``render``: the plan beside the stock proposal, as an HTML partition map, SVG, DOT or Model Explorer data.
- ``apply_plan``: a plan's ``node_tags`` onto ``meta["delegation_tag"]``.
- ``PlannedCoreMLPartitioner``: a drop-in ``CoreMLPartitioner`` that plans (``partition_planner.partitioner``).
- ``export_llm``: executorch's export_llm with the planner (``python -m partition_planner.export_llm``).
- ``partition_planner.device``: running a lowered program with each delegate's private state, as on device.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ._native import CHECK_SCHEMA, MANIFEST_SCHEMA, PLAN_SCHEMA, WHATIF_SCHEMA, __version__
from ._native import GRAPH_SCHEMA as BRIDGE_SCHEMA
from .apply import PlanMismatch, apply_plan
from .pictures import write_picture


def plan(graph: Mapping, overrides: Mapping | None = None) -> dict:
    """Plans a bridge JSON document (a dict); returns the plan@1 document. ``overrides``:
    ``{"options": {"take_over_mutable_buffer": False, ...}, "strategies": ["cpu", "BUFFER=io"],
    "cost": {"call_overhead_us": 200.0}}`` (docs/cost.md)."""
    from . import _native

    return json.loads(_native.plan(json.dumps(graph), None if overrides is None else json.dumps(overrides)))


def check(graph: Mapping, overrides: Mapping | None = None) -> dict:
    """Checks the tags a bridge JSON document carries; returns the check@1 document."""
    from . import _native

    return json.loads(_native.check(json.dumps(graph), None if overrides is None else json.dumps(overrides)))


def manifest(graph: Mapping, overrides: Mapping | None = None) -> dict:
    """Plans a bridge JSON document and returns its manifest@1: one content key per delegate
    partition (docs/manifest.md)."""
    from . import _native

    return json.loads(_native.manifest(json.dumps(graph), None if overrides is None else json.dumps(overrides)))


def render(
    graph: Mapping,
    plan: Mapping | None,
    path,
    *,
    overrides: Mapping | None = None,
    format: str = "html",
) -> None:
    """Draws ``plan`` (a plan@1 document made for ``graph``, whose tags are checked again) beside
    the stock proposal at ``path``; with ``plan=None``, plans ``graph`` first (with ``overrides``).
    ``format``: ``html`` (one self-contained page, docs/pictures.md), ``svg``, ``dot`` (Graphviz),
    or ``model-explorer`` (``path`` is a directory for partition.json, strategy.json,
    violation.json). A plan made for another graph raises ``ValueError``."""
    from . import _native

    if plan is None:
        picture = _native.render(json.dumps(graph), None if overrides is None else json.dumps(overrides), format)
    else:
        if overrides is not None:
            raise ValueError("overrides apply when planning: a plan given is drawn as it is")
        picture = _native.render_plan(json.dumps(graph), json.dumps(plan), format)
    write_picture(picture, path, format)


def __getattr__(name):
    # torch and executorch are imported only when their parts are used.
    if name == "export_graph":
        from .export import export_graph

        return export_graph
    if name == "export_llm":
        # The module: callable as export_llm(config, **planner_options), and run by ``python -m``.
        import importlib

        return importlib.import_module(".export_llm", __name__)
    if name == "PlannedCoreMLPartitioner":
        from .partitioner import PlannedCoreMLPartitioner

        return PlannedCoreMLPartitioner
    raise AttributeError(f"module 'partition_planner' has no attribute {name!r}")


__all__ = [
    "BRIDGE_SCHEMA",
    "CHECK_SCHEMA",
    "MANIFEST_SCHEMA",
    "PLAN_SCHEMA",
    "WHATIF_SCHEMA",
    "PlanMismatch",
    "PlannedCoreMLPartitioner",
    "__version__",
    "apply_plan",
    "check",
    "export_graph",
    "export_llm",
    "manifest",
    "plan",
    "render",
]

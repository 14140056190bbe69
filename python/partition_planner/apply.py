"""Applying a plan: ``node_tags`` onto an exported program's ``meta["delegation_tag"]``."""

from __future__ import annotations

from collections.abc import Mapping

from ._native import PLAN_SCHEMA


class PlanMismatch(ValueError):
    """The plan was made for another graph: node names differ."""


def apply_plan(exported_program, plan: Mapping) -> None:
    """Sets or clears ``meta["delegation_tag"]`` on every node, placeholders included, exactly as
    ``plan["node_tags"]`` says. Refuses a plan that does not name every node of the graph (or names
    nodes the graph lacks), before changing anything."""
    if plan.get("schema") != PLAN_SCHEMA:
        raise PlanMismatch(f"not a {PLAN_SCHEMA} document: schema is {plan.get('schema')!r}")
    apply_tags(exported_program, plan["node_tags"])


def apply_tags(exported_program, tags: Mapping[str, str | None]) -> None:
    """``apply_plan`` with the plan's ``node_tags`` alone."""
    nodes = list(exported_program.graph.nodes)
    names = {n.name for n in nodes}
    missing = [n for n in names if n not in tags]
    extra = [n for n in tags if n not in names]
    if missing or extra:
        raise PlanMismatch(
            f"the plan does not fit this graph: {len(missing)} node(s) without a tag entry "
            f"(e.g. {sorted(missing)[:3]}), {len(extra)} unknown (e.g. {sorted(extra)[:3]})"
        )
    for node in nodes:
        tag = tags[node.name]
        if tag is None:
            node.meta.pop("delegation_tag", None)
        else:
            node.meta["delegation_tag"] = tag

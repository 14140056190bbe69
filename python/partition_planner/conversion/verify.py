"""Partition verification: each planned partition converted before ``partition()`` returns, since
some failures only show when a node meets its neighbours. A partition that fails is bisected over
its ops in topological order to the op whose addition makes it fail: the smallest failing prefix
ends with it, and the prefix before it converts. That op (a multi-output op rather than one of its
``getitem``s) gets a verdict found by verification, and the caller plans again."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from torch.fx import Node

from .convert import convert
from .program import NotBuildable, subprogram


class Culprit(NamedTuple):
    partition: str
    node: Node
    # The converter's error on the smallest failing prefix.
    error: str
    # Conversions the partition took, the whole partition's included.
    conversions: int


def _is_getitem(node: Node) -> bool:
    return node.op == "call_function" and node.target is operator.getitem


def planned_partitions(program, node_tags: Mapping[str, str | None]) -> dict[str, list[Node]]:
    """Each tag's nodes, placeholders included, in graph order."""
    out: dict[str, list[Node]] = {}
    for node in program.graph.nodes:
        tag = node_tags.get(node.name)
        if tag is not None:
            out.setdefault(tag, []).append(node)
    return out


def _conversion_error(program, members: list[Node], compile_specs: Sequence) -> str | None:
    try:
        return convert(subprogram(program, members), compile_specs)
    except NotBuildable:
        return None


def failing_op(program, tag: str, members: list[Node], compile_specs: Sequence) -> Culprit | None:
    """None when the partition converts; otherwise the op bisection blames."""
    error = _conversion_error(program, members, compile_specs)
    if error is None:
        return None
    ops = [n for n in members if n.op != "placeholder"]
    taken = [n for n in members if n.op == "placeholder"]
    # A prefix ends after an op, never between a multi-output op and its getitems.
    ends = [i + 1 for i in range(len(ops)) if not (i + 1 < len(ops) and _is_getitem(ops[i + 1]))]
    errors = {len(ends) - 1: error}
    conversions = 1

    def prefix_error(k: int) -> str | None:
        prefix = ops[:k]
        chosen = set(prefix)
        return _conversion_error(program, [p for p in taken if any(u in chosen for u in p.users)] + prefix, compile_specs)

    low, high = 0, len(ends) - 1
    while low < high:
        middle = (low + high) // 2
        found = prefix_error(ends[middle])
        conversions += 1
        if found is None:
            low = middle + 1
        else:
            high = middle
            errors[middle] = found
    start = ends[low - 1] if low > 0 else 0
    culprit = next((n for n in ops[start : ends[low]] if not _is_getitem(n)), ops[ends[low] - 1])
    return Culprit(tag, culprit, errors[low], conversions)


def failing_ops(program, node_tags: Mapping[str, str | None], compile_specs: Sequence) -> list[Culprit]:
    """The op to blame in each planned partition that does not convert."""
    found = []
    for tag, members in planned_partitions(program, node_tags).items():
        culprit = failing_op(program, tag, members, compile_specs)
        if culprit is not None:
            found.append(culprit)
    return found

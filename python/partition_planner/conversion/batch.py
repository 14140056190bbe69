"""Probes converted side by side: one program holds a member per signature not yet known (the node,
its ``getitem``s and the constant data it takes in, each value it reads from outside fed by a user
input), and coremltools' frontend converts it once (``convert.frontend_failure``). Group testing finds the members that fail:
the frontend converts a program's nodes in order and stops at the first it cannot convert, naming
it, so every member before it converted; the failing member is set aside and the rest converted
again. A failure that names no node splits the batch in halves. A program of members that all
convert, the common case, costs one conversion whatever their number.

A node refused alone may be refused for what the probe made of it rather than for itself: an input
or output Core ML cannot take at a model's boundary (a ``uint8`` tensor between a quantize and its
dequantize: ``KeyError: torch.uint8``) lies inside a planned partition. So a refused node is
converted again with the supported ops it reads and the supported ops that read it (one step either
way, with their tuples and constants), and is refused only if that fails too; the error kept is the
one it gave alone, which names its own trouble. Each verdict says which it was (``verdict.CAUSES``).
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable

import torch
from torch.fx import Node

from .convert import Failure, error_line, frontend_failure
from .program import STATIC, SYMBOLIC, Member, NotBuildable, probe_program
from .verdict import BOUNDARY, INCONCLUSIVE, OP, PROBE, Verdict, readable_call

logger = logging.getLogger(__name__)

# A signature's text by its compile specs and grouping key, for every call of this process (bounded).
SIGNATURE_TEXTS: dict[tuple, str] = {}
_SIGNATURE_TEXTS_KEPT = 8192


def is_getitem(node: Node) -> bool:
    return node.op == "call_function" and node.target is operator.getitem


class Probing:
    """One ``ConversionProbes.verdicts`` call's probes. ``groups`` are its signatures' grouping keys
    with their nodes; ``constant`` the values a delegate holds as constants."""

    def __init__(self, probes, program, constant: dict[Node, str], names: Callable[[Node], str], groups: dict[tuple, list[Node]]):
        self.probes, self.program, self.constant, self.names = probes, program, constant, names
        self.groups = groups
        self._key_of: dict[Node, tuple] | None = None
        self._position: dict[Node, int] | None = None

    # -- signatures

    def signature(self, key: tuple, node: Node) -> str:
        # Kept across calls: the text of the arguments takes longer than a small program's plan.
        spec_key = self.probes.spec_key
        text = SIGNATURE_TEXTS.get((spec_key, key))
        if text is None:
            _, args, kwargs, inputs, outputs, fed = key
            shown = ",".join("r" + i if i.startswith('"') else i for i in inputs)  # "r": read at run time
            sizes = f"|{fed}" if fed else ""
            text = f"{spec_key}|{self.names(node)}|{args}|{kwargs}|{shown}|{list(outputs)}{sizes}"
            if len(SIGNATURE_TEXTS) >= _SIGNATURE_TEXTS_KEPT:
                SIGNATURE_TEXTS.clear()
            SIGNATURE_TEXTS[(spec_key, key)] = text
        return text

    def _key(self, node: Node) -> tuple | None:
        if self._key_of is None:
            self._key_of = {n: key for key, group in self.groups.items() for n in group}
        return self._key_of.get(node)

    def _keep(self, signature: str, verdict: Verdict) -> None:
        probes = self.probes
        probes.asked.add(signature)
        probes.probed += 1
        probes.cache.put(signature, verdict)

    # -- members

    def _held(self, node: Node) -> set:
        """The node, its getitems, and the constant values it reads with what computes them."""
        held = {node}
        held.update(u for u in node.users if is_getitem(u))
        stack = [i for i in node.all_input_nodes if i in self.constant]
        while stack:
            value = stack.pop()
            if value not in held:
                held.add(value)
                stack.extend(value.all_input_nodes)
        return held

    def _in_order(self, nodes: set) -> list[Node]:
        if self._position is None:
            self._position = {n: i for i, n in enumerate(self.program.graph.nodes)}
        return sorted(nodes, key=self._position.__getitem__)

    def _member(self, nodes: set, sizes: str, returns: list[Node] | None = None) -> Member:
        if sizes == SYMBOLIC:  # each symbolic scalar read computed inside, from tensors
            nodes = nodes | _size_producers(nodes)
        ordered = self._in_order(nodes)
        ops = [n for n in ordered if n.op == "call_function"]
        if returns is None:  # what is read outside: for a probe of several nodes
            returns = [n for n in ops if _is_tensor(n) and any(u not in nodes for u in n.users)]
        return Member(ops, [n for n in ordered if n.op == "placeholder"], returns, sizes)

    def _alone(self, node: Node, sizes: str) -> Member:
        returns = [u for u in node.users if is_getitem(u)] if _is_tuple(node) else [node]
        if not returns:  # a tuple nothing picks from: nothing to return
            raise NotBuildable(f"nothing reads {node.name}'s outputs")
        return self._member(self._held(node), sizes, returns)

    # -- conversion

    def _failure(self, members: list[Member]) -> tuple[Failure | None, dict[str, int]]:
        # A program still in ATen (before decomposition) is converted as it is: coremltools takes
        # it with its torch.export frontend, whose op conversions are its ExecuTorch frontend's
        # (``TORCH_EXPORT_BASED_FRONTENDS``). Taken to the edge dialect first, as lowering will, a
        # probe of a large program costs seconds in executorch's passes.
        program, owner = probe_program(self.program, members)
        self.probes.conversions += 1
        return frontend_failure(program, self.probes.compile_specs), owner

    def _failures(self, members: list[Member]) -> tuple[dict[int, Failure], set[int]]:
        """Group testing over ``members``: the failure of each that fails, by index, and the indices
        of those no program could be built of."""
        failed: dict[int, Failure] = {}
        unbuilt: set[int] = set()
        pending = [list(range(len(members)))]
        while pending:
            batch = pending.pop()
            if not batch:
                continue
            try:
                failure, owner = self._failure([members[i] for i in batch])
            except NotBuildable:
                failure, owner = None, None
            except Exception as e:  # a program this module cannot build says nothing about the converter
                logger.warning("no conversion probe of %d node(s): %s", len(batch), error_line(e))
                failure, owner = None, None
            if owner is None:  # not built: apart, down to the members that cannot be
                if len(batch) == 1:
                    unbuilt.add(batch[0])
                else:
                    pending += [batch[len(batch) // 2 :], batch[: len(batch) // 2]]
                continue
            if failure is None:
                continue
            if len(batch) == 1:
                failed[batch[0]] = failure
                continue
            at = owner.get(failure.node) if failure.node is not None else None
            if at is None:
                pending += [batch[len(batch) // 2 :], batch[: len(batch) // 2]]
            else:
                # Every member before it converted: the frontend converts in program order.
                failed[batch[at]] = failure
                pending.append(batch[at + 1 :])
        return failed, unbuilt

    # -- verdicts

    def _verdict(self, node: Node, failure: Failure | None, sizes: str) -> Verdict:
        p = self.probes
        call = readable_call(node, self.names(node))
        static = sizes == STATIC
        if failure is None:
            return Verdict(True, PROBE, p.converter, call, static_sizes=static)
        # Refused alone; at the probe's inputs it says nothing yet of the op (decided beside).
        cause = INCONCLUSIVE if failure.at_boundary else OP
        return Verdict(False, PROBE, p.converter, call, failure.error, cause, static)

    def alone(self, pending: list[tuple[tuple, Node]]) -> dict[tuple, Verdict]:
        """Each signature's verdict alone (a group key and a node of it), all converted side by side;
        a signature no program can be built of has none."""
        keys, nodes, members = [], [], []
        for key, node in pending:
            try:
                members.append(self._alone(node, key[-1]))
            except NotBuildable:
                continue
            keys.append(key)
            nodes.append(node)
        failed, unbuilt = self._failures(members)
        out = {}
        for i, (key, node) in enumerate(zip(keys, nodes)):
            if i in unbuilt:
                continue
            verdict = out[key] = self._verdict(node, failed.get(i), key[-1])
            self._keep(self.signature(key, node), verdict)
        return out

    def _neighbours(self, node: Node) -> list[Node]:
        """The probed ops the node reads (through getitems) and that read it."""
        neighbours = []
        for producer in node.all_input_nodes:
            if is_getitem(producer):
                producer = producer.args[0]
            if self._key(producer) is not None:
                neighbours.append(producer)
        readers = [u for u in node.users if not is_getitem(u)]
        readers += [r for g in node.users if is_getitem(g) for r in g.users]
        neighbours += [r for r in readers if self._key(r) is not None]
        return neighbours

    def beside(self, refused: list[tuple[Node, Verdict]]) -> dict[Node, Verdict]:
        """Each node refused alone, with its verdict alone, decided beside its neighbours: converts
        there (``BOUNDARY``: trusted), or its verdict alone stands (refused for the op, or trusted as
        ``INCONCLUSIVE`` where it failed at the probe's inputs). All converted side by side."""
        out: dict[Node, Verdict] = {}
        cached = self.probes.cache
        # By signature beside: the verdict alone, the nodes the probe holds, the nodes it decides.
        pending: dict[str, tuple[Verdict, list[Node], list[Node]]] = {}
        for node, alone in refused:
            neighbours = self._neighbours(node)
            if not neighbours:
                out[node] = _standing(alone)
                continue
            beside = sorted({self.signature(self._key(n), n) for n in neighbours})
            signature = self.signature(self._key(node), node) + "|beside:" + "/".join(beside)
            found = cached.get(signature)
            if found is not None:
                self.probes.asked.add(signature)
                out[node] = found if found.converts else _standing(alone)
            elif signature in pending:
                pending[signature][2].append(node)
            else:
                pending[signature] = (alone, [node] + neighbours, [node])
        built, members = [], []
        for signature, (alone, probed, _) in pending.items():
            held = set().union(*(self._held(n) for n in probed))
            fed = {self._key(n)[-1] for n in probed}
            sizes = STATIC if STATIC in fed else SYMBOLIC if SYMBOLIC in fed else ""
            try:
                members.append(self._member(held, sizes))
            except NotBuildable:
                continue
            built.append(signature)
        failed, unbuilt = self._failures(members)
        for i, signature in enumerate(built):
            if i not in unbuilt:
                alone = pending[signature][0]
                self._keep(signature, alone if i in failed else alone._replace(converts=True, cause=BOUNDARY))
        for signature, (alone, _, waiting) in pending.items():
            found = cached.get(signature)
            final = found if found is not None and found.converts else _standing(alone)
            out.update(dict.fromkeys(waiting, final))
        return out

def _standing(alone: Verdict) -> Verdict:
    """A verdict alone that nothing beside overturned: refused for the op, or trusted where the
    probe's inputs were the trouble."""
    return alone._replace(converts=True) if alone.cause == INCONCLUSIVE else alone


def _is_tuple(node: Node) -> bool:
    val = node.meta.get("val")
    return isinstance(val, (tuple, list))


def _is_tensor(node: Node) -> bool:
    return isinstance(node.meta.get("val"), torch.Tensor)


def _size_producers(nodes: set) -> set:
    """The ops computing the symbolic scalars ``nodes`` read, back to the tensors they read."""
    found: set = set()
    stack = [i for n in nodes for i in n.all_input_nodes if i not in nodes and _is_size(i)]
    while stack:
        value = stack.pop()
        if value not in found:
            found.add(value)
            stack.extend(i for i in value.all_input_nodes if _is_size(i))
    return found


def _is_size(node: Node) -> bool:
    return node.op == "call_function" and isinstance(node.meta.get("val"), (int, torch.SymInt))

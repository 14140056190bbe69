"""Conversion probes: before planning, coremltools itself is asked whether it converts each node
the Core ML support check accepts, one distinct signature at a time.

A signature is what conversion can depend on: the op, its literal arguments, each input's dtype and
shape and whether it is a constant the delegate holds (a constant placeholder, or an op computing
one from constants alone), which outputs of a multi-output op are read, and the compile specs that
reach the converter (target, precision, compute units, pass pipeline, enumerated shapes,
quantization; not the model type, which only decides whether the model is loaded). Nodes with the
same signature share one probe. The probes themselves, converted side by side in as few
conversions as group testing takes, and a node refused alone tried again beside its neighbours, are
``batch.py``'s; verdicts are kept on disk per version triple (``cache.py``), so a second export of
the same model probes nothing.

A signature shows each input's sizes as the program has them, symbolic ones as text. A node reading
a value Core ML takes only inside a program (a size that is an expression of symbols, which no model
input may have, or a symbolic scalar) is probed as it meets that value in context, its sizes
unknown (``program.SYMBOLIC``), or where that cannot be built with every size at the program's
example value (``program.STATIC``); its signature says which."""

from __future__ import annotations

import functools
import logging
import operator
import time
from collections.abc import Callable, Mapping, Sequence

import torch
from torch.fx import Node

from .batch import Probing, SIGNATURE_TEXTS
from .cache import VerdictCache
from .convert import converter_name
from .program import STATIC, SYMBOLIC, NotBuildable, size_hint, static_tensor
from .verdict import Verdict

logger = logging.getLogger(__name__)


def compile_spec_key(compile_specs: Sequence) -> str:
    """The compile specs that reach the converter, as text, in a stable order."""
    return _spec_key(tuple((spec.key, spec.value) for spec in compile_specs))


@functools.lru_cache(maxsize=64)  # every partitioner asks, most with the same few specs
def _spec_key(compile_specs: tuple) -> str:
    parts = []
    for key, value in compile_specs:
        if key == "model_type":
            continue
        value = value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else str(value)
        parts.append(f"{key}={value}")
    return ";".join(sorted(parts))


def _is_getitem(node: Node) -> bool:
    return node.op == "call_function" and node.target is operator.getitem


def _is_tensors(val) -> bool:
    if isinstance(val, torch.Tensor):
        return True
    return isinstance(val, (tuple, list)) and bool(val) and all(isinstance(v, torch.Tensor) for v in val)


class _Sizes:
    """Which values a model's boundary takes, in a program with symbols: tensors whose every size is
    a number or a symbol the program's range constraints name. coremltools makes those a model
    input's ranges; a size that is an expression of symbols it refuses ("Core ML does not support
    size variables that are expressions of symbolic variables"), as it refuses a symbolic scalar
    as an input. Inside a program it takes both: a node reading one is probed ``SYMBOLIC`` (each
    such size a range of its own, each scalar computed inside), else ``STATIC``."""

    def __init__(self, program, shown_of: Mapping[Node, str | None]) -> None:
        self.accepted = {str(symbol) for symbol in program.range_constraints}
        self.shown_of = shown_of
        self._takes: dict[Node, bool] = {}
        self._static: dict[Node, str | None] = {}
        self._computed: dict[Node, bool] = {}

    def boundary_takes(self, values, texts) -> bool:
        for value, text in zip(values, texts):
            if text is None:  # not a tensor
                return False
            takes = self._takes.get(value)
            if takes is None:
                takes = self._takes[value] = all(
                    _is_number(d) or str(d) in self.accepted for d in value.meta["val"].shape
                )
            if not takes:
                return False
        return True

    def symbolic(self, values, texts) -> tuple | None:
        """Each value as a ``SYMBOLIC`` probe shows it (a scalar by its expression), or None when a
        scalar cannot be computed inside from tensors."""
        out = []
        for value, text in zip(values, texts):
            if text is None:
                if not self.computed_inside(value):
                    return None
                text = "#" + str(value.meta["val"])
            out.append(text)
        return tuple(out)

    def computed_inside(self, value: Node) -> bool:
        """Whether a symbolic scalar is computed from tensors alone, through ops on sizes (walked
        back iteratively, each scalar decided once)."""
        known, stack = self._computed, [value]
        while stack:
            node = stack[-1]
            if node in known:
                stack.pop()
                continue
            is_size = node.op == "call_function" and isinstance(node.meta.get("val"), (int, torch.SymInt))
            scalars = [i for i in node.all_input_nodes if not isinstance(i.meta.get("val"), torch.Tensor)]
            pending = [i for i in scalars if i not in known]
            if is_size and pending:
                stack.extend(pending)
                continue
            known[node] = is_size and all(known[i] for i in scalars)
            stack.pop()
        return known[value]

    def static(self, values) -> tuple | None:
        """Each value as a ``STATIC`` probe shows it, or None when one has no example value."""
        out = []
        for value in values:
            text = self._static.get(value, False)
            if text is False:
                text = self._static[value] = self._static_text(value)
            if text is None:
                return None
            out.append(text)
        return tuple(out)

    def _static_text(self, value: Node) -> str | None:
        from ..export import shape_and_dtype

        val = value.meta.get("val")
        try:
            if isinstance(val, torch.Tensor):
                shown = self.shown_of.get(value) or ""
                mark = shown[: shown.find('"shape"')] if '"shape"' in shown else ""
                return mark + shape_and_dtype(static_tensor(val))
            if isinstance(val, (int, torch.SymInt)):
                return "#" + str(size_hint(val))
        except NotBuildable:
            return None
        return None  # a symbolic float or bool, or no value


def _is_number(size) -> bool:
    return type(size) is int or (isinstance(size, torch.SymInt) and size.node.is_constant())


class ConversionProbes:
    """Asks coremltools about the nodes of edge programs, for one partitioner's compile specs."""

    def __init__(self, compile_specs: Sequence, take_over_constant_data: bool, cache: VerdictCache | None = None):
        self.compile_specs = list(compile_specs)
        self.spec_key = compile_spec_key(self.compile_specs)
        self.take_over_constant_data = take_over_constant_data
        self.cache = cache if cache is not None else VerdictCache.for_installed()
        self.converter = converter_name()
        # The distinct signatures of the last ``verdicts`` call; then, over every call, the distinct
        # signatures asked about, the probes run (signatures not cached), the conversions they
        # took (side by side, ``batch.py``) and the seconds spent, cache lookups included.
        self.signatures = 0
        self.asked: set = set()
        self.probed = 0
        self.conversions = 0
        self.seconds = 0.0
        # The nodes the last ``verdicts`` call found refused, with their verdicts.
        self.refused: dict[Node, Verdict] = {}

    def verdicts(
        self,
        program,
        nodes: list[Node],
        is_supported: Callable[[Node], bool],
        templates: list[tuple],
        refs: list[tuple],
        described: Mapping[Node, str | None],
        names: Callable[[Node], str],
        signature: Mapping[str, Mapping[str, str]],
    ) -> dict[Verdict, list[Node]]:
        """A verdict for each node the support check accepts (``is_supported``) that can stand
        alone as a program, as the nodes of each verdict. ``nodes`` are all of ``program``'s, in
        graph order; ``templates``/``refs`` the exporter's per-node argument templates and the
        nodes they reference, ``described`` each node's shape and dtype as text (None: not a
        tensor), ``names`` an op's qualified name, ``signature`` the program's graph signature as
        the bridge document has it.

        One pass in graph order finds the values a delegate holds as constants and groups the
        nodes by a tuple key (cheap to hash, and most of a large program shares a few dozen); a
        group's text signature is made once. It meets every node, on every export: what it does
        per node is kept to a few lookups."""
        start = time.perf_counter()
        constant = self._constant_placeholders(program, signature)
        held = set(constant)
        groups: dict[tuple, list[Node]] = {}
        # Each value as a signature shows it: its shape and dtype, after its mark if the delegate
        # holds it as a constant (a value read at run time is marked when a signature's text is
        # made, ``Probing.signature``).
        shown_of = dict(described)
        for value in constant:
            text = shown_of[value]
            if text is not None:
                shown_of[value] = "c" + text
        # Only a program with symbols has values a model's boundary cannot take.
        sizes = _Sizes(program, shown_of) if program.range_constraints else None
        shown, group_of, getitem = shown_of.get, groups.get, operator.getitem
        for node, (args, kwargs), (args_refs, kwargs_refs) in zip(nodes, templates, refs):
            if node.op != "call_function":
                continue
            target = node.target
            if target is getitem:
                continue
            inputs_of = args_refs + kwargs_refs if kwargs_refs else args_refs
            if held and inputs_of and held.issuperset(inputs_of):
                # A supported op reading constants only: delegated with its reader, and folded by
                # coremltools into a constant (some conversions need one: ``dequantize_codebook``
                # reads its codes' values), marked ``d`` and the op's name.
                if not is_supported(node):
                    continue
                mark = constant[node] = "d" + names(node)
                held.add(node)
                if described[node] is not None:
                    shown_of[node] = mark + described[node]
            elif not is_supported(node):
                continue
            if described[node] is not None:  # a tensor
                outputs: tuple = ()
            elif _is_tensors(node.meta.get("val")):
                outputs = tuple(sorted(u.args[1] for u in node.users if _is_getitem(u)))
            else:
                continue
            inputs = tuple(map(shown, inputs_of))
            fed = ""
            if sizes is not None and not sizes.boundary_takes(inputs_of, inputs):
                fed, symbolic = SYMBOLIC, sizes.symbolic(inputs_of, inputs)
                if symbolic is None:
                    fed, symbolic = STATIC, sizes.static(inputs_of)
                    if symbolic is None:  # a size without an example value
                        continue
                inputs = symbolic
            elif None in inputs:  # an input that is not a tensor: no program of this node alone
                continue
            try:
                key = (target, args, kwargs, inputs, outputs, fed)
                group = group_of(key)
            except TypeError:  # a target that cannot be a key: by its name
                key = (names(node), args, kwargs, inputs, outputs, fed)
                group = group_of(key)
            if group is None:
                groups[key] = [node]
            else:
                group.append(node)

        self.signatures = len(groups)
        probing = Probing(self, program, constant, names, groups)
        # By verdict, so that the exporter writes each verdict's text once, for its nodes at once.
        out: dict[Verdict, list[Node]] = {}
        # A warm cache answers every group: looked up here, a dict lookup per group.
        cached, verdict_of, unknown = self.cache.verdicts(), {}, []
        for key, group in groups.items():
            signature = probing.signature(key, group[0])
            verdict = cached.get(signature)
            if verdict is None:
                unknown.append((key, group[0]))
            else:
                verdict_of[key] = verdict
                self.asked.add(signature)
        verdict_of.update(probing.alone(unknown))
        refused: list[tuple[Node, Verdict]] = []
        for key, group in groups.items():
            verdict = verdict_of.get(key)
            if verdict is None:  # no probe could be built: trusted, as stock trusts it
                continue
            if verdict.converts:
                # A list of the verdict's own: ``group`` stays as ``probing`` reads it.
                out.setdefault(verdict, []).extend(group)
            else:  # decided node by node, beside each one's neighbours
                refused.extend((node, verdict) for node in group)
        self.refused = {}
        for node, verdict in probing.beside(refused).items():
            out.setdefault(verdict, []).append(node)
            if not verdict.converts:
                self.refused[node] = verdict
        self.seconds += time.perf_counter() - start
        return out

    def _constant_placeholders(self, program, signature: Mapping[str, Mapping[str, str]]) -> dict[Node, str]:
        """The placeholders of constant data a delegate takes in with the nodes that read them
        (``tag_constant_data``: parameters, lifted constants and buffers nothing mutates, when
        ``take_over_constant_data`` is on), each marked ``c``."""
        if not self.take_over_constant_data:
            return {}
        mutated = set(signature["buffers_to_mutate"].values())
        held = {*signature["inputs_to_parameters"], *signature["inputs_to_lifted_tensor_constants"]}
        held.update(name for name, buffer in signature["inputs_to_buffers"].items() if buffer not in mutated)
        return {n: "c" for n in program.graph.find_nodes(op="placeholder") if n.name in held}


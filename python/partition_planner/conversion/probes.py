"""Conversion probes: before planning, coremltools itself is asked whether it converts each node
the Core ML support check accepts, one distinct signature at a time.

A signature is what conversion can depend on: the op, its literal arguments, each input's dtype and
shape and whether it is a constant the delegate holds (a constant placeholder, or an op computing
one from constants alone), which outputs of a multi-output op are read, and the compile specs that
reach the converter (target, precision, compute units, pass pipeline, enumerated shapes,
quantization; not the model type, which only decides whether the model is loaded). Nodes with the
same signature share one probe; a node refused alone is tried again beside its neighbours
(``_Probing``); verdicts are kept on disk per version triple (``cache.py``), so a second export of
the same model probes nothing."""

from __future__ import annotations

import functools
import logging
import operator
import time
from collections.abc import Callable, Mapping, Sequence

import torch
from torch.fx import Node

from .cache import VerdictCache
from .convert import convert, converter_name, error_line
from .program import NotBuildable, subprogram
from .verdict import PROBE, Verdict

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


def _in_edge_dialect(program, kept_whole):
    """Before decomposition: ``program`` in the edge dialect, as lowering will hand it over, so
    that coremltools converts it with its EXECUTORCH frontend. The program is already functional
    ATen (executorch runs ``run_decompositions({})`` before asking which ops to keep whole), so
    it takes executorch's own aten-to-edge passes alone, ``kept_whole`` preserved; ``to_edge``
    would trace it again first, a second or more a probe on an LLM."""
    from executorch.exir import EdgeCompileConfig

    config = EdgeCompileConfig(_check_ir_validity=False)
    try:
        from executorch.exir.program._program import _generate_edge_program
    except ImportError:  # an executorch without it: the public route
        from executorch.exir import to_edge

        config.preserve_ops = [kept_whole]
        return to_edge(program, compile_config=config).exported_program()
    return _generate_edge_program(config, program, preserve_ops=[kept_whole])


def _asked_support(is_supported: Callable[[Node], bool], asked: set) -> Callable[[Node], bool]:
    """Support before decomposition: the ops asked about are supported (the partitioner would
    keep them whole); any other op is asked of the backend's check, once, when the constant values
    are traced through it."""
    known = dict.fromkeys(asked, True)

    def supported(node: Node) -> bool:
        answer = known.get(node)
        if answer is None:
            try:
                answer = bool(is_supported(node))
            except Exception:  # the check raises for some ops it refuses; stock treats them so
                answer = False
            known[node] = answer
        return answer

    return supported


def readable_call(node: Node, name: str) -> str:
    """``aten.max_pool2d_with_indices.default(kernel_size=[3, 3], dilation=[2, 2])``: the op and its
    literal arguments that differ from the schema's defaults (tensor inputs left out)."""
    target = node.target
    schema = getattr(target if hasattr(target, "_schema") else getattr(target, "_op", target), "_schema", None)
    given = []
    if schema is None:
        given = [repr(a) for a in node.args if not _mentions_node(a)]
        given += [f"{k}={v!r}" for k, v in node.kwargs.items() if not _mentions_node(v)]
        return f"{name}({', '.join(given)})"
    for index, argument in enumerate(schema.arguments):
        if index < len(node.args) and not argument.kwarg_only:
            value = node.args[index]
        elif argument.name in node.kwargs:
            value = node.kwargs[argument.name]
        else:
            continue
        if _mentions_node(value) or _is_default(argument, value):
            continue
        given.append(f"{argument.name}={value!r}")
    return f"{name}({', '.join(given)})"


def _mentions_node(value) -> bool:
    if isinstance(value, Node):
        return True
    if isinstance(value, (list, tuple)):
        return any(_mentions_node(v) for v in value)
    if isinstance(value, dict):
        return any(_mentions_node(v) for v in value.values())
    return False


def _is_default(argument, value) -> bool:
    if not argument.has_default_value():
        return False
    default = argument.default_value
    if value == default:
        return True
    # An int list default written as one int (``padding=0`` for ``[0, 0]``).
    return isinstance(default, int) and isinstance(value, (list, tuple)) and all(v == default for v in value)


class ConversionProbes:
    """Asks coremltools about the nodes of edge programs, for one partitioner's compile specs."""

    def __init__(self, compile_specs: Sequence, take_over_constant_data: bool, cache: VerdictCache | None = None):
        self.compile_specs = list(compile_specs)
        self.spec_key = compile_spec_key(self.compile_specs)
        self.take_over_constant_data = take_over_constant_data
        self.cache = cache if cache is not None else VerdictCache.for_installed()
        self.converter = converter_name()
        # The distinct signatures of the last ``verdicts`` call; then, over every call, the distinct
        # signatures asked about, the probes run (signatures not cached) and the seconds spent,
        # cache lookups included.
        self.signatures = 0
        self.asked: set = set()
        self.probed = 0
        self.seconds = 0.0

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
        asked: set | None = None,
    ) -> dict[Verdict, list[Node]]:
        """A verdict for each node the support check accepts (``is_supported``) that can stand
        alone as a program (with ``asked``, for those nodes only), as the nodes of each verdict.
        ``nodes`` are all of ``program``'s, in graph order; ``templates``/``refs`` the exporter's
        per-node argument templates and the nodes they reference, ``described`` each node's shape
        and dtype as text (None: not a tensor), ``names`` an op's qualified name, ``signature`` the
        program's graph signature as the bridge document has it.

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
        # made, ``_Probing.signature``).
        shown_of = dict(described)
        for value in constant:
            text = shown_of[value]
            if text is not None:
                shown_of[value] = "c" + text
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
                if asked is not None and node not in asked:
                    continue
            elif not (is_supported(node) if asked is None else node in asked):
                continue
            if described[node] is not None:  # a tensor
                outputs: tuple = ()
            elif _is_tensors(node.meta.get("val")):
                outputs = tuple(sorted(u.args[1] for u in node.users if _is_getitem(u)))
            else:
                continue
            inputs = tuple(map(shown, inputs_of))
            if None in inputs:  # an input that is not a tensor: no program of this node alone
                continue
            try:
                key = (target, args, kwargs, inputs, outputs)
                group = group_of(key)
            except TypeError:  # a target that cannot be a key: by its name
                key = (names(node), args, kwargs, inputs, outputs)
                group = group_of(key)
            if group is None:
                groups[key] = [node]
            else:
                group.append(node)

        self.signatures = len(groups)
        probing = _Probing(self, program, constant, names, groups)
        # By verdict, so that the exporter writes each verdict's text once, for its nodes at once.
        out: dict[Verdict, list[Node]] = {}
        # A warm cache answers every group: looked up here, without a call per group.
        texts, spec_key, cached = _SIGNATURE_TEXTS, self.spec_key, self.cache.verdicts()
        asked_now = []
        for key, group in groups.items():
            signature = texts.get((spec_key, key))
            verdict = None if signature is None else cached.get(signature)
            if verdict is None:
                verdict = probing.alone(key, group[0])
                if verdict is None:
                    continue
            else:
                asked_now.append(signature)
            if verdict.converts:
                # A list of the verdict's own: ``group`` stays as ``probing`` reads it.
                out.setdefault(verdict, []).extend(group)
            else:
                for node in group:
                    out.setdefault(probing.beside(node, verdict), []).append(node)
        self.asked.update(asked_now)
        self.seconds += time.perf_counter() - start
        return out

    def refused_ops(self, program, targets, is_supported: Callable[[Node], bool]) -> dict[object, Verdict]:
        """Before decomposition (``ops_to_not_decompose``): of the ops ``targets`` the partitioner
        would keep whole, those the converter refuses for some node of ``program``, each with the
        first such verdict. Kept whole and then left on CPU, an op outside core ATen has no kernel
        there (``Missing out variants``); decomposed, its parts are probed again when planning."""
        from ..export import argument_templates, graph_signature, target_name, tensor_text

        nodes = list(program.graph.nodes)
        asked = {n for n in nodes if n.op == "call_function" and n.target in targets}
        if not asked:
            return {}
        templates, refs = argument_templates(nodes)
        shapes: dict = {}
        described = {n: tensor_text(n, shapes) for n in nodes}
        supported = _asked_support(is_supported, asked)
        found = self.verdicts(
            program, nodes, supported, templates, refs, described, target_name, graph_signature(program), asked
        )
        refused_nodes = {node: v for v, group in found.items() if not v.converts for node in group}
        refused: dict[object, Verdict] = {}
        for node in nodes:  # in graph order: an op's first refused node speaks for it
            verdict = refused_nodes.get(node)
            if verdict is not None:
                refused.setdefault(node.target, verdict)
        return refused

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

# A signature's text by its compile specs and grouping key, for every call of this process (bounded).
_SIGNATURE_TEXTS: dict[tuple, str] = {}
_SIGNATURE_TEXTS_KEPT = 8192


class _Probing:
    """One ``verdicts`` call's probes: each group's signature alone, then, for a node refused
    alone, the node beside its neighbours.

    A node refused alone may be refused for what the probe made of it rather than for itself: an
    input or output Core ML cannot take at a delegate's boundary (a ``uint8`` tensor between a
    quantize and its dequantize: ``KeyError: torch.uint8``) lies inside a planned partition. So
    a refused node is converted again with the supported ops it reads and the supported ops that
    read it (one step either way, with their tuples and constants), and is refused only if that
    fails too; the error kept is the one it gave alone, which names its own trouble. That probe's
    signature is the node's with its neighbours', cached as any other."""

    def __init__(self, probes: ConversionProbes, program, constant: dict[Node, str], names, groups: dict[tuple, list[Node]]):
        self.probes, self.program, self.constant, self.names = probes, program, constant, names
        self.groups = groups
        self._key_of: dict[Node, tuple] | None = None

    def signature(self, key: tuple, node: Node) -> str:
        # Kept across calls: the text of the arguments takes longer than a small program's plan.
        spec_key = self.probes.spec_key
        text = _SIGNATURE_TEXTS.get((spec_key, key))
        if text is None:
            _, args, kwargs, inputs, outputs = key
            shown = ",".join("r" + i if i.startswith('"') else i for i in inputs)  # "r": read at run time
            text = f"{spec_key}|{self.names(node)}|{args}|{kwargs}|{shown}|{list(outputs)}"
            if len(_SIGNATURE_TEXTS) >= _SIGNATURE_TEXTS_KEPT:
                _SIGNATURE_TEXTS.clear()
            _SIGNATURE_TEXTS[(spec_key, key)] = text
        return text

    def _cached_or(self, signature: str, probe: Callable[[], Verdict | None]) -> Verdict | None:
        probes = self.probes
        probes.asked.add(signature)
        verdict = probes.cache.get(signature)
        if verdict is None:
            verdict = probe()
            if verdict is None:
                return None
            probes.probed += 1
            probes.cache.put(signature, verdict)
        return verdict

    def _held(self, node: Node) -> set:
        """The node, its getitems, and the constant values it reads with what computes them."""
        held = {node}
        held.update(u for u in node.users if _is_getitem(u))
        stack = [i for i in node.all_input_nodes if i in self.constant]
        while stack:
            value = stack.pop()
            if value not in held:
                held.add(value)
                stack.extend(value.all_input_nodes)
        return held

    def _outcome(self, members: set, node: Node) -> str | None:
        """The converter's error on the program of ``members`` (``""`` when it converts), or None
        when no program can be built of them. ``node`` is the op probed: before decomposition it is
        kept whole, as the partitioner asks."""
        try:
            program = self.program
            probe = subprogram(program, [n for n in program.graph.nodes if n in members])
            if probe.dialect != "EDGE":
                probe = _in_edge_dialect(probe, node.target)
        except NotBuildable:
            return None
        except Exception as e:  # a program this module cannot build says nothing about the converter
            logger.warning("no conversion probe for %s: %s", node.name, error_line(e))
            return None
        return convert(probe, self.probes.compile_specs) or ""

    def _verdict(self, node: Node, error: str | None) -> Verdict | None:
        if error is None:
            return None
        p = self.probes
        return Verdict(not error, PROBE, p.converter, readable_call(node, self.names(node)), error or None)

    def alone(self, key: tuple, node: Node) -> Verdict | None:
        return self._cached_or(
            self.signature(key, node),
            lambda: self._verdict(node, self._outcome(self._held(node), node)),
        )

    def _key(self, node: Node) -> tuple | None:
        if self._key_of is None:
            self._key_of = {n: key for key, group in self.groups.items() for n in group}
        return self._key_of.get(node)

    def beside(self, node: Node, refused: Verdict) -> Verdict:
        """``refused`` (the node's verdict alone), unless the node converts beside its
        neighbours."""
        neighbours = []
        for producer in node.all_input_nodes:
            if _is_getitem(producer):
                producer = producer.args[0]
            if self._key(producer) is not None:
                neighbours.append(producer)
        readers = [u for u in node.users if not _is_getitem(u)]
        readers += [r for g in node.users if _is_getitem(g) for r in g.users]
        neighbours += [r for r in readers if self._key(r) is not None]
        if not neighbours:
            return refused
        beside = sorted({self.signature(self._key(n), n) for n in neighbours})
        signature = self.signature(self._key(node), node) + "|beside:" + "/".join(beside)

        def probe() -> Verdict | None:
            held = self._held(node)
            for n in neighbours:
                held |= self._held(n)
            error = self._outcome(held, node)
            return None if error is None else (refused if error else self._verdict(node, ""))

        found = self._cached_or(signature, probe)
        return refused if found is None else found

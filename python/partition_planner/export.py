"""Bridge JSON v1 (docs/bridge-json.md) from an ExecuTorch edge program.

``supported`` comes from the Core ML backend's own op-support check, never from the tags;
``delegation_tag`` is whatever the program's ``node.meta`` carries (the stock partitioner's tags,
or none).

In ``PlannedCoreMLPartitioner.partition()`` this export is most of the time spent, so the document
is written straight to text (``export_graph_text``), with no dict per node and no JSON encoder pass:
each op's name, each distinct shape and dtype, and each distinct support question are worked out
once per program.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import operator
from importlib import metadata
from json.encoder import encode_basestring_ascii as _quote  # C-accelerated, as json.dumps uses it
from collections.abc import Mapping
from typing import Any

import torch
from torch.fx import Node

from ._native import GRAPH_SCHEMA as BRIDGE_SCHEMA


def support_checker(skip_ops: list | None = None, lower_full_graph: bool = False, log: bool = False):
    """The Core ML backend's OperatorSupport (private in executorch 1.5, public in 1.4). ``log``: it
    logs why it refuses an op, once per reason, as in ``CoreMLPartitioner.partition()``."""
    from executorch.backends.apple.coreml.partition import coreml_partitioner as cp

    cls = getattr(cp, "_OperatorsSupportedForCoreMLBackend", None) or getattr(
        cp, "OperatorsSupportedForCoreMLBackend"
    )
    return cls(skip_ops or [], lower_full_graph, log=log)


def target_name(node: Node) -> str:
    """The op's qualified name as FX prints it without the schema: ``aten.slice_scatter.default``."""
    if node.op != "call_function":
        return str(node.target)
    return target_name_of(node.target)


def target_name_of(target: Any) -> str:
    """An op's qualified name (``target_name`` of a node that calls it)."""
    try:
        return _TARGET_NAMES[target]
    except (KeyError, TypeError):  # not seen yet, or a target that cannot be a key
        name = _call_target_name(target)
    try:
        _TARGET_NAMES[target] = name
    except TypeError:
        pass
    return name


# A program names a few dozen distinct ops in thousands of nodes: each op's name is worked out once.
_TARGET_NAMES: dict = {}


def _call_target_name(target: Any) -> str:
    if target is operator.getitem:
        return "getitem"
    # An OpOverload and the EdgeOpOverload wrapping one both carry the schema (an OpOverload's
    # ``_op`` is its C++ builtin, which does not).
    op = target if hasattr(target, "_schema") else getattr(target, "_op", target)
    schema = getattr(op, "_schema", None)
    if schema is not None:
        namespace, _, name = schema.name.partition("::")
        overload = getattr(op, "_overloadname", "") or "default"
        return f"{namespace}.{name}.{overload}"
    module = getattr(target, "__module__", "") or ""
    name = getattr(target, "__name__", str(target))
    return f"{module}.{name}" if module and module not in ("_operator", "builtins") else name


# Stands for a node reference in an argument's template. ASCII JSON text never holds a raw NUL
# (encode_basestring_ascii escapes every control character), so the template splits back exactly.
_REF = "\x00"


def _template(value: Any, refs: list) -> str:
    """An FX argument as JSON text, each node reference written as ``_REF`` and appended to
    ``refs``: nodes become ``{"node": NAME}`` once filled in, everything else a literal. Two
    arguments with the same template differ only in which nodes they name."""
    kind = type(value)
    # The common cases first, by exact type (subclasses take the general path below).
    if kind is Node:
        refs.append(value)
        return _REF
    if kind is int:
        return int.__repr__(value)
    if kind is str:
        return _quote(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is list or kind is tuple:
        return "[" + ",".join([_template(v, refs) for v in value]) + "]"
    if isinstance(value, Node):
        refs.append(value)
        return _REF
    if isinstance(value, (list, tuple)):
        return "[" + ",".join([_template(v, refs) for v in value]) + "]"
    if isinstance(value, dict):
        return "{" + ",".join([_quote(str(k)) + ":" + _template(v, refs) for k, v in value.items()]) + "}"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, float):
        return float.__repr__(value) if math.isfinite(value) else _quote(str(value))
    return _quote(str(value))


def argument_templates(nodes) -> tuple:
    """Per node its args and kwargs as JSON text templates (``_template``), and the nodes each
    references, in order: ``([(args, kwargs)], [(args_refs, kwargs_refs)])``."""
    templates = []
    refs = []
    for node in nodes:
        args_refs, kwargs_refs = [], []
        kwargs = node.kwargs
        templates.append(
            (
                "[" + ",".join([_template(a, args_refs) for a in node.args]) + "]",
                "{" + ",".join([_quote(str(k)) + ":" + _template(v, kwargs_refs) for k, v in kwargs.items()]) + "}"
                if kwargs
                else "{}",
            )
        )
        refs.append((args_refs, kwargs_refs))
    return templates, refs


def _text(value: Any) -> str:
    """A value holding no node references as JSON text."""
    return _template(value, [])


def _reference(quoted_name: str) -> str:
    return '{"node":' + quoted_name + "}"


def _filled(template: str, refs: list, references: dict) -> str:
    """``template`` with its node references written out (``references``: node to its text)."""
    pieces = template.split(_REF)
    out = [pieces[0]]
    for node, piece in zip(refs, pieces[1:]):
        out.append(references.get(node) or _reference(_quote(node.name)))
        out.append(piece)
    return "".join(out)


def _dim(d: Any) -> str:
    if type(d) is int:
        return int.__repr__(d)
    if isinstance(d, int) or (hasattr(d, "node") and d.node.is_constant()):
        return int.__repr__(int(d))
    return _quote(str(d))


def _module_path(node: Node) -> str:
    """The innermost module torch.export recorded for the node (``nn_module_stack``'s last entry,
    e.g. ``layers.7.attention``), as JSON text; ``null`` for the root module or none recorded."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return "null"
    path = next(reversed(stack.values()))[0]
    return _text(path) if isinstance(path, str) and path else "null"


def shape_and_dtype(val: torch.Tensor) -> str:
    dtype = _quote(str(val.dtype).removeprefix("torch."))
    return '"shape":[' + ",".join([_dim(d) for d in val.shape]) + '],"dtype":' + dtype


def tensor_text(node: Node, known: dict) -> str | None:
    """Shape and dtype of the node's tensor value as JSON members (each distinct pair worked out
    once, in ``known``); None when the value is not a tensor."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return None
    key = (val.dtype, val.shape)
    try:
        return known[key]
    except KeyError:
        text = known[key] = shape_and_dtype(val)
        return text
    except TypeError:  # a symbolic dimension cannot be a key
        return shape_and_dtype(val)


def _meta_text(tensor: str | None, digest: str | None) -> str:
    """``meta``: the shape and dtype of a tensor value (``tensor_text``), and the constant's digest
    if it has one."""
    body = tensor or ""
    if digest is not None:
        body = body + ',"digest":' + _quote(digest) if body else '"digest":' + _quote(digest)
    return "{" + body + "}"


def _digest(tensor: Any) -> str | None:
    """sha256 of a constant's bytes: content keys change when weights do (docs/manifest.md)."""
    if not isinstance(tensor, torch.Tensor):
        return None
    # A constant without data has no content to key: the lowering pipeline hands partitioners
    # programs whose constants may be fake or meta tensors (seen inside to_edge_transform_and_lower
    # with skip_ops_for_coreml_delegation). Its node then carries no digest (optional in meta).
    from torch._subclasses.fake_tensor import is_fake

    if tensor.is_meta or is_fake(tensor):
        return None
    data = tensor.detach().contiguous().cpu().reshape(-1).view(torch.uint8)
    return "sha256:" + hashlib.sha256(data.numpy().tobytes()).hexdigest()


def _constant_tensors(exported_program) -> dict:
    """Placeholder name to the tensor it stands for (parameters, buffers, lifted constants)."""
    sig = exported_program.graph_signature
    names = {**sig.inputs_to_parameters, **sig.inputs_to_buffers, **sig.inputs_to_lifted_tensor_constants}
    state, constants = exported_program.state_dict, exported_program.constants
    return {node: state.get(name, constants.get(name)) for node, name in names.items()}


def _options_text(partitioner) -> str:
    """The document's ``options`` as JSON text, from the partitioner's flags and compile specs."""
    specs = tuple((spec.key, spec.value) for spec in partitioner.delegation_spec.compile_specs)
    return _options_of(specs, bool(partitioner.take_over_mutable_buffer), bool(partitioner.take_over_constant_data))


@functools.lru_cache(maxsize=64)  # every partitioner asks, most with the same few specs
def _options_of(specs: tuple, take_over_mutable_buffer: bool, take_over_constant_data: bool) -> str:
    from executorch.backends.apple.coreml.compiler import CoreMLBackend
    from executorch.exir.backend.compile_spec_schema import CompileSpec

    compile_specs = [CompileSpec(key, value) for key, value in specs]
    target = CoreMLBackend.min_deployment_target_from_compile_specs(compile_specs)
    return json.dumps(
        {
            "take_over_mutable_buffer": take_over_mutable_buffer,
            "take_over_constant_data": take_over_constant_data,
            # ct.target aliases macOS/watchOS members to the iOS one of the same value.
            "minimum_deployment_target": None if target is None else type(target)(target.value).name,
            "compute_unit": CoreMLBackend.compute_unit_from_compile_specs(compile_specs).name,
            "compute_precision": CoreMLBackend.model_compute_precision_from_compile_specs(compile_specs).name,
        }
    )


@functools.lru_cache(maxsize=None)
def _versions() -> str:
    """The producer's package versions as JSON text (read from package metadata once a process:
    milliseconds, more than a small program's whole export)."""
    out = {}
    for name in ("executorch", "torch", "coremltools"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return json.dumps(out)


_SUPPORTED = {True: ',"supported":true', False: ',"supported":false'}


@functools.lru_cache(maxsize=1024)  # a program's nodes share a few verdicts, and exports their texts
def _verdict_text(verdict) -> str:
    return ',"conversion":' + json.dumps(verdict.to_json())


def _supported(nodes: list, templates: list, support) -> dict:
    """Each ``call_function`` and ``get_attr`` node's support, from the backend's
    ``is_node_supported``, asked last node first as torch.fx's CapabilityBasedPartitioner asks in
    stock ``partition()``: with ``lower_full_graph`` the op an error names, and the order of the
    refusals logged, are stock's.

    The backend is asked once per distinct question: the op (target) with its literal arguments,
    node references abstracted (``templates``). Its answer depends on nothing else in executorch 1.4
    and 1.5 (the target's name, ``alpha`` of add/sub, ``dim`` of argmin/argmax; coremltools looks up
    the target's name). python/tests/test_stock_reproduction.py compares the answers on every
    program it exports with the backend asked node by node, and test_bridge.py those of one op
    asked with arguments that change the answer. Nodes asked the same question get the same answer; the
    backend logs each refusal once anyway, so what is logged, and in which order, is unchanged."""
    answers: dict = {}
    supported = {}
    for index in range(len(nodes) - 1, -1, -1):
        node = nodes[index]
        op = node.op
        if op == "call_function":
            args, kwargs = templates[index]
            try:
                key = (node.target, args, kwargs)
                answer = answers.get(key)
            except TypeError:  # a target that cannot be a key: ask for this node alone
                key, answer = None, None
            if answer is None:
                answer = bool(support.is_node_supported(None, node))
                if key is not None:
                    answers[key] = answer
            supported[node] = answer
        elif op == "get_attr":
            supported[node] = bool(support.is_node_supported(None, node))
    return supported


def graph_signature(exported_program) -> dict:
    """The program's graph signature as the bridge document carries it."""
    sig = exported_program.graph_signature
    return {
        "inputs_to_parameters": dict(sig.inputs_to_parameters),
        "inputs_to_buffers": dict(sig.inputs_to_buffers),
        "inputs_to_lifted_tensor_constants": dict(sig.inputs_to_lifted_tensor_constants),
        "buffers_to_mutate": dict(sig.buffers_to_mutate),
        "user_inputs": list(sig.user_inputs),
        "user_outputs": [o if isinstance(o, str) else None for o in sig.user_outputs],
    }


def export_graph_text(
    exported_program,
    partitioner=None,
    *,
    model: str | None = None,
    digests: bool = True,
    log_support: bool = False,
    probes=None,
    found: Mapping[Node, Any] | None = None,
    decomposed: Mapping[Any, Any] | None = None,
) -> str:
    """The bridge JSON v1 document of an edge program, as compact JSON text: what ``_native.plan``
    reads. ``export_graph`` gives the same document as a dict; the arguments are its."""
    tensors = _constant_tensors(exported_program) if digests else {}
    skip = getattr(partitioner, "skip_ops_for_coreml_delegation", None)
    full = getattr(partitioner, "lower_full_graph", False)
    nodes = list(exported_program.graph.nodes)
    # Arguments as templates first: they are the support questions' keys, and the text written.
    templates, refs = argument_templates(nodes)
    supported = _supported(nodes, templates, support_checker(skip, full, log_support))
    shapes: dict = {}
    described = {node: tensor_text(node, shapes) for node in nodes}
    # What follows ``meta`` in the entry of each node that has a verdict: its support, then the
    # verdict, one text per verdict written for all its nodes at once.
    with_verdict: dict = {}
    signature = graph_signature(exported_program)
    if probes is not None:
        by_verdict = probes.verdicts(
            exported_program, nodes, supported.get, templates, refs, described, target_name, signature
        )
        for verdict, group in by_verdict.items():
            with_verdict.update(dict.fromkeys(group, _SUPPORTED[True] + _verdict_text(verdict)))
    for node, verdict in (found or {}).items():
        with_verdict[node] = _SUPPORTED[supported.get(node, False)] + _verdict_text(verdict)

    references: dict = {}
    entries = []
    for node, (args, kwargs), (args_refs, kwargs_refs) in zip(nodes, templates, refs):
        name = _quote(node.name)
        references[node] = _reference(name)
        op = node.op
        tag = node.meta.get("delegation_tag")
        tag = "null" if tag is None else _text(tag)
        module = _module_path(node)
        meta = _meta_text(described[node], _digest(tensors.get(node.name)) if tensors else None)
        if op == "call_function" or op == "get_attr":
            support = with_verdict.get(node) or _SUPPORTED[supported[node]]
        else:
            support = ""
        entry = (
            f'{{"name":{name},"op":{_quote(op)},"target":{_quote(target_name(node))},"args":{args},'
            f'"kwargs":{kwargs},"delegation_tag":{tag},"module_path":{module},"meta":{meta}{support}}}'
        )
        entries.append(_filled(entry, args_refs + kwargs_refs, references) if args_refs or kwargs_refs else entry)

    producer = '{"exporter":"partition_planner.export","model":' + _text(model) + ',"versions":' + _versions() + "}"
    options = ',"options":' + _options_text(partitioner) if partitioner is not None else ""
    options += ',"range_constraints":' + _range_constraints_text(exported_program)
    if decomposed:
        ops = [{"op": target_name_of(op), "conversion": v.to_json()} for op, v in decomposed.items()]
        options += ',"decomposed":' + json.dumps(ops)
    return (
        '{"schema":' + _quote(BRIDGE_SCHEMA)
        + ',"producer":' + producer
        + ',"nodes":[' + ",".join(entries)
        + '],"graph_signature":' + json.dumps(signature)
        + options
        + "}"
    )


def _range_constraints_text(exported_program) -> str:
    """The program's range constraints as the document carries them: each size a model input may
    have besides a number (``s0``, ``16*s89``), with its least and greatest value (null: none)."""
    if not exported_program.range_constraints:
        return "{}"

    def bound(value) -> int | None:
        try:
            return int(value) if value.is_finite else None
        except (AttributeError, TypeError, ValueError):  # a plain int, or no integer at all
            return int(value) if isinstance(value, int) else None

    ranges = {str(size): [bound(r.lower), bound(r.upper)] for size, r in exported_program.range_constraints.items()}
    return json.dumps(ranges)


def export_graph(exported_program, partitioner=None, **options) -> dict:
    """The bridge JSON v1 document of an edge program, with the tags it carries now. ``options``
    are ``export_graph_text``'s keywords: ``model``, ``digests``, ``log_support``, ``probes``,
    ``found``, ``decomposed``.

    ``partitioner`` is the ``CoreMLPartitioner`` whose options and compile specs the document records
    and whose op-support check fills ``supported``. ``digests`` writes each constant's sha256 into
    its ``meta.digest``, so that partition content keys change when weights change. ``log_support``
    lets the op-support check log why it refuses an op, as the stock partitioner's does.

    Support is the backend's ``is_node_supported``, asked last node first as in the stock
    partitioner: with ``lower_full_graph`` an unsupported op raises its ``NotImplementedError`` here,
    naming the op stock's names.

    ``probes`` (a ``partition_planner.conversion.ConversionProbes``) asks coremltools whether it
    converts each node the check accepts and writes each verdict into the node's ``conversion``;
    ``found`` adds verdicts by node (those partition verification found), over the probes';
    ``decomposed`` lists ops the partitioner let decompose because the converter refuses them
    whole, each with its verdict (the document's ``decomposed``).
    """
    return json.loads(export_graph_text(exported_program, partitioner, **options))

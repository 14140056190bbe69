"""Bridge JSON v1 (docs/bridge-json.md) from an ExecuTorch edge program.

``supported`` comes from the Core ML backend's own op-support check for every node, never from the
tags; ``delegation_tag`` is whatever the stock partitioner left in ``node.meta``.
"""

from __future__ import annotations

import hashlib
import math
import operator
from importlib import metadata
from typing import Any, Iterable, Optional

import torch
from torch.fx import Node

from . import BRIDGE_SCHEMA


def _support_checker(skip_ops: Optional[list] = None, lower_full_graph: bool = False, log: bool = False):
    """The Core ML backend's OperatorSupport (private in executorch 1.5, public in 1.4). ``log``: it
    logs why it refuses an op, once per reason, as in ``CoreMLPartitioner.partition()``."""
    from executorch.backends.apple.coreml.partition import coreml_partitioner as cp

    cls = getattr(cp, "_OperatorsSupportedForCoreMLBackend", None) or getattr(
        cp, "OperatorsSupportedForCoreMLBackend"
    )
    return cls(skip_ops or [], lower_full_graph, log=log)


def target_name(node: Node) -> str:
    """The op's qualified name as FX prints it without the schema: ``aten.slice_scatter.default``."""
    target = node.target
    if node.op != "call_function":
        return str(target)
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
    op = getattr(target, "_op", target)  # EdgeOpOverload wraps an OpOverload
    schema = getattr(op, "_schema", None)
    if schema is not None:
        namespace, _, name = schema.name.partition("::")
        overload = getattr(op, "_overloadname", "") or "default"
        return f"{namespace}.{name}.{overload}"
    module = getattr(target, "__module__", "") or ""
    name = getattr(target, "__name__", str(target))
    return f"{module}.{name}" if module and module not in ("_operator", "builtins") else name


def _literal(value: Any) -> Any:
    """An FX argument as JSON: nodes become ``{"node": NAME}``, everything else a literal."""
    kind = type(value)
    # The common cases first, by exact type (subclasses take the general path below).
    if kind is Node:
        return {"node": value.name}
    if kind is int or kind is str or kind is bool or value is None:
        return value
    if kind is list or kind is tuple:
        return [_literal(v) for v in value]
    if isinstance(value, Node):
        return {"node": value.name}
    if isinstance(value, (list, tuple)):
        return [_literal(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _literal(v) for k, v in value.items()}
    if isinstance(value, bool) or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return str(value)


def _dim(d: Any) -> Any:
    return int(d) if isinstance(d, int) or (hasattr(d, "node") and d.node.is_constant()) else str(d)


_DTYPE_NAMES: dict = {}


def _meta(node: Node) -> dict:
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        dtype = val.dtype
        name = _DTYPE_NAMES.get(dtype)
        if name is None:
            name = _DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
        return {"shape": [d if type(d) is int else _dim(d) for d in val.shape], "dtype": name}
    return {}


def _digest(tensor: Any) -> Optional[str]:
    """sha256 of a constant's bytes: content keys change when weights do (docs/manifest.md)."""
    if not isinstance(tensor, torch.Tensor):
        return None
    data = tensor.detach().contiguous().cpu().reshape(-1).view(torch.uint8)
    return "sha256:" + hashlib.sha256(data.numpy().tobytes()).hexdigest()


def _constant_tensors(exported_program) -> dict:
    """Placeholder name to the tensor it stands for (parameters, buffers, lifted constants)."""
    sig = exported_program.graph_signature
    names = {**sig.inputs_to_parameters, **sig.inputs_to_buffers, **sig.inputs_to_lifted_tensor_constants}
    state, constants = exported_program.state_dict, exported_program.constants
    return {node: state.get(name, constants.get(name)) for node, name in names.items()}


def _options(partitioner) -> dict:
    from executorch.backends.apple.coreml.compiler import CoreMLBackend

    specs = partitioner.delegation_spec.compile_specs
    target = CoreMLBackend.min_deployment_target_from_compile_specs(specs)
    return {
        "take_over_mutable_buffer": bool(partitioner.take_over_mutable_buffer),
        "take_over_constant_data": bool(partitioner.take_over_constant_data),
        # ct.target aliases macOS/watchOS members to the iOS one of the same value.
        "minimum_deployment_target": None if target is None else type(target)(target.value).name,
        "compute_unit": CoreMLBackend.compute_unit_from_compile_specs(specs).name,
        "compute_precision": CoreMLBackend.model_compute_precision_from_compile_specs(specs).name,
    }


def _versions(names: Iterable[str]) -> dict:
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def export_graph(
    exported_program, partitioner=None, *, model: Optional[str] = None, digests: bool = True, log_support: bool = False
) -> dict:
    """The bridge JSON v1 document of an edge program, with the tags it carries now.

    ``partitioner`` is the ``CoreMLPartitioner`` whose options and compile specs the document records
    and whose op-support check fills ``supported``. ``digests`` writes each constant's sha256 into
    its ``meta.digest``, so that partition content keys change when weights change. ``log_support``
    lets the op-support check log why it refuses an op, as the stock partitioner's does.

    Each ``call_function`` and ``get_attr`` node's support is queried once, through the backend's
    ``is_node_supported``, last node first as in the stock partitioner: with ``lower_full_graph`` an
    unsupported op raises its ``NotImplementedError`` here, naming the op stock's names.
    """
    tensors = _constant_tensors(exported_program) if digests else {}
    skip = getattr(partitioner, "skip_ops_for_coreml_delegation", None)
    full = getattr(partitioner, "lower_full_graph", False)
    support = _support_checker(skip, full, log_support)
    graph_nodes = list(exported_program.graph.nodes)
    # Last node first, as torch.fx's CapabilityBasedPartitioner asks in stock partition(): with
    # lower_full_graph the op an error names, and the order of the refusals logged, are stock's.
    supported = {
        node: bool(support.is_node_supported(None, node))
        for node in reversed(graph_nodes)
        if node.op == "call_function" or node.op == "get_attr"
    }
    nodes = []
    for node in graph_nodes:
        op = node.op
        kwargs = node.kwargs
        entry = {
            "name": node.name,
            "op": op,
            "target": target_name(node),
            "args": [_literal(a) for a in node.args],
            "kwargs": {str(k): _literal(v) for k, v in kwargs.items()} if kwargs else {},
            "delegation_tag": node.meta.get("delegation_tag"),
            "meta": _meta(node),
        }
        if op == "call_function" or op == "get_attr":
            entry["supported"] = supported[node]
        if tensors:
            digest = _digest(tensors.get(node.name))
            if digest is not None:
                entry["meta"]["digest"] = digest
        nodes.append(entry)
    sig = exported_program.graph_signature
    doc = {
        "schema": BRIDGE_SCHEMA,
        "producer": {
            "exporter": "partition_planner.export",
            "model": model,
            "versions": _versions(["executorch", "torch", "coremltools"]),
        },
        "nodes": nodes,
        "graph_signature": {
            "inputs_to_parameters": dict(sig.inputs_to_parameters),
            "inputs_to_buffers": dict(sig.inputs_to_buffers),
            "inputs_to_lifted_tensor_constants": dict(sig.inputs_to_lifted_tensor_constants),
            "buffers_to_mutate": dict(sig.buffers_to_mutate),
            "user_inputs": list(sig.user_inputs),
            "user_outputs": [o if isinstance(o, str) else None for o in sig.user_outputs],
        },
    }
    if partitioner is not None:
        doc["options"] = _options(partitioner)
    return doc

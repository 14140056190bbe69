"""The program executorch hands ``CoreMLBackend.preprocess`` for a set of nodes.

executorch lowers a partition by fusing its tagged nodes into a submodule and giving it a
signature of its own (``exir/lowered_backend_module.py``: ``create_exported_program_from_submodule``
and ``_get_new_signature``). ``subprogram`` builds the same program for any set of nodes of an edge
program without touching the program: placeholders the set holds keep their kind (parameter,
buffer, lifted constant) and their tensor, in the order parameters, buffers, constants;
every other value the set reads is a user input; values read outside the set are user outputs,
except the new value of a buffer whose placeholder the set holds, which is a buffer mutation (a
Core ML state), listed first. Probes convert one node this way, verification a planned partition
or a prefix of one. python/tests/test_conversion.py holds the signatures to those of executorch's
own lowering."""

from __future__ import annotations

import copy
from collections.abc import Iterable

import torch
from torch.export import ExportedProgram
from torch.export.exported_program import ModuleCallEntry, ModuleCallSignature
from torch.export.graph_signature import (
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)
from torch.fx import Node
from torch.utils import _pytree as pytree

# Placeholders executorch orders first, in this order (arrange_graph_placeholders).
_KIND_ORDER = {InputKind.PARAMETER: 0, InputKind.BUFFER: 1, InputKind.CONSTANT_TENSOR: 2}


class NotBuildable(Exception):
    """The nodes cannot stand as a program of their own (a value without a tensor, no output).
    Nothing is concluded about conversion."""


def _input_meta(node: Node) -> dict:
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        raise NotBuildable(f"{node.name} is read as an input but its value is not a tensor ({type(val).__name__})")
    meta = {"val": val}
    if "tensor_meta" in node.meta:
        meta["tensor_meta"] = node.meta["tensor_meta"]
    return meta


def _tensor(program: ExportedProgram, spec: InputSpec, like: torch.Tensor) -> torch.Tensor:
    value = program.state_dict.get(spec.target)
    if value is None:
        value = program.constants.get(spec.target)
    if not isinstance(value, torch.Tensor):
        raise NotBuildable(f"no tensor for {spec.target}")
    # A constant without data (a fake or meta tensor, seen inside to_edge_transform_and_lower with
    # skip_ops_for_coreml_delegation) converts as zeros of its shape: conversion reads no values.
    from torch._subclasses.fake_tensor import is_fake

    if value.is_meta or is_fake(value):
        value = torch.zeros(like.shape, dtype=like.dtype)
    # The verifier wants a parameter's entry to be a Parameter; decompositions can leave a plain
    # tensor there (a transposed convolution's weight, once decomposed).
    if spec.kind == InputKind.PARAMETER and not isinstance(value, torch.nn.Parameter):
        value = torch.nn.Parameter(value, requires_grad=False)
    return value


def subprogram(program: ExportedProgram, members: Iterable[Node], outputs: list[Node] | None = None) -> ExportedProgram:
    """The program executorch would convert for ``members`` (call_function nodes and the
    placeholders taken in with them). ``outputs``: the values to return, in order, instead of the
    members read outside the set (a probe returns its node whatever reads it)."""
    members = list(members)
    inside = set(members)
    sig = program.graph_signature
    specs = {s.arg.name: s for s in sig.input_specs if isinstance(s.arg, TensorArgument)}
    mutations = {s.arg.name: s.target for s in sig.output_specs if s.kind == OutputKind.BUFFER_MUTATION}
    taken = [n for n in members if n.op == "placeholder"]
    ops = [n for n in members if n.op != "placeholder"]
    taken.sort(key=lambda n: _KIND_ORDER.get(specs[n.name].kind, 3) if n.name in specs else 3)
    external: list[Node] = []
    seen = set()
    for n in ops:
        for a in n.all_input_nodes:
            if a not in inside and a not in seen:
                seen.add(a)
                external.append(a)

    graph = torch.fx.Graph()
    env = {}
    input_specs = []
    state_dict, constants = {}, {}
    held_buffers = set()
    for n in taken:
        spec = specs.get(n.name)
        if spec is None or spec.kind == InputKind.USER_INPUT:
            external.insert(0, n)  # a user input tagged with the set is still an input
            continue
        meta = _input_meta(n)
        env[n] = placeholder = graph.placeholder(n.name)
        placeholder.meta = meta
        value = _tensor(program, spec, meta["val"])
        (state_dict if spec.target in program.state_dict else constants)[spec.target] = value
        if spec.kind == InputKind.BUFFER:
            held_buffers.add(spec.target)
        # FX may rename a placeholder (``input`` becomes ``input_1``): specs name the new node.
        input_specs.append(InputSpec(spec.kind, TensorArgument(placeholder.name), spec.target, spec.persistent))
    for n in external:
        env[n] = placeholder = graph.placeholder(n.name)
        placeholder.meta = _input_meta(n)
        input_specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(placeholder.name), None))
    for n in ops:
        env[n] = graph.node_copy(n, lambda a: env[a])

    if outputs is None:
        outputs = [n for n in ops if any(u not in inside for u in n.users)]
    if not outputs:
        raise NotBuildable("the nodes return nothing")
    # Buffer mutations first, as the verifier expects (arrange_graph_outputs).
    mutated = [n for n in outputs if mutations.get(n.name) in held_buffers]
    plain = [n for n in outputs if mutations.get(n.name) not in held_buffers]
    output_specs = [
        OutputSpec(OutputKind.BUFFER_MUTATION, TensorArgument(env[n].name), mutations[n.name]) for n in mutated
    ]
    output_specs += [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(env[n].name), None) for n in plain]
    graph.output(tuple(env[n] for n in mutated + plain))

    module = torch.fx.GraphModule(torch.nn.Module(), graph)
    signature = ExportGraphSignature(input_specs, output_specs)
    in_spec = pytree.tree_flatten((tuple(signature.user_inputs), {}))[1]
    out_spec = pytree.tree_flatten(signature.user_outputs)[1]
    return ExportedProgram(
        root=module,
        graph=graph,
        graph_signature=signature,
        state_dict=state_dict,
        range_constraints=copy.deepcopy(program.range_constraints),
        module_call_graph=[
            ModuleCallEntry("", ModuleCallSignature(inputs=[], outputs=[], in_spec=in_spec, out_spec=out_spec))
        ],
        constants=constants,
        verifiers=[program.verifier],
    )

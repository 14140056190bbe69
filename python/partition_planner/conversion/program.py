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
from typing import NamedTuple

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

    return _exported(program, graph, ExportGraphSignature(input_specs, output_specs), state_dict, constants)


# How a probe feeds a member reading values a model's boundary cannot take (``Member.sizes``).
# Each size of its inputs that is an expression of symbols becomes a range of its own, bounded as
# the expression is, and each symbolic scalar it reads is computed inside from the tensors it is
# computed from (``sym_size`` and arithmetic on sizes): what the op meets in context, sizes unknown.
SYMBOLIC = "symbolic"
# Every size at its example value, and every symbolic scalar its example value: where the first
# cannot be built (a scalar no tensor gives).
STATIC = "static"


class Member(NamedTuple):
    """One thing a probe converts: ops of an edge program (in program order, ``getitem``s with
    their producer), the placeholders of constant data they take in, and the values to return."""

    ops: list[Node]
    constants: list[Node]
    returns: list[Node]
    # "" (values as the program has them), SYMBOLIC or STATIC.
    sizes: str


def size_hint(size) -> int:
    """A size's value in the example the program was exported with (its hint). Raises
    ``NotBuildable`` for a size without one (an unbacked symbol)."""
    if type(size) is int:
        return size
    from torch.fx.experimental.symbolic_shapes import optimization_hint

    try:
        return int(optimization_hint(size))
    except Exception as e:  # an unbacked symbol, or a value torch cannot hint
        raise NotBuildable(f"no example value for the size {size}") from e


def static_tensor(val: torch.Tensor) -> torch.Tensor:
    """A tensor of ``val``'s dtype with its sizes at their hints: what a probe feeds a member that
    reads a value of a symbolic size Core ML cannot take at a boundary."""
    return torch.empty([size_hint(d) for d in val.shape], dtype=val.dtype, device="meta")


def contiguous(val: torch.Tensor) -> torch.Tensor:
    """A tensor of ``val``'s sizes and dtype, contiguous (in ``val``'s fake mode, if it has one)."""
    mode = getattr(val, "fake_mode", None)
    if mode is None:
        return torch.empty(val.shape, dtype=val.dtype, device="meta")
    with mode:
        return torch.empty(val.shape, dtype=val.dtype, device=val.device)


def _strided(node: Node, val: torch.Tensor) -> bool:
    """Whether ``val``'s dim order may not be the plain one coremltools takes as an input: asked of
    the tensor where its sizes are numbers; with symbols (where asking costs a symbolic proof),
    whether the op returns a view of its input."""
    if all(type(d) is int for d in val.shape):
        return val.dim_order() != tuple(range(val.dim()))
    schema = getattr(node.target, "_schema", None)
    returns = getattr(schema, "returns", None)
    return bool(returns) and returns[0].alias_info is not None


def probe_program(program: ExportedProgram, members: list[Member]) -> tuple[ExportedProgram, dict[str, int]]:
    """One program holding every member side by side, for one conversion: each member's ops copied
    with user inputs of their own for every value they read from outside, the constants they hold
    taken in (parameters, buffers, constants, in that order, as executorch orders them), and their
    ``returns`` returned. Returns the program and, for each copied op, the index of its member."""
    sig = program.graph_signature
    specs = {s.arg.name: s for s in sig.input_specs if isinstance(s.arg, TensorArgument)}
    graph = torch.fx.Graph()
    envs: list[dict] = [{} for _ in members]
    input_specs: list[InputSpec] = []
    state_dict, constants = {}, {}
    # A placeholder's target is its argument's name in the program's code: one per placeholder.
    taken: set[str] = set()

    def placeholder(name: str) -> Node:
        unique, k = name, 0
        while unique in taken:
            k += 1
            unique = f"{name}_{k}"
        taken.add(unique)
        return graph.placeholder(unique)

    # Constant data first, by kind across every member; each member's copy under a target of its own.
    held = [(specs[c.name], i, c) for i, m in enumerate(members) for c in m.constants]
    held.sort(key=lambda entry: _KIND_ORDER.get(entry[0].kind, 3))
    for spec, i, node in held:
        if spec.kind == InputKind.USER_INPUT:
            raise NotBuildable(f"{node.name} is a user input, not constant data")
        meta = _input_meta(node)
        envs[i][node] = copied = placeholder(node.name)
        copied.meta = meta
        value = _tensor(program, spec, meta["val"])
        target = spec.target if spec.target not in state_dict and spec.target not in constants else f"{spec.target}#{i}"
        (state_dict if spec.target in program.state_dict else constants)[target] = value
        input_specs.append(InputSpec(spec.kind, TensorArgument(copied.name), target, spec.persistent))
    ranges = dict(program.range_constraints)
    # Before decomposition a value may be a strided view (a permute's): made contiguous for the
    # probe, as lowering's copies make it (coremltools takes no other dim order as an input).
    before_decomposition = program.dialect != "EDGE"
    # A value members read from outside, fed once for every member that reads it so (each placeholder
    # is one more input for coremltools to read, a symbolic proof each where sizes have symbols).
    fed_by: dict[tuple, Node] = {}
    for i, member in enumerate(members):
        env, inside = envs[i], set(member.ops) | set(member.constants)
        static = member.sizes == STATIC
        for op in member.ops:
            for value in op.all_input_nodes:
                if value in inside or value in env:
                    continue
                val = value.meta.get("val")
                if isinstance(val, torch.Tensor):
                    fed = fed_by.get((value, static))
                    if fed is None:
                        fed = fed_by[(value, static)] = placeholder(value.name)
                        if static:
                            val = static_tensor(val)
                        elif before_decomposition and _strided(value, val):
                            val = contiguous(val)
                        fed.meta = {"val": val}
                        input_specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(fed.name), None))
                    env[value] = fed
                    if member.sizes == SYMBOLIC:
                        _bound_sizes(val, ranges)
                elif static and isinstance(val, (int, torch.SymInt)):
                    env[value] = size_hint(val)
                else:
                    raise NotBuildable(f"{value.name} is read as an input but its value is not a tensor ({type(val).__name__})")
    owner: dict[str, int] = {}
    outputs = []
    for i, member in enumerate(members):
        env = envs[i]
        for op in member.ops:
            env[op] = copied = graph.node_copy(op, lambda a: env[a])
            owner[copied.name] = i
        outputs.extend(env[r] for r in member.returns)
    if not outputs:
        raise NotBuildable("the members return nothing")
    graph.output(tuple(outputs))
    signature = ExportGraphSignature(
        input_specs, [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(o.name), None) for o in outputs]
    )
    return _exported(program, graph, signature, state_dict, constants, ranges), owner


def _bound_sizes(val: torch.Tensor, ranges: dict) -> None:
    """Each size of ``val`` that is an expression of symbols, added to ``ranges`` bounded as the
    expression is: coremltools then takes it as a model input's size, a range of its own."""
    from torch.utils._sympy.value_ranges import bound_sympy

    for size in val.shape:
        if isinstance(size, torch.SymInt) and not size.node.is_constant():
            expr = size.node.expr
            if expr not in ranges:
                ranges[expr] = bound_sympy(expr, program_ranges(ranges))


def program_ranges(ranges: dict) -> dict:
    """The ranges of plain symbols among ``ranges``: what an expression is bounded from."""
    return {k: v for k, v in ranges.items() if getattr(k, "is_Symbol", False)}


def _exported(program: ExportedProgram, graph: torch.fx.Graph, signature, state_dict: dict, constants: dict, ranges: dict | None = None) -> ExportedProgram:
    module = torch.fx.GraphModule(torch.nn.Module(), graph)
    in_spec = pytree.tree_flatten((tuple(signature.user_inputs), {}))[1]
    out_spec = pytree.tree_flatten(signature.user_outputs)[1]
    return ExportedProgram(
        root=module,
        graph=graph,
        graph_signature=signature,
        state_dict=state_dict,
        range_constraints=copy.deepcopy(program.range_constraints if ranges is None else ranges),
        module_call_graph=[
            ModuleCallEntry("", ModuleCallSignature(inputs=[], outputs=[], in_spec=in_spec, out_spec=out_spec))
        ],
        constants=constants,
        verifiers=[program.verifier],
    )

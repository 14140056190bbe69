"""Running a lowered program the way a device would, on Linux, through each delegate's original
sub-program.

executorch's CPU fallback for a delegate call runs ``lowered.original_module.module()``, a fresh
module over the program's shared tensors at every call. That hides the worst bug of all: on device
each delegate holds its own copy, where a buffer the sub-program only reads is a constant frozen at
export and one it mutates is that delegate's private state. Here each delegate runs one private deep
copy of its sub-program, kept across calls.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from collections.abc import Iterator

import torch
from executorch.exir.lowered_backend_module import LoweredBackendModule
from torch.export.graph_signature import InputKind


def lowered_modules(exported_program) -> list[LoweredBackendModule]:
    return [m for m in exported_program.graph_module.modules() if isinstance(m, LoweredBackendModule)]


def delegated_ops(exported_program) -> dict[str, int]:
    """How many of each op the delegates of a lowered program hold, by op name."""
    from .export import target_name

    counts: dict[str, int] = {}
    for lowered in lowered_modules(exported_program):
        for node in lowered.original_module.graph.nodes:
            if node.op == "call_function":
                name = target_name(node)
                counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def mutated_buffers(program) -> set[str]:
    return set(program.graph_signature.buffers_to_mutate.values())


def delegate_buffers(lowered: LoweredBackendModule) -> set[str]:
    """Buffers a delegate holds (its BUFFER inputs), mutated or not."""
    sig = lowered.original_module.graph_signature
    return {s.target for s in sig.input_specs if s.kind == InputKind.BUFFER}


def delegate_states(lowered: LoweredBackendModule) -> set[str]:
    """Buffers that become Core ML states: BUFFER inputs the delegated sub-program mutates, which is
    the rule coremltools follows."""
    return delegate_buffers(lowered) & mutated_buffers(lowered.original_module)


class _PrivateProgram:
    """Stands in for a delegate's ExportedProgram: one module over private copies of its tensors."""

    def __init__(self, program) -> None:
        self._module = copy.deepcopy(program).module()

    def module(self):
        return self._module


@contextmanager
def device_semantics(exported_program) -> Iterator[dict[int, torch.nn.Module]]:
    """Within the block, every delegate call of ``exported_program`` runs a private copy of its
    sub-program. Yields, per delegate index, the private module (whose buffers are its states)."""
    lowered = lowered_modules(exported_program)
    saved = [m._original_exported_program for m in lowered]
    private = {}
    try:
        for i, m in enumerate(lowered):
            stand_in = _PrivateProgram(m._original_exported_program)
            private[i] = stand_in.module()
            m._original_exported_program = stand_in
        yield private
    finally:
        for m, program in zip(lowered, saved):
            m._original_exported_program = program


def run_steps(exported_program, steps) -> tuple:
    """Runs ``exported_program`` with device semantics for each input tuple in ``steps``; returns the
    outputs of every step and the final value of every mutable buffer, wherever it lives."""
    program_buffers = mutated_buffers(exported_program)
    lowered = lowered_modules(exported_program)
    states = {name: i for i, m in enumerate(lowered) for name in delegate_states(m)}
    with device_semantics(exported_program) as private:
        top = exported_program.module()
        outputs = [top(*inputs) for inputs in steps]
        top_buffers = dict(top.named_buffers())
        finals = {}
        for name in program_buffers | set(states):
            owner = private[states[name]] if name in states else None
            finals[name] = (dict(owner.named_buffers()) if owner is not None else top_buffers)[name].detach().clone()
    return outputs, finals

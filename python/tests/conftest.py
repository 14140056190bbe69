"""Shared helpers for the end-to-end tests: real executorch, real coremltools."""

from __future__ import annotations

import copy
import os
import tempfile
from importlib import metadata

import coremltools as ct
import pytest
import torch
from executorch.backends.apple.coreml.compiler import CoreMLBackend
from executorch.exir import to_edge_transform_and_lower

from partition_planner.device import delegate_buffers, delegate_states, lowered_modules, run_steps

# Conversion verdicts (docs/conversion.md) kept for this test run only, shared by its tests: a
# developer's own cache neither hides a probe from the tests nor takes in the tests' verdicts.
os.environ.setdefault("PARTITION_PLANNER_CACHE_DIR", tempfile.mkdtemp(prefix="partition-planner-verdicts-"))

EXECUTORCH = metadata.version("executorch")
ET_MINOR = tuple(int(p) for p in EXECUTORCH.split(".")[:2])

TARGETS = {"iOS17": ct.target.iOS17, "iOS18": ct.target.iOS18}


def specs(target: str):
    return CoreMLBackend.generate_compile_specs(
        compute_precision=ct.precision.FLOAT32,
        compute_unit=ct.ComputeUnit.ALL,
        minimum_deployment_target=TARGETS[target],
    )


def lower(model: torch.nn.Module, partitioner, example):
    model = copy.deepcopy(model).eval().requires_grad_(False)
    return to_edge_transform_and_lower(torch.export.export(model, example, strict=False), partitioner=[partitioner])


class Lowered:
    """What a lowering produced, read before ``to_executorch`` rewrites the program."""

    def __init__(self, manager, mutable):
        self.manager = manager
        self.program = manager.exported_program()
        modules = lowered_modules(self.program)
        self.states = [delegate_states(m) for m in modules]
        # Mutable buffers each delegate holds a copy of, as state or frozen.
        self.held = [delegate_buffers(m) & mutable for m in modules]

    def all_states(self):
        return set().union(*self.states) if self.states else set()

    def max_errors(self, model, steps):
        """Per step the largest output difference from eager, and per buffer its final difference."""
        eager = copy.deepcopy(model).eval().requires_grad_(False)
        expected = [eager(*s) for s in steps]
        outputs, finals = run_steps(self.program, steps)
        first = lambda o: o[0] if isinstance(o, (tuple, list)) else o  # noqa: E731
        step_errors = [float((first(a) - b).abs().max()) for a, b in zip(outputs, expected)]
        buffers = dict(eager.named_buffers())
        buffer_errors = {name: float((value - buffers[name]).abs().max()) for name, value in finals.items()}
        return step_errors, buffer_errors


def mutable_buffers(model, example):
    model = copy.deepcopy(model).eval().requires_grad_(False)
    return set(torch.export.export(model, example, strict=False).graph_signature.buffers_to_mutate.values())


@pytest.fixture
def lowered():
    return lambda model, partitioner, example: Lowered(lower(model, partitioner, example), mutable_buffers(model, example))

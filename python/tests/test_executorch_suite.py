"""executorch's own Core ML tests (shipped in the wheel under backends/apple/coreml/test/), run with
``CoreMLPartitioner`` swapped for ``PlannedCoreMLPartitioner``: the drop-in must pass what stock
passes. Each test method is one case here; a suite this executorch version does not ship is left out.

torchvision's models are built with random weights: the model hub cannot be reached, and what the
tests check (which ops are delegated) does not depend on the weights."""

from __future__ import annotations

import importlib
import unittest

import pytest
import torchvision

from executorch.backends.apple.coreml.partition import CoreMLPartitioner
from partition_planner import PlannedCoreMLPartitioner

PACKAGE = "executorch.backends.apple.coreml.test"
SUITES = [
    "test_coreml_partitioner",
    "test_torch_ops",
    "test_enumerated_shapes",
    "test_coreml_multifunction",
    "test_coreml_recipes",
]
# Modules that build CoreMLPartitioner by name for the suites: the suites themselves, tester.py (for
# test_torch_ops' helpers) and the recipe provider (for test_coreml_recipes).
HOLDERS = [f"{PACKAGE}.{name}" for name in SUITES + ["tester"]] + [
    "executorch.backends.apple.coreml.recipes.coreml_recipe_provider"
]


class SwappedIn(PlannedCoreMLPartitioner):
    """The drop-in, counting its plans, so that a case can tell it ran."""

    plans_made = 0
    # Runs of the stock pass: a stock CoreMLPartitioner the swap missed, or the drop-in running it
    # (it must not: its partition() plans without CoreMLPartitioner.partition()).
    stock_runs = 0

    def partition(self, exported_program):
        result = super().partition(exported_program)
        SwappedIn.plans_made += 1
        return result


def _module(name):
    """The module, or None where this executorch version does not ship it."""
    if "." not in name:
        name = f"{PACKAGE}.{name}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            return None
        raise


def _flatten(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _flatten(item)
        else:
            yield item


def _cases():
    for name in SUITES:
        module = _module(name)
        if module is None:
            continue
        for case in _flatten(unittest.TestLoader().loadTestsFromModule(module)):
            cls, method = type(case), case._testMethodName
            yield pytest.param(cls, method, id=f"{name}::{cls.__name__}::{method}")


@pytest.fixture
def swapped(monkeypatch):
    stock_partition = CoreMLPartitioner.partition

    def counted(self, exported_program):
        SwappedIn.stock_runs += 1
        return stock_partition(self, exported_program)

    monkeypatch.setattr(CoreMLPartitioner, "partition", counted)
    for name in HOLDERS:
        module = _module(name)
        if module is not None and hasattr(module, "CoreMLPartitioner"):
            monkeypatch.setattr(module, "CoreMLPartitioner", SwappedIn)
    for model in ("vit_b_16", "mobilenet_v2", "mobilenet_v3_small", "resnet18"):
        build = getattr(torchvision.models, model, None)
        if build is not None:
            monkeypatch.setattr(torchvision.models, model, lambda *a, _build=build, **kw: _build(*a, **{**kw, "weights": None}))


@pytest.mark.parametrize("cls,method", list(_cases()))
def test_executorch_coreml_test_passes_with_the_drop_in(cls, method, swapped):
    stock_before = SwappedIn.stock_runs
    result = unittest.TestResult()
    cls(method).run(result)
    if result.skipped and not (result.errors or result.failures):
        pytest.skip(result.skipped[0][1])
    problems = [text for _, text in result.errors + result.failures]
    assert not problems, "\n".join(problems)
    # Whatever the case lowered, it lowered through the drop-in (some cases only validate arguments),
    # and the stock pass never ran.
    assert SwappedIn.stock_runs == stock_before, f"{method} ran CoreMLPartitioner.partition()"


def test_the_swap_reaches_the_suites(swapped):
    """The suites build the partitioner by the name patched here: a case run with the swap in place
    plans through the drop-in."""
    holders = [m for m in map(_module, HOLDERS) if m is not None and hasattr(m, "CoreMLPartitioner")]
    assert holders, "no executorch Core ML test module names CoreMLPartitioner"
    assert all(m.CoreMLPartitioner is SwappedIn for m in holders)
    suite = _module("test_coreml_partitioner")
    before = SwappedIn.plans_made
    result = unittest.TestResult()
    suite.TestCoreMLPartitioner("test_add_sub_skip_mm").run(result)
    assert result.wasSuccessful(), result.errors + result.failures
    assert SwappedIn.plans_made > before

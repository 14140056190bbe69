"""The stock proposal reproduced in Rust against the real thing: graphs beyond data/, each run through
the installed executorch's ``CoreMLPartitioner(...).partition()`` and compared node for node, up to
renaming of tags, with ``_native.check(..., stock=True)`` on the untagged program's bridge document.

The program is the one stock's ``partition()`` receives inside ``to_edge_transform_and_lower`` (the
ops the partitioner asks to keep are not decomposed, e.g. ``scaled_dot_product_attention``): a
partitioner captures it there, exports it untagged, runs the stock pass once per option set, and
stops the lowering. Some graphs also go through plain ``to_edge`` (everything decomposed).

Then ``PlannedCoreMLPartitioner``: ``compare_with_stock=True`` agrees on real models and raises on a
corrupted comparison, and ``partition()`` never runs the stock pass."""

from __future__ import annotations

import copy
import json
import random
import re

import pytest
import torch
from conftest import EXECUTORCH, specs
from random_models import UNSUPPORTED, RandomNet

import partition_planner.partitioner as planned_module
from executorch.backends.apple.coreml.partition import CoreMLPartitioner
from executorch.exir import to_edge, to_edge_transform_and_lower
from partition_planner import PlannedCoreMLPartitioner, _native, export_graph
from partition_planner.export import support_checker
from partition_planner.partitioner import StockMismatch, first_tag_difference
from partition_planner.testing import LLMS, SliceCache, WholeCache, llm, seed_steps

# take_over_mutable_buffer, take_over_constant_data: every combination, on every captured program.
TAKE_OVER = [(m, c) for m in (True, False) for c in (True, False)]


class _Captured(Exception):
    pass


def compare(program, partitioner, label: str) -> dict:
    """Exports ``program`` untagged, runs the real stock pass on it, reproduces it, and clears the
    tags again. Returns the comparison: the first differing node (or None) and the partition count.
    A difference is saved as /tmp/stock-mismatch-LABEL.json (the graph with the real stock tags)."""
    for node in program.graph.nodes:
        node.meta.pop("delegation_tag", None)
    doc = export_graph(program, partitioner, digests=False)
    assert_support_is_the_backends(doc, program, partitioner)
    CoreMLPartitioner.partition(partitioner, program)
    names = [n.name for n in program.graph.nodes]
    stock = {n.name: n.meta.get("delegation_tag") for n in program.graph.nodes}
    reproduced = json.loads(_native.check(json.dumps(doc), None, stock=True))["node_tags"]
    difference = first_tag_difference(stock, reproduced, names)
    if difference is not None:
        path = f"/tmp/stock-mismatch-{EXECUTORCH}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', label)}.json"
        with open(path, "w") as f:
            json.dump(export_graph(program, partitioner, digests=False, model=label), f)
        difference = (*difference, path)
    for node in program.graph.nodes:
        node.meta.pop("delegation_tag", None)
    return {"label": label, "difference": difference, "partitions": len({t for t in stock.values() if t})}


def assert_support_is_the_backends(doc, program, partitioner):
    """export asks the backend once per distinct question (op and literal arguments): every node's
    ``supported`` must be what the backend answers when asked about that node alone."""
    support = support_checker(partitioner.skip_ops_for_coreml_delegation, partitioner.lower_full_graph)
    asked = {n.name: support.is_node_supported(None, n) for n in program.graph.nodes if n.op in ("call_function", "get_attr")}
    exported = {n["name"]: n["supported"] for n in doc["nodes"] if "supported" in n}
    assert exported == asked


def partitioner_for(target="iOS18", take_over=(True, True), skip=None):
    mutable, constant = take_over
    return CoreMLPartitioner(
        compile_specs=specs(target),
        take_over_mutable_buffer=mutable,
        take_over_constant_data=constant,
        skip_ops_for_coreml_delegation=list(skip or []),
    )


def through_lowering(model, example, label, skip=None, target="iOS18", take_overs=TAKE_OVER):
    """Each take-over combination on the program ``to_edge_transform_and_lower`` partitions."""
    results = []

    class Capture(CoreMLPartitioner):
        def partition(self, exported_program):
            for take_over in take_overs:
                part = partitioner_for(target, take_over, skip)
                results.append(compare(exported_program, part, f"{label}-mutable{take_over[0]:d}-constant{take_over[1]:d}"))
            raise _Captured

    model = copy.deepcopy(model).eval().requires_grad_(False)
    exported = torch.export.export(model, example, strict=False)
    with pytest.raises(_Captured):
        to_edge_transform_and_lower(exported, partitioner=[Capture(compile_specs=specs(target), skip_ops_for_coreml_delegation=list(skip or []))])
    return results


def through_to_edge(model, example, label, skip=None):
    model = copy.deepcopy(model).eval().requires_grad_(False)
    program = to_edge(torch.export.export(model, example, strict=False)).exported_program()
    return [compare(program, partitioner_for("iOS18", t, skip), f"{label}-to_edge-mutable{t[0]:d}-constant{t[1]:d}") for t in TAKE_OVER]


def assert_agree(results):
    for r in results:
        if r["difference"] is not None:
            node, stock, reproduced, detail, path = r["difference"]
            pytest.fail(
                f"{r['label']} (executorch {EXECUTORCH}): first differing node {node!r}: stock tags it {stock!r}, "
                f"the reproduction {reproduced!r}{detail}; graph with the stock tags in {path}"
            )


SKIPS = [[], ["aten.mul.tensor"], ["aten.add.tensor"], ["aten.relu.default", "aten.cat.default"], ["aten.index_put.default"]]
SEEDS = range(16)


def _skip_for(seed):
    return SKIPS[random.Random(seed).randrange(len(SKIPS))]


@pytest.mark.parametrize("seed", SEEDS)
def test_random_programs_through_to_edge_transform_and_lower(seed):
    model = RandomNet(seed)
    results = through_lowering(model, RandomNet.example(), f"random{seed}", skip=_skip_for(seed))
    assert_agree(results)
    # The refused ops split the supported ones: several partitions.
    assert max(r["partitions"] for r in results) >= 2, (model.kinds, results)


@pytest.mark.parametrize("seed", [100, 101, 102, 103])
def test_random_programs_through_to_edge(seed):
    """Plain to_edge: attention decomposed, the program the deprecated to_backend workflow sees."""
    model = RandomNet(seed, steps=24, unsupported=4)
    results = through_to_edge(model, RandomNet.example(), f"random{seed}", skip=_skip_for(seed))
    assert_agree(results)
    assert max(r["partitions"] for r in results) >= 2, (model.kinds, results)


def test_the_random_programs_cover_every_refused_op_and_the_multi_output_ops():
    kinds = {k for seed in SEEDS for k in RandomNet(seed).kinds}
    assert set(UNSUPPORTED) <= kinds, set(UNSUPPORTED) - kinds
    assert {"split", "max_dim", "topk", "attention", "kv_write", "slice_copy", "scale", "residual"} <= kinds


@pytest.mark.parametrize("model_name", ["slice", "whole"])
@pytest.mark.parametrize("skip", [[], ["aten.mul.tensor"], ["aten.slice_scatter.default"], ["aten.copy.default"]], ids=lambda s: "+".join(s) or "none")
def test_seed_models(model_name, skip):
    model = {"slice": SliceCache, "whole": WholeCache}[model_name]()
    assert_agree(through_lowering(model, seed_steps(1)[0], f"seed-{model_name}-{'+'.join(skip) or 'noskip'}", skip=skip, target="iOS17"))


@pytest.mark.parametrize("name", sorted(LLMS))
def test_llms(name):
    """Both take-over settings (constant data taken over, as by default): the stock pass takes
    seconds on Qwen3.5."""
    model, example = llm(name)
    results = through_lowering(model, example, name, take_overs=[(True, True), (False, True)])
    assert_agree(results)
    assert all(r["partitions"] >= 1 for r in results)


def test_first_tag_difference_compares_up_to_renaming():
    names = ["a", "b", "c", "d"]
    stock = {"a": "tag0", "b": "tag0", "c": None, "d": "tag1"}
    assert first_tag_difference(stock, {"a": "tag7", "b": "tag7", "c": None, "d": "tag2"}, names) is None
    assert first_tag_difference(stock, {"a": "tag7", "b": "tag7", "c": "tag7", "d": "tag2"}, names)[:3] == ("c", None, "tag7")
    # One stock tag for two reproduced ones, and two stock tags for one reproduced one.
    assert first_tag_difference(stock, {"a": "tag7", "b": "tag8", "c": None, "d": "tag2"}, names)[:3] == ("b", "tag0", "tag8")
    assert first_tag_difference(stock, {"a": "tag7", "b": "tag7", "c": None, "d": "tag7"}, names)[:3] == ("d", "tag1", "tag7")
    assert first_tag_difference(stock, {"a": "tag7", "b": "tag7", "c": None}, names)[0] == "d"


# PlannedCoreMLPartitioner against the stock pass.


def lower_planned(model, example, **kwargs):
    model = copy.deepcopy(model).eval().requires_grad_(False)
    part = PlannedCoreMLPartitioner(compile_specs=specs("iOS18"), log_explanations=False, **kwargs)
    to_edge_transform_and_lower(torch.export.export(model, example, strict=False), partitioner=[part])
    return part


@pytest.mark.parametrize(
    "case",
    ["slice-takeover_on", "whole-takeover_off", "random3-skip_mul", "random5-takeover_off"],
)
def test_compare_with_stock_agrees(case):
    models = {
        "slice": (SliceCache(), seed_steps(1)[0]),
        "whole": (WholeCache(), seed_steps(1)[0]),
        "random3": (RandomNet(3), RandomNet.example()),
        "random5": (RandomNet(5), RandomNet.example()),
    }
    name, setting = case.split("-")
    model, example = models[name]
    kwargs = {"take_over_mutable_buffer": setting != "takeover_off"}
    if setting == "skip_mul":
        kwargs["skip_ops_for_coreml_delegation"] = ["aten.mul.tensor"]
    part = lower_planned(model, example, compare_with_stock=True, **kwargs)
    assert part.last_plan["stats"]["stock_proposal"] == "reproduced"


def test_a_corrupted_comparison_raises_naming_the_node(monkeypatch):
    real_check = _native.check

    def corrupted(graph, overrides=None, stock=False, executorch=None):
        found = json.loads(real_check(graph, overrides, stock, executorch))
        tags = found["node_tags"]
        victim = next(name for name in tags if tags[name] is not None)
        tags[victim] = None
        corrupted.victim = victim
        return json.dumps(found)

    monkeypatch.setattr(planned_module._native, "check", corrupted)
    with pytest.raises(StockMismatch) as raised:
        lower_planned(SliceCache(), seed_steps(1)[0], compare_with_stock=True)
    assert raised.value.node == corrupted.victim
    assert raised.value.stock_tag is not None and raised.value.reproduced_tag is None
    assert corrupted.victim in str(raised.value) and isinstance(raised.value, ValueError)


def test_partition_never_runs_the_stock_pass(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the stock pass ran")

    from executorch.backends.apple.coreml.partition import coreml_partitioner
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

    monkeypatch.setattr(CoreMLPartitioner, "partition", refuse)
    monkeypatch.setattr(CapabilityBasedPartitioner, "propose_partitions", refuse)
    monkeypatch.setattr(coreml_partitioner, "CapabilityBasedPartitioner", refuse)
    part = lower_planned(RandomNet(7), RandomNet.example(), take_over_mutable_buffer=True)
    assert part.last_plan["stats"]["partitions"] >= 1
    with pytest.raises(AssertionError, match="the stock pass ran"):
        lower_planned(SliceCache(), seed_steps(1)[0], compare_with_stock=True)


def test_lower_full_graph_refuses_an_unsupported_op_as_stock_does():
    """The same NotImplementedError, naming the same op of two refused ones (fx asks last node first)."""

    class Refused(torch.nn.Module):
        def forward(self, x):
            return torch.asinh(torch.acosh(torch.relu(x) + 1.0) * 2.0)

    example = (torch.randn(2, 8),)
    errors = []
    for cls in (CoreMLPartitioner, PlannedCoreMLPartitioner):
        part = cls(compile_specs=specs("iOS18"), lower_full_graph=True)
        with pytest.raises(NotImplementedError, match="lower_full_graph=True") as raised:
            to_edge_transform_and_lower(torch.export.export(Refused(), example, strict=False), partitioner=[part])
        errors.append(str(raised.value))
    assert errors[0] == errors[1]
    assert "asinh" in errors[0]


def test_the_random_programs_tell_the_two_versions_apart():
    """With take-over off, executorch 1.4 and 1.5 tag some of these programs' placeholders
    differently (1.4 counts a buffer as mutated only if its writer reads the placeholder directly),
    so the comparisons above exercise the reproduction of the installed version's difference."""
    differ = 0
    for seed in (0, 2, 6):
        model = RandomNet(seed).eval().requires_grad_(False)
        program = to_edge(torch.export.export(model, RandomNet.example(), strict=False)).exported_program()
        doc = json.dumps(export_graph(program, partitioner_for("iOS18", (False, True)), digests=False))
        old, new = (json.loads(_native.check(doc, None, stock=True, executorch=v))["node_tags"] for v in ("1.4.0", "1.5.1"))
        differ += first_tag_difference(old, new, list(old)) is not None
    assert differ == 3

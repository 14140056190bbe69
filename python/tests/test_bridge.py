"""The bridge's pieces on a real edge program, without lowering: export, plan, apply."""

from __future__ import annotations

import json
import re
import warnings

import pytest
import torch
from conftest import specs

from executorch.backends.apple.coreml.partition import CoreMLPartitioner
from executorch.exir import to_edge
from partition_planner import PlanMismatch, _native, apply_plan, check, export_graph, manifest, plan
from partition_planner.testing import SliceCache, WholeCache, seed_steps


def stock_tagged(skip_ops: list[str]):
    """The seed model's edge program as the stock partitioner tags it (take-over on, iOS18), with
    ``skip_ops`` kept off Core ML; and that partitioner."""
    model = SliceCache().eval().requires_grad_(False)
    program = to_edge(torch.export.export(model, seed_steps()[0])).exported_program()
    part = CoreMLPartitioner(compile_specs=specs("iOS18"), take_over_mutable_buffer=True, skip_ops_for_coreml_delegation=skip_ops)
    return part.partition(program).tagged_exported_program, part


@pytest.fixture
def tagged():
    """The seed model tagged by stock with ``aten.mul.tensor`` kept on CPU."""
    return stock_tagged(["aten.mul.tensor"])


def test_export_records_support_from_the_backend_tags_and_signature(tagged):
    program, part = tagged
    doc = export_graph(program, part, model="seed")
    assert doc["schema"] == "partition-planner/graph@1"
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert nodes["aten_mul_tensor"]["target"] == "aten.mul.Tensor"
    # skip_ops_for_coreml_delegation reaches `supported` through the backend's own check.
    assert nodes["aten_mul_tensor"]["supported"] is False
    assert nodes["aten_slice_scatter_default"]["supported"] is True
    assert nodes["aten_slice_scatter_default"]["args"][0] == {"node": "b_cache"}
    assert nodes["b_cache"]["meta"]["shape"] == [1, 16, 8]
    assert nodes["b_cache"]["meta"]["digest"].startswith("sha256:")
    assert "supported" not in nodes["b_cache"]
    assert doc["graph_signature"]["buffers_to_mutate"] == {"aten_slice_scatter_default_1": "cache"}
    assert doc["options"]["minimum_deployment_target"] == "iOS18"
    assert doc["options"]["take_over_mutable_buffer"] is True
    assert doc["producer"]["versions"]["executorch"]
    # The importer accepts it, and the checker sees what the stock tagging does: the buffer is a
    # state of the writer's partition while `mul`, a reader of its old value, runs on CPU.
    found = check(doc)
    assert not found["ok"]
    broken = [f for f in found["findings"] if f["kind"] == "violation"]
    assert [f["rule"] for f in broken] == ["STATE_WHOLE"]
    assert broken[0]["nodes"] == ["aten_mul_tensor"]


class _SameOpsOtherArguments(torch.nn.Module):
    """The same targets asked with arguments the backend's answer depends on: add and sub with and
    without alpha, argmax over a dim and over the flattened input."""

    def forward(self, x, y):
        a = torch.add(x, y) + torch.add(x, y, alpha=2.0) + torch.sub(x, y) + torch.sub(x, y, alpha=0.5)
        return a + torch.argmax(x, dim=1, keepdim=True).to(x.dtype) + torch.argmax(x).to(x.dtype)


def test_support_is_asked_per_op_and_literal_arguments_not_per_op():
    example = (torch.randn(2, 8), torch.randn(2, 8))
    program = to_edge(torch.export.export(_SameOpsOtherArguments(), example)).exported_program()
    part = CoreMLPartitioner(compile_specs=specs("iOS18"))
    doc = export_graph(program, part, digests=False)

    def answers(target):
        return sorted(n["supported"] for n in doc["nodes"] if n["target"] == target)

    assert answers("aten.add.Tensor") == [False, True, True, True, True, True, True]  # one has alpha
    assert answers("aten.sub.Tensor") == [False, True]
    assert answers("aten.argmax.default") == [False, True]


def test_export_text_is_the_documents_compact_json(tagged):
    from partition_planner.export import export_graph_text

    program, part = tagged
    text = export_graph_text(program, part, model="seed")
    assert json.loads(text) == export_graph(program, part, model="seed")
    assert ", " not in text.split('"nodes"')[1].split('"graph_signature"')[0]  # compact: no spaces


def test_a_value_of_unknown_size_is_warned_of_as_the_cli_does(tagged):
    from partition_planner.partitioner import _Planned

    program, part = tagged
    doc = export_graph(program, part, model="seed")
    sized = next(n for n in doc["nodes"] if (n.get("meta") or {}).get("dtype"))
    sized["meta"]["dtype"] = "float128"
    said = f'node {json.dumps(sized["name"])}: dtype "float128" is not one the planner knows; its size counts as unknown'
    with pytest.warns(UserWarning, match=re.escape(said)):
        _Planned.of(json.dumps(doc), None)
    sized["meta"]["dtype"] = "float32"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _Planned.of(json.dumps(doc), None)


def test_every_torch_dtype_is_sized_as_torch_sizes_it():
    """A constant of each dtype torch has weighs, in its partition, what ``Tensor.nbytes`` says."""
    doc = export_graph(*stock_tagged([]), model="seed")
    constant = next(n for n in doc["nodes"] if n["name"] == "_lifted_tensor_constant1")
    assert constant["meta"]["shape"] == [], "a scalar: its bytes are its dtype's itemsize"
    dtypes = {d for d in vars(torch).values() if isinstance(d, torch.dtype)}
    for dtype in sorted(dtypes, key=str):
        constant["meta"]["dtype"] = str(dtype).removeprefix("torch.")
        (partition,) = plan(doc)["partitions"]
        assert (partition["weight_bytes"], partition["unsized_weights"]) == (dtype.itemsize, 0), dtype


def test_apply_plan_sets_and_clears_every_tag(tagged):
    program, part = tagged
    p = plan(export_graph(program, part))
    # mul is skipped, so no state; the buffer passes through the delegates or its chain runs on CPU.
    assert p["buffers"][0]["strategy"] in ("cpu", "io") and p["buffers"][0]["rule"] == "SUPPORTED"
    apply_plan(program, p)
    for node in program.graph.nodes:
        assert node.meta.get("delegation_tag") == p["node_tags"][node.name]
    assert program.graph.find_nodes(op="placeholder")[0].meta.get("delegation_tag") is None


def test_a_plan_for_another_graph_is_refused_before_anything_changes(tagged):
    program, part = tagged
    p = plan(export_graph(program, part))
    before = {n.name: n.meta.get("delegation_tag") for n in program.graph.nodes}
    wrong = dict(p, node_tags={**p["node_tags"], "ghost": "tag0"})
    with pytest.raises(PlanMismatch, match="ghost"):
        apply_plan(program, wrong)
    partial = dict(p, node_tags={k: v for k, v in p["node_tags"].items() if k != "b_cache"})
    with pytest.raises(PlanMismatch, match="b_cache"):
        apply_plan(program, partial)
    with pytest.raises(PlanMismatch, match="schema"):
        apply_plan(program, {"node_tags": {}})
    assert before == {n.name: n.meta.get("delegation_tag") for n in program.graph.nodes}


def test_native_errors_are_value_errors_naming_the_place():
    with pytest.raises(ValueError, match="line 1, column"):
        _native.plan('{"schema": "partition-planner/graph@1", "nodes": [')
    with pytest.raises(ValueError, match="unsupported schema"):
        _native.check(json.dumps({"schema": "partition-planner/graph@9"}))
    with pytest.raises(ValueError, match="invalid overrides"):
        _native.plan("{}", '{"take_over": 1}')


def test_schema_strings_come_from_the_native_module_and_match_its_documents(tagged):
    import partition_planner as pp

    program, part = tagged
    doc = export_graph(program, part)
    assert doc["schema"] == pp.BRIDGE_SCHEMA == _native.GRAPH_SCHEMA
    assert plan(doc)["schema"] == pp.PLAN_SCHEMA
    assert check(doc)["schema"] == pp.CHECK_SCHEMA
    assert manifest(doc)["schema"] == pp.MANIFEST_SCHEMA
    assert pp.WHATIF_SCHEMA.startswith("partition-planner/whatif@")


def test_overrides_replace_the_documents_options(tagged):
    program, part = tagged
    doc = export_graph(program, part)
    assert plan(doc)["options"]["take_over_mutable_buffer"] is True
    p = plan(doc, {"options": {"take_over_mutable_buffer": False, "minimum_deployment_target": "iOS17"}, "strategies": ["io"]})
    assert p["options"]["take_over_mutable_buffer"] is False
    assert p["options"]["minimum_deployment_target"] == "iOS17"
    assert p["buffers"][0]["strategy"] == "io"
    with pytest.raises(ValueError, match="unknown field `take_over_mutable_buffer`"):
        plan(doc, {"take_over_mutable_buffer": False})


def _exported(model):
    program = to_edge(torch.export.export(model, seed_steps()[0])).exported_program()
    part = CoreMLPartitioner(compile_specs=specs("iOS18"), take_over_mutable_buffer=True)
    return export_graph(part.partition(program).tagged_exported_program, part)


def test_content_keys_are_stable_across_exports_and_follow_the_weights():
    torch.manual_seed(0)
    model = WholeCache().eval().requires_grad_(False)
    first, second = manifest(_exported(model)), manifest(_exported(model))
    assert first["schema"] == "partition-planner/manifest@1"
    assert first["entries"] and [e["key"] for e in first["entries"]] == [e["key"] for e in second["entries"]]
    # The compiled model embeds the buffer's initial value: new content, new key.
    with torch.no_grad():
        for b in model.buffers():
            b.add_(1.0)
    changed = manifest(_exported(model))
    assert [e["key"] for e in changed["entries"]] != [e["key"] for e in first["entries"]]

"""Pictures from Python: ``partition_planner.render`` on a document, and
``PlannedCoreMLPartitioner.render`` after a real lowering. The page's behaviour in a browser is
tests/browser's (scripts/test-pictures)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import specs

import partition_planner
from partition_planner import PlannedCoreMLPartitioner
from partition_planner.testing import SliceCache, seed_steps

DATA = Path(__file__).resolve().parents[2] / "data" / "executorch-1.5.1"


def test_render_writes_a_page_dot_and_model_explorer_overlays(tmp_path):
    graph = json.loads((DATA / "qwen3_5_0_8b_takeover_on_ios18.json").read_text())
    plan = partition_planner.plan(graph)
    page = tmp_path / "map.html"
    partition_planner.render(graph, None, page)
    html = page.read_text()
    # The plan given back draws the same page.
    partition_planner.render(graph, plan, tmp_path / "again.html")
    assert (tmp_path / "again.html").read_text() == html
    assert len(re.findall(r' data-partition="', html)) == len(plan["partitions"])
    assert len(re.findall(r' data-buffer="', html)) == len(plan["buffers"])
    partition_planner.render(graph, None, tmp_path / "map.dot", format="dot")
    assert (tmp_path / "map.dot").read_text().startswith("digraph partition_map {")
    partition_planner.render(graph, plan, tmp_path / "overlays", format="model-explorer")
    overlay = json.loads((tmp_path / "overlays" / "partition.json").read_text())
    assert set(overlay["results"]) == {n["name"] for n in graph["nodes"]}
    assert {p.name for p in (tmp_path / "overlays").iterdir()} == {"partition.json", "strategy.json", "violation.json"}
    # Overrides reach the plan drawn.
    partition_planner.render(graph, None, page, overrides={"options": {"take_over_mutable_buffer": False}})
    assert re.search(r'id="plan-summary">[^<]* 0 states,', page.read_text())
    with pytest.raises(ValueError, match="unknown picture format"):
        partition_planner.render(graph, None, page, format="png")
    other = json.loads((DATA / "llama3_2_1b_takeover_on_ios18.json").read_text())
    with pytest.raises(ValueError, match="made for another graph"):
        partition_planner.render(other, plan, page)


def test_the_partitioner_renders_its_last_plan(lowered, tmp_path):
    part = PlannedCoreMLPartitioner(compile_specs=specs("iOS18"), take_over_mutable_buffer=True, log_explanations=False)
    with pytest.raises(RuntimeError, match="needs a plan"):
        part.render(tmp_path / "none.html")
    lowered(SliceCache(), part, seed_steps()[0])
    part.render(tmp_path / "map.html")
    html = (tmp_path / "map.html").read_text()
    tags = {p["tag"] for p in part.last_plan["partitions"]}
    assert set(re.findall(r' data-partition="([^"]+)"', html)) == tags
    assert 'data-buffer="cache" data-strategy="state"' in html

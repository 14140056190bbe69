"""The HTML partition map in a real browser (headless Chromium through chromedriver): no console
errors, the DOM contract (docs/pictures.md), and scripted clicks that mark what they should.
Run by scripts/test-pictures, which installs Chromium and selenium when missing; screenshots are
saved under target/pictures/.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("PARTITION_PLANNER_BIN", ROOT / "target/debug/partition-planner"))
OUT = ROOT / "target/pictures"
DATA = ROOT / "data/executorch-1.5.1"


def run(*args: str) -> str:
    return subprocess.run([str(BINARY), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1600,1200"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
    yield driver
    driver.quit()


def open_map(browser, name: str, graph: Path, *flags: str) -> dict:
    """Renders `graph` as `name`.html, opens it, and returns the page's own data."""
    OUT.mkdir(parents=True, exist_ok=True)
    page = OUT / f"{name}.html"
    run("render", str(graph), "-o", str(page), *flags)
    browser.get(page.as_uri())
    browser.get_log("browser")  # what loading logged is checked by the caller through errors()
    return json.loads(browser.find_element(By.ID, "map-data").get_attribute("textContent"))


def errors(browser) -> list:
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def plan_of(graph: Path, *flags: str) -> dict:
    return json.loads(run("plan", str(graph), "--format", "json", *flags))


def check_contract(browser, data: dict, plan: dict) -> None:
    partitions = browser.find_elements(By.CSS_SELECTOR, "[data-partition]")
    assert len(partitions) == len(plan["partitions"])
    assert {p.get_attribute("data-partition") for p in partitions} == {p["tag"] for p in plan["partitions"]}
    buffers = browser.find_elements(By.CSS_SELECTOR, "[data-buffer]")
    assert {(b.get_attribute("data-buffer"), b.get_attribute("data-strategy")) for b in buffers} == {
        (b["buffer"], b["strategy"]) for b in plan["buffers"]
    }
    findings = browser.find_elements(By.CSS_SELECTOR, "[data-rule]")
    assert len(findings) == len(data["findings"])
    assert [f.get_attribute("data-rule") for f in findings] == [f["rule"] for f in data["findings"]]


def click_finding(browser, data: dict, rule: str, side: str) -> list:
    """Clicks the first `rule` finding on `side`; returns the names of the nodes it should mark."""
    index = next(i for i, f in enumerate(data["findings"]) if f["rule"] == rule and f["side"] == side)
    browser.find_element(By.CSS_SELECTOR, f'li.finding[data-index="{index}"]').click()
    return [data["nodes"][n][0] for n in data["findings"][index]["marks"]]


def marked(browser, cls: str) -> list:
    return [e.get_attribute("data-node") for e in browser.find_elements(By.CSS_SELECTOR, f"#panel [data-node].{cls}")]


def marked_boxes(browser, side: str, cls: str) -> set:
    return {int(e.get_attribute("data-box")) for e in browser.find_elements(By.CSS_SELECTOR, f"#{side}-view .box.{cls}")}


def test_a_cycle_in_the_stock_proposal_is_marked_along_its_path(browser):
    graph = DATA / "seed_slice_writer_untagged.json"
    data = open_map(browser, "seed_slice_writer_untagged", graph)
    assert errors(browser) == []
    check_contract(browser, data, plan_of(graph))
    path = click_finding(browser, data, "ACYCLIC", "stock")
    assert len(path) == 3
    assert marked(browser, "on-path") == path
    stock = next(v for v in data["views"] if v["side"] == "stock")
    names = [n[0] for n in data["nodes"]]
    expected = {stock["box_of"][names.index(p)] for p in path} - {-1}
    assert marked_boxes(browser, "stock", "on-path") == expected
    assert browser.find_element(By.CSS_SELECTOR, "#panel h3").text.startswith("ACYCLIC")
    browser.save_screenshot(str(OUT / "seed_slice_writer_untagged.png"))
    assert errors(browser) == []


def test_an_llm_with_refused_states_and_cycles_in_its_stock_proposal(browser):
    # Qwen3.5's stock tags with every buffer writer untagged (data/README.md): the seed report's
    # attempted fix at LLM size. Its stock proposal has cycles; the plan refuses the states whose
    # chain holds the gated delta rule, which Core ML does not support.
    graph = DATA / "qwen3_5_0_8b_writers_untagged_ios18.json"
    plan = plan_of(graph)
    data = open_map(browser, "qwen3_5_writers_untagged", graph)
    assert errors(browser) == []
    check_contract(browser, data, plan)
    # A cycle of the stock proposal: its path's nodes, and the boxes holding them, are marked.
    path = click_finding(browser, data, "ACYCLIC", "stock")
    assert len(path) >= 3
    assert marked(browser, "on-path") == path
    stock = next(v for v in data["views"] if v["side"] == "stock")
    names = {n[0]: i for i, n in enumerate(data["nodes"])}
    assert marked_boxes(browser, "stock", "on-path") == {stock["box_of"][names[p]] for p in path} - {-1}
    assert browser.find_element(By.CSS_SELECTOR, "#panel h3").text.startswith("ACYCLIC")
    browser.save_screenshot(str(OUT / "qwen3_5_writers_untagged-cycle.png"))
    # A refused state's buffer: its chain is marked, in the panel and on the boxes.
    refused = [b for b in plan["buffers"] if b["strategy"] != "state"]
    assert refused, "the test graph has states the plan refused"
    row = browser.find_element(By.CSS_SELECTOR, f'tr[data-buffer="{refused[0]["buffer"]}"]')
    row.click()
    buffer = data["buffers"][int(row.get_attribute("data-index"))]
    assert marked(browser, "chain") == [data["nodes"][n][0] for n in buffer["chain"]]
    assert marked_boxes(browser, "plan", "chain")
    assert "cannot be a Core ML state" in browser.find_element(By.ID, "panel").text
    # A box: its nodes in the panel.
    box = browser.find_element(By.CSS_SELECTOR, "#plan-view .box[data-partition]")
    box.click()
    plan_view = next(v for v in data["views"] if v["side"] == "plan")
    rows = browser.find_elements(By.CSS_SELECTOR, "#panel tr.node")
    assert len(rows) == min(500, len(plan_view["boxes"][int(box.get_attribute("data-box"))]))
    # Finding a node by name marks the boxes holding it on both sides.
    writer = next(b for b in plan["buffers"] if b["strategy"] == "state")["writer"]
    field = browser.find_element(By.ID, "find-node")
    field.clear()
    field.send_keys(writer)
    browser.find_element(By.CSS_SELECTOR, "#find button").click()
    assert marked(browser, "on-path") == [writer]
    for side in ("plan", "stock"):
        view = next(v for v in data["views"] if v["side"] == side)
        box = view["box_of"][names[writer]]
        assert marked_boxes(browser, side, "on-path") == ({box} if box >= 0 else set())
    # Folded repeats unfold.
    run_ = browser.find_element(By.CSS_SELECTOR, "#plan-view .run.folded")
    run_.find_element(By.CSS_SELECTOR, ".unfold").click()
    assert "folded" not in run_.get_attribute("class")
    browser.save_screenshot(str(OUT / "qwen3_5_writers_untagged.png"))
    assert errors(browser) == []


def test_a_generated_graph_of_100000_nodes(browser):
    OUT.mkdir(parents=True, exist_ok=True)
    graph = OUT / "generated-100000.json"
    if not graph.exists():
        run("generate", "--nodes", "100000", "--seed", "12", "-o", str(graph))
    plan = plan_of(graph)
    data = open_map(browser, "generated-100000", graph)
    assert len(data["nodes"]) == 100_000
    assert errors(browser) == []
    check_contract(browser, data, plan)
    rule = next(f for f in data["findings"] if f["marks"])
    nodes = click_finding(browser, data, rule["rule"], rule["side"])
    assert marked(browser, "on-path") == nodes[:500]
    assert marked_boxes(browser, rule["side"], "on-path")
    browser.save_screenshot(str(OUT / "generated-100000.png"))
    assert errors(browser) == []

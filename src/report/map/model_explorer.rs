//! Model Explorer's node data (google-ai-edge/model-explorer, `node_data_builder.py` and the UI's
//! `NodeDataProviderGraphData`): per node a value and a colour, keyed by the node id that Model
//! Explorer's PyTorch ExportedProgram adapter shows, which is the FX node name. A file holds one
//! value per node, so the map gives three: the partition each node is in, the strategy of the
//! mutable-buffer chain it belongs to, and the rules the checker found it breaking. Each is written
//! without a graph id (`{"results": …}`), which Model Explorer applies to the graph on screen.

use super::{BoxKind, Map, MapFinding};
use crate::decision::Strategy;
use crate::graph::OpKind;
use crate::rules::FindingKind;
use serde_json::{Map as JsonMap, Value, json};
use std::collections::BTreeMap;

/// One node-data file: its name (`partition`, `strategy`, `violation`) and content.
pub struct ModelExplorerOverlay {
    pub name: &'static str,
    pub data: Value,
}

/// Colours for delegate partitions, in turn; CPU and inputs are greys.
const PALETTE: [&str; 10] = [
    "#90cdf4", "#9ae6b4", "#fbd38d", "#d6bcfa", "#feb2b2", "#81e6d9", "#f6e05e", "#a3bffa",
    "#fbb6ce", "#c6f6d5",
];

pub fn model_explorer(map: &Map<'_>) -> Vec<ModelExplorerOverlay> {
    vec![
        ModelExplorerOverlay {
            name: "partition",
            data: overlay(partition_results(map)),
        },
        ModelExplorerOverlay {
            name: "strategy",
            data: overlay(strategy_results(map)),
        },
        ModelExplorerOverlay {
            name: "violation",
            data: overlay(violation_results(map)),
        },
    ]
}

/// A `GraphNodeData` with string values: group nodes summarise them by label.
fn overlay(results: JsonMap<String, Value>) -> Value {
    json!({
        "results": results,
        "showExpandedSummaryOnGroupNode": true,
        "showLabelCountColumnsInChildrenStatsTable": true,
    })
}

fn result(value: &str, color: &str) -> Value {
    json!({"value": value, "bgColor": color})
}

/// Every node: its plan partition, `cpu`, or `input` for an untagged placeholder.
fn partition_results(map: &Map<'_>) -> JsonMap<String, Value> {
    let graph = map.graph;
    // Each box's colour: delegates take the palette in turn.
    let mut delegates = 0;
    let colors: Vec<&str> = (map.plan.boxes.iter())
        .map(|b| match b.kind {
            BoxKind::Delegate(_) => {
                delegates += 1;
                PALETTE[(delegates - 1) % PALETTE.len()]
            }
            BoxKind::Cpu => "#e2e8f0",
        })
        .collect();
    let mut results = JsonMap::new();
    for id in graph.ids() {
        let (value, color) = match map.plan.box_of[id.index()] {
            Some(b) => (map.plan.boxes[b as usize].tag(), colors[b as usize]),
            None if graph.op(id) == OpKind::Output => ("output", "#ffffff"),
            None => ("input", "#f7fafc"),
        };
        results.insert(graph.name(id).to_string(), result(value, color));
    }
    results
}

/// The nodes of each mutable buffer's chain (placeholder to writer): the chain's strategy.
fn strategy_results(map: &Map<'_>) -> JsonMap<String, Value> {
    let mut results = JsonMap::new();
    for b in &map.buffers {
        let (value, color) = match b.strategy {
            Strategy::State => ("state", "#68d391"),
            Strategy::Cpu => ("cpu", "#f6ad55"),
            Strategy::Io => ("io", "#63b3ed"),
        };
        for &n in &b.chain {
            results.insert(map.graph.name(n).to_string(), result(value, color));
        }
    }
    results
}

/// The nodes findings mark: their rules, with the side (`RULE (stock)`); violations red, costs
/// amber, decisions green.
fn violation_results(map: &Map<'_>) -> JsonMap<String, Value> {
    let mut by_node: BTreeMap<u32, Vec<&MapFinding>> = BTreeMap::new();
    for f in &map.findings {
        for n in &f.marks {
            by_node.entry(n.0).or_default().push(f);
        }
    }
    let mut results = JsonMap::new();
    for (n, findings) in by_node {
        // Each rule once per side, in the order the findings come.
        let mut labels: Vec<String> = Vec::new();
        for f in &findings {
            let label = format!("{} ({})", f.explained.rule, f.side.as_str());
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
        let worst = findings
            .iter()
            .map(|f| match f.explained.kind {
                FindingKind::Violation => 2,
                FindingKind::Cost => 1,
                FindingKind::Decision => 0,
            })
            .max()
            .unwrap_or(0);
        let color = ["#c6f6d5", "#fbd38d", "#feb2b2"][worst];
        let name = map.graph.name(crate::graph::NodeId(n)).to_string();
        results.insert(name, result(&labels.join(", "), color));
    }
    results
}

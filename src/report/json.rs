//! `partition-planner/plan@1` and `partition-planner/check@1` documents (docs/bridge-json.md).

use crate::analyse::Analysis;
use crate::graph::{Graph, NodeId};
use crate::measure::Measure;
use crate::plan::Plan;
use crate::rules::Finding;
use crate::tagging::Tagging;
use serde_json::{Map, Value, json};

pub const PLAN_SCHEMA: &str = "partition-planner/plan@1";
pub const CHECK_SCHEMA: &str = "partition-planner/check@1";

fn names(graph: &Graph, ids: &[NodeId]) -> Vec<String> {
    ids.iter().map(|&n| graph.name(n).to_string()).collect()
}

fn node_tags(graph: &Graph, tagging: &Tagging) -> Value {
    let mut tags = Map::with_capacity(graph.len());
    for n in graph.ids() {
        tags.insert(graph.name(n).to_string(), json!(tagging.tag(n)));
    }
    Value::Object(tags)
}

fn partitions(graph: &Graph, measure: &Measure) -> Value {
    measure
        .partitions
        .iter()
        .map(|p| {
            json!({
                "tag": p.tag,
                "nodes": p.nodes,
                "inputs": names(graph, &p.inputs),
                "outputs": names(graph, &p.outputs),
                "states": p.states,
                "boundary_bytes": p.boundary_bytes,
                "unsized_boundary_values": p.unsized_boundary_values,
            })
        })
        .collect()
}

fn findings(scope: &str, list: &[Finding]) -> impl Iterator<Item = Value> {
    list.iter().map(move |f| {
        let mut v = serde_json::to_value(f).unwrap_or(Value::Null);
        if let Value::Object(o) = &mut v {
            o.insert("scope".into(), json!(scope));
        }
        v
    })
}

pub fn plan_json(graph: &Graph, analysis: &Analysis, plan: &Plan) -> Value {
    let buffers: Vec<Value> = plan
        .buffers
        .iter()
        .zip(&analysis.buffers)
        .map(|(b, chain)| {
            json!({
                "buffer": b.buffer,
                "placeholder": graph.name(b.placeholder),
                "writer": graph.name(b.writer),
                "chain": names(graph, &chain.chain),
                "kind": chain.kind,
                "requested": b.requested.to_string(),
                "strategy": b.strategy,
                "partition": b.partition,
                "rule": b.rule,
                "reason": b.reason,
            })
        })
        .collect();
    let explanations: Vec<Value> = findings("plan", &plan.decisions)
        .chain(findings("plan", &plan.findings))
        .chain(findings("stock", &plan.stock_findings))
        .collect();
    let m = &plan.measure;
    json!({
        "schema": PLAN_SCHEMA,
        "options": plan.options,
        "node_tags": node_tags(graph, &plan.tagging),
        "partitions": partitions(graph, m),
        "buffers": buffers,
        "explanations": explanations,
        "stats": {
            "nodes": graph.len(),
            "nodes_delegated": m.delegated_nodes,
            "partitions": m.partitions.len(),
            "stock_partitions": plan.stock_partitions,
            "states": m.states(),
            "boundary_bytes": m.boundary_bytes(),
            "constant_copies": m.constant_copies.iter().filter(|c| graph.role(c.placeholder).is_constant_data()).map(|c| c.copies()).sum::<usize>(),
            "constant_copy_bytes": m.constant_copy_bytes(),
            "violations": plan.violations().count(),
        },
    })
}

pub fn check_json(graph: &Graph, tagging: &Tagging, measure: &Measure, found: &[Finding]) -> Value {
    json!({
        "schema": CHECK_SCHEMA,
        "ok": !found.iter().any(Finding::is_violation),
        "violations": found.iter().filter(|f| f.is_violation()).count(),
        "findings": findings("checked", found).collect::<Vec<_>>(),
        "partitions": partitions(graph, measure),
        "node_tags": node_tags(graph, tagging),
    })
}

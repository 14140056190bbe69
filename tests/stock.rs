//! The stock proposal reproduced in Rust against the real one: every document in data/ but the edited
//! variants carries the tags executorch's `CoreMLPartitioner` wrote (1.4.0 and 1.5.1), and the reproduction must match
//! them node for node, up to renaming of tags.

use partition_planner::graph::Graph;
use partition_planner::stock::{ExecutorchVersion, Source, reproduce};
use partition_planner::tagging::Tagging;
use partition_planner::{PlanRequest, analyse, parse_graph, plan, verify};
use std::collections::HashMap;
use std::path::PathBuf;

mod common;

/// The first node where `a` and `b` disagree once tags are renamed, with both tags.
pub fn first_difference(graph: &Graph, a: &Tagging, b: &Tagging) -> Option<String> {
    let mut a_to_b: HashMap<u32, u32> = HashMap::new();
    let mut b_to_a: HashMap<u32, u32> = HashMap::new();
    for n in graph.ids() {
        let same = match (a.partition(n), b.partition(n)) {
            (None, None) => true,
            (Some(x), Some(y)) => {
                *a_to_b.entry(x).or_insert(y) == y && *b_to_a.entry(y).or_insert(x) == x
            }
            _ => false,
        };
        if !same {
            return Some(format!(
                "{}: {:?} against {:?}",
                graph.name(n),
                a.tag(n),
                b.tag(n)
            ));
        }
    }
    None
}

/// Every document in data/ the real stock pass tagged, with its executorch version.
fn stock_tagged_documents() -> Vec<(String, PathBuf, String)> {
    let mut out = Vec::new();
    for (version, path) in common::data::all_documents() {
        let text = std::fs::read_to_string(&path).expect("readable");
        // A variant's tags were edited after the stock pass (data/README.md): not stock's.
        let doc: serde_json::Value = serde_json::from_str(&text).expect("json");
        if doc["producer"].get("variant").is_none() {
            out.push((version.to_string(), path, text));
        }
    }
    out
}

/// The same document with every tag removed, as the drop-in exports it before anything is tagged.
fn without_tags(text: &str) -> String {
    let mut doc: serde_json::Value = serde_json::from_str(text).expect("json");
    for n in doc["nodes"].as_array_mut().expect("nodes") {
        n["delegation_tag"] = serde_json::Value::Null;
    }
    doc.to_string()
}

#[test]
fn an_untagged_document_plans_as_its_stock_tagged_twin() {
    for (_, path, text) in stock_tagged_documents() {
        for take_over in [true, false] {
            let plans: Vec<_> = [text.clone(), without_tags(&text)]
                .iter()
                .map(|t| {
                    let graph = parse_graph(t).expect("imports");
                    let analysis = analyse(&graph);
                    let mut request = PlanRequest::new(&graph);
                    request.options.take_over_mutable_buffer = take_over;
                    let plan = plan(&graph, &analysis, &request).expect("plans");
                    let stock: Vec<_> = verify(&graph, &plan, &request)
                        .stock
                        .iter()
                        .map(|f| (f.rule, f.nodes.clone()))
                        .collect();
                    (graph, plan, stock)
                })
                .collect();
            let [(g, tagged, tagged_stock), (_, untagged, untagged_stock)] = &plans[..] else {
                unreachable!()
            };
            let what = format!("{} take-over {take_over}", path.display());
            assert_eq!(
                first_difference(g, &tagged.draft.tagging, &untagged.draft.tagging),
                None,
                "{what}"
            );
            assert_eq!(tagged.draft.buffers, untagged.draft.buffers, "{what}");
            assert_eq!(
                tagged.stock.tagging.partition_count(),
                untagged.stock.tagging.partition_count(),
                "{what}"
            );
            assert_eq!(tagged.stock.source, Source::Document, "{what}");
            assert!(
                matches!(untagged.stock.source, Source::Reproduced(_)),
                "{what}"
            );
            if take_over == g.options.take_over_mutable_buffer {
                // The document's tags were made with its own options: the same findings.
                assert_eq!(tagged_stock, untagged_stock, "{what}");
            }
        }
    }
}

#[test]
fn the_reproduction_matches_the_real_stock_tags_on_every_document_in_data() {
    let mut compared = 0;
    let mut failures = Vec::new();
    for (version, path, text) in stock_tagged_documents() {
        let graph = parse_graph(&text).expect("imports");
        let analysis = analyse(&graph);
        let parsed = ExecutorchVersion::parse(&version).expect("known");
        let supported = graph.supported();
        let reproduced = reproduce(
            &graph,
            analysis.index.as_ref(),
            parsed,
            &graph.options,
            &supported,
        );
        let real = Tagging::carried(&graph);
        if let Some(d) = first_difference(&graph, &reproduced, &real) {
            failures.push(format!("{}: first difference at {d}", path.display()));
        }
        compared += 1;
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(compared, 26);
}

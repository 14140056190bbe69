//! The framed reader, on one thread or two, must give exactly what serde alone gives: the same
//! graph, or the same error. Since the second thread starts at the first guess at or after a given offset, starting
//! the search just before each `"name"` key in the text tries every guess there is.

use super::*;
use crate::graph::{Graph, NodeId};
use crate::import::{ImportError, finish};
use crate::synthetic::BridgeBuilder;
use serde_json::{Value, json};

fn one_thread(text: &str) -> Result<Graph, ImportError> {
    crate::import::parse_graph_by_serde(text)
}

/// What `parse_graph` does with the second thread's search starting at `from`, and the index of
/// the first node the second thread read when its nodes were taken.
fn two_threads(text: &str, from: usize) -> (Result<Graph, ImportError>, Option<usize>) {
    match read_split_after(text, from) {
        Some((document, second_from)) => (finish(document), second_from),
        None => (one_thread(text), None),
    }
}

fn assert_same(one: &Result<Graph, ImportError>, two: &Result<Graph, ImportError>, from: usize) {
    match (one, two) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.nodes, b.nodes, "from {from}");
            assert_eq!(a.ops, b.ops, "from {from}");
            assert_eq!(a.value_bytes, b.value_bytes, "from {from}");
            let sizes: Vec<Option<u64>> = a.nodes.iter().map(|n| n.meta.bytes()).collect();
            assert_eq!(a.value_bytes, sizes, "from {from}");
            assert_eq!(a.roles, b.roles, "from {from}");
            assert_eq!(a.signature, b.signature, "from {from}");
            assert_eq!(a.order, b.order, "from {from}");
            assert_eq!(a.output, b.output, "from {from}");
            assert_eq!(a.options, b.options, "from {from}");
            assert_eq!(a.producer, b.producer, "from {from}");
            assert_eq!(a.stock_partitions, b.stock_partitions, "from {from}");
            for id in a.ids() {
                assert_eq!(b.find(a.name(id)), Some(id), "from {from}");
            }
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "from {from}"),
        _ => panic!("from {from}: one thread {one:?}, two threads {two:?}"),
    }
}

/// Checks every guess in `text`; returns how many times the second thread's nodes were taken.
fn check_every_split(text: &str) -> usize {
    check_splits(text, 1)
}

/// What `parse_graph` does with a document too small for a second thread: the framed reader, and
/// serde alone when it declines.
fn framed(text: &str) -> Result<Graph, ImportError> {
    match read_split_at(text, None) {
        Some((document, _)) => finish(document),
        None => one_thread(text),
    }
}

/// Checks the framed reader on one thread, and every `step`-th guess in `text`.
fn check_splits(text: &str, step: usize) -> usize {
    let one = one_thread(text);
    assert_same(&one, &framed(text), 0);
    let mut taken = 0;
    for (key, _) in text.match_indices("\"name\"").step_by(step) {
        let (two, second_from) = two_threads(text, key.saturating_sub(1));
        assert_same(&one, &two, key);
        taken += usize::from(second_from.is_some());
    }
    taken
}

/// A chain of 24 ops over a mutated buffer, with tags, so both halves hold several nodes.
fn chain() -> BridgeBuilder {
    let mut b = BridgeBuilder::new();
    b.buffer("b_cache", "cache", &[1, 16, 8])
        .user_input("x", &[1, 8])
        .parameter("p_w", &[8, 8]);
    let mut last = "x".to_string();
    for i in 0..24 {
        let name = format!("op_{i}");
        b.op_with(
            &name,
            "aten.linear.default",
            &[&last, "p_w"],
            &[json!([1, i, -2]), json!({"k": [i]})],
            i % 7 != 3,
        )
        .meta(&[1, 8], "float32")
        .tag(
            &name,
            (i % 7 != 3).then_some(if i < 12 { "tag0" } else { "tag1" }),
        );
        last = name;
    }
    b.op(
        "scatter",
        "aten.slice_scatter.default",
        &["b_cache", &last],
        true,
    )
    .mutates("scatter", "cache")
    .output(&[&last]);
    b
}

fn edited(f: impl FnOnce(&mut Value)) -> Value {
    let mut v = chain().to_value();
    f(&mut v);
    v
}

fn node_mut<'v>(v: &'v mut Value, name: &str) -> &'v mut Value {
    v["nodes"]
        .as_array_mut()
        .and_then(|nodes| nodes.iter_mut().find(|n| n["name"] == name))
        .expect("node exists")
}

#[test]
fn a_valid_document_reads_the_same_from_every_guess_compact_or_pretty() {
    let v = chain().to_value();
    for text in [v.to_string(), serde_json::to_string_pretty(&v).unwrap()] {
        assert!(one_thread(&text).is_ok());
        assert!(check_every_split(&text) >= 20, "the guesses were taken");
    }
}

#[test]
fn generated_graphs_read_the_same_from_every_guess() {
    for seed in [3, 12] {
        let text = crate::synthetic::generate(600, seed).expect("generates");
        assert!(one_thread(&text).is_ok());
        assert!(check_every_split(&text) > 500);
    }
}

#[test]
fn real_exports_read_the_same_on_two_threads() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/data");
    let mut checked = 0;
    for version in ["executorch-1.4.0", "executorch-1.5.1"] {
        for entry in std::fs::read_dir(format!("{data}/{version}")).expect("data/") {
            let path = entry.expect("an entry").path();
            if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).expect("readable");
                assert!(check_splits(&text, 97) > 0, "{}", path.display());
                checked += 1;
            }
        }
    }
    assert!(checked >= 6);
}

#[test]
fn errors_anywhere_are_those_of_one_thread() {
    let broken: Vec<(&str, Value)> = vec![
        (
            "duplicate across halves",
            edited(|v| node_mut(v, "op_20")["name"] = json!("op_2")),
        ),
        (
            "unknown reference",
            edited(|v| node_mut(v, "op_18")["args"][0] = json!({"node": "nowhere"})),
        ),
        (
            "forward reference",
            edited(|v| node_mut(v, "op_3")["args"][1] = json!({"node": "op_21"})),
        ),
        (
            "cycle",
            edited(|v| node_mut(v, "op_4")["args"][0] = json!({"node": "op_19"})),
        ),
        (
            "self reference",
            edited(|v| node_mut(v, "op_16")["args"][0] = json!({"node": "op_16"})),
        ),
        (
            "placeholder reading",
            edited(|v| node_mut(v, "p_w")["args"] = json!([{"node": "x"}])),
        ),
        (
            "malformed reference",
            edited(|v| node_mut(v, "op_17")["args"][1] = json!({"node": 3})),
        ),
        (
            "reference with more",
            edited(|v| node_mut(v, "op_5")["args"][1] = json!({"node": "x", "y": 1})),
        ),
        (
            "nested malformed",
            edited(|v| node_mut(v, "op_13")["args"][1] = json!({"node": [[{"a": 1}]]})),
        ),
        (
            "getitem of two",
            edited(|v| node_mut(v, "op_5")["target"] = json!("getitem")),
        ),
        (
            "getitem of two, one read later, before a getitem of two read at once",
            edited(|v| {
                node_mut(v, "op_3")["target"] = json!("getitem");
                node_mut(v, "op_3")["args"] = json!([{"node": "op_2"}, {"node": "op_21"}]);
                node_mut(v, "op_20")["target"] = json!("getitem");
            }),
        ),
        (
            "getitem of two read at once, before a getitem of two, one read later",
            edited(|v| {
                node_mut(v, "op_4")["target"] = json!("getitem");
                node_mut(v, "op_18")["target"] = json!("getitem");
                node_mut(v, "op_18")["args"] = json!([{"node": "op_17"}, {"node": "op_22"}]);
            }),
        ),
        (
            "second output",
            edited(|v| node_mut(v, "op_15")["op"] = json!("output")),
        ),
        (
            "output read",
            edited(|v| {
                let nodes = v["nodes"].as_array_mut().unwrap();
                nodes.push(
                    json!({"name": "late", "op": "call_function", "target": "aten.neg.default",
                              "args": [{"node": "output"}]}),
                );
            }),
        ),
        (
            "a duplicate, then a malformed reference",
            edited(|v| {
                node_mut(v, "op_18")["name"] = json!("op_1");
                node_mut(v, "op_20")["args"][1] = json!({"node": 3});
            }),
        ),
        (
            "a malformed reference, then a duplicate",
            edited(|v| {
                node_mut(v, "op_18")["args"][1] = json!({"node": 3});
                node_mut(v, "op_20")["name"] = json!("op_1");
            }),
        ),
        (
            "a malformed reference in a duplicate",
            edited(|v| {
                node_mut(v, "op_19")["args"][1] = json!({"node": 3});
                node_mut(v, "op_19")["name"] = json!("op_2");
            }),
        ),
        (
            "an error in each half",
            edited(|v| {
                node_mut(v, "op_3")["args"][1] = json!({"node": false});
                node_mut(v, "op_20")["name"] = json!("op_1");
            }),
        ),
        (
            "unknown field",
            edited(|v| node_mut(v, "op_19")["supportd"] = json!(true)),
        ),
        (
            "wrong type",
            edited(|v| node_mut(v, "op_14")["supported"] = json!("yes")),
        ),
        (
            "a node that looks like two",
            edited(|v| {
                node_mut(v, "op_8")["args"][2] =
                    json!(",{\"name\": \"fake\", \"op\": \"placeholder\"}");
                node_mut(v, "op_9")["meta"]["note"] = json!({"x": [", {\"name\": \"op_10\"}"]});
            }),
        ),
        (
            "escaped names",
            edited(|v| {
                node_mut(v, "op_12")["name"] = json!("op_\u{e9}12\"q");
                node_mut(v, "op_13")["args"][0] = json!({"node": "op_\u{e9}12\"q"});
            }),
        ),
        (
            "node-like text after the list",
            edited(|v| {
                v["producer"] = json!({"nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}]});
            }),
        ),
        (
            "deep arguments",
            edited(|v| {
                let mut deep = json!(1);
                for _ in 0..110 {
                    deep = json!([deep]);
                }
                node_mut(v, "op_18")["args"][2] = deep;
            }),
        ),
        (
            "deeper than serde_json allows",
            edited(|v| {
                let mut deep = json!(1);
                for _ in 0..125 {
                    deep = json!({"k": deep});
                }
                node_mut(v, "op_17")["args"][3] = deep;
            }),
        ),
        (
            "deep values skipped",
            edited(|v| {
                let mut deep = json!(1);
                for _ in 0..300 {
                    deep = json!({"k": [deep]});
                }
                node_mut(v, "op_16")["meta"]["extra"] = deep;
            }),
        ),
        (
            "deep producer",
            edited(|v| {
                let mut deep = json!(1);
                for _ in 0..126 {
                    deep = json!([deep]);
                }
                v["producer"] = deep;
            }),
        ),
        (
            "missing signature",
            edited(|v| {
                v.as_object_mut().unwrap().remove("graph_signature");
            }),
        ),
    ];
    for (what, v) in &broken {
        for text in [v.to_string(), serde_json::to_string_pretty(v).unwrap()] {
            println!("{what}");
            check_every_split(&text);
        }
    }
    // Text edits a value cannot express.
    let text = chain().to_value().to_string();
    let nodes_twice = text.replacen("\"graph_signature\"", "\"nodes\":[],\"graph_signature\"", 1);
    let trailing_comma = text.replacen("]},\"graph_signature\"", "],},\"graph_signature\"", 1);
    let garbage_after = format!("{text} x");
    let mut texts = vec![nodes_twice, trailing_comma, garbage_after];
    texts.extend((1..12).map(|k| text[..text.len() * k / 12].to_string()));
    for text in texts {
        check_every_split(&text);
    }
}

#[test]
fn the_second_thread_starts_only_at_a_node_in_the_list() {
    let text = chain().to_value().to_string();
    let key = text.find("\"name\":\"op_12\"").unwrap();
    let (graph, second_from) = two_threads(&text, key);
    let graph = graph.unwrap();
    assert_eq!(
        second_from.map(|i| graph.name(NodeId(i as u32))),
        Some("op_12")
    );
    assert_eq!(find_split(&text, text.len()), None);
    // The first node follows `[`, not a comma: never a guess.
    let first = text.find("{\"name\"").unwrap();
    assert!(find_split(&text, 0).is_some_and(|start| start > first));
}

#[test]
fn parse_graph_reads_a_large_document_on_two_threads() {
    // The second thread's 15,000 nodes are also moved into the first list on two threads.
    let text = crate::synthetic::generate(30_000, 12).expect("generates");
    assert!(text.len() > MIN_BYTES);
    let from = (text.len() as f64 * SECOND_THREAD_FROM) as usize;
    let (_, second_from) = read_split_after(&text, from).expect("reads");
    assert!(second_from.is_some_and(|i| (10_000..20_000).contains(&i)));
    assert_same(&one_thread(&text), &crate::import::parse_graph(&text), from);
}

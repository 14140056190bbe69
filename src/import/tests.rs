use super::*;
use crate::graph::{NodeId, NodeRoles, Unsized};
use crate::options::Options;
use crate::synthetic::BridgeBuilder;
use serde_json::json;

fn seed_like() -> BridgeBuilder {
    let mut b = BridgeBuilder::new();
    b.buffer("b_cache", "cache", &[1, 16, 8])
        .user_input("x", &[1, 8])
        .op("mul", "aten.mul.Tensor", &["b_cache"], true)
        .op(
            "scatter",
            "aten.slice_scatter.default",
            &["b_cache", "mul"],
            true,
        )
        .op("sum", "aten.sum.dim_IntList", &["scatter"], true)
        .op("add", "aten.add.Tensor", &["sum", "x"], true)
        .mutates("scatter", "cache")
        .output(&["add"]);
    b
}

fn edit(b: &BridgeBuilder, f: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut v = b.to_value();
    f(&mut v);
    v.to_string()
}

#[test]
fn a_valid_document_resolves_signature_and_references() {
    let g = parse_graph(&seed_like().to_json()).expect("valid");
    assert_eq!(g.len(), 7);
    let scatter = g.find("scatter").unwrap();
    assert_eq!(
        g.node(scatter).inputs.as_slice(),
        &[g.find("b_cache").unwrap(), g.find("mul").unwrap()]
    );
    let b = &g.signature.mutable_buffers[0];
    assert_eq!(
        (b.buffer.as_str(), g.name(b.placeholder), g.name(b.writer)),
        ("cache", "b_cache", "scatter")
    );
    assert!(
        g.role(b.placeholder)
            .contains(NodeRoles::BUFFER | NodeRoles::MUTABLE_BUFFER)
    );
    assert!(g.role(b.writer).contains(NodeRoles::BUFFER_WRITER));
    assert_eq!(g.options, Options::default());
    assert_eq!(g.order.len(), 7);
}

#[test]
fn supported_defaults_to_whether_the_node_is_tagged() {
    let text = edit(&seed_like(), |v| {
        let nodes = v["nodes"].as_array_mut().unwrap();
        nodes[2].as_object_mut().unwrap().remove("supported");
        nodes[3].as_object_mut().unwrap().remove("supported");
        nodes[3]["delegation_tag"] = json!("tag0");
    });
    let g = parse_graph(&text).unwrap();
    assert!(!g.node(g.find("mul").unwrap()).supported);
    assert!(g.node(g.find("scatter").unwrap()).supported);
}

#[test]
fn malformed_and_truncated_json_name_line_and_column() {
    let text = seed_like().to_json();
    let truncated = &text[..text.len() / 2];
    match parse_graph(truncated) {
        Err(ImportError::Json {
            line: 1, column, ..
        }) => assert!(column > 0),
        other => panic!("{other:?}"),
    }
    match parse_graph("{\n  \"schema\": \"partition-planner/graph@1\",\n  \"nodes\": [}\n") {
        Err(ImportError::Json {
            line: 3,
            column: 13,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unknown_field_is_an_error_not_silently_dropped() {
    let text = edit(&seed_like(), |v| v["nodes"][2]["supportd"] = json!(true));
    assert!(
        matches!(parse_graph(&text), Err(ImportError::Json { message, .. }) if message.contains("supportd"))
    );
}

#[test]
fn wrong_schema_is_reported_before_missing_fields() {
    let text = json!({"schema": "partition-planner/graph@2", "nodes": []}).to_string();
    assert!(
        matches!(parse_graph(&text), Err(ImportError::Schema { found, .. }) if found.contains("graph@2"))
    );
    let text = edit(&seed_like(), |v| v["schema"] = json!("something-else"));
    assert!(matches!(
        parse_graph(&text),
        Err(ImportError::Schema { .. })
    ));
}

#[test]
fn unknown_reference_names_both_nodes() {
    let mut b = seed_like();
    b.op("bad", "aten.neg.default", &["nowhere"], true);
    let err = parse_graph(&b.to_json()).unwrap_err();
    assert_eq!(
        err,
        ImportError::UnknownNode {
            node: "bad".into(),
            reference: "nowhere".into()
        }
    );
}

#[test]
fn duplicate_names_are_rejected() {
    let mut b = seed_like();
    b.op("mul", "aten.neg.default", &["x"], true);
    assert!(
        matches!(parse_graph(&b.to_json()), Err(ImportError::DuplicateNode { name, first: 2, second: 7 }) if name == "mul")
    );
}

#[test]
fn a_cycle_is_reported_with_its_path() {
    let text = edit(&seed_like(), |v| {
        v["nodes"][2]["args"] = json!([{"node": "b_cache"}, {"node": "sum"}])
    });
    match parse_graph(&text) {
        Err(ImportError::Cycle { path }) => {
            assert_eq!(path.first(), path.last());
            for n in ["mul", "scatter", "sum"] {
                assert!(path.iter().any(|p| p == n), "{path:?}");
            }
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn forward_references_without_a_cycle_are_ordered() {
    let text = edit(&seed_like(), |v| {
        let nodes = v["nodes"].as_array_mut().unwrap();
        let add = nodes.remove(5);
        nodes.insert(2, add);
    });
    let g = parse_graph(&text).unwrap();
    let pos: Vec<usize> = {
        let mut pos = vec![0; g.len()];
        for (i, id) in g.order.iter().enumerate() {
            pos[id.index()] = i;
        }
        pos
    };
    for id in g.ids() {
        for p in &g.node(id).inputs {
            assert!(pos[p.index()] < pos[id.index()]);
        }
    }
}

#[test]
fn signature_naming_unknown_or_wrong_nodes() {
    let text = edit(&seed_like(), |v| {
        v["graph_signature"]["user_inputs"] = json!(["x", "y"])
    });
    assert_eq!(
        parse_graph(&text).unwrap_err(),
        ImportError::SignatureUnknownNode {
            field: "user_inputs",
            name: "y".into()
        }
    );
    let text = edit(&seed_like(), |v| {
        v["graph_signature"]["inputs_to_parameters"] = json!({"mul": "w"})
    });
    assert!(matches!(
        parse_graph(&text),
        Err(ImportError::SignatureWrongNode {
            op: "call_function",
            ..
        })
    ));
    let text = edit(&seed_like(), |v| {
        v["graph_signature"]["inputs_to_parameters"] = json!({"b_cache": "w"})
    });
    assert!(matches!(
        parse_graph(&text),
        Err(ImportError::SignatureConflict { .. })
    ));
    let text = edit(&seed_like(), |v| {
        v["graph_signature"]["buffers_to_mutate"] = json!({"mul": "cache"})
    });
    assert!(
        matches!(parse_graph(&text), Err(ImportError::WriterNotReturned { name }) if name == "mul")
    );
}

#[test]
fn two_writers_for_one_buffer() {
    let mut b = seed_like();
    b.mutates("add", "cache");
    let text = edit(&b, |v| {
        v["nodes"][6]["args"] = json!([[{"node": "scatter"}, {"node": "add"}]])
    });
    assert!(
        matches!(parse_graph(&text), Err(ImportError::TwoWriters { buffer, .. }) if buffer == "cache")
    );
}

#[test]
fn a_buffer_mutated_but_never_read() {
    let text = edit(&seed_like(), |v| {
        v["graph_signature"]["buffers_to_mutate"] = json!({"scatter": "other"})
    });
    assert!(
        matches!(parse_graph(&text), Err(ImportError::MutatedNeverRead { buffer, .. }) if buffer == "other")
    );
}

#[test]
fn output_count_and_reads_of_the_output() {
    let text = edit(&seed_like(), |v| {
        v["nodes"].as_array_mut().unwrap().pop();
    });
    assert_eq!(
        parse_graph(&text).unwrap_err(),
        ImportError::OutputCount { count: 0 }
    );
    let mut b = seed_like();
    b.op("late", "aten.neg.default", &["output"], true);
    assert!(matches!(
        parse_graph(&b.to_json()),
        Err(ImportError::OutputHasUsers { .. })
    ));
}

#[test]
fn malformed_references() {
    let text = edit(&seed_like(), |v| {
        v["nodes"][2]["args"] = json!([{"node": 3}])
    });
    assert!(matches!(
        parse_graph(&text),
        Err(ImportError::BadReference { field: "args", .. })
    ));
    let text = edit(&seed_like(), |v| {
        v["nodes"][0]["args"] = json!([{"node": "x"}])
    });
    assert!(matches!(
        parse_graph(&text),
        Err(ImportError::BadReference { .. })
    ));
}

#[test]
fn deeply_nested_args_do_not_overflow() {
    let mut nested = json!({"node": "x"});
    for _ in 0..100 {
        nested = json!([nested]);
    }
    let text = edit(&seed_like(), |v| {
        v["nodes"][5]["args"] = json!([{"node": "sum"}, nested])
    });
    let g = parse_graph(&text).unwrap();
    assert_eq!(g.node(g.find("add").unwrap()).inputs.len(), 2);
    // Past serde_json's nesting limit the document is refused with a position, not a crash.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let text = seed_like().to_json().replacen(
        "\"target\":\"aten.mul.Tensor\"",
        &format!("\"target\":\"aten.mul.Tensor\",\"kwargs\":{{\"k\":{deep}}}"),
        1,
    );
    assert!(text.contains(&deep));
    assert!(matches!(parse_graph(&text), Err(ImportError::Json { .. })));
}

#[test]
fn options_are_read() {
    let mut b = seed_like();
    b.option("take_over_mutable_buffer", json!(false))
        .option("minimum_deployment_target", json!("iOS18"));
    let g = parse_graph(&b.to_json()).unwrap();
    assert!(!g.options.take_over_mutable_buffer);
    assert!(g.options.target_allows_states());
    let text = edit(&b, |v| {
        v["options"]["minimum_deployment_target"] = json!("iOS99")
    });
    assert!(matches!(parse_graph(&text), Err(ImportError::Json { .. })));
}

#[test]
fn inputs_follow_first_reference_whatever_the_key_or_node_order() {
    let base = parse_graph(&seed_like().to_json()).unwrap();
    let id = base.find("add").unwrap();
    let expected: Vec<&str> = base.node(id).inputs.iter().map(|&i| base.name(i)).collect();
    assert!(expected.len() >= 2);
    // kwargs written before args, and a kwarg reading the first input again.
    let first = expected[0].to_string();
    let mut doc: serde_json::Value = serde_json::from_str(&seed_like().to_json()).unwrap();
    let nodes = doc["nodes"].as_array_mut().unwrap();
    let at = nodes.iter().position(|n| n["name"] == "add").unwrap();
    let node = nodes[at].as_object().unwrap().clone();
    let mut reordered = serde_json::Map::new();
    reordered.insert("kwargs".into(), json!({"other": {"node": first}}));
    for (k, v) in node {
        reordered.insert(k, v);
    }
    nodes[at] = serde_json::Value::Object(reordered);
    // The node also comes before one of its inputs in the list.
    let moved = nodes.remove(at);
    nodes.insert(1, moved);
    let g = parse_graph(&doc.to_string()).unwrap();
    let id = g.find("add").unwrap();
    let got: Vec<&str> = g.node(id).inputs.iter().map(|&i| g.name(i)).collect();
    assert_eq!(got, expected);
    assert_eq!(g.node(id).kwargs.len(), 1);
}

#[test]
fn a_getitem_reads_exactly_one_node() {
    // Found by the plan_check fuzz target: a getitem reading two nodes, whose producer the plan
    // could not keep it with.
    let mut b = seed_like();
    b.op("pair", "aten.mul.Tensor", &["x"], true)
        .op("item", "getitem", &["pair", "add"], true);
    assert_eq!(
        parse_graph(&b.to_json()).unwrap_err(),
        ImportError::GetitemInputs {
            node: "item".into(),
            count: 2
        }
    );
    let mut b = seed_like();
    b.op("pair", "aten.mul.Tensor", &["x"], true)
        .op("item", "getitem", &["pair"], true);
    assert!(parse_graph(&b.to_json()).is_ok());
}

#[test]
fn a_getitem_reading_a_later_node_is_judged_once_the_reference_is_resolved() {
    // `item` is moved before the nodes it reads: its references are resolved after reading.
    let document = |item_reads: &[&str], late: Option<&[&str]>| {
        let mut b = seed_like();
        b.op("pair", "aten.mul.Tensor", &["x"], true)
            .op("item", "getitem", item_reads, true);
        if let Some(reads) = late {
            b.op("late", "getitem", reads, true);
        }
        let mut doc: serde_json::Value = serde_json::from_str(&b.to_json()).unwrap();
        let nodes = doc["nodes"].as_array_mut().unwrap();
        let at = nodes.iter().position(|n| n["name"] == "item").unwrap();
        let item = nodes.remove(at);
        nodes.insert(1, item);
        parse_graph(&doc.to_string())
    };
    assert!(document(&["pair"], None).is_ok());
    let two = |node: &str| ImportError::GetitemInputs {
        node: node.into(),
        count: 2,
    };
    assert_eq!(document(&["pair", "x"], None).unwrap_err(), two("item"));
    // Of two such getitems, the first in the list is reported, whenever it was judged.
    assert_eq!(
        document(&["pair", "x"], Some(&["pair", "x"])).unwrap_err(),
        two("item")
    );
    assert_eq!(
        document(&["pair"], Some(&["pair", "x"])).unwrap_err(),
        two("late")
    );
}

#[test]
fn an_empty_delegation_tag_is_refused_naming_the_node() {
    let text = edit(&seed_like(), |v| {
        v["nodes"][3]["delegation_tag"] = json!("");
    });
    let error = parse_graph(&text).unwrap_err();
    let name = seed_like().to_value()["nodes"][3]["name"].clone();
    assert_eq!(
        error,
        ImportError::EmptyTag {
            node: name.as_str().unwrap().to_string()
        }
    );
    assert!(error.to_string().contains("empty delegation_tag"));
}

#[test]
fn a_value_with_an_unknown_dtype_or_an_overflowing_size_is_noted_not_counted_as_nothing() {
    let text = edit(&seed_like(), |v| {
        v["nodes"][0]["meta"] = json!({"shape": [4], "dtype": "float128"});
        v["nodes"][1]["meta"] = json!({"shape": [i64::MAX, 4], "dtype": "float32"});
    });
    let g = parse_graph(&text).unwrap();
    let (first, second) = (NodeId(0), NodeId(1));
    assert_eq!(
        g.unsized_values,
        vec![
            (first, Unsized::UnknownDtype("float128".into())),
            (second, Unsized::Overflows)
        ]
    );
    assert_eq!((g.value_bytes[0], g.value_bytes[1]), (None, None));
    assert_eq!(
        Unsized::UnknownDtype("float128".into()).to_string(),
        "dtype \"float128\" is not one the planner knows"
    );
}

#[test]
fn a_document_that_is_not_an_object_says_what_a_document_is() {
    for (text, found) in [
        ("[1, 2]", "an array"),
        // One element would fill a struct's one field, as serde reads arrays: not a schema.
        ("[\"partition-planner/plan@1\"]", "an array"),
        ("[1]", "an array"),
        ("  \"graph\"", "a string"),
        ("42", "a number"),
        ("", "an empty document"),
        ("null", "null"),
    ] {
        let error = parse_graph(text).unwrap_err();
        assert_eq!(error, ImportError::NotADocument { found }, "{text:?}");
        assert!(
            error
                .to_string()
                .starts_with("not a bridge document: expected a JSON object")
        );
    }
}

#[test]
fn a_byte_order_mark_is_skipped() {
    let text = seed_like().to_json();
    let marked = format!("\u{feff}{text}");
    assert_eq!(
        parse_graph(&marked).map(|g| g.len()),
        parse_graph(&text).map(|g| g.len())
    );
}

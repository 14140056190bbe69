//! docs/bridge-json.schema.json describes what the importer reads: every graph in data/ and every
//! graph the builder writes validates against it, and documents it rejects the importer rejects too.

use partition_planner::import::parse_graph;
use partition_planner::synthetic::BridgeBuilder;
use serde_json::{Value, json};
use std::path::PathBuf;

mod common;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("docs/bridge-json.schema.json"))
        .expect("schema exists");
    let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema is a valid JSON Schema")
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn data_graphs_validate_against_the_schema() {
    let v = validator();
    let mut count = 0;
    for (_, path) in common::data::all_documents() {
        let text = std::fs::read_to_string(&path).expect("readable");
        let doc: Value = serde_json::from_str(&text).expect("JSON");
        assert!(
            errors(&v, &doc).is_empty(),
            "{}: {:#?}",
            path.display(),
            errors(&v, &doc)
        );
        parse_graph(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        count += 1;
    }
    assert!(count > 0);
}

#[test]
fn builder_graphs_validate_and_schema_rejections_are_import_errors() {
    let v = validator();
    let mut b = BridgeBuilder::new();
    b.buffer("p", "s", &[2])
        .user_input("x", &[2])
        .op("w", "aten.add.Tensor", &["p", "x"], true)
        .mutates("w", "s")
        .output(&[]);
    let good = b.to_value();
    assert!(errors(&v, &good).is_empty(), "{:#?}", errors(&v, &good));
    let broken = [
        ("/schema", json!("partition-planner/graph@2")),
        ("/nodes/0/op", json!("call_module")),
        ("/nodes/0/extra", json!(1)),
        ("/options/minimum_deployment_target", json!("iOS12")),
        ("/graph_signature/user_inputs", json!("x")),
        ("/nodes/2/conversion", json!({"found_by": "probe"})),
        (
            "/nodes/2/conversion",
            json!({"converts": false, "why": "x"}),
        ),
        (
            "/nodes/2/conversion",
            json!({"converts": false, "found_by": "guess"}),
        ),
        ("/decomposed", json!([{"op": "aten.pad.default"}])),
        (
            "/nodes/2/conversion",
            json!({"converts": true, "cause": "the boundary"}),
        ),
        (
            "/nodes/2/conversion",
            json!({"converts": true, "static_sizes": null}),
        ),
        ("/range_constraints", json!({"s0": [1]})),
        ("/range_constraints", json!({"s0": [1, "16"]})),
        ("/range_constraints", json!(["s0"])),
    ];
    for (pointer, value) in broken {
        let mut doc = good.clone();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        doc.pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .unwrap()
            .insert(key.into(), value);
        assert!(!errors(&v, &doc).is_empty(), "schema accepts {pointer}");
        assert!(
            parse_graph(&doc.to_string()).is_err(),
            "importer accepts {pointer}"
        );
    }
}

//! Malformed and semantically impossible documents through the command line: each exits 2 with a
//! typed error naming the place (a line and column, or the node), never a panic or a plan. The
//! kinds are those the fuzz targets' generator writes (fuzz/src/lib.rs); the inputs the fuzzers
//! found are at the end.

use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Output};

fn seed() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data/executorch-1.5.1/seed_slice_ios18.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn node<'a>(doc: &'a mut Value, name: &str) -> &'a mut Value {
    let nodes = doc["nodes"].as_array_mut().unwrap();
    nodes.iter_mut().find(|n| n["name"] == name).unwrap()
}

/// Runs `partition-planner plan` on `text`; its output and stderr.
fn plan(case: &str, text: &str) -> (Output, String) {
    let dir = std::env::temp_dir().join(format!(
        "partition-planner-malformed-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{case}.json"));
    std::fs::write(&path, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_partition-planner"))
        .args(["plan", path.to_str().unwrap(), "--format", "json"])
        .output()
        .expect("the binary runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, err)
}

fn refused(case: &str, text: &str, expected: &[&str]) {
    let (out, err) = plan(case, text);
    assert_eq!(out.status.code(), Some(2), "{case}: {err}");
    assert!(!err.contains("panicked"), "{case}: {err}");
    for part in expected {
        assert!(err.contains(part), "{case}: {err:?} lacks {part:?}");
    }
}

fn edited(f: impl FnOnce(&mut Value)) -> String {
    let mut doc = seed();
    f(&mut doc);
    doc.to_string()
}

#[test]
fn a_cycle_is_refused_with_its_path() {
    let text = edited(|d| {
        node(d, "aten_mul_tensor")["args"][1] = json!({"node": "aten_add_tensor"});
    });
    refused(
        "cycle",
        &text,
        &[
            "the input graph has a cycle: aten_slice_scatter_default -> aten_add_tensor -> aten_mul_tensor -> aten_slice_scatter_default",
        ],
    );
}

#[test]
fn dangling_and_malformed_references_name_the_node() {
    let text = edited(|d| node(d, "aten_add_tensor")["args"][1] = json!({"node": "nowhere"}));
    refused(
        "dangling",
        &text,
        &["node \"aten_add_tensor\" refers to \"nowhere\""],
    );
    let text = edited(|d| node(d, "aten_add_tensor")["args"][1] = json!({"node": "x", "also": 1}));
    refused(
        "malformed",
        &text,
        &["\"aten_add_tensor\" has a malformed reference in its args"],
    );
    let text =
        edited(|d| node(d, "aten_add_tensor")["args"][1] = json!({"node": "aten_add_tensor"}));
    refused(
        "self",
        &text,
        &["cycle: aten_add_tensor -> aten_add_tensor"],
    );
}

#[test]
fn a_forward_reference_without_a_cycle_plans() {
    // Any topological order is accepted: move the user input read last to the front.
    let text = edited(|d| {
        let nodes = d["nodes"].as_array_mut().unwrap();
        let add = nodes.remove(11);
        nodes.insert(0, add);
    });
    let (out, err) = plan("forward", &text);
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[test]
fn duplicate_names_are_refused_with_both_places() {
    let text = edited(|d| node(d, "aten_add_tensor")["name"] = json!("aten_mul_tensor"));
    refused(
        "duplicate",
        &text,
        &["two nodes are named \"aten_mul_tensor\" (nodes 4 and 7"],
    );
}

#[test]
fn the_signature_must_name_nodes_of_the_right_kind() {
    let text = edited(|d| {
        d["graph_signature"]["buffers_to_mutate"] = json!({"missing": "cache"});
    });
    refused(
        "mutate-missing",
        &text,
        &["graph_signature.buffers_to_mutate names \"missing\", which is not a node"],
    );
    let text = edited(|d| {
        d["graph_signature"]["buffers_to_mutate"] =
            json!({"aten_slice_scatter_default_1": "other"});
    });
    refused(
        "never-read",
        &text,
        &["buffer \"other\" is mutated", "but never read"],
    );
    let text = edited(|d| {
        d["graph_signature"]["buffers_to_mutate"] = json!({"aten_slice_scatter_default": "cache"});
    });
    refused(
        "not-returned",
        &text,
        &[
            "names \"aten_slice_scatter_default\" as a writer, but the output node does not return it",
        ],
    );
    let text = edited(|d| {
        d["graph_signature"]["buffers_to_mutate"] = json!({"x": "cache"});
        d["nodes"].as_array_mut().unwrap().last_mut().unwrap()["args"][0]
            .as_array_mut()
            .unwrap()
            .push(json!({"node": "x"}));
    });
    refused(
        "writer-placeholder",
        &text,
        &["the writer \"x\" of buffer \"cache\" is a placeholder"],
    );
    let text = edited(|d| d["graph_signature"]["user_inputs"] = json!(["aten_mul_tensor"]));
    refused(
        "wrong-kind",
        &text,
        &[
            "graph_signature.user_inputs names \"aten_mul_tensor\", which is a call_function node, not a placeholder",
        ],
    );
}

#[test]
fn a_writer_that_is_not_an_in_place_op_is_planned() {
    // Mutation is read from the signature, not from the writer's op.
    let text =
        edited(|d| node(d, "aten_slice_scatter_default_1")["target"] = json!("aten.add.Tensor"));
    let (out, err) = plan("not-in-place", &text);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["buffers"][0]["buffer"], "cache");
}

#[test]
fn negative_and_oversized_dimensions_are_refused_at_their_place() {
    let text = edited(|d| node(d, "x")["meta"]["shape"] = json!([1, -4]));
    refused(
        "negative",
        &text,
        &[
            "invalid JSON at line 1, column",
            "a size cannot be negative, found -4",
        ],
    );
    let text = edited(|d| node(d, "x")["meta"]["shape"] = json!([1, u64::MAX]));
    refused(
        "oversized",
        &text,
        &[
            "a size is at most 9223372036854775807",
            "found 18446744073709551615",
        ],
    );
    let text = edited(|d| node(d, "x")["meta"]["shape"] = json!([1, 2.5]));
    refused("fractional", &text, &["invalid JSON at line 1, column"]);
}

#[test]
fn huge_but_valid_dimensions_plan_with_saturated_byte_counts() {
    // Found by the plan_check fuzz target: byte totals overflowed u64 (a panic under overflow
    // checks, as `cargo test` builds the binary). Each value is 2^63 bytes; their sums saturate.
    let text = edited(|d| {
        let nodes = d["nodes"].as_array_mut().unwrap();
        let compute = nodes.iter_mut().filter(|n| n["op"] == "call_function");
        // Alternately supported, so that every value crosses a partition boundary.
        for (i, n) in compute.enumerate() {
            n["meta"] = json!({"shape": [1u64 << 31, 1u64 << 30], "dtype": "float32"});
            n["supported"] = json!(i % 2 == 0);
        }
    });
    let (out, err) = plan("huge", &text);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        plan["stats"]["boundary_bytes"],
        json!(u64::MAX),
        "{}",
        plan["stats"]
    );
    assert_eq!(plan["cost"]["estimate"]["boundary_bytes"], json!(u64::MAX));
}

#[test]
fn nan_literals_and_deep_nesting_are_json_errors_with_a_position() {
    let text = seed().to_string().replacen(
        "\"args\":[{\"node\":\"x\"},1]",
        "\"args\":[{\"node\":\"x\"},NaN]",
        1,
    );
    assert!(text.contains("NaN"));
    refused("nan", &text, &["invalid JSON at line 1, column"]);
    let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
    let text = seed().to_string().replacen(
        "\"args\":[{\"node\":\"x\"},1]",
        &format!("\"args\":[{{\"node\":\"x\"}},{deep}]"),
        1,
    );
    refused(
        "deep",
        &text,
        &["invalid JSON at line 1, column", "recursion limit exceeded"],
    );
}

#[test]
fn unicode_and_very_long_names_plan_and_come_back_intact() {
    let long = "ノード_\u{1F600}_".repeat(20_000);
    let text = edited(|d| {
        node(d, "aten_add_tensor")["name"] = json!(long);
        node(d, "aten_copy_default")["args"][1] = json!({"node": long});
    });
    let (out, err) = plan("unicode", &text);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(plan["node_tags"].get(&long).is_some());
}

#[test]
fn a_getitem_reading_two_nodes_is_refused() {
    // Found by the plan_check fuzz target: the plan could not keep such a getitem with its
    // producer, and the checker flagged TUPLE_WHOLE on the plan.
    let text = edited(|d| {
        node(d, "aten_sum_dim_int_list")["target"] = json!("getitem");
        node(d, "aten_sum_dim_int_list")["args"] =
            json!([{"node": "aten_slice_scatter_default_1"}, {"node": "x"}]);
    });
    refused(
        "getitem",
        &text,
        &["node \"aten_sum_dim_int_list\" is a getitem reading 2 nodes"],
    );
}

/// The graph file itself: empty, not UTF-8, a directory, missing. Each is refused as the file it
/// is (the document is mapped from the file, not copied, when it can be).
#[test]
fn unreadable_graph_files_are_refused() {
    let dir = std::env::temp_dir().join(format!("partition-planner-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.json");
    std::fs::write(&empty, "").unwrap();
    let latin1 = dir.join("latin1.json");
    std::fs::write(&latin1, b"{\"schema\": \"caf\xe9\"}").unwrap();
    let cases = [
        (
            empty,
            "not a bridge document: expected a JSON object with \"schema\", \"nodes\" and \"graph_signature\" (docs/bridge-json.md), found an empty document",
        ),
        (latin1, "stream did not contain valid UTF-8"),
        (dir.clone(), "cannot read"),
        (dir.join("missing.json"), "cannot read"),
    ];
    for (path, expected) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_partition-planner"))
            .args(["plan", path.to_str().unwrap()])
            .output()
            .expect("the binary runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", path.display());
        assert!(
            err.contains(expected),
            "{}: {err:?} lacks {expected:?}",
            path.display()
        );
    }
}

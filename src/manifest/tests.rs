use super::*;
use crate::analyse::analyse;
use crate::import::parse_graph;
use crate::options::DeploymentTarget;
use crate::pipeline::plan;
use crate::plan::PlanRequest;
use crate::synthetic::generate;
use serde_json::{Value, json};
use std::collections::HashSet;

fn data(path: &str) -> String {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(path);
    std::fs::read_to_string(full).expect("readable")
}

/// The planned tagging's manifest, with options overridden by `edit`.
fn planned(text: &str, edit: impl Fn(&mut Options)) -> Manifest {
    let graph = parse_graph(text).expect("imports");
    let analysis = analyse(&graph);
    let mut request = PlanRequest::new(&graph);
    edit(&mut request.options);
    let p = plan(&graph, &analysis, &request).expect("plans");
    manifest(&graph, &p.draft.tagging, &p.draft.options)
}

fn keys(m: &Manifest) -> Vec<String> {
    m.entries.iter().map(|e| e.key.clone()).collect()
}

fn assert_unique(m: &Manifest, what: &str) {
    let distinct: HashSet<&str> = m.entries.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        distinct.len(),
        m.entries.len(),
        "{what}: two partitions share a key"
    );
}

/// Applies `f` to every node reference (`{"node": NAME}`) in a JSON value, without recursion.
fn rename_refs(value: &mut Value, f: &dyn Fn(&str) -> String) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(map)
                if map.len() == 1 && map.get("node").is_some_and(Value::is_string) =>
            {
                let old = map["node"].as_str().unwrap_or_default().to_string();
                map.insert("node".into(), json!(f(&old)));
            }
            Value::Object(map) => stack.extend(map.values_mut()),
            _ => {}
        }
    }
}

/// The same document with every node renamed `n0`, `n1`, ... in reverse order of appearance.
fn rename_every_node(text: &str) -> String {
    let mut doc: Value = serde_json::from_str(text).unwrap();
    let names: Vec<String> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap().to_string())
        .collect();
    let count = names.len();
    let new_name: HashMap<String, String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), format!("n{}", count - i)))
        .collect();
    let f = |old: &str| new_name[old].clone();
    for node in doc["nodes"].as_array_mut().unwrap() {
        let old = node["name"].as_str().unwrap().to_string();
        node["name"] = json!(f(&old));
        if node["op"] == "placeholder" {
            node["target"] = json!(f(&old));
        }
        rename_refs(&mut node["args"], &f);
        rename_refs(&mut node["kwargs"], &f);
    }
    let sig = &mut doc["graph_signature"];
    for field in [
        "inputs_to_parameters",
        "inputs_to_buffers",
        "inputs_to_lifted_tensor_constants",
        "buffers_to_mutate",
    ] {
        let renamed: serde_json::Map<String, Value> = sig[field]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (f(k), v.clone()))
            .collect();
        sig[field] = Value::Object(renamed);
    }
    for field in ["user_inputs", "user_outputs"] {
        for v in sig[field].as_array_mut().unwrap() {
            if let Some(old) = v.as_str().map(str::to_string) {
                *v = json!(f(&old));
            }
        }
    }
    doc.to_string()
}

#[test]
fn two_exports_of_the_same_model_give_the_same_keys() {
    // make_data.py exports each model once per take-over setting: two separate torch.export runs.
    for version in ["executorch-1.5.1", "executorch-1.4.0"] {
        for model in ["qwen3_5_0_8b", "lfm2_5_350m", "llama3_2_1b"] {
            let on = data(&format!("{version}/{model}_takeover_on_ios18.json"));
            let off = data(&format!("{version}/{model}_takeover_off_ios18.json"));
            assert_ne!(on, off);
            let take_over = |o: &mut Options| o.take_over_mutable_buffer = true;
            let (a, b) = (planned(&on, take_over), planned(&off, take_over));
            assert!(!a.entries.is_empty());
            assert_eq!(keys(&a), keys(&b), "{version}/{model}");
        }
    }
}

#[test]
fn renaming_every_node_or_renumbering_tags_keeps_the_keys() {
    let qwen = data("executorch-1.5.1/qwen3_5_0_8b_takeover_on_ios18.json");
    let base = planned(&qwen, |_| {});
    let renamed = planned(&rename_every_node(&qwen), |_| {});
    assert_eq!(keys(&base), keys(&renamed));
    assert_ne!(base.entries[0].inputs, renamed.entries[0].inputs);

    let graph = parse_graph(&qwen).unwrap();
    let analysis = analyse(&graph);
    let p = plan(&graph, &analysis, &PlanRequest::new(&graph)).unwrap();
    let count = p.draft.tagging.partition_count() as u32;
    let mut same: Vec<String> = keys(&manifest(&graph, &p.draft.tagging, &p.draft.options));
    // The same partitions numbered in reverse, under other tag names.
    let relabelled = Tagging::new(
        (0..count).map(|t| format!("x{t}")).collect(),
        graph
            .ids()
            .map(|n| p.draft.tagging.partition(n).map(|t| count - 1 - t))
            .collect(),
    );
    let mut relabelled_keys = keys(&manifest(&graph, &relabelled, &p.draft.options));
    same.sort();
    relabelled_keys.sort();
    assert_eq!(same, relabelled_keys);
}

/// Edits the first node whose name is `node`, and returns the document.
fn edit_node(text: &str, node: &str, f: impl Fn(&mut Value)) -> String {
    let mut doc: Value = serde_json::from_str(text).unwrap();
    let n = doc["nodes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|n| n["name"] == node)
        .unwrap();
    f(n);
    doc.to_string()
}

/// Keys that differ between two manifests of the same partitioning.
fn changed(a: &Manifest, b: &Manifest) -> usize {
    assert_eq!(a.entries.len(), b.entries.len());
    a.entries
        .iter()
        .zip(&b.entries)
        .filter(|(x, y)| x.key != y.key)
        .count()
}

#[test]
fn one_literal_or_one_shape_changes_exactly_its_partition() {
    let qwen = data("executorch-1.5.1/qwen3_5_0_8b_takeover_on_ios18.json");
    let base = planned(&qwen, |_| {});
    // `aten.mean.dim(x, [-1], true)`: keepdim false.
    let literal = edit_node(&qwen, "aten_mean_dim_1", |n| n["args"][2] = json!(false));
    assert_eq!(changed(&base, &planned(&literal, |_| {})), 1);
    let shape = edit_node(&qwen, "aten_mean_dim_1", |n| {
        n["meta"]["shape"] = json!([4, 2])
    });
    assert_eq!(changed(&base, &planned(&shape, |_| {})), 1);
    // A constant's content digest, when the exporter gives one.
    let digest = edit_node(&qwen, "p_layers_0_attention_norm_weight", |n| {
        n["meta"]["digest"] = json!("sha256:00")
    });
    assert_eq!(changed(&base, &planned(&digest, |_| {})), 1);
}

#[test]
fn compute_unit_precision_and_target_change_every_key() {
    let qwen = data("executorch-1.5.1/qwen3_5_0_8b_takeover_on_ios18.json");
    let base = planned(&qwen, |_| {});
    let n = base.entries.len();
    let unit = planned(&qwen, |o| o.compute_unit = Some("CPU_ONLY".into()));
    assert_eq!(changed(&base, &unit), n);
    let precision = planned(&qwen, |o| o.compute_precision = Some("FLOAT32".into()));
    assert_eq!(changed(&base, &precision), n);
    // Without states (below iOS18 the planner moves them) partitions differ; keep the tags and
    // only change the option.
    let graph = parse_graph(&qwen).unwrap();
    let analysis = analyse(&graph);
    let p = plan(&graph, &analysis, &PlanRequest::new(&graph)).unwrap();
    let mut options = p.draft.options.clone();
    options.minimum_deployment_target = Some(DeploymentTarget::Ios17);
    let target = manifest(&graph, &p.draft.tagging, &options);
    assert_eq!(changed(&base, &target), n);
}

#[test]
fn no_two_partitions_share_a_key_in_data_or_generated_graphs() {
    for version in ["executorch-1.5.1", "executorch-1.4.0"] {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("data")
            .join(version);
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let m = planned(&text, |_| {});
            assert_unique(&m, &path.display().to_string());
            // The stock proposal's partitions too.
            let graph = parse_graph(&text).unwrap();
            let stock = manifest(&graph, &Tagging::carried(&graph), &graph.options);
            assert_unique(&stock, &format!("stock {}", path.display()));
        }
    }
    for seed in 0..6 {
        let m = planned(&generate(20_000, seed).unwrap(), |_| {});
        assert!(m.entries.len() > 10);
        assert_unique(&m, &format!("generated seed {seed}"));
    }
}

#[test]
fn the_diff_drops_stale_entries_and_keeps_the_rest() {
    let qwen = data("executorch-1.5.1/qwen3_5_0_8b_takeover_on_ios18.json");
    let base = planned(&qwen, |_| {});
    let literal = planned(
        &edit_node(&qwen, "aten_mean_dim_1", |n| n["args"][2] = json!(false)),
        |_| {},
    );
    let d = manifest_diff(&base, &literal);
    assert_eq!(d.drop.len(), 1);
    assert_eq!(d.add.len(), 1);
    assert_eq!(d.keep.len(), base.entries.len() - 1);
    assert_eq!(d.drop[0].tag, d.add[0].tag);
    assert!(manifest_diff(&base, &base).drop.is_empty());
}

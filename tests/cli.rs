//! The command line as a user meets it: exit codes, formats, output files, bad input.

mod common;
use common::cli::{arg, data, run, scratch, text};
use std::path::PathBuf;

#[test]
fn plan_prints_a_text_report_and_exits_zero() {
    let out = run(&["plan", arg(&data("seed_slice_ios18.json"))]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(
        report.contains("cache") && report.contains("state") && report.contains("tag0"),
        "{report}"
    );
}

#[test]
fn plan_json_tags_every_node_and_honours_flags() {
    let seed = data("seed_slice_ios18.json");
    let out = run(&[
        "plan",
        arg(&seed),
        "--format",
        "json",
        "--take-over-mutable-buffer",
        "false",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["schema"], "partition-planner/plan@1");
    assert_eq!(plan["node_tags"].as_object().unwrap().len(), 13);
    assert_eq!(plan["node_tags"]["b_cache"], serde_json::Value::Null);
    // Passing the buffer through keeps the one partition; the chain on CPU would split it.
    assert_eq!(plan["buffers"][0]["strategy"], "io");
    assert_eq!(plan["buffers"][0]["rule"], "NO_HIDDEN_STATE");
    assert_eq!(plan["stats"]["partitions"], 1);
    assert_eq!(plan["stats"]["states"], 0);
    assert!(
        plan["explanations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["scope"] == "stock" && e["rule"] == "NO_HIDDEN_STATE")
    );
    let out = run(&[
        "plan",
        arg(&seed),
        "--format",
        "json",
        "--strategy",
        "cache=io",
    ]);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["buffers"][0]["strategy"], "io");
    assert_eq!(plan["buffers"][0]["requested"], "io");
}

#[test]
fn plan_writes_to_a_file() {
    let target = scratch("plan.json");
    // Written over a longer file (not truncated first): nothing of the old one is left.
    std::fs::write(&target, " ".repeat(1 << 20) + "left over").unwrap();
    let out = run(&[
        "plan",
        arg(&data("seed_whole_ios18.json")),
        "--format",
        "json",
        "-o",
        arg(&target),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(plan["stats"]["partitions"], 1);
    // A device has no length to cut.
    let out = run(&[
        "plan",
        arg(&data("seed_whole_ios18.json")),
        "-o",
        "/dev/null",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn check_exits_one_and_prints_the_cycle() {
    let out = run(&["check", arg(&data("seed_slice_writer_untagged.json"))]);
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    assert!(
        report.contains("[ACYCLIC]")
            && report
                .contains("aten_slice_scatter_default_1 [cpu] -> aten_sum_dim_int_list [tag1]"),
        "{report}"
    );
    let out = run(&[
        "check",
        arg(&data("seed_slice_ios18.json")),
        "--take-over-mutable-buffer",
        "false",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(report["findings"][0]["rule"], "NO_HIDDEN_STATE");
    assert_eq!(report["findings"][0]["buffer"], "cache");
    let out = run(&["check", arg(&data("seed_slice_ios18.json"))]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[test]
fn bad_input_and_usage_exit_two_with_the_place() {
    let truncated = scratch("truncated.json");
    let full = std::fs::read_to_string(data("seed_slice_ios18.json")).unwrap();
    std::fs::write(&truncated, &full[..full.len() / 3]).unwrap();
    let out = run(&["plan", arg(&truncated)]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("line") && err.contains("column"), "{err}");
    let out = run(&["check", arg(&scratch("missing.json"))]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot read"));
    let out = run(&[
        "plan",
        arg(&data("seed_slice_ios18.json")),
        "--strategy",
        "nope=cpu",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no mutable buffer is named \"nope\""));
    let out = run(&[
        "plan",
        arg(&data("seed_slice_ios18.json")),
        "--strategy",
        "sideways",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[
        "plan",
        arg(&data("seed_slice_ios18.json")),
        "--min-target",
        "iOS99",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn generate_writes_the_same_graph_for_the_same_seed() {
    let (a, b) = (scratch("gen_a.json"), scratch("gen_b.json"));
    for file in [&a, &b] {
        let out = run(&[
            "generate",
            "--nodes",
            "5000",
            "--seed",
            "3",
            "-o",
            arg(file),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let text_a = std::fs::read_to_string(&a).unwrap();
    assert_eq!(text_a, std::fs::read_to_string(&b).unwrap());
    let doc: serde_json::Value = serde_json::from_str(&text_a).unwrap();
    assert_eq!(doc["nodes"].as_array().unwrap().len(), 5000);
    let out = run(&["plan", arg(&a)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(&["generate", "--nodes", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot generate 3 nodes"));
}

#[test]
fn plan_takes_cost_constants_and_refuses_unknown_ones() {
    let seed = data("seed_slice_takeover_off_ios17.json");
    let strategy = |extra: &[&str]| {
        let mut args = vec!["plan", arg(&seed), "--format", "json"];
        args.extend_from_slice(extra);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(plan["cost"]["candidates_estimated"], 2);
        (
            plan["buffers"][0]["strategy"].as_str().unwrap().to_string(),
            plan["cost"]["model"].clone(),
        )
    };
    let (chosen, model) = strategy(&[]);
    assert_eq!(chosen, "io");
    assert_eq!(model["call_overhead_us"], 200.0);
    // Repeatable, a later value winning.
    let (chosen, model) = strategy(&[
        "--cost",
        "call_overhead_us=5,bytes_per_us=0.01",
        "--cost",
        "call_overhead_us=0",
    ]);
    assert_eq!(chosen, "cpu");
    assert_eq!(
        (
            model["call_overhead_us"].as_f64(),
            model["bytes_per_us"].as_f64()
        ),
        (Some(0.0), Some(0.01))
    );
    for bad in [
        "speed=3",
        "bytes_per_us=0",
        "cpu_op_us=-1",
        "call_overhead_us",
    ] {
        let out = run(&["plan", arg(&seed), "--cost", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(text(&out.stderr).contains("--cost"), "{bad}");
    }
    // The text report ends with the estimates and the constants behind them.
    let out = run(&["plan", arg(&seed)]);
    let report = text(&out.stdout);
    assert!(
        report.contains("estimated per step: 1 partition,")
            && report.contains("not a device measurement"),
        "{report}"
    );
}

#[test]
fn whatif_answers_one_scenario_in_detail() {
    let qwen = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data/executorch-1.4.0/qwen3_5_0_8b_takeover_off_ios18.json");
    let out = run(&["whatif", arg(&qwen), "--change", "strategy=cpu"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.starts_with("what if strategy=cpu"), "{report}");
    assert!(
        report.contains("delegate calls              1           43        +42"),
        "{report}"
    );
    // Only the constants change: the plan does not, and both are weighed alike.
    let out = run(&[
        "whatif",
        arg(&qwen),
        "--change",
        "cost=call_overhead_us=1000",
    ]);
    let report = text(&out.stdout);
    assert!(report.contains("estimated µs"), "{report}");
    assert!(report.contains("the plan does not change"), "{report}");
    let out = run(&["whatif", arg(&qwen), "--change", "cpu=no_such_node"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no node is named \"no_such_node\""));
    let out = run(&["whatif", arg(&qwen), "--change", "gpu=on"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn whatif_batch_prints_one_row_per_scenario() {
    let qwen = data("qwen3_5_0_8b_takeover_on_ios18.json");
    let scenarios = scratch("scenarios.jsonl");
    std::fs::write(
        &scenarios,
        "{\"name\": \"take-over off\", \"changes\": [\"take-over=off\"]}\n\
         {\"name\": \"gdr on Core ML\", \"changes\": [\"op-supported=llama.gated_delta_rule.default\"]}\n\
         {\"name\": \"ios17\", \"changes\": [\"target=iOS17\"]}\n",
    )
    .unwrap();
    let out = run(&["whatif", arg(&qwen), "--scenarios", arg(&scenarios)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 5, "{table}");
    assert!(rows[1].starts_with("base"));
    assert!(rows[3].starts_with("gdr on Core ML"));
    let out = run(&[
        "whatif",
        arg(&qwen),
        "--scenarios",
        arg(&scenarios),
        "--format",
        "json",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema"], "partition-planner/whatif@1");
    assert_eq!(doc["base"]["states"], 30);
    assert_eq!(
        doc["scenarios"][1]["diff"]["states_gained"]
            .as_array()
            .unwrap()
            .len(),
        18
    );
    assert_eq!(doc["scenarios"][2]["stats"]["states"], 0);
}

#[test]
fn manifests_are_emitted_and_diffed() {
    let qwen = data("qwen3_5_0_8b_takeover_on_ios18.json");
    let (ios18, ios17, same) = (
        scratch("m18.json"),
        scratch("m17.json"),
        scratch("m18_again.json"),
    );
    for (file, target) in [(&ios18, "iOS18"), (&ios17, "iOS17"), (&same, "iOS18")] {
        let out = run(&[
            "plan",
            arg(&qwen),
            "-o",
            arg(&scratch("plan.txt")),
            "--min-target",
            target,
            "--emit-manifest",
            arg(file),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&ios18).unwrap()).unwrap();
    assert_eq!(m["schema"], "partition-planner/manifest@1");
    let entries = m["entries"].as_array().unwrap();
    assert!(
        entries
            .iter()
            .all(|e| e["key"].as_str().unwrap().len() == 64)
    );
    let out = run(&["manifest-diff", arg(&ios18), arg(&same)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("0 to drop, 0 to compile, {} kept\n", entries.len())
    );
    // Another target changes every compiled model: every old entry must go.
    let out = run(&[
        "manifest-diff",
        arg(&ios18),
        arg(&ios17),
        "--format",
        "json",
    ]);
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["drop"].as_array().unwrap().len(), entries.len());
    assert!(d["keep"].as_array().unwrap().is_empty());
    let out = run(&["manifest-diff", arg(&qwen), arg(&ios17)]);
    assert_eq!(out.status.code(), Some(2));
}

/// A data/ document with every tag removed: what the drop-in exports before anything is tagged.
fn untagged(version: &str, name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("data/executorch-{version}"))
        .join(name);
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let real: Vec<serde_json::Value> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["delegation_tag"].clone())
        .collect();
    for n in doc["nodes"].as_array_mut().unwrap() {
        n["delegation_tag"] = serde_json::Value::Null;
    }
    let out = scratch(&format!("untagged-{version}-{name}"));
    std::fs::write(&out, doc.to_string()).unwrap();
    std::fs::write(
        out.with_extension("real"),
        serde_json::Value::from(real).to_string(),
    )
    .unwrap();
    out
}

#[test]
fn check_stock_reproduces_what_stock_tags_on_a_graph_without_tags() {
    // The seed report's setting: take-over off, iOS17. executorch 1.4 still tags the buffer, which
    // becomes a hidden state; 1.5 leaves it on CPU.
    for (version, violations) in [("1.4.0", 2), ("1.5.1", 0)] {
        let graph = untagged(version, "seed_slice_takeover_off_ios17.json");
        let plain = run(&["check", arg(&graph), "--format", "json"]);
        let plain: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
        assert_eq!(plain["checked"], "document");
        assert_eq!(plain["partitions"].as_array().unwrap().len(), 0);

        let out = run(&["check", "--stock", arg(&graph), "--format", "json"]);
        let code = if violations == 0 { 0 } else { 1 };
        assert_eq!(out.status.code(), Some(code), "{}", text(&out.stderr));
        let checked: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(checked["checked"], "stock_reproduced");
        assert_eq!(checked["executorch"], &version[..3]);
        assert_eq!(checked["violations"], violations);
        // Node for node what the real partitioner tagged (one partition here, so names agree
        // once renamed: the real one is tag1 too).
        let real: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(graph.with_extension("real")).unwrap())
                .unwrap();
        let tags = &checked["node_tags"];
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&graph).unwrap()).unwrap();
        for (node, real) in doc["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .zip(real.as_array().unwrap())
        {
            let name = node["name"].as_str().unwrap();
            let got = tags.get(name).cloned().unwrap_or(serde_json::Value::Null);
            assert_eq!(&got, real, "{version} {name}");
        }
    }
    let graph = untagged("1.5.1", "seed_slice_ios18.json");
    let out = run(&["check", "--stock", "--executorch", "0.9", arg(&graph)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("0.9"), "{}", text(&out.stderr));
}

#[test]
fn render_draws_every_format_and_a_plan_given_back_draws_the_same_page() {
    let qwen = data("qwen3_5_0_8b_takeover_on_ios18.json");
    let page = scratch("render.html");
    let out = run(&["render", arg(&qwen), "-o", arg(&page)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!doctype html>") && html.contains("qwen3_5_0_8b"));
    // The plan written by `plan`, drawn back: the same page.
    let plan = scratch("render-plan.json");
    let out = run(&["plan", arg(&qwen), "--format", "json", "-o", arg(&plan)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let again = scratch("render-again.html");
    let out = run(&[
        "render",
        arg(&qwen),
        "--plan",
        arg(&plan),
        "-o",
        arg(&again),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&again).unwrap() == html);
    for (format, start) in [("svg", "<svg xmlns="), ("dot", "digraph partition_map {")] {
        let out = run(&["render", arg(&qwen), "--format", format]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(text(&out.stdout).starts_with(start), "{format}");
    }
    let overlays = scratch("overlays");
    let out = run(&[
        "render",
        arg(&qwen),
        "--format",
        "model-explorer",
        "-o",
        arg(&overlays),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for name in ["partition.json", "strategy.json", "violation.json"] {
        let overlay: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(overlays.join(name)).unwrap()).unwrap();
        assert!(overlay["results"].is_object(), "{name}");
    }
}

#[test]
fn render_refuses_a_plan_for_another_graph_and_overlays_without_a_directory() {
    let qwen = data("qwen3_5_0_8b_takeover_on_ios18.json");
    let llama = data("llama3_2_1b_takeover_on_ios18.json");
    let plan = scratch("render-llama-plan.json");
    let out = run(&["plan", arg(&llama), "--format", "json", "-o", arg(&plan)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(&["render", arg(&qwen), "--plan", arg(&plan)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("it was made for another graph"),
        "{}",
        text(&out.stderr)
    );
    // A document that is not a plan.
    let out = run(&["render", arg(&qwen), "--plan", arg(&qwen)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a partition-planner/plan@1 document"));
    let out = run(&["render", arg(&qwen), "--format", "model-explorer"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("give a directory with -o"));
    // --plan is a plan already made: strategies and cost constants do not apply to it.
    let out = run(&[
        "render",
        arg(&qwen),
        "--plan",
        arg(&plan),
        "--strategy",
        "cpu",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn budgets_and_cuts_from_flags_and_changes_are_reported_and_bad_sizes_exit_two() {
    let llama = data("llama3_2_1b_takeover_on_ios18.json");
    let out = run(&[
        "plan",
        arg(&llama),
        "--format",
        "json",
        "--max-partition-weight-bytes",
        "1.5MB",
        "--max-partition-ops",
        "600",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("plan@1");
    assert_eq!(plan["options"]["max_weight_bytes"], 1_500_000);
    assert_eq!(plan["options"]["max_ops"], 600);
    let partitions = plan["partitions"].as_array().expect("partitions");
    assert!(partitions.len() >= 3);
    for p in partitions {
        assert!(
            p["weight_bytes"].as_u64().expect("weights") <= 1_500_000,
            "{p}"
        );
        assert!(p["nodes"].as_u64().expect("ops") <= 600, "{p}");
    }
    let cuts = plan["cuts"].as_array().expect("cuts");
    assert_eq!(cuts.len(), partitions.len() - 1);
    assert!(
        cuts.iter()
            .all(|c| c["reason"].as_str().unwrap().contains("reached"))
    );

    let out = run(&["plan", arg(&llama), "--max-partition-weight-bytes", "1.5MB"]);
    let report = text(&out.stdout);
    assert!(
        report.contains("cuts (") && report.contains("max_weight_bytes reached"),
        "{report}"
    );

    let out = run(&[
        "whatif",
        arg(&llama),
        "--change",
        "max-ops=600",
        "--change",
        "cut-after=aten_add_tensor_5",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let answer = text(&out.stdout);
    assert!(
        answer.contains("largest ops")
            && answer.contains("as cut_after \"aten_add_tensor_5\" asks"),
        "{answer}"
    );

    for (flag, value, says) in [
        ("--max-partition-weight-bytes", "lots", "not a byte size"),
        ("--max-partition-ops", "3.5", "--max-partition-ops"),
    ] {
        let out = run(&["plan", arg(&llama), flag, value]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    }
    let out = run(&["whatif", arg(&llama), "--change", "max-ops=many"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("max-ops takes a whole number or none"),
        "{}",
        text(&out.stderr)
    );
}

/// Ops coremltools refuses (issue #30), read from the document's verdicts without Python: `check`
/// exits 1 naming each one the stock tags hold, `plan` keeps them on CPU with a CONVERTIBLE
/// decision each (text and JSON), and the map draws those decisions, also from a plan given back.
#[test]
fn verdicts_of_refusal_are_checked_planned_around_and_drawn() {
    let doc = data("conversion_failures_ios18.json");
    let out = run(&["check", arg(&doc)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    for node in [
        "aten_max_pool2d_with_indices_default",
        "aten_index_put_default",
    ] {
        assert!(
            report.contains(&format!(
                "[CONVERTIBLE] {node} is tagged tag1, but coremltools 9.0 cannot convert"
            )),
            "{report}"
        );
    }
    let out = run(&["check", "--stock", arg(&doc)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("[CONVERTIBLE]"));

    let out = run(&["plan", arg(&doc)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(
        report.contains("the op was decomposed rather than kept whole for Core ML"),
        "{report}"
    );
    assert!(
        report.contains("aten_max_pool2d_with_indices_default runs on CPU"),
        "{report}"
    );
    let plan_path = scratch("conversion-plan.json");
    let out = run(&["plan", arg(&doc), "--format", "json", "-o", arg(&plan_path)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
    assert_eq!(
        plan["node_tags"]["aten_index_put_default"],
        serde_json::Value::Null
    );
    let decided: Vec<&serde_json::Value> = (plan["explanations"].as_array().unwrap().iter())
        .filter(|e| e["rule"] == "CONVERTIBLE" && e["scope"] == "plan" && e["kind"] == "decision")
        .collect();
    assert_eq!(decided.len(), 4, "{decided:#?}"); // the decomposed op, two refusals, the buffer

    let page = scratch("conversion-map.html");
    let out = run(&["render", arg(&doc), "-o", arg(&page)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("data-rule=\"CONVERTIBLE\""),
        "the map shows the decisions"
    );
    let again = scratch("conversion-map-again.html");
    let out = run(&[
        "render",
        arg(&doc),
        "--plan",
        arg(&plan_path),
        "-o",
        arg(&again),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&again).unwrap() == html);
}

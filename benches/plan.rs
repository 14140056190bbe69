//! End to end (parse, analyse, plan, emit JSON) on the graphs in data/ and on a synthetic stack of
//! decoder-like layers, each with a KV cache updated by index_put and an unsupported op.
//! `cargo bench --bench plan`; figures in docs/performance.md.

use criterion::{Criterion, criterion_group, criterion_main};
use partition_planner::analyse::analyse;
use partition_planner::build::BridgeBuilder;
use partition_planner::import::parse_graph;
use partition_planner::plan::{PlanRequest, plan};
use partition_planner::report::plan_json;
use std::hint::black_box;

/// About 25 nodes a layer: attention reading and updating a KV cache, an MLP, one CPU-only op.
fn decoder_stack(layers: usize) -> String {
    let mut b = BridgeBuilder::new();
    b.user_input("x", &[1, 64]).user_input("pos", &[1]);
    for l in 0..layers {
        b.buffer(
            &format!("b_k{l}"),
            &format!("layers.{l}.k_cache"),
            &[1, 128, 64],
        );
        b.parameter(&format!("wq{l}"), &[64, 64]);
    }
    let mut h = "x".to_string();
    for l in 0..layers {
        let n = |s: &str| format!("l{l}_{s}");
        b.op(&n("norm"), "aten.rms_norm.default", &[&h], true)
            .op(
                &n("q"),
                "aten.mm.default",
                &[&n("norm"), &format!("wq{l}")],
                true,
            )
            .op(
                &n("k"),
                "aten.mm.default",
                &[&n("norm"), &format!("wq{l}")],
                true,
            )
            .op(
                &n("kcache"),
                "aten.index_put.default",
                &[&format!("b_k{l}"), "pos", &n("k")],
                true,
            )
            .mutates(&n("kcache"), &format!("layers.{l}.k_cache"))
            .op(
                &n("scores"),
                "aten.bmm.default",
                &[&n("q"), &n("kcache")],
                true,
            )
            .op(&n("soft"), "aten._softmax.default", &[&n("scores")], true)
            .op(
                &n("attn"),
                "aten.bmm.default",
                &[&n("soft"), &n("kcache")],
                true,
            )
            .op(&n("res"), "aten.add.Tensor", &[&h, &n("attn")], true);
        let mut m = n("res");
        for i in 0..14 {
            let name = n(&format!("mlp{i}"));
            // One op a layer Core ML cannot run splits the delegate.
            let supported = i != 7;
            b.op(&name, "aten.mul.Tensor", &[&m], supported)
                .meta(&[1, 64], "float32");
            m = name;
        }
        b.op(&n("out"), "aten.add.Tensor", &[&n("res"), &m], true);
        h = n("out");
    }
    b.option("minimum_deployment_target", serde_json::json!("iOS18"));
    b.output(&[&h]);
    b.to_json()
}

fn end_to_end(text: &str) -> usize {
    let graph = parse_graph(text).expect("imports");
    let analysis = analyse(&graph);
    let mut request = PlanRequest::new(&graph);
    request.verify = false;
    let plan = plan(&graph, &analysis, &request).expect("plans");
    serde_json::to_string(&plan_json(&graph, &analysis, &plan))
        .map(|s| s.len())
        .unwrap_or(0)
}

fn benches(c: &mut Criterion) {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/data/executorch-1.5.1");
    let mut files: Vec<_> = std::fs::read_dir(data)
        .expect("data/")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    files.sort();
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
    {
        let text = std::fs::read_to_string(path).expect("readable");
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("graph");
        c.bench_function(&format!("plan end to end/{name}"), |b| {
            b.iter(|| end_to_end(black_box(&text)))
        });
    }
    let mut group = c.benchmark_group("plan end to end/decoder stack");
    group.sample_size(10);
    for layers in [400, 4000] {
        let text = decoder_stack(layers);
        let nodes = parse_graph(&text).map(|g| g.len()).unwrap_or(0);
        group.bench_function(format!("{nodes} nodes"), |b| {
            b.iter(|| end_to_end(black_box(&text)))
        });
    }
    group.finish();
}

criterion_group!(plan_benches, benches);
criterion_main!(plan_benches);

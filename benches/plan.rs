//! End to end (parse, analyse, plan, emit plan JSON) on the graphs in data/ and on generated
//! LLM-shaped graphs of 10^4, 10^5 and 10^6 nodes; planning alone and what-if changes on 10^5
//! nodes; the checker on 10^6 generated nodes and on many buffers with long mutation chains.
//! `cargo bench --bench plan`; figures in docs/performance.md.

use criterion::{Criterion, criterion_group, criterion_main};
use partition_planner::analyse::analyse;
use partition_planner::import::parse_graph;
use partition_planner::options::DeploymentTarget;
use partition_planner::outcome::Verdict;
use partition_planner::pipeline::Session;
use partition_planner::pipeline::plan;
use partition_planner::pipeline::verify;
use partition_planner::plan::PlanRequest;
use partition_planner::report::plan_json;
use partition_planner::schema::GRAPH_SCHEMA;
use partition_planner::synthetic::generate;
use partition_planner::whatif::Change;
use std::hint::black_box;
use std::time::Duration;

#[path = "../tests/common/data.rs"]
#[allow(dead_code)] // the bench reads one version
mod data;

/// What `partition-planner plan --format json` does, minus the file system and the checker (whose
/// cost the stages example reports apart).
fn end_to_end(text: &str) -> usize {
    let graph = parse_graph(text).expect("imports");
    let analysis = analyse(&graph);
    let request = PlanRequest::new(&graph);
    let plan = plan(&graph, &analysis, &request).expect("plans");
    serde_json::to_string(&plan_json(&graph, &analysis, &plan, &Verdict::default()))
        .map(|s| s.len())
        .unwrap_or(0)
}

fn data_graphs(c: &mut Criterion) {
    let files = data::documents("1.5.1");
    for path in files {
        let text = std::fs::read_to_string(&path).expect("readable");
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("graph");
        c.bench_function(&format!("plan end to end/{name}"), |b| {
            b.iter(|| end_to_end(black_box(&text)))
        });
    }
}

/// The seed every generated benchmark graph uses: its mix has all four layer kinds (attention,
/// gated delta-net, short convolution, mixture of experts).
const SEED: u64 = 12;

fn generated_graphs(c: &mut Criterion) {
    let mut group = c.benchmark_group("plan end to end/generated");
    group.sample_size(10);
    for nodes in [10_000, 100_000, 1_000_000] {
        let text = generate(nodes, SEED).expect("generates");
        if nodes >= 1_000_000 {
            group.measurement_time(Duration::from_secs(30));
        }
        group.bench_function(format!("{nodes} nodes"), |b| {
            b.iter(|| end_to_end(black_box(&text)))
        });
    }
    group.finish();
}

/// The planning stage alone (the graph parsed and analysed once): what the cost model's search
/// adds, with take-over as the document says (on), off (every buffer searched), and off below
/// iOS18 (where partitions without runtime inputs are also re-planned).
fn planning(c: &mut Criterion) {
    let text = generate(100_000, SEED).expect("generates");
    let graph = parse_graph(&text).expect("imports");
    let analysis = analyse(&graph);
    let mut group = c.benchmark_group("plan only/100000 nodes");
    let cases: [(&str, bool, bool); 3] = [
        ("take-over on", true, true),
        ("take-over off", false, true),
        ("take-over off, iOS17", false, false),
    ];
    for (name, take_over, ios18) in cases {
        let mut request = PlanRequest::new(&graph);
        request.options.take_over_mutable_buffer = take_over;
        if !ios18 {
            request.options.minimum_deployment_target = Some(DeploymentTarget::Ios17);
        }
        bench_plan(&mut group, name, &graph, &analysis, &request);
    }
    // Budgets (issue #17: at most twice the time without them, take-over on): a third of the
    // largest partition's ops, or of its constant bytes, so that the large partitions are cut.
    let unbudgeted = plan(&graph, &analysis, &PlanRequest::new(&graph)).expect("plans");
    let largest = |figure: fn(&partition_planner::measure::PartitionSummary) -> u64| {
        unbudgeted
            .draft
            .measure
            .partitions
            .iter()
            .map(figure)
            .max()
            .unwrap_or(3)
    };
    type SetBudget = fn(&mut PlanRequest, u64);
    let budgets: [(&str, SetBudget, u64); 2] = [
        (
            "take-over on, max_ops a third of the largest partition",
            |r, v| r.options.max_ops = Some(v),
            largest(|p| p.nodes as u64) / 3,
        ),
        (
            "take-over on, max_weight_bytes a third of the largest partition",
            |r, v| r.options.max_weight_bytes = Some(v),
            largest(|p| p.weight_bytes) / 3,
        ),
    ];
    for (name, set, value) in budgets {
        let mut request = PlanRequest::new(&graph);
        set(&mut request, value);
        let planned = plan(&graph, &analysis, &request).expect("plans");
        assert!(!planned.draft.cuts.is_empty(), "{name}: nothing cut");
        bench_plan(&mut group, name, &graph, &analysis, &request);
    }
    group.finish();
}

/// Times planning `request` on a graph parsed and analysed once.
fn bench_plan(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    graph: &partition_planner::graph::Graph,
    analysis: &partition_planner::analyse::Analysis,
    request: &PlanRequest,
) {
    group.bench_function(name, |b| {
        b.iter(|| {
            plan(graph, analysis, black_box(request))
                .expect("plans")
                .draft
                .measure
                .partitions
                .len()
        })
    });
}

fn what_if(c: &mut Criterion) {
    let text = generate(100_000, SEED).expect("generates");
    let graph = parse_graph(&text).expect("imports");
    let request = PlanRequest::new(&graph);
    let session = Session::new(graph, request).expect("plans");
    let mut group = c.benchmark_group("what-if/100000 nodes");
    for change in [
        "take-over=off",
        "target=iOS17",
        "op-supported=llama.gated_delta_rule.default",
        "strategy=io",
    ] {
        let change: Change = change.parse().expect("a change");
        group.bench_function(change.to_string(), |b| {
            b.iter(|| {
                // The plan and its diff, unchecked: the checker has a group of its own.
                let request = session
                    .request(black_box(std::slice::from_ref(&change)))
                    .expect("a request");
                session.answer(&request).expect("answers").1.delegate_calls
            })
        });
    }
    group.finish();
}

/// `buffers` KV-cache-like buffers, each updated through a chain of `length` ops that read the
/// buffer's last value and a shared input, ending in a writer the output returns: the worst case
/// for a search along each buffer's chain. Written as text: a million nodes as JSON values would
/// take gigabytes.
fn chains(buffers: usize, length: usize) -> String {
    use std::fmt::Write;
    let meta = r#""meta":{"shape":[1,8],"dtype":"float32"}"#;
    let mut nodes = format!(r#"{{"name":"x","op":"placeholder","target":"x","args":[],{meta}}}"#);
    let (mut to_buffers, mut to_mutate, mut returned) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..buffers {
        let _ = write!(
            nodes,
            r#",{{"name":"b_cache_{i}","op":"placeholder","target":"b_cache_{i}","args":[],{meta}}}"#
        );
        to_buffers.push(format!(r#""b_cache_{i}":"cache_{i}""#));
        let mut last = format!("b_cache_{i}");
        for step in 0..length {
            let _ = write!(
                nodes,
                r#",{{"name":"op_{i}_{step}","op":"call_function","target":"aten.add.Tensor","args":[{{"node":"{last}"}},{{"node":"x"}}],"supported":true,{meta}}}"#
            );
            last = format!("op_{i}_{step}");
        }
        let _ = write!(
            nodes,
            r#",{{"name":"write_{i}","op":"call_function","target":"aten.copy.default","args":[{{"node":"b_cache_{i}"}},{{"node":"{last}"}}],"supported":true,{meta}}}"#
        );
        to_mutate.push(format!(r#""write_{i}":"cache_{i}""#));
        returned.push(format!(r#"{{"node":"write_{i}"}}"#));
    }
    let _ = write!(
        nodes,
        r#",{{"name":"output","op":"output","target":"output","args":[[{}]]}}"#,
        returned.join(",")
    );
    format!(
        r#"{{"schema":"{GRAPH_SCHEMA}","nodes":[{nodes}],"graph_signature":{{"inputs_to_parameters":{{}},"inputs_to_buffers":{{{}}},"inputs_to_lifted_tensor_constants":{{}},"buffers_to_mutate":{{{}}},"user_inputs":["x"],"user_outputs":[]}}}}"#,
        to_buffers.join(","),
        to_mutate.join(",")
    )
}

/// The checker as the CLI runs it (`verify`: the plan against every rule and its claims, and the
/// stock proposal), on graphs of 10^6 nodes; docs/performance.md.
fn checking(c: &mut Criterion) {
    let mut group = c.benchmark_group("check");
    group.sample_size(10);
    let graphs = [
        (
            "generated, 1000000 nodes",
            generate(1_000_000, SEED).expect("generates"),
        ),
        ("1000 buffers x chains of 1000", chains(1000, 1000)),
        ("10 buffers x chains of 100000", chains(10, 100_000)),
    ];
    for (name, text) in graphs {
        let graph = parse_graph(&text).expect("imports");
        drop(text);
        let analysis = analyse(&graph);
        let request = PlanRequest::new(&graph);
        let plan = plan(&graph, &analysis, &request).expect("plans");
        group.bench_function(name, |b| {
            b.iter(|| verify(black_box(&graph), &plan, &request).plan.len())
        });
    }
    group.finish();
}

criterion_group!(
    plan_benches,
    checking,
    data_graphs,
    generated_graphs,
    planning,
    what_if
);
criterion_main!(plan_benches);

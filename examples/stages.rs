//! Times each stage once on one graph: `cargo run --release --example stages -- GRAPH.json`.
use partition_planner::analyse::analyse;
use partition_planner::check::check;
use partition_planner::import::parse_graph;
use partition_planner::plan::{PlanRequest, plan};
use partition_planner::report::plan_json;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: stages GRAPH.json");
    let text = std::fs::read_to_string(&path).expect("readable");
    let t = Instant::now();
    let graph = parse_graph(&text).expect("imports");
    println!(
        "parse    {:>10.1} ms  ({} nodes)",
        t.elapsed().as_secs_f64() * 1e3,
        graph.len()
    );
    let t = Instant::now();
    let analysis = analyse(&graph);
    println!(
        "analyse  {:>10.1} ms  ({} buffers)",
        t.elapsed().as_secs_f64() * 1e3,
        analysis.buffers.len()
    );
    let mut request = PlanRequest::new(&graph);
    request.verify = false;
    let t = Instant::now();
    let p = plan(&graph, &analysis, &request).expect("plans");
    println!(
        "plan     {:>10.1} ms  ({} partitions)",
        t.elapsed().as_secs_f64() * 1e3,
        p.measure.partitions.len()
    );
    let t = Instant::now();
    let s = serde_json::to_string(&plan_json(&graph, &analysis, &p)).expect("serializes");
    println!(
        "emit     {:>10.1} ms  ({} bytes)",
        t.elapsed().as_secs_f64() * 1e3,
        s.len()
    );
    if std::env::args().nth(2).as_deref() == Some("--check") {
        let t = Instant::now();
        let f = check(&graph, &p.tagging, &p.options, &request.supported);
        println!(
            "check    {:>10.1} ms  ({} findings)",
            t.elapsed().as_secs_f64() * 1e3,
            f.len()
        );
    }
}

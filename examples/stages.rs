//! Times each stage on one graph:
//! `cargo run --release --example stages -- GRAPH.json [--check] [--repeat N]`.
//! With `--repeat N` each stage's figure is the median of N runs (this machine is noisy).
use partition_planner::analyse::analyse;
use partition_planner::check::check;
use partition_planner::import::parse_graph;
use partition_planner::plan::{PlanRequest, plan};
use partition_planner::report::plan_json;
use std::time::Instant;

const STAGES: [&str; 6] = ["parse", "analyse", "plan", "emit", "drop", "check"];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .first()
        .expect("usage: stages GRAPH.json [--check] [--repeat N]");
    let with_check = args.iter().any(|a| a == "--check");
    let repeat: usize = args
        .iter()
        .position(|a| a == "--repeat")
        .and_then(|i| args.get(i + 1))
        .map_or(1, |n| n.parse().expect("--repeat takes a count"));
    let text = std::fs::read_to_string(path).expect("readable");
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); STAGES.len()];
    let mut sizes = [0usize; STAGES.len()];
    for _ in 0..repeat {
        let mut lap = {
            let mut t = Instant::now();
            move || {
                let ms = t.elapsed().as_secs_f64() * 1e3;
                t = Instant::now();
                ms
            }
        };
        let graph = parse_graph(&text).expect("imports");
        times[0].push(lap());
        sizes[0] = graph.len();
        let analysis = analyse(&graph);
        times[1].push(lap());
        sizes[1] = analysis.buffers.len();
        let mut request = PlanRequest::new(&graph);
        request.verify = false;
        let _ = lap();
        let p = plan(&graph, &analysis, &request).expect("plans");
        times[2].push(lap());
        sizes[2] = p.measure.partitions.len();
        let s = serde_json::to_string(&plan_json(&graph, &analysis, &p)).expect("serializes");
        times[3].push(lap());
        sizes[3] = s.len();
        if with_check {
            let f = check(&graph, &p.tagging, &p.options, &request.supported);
            times[5].push(lap());
            sizes[5] = f.len();
        }
        drop((s, p, analysis, request));
        let _ = lap();
        drop(graph);
        times[4].push(lap());
    }
    let units = ["nodes", "buffers", "partitions", "bytes", "", "findings"];
    for (i, stage) in STAGES.iter().enumerate() {
        let t = &mut times[i];
        if t.is_empty() {
            continue;
        }
        t.sort_by(f64::total_cmp);
        let what = if units[i].is_empty() {
            String::new()
        } else {
            format!("  ({} {})", sizes[i], units[i])
        };
        println!("{stage:<8} {:>10.1} ms{what}", t[t.len() / 2]);
    }
}

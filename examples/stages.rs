//! Times each stage on one graph:
//! `cargo run --release --example stages -- GRAPH.json [--check] [--repeat N]`.
//! With `--repeat N` each stage's figure is the median of N runs (this machine is noisy). `--check`
//! runs the checker on the plan and on the stock proposal, as the CLI does, before the plan is emitted.
use partition_planner::report::plan_json;
use partition_planner::stock::{ExecutorchVersion, reproduce};
use partition_planner::{PlanRequest, Verdict, analyse, parse_graph, plan, verify};
use std::time::Instant;

const STAGES: [&str; 7] = ["parse", "analyse", "plan", "emit", "drop", "check", "stock"];

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
        // The stock proposal reproduced (what an untagged document's plan is compared with).
        let supported: Vec<bool> = graph.nodes.iter().map(|n| n.supported).collect();
        let proposal = reproduce(
            &graph,
            analysis.index.as_ref(),
            ExecutorchVersion::LATEST,
            &graph.options,
            &supported,
        );
        times[6].push(lap());
        sizes[6] = proposal.partition_count();
        let request = PlanRequest::new(&graph);
        let _ = lap();
        let p = plan(&graph, &analysis, &request).expect("plans");
        times[2].push(lap());
        sizes[2] = p.draft.measure.partitions.len();
        let verdict = if with_check {
            let v = verify(&graph, &p, &request);
            times[5].push(lap());
            sizes[5] = v.plan.len() + v.stock.len();
            v
        } else {
            Verdict::default()
        };
        let s =
            serde_json::to_string(&plan_json(&graph, &analysis, &p, &verdict)).expect("serializes");
        times[3].push(lap());
        sizes[3] = s.len();
        drop((s, p, verdict, analysis, request));
        let _ = lap();
        drop(graph);
        times[4].push(lap());
    }
    let units = [
        "nodes",
        "buffers",
        "partitions",
        "bytes",
        "",
        "findings",
        "partitions",
    ];
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

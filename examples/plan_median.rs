//! The planning stage alone, repeated: `cargo run --release --example plan_median -- GRAPH.json
//! on|off [below-ios18]` prints the median of 21 plans in milliseconds (the graph parsed and
//! analysed once, no verification), with take-over on or off and, when asked, the converter's
//! default target. Two builds run in turn give a paired comparison on a noisy machine.

use partition_planner::{PlanRequest, analyse, parse_graph, plan};
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(take_over)) = (args.first(), args.get(1)) else {
        eprintln!("usage: plan_median GRAPH.json on|off [below-ios18]");
        return ExitCode::from(2);
    };
    let graph = match std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|text| parse_graph(&text).map_err(|e| e.to_string()))
    {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    let analysis = analyse(&graph);
    let mut request = PlanRequest::new(&graph);
    request.options.take_over_mutable_buffer = take_over == "on";
    if args.get(2).is_some_and(|a| a == "below-ios18") {
        request.options.minimum_deployment_target = None;
    }
    let mut ms: Vec<f64> = (0..21)
        .map(|_| {
            let start = Instant::now();
            let planned = plan(&graph, &analysis, &request);
            std::hint::black_box(planned.is_ok());
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    println!("{:.2}", ms[ms.len() / 2]);
    ExitCode::SUCCESS
}

//! Parses one graph three times (or RUNS) and prints each parse's time: the importer alone, for
//! comparing readers and profiling (docs/performance.md).
//! `cargo run --release --example parse_only -- GRAPH.json [RUNS]`
fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: parse_only GRAPH.json");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    let runs: usize = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    for _ in 0..runs {
        let start = std::time::Instant::now();
        match partition_planner::parse_graph(&text) {
            Ok(graph) => eprintln!(
                "{:.1} ms, {} nodes",
                start.elapsed().as_secs_f64() * 1e3,
                graph.len()
            ),
            Err(e) => {
                eprintln!("{path}: {e}");
                std::process::exit(2);
            }
        }
    }
}

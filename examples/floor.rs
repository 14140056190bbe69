use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    for _ in 0..3 {
        let t = Instant::now();
        let _: serde::de::IgnoredAny = serde_json::from_str(&text).unwrap();
        println!("ignored   {:>8.1} ms", t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let g = partition_planner::import::parse_graph(&text).unwrap();
        println!("parse     {:>8.1} ms", t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        drop(g);
        println!("drop      {:>8.1} ms", t.elapsed().as_secs_f64() * 1e3);
    }
}

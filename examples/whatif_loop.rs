use partition_planner::import::parse_graph;
use partition_planner::plan::PlanRequest;
use partition_planner::whatif::{Change, Session};
use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let graph = parse_graph(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut request = PlanRequest::new(&graph);
    request.verify = false;
    let s = Session::new(graph, request).unwrap();
    let change: Change = std::env::args()
        .nth(2)
        .unwrap_or("take-over=off".into())
        .parse()
        .unwrap();
    let mut times = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        let a = s.what_if(std::slice::from_ref(&change)).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(a);
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("median {:.2} ms", times[25]);
    let (mut tr, mut tp, mut td) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..50 {
        let t = Instant::now();
        let r = s.request(std::slice::from_ref(&change)).unwrap();
        tr.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let p = partition_planner::plan::plan(&s.graph, &s.analysis, &r).unwrap();
        tp.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let d = partition_planner::whatif::diff(&s.graph, &s.base, &p);
        td.push(t.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(d);
    }
    for (name, mut v) in [("request", tr), ("plan", tp), ("diff", td)] {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!("{name} {:.2} ms", v[25]);
    }
}

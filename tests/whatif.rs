//! What-if questions on the real Qwen3.5 graphs in data/, answered from one analysis each.

use partition_planner::Session;
use partition_planner::graph::Graph;
use partition_planner::import::parse_graph;
use partition_planner::plan::{PlanRequest, Strategy, StrategyRequest};
use partition_planner::whatif::Change;

fn load(name: &str) -> Graph {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name);
    parse_graph(&std::fs::read_to_string(&path).expect("readable")).expect("imports")
}

#[test]
fn if_core_ml_ran_the_gated_delta_rule_the_recurrent_states_would_be_states() {
    let g = load("executorch-1.5.1/qwen3_5_0_8b_takeover_on_ios18.json");
    let request = PlanRequest::new(&g);
    let s = Session::new(g, request).unwrap();
    assert_eq!(s.base.draft.measure.states(), 30);
    let answer = s
        .what_if(&[Change::OpSupported {
            target: "llama.gated_delta_rule.default".into(),
            supported: true,
        }])
        .unwrap();
    assert_eq!(answer.verdict.violations().count(), 0);
    let d = &answer.diff;
    assert_eq!(d.states_gained.len(), 18);
    assert!(
        d.states_gained
            .iter()
            .all(|b| b.ends_with("recurrent_state"))
    );
    assert!(d.states_lost.is_empty());
    assert!(
        d.delegate_calls < 0,
        "fewer delegate calls: {}",
        d.delegate_calls
    );
    assert!(d.delegated_nodes > 0);
}

#[test]
fn on_executorch_1_4_with_take_over_off_io_would_be_one_delegate_call() {
    let g = load("executorch-1.4.0/qwen3_5_0_8b_takeover_off_ios18.json");
    let request = PlanRequest::new(&g);
    let s = Session::new(g, request).unwrap();
    let base_calls = s.base.draft.measure.partitions.len() as i64;
    let answer = s
        .what_if(&[Change::Strategy {
            buffer: None,
            strategy: StrategyRequest::Fixed(Strategy::Io),
        }])
        .unwrap();
    assert_eq!(answer.verdict.violations().count(), 0);
    assert_eq!(answer.diff.delegate_calls, 1 - base_calls);
    assert!(answer.diff.states_gained.is_empty() && answer.diff.states_lost.is_empty());
    // And back: the same question answered again from the same session gives the base plan.
    assert!(s.what_if(&[]).unwrap().diff.is_empty());
}

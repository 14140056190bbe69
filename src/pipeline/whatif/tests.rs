use super::*;
use crate::fixtures::{load, seed_graph};
use crate::options::DeploymentTarget;
use crate::plan::Strategy;
use crate::plan::StrategyRequest;
use crate::rules::RuleId;
use crate::whatif::{Change, PlanDiff, WhatIf, parse_scenarios};

fn session(graph: Graph) -> Session {
    let mut request = PlanRequest::new(&graph);
    request.options.minimum_deployment_target = Some(DeploymentTarget::Ios18);
    Session::new(graph, request).expect("plans")
}

fn ask(s: &Session, changes: &[Change]) -> WhatIf {
    let answer = s.what_if(changes).expect("answers");
    let broken: Vec<String> = answer
        .verdict
        .violations()
        .map(|f| crate::report::explain(&s.graph, f).to_string())
        .collect();
    assert!(broken.is_empty(), "{broken:#?}");
    answer
}

fn moved(s: &Session, d: &PlanDiff) -> Vec<String> {
    d.nodes_moved
        .iter()
        .map(|m| s.graph.name(m.node).to_string())
        .collect()
}

#[test]
fn no_change_is_no_difference() {
    let s = session(load(&seed_graph()));
    assert!(ask(&s, &[]).diff.is_empty());
    // Asking for what auto already chose changes nothing either.
    let same = ask(
        &s,
        &[Change::Strategy {
            buffer: Some("cache".into()),
            strategy: StrategyRequest::Fixed(Strategy::State),
        }],
    );
    assert!(same.diff.is_empty(), "{:?}", same.diff);
}

#[test]
fn take_over_off_loses_the_state_and_moves_the_chain() {
    let s = session(load(&seed_graph()));
    assert_eq!(s.base.draft.measure.states(), 1);
    // auto passes the buffer through the one delegate: the state is lost, nothing moves, and the
    // buffer now crosses in and out.
    let d = ask(&s, &[Change::TakeOverMutableBuffer(false)]).diff;
    assert_eq!(d.states_lost, ["cache"]);
    assert!(d.states_gained.is_empty() && d.nodes_moved.is_empty());
    assert_eq!((d.delegate_calls, d.delegated_nodes), (0, 0));
    assert!(d.boundary_bytes > 0);
    // Asked to run the chain on CPU, it leaves the delegate.
    let d = ask(
        &s,
        &[
            Change::TakeOverMutableBuffer(false),
            Change::Strategy {
                buffer: None,
                strategy: StrategyRequest::Fixed(Strategy::Cpu),
            },
        ],
    )
    .diff;
    assert_eq!(d.states_lost, ["cache"]);
    // The chain leaves the delegate; `unsq` stays delegated but in a call of its own, apart from the
    // partition that inherits the old one's `sum` and `out`.
    assert_eq!(
        moved(&s, &d),
        ["mul", "scatter0", "unsq", "add", "copy", "scatter1"]
    );
    assert_eq!((d.delegate_calls, d.delegated_nodes), (1, -5));
    // The old partition split in two: both halves share nodes with it, so neither is "added".
    let changed: Vec<(&str, &str)> = d
        .partitions_changed
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(changed, [("tag0", "tag0"), ("tag0", "tag1")]);
    assert!(d.partitions_added.is_empty() && d.partitions_removed.is_empty());
}

#[test]
fn an_op_made_unsupported_and_a_node_kept_on_cpu() {
    let s = session(load(&seed_graph()));
    let a = ask(
        &s,
        &[Change::OpSupported {
            target: "aten.copy.default".into(),
            supported: false,
        }],
    );
    assert_eq!(a.plan.draft.buffers[0].rule, Some(RuleId::Supported));
    assert_eq!(a.diff.states_lost, ["cache"]);
    let b = ask(&s, &[Change::NodeOnCpu { node: "sum".into() }]);
    assert_eq!(b.plan.draft.tagging.tag(s.graph.find("sum").unwrap()), None);
    assert!(
        b.diff.states_lost.is_empty(),
        "sum reads the new value only: the state stays"
    );
    assert!(moved(&s, &b.diff).contains(&"sum".to_string()));
    // Changes apply in order: supported again after being made unsupported.
    let c = ask(
        &s,
        &[
            Change::NodeSupported {
                node: "copy".into(),
                supported: false,
            },
            Change::NodeSupported {
                node: "copy".into(),
                supported: true,
            },
        ],
    );
    assert!(c.diff.is_empty());
}

#[test]
fn unknown_names_are_errors() {
    let s = session(load(&seed_graph()));
    assert_eq!(
        s.what_if(&[Change::NodeOnCpu {
            node: "ghost".into()
        }])
        .err(),
        Some(WhatIfError::UnknownNode("ghost".into()))
    );
    assert_eq!(
        s.what_if(&[Change::OpSupported {
            target: "aten.nope.default".into(),
            supported: true
        }])
        .err(),
        Some(WhatIfError::UnknownOp("aten.nope.default".into()))
    );
    let unknown = Change::Strategy {
        buffer: Some("nope".into()),
        strategy: StrategyRequest::Auto,
    };
    assert!(matches!(
        s.what_if(&[unknown]),
        Err(WhatIfError::Plan(PlanError::UnknownBuffer { .. }))
    ));
}

#[test]
fn changes_read_and_print_the_same_spelling() {
    for text in [
        "take-over=off",
        "take-over=on",
        "target=iOS17",
        "target=default",
        "strategy=io",
        "strategy=layers.0.conv_state=cpu",
        "op-supported=llama.gated_delta_rule.default",
        "op-unsupported=aten.mul.Tensor",
        "node-supported=getitem_3",
        "node-unsupported=aten_add_tensor",
        "cpu=aten_mul_tensor_7",
        "cost=call_overhead_us=50,bytes_per_us=0.5",
        "cost=cpu_op_us=2",
    ] {
        let change: Change = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(change.to_string(), text);
    }
    for bad in [
        "take-over",
        "take-over=maybe",
        "target=iOS9",
        "strategy=fast",
        "gpu=x",
        "cost=speed=1",
        "cost=bytes_per_us=0",
        "cost=call_overhead_us",
    ] {
        assert!(bad.parse::<Change>().is_err(), "{bad}");
    }
}

#[test]
fn other_cost_constants_can_move_a_chain_and_the_diff_weighs_both_plans_alike() {
    let mut request = PlanRequest::new(&load(&seed_graph()));
    request.options.minimum_deployment_target = Some(DeploymentTarget::Ios18);
    request.options.take_over_mutable_buffer = false;
    let s = Session::new(load(&seed_graph()), request).expect("plans");
    assert_eq!(s.base.draft.buffers[0].strategy, Strategy::Io);
    // Only the constants change, not the plan: no difference, estimated cost included.
    let same = ask(&s, &["cost=call_overhead_us=300".parse().unwrap()]);
    assert!(same.diff.is_empty(), "{:?}", same.diff);
    assert!(same.plan.draft.estimate.total_us > s.base.draft.estimate.total_us);
    // Bytes made costly and calls free: the chain runs on CPU, which is estimated cheaper under
    // the new constants than the base plan is under them.
    let costly: Change = "cost=call_overhead_us=0,bytes_per_us=0.01".parse().unwrap();
    let moved = ask(&s, &[costly]);
    assert_eq!(moved.plan.draft.buffers[0].strategy, Strategy::Cpu);
    assert_eq!(moved.diff.delegate_calls, 1);
    let base_under_new = s.base.draft.estimate.weighed(&moved.plan.draft.cost);
    assert!(moved.diff.estimate_us < 0.0);
    assert_eq!(
        moved.diff.estimate_us,
        moved.plan.draft.estimate.total_us - base_under_new
    );
}

#[test]
fn scenarios_are_read_one_per_line() {
    let text = "# questions\n{\"name\": \"ios17\", \"changes\": [\"target=iOS17\"]}\n\n{\"changes\": [\"take-over=off\", \"strategy=io\"]}\n";
    let scenarios = parse_scenarios(text).unwrap();
    assert_eq!(scenarios.len(), 2);
    assert_eq!(scenarios[0].name, "ios17");
    assert_eq!(scenarios[1].name, "line 4");
    assert_eq!(scenarios[1].changes.len(), 2);
    let err = parse_scenarios("{\"changes\": [\"gpu=on\"]}")
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("line 1: unknown change"), "{err}");
    let err = parse_scenarios("{\"changes\": []").unwrap_err().to_string();
    assert!(
        err.starts_with("line 1: not a scenario, at column"),
        "{err}"
    );
    let err = parse_scenarios("\n[1]").unwrap_err().to_string();
    assert!(
        err.starts_with("line 2: not a scenario, at column 2: "),
        "{err}"
    );
    assert!(
        err.ends_with(
            "(each line is a JSON object such as {\"name\": \"ios17\", \"changes\": [\"target=iOS17\"]})"
        ),
        "{err}"
    );
}

#[test]
fn changes_answer_to_the_flags_names_too() {
    for (flag, key) in [
        ("take-over-mutable-buffer=off", "take-over=off"),
        ("min-target=iOS17", "target=iOS17"),
        ("max-partition-weight-bytes=2GiB", "max-weight-bytes=2GiB"),
        ("max-partition-ops=500", "max-ops=500"),
        ("take-over=true", "take-over=on"),
    ] {
        assert_eq!(flag.parse::<Change>(), key.parse::<Change>(), "{flag}");
    }
}

#[test]
fn a_scenario_that_asks_the_same_of_stock_keeps_the_base_stock_side_and_answers_as_a_fresh_run() {
    // An untagged graph (stock reproduced) and a tagged one (stock as carried).
    let generated = crate::synthetic::generate(3000, 5).expect("generates");
    for graph in [
        crate::import::parse_graph(&generated).expect("imports"),
        load(&seed_graph()),
    ] {
        let s = session(graph);
        for changes in [
            "strategy=io",
            "strategy=cpu",
            "max-ops=40",
            // These ask something else of stock: it is made again.
            "take-over=off",
            "target=iOS17",
            "cost=call_overhead_us=50",
            "op-unsupported=aten.mul.Tensor",
        ] {
            let changes: Vec<Change> = vec![changes.parse().expect(changes)];
            let answer = s.what_if(&changes).expect("answers");
            let request = s.request(&changes).expect("a request");
            let fresh = crate::pipeline::run(&s.graph, &request).expect("plans");
            assert_eq!(answer.plan.stock, fresh.plan.stock, "{changes:?}");
            assert_eq!(answer.verdict, fresh.verdict, "{changes:?}");
            assert_eq!(
                format!("{:?}", answer.plan.draft),
                format!("{:?}", fresh.plan.draft),
                "{changes:?}"
            );
        }
    }
}

use super::*;
use crate::analyse::analyse;
use crate::fixtures::{load, seed_graph};
use crate::options::DeploymentTarget;
use crate::outcome::{Plan, Verdict};
use crate::pipeline::{plan, verify};
use crate::report::Explained;
use crate::report::Prose;
use crate::rules::RuleId;
use crate::synthetic::BridgeBuilder;

/// Plans and runs the checker, as callers do; a violation fails the test.
fn plan_checked(g: &Graph, f: impl FnOnce(&mut PlanRequest)) -> (Plan, Verdict) {
    let mut request = PlanRequest::new(g);
    f(&mut request);
    let plan = plan(g, &analyse(g), &request).expect("plans");
    let verdict = verify(g, &plan, &request);
    let broken: Vec<String> = verdict
        .violations()
        .map(|v| crate::report::explain(g, v).to_string())
        .collect();
    assert!(
        broken.is_empty(),
        "the checker rejects the plan: {broken:#?}"
    );
    (plan, verdict)
}

fn plan_with(g: &Graph, f: impl FnOnce(&mut PlanRequest)) -> Plan {
    plan_checked(g, f).0
}

/// A buffer's reason in words, as the reports say it.
fn said(g: &Graph, b: &BufferDecision) -> String {
    let analysis = analyse(g);
    Prose::new(g, &analysis).reason(b)
}

/// The plan's decisions as the reports list them.
fn decisions(g: &Graph, p: &Plan) -> Vec<Explained> {
    let analysis = analyse(g);
    Prose {
        graph: g,
        analysis: &analysis,
    }
    .decisions(&p.draft)
}

fn ios18(r: &mut PlanRequest) {
    r.options.minimum_deployment_target = Some(DeploymentTarget::Ios18);
}

fn tag<'a>(g: &Graph, p: &'a Plan, node: &str) -> Option<&'a str> {
    p.draft.tagging.tag(g.find(node).unwrap())
}

#[test]
fn the_seed_at_ios18_keeps_the_whole_chain_as_one_state() {
    let g = load(&seed_graph());
    let p = plan_with(&g, ios18);
    let b = &p.draft.buffers[0];
    assert_eq!(
        (b.strategy, b.partition.as_deref(), b.rule),
        (Strategy::State, Some("tag0"), Some(RuleId::StateWhole))
    );
    assert!(
        said(&g, b).contains("5-node slice-update chain"),
        "{}",
        said(&g, b)
    );
    for n in [
        "b_cache", "c_scale", "mul", "scatter0", "unsq", "add", "copy", "scatter1", "sum", "out",
    ] {
        assert_eq!(tag(&g, &p, n), Some("tag0"), "{n}");
    }
    for n in ["x", "output"] {
        assert_eq!(tag(&g, &p, n), None);
    }
    assert_eq!(
        (p.draft.measure.partitions.len(), p.draft.measure.states()),
        (1, 1)
    );
}

#[test]
fn take_over_off_passes_the_buffer_through_one_delegate_when_that_is_cheapest() {
    let g = load(&seed_graph());
    let p = plan_with(&g, |r| {
        ios18(r);
        r.options.take_over_mutable_buffer = false;
    });
    let b = &p.draft.buffers[0];
    assert_eq!(
        (b.strategy, b.rule),
        (Strategy::Io, Some(RuleId::NoHiddenState))
    );
    // io keeps the one partition the state had; cpu would split it around the chain.
    assert_eq!(tag(&g, &p, "b_cache"), None);
    assert_eq!(
        (p.draft.measure.partitions.len(), p.draft.measure.states()),
        (1, 0)
    );
    let weighed: Vec<(Strategy, usize)> = b
        .alternatives
        .iter()
        .map(|a| (a.strategy, a.estimate.delegate_calls))
        .collect();
    assert_eq!(weighed, [(Strategy::Io, 1), (Strategy::Cpu, 2)]);
    assert!(
        said(&g, b).starts_with("take_over_mutable_buffer is off")
            && said(&g, b).contains("io: 1 partition,")
            && said(&g, b).contains("cpu: 2 partitions,")
            && said(&g, b).ends_with("chose io"),
        "{}",
        said(&g, b)
    );
    assert_eq!(p.draft.estimate, b.alternatives[0].estimate);
    // The plan says what was wrong with the stock proposal (nothing is tagged in the fixture).
    assert!(verify(&g, &p, &PlanRequest::new(&g)).stock.is_empty());
}

#[test]
fn cpu_moves_the_chain_off_the_delegate_and_splits_it() {
    let g = load(&seed_graph());
    let p = plan_with(&g, |r| {
        ios18(r);
        r.options.take_over_mutable_buffer = false;
        r.strategy = StrategyRequest::Fixed(Strategy::Cpu);
    });
    assert_eq!(p.draft.buffers[0].strategy, Strategy::Cpu);
    assert!(p.draft.buffers[0].alternatives.is_empty());
    for n in ["b_cache", "mul", "scatter0", "add", "copy", "scatter1"] {
        assert_eq!(tag(&g, &p, n), None, "{n}");
    }
    assert_eq!(p.draft.measure.states(), 0);
    // unsq runs before the chain, sum and out after it: two delegate calls.
    assert_eq!(tag(&g, &p, "unsq"), Some("tag0"));
    assert_eq!(
        (tag(&g, &p, "sum"), tag(&g, &p, "out")),
        (Some("tag1"), Some("tag1"))
    );
}

/// A 4 MB buffer updated between two delegated ops: under io it crosses into the one delegate and
/// back out; under cpu only its new value crosses, into the second of two delegates.
fn large_buffer_between_two_ops() -> Graph {
    let mut b = BridgeBuilder::new();
    b.user_input("x", &[1024])
        .buffer("p_big", "big", &[1024, 1024])
        .op("h", "aten.relu.default", &["x"], true)
        .meta(&[1024], "float32")
        .op("w", "aten.add.Tensor", &["p_big", "h"], true)
        .meta(&[1024, 1024], "float32")
        .op("y", "aten.sum.dim_IntList", &["w"], true)
        .meta(&[1024], "float32")
        .mutates("w", "big")
        .output(&["y"]);
    load(&b)
}

#[test]
fn auto_chooses_cpu_when_bytes_are_costly_and_says_why() {
    let g = large_buffer_between_two_ops();
    let p = plan_with(&g, |r| {
        ios18(r);
        r.options.take_over_mutable_buffer = false;
        r.cost.bytes_per_us = 100.0;
    });
    let b = &p.draft.buffers[0];
    assert_eq!(b.strategy, Strategy::Cpu, "{}", said(&g, b));
    let io = &b.alternatives[0];
    let cpu = &b.alternatives[1];
    assert_eq!((io.strategy, cpu.strategy), (Strategy::Io, Strategy::Cpu));
    assert!(cpu.estimate.total_us < io.estimate.total_us);
    assert_eq!(
        (io.estimate.delegate_calls, cpu.estimate.delegate_calls),
        (1, 2)
    );
    // io: the old value in, the new value out; cpu: the new value into the second delegate.
    assert_eq!(io.estimate.boundary_bytes, (8 << 20) + 4 * 1024 * 2);
    assert_eq!(cpu.estimate.boundary_bytes, (4 << 20) + 4 * 1024 * 3);
    assert!(said(&g, b).ends_with("chose cpu"), "{}", said(&g, b));
    assert!(said(&g, b).contains("io: "), "{}", said(&g, b));
    // Where bytes are cheap, the same graph keeps one delegate and passes the buffer through.
    let p = plan_with(&g, |r| {
        ios18(r);
        r.options.take_over_mutable_buffer = false;
        r.cost.bytes_per_us = 1e6;
    });
    assert_eq!(
        p.draft.buffers[0].strategy,
        Strategy::Io,
        "{}",
        said(&g, &p.draft.buffers[0])
    );
}

#[test]
fn requested_state_with_take_over_off_is_refused_with_the_rule() {
    let g = load(&seed_graph());
    let p = plan_with(&g, |r| {
        ios18(r);
        r.options.take_over_mutable_buffer = false;
        r.strategy = StrategyRequest::Fixed(Strategy::State);
    });
    assert_eq!(p.draft.buffers[0].strategy, Strategy::Cpu);
    assert!(
        said(&g, &p.draft.buffers[0])
            .starts_with("state was requested, but take_over_mutable_buffer is off")
    );
}

#[test]
fn io_delegates_the_chain_but_not_the_placeholder() {
    let g = load(&seed_graph());
    let p = plan_with(&g, |r| {
        ios18(r);
        r.buffer_strategies
            .push(("cache".into(), StrategyRequest::Fixed(Strategy::Io)));
    });
    assert_eq!(p.draft.buffers[0].strategy, Strategy::Io);
    assert_eq!(tag(&g, &p, "b_cache"), None);
    assert_eq!(tag(&g, &p, "scatter1"), Some("tag0"));
    assert_eq!(p.draft.measure.states(), 0);
    let part = &p.draft.measure.partitions[0];
    assert!(part.inputs.contains(&g.find("b_cache").unwrap()));
    assert!(part.outputs.contains(&g.find("scatter1").unwrap()));
}

#[test]
fn an_unknown_buffer_in_a_request_is_an_error() {
    let g = load(&seed_graph());
    let mut r = PlanRequest::new(&g);
    r.buffer_strategies
        .push(("nope".into(), StrategyRequest::Fixed(Strategy::Cpu)));
    let err = plan(&g, &analyse(&g), &r).unwrap_err();
    assert_eq!(
        err,
        PlanError::UnknownBuffer {
            name: "nope".into(),
            known: "cache".into()
        }
    );
    let mut r = PlanRequest::new(&g);
    r.supported.pop();
    assert!(matches!(
        plan(&g, &analyse(&g), &r),
        Err(PlanError::SupportLength { .. })
    ));
}

#[test]
fn a_buffer_may_be_named_by_its_placeholder() {
    let g = load(&seed_graph());
    let p = plan_with(&g, |r| {
        r.buffer_strategies
            .push(("b_cache".into(), StrategyRequest::Fixed(Strategy::Io)))
    });
    assert_eq!(p.draft.buffers[0].strategy, Strategy::Io);
}

/// Two states whose hulls feed each other: keeping both would need a cycle between partitions.
fn crossed_states() -> Graph {
    let mut b = BridgeBuilder::new();
    b.buffer("pa", "a", &[4])
        .buffer("pb", "b", &[4])
        .op("xa", "aten.neg.default", &["pa"], true)
        .op("xb", "aten.neg.default", &["pb"], true)
        .op("wa", "aten.add.Tensor", &["xa", "xb"], true)
        .op("wb", "aten.sub.Tensor", &["xb", "xa"], true)
        .mutates("wa", "a")
        .mutates("wb", "b")
        .output(&[]);
    load(&b)
}

#[test]
fn crossed_states_refuse_one_merge_and_explain_the_path() {
    let g = crossed_states();
    let p = plan_with(&g, ios18);
    assert_eq!(p.draft.buffers[0].strategy, Strategy::State);
    assert_ne!(p.draft.buffers[1].strategy, Strategy::State);
    assert_eq!(p.draft.buffers[1].rule, Some(RuleId::Acyclic));
    let refusal = decisions(&g, &p)
        .into_iter()
        .find(|d| d.rule == RuleId::Acyclic)
        .expect("refusal explained");
    assert!(refusal.path.len() >= 4, "{refusal}");
    assert_eq!(
        refusal.path.first().map(|s| &s.node),
        refusal.path.last().map(|s| &s.node)
    );
}

#[test]
fn a_multi_output_op_follows_its_unsupported_getitem() {
    let mut b = BridgeBuilder::new();
    b.user_input("x", &[4])
        .op("split", "aten.split_with_sizes_copy.default", &["x"], true)
        .op_with("g0", "getitem", &["split"], &[0.into()], true)
        .op_with("g1", "getitem", &["split"], &[1.into()], false)
        .op("use0", "aten.neg.default", &["g0"], true)
        .output(&["use0", "g1"]);
    let g = load(&b);
    let p = plan_with(&g, |_| {});
    for n in ["split", "g0", "g1"] {
        assert_eq!(tag(&g, &p, n), None, "{n}");
    }
    assert_eq!(tag(&g, &p, "use0"), Some("tag0"));
}

#[test]
fn constants_take_the_smallest_user_tag_or_none_without_take_over() {
    let mut b = BridgeBuilder::new();
    b.parameter("w", &[4, 4])
        .user_input("x", &[4])
        .op("a", "aten.mm.default", &["x", "w"], true)
        .op("cpu", "aten.nonzero.default", &["a"], false)
        .op("b", "aten.mm.default", &["cpu", "w"], true)
        .output(&["b"]);
    let g = load(&b);
    let (p, verdict) = plan_checked(&g, |_| {});
    assert_eq!(
        (tag(&g, &p, "a"), tag(&g, &p, "b"), tag(&g, &p, "w")),
        (Some("tag0"), Some("tag1"), Some("tag0"))
    );
    assert_eq!(p.draft.measure.constant_copies.len(), 1);
    assert!(
        verdict
            .plan
            .iter()
            .any(|f| f.rule == RuleId::ConstantSharing && f.bytes == Some(64))
    );
    let p = plan_with(&g, |r| r.options.take_over_constant_data = false);
    assert_eq!(tag(&g, &p, "w"), None);
    assert!(p.draft.measure.constant_copies.is_empty());
}

#[test]
fn delegate_nodes_with_no_cpu_node_between_them_share_a_partition() {
    // c reads only x, so a, d and e can all be one delegate call although c splits d off.
    let build = |c_input: &str| {
        let mut b = BridgeBuilder::new();
        b.user_input("x", &[4])
            .op("a", "aten.neg.default", &["x"], true)
            .op("c", "aten.nonzero.default", &[c_input], false)
            .op("d", "aten.neg.default", &["c"], true)
            .op("e", "aten.sin.default", &["x"], true)
            .output(&["a", "d", "e"]);
        load(&b)
    };
    let g = build("x");
    let p = plan_with(&g, |_| {});
    assert_eq!(
        (tag(&g, &p, "a"), tag(&g, &p, "e"), tag(&g, &p, "d")),
        (Some("tag0"), Some("tag0"), Some("tag0"))
    );
    // Once c reads a, d comes after a CPU node that comes after a: two calls are the minimum.
    let g = build("a");
    let p = plan_with(&g, |_| {});
    assert_eq!(
        (tag(&g, &p, "a"), tag(&g, &p, "e"), tag(&g, &p, "d")),
        (Some("tag0"), Some("tag0"), Some("tag1"))
    );
}

#[test]
fn below_ios18_a_partition_without_runtime_inputs_runs_on_cpu() {
    // As in the seed's whole-buffer twin: `table`, computed from a weight alone, feeds a CPU op that
    // everything else waits for, so it is a delegate run by itself: a Core ML model without inputs.
    let mut b = BridgeBuilder::new();
    b.parameter("w", &[4, 4])
        .user_input("x", &[4, 4])
        .op("table", "aten.mul.Tensor", &["w", "w"], true)
        .op("gate", "aten.index_put.default", &["x", "table"], false)
        .op("out", "aten.mm.default", &["gate", "x"], true)
        .output(&["out"]);
    let g = load(&b);
    let p = plan_with(&g, |r| {
        r.options.minimum_deployment_target = Some(DeploymentTarget::Ios17)
    });
    assert_eq!(
        (tag(&g, &p, "table"), tag(&g, &p, "out")),
        (None, Some("tag0"))
    );
    let moved = decisions(&g, &p)
        .into_iter()
        .find(|d| d.rule == RuleId::NoInputTarget)
        .expect("explained");
    assert_eq!(moved.nodes, ["table"]);
    // At iOS18 a model without inputs is fine.
    let p = plan_with(&g, ios18);
    assert_eq!(
        (tag(&g, &p, "table"), tag(&g, &p, "out")),
        (Some("tag0"), Some("tag1"))
    );
    // Without take-over of constants the weight is an input: delegated at iOS17 too.
    let p = plan_with(&g, |r| {
        r.options.minimum_deployment_target = Some(DeploymentTarget::Ios17);
        r.options.take_over_constant_data = false;
    });
    assert_eq!(tag(&g, &p, "table"), Some("tag0"));
}

#[test]
fn an_op_fed_by_placeholders_alone_joins_the_partition_of_its_users() {
    // t transposes the weight w and only d reads it: ahead of the CPU op c, it would be computed
    // in tag0 and its value would cross into tag1.
    let mut b = BridgeBuilder::new();
    b.user_input("x", &[4, 4])
        .parameter("w", &[4, 4])
        .op("t", "aten.permute_copy.default", &["w"], true)
        .op("a", "aten.neg.default", &["x"], true)
        .op("c", "aten.nonzero.default", &["a"], false)
        .op("d", "aten.mm.default", &["c", "t"], true)
        .output(&["d"]);
    let g = load(&b);
    let p = plan_with(&g, |_| {});
    assert_eq!(
        (
            tag(&g, &p, "a"),
            tag(&g, &p, "t"),
            tag(&g, &p, "d"),
            tag(&g, &p, "w")
        ),
        (Some("tag0"), Some("tag1"), Some("tag1"), Some("tag1"))
    );
    // Alone before the CPU op, it leaves no empty partition behind.
    let mut b = BridgeBuilder::new();
    b.user_input("x", &[4, 4])
        .parameter("w", &[4, 4])
        .op("t", "aten.permute_copy.default", &["w"], true)
        .op("c", "aten.nonzero.default", &["x"], false)
        .op("d", "aten.mm.default", &["c", "t"], true)
        .output(&["d"]);
    let g = load(&b);
    let p = plan_with(&g, |_| {});
    assert_eq!(p.draft.measure.partitions.len(), 1);
    assert_eq!(
        (tag(&g, &p, "t"), tag(&g, &p, "d")),
        (Some("tag0"), Some("tag0"))
    );
}

mod tied;

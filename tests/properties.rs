//! Property tests: thousands of random graphs with random buffers, support and options are
//! planned, and every plan goes through the independent checker.

mod common;

use common::{Rng, random_graph};
use partition_planner::analyse::{Adjacency, analyse};
use partition_planner::check::check;
use partition_planner::cost::CostModel;
use partition_planner::graph::{Graph, OpKind};
use partition_planner::import::parse_graph;
use partition_planner::options::{DeploymentTarget, Options};
use partition_planner::outcome::Plan;
use partition_planner::pipeline::plan;
use partition_planner::pipeline::verify;
use partition_planner::plan::{PlanRequest, Strategy, StrategyRequest};
use partition_planner::report::{Prose, explain};
use partition_planner::rules::RuleId;
use partition_planner::tagging::Tagging;
use proptest::prelude::*;

fn random_request(graph: &Graph, seed: u64) -> PlanRequest {
    let mut rng = Rng::new(seed ^ 0xABCD);
    let mut r = PlanRequest::new(graph);
    r.options = Options {
        take_over_mutable_buffer: rng.chance(70),
        take_over_constant_data: rng.chance(70),
        minimum_deployment_target: *rng.pick(&[
            None,
            Some(DeploymentTarget::Ios17),
            Some(DeploymentTarget::Ios18),
            Some(DeploymentTarget::Ios18),
        ]),
        ..Options::default()
    };
    let choices = [
        StrategyRequest::Auto,
        StrategyRequest::Auto,
        StrategyRequest::Fixed(Strategy::State),
        StrategyRequest::Fixed(Strategy::Cpu),
        StrategyRequest::Fixed(Strategy::Io),
    ];
    r.strategy = *rng.pick(&choices);
    for b in &graph.signature.mutable_buffers {
        if rng.chance(30) {
            r.buffer_strategies
                .push((b.buffer.clone(), *rng.pick(&choices)));
        }
    }
    r
}

/// The most delegate runs on any path: no convex partitioning of the delegated nodes has fewer
/// partitions.
fn delegate_runs_lower_bound(graph: &Graph, delegated: &[bool]) -> u32 {
    let index = analyse(graph).index;
    let mut runs = vec![0u32; graph.len()];
    let mut best = 0;
    for &n in index.order() {
        let here = delegated[n.index()];
        let mut r = u32::from(here);
        for &q in index.predecessors(n) {
            let extra = u32::from(here && !delegated[q.index()]);
            r = r.max(runs[q.index()] + extra);
        }
        runs[n.index()] = r;
        if here {
            best = best.max(r);
        }
    }
    best
}

/// A stock-like greedy partitioner: in topological order, join a delegated node to the partition
/// of one of its delegated inputs when that stays acyclic (asked of the checker), else open one.
fn greedy_partition_count(graph: &Graph, delegated: &[bool]) -> usize {
    let index = analyse(graph).index;
    let supported: Vec<bool> = vec![true; graph.len()];
    let mut of: Vec<Option<u32>> = vec![None; graph.len()];
    let mut count = 0u32;
    let tagging = |of: &[Option<u32>], count: u32| {
        Tagging::new((0..count).map(|i| format!("g{i}")).collect(), of.to_vec())
    };
    for &n in index.order() {
        if !delegated[n.index()] {
            continue;
        }
        let candidates: Vec<u32> = index
            .predecessors(n)
            .iter()
            .filter_map(|q| of[q.index()])
            .collect();
        let mut placed = false;
        for c in candidates {
            of[n.index()] = Some(c);
            let acyclic = !check(graph, &tagging(&of, count), &Options::default(), &supported)
                .iter()
                .any(|f| f.rule == RuleId::Acyclic);
            if acyclic {
                placed = true;
                break;
            }
        }
        if !placed {
            of[n.index()] = Some(count);
            count += 1;
        }
    }
    count as usize
}

fn check_plan_properties(graph: &Graph, plan: &Plan, request: &PlanRequest, what: &str) {
    let broken: Vec<String> = verify(graph, plan, request)
        .violations()
        .map(|v| explain(graph, v).to_string())
        .collect();
    assert!(
        broken.is_empty(),
        "{what}: the checker rejects the plan: {broken:#?}"
    );
    let states = plan
        .draft
        .buffers
        .iter()
        .filter(|b| b.strategy == Strategy::State)
        .count();
    if !request.options.take_over_mutable_buffer || !request.options.target_allows_states() {
        assert_eq!(states, 0, "{what}");
    }
    let analysis = analyse(graph);
    let prose = Prose {
        graph,
        analysis: &analysis,
    };
    for b in &plan.draft.buffers {
        if b.strategy == Strategy::State {
            assert!(b.rule.is_some(), "{what}");
        }
        assert!(
            !prose.reason(b).is_empty(),
            "{what}: no reason for {}",
            b.buffer
        );
    }
    assert_eq!(
        prose.decisions(&plan.draft).len(),
        plan.draft.decisions.len(),
        "{what}"
    );
    let delegated: Vec<bool> = graph
        .ids()
        .map(|n| {
            graph.node(n).op == OpKind::CallFunction && plan.draft.tagging.partition(n).is_some()
        })
        .collect();
    let bound = delegate_runs_lower_bound(graph, &delegated) as usize;
    let count = plan.draft.measure.partitions.len();
    assert!(count >= bound, "{what}");
    if states == 0 {
        assert_eq!(count, bound, "{what}: more partitions than the lower bound");
        assert!(
            count <= greedy_partition_count(graph, &delegated),
            "{what}: more partitions than the greedy proposal"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_graphs_plan_into_tagging_the_checker_accepts(seed in any::<u64>(), size in 1usize..45) {
        let generated = random_graph(seed, size);
        let graph = parse_graph(&generated.builder.to_json()).expect("generated graphs import");
        let analysis = analyse(&graph);
        let request = random_request(&graph, seed);
        let planned = plan(&graph, &analysis, &request).expect("plans");
        check_plan_properties(&graph, &planned, &request, &generated.description);
        // Deterministic: the same request gives the same tags.
        let again = plan(&graph, &analysis, &request).expect("plans");
        prop_assert_eq!(&planned.draft.tagging, &again.draft.tagging);
    }
}

/// Random options and cost constants, every buffer on auto.
fn random_auto_request(graph: &Graph, seed: u64) -> PlanRequest {
    let mut rng = Rng::new(seed ^ 0x5EED);
    let mut r = PlanRequest::new(graph);
    r.options.take_over_mutable_buffer = rng.chance(50);
    r.options.minimum_deployment_target = *rng.pick(&[
        None,
        Some(DeploymentTarget::Ios17),
        Some(DeploymentTarget::Ios18),
    ]);
    r.cost = CostModel {
        call_overhead_us: *rng.pick(&[0.0, 1.0, 50.0, 200.0, 5000.0]),
        bytes_per_us: *rng.pick(&[0.5, 10.0, 1000.0, 1e6]),
        cpu_op_us: *rng.pick(&[0.0, 1.0, 5.0, 300.0]),
    };
    r
}

fn estimate_with(
    graph: &Graph,
    analysis: &partition_planner::analyse::Analysis,
    request: &PlanRequest,
    strategy_of: impl Fn(usize) -> Strategy,
) -> f64 {
    let mut r = request.clone();
    r.buffer_strategies = graph
        .signature
        .mutable_buffers
        .iter()
        .enumerate()
        .map(|(i, b)| (b.buffer.clone(), StrategyRequest::Fixed(strategy_of(i))))
        .collect();
    plan(graph, analysis, &r)
        .expect("plans")
        .draft
        .estimate
        .total_us
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// auto's plan is never estimated above a uniform assignment: all io, all cpu, all state where
    /// allowed. With take-over on, a buffer that can be a state stays one, so there the uniform io
    /// and cpu assignments are over the buffers that are not states.
    #[test]
    fn auto_is_never_estimated_above_a_uniform_assignment(seed in any::<u64>(), size in 1usize..40) {
        let generated = random_graph(seed, size);
        let graph = parse_graph(&generated.builder.to_json()).expect("generated graphs import");
        let analysis = analyse(&graph);
        let request = random_auto_request(&graph, seed);
        let auto = plan(&graph, &analysis, &request).expect("plans");
        let chosen = auto.draft.estimate.total_us;
        let kept: Vec<bool> = auto.draft.buffers.iter().map(|b| b.strategy == Strategy::State).collect();
        let slack = 1e-6 * chosen.max(1.0);
        for uniform in [Strategy::Io, Strategy::Cpu] {
            let other = estimate_with(&graph, &analysis, &request, |i| {
                if kept[i] { Strategy::State } else { uniform }
            });
            prop_assert!(chosen <= other + slack, "{}: auto {chosen} > all {uniform} {other}", generated.description);
        }
        let states_allowed = request.options.take_over_mutable_buffer && request.options.target_allows_states();
        if states_allowed {
            let other = estimate_with(&graph, &analysis, &request, |_| Strategy::State);
            prop_assert!(chosen <= other + slack, "{}: auto {chosen} > all state {other}", generated.description);
        } else {
            prop_assert!(kept.iter().all(|k| !k));
        }
        // The estimate is the plan's own: the tagging's, measured the same way.
        prop_assert_eq!(
            auto.draft.estimate.delegate_calls,
            auto.draft.measure.partitions.len()
        );
        prop_assert_eq!(auto.draft.estimate.boundary_bytes, auto.draft.measure.boundary_bytes());
    }
}

#[test]
fn a_chain_of_a_million_nodes_plans_without_overflowing_the_stack() {
    let n = 1_000_000;
    let mut nodes = Vec::with_capacity(n + 3);
    nodes.push(serde_json::json!({"name": "b", "op": "placeholder", "target": "b"}));
    let mut prev = "b".to_string();
    for i in 0..n {
        let name = format!("n{i}");
        nodes.push(serde_json::json!({"name": name, "op": "call_function", "target": "aten.neg.default", "args": [{"node": prev}], "supported": i % 1000 != 999}));
        prev = name;
    }
    nodes.push(serde_json::json!({"name": "output", "op": "output", "target": "output", "args": [[{"node": prev}]]}));
    let doc = serde_json::json!({
        "schema": "partition-planner/graph@1",
        "nodes": nodes,
        "graph_signature": {"inputs_to_buffers": {"b": "buf"}, "buffers_to_mutate": {prev: "buf"}, "user_outputs": []},
        "options": {"minimum_deployment_target": "iOS18"},
    });
    let graph = parse_graph(&doc.to_string()).expect("imports");
    let analysis = analyse(&graph);
    assert_eq!(analysis.buffers[0].chain.len(), n);
    let mut request = PlanRequest::new(&graph);
    let planned = plan(&graph, &analysis, &request).expect("plans");
    assert_eq!(verify(&graph, &planned, &request).violations().count(), 0);
    // An unsupported op every 1000 nodes: the chain cannot be a state, and 1000 runs remain, which
    // the model estimates cheaper than a million ops on CPU.
    assert_eq!(planned.draft.buffers[0].strategy, Strategy::Io);
    assert_eq!(planned.draft.measure.partitions.len(), 1000);
    request
        .buffer_strategies
        .push(("buf".into(), StrategyRequest::Fixed(Strategy::Cpu)));
    let planned = plan(&graph, &analysis, &request).expect("plans");
    assert_eq!(verify(&graph, &planned, &request).violations().count(), 0);
    assert_eq!(planned.draft.measure.partitions.len(), 0);
}

/// The generator reaches every kind of decision often enough for the property above to mean something.
#[test]
fn random_graphs_cover_every_decision() {
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    for seed in 0..1500u64 {
        let generated = random_graph(seed, 5 + (seed % 40) as usize);
        let graph = parse_graph(&generated.builder.to_json()).expect("imports");
        let request = random_request(&graph, seed);
        let planned = plan(&graph, &analyse(&graph), &request).expect("plans");
        for b in &planned.draft.buffers {
            let rule = b
                .rule
                .map_or("requested".to_string(), |r| r.id().to_string());
            *seen.entry(format!("{}:{rule}", b.strategy)).or_default() += 1;
        }
        let verdict = verify(&graph, &planned, &request);
        for f in verdict.stock.iter().chain(&verdict.plan) {
            *seen.entry(format!("finding:{}", f.rule)).or_default() += 1;
        }
        if planned.draft.measure.partitions.len() > 1 {
            *seen.entry("several partitions".into()).or_default() += 1;
        }
    }
    eprintln!("{seen:#?}");
    for key in [
        "state:STATE_WHOLE",
        "cpu:SUPPORTED",
        "cpu:NO_HIDDEN_STATE",
        "cpu:STATE_TARGET",
        "cpu:STATE_WHOLE",
        "cpu:requested",
        "io:requested",
        "finding:ACYCLIC",
        "finding:NO_STALE_COPY",
        "finding:NO_HIDDEN_STATE",
        "finding:STATE_WHOLE",
        "finding:STATE_TARGET",
        "finding:SUPPORTED",
        "finding:CONSTANT_SHARING",
        "finding:NO_INPUT_TARGET",
        "finding:CONVERTIBLE",
        "cpu:CONVERTIBLE",
        "several partitions",
    ] {
        assert!(
            seen.get(key).copied().unwrap_or(0) >= 5,
            "the generator rarely reaches {key}: {seen:#?}"
        );
    }
    // Crossed state hulls are rare by nature; they must still occur.
    assert!(
        seen.get("cpu:ACYCLIC").copied().unwrap_or(0) >= 3,
        "no refused merge: {seen:#?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Budgets and asked cuts (issue #17): every partition within budget, the checker content,
    /// and no partition across a cut asked after a node outside any tuple.
    #[test]
    fn random_budgets_and_cuts_keep_every_rule(seed in any::<u64>(), size in 1usize..45) {
        let generated = random_graph(seed, size);
        let graph = parse_graph(&generated.builder.to_json()).expect("generated graphs import");
        let analysis = analyse(&graph);
        let mut request = random_request(&graph, seed);
        let mut rng = Rng::new(seed ^ 0x5EED);
        if rng.chance(60) {
            request.options.max_ops = Some(1 + rng.below(6) as u64);
        }
        if rng.chance(60) {
            // Parameters are 8x8 float32 (256 bytes).
            request.options.max_weight_bytes = Some(rng.below(800) as u64);
        }
        let in_tuple = |n: partition_planner::graph::NodeId| {
            analysis.getitems.iter().any(|&(g, p)| g == n || p == n)
        };
        let ops: Vec<_> = graph
            .ids()
            .filter(|&n| graph.op(n) == OpKind::CallFunction && !in_tuple(n))
            .collect();
        let mut cut_after = Vec::new();
        if !ops.is_empty() && rng.chance(50) {
            for _ in 0..1 + rng.below(3) {
                cut_after.push(*rng.pick(&ops));
            }
        }
        request.options.cut_after = cut_after.iter().map(|&n| graph.name(n).to_string()).collect();
        let planned = plan(&graph, &analysis, &request).expect("plans");
        let what = &generated.description;
        let broken: Vec<String> = verify(&graph, &planned, &request)
            .violations()
            .map(|v| explain(&graph, v).to_string())
            .collect();
        prop_assert!(broken.is_empty(), "{}: the checker rejects the plan: {:#?}", what, broken);
        for p in &planned.draft.measure.partitions {
            prop_assert!(request.options.max_ops.is_none_or(|m| p.nodes as u64 <= m), "{}", what);
            prop_assert!(request.options.max_weight_bytes.is_none_or(|m| p.weight_bytes <= m), "{}", what);
        }
        for &x in &cut_after {
            let at = analysis.index.position(x);
            for n in graph.ids().filter(|&n| graph.op(n) == OpKind::CallFunction) {
                for m in graph.ids().filter(|&m| graph.op(m) == OpKind::CallFunction) {
                    let (tn, tm) = (planned.draft.tagging.partition(n), planned.draft.tagging.partition(m));
                    let across = analysis.index.position(n) <= at && analysis.index.position(m) > at;
                    prop_assert!(!(across && tn.is_some() && tn == tm), "{}: {} and {} share a partition across the cut after {}", what, graph.name(n), graph.name(m), graph.name(x));
                }
            }
        }
    }
}

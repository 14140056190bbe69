//! The real exports in data/: every graph plans under every option set into a tagging the checker
//! accepts, and the stock taggings break exactly the rules the seed report describes.

use partition_planner::analyse::{MutationKind, analyse};
use partition_planner::check::check;
use partition_planner::graph::Graph;
use partition_planner::import::parse_graph;
use partition_planner::options::{DeploymentTarget, Options};
use partition_planner::pipeline::plan;
use partition_planner::pipeline::verify;
use partition_planner::plan::{BufferDecision, PlanRequest, Strategy, StrategyRequest};
use partition_planner::report::{Prose, explain};
use partition_planner::rules::{Finding, RuleId, violated};
use partition_planner::tagging::Tagging;

mod common;
use common::data::{self, data_dir};

/// A buffer's reason in words, as the reports say it.
fn said(g: &Graph, b: &BufferDecision) -> String {
    let analysis = analyse(g);
    Prose::new(g, &analysis).reason(b)
}

fn load(name: &str) -> Graph {
    let path = data_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_graph(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every JSON document under data/, as a path relative to it.
fn all_graphs() -> Vec<(String, Graph)> {
    let mut names: Vec<String> = data::all_documents()
        .into_iter()
        .map(|(_, path)| {
            path.strip_prefix(data_dir())
                .expect("under data/")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    assert!(names.len() >= 8, "{names:?}");
    names.into_iter().map(|n| (n.clone(), load(&n))).collect()
}

fn each_version(name: &str) -> Vec<Graph> {
    data::VERSIONS
        .iter()
        .map(|v| load(&format!("executorch-{v}/{name}")))
        .collect()
}

fn stock_check(g: &Graph, options: &Options) -> Vec<Finding> {
    let supported = g.supported();
    check(g, &Tagging::carried(g), options, &supported)
}

#[test]
fn every_graph_plans_under_every_option_set() {
    for (name, g) in all_graphs() {
        let analysis = analyse(&g);
        for take_over in [true, false] {
            for target in [
                None,
                Some(DeploymentTarget::Ios17),
                Some(DeploymentTarget::Ios18),
            ] {
                for strategy in ["auto", "state", "cpu", "io"] {
                    let mut r = PlanRequest::new(&g);
                    r.options.take_over_mutable_buffer = take_over;
                    r.options.minimum_deployment_target = target;
                    r.strategy = strategy.parse().unwrap();
                    let p = plan(&g, &analysis, &r).unwrap();
                    let broken: Vec<String> = verify(&g, &p, &r)
                        .violations()
                        .map(|f| explain(&g, f).to_string())
                        .collect();
                    assert!(
                        broken.is_empty(),
                        "{name} take_over={take_over} {target:?} {strategy}: {broken:#?}"
                    );
                    let states = p.draft.measure.states();
                    if !take_over || target != Some(DeploymentTarget::Ios18) {
                        assert_eq!(states, 0, "{name}");
                    }
                }
            }
        }
    }
}

/// What `export_llm` runs: take-over off, the default cost constants. No graph may get more delegate
/// calls than its stock proposal (the distinct tags the document carries) where that proposal
/// lowers at all, and none a state. A stock proposal that tags an op the converter refuses
/// (CONVERTIBLE) aborts inside coremltools: there the plan is compared with nothing that lowers.
#[test]
fn with_take_over_off_every_graph_plans_no_worse_than_its_stock_proposal() {
    for (name, g) in all_graphs() {
        let mut r = PlanRequest::new(&g);
        r.options.take_over_mutable_buffer = false;
        let p = plan(&g, &analyse(&g), &r).unwrap();
        let carried = Tagging::carried(&g);
        let supported = g.supported();
        let stock_lowers =
            !violated(&check(&g, &carried, &r.options, &supported)).contains(&RuleId::Convertible);
        let stock = carried.partition_count();
        assert!(
            !stock_lowers || p.draft.measure.partitions.len() <= stock,
            "{name}: {} partitions against stock's {stock}",
            p.draft.measure.partitions.len()
        );
        assert_eq!(p.draft.measure.states(), 0, "{name}");
        // The independent checker, run on the plan's tags as on any tagging.
        let broken = violated(&check(&g, &p.draft.tagging, &r.options, &supported));
        assert!(broken.is_empty(), "{name}: {broken:?}");
        // Every buffer's account names both strategies weighed and their estimates.
        for b in &p.draft.buffers {
            let weighed: Vec<Strategy> = b.alternatives.iter().map(|a| a.strategy).collect();
            assert_eq!(weighed, [Strategy::Io, Strategy::Cpu], "{name}");
            let reason = said(&g, b);
            assert!(reason.contains(" µs; cpu: "), "{name}: {reason}");
        }
    }
}

#[test]
fn the_seed_chain_is_found_from_the_signature() {
    for g in each_version("seed_slice_ios18.json") {
        let a = analyse(&g);
        assert_eq!(a.buffers.len(), 1);
        let c = &a.buffers[0];
        let names = (c.buffer.as_str(), g.name(c.placeholder), g.name(c.writer));
        assert_eq!(names, ("cache", "b_cache", "aten_slice_scatter_default_1"));
        assert_eq!(c.kind, MutationKind::Slice);
        assert_eq!(c.chain.len(), 5);
    }
    for whole in each_version("seed_whole_ios18.json") {
        let a = analyse(&whole);
        assert_eq!(a.buffers.len(), 1);
        assert!(
            whole
                .node(a.buffers[0].writer)
                .target
                .starts_with("aten.index_put")
        );
    }
}

#[test]
fn executorch_1_4_with_take_over_off_hides_a_state_and_1_5_does_not() {
    let [old, new] = [0, 1].map(|i| {
        load(&format!(
            "executorch-{}/seed_slice_takeover_off_ios17.json",
            data::VERSIONS[i]
        ))
    });
    assert!(!old.options.take_over_mutable_buffer);
    let found = stock_check(&old, &old.options);
    assert_eq!(
        violated(&found),
        [RuleId::NoHiddenState, RuleId::StateTarget]
    );
    let hidden: Vec<_> = found
        .iter()
        .filter(|f| f.rule == RuleId::NoHiddenState)
        .filter_map(|f| f.buffer.as_deref())
        .collect();
    assert_eq!(hidden, ["cache"]);
    assert!(violated(&stock_check(&new, &new.options)).is_empty());
    for g in [old, new] {
        let r = PlanRequest::new(&g);
        let p = plan(&g, &analyse(&g), &r).unwrap();
        assert_eq!(
            (
                p.draft.buffers[0].strategy,
                verify(&g, &p, &r).violations().count()
            ),
            (Strategy::Io, 0)
        );
    }
}

#[test]
fn the_stock_seed_tagging_hides_a_state_when_take_over_is_off() {
    let g = load("executorch-1.5.1/seed_slice_ios18.json");
    // With take-over on at iOS18 the stock tagging is a whole state: nothing to report.
    assert!(violated(&stock_check(&g, &g.options)).is_empty());
    // The same tags with take-over off are what executorch 1.4 produced: a hidden state.
    let off = Options {
        take_over_mutable_buffer: false,
        ..g.options.clone()
    };
    let found = stock_check(&g, &off);
    assert_eq!(violated(&found), [RuleId::NoHiddenState]);
    assert!(found.iter().any(|f| f.buffer.as_deref() == Some("cache")));
    // And at iOS17 coremltools refuses the state.
    let ios17 = Options {
        minimum_deployment_target: Some(DeploymentTarget::Ios17),
        ..g.options.clone()
    };
    assert_eq!(violated(&stock_check(&g, &ios17)), [RuleId::StateTarget]);
}

#[test]
fn the_writer_untagged_tagging_is_a_cycle_with_its_path_and_the_plan_fixes_it() {
    let g = load("executorch-1.5.1/seed_slice_writer_untagged.json");
    let found = stock_check(&g, &g.options);
    assert_eq!(violated(&found), [RuleId::Acyclic, RuleId::NoStaleCopy]);
    let cycle = found.iter().find(|f| f.rule == RuleId::Acyclic).unwrap();
    let writer = "aten_slice_scatter_default_1";
    assert!(
        cycle
            .path
            .iter()
            .any(|s| g.name(s.node) == writer && s.tag.is_none()),
        "{}",
        explain(&g, cycle)
    );
    assert_eq!(
        cycle.path.first().and_then(|s| s.tag.as_deref()),
        Some("tag1")
    );
    assert_eq!(
        cycle.path.last().and_then(|s| s.tag.as_deref()),
        Some("tag1")
    );
    for take_over in [true, false] {
        let mut r = PlanRequest::new(&g);
        r.options.take_over_mutable_buffer = take_over;
        let p = plan(&g, &analyse(&g), &r).unwrap();
        let verdict = verify(&g, &p, &r);
        assert_eq!(verdict.violations().count(), 0);
        let want = if take_over {
            Strategy::State
        } else {
            Strategy::Io
        };
        assert_eq!(p.draft.buffers[0].strategy, want);
        assert!(violated(&verdict.stock).contains(&RuleId::Acyclic));
    }
}

#[test]
fn io_keeps_the_seed_in_one_partition_without_a_state() {
    let g = load("executorch-1.5.1/seed_slice_ios18.json");
    let mut r = PlanRequest::new(&g);
    r.strategy = StrategyRequest::Fixed(Strategy::Io);
    let p = plan(&g, &analyse(&g), &r).unwrap();
    assert_eq!(
        (p.draft.measure.partitions.len(), p.draft.measure.states()),
        (1, 0)
    );
    assert_eq!(p.draft.tagging.tag(g.find("b_cache").unwrap()), None);
}

fn plan_of(g: &Graph, take_over: bool) -> partition_planner::Plan {
    let mut r = PlanRequest::new(g);
    r.options.take_over_mutable_buffer = take_over;
    let p = plan(g, &analyse(g), &r).unwrap();
    assert_eq!(verify(g, &p, &r).violations().count(), 0);
    p
}

fn strategies(p: &partition_planner::Plan, strategy: Strategy) -> usize {
    p.draft
        .buffers
        .iter()
        .filter(|b| b.strategy == strategy)
        .count()
}

#[test]
fn qwen3_5_on_executorch_1_5_stock_stale_copies_and_the_plan() {
    // The stock proposal tags each linear-attention state's placeholder into its layer's partition
    // while the writer lands elsewhere: the SpecViolationError of the report, named per buffer.
    let g = load("executorch-1.5.1/qwen3_5_0_8b_takeover_on_ios18.json");
    assert_eq!(g.signature.mutable_buffers.len(), 48);
    let found = stock_check(&g, &g.options);
    assert_eq!(violated(&found), [RuleId::NoStaleCopy]);
    let stale: std::collections::BTreeSet<&str> =
        found.iter().filter_map(|f| f.buffer.as_deref()).collect();
    assert_eq!(stale.len(), 36);
    assert!(
        stale
            .iter()
            .all(|b| b.ends_with("conv_state") || b.ends_with("recurrent_state"))
    );
    // The plan keeps 12 KV caches and 18 conv states; the recurrent states run through
    // llama.gated_delta_rule, which Core ML cannot run, so they cannot be states: they pass through
    // the delegates (io), which the model estimates cheaper than their chains on CPU.
    let p = plan_of(&g, true);
    assert_eq!(
        (
            strategies(&p, Strategy::State),
            strategies(&p, Strategy::Io)
        ),
        (30, 18)
    );
    for b in p
        .draft
        .buffers
        .iter()
        .filter(|b| b.strategy != Strategy::State)
    {
        assert!(
            b.buffer.ends_with("recurrent_state") && said(&g, b).contains("llama.gated_delta_rule"),
            "{b:?}"
        );
    }
    assert!(p.draft.measure.partitions.len() <= p.stock.tagging.partition_count());
    // With take-over off nothing is a state and the stock proposal is already clean.
    let off = load("executorch-1.5.1/qwen3_5_0_8b_takeover_off_ios18.json");
    assert!(violated(&stock_check(&off, &off.options)).is_empty());
    assert_eq!(plan_of(&off, false).draft.measure.states(), 0);
}

#[test]
fn lfm2_5_and_llama3_2_keep_every_cache_as_state_in_one_partition() {
    for (name, states) in [("lfm2_5_350m", 22), ("llama3_2_1b", 32)] {
        for version in data::VERSIONS {
            let g = load(&format!(
                "executorch-{version}/{name}_takeover_on_ios18.json"
            ));
            assert!(
                violated(&stock_check(&g, &g.options)).is_empty(),
                "{version} {name}"
            );
            let p = plan_of(&g, true);
            assert_eq!(
                (p.draft.measure.states(), p.draft.measure.partitions.len()),
                (states, 1),
                "{version} {name}"
            );
        }
    }
}

#[test]
fn qwen3_5_on_executorch_1_4_with_take_over_off_hides_36_states_and_the_plan_none() {
    // executorch 1.4 decomposes the gated delta rule, so every chain is supported, and its
    // partitioner tags the linear-attention states' placeholders although take-over is off.
    let g = load("executorch-1.4.0/qwen3_5_0_8b_takeover_off_ios18.json");
    let found = stock_check(&g, &g.options);
    assert_eq!(violated(&found), [RuleId::NoHiddenState]);
    let hidden: std::collections::BTreeSet<&str> =
        found.iter().filter_map(|f| f.buffer.as_deref()).collect();
    assert_eq!(hidden.len(), 36);
    let p = plan_of(&g, false);
    assert_eq!(
        (p.draft.measure.states(), strategies(&p, Strategy::Io)),
        (0, 48)
    );
    assert_eq!(p.draft.measure.partitions.len(), 1);
    // The price of `cpu`: each layer's chains split the delegate, which auto weighed and refused.
    let mut r = PlanRequest::new(&g);
    r.strategy = StrategyRequest::Fixed(Strategy::Cpu);
    let cpu = plan(&g, &analyse(&g), &r).unwrap();
    assert_eq!(
        (
            verify(&g, &cpu, &r).violations().count(),
            cpu.draft.measure.states()
        ),
        (0, 0)
    );
    assert_eq!(cpu.draft.measure.partitions.len(), 43);
    assert!(p.draft.estimate.total_us < cpu.draft.estimate.total_us);
    // Each class of buffers on CPU alone would already split the delegate.
    for b in &p.draft.buffers {
        let [io, cpu] = &b.alternatives[..] else {
            panic!("{b:?}")
        };
        assert!(
            io.estimate.delegate_calls < cpu.estimate.delegate_calls,
            "{b:?}"
        );
        let reason = said(&g, b);
        assert!(reason.contains("chose io"), "{reason}");
    }
    // With take-over on, 1.4 keeps all 48 buffers as states in one partition, and so does the plan.
    let on = load("executorch-1.4.0/qwen3_5_0_8b_takeover_on_ios18.json");
    assert!(violated(&stock_check(&on, &on.options)).is_empty());
    let p = plan_of(&on, true);
    assert_eq!(
        (p.draft.measure.states(), p.draft.measure.partitions.len()),
        (48, 1)
    );
}

/// The plan and verdict made on two threads (the stock side beside the planner's, from 50,000
/// nodes) are the ones made one after the other: the plan documents are byte for byte the same,
/// for a data/ graph (one thread), and for a generated 10^5-node graph untagged (the stock
/// proposal reproduced) and tagged with that proposal (carried). So is the pretty text the CLI
/// writes in pieces, part of it written beside the stock side.
#[test]
fn planning_and_writing_beside_change_nothing() {
    use partition_planner::api::{Overrides, generate_document, plan_graph_json};
    use partition_planner::pipeline::run;
    use partition_planner::report::plan_json;
    let same = |what: &str, g: &Graph| {
        let request = PlanRequest::new(g);
        let beside = run(g, &request).expect("plans");
        let analysis = analyse(g);
        let after = plan(g, &analysis, &request).expect("plans");
        let after_verdict = verify(g, &after, &request);
        let text = |a, p, v| serde_json::to_string(&plan_json(g, a, p, v)).expect("writes");
        assert!(
            text(&beside.analysis, &beside.plan, &beside.verdict)
                == text(&analysis, &after, &after_verdict),
            "{what}: the plan documents differ"
        );
        let pretty = serde_json::to_string_pretty(&plan_json(g, &analysis, &after, &after_verdict));
        let (_, pieces) = plan_graph_json(g.clone(), &Overrides::default()).expect("plans");
        assert!(
            pieces.expect("writes").to_string() == pretty.expect("writes"),
            "{what}: the pieces written apart differ"
        );
        after
    };
    same(
        "Qwen3.5",
        &load("executorch-1.5.1/qwen3_5_0_8b_takeover_off_ios18.json"),
    );
    let text = generate_document(100_000, 12).expect("generates");
    let untagged = parse_graph(&text).expect("imports");
    let planned = same("generated 10^5, untagged", &untagged);
    // The same graph carrying the reproduced proposal as its stock tags.
    let mut doc: serde_json::Value = serde_json::from_str(&text).expect("json");
    let nodes = doc["nodes"].as_array_mut().expect("nodes");
    for (node, id) in nodes.iter_mut().zip(untagged.ids()) {
        node["delegation_tag"] = planned.stock.tagging.tag(id).into();
    }
    let tagged = parse_graph(&doc.to_string()).expect("imports");
    assert!(tagged.stock_partitions > 0);
    same("generated 10^5, tagged", &tagged);
}

#[test]
fn a_support_table_of_the_wrong_length_is_an_error_when_planned_and_checked_together() {
    use partition_planner::PlanError;
    use partition_planner::pipeline::run;
    // The document carries the stock proposal's tags: its check reads the table at tagged nodes.
    let g = load("executorch-1.5.1/qwen3_5_0_8b_takeover_on_ios18.json");
    assert!(g.stock_partitions > 0);
    let mut request = PlanRequest::new(&g);
    request.supported.truncate(g.len() / 2);
    assert!(matches!(
        run(&g, &request).map(|_| ()),
        Err(PlanError::SupportLength { .. })
    ));
}

/// Ops the support check accepts and coremltools refuses (issue #30): the stock proposal tags them
/// and breaks CONVERTIBLE, whether carried or reproduced; the plan keeps each on CPU with a
/// decision of its own, says which op was decomposed rather than kept whole, and the buffer whose
/// writer is refused takes its chain with it.
#[test]
fn ops_the_converter_refuses_stay_on_cpu_explained_and_stock_breaks_convertible() {
    for g in each_version("conversion_failures_ios18.json") {
        let refused: Vec<&str> = g.refused_by_converter.iter().map(|&n| g.name(n)).collect();
        assert_eq!(
            refused,
            [
                "aten_max_pool2d_with_indices_default",
                "aten_index_put_default"
            ]
        );
        assert_eq!(g.decomposed.len(), 1);
        assert_eq!(g.decomposed[0].op, "aten.max_pool2d.default");
        for options in [g.options.clone(), {
            let mut o = g.options.clone();
            o.take_over_mutable_buffer = false;
            o
        }] {
            // The stock proposal, carried and reproduced, tags both.
            let convertible = |findings: &[Finding]| -> Vec<String> {
                (findings.iter())
                    .filter(|f| f.rule == RuleId::Convertible)
                    .flat_map(|f| f.nodes.iter().map(|&n| g.name(n).to_string()))
                    .collect()
            };
            assert_eq!(convertible(&stock_check(&g, &options)), refused);
            let reproduced = partition_planner::stock::reproduce(
                &g,
                &analyse(&g).index,
                partition_planner::stock::ExecutorchVersion::LATEST,
                &options,
                &g.supported(),
            );
            let supported = g.supported();
            assert_eq!(
                convertible(&check(&g, &reproduced, &options, &supported)),
                refused
            );

            let mut r = PlanRequest::new(&g);
            r.options = options.clone();
            let p = plan(&g, &analyse(&g), &r).unwrap();
            assert!(verify(&g, &p, &r).violations().next().is_none());
            for &n in &g.refused_by_converter {
                assert_eq!(p.draft.tagging.tag(n), None, "{}", g.name(n));
            }
            let decisions: Vec<String> = Prose {
                graph: &g,
                analysis: &analyse(&g),
            }
            .decisions(&p.draft)
            .into_iter()
            .filter(|d| d.rule == RuleId::Convertible && d.buffer.is_none())
            .map(|d| d.message)
            .collect();
            assert_eq!(decisions.len(), 3, "{decisions:#?}");
            assert!(
                decisions[0].contains("aten.max_pool2d.default")
                    && decisions[0].contains("decomposed")
            );
            assert!(decisions[1].contains("@max_pool does not support dilation > 1"));
            assert!(decisions[1].ends_with("aten_max_pool2d_with_indices_default runs on CPU"));
            assert!(decisions[2].contains("coremltools 9.0 cannot convert aten.index_put.default"));
            // The writer is refused: no state, whatever take-over allows, and the reason says why.
            let cache = &p.draft.buffers[0];
            assert_ne!(cache.strategy, Strategy::State);
            if options.take_over_mutable_buffer {
                assert_eq!(cache.rule, Some(RuleId::Convertible));
                assert!(said(&g, cache).contains("aten_index_put_default (aten.index_put.default) in its chain cannot be delegated: coremltools 9.0 cannot convert"));
            }
        }
    }
}

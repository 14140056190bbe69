//! Chunked delegates (issue #17): on every LLM graph in data/ (both executorch versions) and on a
//! generated 10^5-node graph, a budget of about a third of the graph's constant bytes, and
//! separately of its compute nodes, gives partitions that are each within budget, that the
//! checker accepts with every state whole, and no more of them than the lower bound plus one per
//! partition the plan has without budgets.

use partition_planner::analyse::analyse;
use partition_planner::api::generate_document;
use partition_planner::check::check;
use partition_planner::graph::{Graph, OpKind};
use partition_planner::import::parse_graph;
use partition_planner::measure::Measure;
use partition_planner::options::Options;
use partition_planner::outcome::Plan;
use partition_planner::pipeline::plan;
use partition_planner::pipeline::verify;
use partition_planner::plan::{CutReason, PlanRequest, Strategy};
use partition_planner::rules::RuleId;
use std::path::PathBuf;

fn data_graphs() -> Vec<(String, Graph)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data");
    let mut graphs = Vec::new();
    for version in ["executorch-1.4.0", "executorch-1.5.1"] {
        for model in ["llama3_2_1b", "lfm2_5_350m", "qwen3_5_0_8b"] {
            for variant in ["takeover_on_ios18", "takeover_off_ios18"] {
                let name = format!("{version}/{model}_{variant}.json");
                let text = std::fs::read_to_string(root.join(&name)).expect("data/ graph");
                graphs.push((name, parse_graph(&text).expect("imports")));
            }
        }
        let name = format!("{version}/qwen3_5_0_8b_writers_untagged_ios18.json");
        let text = std::fs::read_to_string(root.join(&name)).expect("data/ graph");
        graphs.push((name, parse_graph(&text).expect("imports")));
    }
    graphs
}

/// Bytes of every parameter, lifted constant and unmutated buffer, and the `call_function` nodes.
fn totals(g: &Graph) -> (u64, u64) {
    let weight = g
        .ids()
        .filter(|&n| g.role(n).is_constant_data())
        .map(|n| g.node(n).meta.bytes().unwrap_or(0))
        .sum();
    let ops = g.ids().filter(|&n| g.op(n) == OpKind::CallFunction).count() as u64;
    (weight, ops)
}

fn planned(g: &Graph, options: Options) -> Plan {
    let analysis = analyse(g);
    let mut request = PlanRequest::new(g);
    request.options = options;
    plan(g, &analysis, &request).expect("plans")
}

/// The checker accepts `p`, planned under `options`, and it keeps every state `unbudgeted` kept.
fn checked_with_states_kept(what: &str, g: &Graph, p: &Plan, options: Options, unbudgeted: &Plan) {
    let request = PlanRequest {
        options,
        ..PlanRequest::new(g)
    };
    let broken: Vec<String> = verify(g, p, &request)
        .violations()
        .map(|f| format!("{} {:?}", f.rule, f.partition))
        .collect();
    assert!(
        broken.is_empty(),
        "{what}: the checker rejects the plan: {broken:?}"
    );
    let states = |p: &Plan| {
        p.draft
            .buffers
            .iter()
            .filter(|b| b.strategy == Strategy::State)
            .count()
    };
    assert_eq!(states(p), states(unbudgeted), "{what}: states lost");
}

#[derive(Clone, Copy, Debug)]
enum Budget {
    Weight,
    Ops,
}

impl Budget {
    fn of(self, m: &Measure) -> Vec<u64> {
        m.partitions
            .iter()
            .map(|p| match self {
                Budget::Weight => p.weight_bytes,
                Budget::Ops => p.nodes as u64,
            })
            .collect()
    }
}

/// Plans `g` without budgets and with `budget` at a third of its total; asserts the three facts.
fn holds_under_a_third(name: &str, g: &Graph, base_options: Options, budget: Budget) {
    let unbudgeted = planned(g, base_options.clone());
    let (weight, ops) = totals(g);
    let limit = match budget {
        Budget::Weight => weight / 3,
        Budget::Ops => ops / 3,
    };
    let mut options = base_options;
    match budget {
        Budget::Weight => options.max_weight_bytes = Some(limit),
        Budget::Ops => options.max_ops = Some(limit),
    }
    let p = planned(g, options.clone());
    let what = format!("{name} ({budget:?} <= {limit})");
    for (summary, size) in p
        .draft
        .measure
        .partitions
        .iter()
        .zip(budget.of(&p.draft.measure))
    {
        assert!(size <= limit, "{what}: {} holds {size}", summary.tag);
    }
    // Every state of the unbudgeted plan is still one (the hulls are small beside a third).
    checked_with_states_kept(&what, g, &p, options, &unbudgeted);
    let lower_bound: u64 = budget
        .of(&unbudgeted.draft.measure)
        .iter()
        .map(|&total| total.div_ceil(limit.max(1)))
        .sum();
    let allowed = lower_bound + unbudgeted.draft.measure.partitions.len() as u64;
    let chunks = p.draft.measure.partitions.len() as u64;
    assert!(
        chunks <= allowed,
        "{what}: {chunks} partitions, at most {allowed} allowed"
    );
    assert!(
        p.draft.cuts.iter().all(|c| matches!(
            (budget, &c.reason),
            (Budget::Weight, CutReason::WeightBudget { .. })
                | (Budget::Ops, CutReason::OpBudget { .. })
        )),
        "{what}: a cut for another reason"
    );
    if chunks > unbudgeted.draft.measure.partitions.len() as u64 {
        assert!(
            !p.draft.cuts.is_empty(),
            "{what}: more partitions but no cut reported"
        );
    }
}

#[test]
fn every_data_graph_keeps_within_a_third_of_its_weights_and_ops() {
    for (name, g) in data_graphs() {
        for take_over in [true, false] {
            let options = Options {
                take_over_mutable_buffer: take_over,
                ..g.options.clone()
            };
            for budget in [Budget::Weight, Budget::Ops] {
                holds_under_a_third(&name, &g, options.clone(), budget);
            }
        }
    }
}

#[test]
fn a_generated_100_000_node_graph_keeps_within_a_third() {
    let text = generate_document(100_000, 12).expect("generates");
    let g = parse_graph(&text).expect("imports");
    for budget in [Budget::Weight, Budget::Ops] {
        holds_under_a_third("generated 10^5", &g, g.options.clone(), budget);
    }
}

#[test]
fn the_checker_finds_a_partition_over_budget_from_the_tags_alone() {
    let (name, g) = data_graphs().swap_remove(0);
    let p = planned(&g, g.options.clone());
    let biggest = p
        .draft
        .measure
        .partitions
        .iter()
        .map(|m| m.weight_bytes)
        .max();
    let options = Options {
        max_weight_bytes: biggest.map(|b| b - 1),
        ..g.options.clone()
    };
    // The unbudgeted plan's tags, checked against a budget one byte below its largest partition.
    let supported = g.supported();
    let found = check(&g, &p.draft.tagging, &options, &supported);
    let over: Vec<_> = found
        .iter()
        .filter(|f| f.rule == RuleId::WithinBudget)
        .collect();
    assert_eq!(over.len(), 1, "{name}: {over:?}");
    assert!(over[0].is_violation());
    assert_eq!(over[0].bytes, biggest);
}

/// `cut_after = layers.*` on every data/ LLM: the checker accepts the plan, the states it had stay,
/// and no partition holds ops of two transformer blocks.
#[test]
fn cuts_after_every_block_by_module_path_on_every_data_graph() {
    for (name, g) in data_graphs() {
        let unbudgeted = planned(&g, g.options.clone());
        let options = Options {
            cut_after: vec!["layers.*".into()],
            ..g.options.clone()
        };
        let p = planned(&g, options.clone());
        checked_with_states_kept(&name, &g, &p, options, &unbudgeted);
        let block = |n| {
            let path = g.node(n).module_path.as_deref()?;
            let mut parts = path.split('.');
            (parts.next()? == "layers").then(|| parts.next().map(str::to_string))?
        };
        let mut block_of_partition: std::collections::HashMap<u32, String> = Default::default();
        for n in g.ids().filter(|&n| g.op(n) == OpKind::CallFunction) {
            if let (Some(t), Some(b)) = (p.draft.tagging.partition(n), block(n)) {
                let first = block_of_partition.entry(t).or_insert_with(|| b.clone());
                assert_eq!(
                    *first,
                    b,
                    "{name}: {} shares a partition with another block",
                    g.name(n)
                );
            }
        }
        assert!(
            p.draft.measure.partitions.len() > unbudgeted.draft.measure.partitions.len(),
            "{name}"
        );
        assert!(
            p.draft
                .cuts
                .iter()
                .all(|c| matches!(c.reason, CutReason::Asked { after: true, .. }))
        );
    }
}

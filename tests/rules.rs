//! Every rule, with a tagging that keeps it and one that breaks it. A rule added to `RuleId::ALL`
//! without both cases here fails `every_rule_has_both_cases`.

use partition_planner::analyse::analyse;
use partition_planner::check::check;
use partition_planner::graph::Graph;
use partition_planner::import::parse_graph;
use partition_planner::options::{DeploymentTarget, Options};
use partition_planner::pipeline::plan;
use partition_planner::pipeline::verify;
use partition_planner::plan::{PlanRequest, Strategy};
use partition_planner::rules::{FindingKind, RuleId};
use partition_planner::synthetic::BridgeBuilder;
use partition_planner::tagging::Tagging;

/// `b_s` is a buffer updated by `scatter(b_s, neg(b_s))`; `sum` reads the new value, `mm` uses a
/// weight `w`, `odd` is an op Core ML cannot run, `wsq` is computed from the weight alone,
/// `split` has two outputs of which `half` picks one, `pool` is an op the support check
/// accepts and the converter refuses, and `win` views `mm2` as rank-6 windows that `back` views
/// back: a value no Core ML model takes as an input or output.
fn graph() -> Graph {
    let mut b = BridgeBuilder::new();
    b.buffer("b_s", "s", &[4, 4])
        .parameter("w", &[4, 4])
        .user_input("x", &[4, 4])
        .op("neg", "aten.neg.default", &["b_s"], true)
        .op(
            "scatter",
            "aten.slice_scatter.default",
            &["b_s", "neg"],
            true,
        )
        .op("sum", "aten.add.Tensor", &["scatter", "x"], true)
        .op("mm", "aten.mm.default", &["sum", "w"], true)
        .op("odd", "aten.nonzero.default", &["mm"], false)
        .op("wsq", "aten.mul.Tensor", &["w", "w"], true)
        .op("mm2", "aten.mm.default", &["odd", "wsq"], true)
        .op("split", "aten.split.Tensor", &["mm2"], true)
        .op_with("half", "getitem", &["split"], &[0.into()], true)
        .op(
            "pool",
            "aten.max_pool2d_with_indices.default",
            &["mm2"],
            true,
        )
        .refused("ValueError: @max_pool does not support dilation > 1")
        .op("win", "aten.view_copy.default", &["mm2"], true)
        .meta(&[1, 1, 2, 2, 2, 2], "float32")
        .op("back", "aten.view_copy.default", &["win"], true)
        .meta(&[4, 4], "float32")
        .mutates("scatter", "s")
        .output(&["mm2", "half", "pool", "back"]);
    parse_graph(&b.to_json()).expect("imports")
}

fn ios18(take_over: bool) -> Options {
    Options {
        take_over_mutable_buffer: take_over,
        minimum_deployment_target: Some(DeploymentTarget::Ios18),
        ..Options::default()
    }
}

/// A state of `s` in tag0 with everything else sensible: keeps every rule.
const GOOD: &[(&str, &str)] = &[
    ("b_s", "tag0"),
    ("neg", "tag0"),
    ("scatter", "tag0"),
    ("sum", "tag0"),
    ("mm", "tag0"),
    ("w", "tag0"),
    ("mm2", "tag1"),
];

/// GOOD with the weight left untagged, as `take_over_constant_data=false` plans it: no copies.
const GOOD_UNTAGGED_WEIGHT: &[(&str, &str)] = &[
    ("b_s", "tag0"),
    ("neg", "tag0"),
    ("scatter", "tag0"),
    ("sum", "tag0"),
    ("mm", "tag0"),
    ("mm2", "tag1"),
];

/// The rules a tagging built on the graph breaks (or pays for).
type RulesOf = Box<dyn Fn(&Graph) -> Vec<RuleId>>;

struct Case {
    rule: RuleId,
    keeps: RulesOf,
    breaks: RulesOf,
}

fn findings(
    g: &Graph,
    tagged: &[(&str, &str)],
    options: &Options,
    kind: FindingKind,
) -> Vec<RuleId> {
    let supported = g.supported();
    let mut rules: Vec<RuleId> = check(
        g,
        &Tagging::by_name(g, tagged).expect("case names"),
        options,
        &supported,
    )
    .into_iter()
    .filter(|f| f.kind == kind)
    .map(|f| f.rule)
    .collect();
    rules.sort();
    rules.dedup();
    rules
}

fn violations(tagged: &'static [(&'static str, &'static str)], options: Options) -> RulesOf {
    Box::new(move |g| findings(g, tagged, &options, FindingKind::Violation))
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            rule: RuleId::Acyclic,
            keeps: violations(GOOD, ios18(true)),
            // sum on CPU between scatter and mm, both in tag0: leaves and re-enters tag0.
            breaks: violations(
                &[("neg", "tag0"), ("scatter", "tag0"), ("mm", "tag0")],
                ios18(true),
            ),
        },
        Case {
            rule: RuleId::Supported,
            keeps: violations(GOOD, ios18(true)),
            breaks: violations(&[("odd", "tag0")], ios18(true)),
        },
        Case {
            rule: RuleId::Convertible,
            keeps: violations(GOOD, ios18(true)),
            breaks: violations(&[("mm2", "tag1"), ("pool", "tag1")], ios18(true)),
        },
        Case {
            rule: RuleId::NoHiddenState,
            keeps: violations(
                &[("neg", "tag0"), ("scatter", "tag0"), ("sum", "tag0")],
                ios18(false),
            ),
            breaks: violations(GOOD, ios18(false)),
        },
        Case {
            rule: RuleId::StateWhole,
            keeps: violations(GOOD, ios18(true)),
            // A reader of the old value (neg) outside the state's partition.
            breaks: violations(
                &[("b_s", "tag0"), ("neg", "tag1"), ("scatter", "tag0")],
                ios18(true),
            ),
        },
        Case {
            rule: RuleId::StateTarget,
            keeps: violations(GOOD, ios18(true)),
            breaks: violations(
                GOOD,
                Options {
                    minimum_deployment_target: Some(DeploymentTarget::Ios17),
                    ..Options::default()
                },
            ),
        },
        Case {
            rule: RuleId::NoStaleCopy,
            keeps: violations(GOOD, ios18(true)),
            breaks: violations(&[("b_s", "tag0"), ("neg", "tag0")], ios18(true)),
        },
        Case {
            rule: RuleId::ConstantSharing,
            keeps: Box::new(|g| findings(g, GOOD_UNTAGGED_WEIGHT, &ios18(true), FindingKind::Cost)),
            // w owned by tag0 and read by mm2 in tag1: copied.
            breaks: Box::new(|g| findings(g, GOOD, &ios18(true), FindingKind::Cost)),
        },
        Case {
            rule: RuleId::NoInputTarget,
            keeps: violations(
                GOOD,
                Options {
                    minimum_deployment_target: Some(DeploymentTarget::Ios17),
                    ..Options::default()
                },
            ),
            // wsq alone with the weight it squares: a Core ML model without inputs, below iOS18.
            breaks: violations(
                &[("w", "tag2"), ("wsq", "tag2")],
                Options {
                    minimum_deployment_target: Some(DeploymentTarget::Ios17),
                    ..Options::default()
                },
            ),
        },
        Case {
            rule: RuleId::BoundaryValues,
            keeps: violations(&[("win", "tag4"), ("back", "tag4")], ios18(true)),
            // The rank-6 windows leave tag4 for back, on CPU.
            breaks: violations(&[("win", "tag4")], ios18(true)),
        },
        Case {
            rule: RuleId::TupleWhole,
            keeps: violations(&[("split", "tag3"), ("half", "tag3")], ios18(true)),
            // The getitem left on CPU while the op whose output it picks is delegated.
            breaks: violations(&[("split", "tag3")], ios18(true)),
        },
        Case {
            rule: RuleId::WithinBudget,
            // tag0 holds four ops (neg, scatter, sum, mm) and w (4x4 float32, 64 bytes).
            keeps: violations(
                GOOD,
                Options {
                    max_ops: Some(4),
                    max_weight_bytes: Some(64),
                    ..ios18(true)
                },
            ),
            breaks: violations(
                GOOD,
                Options {
                    max_ops: Some(3),
                    ..ios18(true)
                },
            ),
        },
        Case {
            rule: RuleId::PlanMatchesTags,
            keeps: Box::new(|g| plan_claims(g, false)),
            breaks: Box::new(|g| plan_claims(g, true)),
        },
    ]
}

/// A real plan verified as it is, or after its summary was made to lie about a buffer.
fn plan_claims(g: &Graph, lie: bool) -> Vec<RuleId> {
    let mut request = PlanRequest::new(g);
    request.options = ios18(true);
    let mut p = plan(g, &analyse(g), &request).expect("plans");
    assert_eq!(p.draft.buffers[0].strategy, Strategy::State);
    if lie {
        p.draft.buffers[0].strategy = Strategy::Cpu;
    }
    let mut rules: Vec<RuleId> = verify(g, &p, &request)
        .plan
        .into_iter()
        .filter(|f| f.is_violation())
        .map(|f| f.rule)
        .collect();
    rules.dedup();
    rules
}

#[test]
fn every_rule_has_both_cases() {
    let g = graph();
    let cases = cases();
    for rule in RuleId::ALL {
        let case = cases
            .iter()
            .find(|c| c.rule == rule)
            .unwrap_or_else(|| panic!("no case for {rule}"));
        let kept = (case.keeps)(&g);
        assert!(
            !kept.contains(&rule),
            "{rule}: the keeping tagging breaks it: {kept:?}"
        );
        let broken = (case.breaks)(&g);
        assert!(
            broken.contains(&rule),
            "{rule}: the breaking tagging keeps it: {broken:?}"
        );
    }
}

#[test]
fn the_good_tagging_keeps_every_rule_at_once() {
    let g = graph();
    assert!(findings(&g, GOOD, &ios18(true), FindingKind::Violation).is_empty());
}

/// WITHIN_BUDGET counts a constant in every partition that reads it: executorch copies it there.
#[test]
fn a_copied_constant_counts_in_each_partition_reading_it() {
    let g = graph();
    let tagged = [
        ("b_s", "tag0"),
        ("neg", "tag0"),
        ("scatter", "tag0"),
        ("w", "tag0"),
        ("wsq", "tag2"),
    ];
    let budget = |bytes| Options {
        max_weight_bytes: Some(bytes),
        ..ios18(true)
    };
    let supported = g.supported();
    let tagging = Tagging::by_name(&g, &tagged).expect("case names");
    let over_budget = |bytes| {
        let mut over: Vec<_> = check(&g, &tagging, &budget(bytes), &supported)
            .into_iter()
            .filter(|f| f.rule == RuleId::WithinBudget)
            .map(|f| (f.partition, f.bytes))
            .collect();
        over.sort();
        over
    };
    // w (4x4 float32) is owned by tag0 and copied for wsq into tag2: 64 bytes in each.
    assert_eq!(
        over_budget(63),
        [
            (Some("tag0".into()), Some(64)),
            (Some("tag2".into()), Some(64))
        ]
    );
    assert!(over_budget(64).is_empty());
}

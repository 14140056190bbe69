use super::*;
use crate::fixtures::{load, seed_graph};
use crate::options::DeploymentTarget;
use crate::report::explain;
use crate::rules::violated as rules;
use crate::synthetic::BridgeBuilder;

fn tags(g: &Graph, tagged: &[(&str, &str)]) -> Tagging {
    Tagging::by_name(g, tagged).expect("fixture names")
}

fn run(g: &Graph, t: &Tagging, o: &Options) -> Vec<Finding> {
    let supported = g.supported();
    check(g, t, o, &supported)
}

const SEED_ALL: [&str; 10] = [
    "b_cache", "c_scale", "mul", "scatter0", "unsq", "add", "copy", "scatter1", "sum", "out",
];

fn ios18(take_over: bool) -> Options {
    Options {
        take_over_mutable_buffer: take_over,
        minimum_deployment_target: Some(DeploymentTarget::Ios18),
        ..Options::default()
    }
}

fn seed_tagged(skip: &[&str]) -> (Graph, Tagging) {
    let g = load(&seed_graph());
    let tagged: Vec<(&str, &str)> = SEED_ALL
        .iter()
        .filter(|n| !skip.contains(n))
        .map(|n| (*n, "tag1"))
        .collect();
    let t = tags(&g, &tagged);
    (g, t)
}

#[test]
fn the_seed_as_state_at_ios18_keeps_every_rule() {
    let (g, t) = seed_tagged(&[]);
    assert!(rules(&run(&g, &t, &ios18(true))).is_empty());
}

#[test]
fn the_stock_seed_tagging_with_take_over_off_names_the_hidden_state() {
    let (g, t) = seed_tagged(&[]);
    let findings = run(&g, &t, &ios18(false));
    assert_eq!(rules(&findings), [RuleId::NoHiddenState]);
    let f = findings
        .iter()
        .find(|f| f.rule == RuleId::NoHiddenState)
        .unwrap();
    assert_eq!(f.buffer.as_deref(), Some("cache"));
    assert!(matches!(f.fact, Fact::HiddenState { as_state: true, .. }));
    let said = explain(&g, f).message;
    assert!(said.contains("Core ML state of tag1"), "{said}");
}

#[test]
fn states_below_ios18_break_state_target() {
    let (g, t) = seed_tagged(&[]);
    let mut o = ios18(true);
    o.minimum_deployment_target = Some(DeploymentTarget::Ios17);
    assert_eq!(rules(&run(&g, &t, &o)), [RuleId::StateTarget]);
    o.minimum_deployment_target = None;
    assert_eq!(rules(&run(&g, &t, &o)), [RuleId::StateTarget]);
}

#[test]
fn untagging_the_writer_prints_the_cycle_path_and_the_stale_copy() {
    let (g, t) = seed_tagged(&["scatter1"]);
    let findings = run(&g, &t, &ios18(true));
    assert_eq!(rules(&findings), [RuleId::Acyclic, RuleId::NoStaleCopy]);
    let cycle = findings.iter().find(|f| f.rule == RuleId::Acyclic).unwrap();
    let path: Vec<(&str, Option<&str>)> = cycle
        .path
        .iter()
        .map(|s| (g.name(s.node), s.tag.as_deref()))
        .collect();
    let cycle = explain(&g, cycle).to_string();
    assert_eq!(path.len(), 3, "{cycle}");
    assert_eq!(path[1], ("scatter1", None));
    assert_eq!(path[2], ("sum", Some("tag1")));
    assert!(matches!(path[0], ("scatter0" | "copy", Some("tag1"))));
    assert!(cycle.contains("scatter1 [cpu] -> sum [tag1]"), "{cycle}");
}

#[test]
fn a_chain_node_on_cpu_breaks_state_whole() {
    let (g, t) = seed_tagged(&["add"]);
    let findings = run(&g, &t, &ios18(true));
    assert_eq!(rules(&findings), [RuleId::Acyclic, RuleId::StateWhole]);
    let f = findings
        .iter()
        .find(|f| f.rule == RuleId::StateWhole)
        .unwrap();
    assert_eq!(f.nodes, [g.find("add").unwrap()]);
}

#[test]
fn a_reader_of_the_old_value_elsewhere_breaks_state_whole() {
    let mut b = BridgeBuilder::new();
    b.buffer("p", "s", &[4])
        .op("w", "aten.neg.default", &["p"], true)
        .op("peek", "aten.sin.default", &["p"], true)
        .mutates("w", "s")
        .output(&["peek"]);
    let g = load(&b);
    let t = tags(&g, &[("p", "tag0"), ("w", "tag0"), ("peek", "tag1")]);
    assert_eq!(rules(&run(&g, &t, &ios18(true))), [RuleId::StateWhole]);
    let t = tags(&g, &[("p", "tag0"), ("w", "tag0"), ("peek", "tag0")]);
    assert!(rules(&run(&g, &t, &ios18(true))).is_empty());
}

#[test]
fn an_unsupported_tagged_op_breaks_supported() {
    let mut b = seed_graph();
    b.op("odd", "llama.gated_delta_rule.default", &["x"], false);
    let g = load(&b);
    let t = tags(&g, &[("odd", "tag0")]);
    let findings = run(&g, &t, &Options::default());
    assert_eq!(rules(&findings), [RuleId::Supported]);
    assert!(
        explain(&g, &findings[0])
            .message
            .contains("llama.gated_delta_rule.default")
    );
    let t = tags(&g, &[("output", "tag0")]);
    assert_eq!(
        rules(&run(&g, &t, &Options::default())),
        [RuleId::Supported]
    );
}

#[test]
fn a_placeholder_tagged_away_from_its_writer_is_a_stale_copy() {
    let (g, _) = seed_tagged(&[]);
    let t = tags(
        &g,
        &[
            ("b_cache", "tag0"),
            ("mul", "tag0"),
            ("scatter0", "tag1"),
            ("add", "tag1"),
            ("copy", "tag1"),
            ("scatter1", "tag1"),
        ],
    );
    let findings = run(&g, &t, &ios18(true));
    assert!(rules(&findings).contains(&RuleId::NoStaleCopy));
    assert!(
        !rules(&findings).contains(&RuleId::Acyclic),
        "copied placeholders are no dependency"
    );
}

#[test]
fn shared_constants_are_a_cost_with_bytes() {
    let mut b = BridgeBuilder::new();
    b.parameter("w", &[8, 8])
        .user_input("x", &[8])
        .op("a", "aten.mm.default", &["x", "w"], true)
        .op("cpu", "aten.nonzero.default", &["a"], false)
        .op("b", "aten.mm.default", &["cpu", "w"], true)
        .op("c", "aten.mm.default", &["b", "w"], false)
        .output(&["c"]);
    let g = load(&b);
    let t = tags(&g, &[("w", "tag0"), ("a", "tag0"), ("b", "tag1")]);
    let findings = run(&g, &t, &Options::default());
    assert!(rules(&findings).is_empty());
    let cost: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.rule == RuleId::ConstantSharing)
        .collect();
    assert_eq!(cost.len(), 1);
    assert_eq!(cost[0].bytes, Some(2 * 8 * 8 * 4));
    let said = explain(&g, cost[0]).message;
    assert!(said.contains("tag1, cpu"), "{said}");
}

#[test]
fn a_cycle_through_two_convex_partitions() {
    let mut b = BridgeBuilder::new();
    b.user_input("x", &[4])
        .op("a", "aten.neg.default", &["x"], true)
        .op("c", "aten.sin.default", &["x"], true)
        .op("b", "aten.cos.default", &["a"], true)
        .op("d", "aten.exp.default", &["c"], true)
        .output(&["b", "d"]);
    let g = load(&b);
    let t = tags(
        &g,
        &[("a", "tag0"), ("d", "tag0"), ("b", "tag1"), ("c", "tag1")],
    );
    let findings = run(&g, &t, &Options::default());
    assert_eq!(rules(&findings), [RuleId::Acyclic]);
    let f = explain(&g, &findings[0]);
    assert!(f.message.contains("tag0, tag1"), "{f}");
    let rendered = f.to_string();
    assert!(
        rendered.contains("a [tag0] -> b [tag1] ~> c [tag1] -> d [tag0] ~> a [tag0]"),
        "{rendered}"
    );
}

#[test]
fn every_rule_has_an_id_and_a_consequence() {
    for r in RuleId::ALL {
        assert!(!r.consequence().is_empty());
        assert_eq!(serde_json::to_value(r).unwrap(), serde_json::json!(r.id()));
    }
}

#[test]
fn nothing_tagged_breaks_no_rule_by_the_long_way_too() {
    // `check` returns early for a tagging with nothing delegated; the full walk agrees.
    for seed in [1, 2, 3] {
        let text = crate::synthetic::generate(2000, seed).expect("generates");
        let g = crate::import::parse_graph(&text).expect("imports");
        let untagged = Tagging::new(Vec::new(), vec![None; g.len()]);
        let supported = g.supported();
        let edges = Edges::new(&g);
        for o in [ios18(true), ios18(false), Options::default()] {
            assert!(
                Checker::new(&edges, &g, &untagged)
                    .rules(&o, &supported)
                    .is_empty()
            );
            assert!(check(&g, &untagged, &o, &supported).is_empty());
        }
    }
}

#[test]
fn one_view_serves_every_tagging_of_its_graph() {
    // The stock proposals of two executorch versions for a generated graph, checked in one view on
    // two threads at once: each as a view of its own would find.
    let text = crate::synthetic::generate(2000, 7).expect("generates");
    let g = crate::import::parse_graph(&text).expect("imports");
    let supported = g.supported();
    let index = crate::analyse::GraphIndex::new(&g);
    let stock = |version| crate::stock::reproduce(&g, &index, version, &g.options, &supported);
    let (newer, older) = (
        stock(crate::stock::ExecutorchVersion::V1_5),
        stock(crate::stock::ExecutorchVersion::V1_4),
    );
    let o = ios18(false);
    let view = GraphView::default();
    let (first, second) = std::thread::scope(|s| {
        let first = s.spawn(|| check_in(&view, &g, &newer, &o, &supported));
        let second = check_in(&view, &g, &older, &o, &supported);
        (first.join().expect("checks"), second)
    });
    assert!(!first.is_empty() && !second.is_empty());
    assert_eq!(first, check(&g, &newer, &o, &supported));
    assert_eq!(second, check(&g, &older, &o, &supported));
}

#[test]
#[should_panic(expected = "another graph")]
fn a_view_is_of_one_graph() {
    let view = GraphView::default();
    let (g, t) = seed_tagged(&[]);
    let text = crate::synthetic::generate(200, 1).expect("generates");
    let other = crate::import::parse_graph(&text).expect("imports");
    let index = crate::analyse::GraphIndex::new(&other);
    let supported = other.supported();
    let stock = crate::stock::reproduce(
        &other,
        &index,
        crate::stock::ExecutorchVersion::LATEST,
        &other.options,
        &supported,
    );
    let _ = check_in(&view, &other, &stock, &ios18(true), &supported);
    let _ = check_in(&view, &g, &t, &ios18(true), &[]);
}

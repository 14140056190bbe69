use super::*;
use crate::analyse::{MutationKind, analyse};
use crate::check::check;
use crate::import::parse_graph;
use crate::pipeline::plan;
use crate::plan::PlanRequest;

#[test]
fn same_size_and_seed_give_the_same_bytes() {
    assert_eq!(generate(3_000, 7), generate(3_000, 7));
    assert_ne!(generate(3_000, 7), generate(3_000, 8));
}

#[test]
fn sizes_outside_the_range_are_refused() {
    assert_eq!(generate(10, 1), Err(GenerateError::Size(10)));
    assert_eq!(
        generate(MAX_NODES + 1, 1),
        Err(GenerateError::Size(MAX_NODES + 1))
    );
}

#[test]
fn every_size_imports_with_exactly_that_many_nodes() {
    for seed in 0..24 {
        for nodes in [MIN_NODES, 257, 1_000, 4_321] {
            let text = generate(nodes, seed).expect("generates");
            let graph = parse_graph(&text).unwrap_or_else(|e| panic!("{nodes}/{seed}: {e}"));
            assert_eq!(graph.len(), nodes, "seed {seed}");
        }
    }
}

#[test]
fn graphs_hold_every_layer_kind_and_plan_cleanly() {
    let mut seen_targets = std::collections::BTreeSet::new();
    let mut kinds = std::collections::BTreeSet::new();
    for seed in 0..8 {
        let graph = parse_graph(&generate(20_000, seed).expect("generates")).expect("imports");
        let analysis = analyse(&graph);
        for chain in &analysis.buffers {
            kinds.insert(format!("{:?}", chain.kind));
        }
        for node in &graph.nodes {
            if !node.supported {
                seen_targets.insert(node.target.clone());
            }
            if node.target.contains("topk") || node.target.contains("index_put") {
                seen_targets.insert(node.target.clone());
            }
        }
        let request = PlanRequest::new(&graph);
        let p = plan(&graph, &analysis, &request).expect("plans");
        let found = check(
            &graph,
            &p.draft.tagging,
            &p.draft.options,
            &request.supported,
        );
        let broken: Vec<String> = found
            .iter()
            .filter(|f| f.is_violation())
            .map(|f| crate::report::explain(&graph, f).to_string())
            .collect();
        assert!(broken.is_empty(), "seed {seed}: {broken:#?}");
        assert!(p.draft.measure.states() > 0, "seed {seed}");
    }
    for target in [
        "llama.gated_delta_rule.default",
        "aten.cumsum.default",
        "aten.topk.default",
        "aten.index_put.default",
    ] {
        assert!(seen_targets.contains(target), "{target}: {seen_targets:?}");
    }
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [
            format!("{:?}", MutationKind::Slice),
            format!("{:?}", MutationKind::Whole)
        ]
    );
}

#[test]
fn layer_sizes_bound_what_each_layer_writes() {
    // The generator sizes layers before writing them; a bound too small would overshoot `nodes`.
    for (kind, experts) in [
        (Layer::Attention, 0),
        (Layer::LinearAttention, 0),
        (Layer::ShortConv, 0),
        (Layer::MixtureOfExperts, 16),
        (Layer::MixtureOfExperts, 64),
    ] {
        let mut g = Generator {
            doc: DocumentText::with_capacity(0),
            rng: Rng(0),
            island_percent: 100,
        };
        let x = g.doc.user_input("x", &[1, 1, DIM], "float32");
        let ctx = Context {
            input_pos: x,
            cos: x,
            sin: x,
        };
        let before = g.doc.count();
        let _ = g.layer(kind, x, 0, &ctx, experts);
        let written = g.doc.count() - before;
        let bound = Generator::layer_nodes(kind, experts);
        assert!(written <= bound, "{kind:?}: {written} > {bound}");
        assert!(
            written + 8 > bound,
            "{kind:?}: {written} much below {bound}"
        );
    }
}

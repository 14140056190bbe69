//! BOUNDARY_VALUES: values no delegate can take or give at its boundary (rank above 5, a size that
//! is an expression of symbols) stay inside one partition or on CPU, with everything tied to them.

use super::*;
use serde_json::json;

/// Window attention as torchvision's MaxViT and Swin write it: a rank-4 image viewed as rank-6
/// windows, permuted, and viewed back. `middle` is the support of the op between the two views.
fn windows(middle: bool) -> Graph {
    let mut b = BridgeBuilder::new();
    b.user_input("x", &[1, 8, 8, 4])
        .op("split", "aten.view_copy.default", &["x"], true)
        .meta(&[1, 2, 4, 2, 4, 4], "float32")
        .op("swap", "aten.permute_copy.default", &["split"], true)
        .meta(&[1, 2, 2, 4, 4, 4], "float32")
        .op("odd", "aten.sin.default", &["swap"], middle)
        .meta(&[1, 2, 2, 4, 4, 4], "float32")
        .op("merge", "aten.view_copy.default", &["odd"], true)
        .meta(&[4, 16, 4], "float32")
        .op("after", "aten.relu.default", &["merge"], true)
        .meta(&[4, 16, 4], "float32")
        .op("before", "aten.relu.default", &["x"], true)
        .meta(&[1, 8, 8, 4], "float32")
        .output(&["after", "before"]);
    load(&b)
}

fn boundary_decisions(g: &Graph, p: &Plan) -> Vec<Explained> {
    (decisions(g, p).into_iter())
        .filter(|d| d.rule == RuleId::BoundaryValues)
        .collect()
}

#[test]
fn rank_6_values_inside_one_partition_are_planned_as_any_others() {
    let g = windows(true);
    let p = plan_with(&g, |_| {});
    assert_eq!(p.draft.measure.partitions.len(), 1);
    assert!(boundary_decisions(&g, &p).is_empty());
}

#[test]
fn an_op_that_cannot_be_delegated_among_rank_6_values_takes_everything_tied_to_it_to_cpu() {
    let g = windows(false);
    let p = plan_with(&g, |_| {});
    for node in ["split", "swap", "odd", "merge"] {
        assert_eq!(tag(&g, &p, node), None, "{node} runs on CPU");
    }
    // What only reads or makes values a boundary takes is delegated.
    assert!(tag(&g, &p, "after").is_some() && tag(&g, &p, "before").is_some());
    let said = boundary_decisions(&g, &p);
    assert_eq!(said.len(), 1, "{said:#?}");
    assert_eq!(said[0].nodes, ["split", "swap", "odd", "merge"]);
    assert!(
        said[0].message.contains("split: rank 6"),
        "{}",
        said[0].message
    );
    assert!(
        said[0]
            .message
            .contains("odd (aten.sin.default) among them cannot be delegated")
    );
}

#[test]
fn the_checker_finds_a_rank_6_value_crossing_a_boundary() {
    let g = windows(false);
    let mut tags: Vec<Option<u32>> = vec![None; g.len()];
    for node in ["split", "swap"] {
        tags[g.find(node).unwrap().index()] = Some(0);
    }
    let tagging = crate::tagging::Tagging::new(vec!["tag0".into()], tags);
    let findings = crate::check::check(&g, &tagging, &g.options, &g.supported());
    let broken: Vec<String> = (findings.iter())
        .filter(|f| f.rule == RuleId::BoundaryValues)
        .map(|f| crate::report::explain(&g, f).message)
        .collect();
    assert_eq!(
        broken,
        [
            "swap is an output of tag0, but it has rank 6, and a Core ML model's inputs and outputs have rank 5 or less"
        ]
    );
}

/// A convolution network with dynamic height, as executorch's model suite exports it: the input's
/// size `16*s0` is range-constrained, what a strided convolution makes of it (`8*s0`) is not.
fn dynamic(middle: bool, ranges: bool) -> Graph {
    let mut b = BridgeBuilder::new();
    b.user_input("x", &[1, 3, 4, 4])
        .symbolic_meta(json!([1, 3, "16*s0", 16]), "float32")
        .parameter("w", &[8, 3, 3, 3])
        .op("conv", "aten.convolution.default", &["x", "w"], true)
        .symbolic_meta(json!([1, 8, "8*s0", 8]), "float32")
        .op("act", "aten.hardtanh.default", &["conv"], middle)
        .symbolic_meta(json!([1, 8, "8*s0", 8]), "float32")
        .op("pool", "aten.mean.dim", &["act"], true)
        .meta(&[1, 8, 1, 1], "float32")
        .op("head", "aten.relu.default", &["pool"], true)
        .meta(&[1, 8, 1, 1], "float32")
        .output(&["head"]);
    if ranges {
        b.range("s0", Some(1), Some(16))
            .range("16*s0", Some(16), Some(256));
    }
    load(&b)
}

#[test]
fn dynamic_sizes_inside_one_partition_are_planned_as_any_others() {
    let g = dynamic(true, true);
    let p = plan_with(&g, |_| {});
    assert_eq!(p.draft.measure.partitions.len(), 1);
    assert!(tag(&g, &p, "conv").is_some() && tag(&g, &p, "head").is_some());
}

#[test]
fn an_expression_size_never_crosses_so_the_ops_tied_to_it_run_on_cpu() {
    let g = dynamic(false, true);
    let p = plan_with(&g, |_| {});
    // conv makes 8*s0 and act (unsupported) reads it: they share a side, CPU; so does pool, which
    // reads act's 8*s0. head reads a static value: delegated.
    for node in ["conv", "act", "pool"] {
        assert_eq!(tag(&g, &p, node), None, "{node} runs on CPU");
    }
    assert!(tag(&g, &p, "head").is_some());
    let said = boundary_decisions(&g, &p);
    assert_eq!(said.len(), 1);
    assert!(
        said[0].message.contains("conv: size 8*s0"),
        "{}",
        said[0].message
    );
}

#[test]
fn without_range_constraints_symbolic_sizes_are_not_judged() {
    let g = dynamic(false, false);
    assert!(g.range_constraints.is_none());
    let p = plan_with(&g, |_| {});
    assert!(tag(&g, &p, "conv").is_some(), "conv is delegated as before");
    assert!(boundary_decisions(&g, &p).is_empty());
}

#[test]
fn a_value_the_graph_returns_or_a_placeholder_gives_is_not_delegated_when_a_boundary_cannot_take_it()
 {
    // The output reads a rank-6 value: its maker cannot be a delegate's.
    let mut b = BridgeBuilder::new();
    b.user_input("x", &[1, 8, 8, 4])
        .op("split", "aten.view_copy.default", &["x"], true)
        .meta(&[1, 2, 4, 2, 4, 4], "float32")
        .op("keep", "aten.relu.default", &["x"], true)
        .meta(&[1, 8, 8, 4], "float32")
        .output(&["split", "keep"]);
    let g = load(&b);
    let p = plan_with(&g, |_| {});
    assert_eq!(tag(&g, &p, "split"), None);
    assert!(tag(&g, &p, "keep").is_some());
    assert!(
        boundary_decisions(&g, &p)[0]
            .message
            .contains("the graph's output reads one of them")
    );
    // A user input of an expression size: whatever reads it runs on CPU.
    let mut b = BridgeBuilder::new();
    b.user_input("x", &[1, 4])
        .symbolic_meta(json!([1, "2*s0"]), "float32")
        .op("a", "aten.relu.default", &["x"], true)
        .symbolic_meta(json!([1, "2*s0"]), "float32")
        .op("s", "aten.sum.default", &["a"], true)
        .meta(&[], "float32")
        .output(&["s"]);
    b.range("s0", Some(1), Some(8));
    let g = load(&b);
    let p = plan_with(&g, |_| {});
    assert_eq!((tag(&g, &p, "a"), tag(&g, &p, "s")), (None, None));
    assert!(
        boundary_decisions(&g, &p)[0]
            .message
            .contains("x is a placeholder")
    );
}

#[test]
fn a_cut_asked_through_tied_ops_moves_them_to_cpu_with_the_reason() {
    // Two blocks; the second's rank-6 views are tied, and a cut asked before the permute runs
    // through them.
    let mut b = BridgeBuilder::new();
    b.user_input("x", &[1, 8, 8, 4])
        .op("first", "aten.relu.default", &["x"], true)
        .meta(&[1, 8, 8, 4], "float32")
        .module("blocks.0")
        .op("split", "aten.view_copy.default", &["first"], true)
        .meta(&[1, 2, 4, 2, 4, 4], "float32")
        .module("blocks.1.split")
        .op("swap", "aten.permute_copy.default", &["split"], true)
        .meta(&[1, 2, 2, 4, 4, 4], "float32")
        .module("blocks.1.swap")
        .op("merge", "aten.view_copy.default", &["swap"], true)
        .meta(&[4, 16, 4], "float32")
        .module("blocks.1.merge")
        .output(&["merge"]);
    let g = load(&b);
    let p = plan_with(&g, |r| {
        r.options.cut_before = vec!["blocks.1.swap".into()];
    });
    for node in ["split", "swap", "merge"] {
        assert_eq!(tag(&g, &p, node), None, "{node} runs on CPU");
    }
    let said = boundary_decisions(&g, &p);
    assert!(
        said[0].message.contains("runs through them, before swap"),
        "{}",
        said[0].message
    );
}

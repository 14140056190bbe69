//! Small graphs shared by the unit tests.

use crate::graph::Graph;
use crate::import::parse_graph;
use crate::synthetic::BridgeBuilder;

/// The seed report's module as executorch 1.5.1 exports it: `cache[:1].mul_(0.9)` then
/// `cache[:1].copy_(cache[:1] + x)`, returning `cache.sum(1) + x`.
pub fn seed_graph() -> BridgeBuilder {
    let mut b = BridgeBuilder::new();
    b.buffer("b_cache", "cache", &[1, 16, 8])
        .constant("c_scale", &[])
        .user_input("x", &[1, 8])
        .op("mul", "aten.mul.Tensor", &["b_cache", "c_scale"], true)
        .op_with(
            "scatter0",
            "aten.slice_scatter.default",
            &["b_cache", "mul"],
            &[0.into(), 0.into()],
            true,
        )
        .op_with(
            "unsq",
            "aten.unsqueeze_copy.default",
            &["x"],
            &[1.into()],
            true,
        )
        .op("add", "aten.add.Tensor", &["scatter0", "unsq"], true)
        .op("copy", "aten.copy.default", &["scatter0", "add"], true)
        .op_with(
            "scatter1",
            "aten.slice_scatter.default",
            &["scatter0", "copy"],
            &[0.into(), 0.into()],
            true,
        )
        .op("sum", "aten.sum.dim_IntList", &["scatter1"], true)
        .op("out", "aten.add.Tensor", &["sum", "x"], true)
        .mutates("scatter1", "cache")
        .output(&["out"]);
    b
}

pub fn load(b: &BridgeBuilder) -> Graph {
    match parse_graph(&b.to_json()) {
        Ok(g) => g,
        Err(e) => panic!("fixture does not import: {e}"),
    }
}

//! The ops the layers are built from (projections, RMS norm, views, slices, convolution, splits),
//! each written as the nodes executorch's export gives it.

use super::text::{ArgText, DocumentText, Ref};
use super::{CONV, DIM};

impl DocumentText {
    pub(super) fn unary(&mut self, target: &str, x: Ref, shape: &[u64]) -> Ref {
        self.op(target, &[ArgText::Node(x)], true, shape)
    }

    pub(super) fn binary(&mut self, target: &str, a: Ref, b: Ref, shape: &[u64]) -> Ref {
        self.op(target, &[ArgText::Node(a), ArgText::Node(b)], true, shape)
    }

    pub(super) fn linear(&mut self, x: Ref, fqn: &str, out: u64, inp: u64) -> Ref {
        let w = self.parameter(fqn, &[out, inp]);
        self.binary("aten.linear.default", x, w, &[1, 1, out])
    }

    /// RMS norm as executorch's llama exports it: six ops and a lifted epsilon.
    pub(super) fn rms_norm(&mut self, x: Ref, fqn: &str) -> Ref {
        let w = self.parameter(fqn, &[DIM]);
        let eps = self.constant();
        let sq = self.binary("aten.mul.Tensor", x, x, &[1, 1, DIM]);
        let mean = self.op(
            "aten.mean.dim",
            &[
                ArgText::Node(sq),
                ArgText::Lit("[-1]"),
                ArgText::Lit("true"),
            ],
            true,
            &[1, 1, 1],
        );
        let add = self.binary("aten.add.Tensor", mean, eps, &[1, 1, 1]);
        let rsqrt = self.unary("aten.rsqrt.default", add, &[1, 1, 1]);
        let normed = self.binary("aten.mul.Tensor", x, rsqrt, &[1, 1, DIM]);
        self.binary("aten.mul.Tensor", normed, w, &[1, 1, DIM])
    }

    pub(super) fn view(&mut self, x: Ref, shape: &[u64]) -> Ref {
        let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
        let lit = format!("[{}]", dims.join(","));
        self.op(
            "aten.view_copy.default",
            &[ArgText::Node(x), ArgText::Lit(&lit)],
            true,
            shape,
        )
    }

    pub(super) fn permute(&mut self, x: Ref, dims: &str, shape: &[u64]) -> Ref {
        self.op(
            "aten.permute_copy.default",
            &[ArgText::Node(x), ArgText::Lit(dims)],
            true,
            shape,
        )
    }

    /// `x[..., start:]` along `dim`, as FX writes it (end `i64::MAX`).
    pub(super) fn slice_copy(&mut self, x: Ref, dim: &str, start: &str, shape: &[u64]) -> Ref {
        self.op(
            "aten.slice_copy.Tensor",
            &[
                ArgText::Node(x),
                ArgText::Lit(dim),
                ArgText::Lit(start),
                ArgText::Lit("9223372036854775807"),
            ],
            true,
            shape,
        )
    }

    /// A depthwise causal convolution over the last axis, with its weight.
    pub(super) fn depthwise_conv(&mut self, x: Ref, fqn: &str, channels: u64, out_len: u64) -> Ref {
        let w = self.parameter(fqn, &[channels, 1, CONV]);
        let groups = channels.to_string();
        self.op(
            "aten.conv1d.default",
            &[
                ArgText::Node(x),
                ArgText::Node(w),
                ArgText::Lit("null"),
                ArgText::Lit("[1]"),
                ArgText::Lit("[0]"),
                ArgText::Lit("[1]"),
                ArgText::Lit(&groups),
            ],
            true,
            &[1, channels, out_len],
        )
    }

    /// `split_with_sizes` into three equal parts along `dim`, and a `getitem` for each.
    pub(super) fn split3(&mut self, x: Ref, dim: &str, part: &[u64]) -> [Ref; 3] {
        let split = self.op(
            "aten.split_with_sizes_copy.default",
            &[
                ArgText::Node(x),
                ArgText::Lit("[64, 64, 64]"),
                ArgText::Lit(dim),
            ],
            true,
            &[],
        );
        [0, 1, 2].map(|i| {
            let lit = i.to_string();
            self.op(
                "getitem",
                &[ArgText::Node(split), ArgText::Lit(&lit)],
                true,
                part,
            )
        })
    }

    pub(super) fn slice_scatter(&mut self, base: Ref, src: Ref, shape: &[u64]) -> Ref {
        self.op(
            "aten.slice_scatter.default",
            &[
                ArgText::Node(base),
                ArgText::Node(src),
                ArgText::Lit("0"),
                ArgText::Lit("0"),
                ArgText::Lit("1"),
            ],
            true,
            shape,
        )
    }
}

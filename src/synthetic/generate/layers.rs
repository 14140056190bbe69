//! The LLM layers (attention, linear attention, short convolution, mixture of experts) and the
//! SwiGLU MLP with its unsupported islands, written through one `Generator`.

use super::rng::Rng;
use super::text::{ArgText, DocumentText, Ref};
use super::{CONV, DIM, FFN, HEAD_DIM, HEADS, KV_DIM, SEQ};

/// The layer kinds, in the order their weights are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layer {
    Attention,
    LinearAttention,
    ShortConv,
    MixtureOfExperts,
}

/// Inputs every layer may read.
pub(super) struct Context {
    pub(super) input_pos: Ref,
    pub(super) cos: Ref,
    pub(super) sin: Ref,
}

/// Writes layers into the document, drawing their islands from the seed's `Rng`.
pub(super) struct Generator {
    pub(super) doc: DocumentText,
    pub(super) rng: Rng,
    /// Percent chance that an MLP holds an unsupported island.
    pub(super) island_percent: u64,
}

impl Generator {
    fn mlp(&mut self, x: Ref, prefix: &str) -> Ref {
        let h = self.doc.rms_norm(x, &format!("{prefix}.ffn_norm.weight"));
        let mut gate = self
            .doc
            .linear(h, &format!("{prefix}.feed_forward.w1.weight"), FFN, DIM);
        if self.rng.chance(self.island_percent) {
            // An op Core ML cannot run, between the gate projection and its activation.
            for _ in 0..1 + self.rng.below(3) {
                gate = self.doc.op(
                    "aten.cumsum.default",
                    &[ArgText::Node(gate), ArgText::Lit("-1")],
                    false,
                    &[1, 1, FFN],
                );
            }
        }
        let act = self.doc.unary("aten.silu.default", gate, &[1, 1, FFN]);
        let up = self
            .doc
            .linear(h, &format!("{prefix}.feed_forward.w3.weight"), FFN, DIM);
        let prod = self.doc.binary("aten.mul.Tensor", act, up, &[1, 1, FFN]);
        let down = self
            .doc
            .linear(prod, &format!("{prefix}.feed_forward.w2.weight"), DIM, FFN);
        self.doc.binary("aten.add.Tensor", x, down, &[1, 1, DIM])
    }

    fn rope(&mut self, x: Ref, ctx: &Context, heads: u64) -> Ref {
        let shape = [1, 1, heads, HEAD_DIM];
        let c = self.doc.binary("aten.mul.Tensor", x, ctx.cos, &shape);
        let s = self.doc.binary("aten.mul.Tensor", x, ctx.sin, &shape);
        self.doc.binary("aten.add.Tensor", c, s, &shape)
    }

    /// A KV cache entry: the placeholder, and `index_put` at the input position as its writer.
    fn cache_update(&mut self, fqn: &str, value: Ref, ctx: &Context) -> Ref {
        let cache_shape = [1, KV_DIM / HEAD_DIM, SEQ, HEAD_DIM];
        let cache = self.doc.buffer(fqn, &cache_shape);
        let pos = [ctx.input_pos];
        let put = self.doc.op(
            "aten.index_put.default",
            &[
                ArgText::Node(cache),
                ArgText::Lit("[null, null]"),
                ArgText::Nodes(&pos),
                ArgText::Node(value),
            ],
            true,
            &cache_shape,
        );
        self.doc.mutations.push((put.0, fqn.to_string()));
        put
    }

    fn attention(&mut self, x: Ref, l: usize, ctx: &Context) -> Ref {
        let p = format!("layers.{l}.attention");
        let h = self
            .doc
            .rms_norm(x, &format!("layers.{l}.attention_norm.weight"));
        let q = self.doc.linear(h, &format!("{p}.wq.weight"), DIM, DIM);
        let k = self.doc.linear(h, &format!("{p}.wk.weight"), KV_DIM, DIM);
        let v = self.doc.linear(h, &format!("{p}.wv.weight"), KV_DIM, DIM);
        let q = self.doc.view(q, &[1, 1, HEADS, HEAD_DIM]);
        let k = self.doc.view(k, &[1, 1, KV_DIM / HEAD_DIM, HEAD_DIM]);
        let v = self.doc.view(v, &[1, 1, KV_DIM / HEAD_DIM, HEAD_DIM]);
        let q = self.rope(q, ctx, HEADS);
        let k = self.rope(k, ctx, KV_DIM / HEAD_DIM);
        let k_cache = self.cache_update(&format!("{p}.kv_cache.k_cache"), k, ctx);
        let v_cache = self.cache_update(&format!("{p}.kv_cache.v_cache"), v, ctx);
        let attn = self.doc.op(
            "aten.scaled_dot_product_attention.default",
            &[
                ArgText::Node(q),
                ArgText::Node(k_cache),
                ArgText::Node(v_cache),
                ArgText::Lit("null"),
                ArgText::Lit("0.0"),
                ArgText::Lit("true"),
            ],
            true,
            &[1, HEADS, 1, HEAD_DIM],
        );
        let flat = self.doc.view(attn, &[1, 1, DIM]);
        let out = self.doc.linear(flat, &format!("{p}.wo.weight"), DIM, DIM);
        self.doc.binary("aten.add.Tensor", x, out, &[1, 1, DIM])
    }

    /// The reset gate every stateful recurrent layer computes from the input position.
    fn reset_gate(&mut self, ctx: &Context) -> Ref {
        let first = self.doc.op(
            "aten.select_copy.int",
            &[
                ArgText::Node(ctx.input_pos),
                ArgText::Lit("0"),
                ArgText::Lit("0"),
            ],
            true,
            &[],
        );
        let is_start = self.doc.op(
            "aten.eq.Scalar",
            &[ArgText::Node(first), ArgText::Lit("0")],
            true,
            &[],
        );
        let as_float = self
            .doc
            .unary("dim_order_ops._to_dim_order_copy.default", is_start, &[]);
        self.doc.op(
            "aten.rsub.Scalar",
            &[ArgText::Node(as_float), ArgText::Lit("1.0")],
            true,
            &[],
        )
    }

    fn linear_attention(&mut self, x: Ref, l: usize, ctx: &Context) -> Ref {
        let p = format!("layers.{l}.attention");
        let qkv_dim = 3 * DIM;
        let conv_shape = [1, qkv_dim, CONV];
        let rec_shape = [1, HEADS, HEAD_DIM, HEAD_DIM];
        let h = self
            .doc
            .rms_norm(x, &format!("layers.{l}.attention_norm.weight"));
        let keep = self.reset_gate(ctx);
        let conv_fqn = format!("{p}.conv_state");
        let conv_state = self.doc.buffer(&conv_fqn, &conv_shape);
        let conv_kept = self
            .doc
            .binary("aten.mul.Tensor", conv_state, keep, &conv_shape);
        let conv_reset = self.doc.slice_scatter(conv_state, conv_kept, &conv_shape);
        let rec_fqn = format!("{p}.recurrent_state");
        let rec_state = self.doc.buffer(&rec_fqn, &rec_shape);
        let rec_kept = self
            .doc
            .binary("aten.mul.Tensor", rec_state, keep, &rec_shape);
        let rec_reset = self.doc.slice_scatter(rec_state, rec_kept, &rec_shape);

        let qkv = self
            .doc
            .linear(h, &format!("{p}.in_proj_qkv.weight"), qkv_dim, DIM);
        let z = self
            .doc
            .linear(h, &format!("{p}.in_proj_z.weight"), DIM, DIM);
        let z = self.doc.view(z, &[1, 1, HEADS, HEAD_DIM]);
        let b = self
            .doc
            .linear(h, &format!("{p}.in_proj_b.weight"), HEADS, DIM);
        let a = self
            .doc
            .linear(h, &format!("{p}.in_proj_a.weight"), HEADS, DIM);

        // Conv state: append the new column, keep the last CONV, write back.
        let col = self.doc.permute(qkv, "[0, 2, 1]", &[1, qkv_dim, 1]);
        let window = [conv_reset, col];
        let cat = self.doc.op(
            "aten.cat.default",
            &[ArgText::Nodes(&window), ArgText::Lit("-1")],
            true,
            &[1, qkv_dim, CONV + 1],
        );
        let tail = self.doc.slice_copy(cat, "2", "-4", &conv_shape);
        let copied = self
            .doc
            .binary("aten.copy.default", conv_reset, tail, &conv_shape);
        let conv_new = self.doc.slice_scatter(conv_reset, copied, &conv_shape);
        self.doc.mutations.push((conv_new.0, conv_fqn));

        let conv = self
            .doc
            .depthwise_conv(cat, &format!("{p}.conv1d.weight"), qkv_dim, 2);
        let last = self.doc.slice_copy(conv, "2", "-1", &[1, qkv_dim, 1]);
        let act = self.doc.unary("aten.silu.default", last, &[1, qkv_dim, 1]);
        let row = self.doc.permute(act, "[0, 2, 1]", &[1, 1, qkv_dim]);
        let mut heads = Vec::with_capacity(3);
        for item in self.doc.split3(row, "-1", &[1, 1, DIM]) {
            let v = self.doc.view(item, &[1, 1, HEADS, HEAD_DIM]);
            heads.push(
                self.doc
                    .permute(v, "[0, 2, 1, 3]", &[1, HEADS, 1, HEAD_DIM]),
            );
        }
        let beta = self.doc.unary("aten.sigmoid.default", b, &[1, 1, HEADS]);
        let a_log = self.doc.parameter(&format!("{p}.A_log"), &[HEADS]);
        let decay = self.doc.unary("aten.exp.default", a_log, &[HEADS]);
        let decay = self.doc.unary("aten.neg.default", decay, &[HEADS]);
        let dt_bias = self.doc.parameter(&format!("{p}.dt_bias"), &[HEADS]);
        let a = self
            .doc
            .binary("aten.add.Tensor", a, dt_bias, &[1, 1, HEADS]);
        let a = self.doc.unary("aten.softplus.default", a, &[1, 1, HEADS]);
        let g = self.doc.binary("aten.mul.Tensor", decay, a, &[1, 1, HEADS]);

        // The recurrence Core ML cannot run sits inside the recurrent state's chain.
        let rule = self.doc.op(
            "llama.gated_delta_rule.default",
            &[
                ArgText::Node(heads[0]),
                ArgText::Node(heads[1]),
                ArgText::Node(heads[2]),
                ArgText::Node(g),
                ArgText::Node(beta),
                ArgText::Node(rec_reset),
            ],
            false,
            &[],
        );
        let out = self.doc.op(
            "getitem",
            &[ArgText::Node(rule), ArgText::Lit("0")],
            true,
            &[1, HEADS, 1, HEAD_DIM],
        );
        let state = self.doc.op(
            "getitem",
            &[ArgText::Node(rule), ArgText::Lit("1")],
            true,
            &rec_shape,
        );
        let copied = self
            .doc
            .binary("aten.copy.default", rec_reset, state, &rec_shape);
        let rec_new = self.doc.slice_scatter(rec_reset, copied, &rec_shape);
        self.doc.mutations.push((rec_new.0, rec_fqn));

        let out = self
            .doc
            .permute(out, "[0, 2, 1, 3]", &[1, 1, HEADS, HEAD_DIM]);
        let gate = self
            .doc
            .unary("aten.silu.default", z, &[1, 1, HEADS, HEAD_DIM]);
        let gated = self
            .doc
            .binary("aten.mul.Tensor", out, gate, &[1, 1, HEADS, HEAD_DIM]);
        let flat = self.doc.view(gated, &[1, 1, DIM]);
        let proj = self
            .doc
            .linear(flat, &format!("{p}.out_proj.weight"), DIM, DIM);
        self.doc.binary("aten.add.Tensor", x, proj, &[1, 1, DIM])
    }

    fn short_conv(&mut self, x: Ref, l: usize) -> Ref {
        let p = format!("layers.{l}.conv");
        let state_shape = [1, DIM, CONV - 1];
        let h = self
            .doc
            .rms_norm(x, &format!("layers.{l}.operator_norm.weight"));
        let bcx = self
            .doc
            .linear(h, &format!("{p}.in_proj.weight"), 3 * DIM, DIM);
        let bcx = self.doc.permute(bcx, "[0, 2, 1]", &[1, 3 * DIM, 1]);
        let parts = self.doc.split3(bcx, "-2", &[1, DIM, 1]);
        let bx = self
            .doc
            .binary("aten.mul.Tensor", parts[0], parts[2], &[1, DIM, 1]);
        let fqn = format!("{p}.conv_state");
        let state = self.doc.buffer(&fqn, &state_shape);
        let window = [state, bx];
        let cat = self.doc.op(
            "aten.cat.default",
            &[ArgText::Nodes(&window), ArgText::Lit("-1")],
            true,
            &[1, DIM, CONV],
        );
        let tail = self.doc.slice_copy(cat, "-1", "1", &state_shape);
        let written = self
            .doc
            .binary("aten.copy.default", state, tail, &state_shape);
        self.doc.mutations.push((written.0, fqn));
        let conv = self
            .doc
            .depthwise_conv(cat, &format!("{p}.conv.weight"), DIM, 1);
        let y = self
            .doc
            .binary("aten.mul.Tensor", parts[1], conv, &[1, DIM, 1]);
        let y = self.doc.permute(y, "[0, 2, 1]", &[1, 1, DIM]);
        let out = self
            .doc
            .linear(y, &format!("{p}.out_proj.weight"), DIM, DIM);
        self.doc.binary("aten.add.Tensor", x, out, &[1, 1, DIM])
    }

    fn experts(&mut self, x: Ref, l: usize, experts: u64) -> Ref {
        let p = format!("layers.{l}.block_sparse_moe");
        let h = self.doc.rms_norm(x, &format!("layers.{l}.ffn_norm.weight"));
        let logits = self
            .doc
            .linear(h, &format!("{p}.gate.weight"), experts, DIM);
        let probs = self.doc.op(
            "aten._softmax.default",
            &[
                ArgText::Node(logits),
                ArgText::Lit("-1"),
                ArgText::Lit("false"),
            ],
            true,
            &[1, 1, experts],
        );
        let top = self.doc.op(
            "aten.topk.default",
            &[ArgText::Node(probs), ArgText::Lit("2")],
            true,
            &[],
        );
        let weights = self.doc.op(
            "getitem",
            &[ArgText::Node(top), ArgText::Lit("0")],
            true,
            &[1, 1, 2],
        );
        let mut acc: Option<Ref> = None;
        for e in 0..experts {
            let ep = format!("{p}.experts.{e}");
            let gate = self.doc.linear(h, &format!("{ep}.w1.weight"), FFN, DIM);
            let act = self.doc.unary("aten.silu.default", gate, &[1, 1, FFN]);
            let up = self.doc.linear(h, &format!("{ep}.w3.weight"), FFN, DIM);
            let prod = self.doc.binary("aten.mul.Tensor", act, up, &[1, 1, FFN]);
            let down = self.doc.linear(prod, &format!("{ep}.w2.weight"), DIM, FFN);
            let lit = (e % 2).to_string();
            let weight = self.doc.op(
                "aten.select_copy.int",
                &[
                    ArgText::Node(weights),
                    ArgText::Lit("-1"),
                    ArgText::Lit(&lit),
                ],
                true,
                &[1, 1],
            );
            let scaled = self
                .doc
                .binary("aten.mul.Tensor", down, weight, &[1, 1, DIM]);
            acc = Some(match acc {
                None => scaled,
                Some(a) => self.doc.binary("aten.add.Tensor", a, scaled, &[1, 1, DIM]),
            });
        }
        match acc {
            Some(a) => self.doc.binary("aten.add.Tensor", x, a, &[1, 1, DIM]),
            None => x,
        }
    }

    pub(super) fn layer(
        &mut self,
        kind: Layer,
        x: Ref,
        l: usize,
        ctx: &Context,
        experts: u64,
    ) -> Ref {
        let prefix = format!("layers.{l}");
        match kind {
            Layer::Attention => {
                let x = self.attention(x, l, ctx);
                self.mlp(x, &prefix)
            }
            Layer::LinearAttention => {
                let x = self.linear_attention(x, l, ctx);
                self.mlp(x, &prefix)
            }
            Layer::ShortConv => {
                let x = self.short_conv(x, l);
                self.mlp(x, &prefix)
            }
            Layer::MixtureOfExperts => {
                let x = self.attention(x, l, ctx);
                self.experts(x, l, experts)
            }
        }
    }

    /// The most nodes a layer of this kind writes (parameters and buffers included), for sizing.
    pub(super) fn layer_nodes(kind: Layer, experts: u64) -> usize {
        // 17 nodes and an island of up to 3.
        const MLP: usize = 20;
        match kind {
            Layer::Attention => 32 + MLP,
            Layer::LinearAttention => 67 + MLP,
            Layer::ShortConv => 27 + MLP,
            Layer::MixtureOfExperts => 45 + 11 * experts as usize,
        }
    }
}

//! LLM-shaped graphs in bridge JSON, deterministic from a seed: for benchmarks, what-if at scale and
//! property tests on graphs the size of real models and far beyond.
//!
//! The layers follow the exports in data/ (executorch 1.5.1, `examples.models.llama`):
//! - attention: RMS norm, q/k/v projections, rotary embedding, a KV cache per K and V updated by
//!   `index_put`, `scaled_dot_product_attention`, output projection;
//! - linear attention (Qwen3.5's gated delta-net): a conv state and a recurrent state, both reset
//!   and updated through `slice_scatter`, with `llama.gated_delta_rule` (which Core ML cannot run)
//!   inside the recurrent state's chain;
//! - short convolution (LFM2.5): a conv state rolled by `cat`, `slice_copy` and `copy`;
//! - mixture of experts: a router, top-k and one MLP per expert (16 to 64 experts), after attention.
//!
//! Every layer but MoE ends in a SwiGLU MLP; some MLPs hold an unsupported island (one to three ops
//! Core ML cannot run). Node names follow FX (`aten_mul_tensor_12`). The same `(nodes, seed)` gives
//! the same bytes on every run and platform; the node count is exactly `nodes`.

use crate::import::GRAPH_SCHEMA;
use std::collections::HashMap;
use std::fmt::Write;

/// Smallest graph the generator writes: an embedding, one layer and the head.
pub const MIN_NODES: usize = 200;
/// Largest: node ids are `u32` and the text must stay well inside memory.
pub const MAX_NODES: usize = 20_000_000;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GenerateError {
    #[error("cannot generate {0} nodes: choose between {MIN_NODES} and {MAX_NODES}")]
    Size(usize),
}

/// The layer kinds, in the order their weights are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layer {
    Attention,
    LinearAttention,
    ShortConv,
    MixtureOfExperts,
}

/// Hidden width and the other sizes; shrunk like the params in python/partition_planner/params/.
const DIM: u64 = 64;
const HEADS: u64 = 4;
const HEAD_DIM: u64 = 16;
const KV_DIM: u64 = 32;
const FFN: u64 = 128;
const SEQ: u64 = 128;
const CONV: u64 = 4;

/// SplitMix64: small, fast and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A node already written, by index into the names.
#[derive(Clone, Copy)]
struct Ref(u32);

/// One argument of a `call_function` node.
enum Arg<'a> {
    Node(Ref),
    Nodes(&'a [Ref]),
    /// A literal, as JSON text.
    Lit(&'a str),
}

struct Writer {
    nodes: String,
    names: Vec<String>,
    /// Per FX name stem, how many nodes carry it (FX appends `_N` from the second on).
    stems: HashMap<String, u32>,
    parameters: Vec<(u32, String)>,
    buffers: Vec<(u32, String)>,
    constants: Vec<(u32, String)>,
    mutations: Vec<(u32, String)>,
    user_inputs: Vec<u32>,
}

impl Writer {
    fn with_capacity(nodes: usize) -> Self {
        Writer {
            nodes: String::with_capacity(nodes * 190),
            names: Vec::with_capacity(nodes),
            stems: HashMap::new(),
            parameters: Vec::new(),
            buffers: Vec::new(),
            constants: Vec::new(),
            mutations: Vec::new(),
            user_inputs: Vec::new(),
        }
    }

    fn count(&self) -> usize {
        self.names.len()
    }

    fn name_for(&mut self, stem: &str) -> String {
        let n = self.stems.entry(stem.to_string()).or_insert(0);
        let name = if *n == 0 {
            stem.to_string()
        } else {
            format!("{stem}_{n}")
        };
        *n += 1;
        name
    }

    fn begin(&mut self, name: &str) {
        if !self.nodes.is_empty() {
            self.nodes.push(',');
        }
        self.names.push(name.to_string());
        let _ = write!(self.nodes, "\n{{\"name\":\"{name}\"");
    }

    fn meta(&mut self, shape: &[u64], dtype: &str) {
        let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
        let _ = write!(
            self.nodes,
            ",\"meta\":{{\"shape\":[{}],\"dtype\":\"{dtype}\"}}}}",
            dims.join(",")
        );
    }

    fn placeholder(&mut self, name: &str, shape: &[u64], dtype: &str) -> Ref {
        let name = self.name_for(name);
        self.begin(&name);
        let _ = write!(
            self.nodes,
            ",\"op\":\"placeholder\",\"target\":\"{name}\",\"args\":[],\"kwargs\":{{}}"
        );
        self.meta(shape, dtype);
        Ref(self.count() as u32 - 1)
    }

    fn parameter(&mut self, fqn: &str, shape: &[u64]) -> Ref {
        let r = self.placeholder(&format!("p_{}", fqn.replace('.', "_")), shape, "float32");
        self.parameters.push((r.0, fqn.to_string()));
        r
    }

    fn buffer(&mut self, fqn: &str, shape: &[u64]) -> Ref {
        let r = self.placeholder(&format!("b_{}", fqn.replace('.', "_")), shape, "float32");
        self.buffers.push((r.0, fqn.to_string()));
        r
    }

    fn constant(&mut self) -> Ref {
        let r = self.placeholder("_lifted_tensor_constant", &[], "float32");
        let name = self.names[r.0 as usize].clone();
        self.constants.push((r.0, name));
        r
    }

    fn user_input(&mut self, name: &str, shape: &[u64], dtype: &str) -> Ref {
        let r = self.placeholder(name, shape, dtype);
        self.user_inputs.push(r.0);
        r
    }

    fn op(&mut self, target: &str, args: &[Arg], supported: bool, shape: &[u64]) -> Ref {
        let stem = target.replace('.', "_").to_ascii_lowercase();
        let name = self.name_for(&stem);
        self.begin(&name);
        let _ = write!(
            self.nodes,
            ",\"op\":\"call_function\",\"target\":\"{target}\",\"args\":["
        );
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                self.nodes.push(',');
            }
            match arg {
                Arg::Node(r) => self.write_ref(*r),
                Arg::Nodes(rs) => {
                    self.nodes.push('[');
                    for (j, r) in rs.iter().enumerate() {
                        if j > 0 {
                            self.nodes.push(',');
                        }
                        self.write_ref(*r);
                    }
                    self.nodes.push(']');
                }
                Arg::Lit(text) => self.nodes.push_str(text),
            }
        }
        let _ = write!(
            self.nodes,
            "],\"kwargs\":{{}},\"supported\":{supported},\"delegation_tag\":null"
        );
        self.meta(shape, "float32");
        Ref(self.count() as u32 - 1)
    }

    fn write_ref(&mut self, r: Ref) {
        let _ = write!(self.nodes, "{{\"node\":\"{}\"}}", self.names[r.0 as usize]);
    }

    fn unary(&mut self, target: &str, x: Ref, shape: &[u64]) -> Ref {
        self.op(target, &[Arg::Node(x)], true, shape)
    }

    fn binary(&mut self, target: &str, a: Ref, b: Ref, shape: &[u64]) -> Ref {
        self.op(target, &[Arg::Node(a), Arg::Node(b)], true, shape)
    }

    fn linear(&mut self, x: Ref, fqn: &str, out: u64, inp: u64) -> Ref {
        let w = self.parameter(fqn, &[out, inp]);
        self.binary("aten.linear.default", x, w, &[1, 1, out])
    }

    /// RMS norm as executorch's llama exports it: six ops and a lifted epsilon.
    fn rms_norm(&mut self, x: Ref, fqn: &str) -> Ref {
        let w = self.parameter(fqn, &[DIM]);
        let eps = self.constant();
        let sq = self.binary("aten.mul.Tensor", x, x, &[1, 1, DIM]);
        let mean = self.op(
            "aten.mean.dim",
            &[Arg::Node(sq), Arg::Lit("[-1]"), Arg::Lit("true")],
            true,
            &[1, 1, 1],
        );
        let add = self.binary("aten.add.Tensor", mean, eps, &[1, 1, 1]);
        let rsqrt = self.unary("aten.rsqrt.default", add, &[1, 1, 1]);
        let normed = self.binary("aten.mul.Tensor", x, rsqrt, &[1, 1, DIM]);
        self.binary("aten.mul.Tensor", normed, w, &[1, 1, DIM])
    }

    fn view(&mut self, x: Ref, shape: &[u64]) -> Ref {
        let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
        let lit = format!("[{}]", dims.join(","));
        self.op(
            "aten.view_copy.default",
            &[Arg::Node(x), Arg::Lit(&lit)],
            true,
            shape,
        )
    }

    fn permute(&mut self, x: Ref, dims: &str, shape: &[u64]) -> Ref {
        self.op(
            "aten.permute_copy.default",
            &[Arg::Node(x), Arg::Lit(dims)],
            true,
            shape,
        )
    }

    /// `x[..., start:]` along `dim`, as FX writes it (end `i64::MAX`).
    fn slice_copy(&mut self, x: Ref, dim: &str, start: &str, shape: &[u64]) -> Ref {
        self.op(
            "aten.slice_copy.Tensor",
            &[
                Arg::Node(x),
                Arg::Lit(dim),
                Arg::Lit(start),
                Arg::Lit("9223372036854775807"),
            ],
            true,
            shape,
        )
    }

    /// A depthwise causal convolution over the last axis, with its weight.
    fn depthwise_conv(&mut self, x: Ref, fqn: &str, channels: u64, out_len: u64) -> Ref {
        let w = self.parameter(fqn, &[channels, 1, CONV]);
        let groups = channels.to_string();
        self.op(
            "aten.conv1d.default",
            &[
                Arg::Node(x),
                Arg::Node(w),
                Arg::Lit("null"),
                Arg::Lit("[1]"),
                Arg::Lit("[0]"),
                Arg::Lit("[1]"),
                Arg::Lit(&groups),
            ],
            true,
            &[1, channels, out_len],
        )
    }

    /// `split_with_sizes` into three equal parts along `dim`, and a `getitem` for each.
    fn split3(&mut self, x: Ref, dim: &str, part: &[u64]) -> [Ref; 3] {
        let split = self.op(
            "aten.split_with_sizes_copy.default",
            &[Arg::Node(x), Arg::Lit("[64, 64, 64]"), Arg::Lit(dim)],
            true,
            &[],
        );
        [0, 1, 2].map(|i| {
            let lit = i.to_string();
            self.op("getitem", &[Arg::Node(split), Arg::Lit(&lit)], true, part)
        })
    }

    fn slice_scatter(&mut self, base: Ref, src: Ref, shape: &[u64]) -> Ref {
        self.op(
            "aten.slice_scatter.default",
            &[
                Arg::Node(base),
                Arg::Node(src),
                Arg::Lit("0"),
                Arg::Lit("0"),
                Arg::Lit("1"),
            ],
            true,
            shape,
        )
    }
}

/// Inputs every layer may read.
struct Context {
    input_pos: Ref,
    cos: Ref,
    sin: Ref,
}

struct Generator {
    w: Writer,
    rng: Rng,
    /// Percent chance that an MLP holds an unsupported island.
    island_percent: u64,
}

impl Generator {
    fn mlp(&mut self, x: Ref, prefix: &str) -> Ref {
        let h = self.w.rms_norm(x, &format!("{prefix}.ffn_norm.weight"));
        let mut gate = self
            .w
            .linear(h, &format!("{prefix}.feed_forward.w1.weight"), FFN, DIM);
        if self.rng.chance(self.island_percent) {
            // An op Core ML cannot run, between the gate projection and its activation.
            for _ in 0..1 + self.rng.below(3) {
                gate = self.w.op(
                    "aten.cumsum.default",
                    &[Arg::Node(gate), Arg::Lit("-1")],
                    false,
                    &[1, 1, FFN],
                );
            }
        }
        let act = self.w.unary("aten.silu.default", gate, &[1, 1, FFN]);
        let up = self
            .w
            .linear(h, &format!("{prefix}.feed_forward.w3.weight"), FFN, DIM);
        let prod = self.w.binary("aten.mul.Tensor", act, up, &[1, 1, FFN]);
        let down = self
            .w
            .linear(prod, &format!("{prefix}.feed_forward.w2.weight"), DIM, FFN);
        self.w.binary("aten.add.Tensor", x, down, &[1, 1, DIM])
    }

    fn rope(&mut self, x: Ref, ctx: &Context, heads: u64) -> Ref {
        let shape = [1, 1, heads, HEAD_DIM];
        let c = self.w.binary("aten.mul.Tensor", x, ctx.cos, &shape);
        let s = self.w.binary("aten.mul.Tensor", x, ctx.sin, &shape);
        self.w.binary("aten.add.Tensor", c, s, &shape)
    }

    /// A KV cache entry: the placeholder, and `index_put` at the input position as its writer.
    fn cache_update(&mut self, fqn: &str, value: Ref, ctx: &Context) -> Ref {
        let cache_shape = [1, KV_DIM / HEAD_DIM, SEQ, HEAD_DIM];
        let cache = self.w.buffer(fqn, &cache_shape);
        let pos = [ctx.input_pos];
        let put = self.w.op(
            "aten.index_put.default",
            &[
                Arg::Node(cache),
                Arg::Lit("[null, null]"),
                Arg::Nodes(&pos),
                Arg::Node(value),
            ],
            true,
            &cache_shape,
        );
        self.w.mutations.push((put.0, fqn.to_string()));
        put
    }

    fn attention(&mut self, x: Ref, l: usize, ctx: &Context) -> Ref {
        let p = format!("layers.{l}.attention");
        let h = self
            .w
            .rms_norm(x, &format!("layers.{l}.attention_norm.weight"));
        let q = self.w.linear(h, &format!("{p}.wq.weight"), DIM, DIM);
        let k = self.w.linear(h, &format!("{p}.wk.weight"), KV_DIM, DIM);
        let v = self.w.linear(h, &format!("{p}.wv.weight"), KV_DIM, DIM);
        let q = self.w.view(q, &[1, 1, HEADS, HEAD_DIM]);
        let k = self.w.view(k, &[1, 1, KV_DIM / HEAD_DIM, HEAD_DIM]);
        let v = self.w.view(v, &[1, 1, KV_DIM / HEAD_DIM, HEAD_DIM]);
        let q = self.rope(q, ctx, HEADS);
        let k = self.rope(k, ctx, KV_DIM / HEAD_DIM);
        let k_cache = self.cache_update(&format!("{p}.kv_cache.k_cache"), k, ctx);
        let v_cache = self.cache_update(&format!("{p}.kv_cache.v_cache"), v, ctx);
        let attn = self.w.op(
            "aten.scaled_dot_product_attention.default",
            &[
                Arg::Node(q),
                Arg::Node(k_cache),
                Arg::Node(v_cache),
                Arg::Lit("null"),
                Arg::Lit("0.0"),
                Arg::Lit("true"),
            ],
            true,
            &[1, HEADS, 1, HEAD_DIM],
        );
        let flat = self.w.view(attn, &[1, 1, DIM]);
        let out = self.w.linear(flat, &format!("{p}.wo.weight"), DIM, DIM);
        self.w.binary("aten.add.Tensor", x, out, &[1, 1, DIM])
    }

    /// The reset gate every stateful recurrent layer computes from the input position.
    fn reset_gate(&mut self, ctx: &Context) -> Ref {
        let first = self.w.op(
            "aten.select_copy.int",
            &[Arg::Node(ctx.input_pos), Arg::Lit("0"), Arg::Lit("0")],
            true,
            &[],
        );
        let is_start = self.w.op(
            "aten.eq.Scalar",
            &[Arg::Node(first), Arg::Lit("0")],
            true,
            &[],
        );
        let as_float = self
            .w
            .unary("dim_order_ops._to_dim_order_copy.default", is_start, &[]);
        self.w.op(
            "aten.rsub.Scalar",
            &[Arg::Node(as_float), Arg::Lit("1.0")],
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
            .w
            .rms_norm(x, &format!("layers.{l}.attention_norm.weight"));
        let keep = self.reset_gate(ctx);
        let conv_fqn = format!("{p}.conv_state");
        let conv_state = self.w.buffer(&conv_fqn, &conv_shape);
        let conv_kept = self
            .w
            .binary("aten.mul.Tensor", conv_state, keep, &conv_shape);
        let conv_reset = self.w.slice_scatter(conv_state, conv_kept, &conv_shape);
        let rec_fqn = format!("{p}.recurrent_state");
        let rec_state = self.w.buffer(&rec_fqn, &rec_shape);
        let rec_kept = self
            .w
            .binary("aten.mul.Tensor", rec_state, keep, &rec_shape);
        let rec_reset = self.w.slice_scatter(rec_state, rec_kept, &rec_shape);

        let qkv = self
            .w
            .linear(h, &format!("{p}.in_proj_qkv.weight"), qkv_dim, DIM);
        let z = self.w.linear(h, &format!("{p}.in_proj_z.weight"), DIM, DIM);
        let z = self.w.view(z, &[1, 1, HEADS, HEAD_DIM]);
        let b = self
            .w
            .linear(h, &format!("{p}.in_proj_b.weight"), HEADS, DIM);
        let a = self
            .w
            .linear(h, &format!("{p}.in_proj_a.weight"), HEADS, DIM);

        // Conv state: append the new column, keep the last CONV, write back.
        let col = self.w.permute(qkv, "[0, 2, 1]", &[1, qkv_dim, 1]);
        let window = [conv_reset, col];
        let cat = self.w.op(
            "aten.cat.default",
            &[Arg::Nodes(&window), Arg::Lit("-1")],
            true,
            &[1, qkv_dim, CONV + 1],
        );
        let tail = self.w.slice_copy(cat, "2", "-4", &conv_shape);
        let copied = self
            .w
            .binary("aten.copy.default", conv_reset, tail, &conv_shape);
        let conv_new = self.w.slice_scatter(conv_reset, copied, &conv_shape);
        self.w.mutations.push((conv_new.0, conv_fqn));

        let conv = self
            .w
            .depthwise_conv(cat, &format!("{p}.conv1d.weight"), qkv_dim, 2);
        let last = self.w.slice_copy(conv, "2", "-1", &[1, qkv_dim, 1]);
        let act = self.w.unary("aten.silu.default", last, &[1, qkv_dim, 1]);
        let row = self.w.permute(act, "[0, 2, 1]", &[1, 1, qkv_dim]);
        let mut heads = Vec::with_capacity(3);
        for item in self.w.split3(row, "-1", &[1, 1, DIM]) {
            let v = self.w.view(item, &[1, 1, HEADS, HEAD_DIM]);
            heads.push(self.w.permute(v, "[0, 2, 1, 3]", &[1, HEADS, 1, HEAD_DIM]));
        }
        let beta = self.w.unary("aten.sigmoid.default", b, &[1, 1, HEADS]);
        let a_log = self.w.parameter(&format!("{p}.A_log"), &[HEADS]);
        let decay = self.w.unary("aten.exp.default", a_log, &[HEADS]);
        let decay = self.w.unary("aten.neg.default", decay, &[HEADS]);
        let dt_bias = self.w.parameter(&format!("{p}.dt_bias"), &[HEADS]);
        let a = self.w.binary("aten.add.Tensor", a, dt_bias, &[1, 1, HEADS]);
        let a = self.w.unary("aten.softplus.default", a, &[1, 1, HEADS]);
        let g = self.w.binary("aten.mul.Tensor", decay, a, &[1, 1, HEADS]);

        // The recurrence Core ML cannot run sits inside the recurrent state's chain.
        let rule = self.w.op(
            "llama.gated_delta_rule.default",
            &[
                Arg::Node(heads[0]),
                Arg::Node(heads[1]),
                Arg::Node(heads[2]),
                Arg::Node(g),
                Arg::Node(beta),
                Arg::Node(rec_reset),
            ],
            false,
            &[],
        );
        let out = self.w.op(
            "getitem",
            &[Arg::Node(rule), Arg::Lit("0")],
            true,
            &[1, HEADS, 1, HEAD_DIM],
        );
        let state = self.w.op(
            "getitem",
            &[Arg::Node(rule), Arg::Lit("1")],
            true,
            &rec_shape,
        );
        let copied = self
            .w
            .binary("aten.copy.default", rec_reset, state, &rec_shape);
        let rec_new = self.w.slice_scatter(rec_reset, copied, &rec_shape);
        self.w.mutations.push((rec_new.0, rec_fqn));

        let out = self
            .w
            .permute(out, "[0, 2, 1, 3]", &[1, 1, HEADS, HEAD_DIM]);
        let gate = self
            .w
            .unary("aten.silu.default", z, &[1, 1, HEADS, HEAD_DIM]);
        let gated = self
            .w
            .binary("aten.mul.Tensor", out, gate, &[1, 1, HEADS, HEAD_DIM]);
        let flat = self.w.view(gated, &[1, 1, DIM]);
        let proj = self
            .w
            .linear(flat, &format!("{p}.out_proj.weight"), DIM, DIM);
        self.w.binary("aten.add.Tensor", x, proj, &[1, 1, DIM])
    }

    fn short_conv(&mut self, x: Ref, l: usize) -> Ref {
        let p = format!("layers.{l}.conv");
        let state_shape = [1, DIM, CONV - 1];
        let h = self
            .w
            .rms_norm(x, &format!("layers.{l}.operator_norm.weight"));
        let bcx = self
            .w
            .linear(h, &format!("{p}.in_proj.weight"), 3 * DIM, DIM);
        let bcx = self.w.permute(bcx, "[0, 2, 1]", &[1, 3 * DIM, 1]);
        let parts = self.w.split3(bcx, "-2", &[1, DIM, 1]);
        let bx = self
            .w
            .binary("aten.mul.Tensor", parts[0], parts[2], &[1, DIM, 1]);
        let fqn = format!("{p}.conv_state");
        let state = self.w.buffer(&fqn, &state_shape);
        let window = [state, bx];
        let cat = self.w.op(
            "aten.cat.default",
            &[Arg::Nodes(&window), Arg::Lit("-1")],
            true,
            &[1, DIM, CONV],
        );
        let tail = self.w.slice_copy(cat, "-1", "1", &state_shape);
        let written = self
            .w
            .binary("aten.copy.default", state, tail, &state_shape);
        self.w.mutations.push((written.0, fqn));
        let conv = self
            .w
            .depthwise_conv(cat, &format!("{p}.conv.weight"), DIM, 1);
        let y = self
            .w
            .binary("aten.mul.Tensor", parts[1], conv, &[1, DIM, 1]);
        let y = self.w.permute(y, "[0, 2, 1]", &[1, 1, DIM]);
        let out = self.w.linear(y, &format!("{p}.out_proj.weight"), DIM, DIM);
        self.w.binary("aten.add.Tensor", x, out, &[1, 1, DIM])
    }

    fn experts(&mut self, x: Ref, l: usize, experts: u64) -> Ref {
        let p = format!("layers.{l}.block_sparse_moe");
        let h = self.w.rms_norm(x, &format!("layers.{l}.ffn_norm.weight"));
        let logits = self.w.linear(h, &format!("{p}.gate.weight"), experts, DIM);
        let probs = self.w.op(
            "aten._softmax.default",
            &[Arg::Node(logits), Arg::Lit("-1"), Arg::Lit("false")],
            true,
            &[1, 1, experts],
        );
        let top = self.w.op(
            "aten.topk.default",
            &[Arg::Node(probs), Arg::Lit("2")],
            true,
            &[],
        );
        let weights = self.w.op(
            "getitem",
            &[Arg::Node(top), Arg::Lit("0")],
            true,
            &[1, 1, 2],
        );
        let mut acc: Option<Ref> = None;
        for e in 0..experts {
            let ep = format!("{p}.experts.{e}");
            let gate = self.w.linear(h, &format!("{ep}.w1.weight"), FFN, DIM);
            let act = self.w.unary("aten.silu.default", gate, &[1, 1, FFN]);
            let up = self.w.linear(h, &format!("{ep}.w3.weight"), FFN, DIM);
            let prod = self.w.binary("aten.mul.Tensor", act, up, &[1, 1, FFN]);
            let down = self.w.linear(prod, &format!("{ep}.w2.weight"), DIM, FFN);
            let lit = (e % 2).to_string();
            let weight = self.w.op(
                "aten.select_copy.int",
                &[Arg::Node(weights), Arg::Lit("-1"), Arg::Lit(&lit)],
                true,
                &[1, 1],
            );
            let scaled = self.w.binary("aten.mul.Tensor", down, weight, &[1, 1, DIM]);
            acc = Some(match acc {
                None => scaled,
                Some(a) => self.w.binary("aten.add.Tensor", a, scaled, &[1, 1, DIM]),
            });
        }
        match acc {
            Some(a) => self.w.binary("aten.add.Tensor", x, a, &[1, 1, DIM]),
            None => x,
        }
    }

    fn layer(&mut self, kind: Layer, x: Ref, l: usize, ctx: &Context, experts: u64) -> Ref {
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
    fn layer_nodes(kind: Layer, experts: u64) -> usize {
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

/// A bridge JSON v1 document of exactly `nodes` nodes, the same for the same `(nodes, seed)`.
pub fn generate(nodes: usize, seed: u64) -> Result<String, GenerateError> {
    if !(MIN_NODES..=MAX_NODES).contains(&nodes) {
        return Err(GenerateError::Size(nodes));
    }
    let mut rng = Rng(seed);
    // Each seed draws its own mix of layer kinds, as model families differ.
    let weights = [1 + rng.below(4), rng.below(4), rng.below(3), rng.below(2)];
    let experts = 16 << rng.below(3);
    let island_percent = 5 + rng.below(20);
    let mut g = Generator {
        w: Writer::with_capacity(nodes),
        rng,
        island_percent,
    };
    let tokens = g.w.user_input("tokens", &[1, 1], "int64");
    let input_pos = g.w.user_input("attn_options_input_pos", &[1], "int64");
    let cos = g.w.buffer("rope.freqs_cos", &[SEQ, HEAD_DIM]);
    let sin = g.w.buffer("rope.freqs_sin", &[SEQ, HEAD_DIM]);
    let table = g.w.parameter("tok_embeddings.weight", &[1000, DIM]);
    let pos = [input_pos];
    let cos = g.w.op(
        "aten.index.Tensor",
        &[Arg::Node(cos), Arg::Nodes(&pos)],
        true,
        &[1, HEAD_DIM],
    );
    let sin = g.w.op(
        "aten.index.Tensor",
        &[Arg::Node(sin), Arg::Nodes(&pos)],
        true,
        &[1, HEAD_DIM],
    );
    let ctx = Context {
        input_pos,
        cos,
        sin,
    };
    let mut x =
        g.w.binary("aten.embedding.default", table, tokens, &[1, 1, DIM]);
    // The head: final norm (8 nodes), output projection (2), the output node.
    const HEAD: usize = 11;
    let kinds = [
        Layer::Attention,
        Layer::LinearAttention,
        Layer::ShortConv,
        Layer::MixtureOfExperts,
    ];
    let mut layer = 0;
    loop {
        let room = nodes.saturating_sub(g.w.count() + HEAD);
        let fits: Vec<(Layer, u64)> = kinds
            .iter()
            .zip(weights)
            .filter(|&(&k, w)| w > 0 && Generator::layer_nodes(k, experts) <= room)
            .map(|(&k, w)| (k, w))
            .collect();
        let total: u64 = fits.iter().map(|(_, w)| w).sum();
        if fits.is_empty() {
            break;
        }
        let mut pick = g.rng.below(total);
        let kind = fits
            .iter()
            .find(|(_, w)| {
                if pick < *w {
                    return true;
                }
                pick -= w;
                false
            })
            .map(|(k, _)| *k)
            .unwrap_or(Layer::Attention);
        x = g.layer(kind, x, layer, &ctx, experts);
        layer += 1;
    }
    // Fill to the exact count with the elementwise tail a sampler applies to the hidden state.
    while g.w.count() + HEAD < nodes {
        x = g.w.op(
            "aten.mul.Tensor",
            &[Arg::Node(x), Arg::Lit("1.0")],
            true,
            &[1, 1, DIM],
        );
    }
    let x = g.w.rms_norm(x, "norm.weight");
    let logits = g.w.linear(x, "output.weight", 1000, DIM);
    Ok(finish(g.w, logits, seed))
}

fn finish(mut w: Writer, logits: Ref, seed: u64) -> String {
    w.begin("output");
    w.nodes
        .push_str(",\"op\":\"output\",\"target\":\"output\",\"args\":[[");
    let returned: Vec<u32> = w
        .mutations
        .iter()
        .map(|(r, _)| *r)
        .chain([logits.0])
        .collect();
    for (i, r) in returned.iter().enumerate() {
        if i > 0 {
            w.nodes.push(',');
        }
        w.write_ref(Ref(*r));
    }
    w.nodes.push_str("]],\"kwargs\":{}}");
    let mut out = String::with_capacity(w.nodes.len() + w.names.len() * 64);
    let _ = write!(
        out,
        "{{\"schema\":\"{GRAPH_SCHEMA}\",\"graph_signature\":{{"
    );
    let names = &w.names;
    let map = |out: &mut String, key: &str, entries: &[(u32, String)]| {
        let _ = write!(out, "\"{key}\":{{");
        for (i, (r, value)) in entries.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "\n\"{}\":\"{value}\"", names[*r as usize]);
        }
        out.push_str("},");
    };
    map(&mut out, "inputs_to_parameters", &w.parameters);
    map(&mut out, "inputs_to_buffers", &w.buffers);
    map(&mut out, "inputs_to_lifted_tensor_constants", &w.constants);
    map(&mut out, "buffers_to_mutate", &w.mutations);
    let inputs: Vec<String> = w
        .user_inputs
        .iter()
        .map(|r| format!("\"{}\"", names[*r as usize]))
        .collect();
    let _ = write!(
        out,
        "\"user_inputs\":[{}],\"user_outputs\":[\"{}\"]}},",
        inputs.join(","),
        names[logits.0 as usize]
    );
    out.push_str(
        "\"options\":{\"take_over_mutable_buffer\":true,\"take_over_constant_data\":true,\
         \"minimum_deployment_target\":\"iOS18\",\"compute_unit\":\"ALL\",\
         \"compute_precision\":\"FLOAT16\"},",
    );
    let _ = write!(
        out,
        "\"producer\":{{\"exporter\":\"partition-planner generate\",\"nodes\":{},\"seed\":{seed}}},\"nodes\":[",
        w.names.len()
    );
    out.push_str(&w.nodes);
    out.push_str("\n]}\n");
    out
}

#[cfg(test)]
mod tests;

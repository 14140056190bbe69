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

mod layers;
mod ops;
mod rng;
mod text;

use crate::schema::GRAPH_SCHEMA;
use layers::{Context, Generator, Layer};
use rng::Rng;
use std::fmt::Write;
use text::{ArgText, DocumentText, Ref};

/// Smallest graph the generator writes: an embedding, one layer and the head.
pub const MIN_NODES: usize = 200;
/// Largest: node ids are `u32` and the text must stay well inside memory.
pub const MAX_NODES: usize = 20_000_000;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GenerateError {
    #[error(
        "cannot generate {}: choose between {MIN_NODES} and {MAX_NODES}",
        crate::human::count(.0.to_owned(), "node", "nodes")
    )]
    Size(usize),
}

/// Hidden width and the other sizes; shrunk like the params in python/partition_planner/params/.
const DIM: u64 = 64;
const HEADS: u64 = 4;
const HEAD_DIM: u64 = 16;
const KV_DIM: u64 = 32;
const FFN: u64 = 128;
const SEQ: u64 = 128;
const CONV: u64 = 4;

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
        doc: DocumentText::with_capacity(nodes),
        rng,
        island_percent,
    };
    let tokens = g.doc.user_input("tokens", &[1, 1], "int64");
    let input_pos = g.doc.user_input("attn_options_input_pos", &[1], "int64");
    let cos = g.doc.buffer("rope.freqs_cos", &[SEQ, HEAD_DIM]);
    let sin = g.doc.buffer("rope.freqs_sin", &[SEQ, HEAD_DIM]);
    let table = g.doc.parameter("tok_embeddings.weight", &[1000, DIM]);
    let pos = [input_pos];
    let cos = g.doc.op(
        "aten.index.Tensor",
        &[ArgText::Node(cos), ArgText::Nodes(&pos)],
        true,
        &[1, HEAD_DIM],
    );
    let sin = g.doc.op(
        "aten.index.Tensor",
        &[ArgText::Node(sin), ArgText::Nodes(&pos)],
        true,
        &[1, HEAD_DIM],
    );
    let ctx = Context {
        input_pos,
        cos,
        sin,
    };
    let mut x = g
        .doc
        .binary("aten.embedding.default", table, tokens, &[1, 1, DIM]);
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
        let room = nodes.saturating_sub(g.doc.count() + HEAD);
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
    while g.doc.count() + HEAD < nodes {
        x = g.doc.op(
            "aten.mul.Tensor",
            &[ArgText::Node(x), ArgText::Lit("1.0")],
            true,
            &[1, 1, DIM],
        );
    }
    let x = g.doc.rms_norm(x, "norm.weight");
    let logits = g.doc.linear(x, "output.weight", 1000, DIM);
    Ok(finish(g.doc, logits, seed))
}

/// Closes the node list with the output node and wraps it in the signature, options and producer.
fn finish(mut doc: DocumentText, logits: Ref, seed: u64) -> String {
    doc.begin("output");
    doc.nodes
        .push_str(",\"op\":\"output\",\"target\":\"output\",\"args\":[[");
    let returned: Vec<u32> = doc
        .mutations
        .iter()
        .map(|(r, _)| *r)
        .chain([logits.0])
        .collect();
    for (i, r) in returned.iter().enumerate() {
        if i > 0 {
            doc.nodes.push(',');
        }
        doc.write_ref(Ref(*r));
    }
    doc.nodes.push_str("]],\"kwargs\":{}}");
    let mut out = String::with_capacity(doc.nodes.len() + doc.names.len() * 64);
    let _ = write!(
        out,
        "{{\"schema\":\"{GRAPH_SCHEMA}\",\"graph_signature\":{{"
    );
    let names = &doc.names;
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
    map(&mut out, "inputs_to_parameters", &doc.parameters);
    map(&mut out, "inputs_to_buffers", &doc.buffers);
    map(
        &mut out,
        "inputs_to_lifted_tensor_constants",
        &doc.constants,
    );
    map(&mut out, "buffers_to_mutate", &doc.mutations);
    let inputs: Vec<String> = doc
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
        doc.names.len()
    );
    out.push_str(&doc.nodes);
    out.push_str("\n]}\n");
    out
}

#[cfg(test)]
mod tests;

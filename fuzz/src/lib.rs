//! A structure-aware generator of bridge documents (docs/bridge-json.md) for the fuzz targets.
//!
//! One document in four is an exported one from data/ with a few structural edits. Most of the
//! others are small LLM-shaped programs that import: parameters, buffers and user
//! inputs, compute nodes, a mutation chain per mutable buffer ending in a writer the output returns,
//! and a signature naming them. About half the documents carry a few faults (each choice writes
//! one with odds of one in [`FAULT_ODDS`] while the document's budget lasts), the kinds other tools and hostile inputs bring: cycles, dangling, forward and malformed
//! references, duplicate names, signatures naming missing or wrong nodes, buffers mutated but never
//! read, writers that are not in-place ops, huge, negative and non-integer dimensions, NaN and
//! Infinity literals, unicode, empty and very long names, deep nesting, wrong types, unknown fields,
//! another schema, and truncated text. The document is written as text, so that what JSON cannot
//! hold (NaN) can be written too.

use arbitrary::{Result, Unstructured};

/// One choice in this many writes a fault.
pub const FAULT_ODDS: u8 = 24;

const TARGETS: &[&str] = &[
    "aten.add.Tensor",
    "aten.mul.Tensor",
    "aten.mm.default",
    "aten.linear.default",
    "aten.cat.default",
    "aten.slice_copy.Tensor",
    "aten.view_copy.default",
    "aten.split_with_sizes_copy.default",
    "getitem",
    "llama.gated_delta_rule.default",
    "llama.custom_sdpa.default",
    "aten.embedding.default",
    "dim_order_ops._to_dim_order_copy.default",
];

/// Ops that write a buffer's new value: in place, functional, and one that is neither.
const WRITERS: &[&str] = &[
    "aten.index_put_.default",
    "aten.index_put.default",
    "aten.slice_scatter.default",
    "aten.copy_.default",
    "aten.copy.default",
    "aten.add.Tensor",
];

const DTYPES: &[&str] = &[
    "float32",
    "torch.float16",
    "bfloat16",
    "int64",
    "bool",
    "int8",
    "complex128",
    "float8_e4m3fn",
];

const TARGET_VERSIONS: &[&str] = &["iOS15", "iOS16", "iOS17", "iOS18"];

/// A JSON string literal.
fn quoted(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

struct Node {
    name: String,
    op: &'static str,
    target: &'static str,
    /// JSON text of the `args` array and `kwargs` object.
    args: String,
    kwargs: String,
}

struct Writer<'a, 'b> {
    u: &'a mut Unstructured<'b>,
    /// Faults still to write in this document.
    faults: u8,
}

impl Writer<'_, '_> {
    fn fault(&mut self) -> Result<bool> {
        if self.faults == 0 || !self.u.ratio(1, FAULT_ODDS)? {
            return Ok(false);
        }
        self.faults -= 1;
        Ok(true)
    }

    fn pick(&mut self, from: &[&'static str]) -> Result<&'static str> {
        Ok(*self.u.choose(from)?)
    }

    /// A node name: `base` mostly; now and then unicode, empty, very long, or an earlier name.
    fn name(&mut self, base: String, earlier: &[Node]) -> Result<String> {
        if !self.fault()? {
            return Ok(base);
        }
        Ok(match self.u.int_in_range(0..=4)? {
            0 if !earlier.is_empty() => self.u.choose(earlier)?.name.clone(),
            1 => format!("{base}_ノード_\u{1F600}_\u{0}"),
            2 => String::new(),
            3 => base.repeat(self.u.int_in_range(100..=3000)?),
            _ => self.u.arbitrary::<String>()?,
        })
    }

    /// A reference to `name`, or (as a fault) a malformed one.
    fn reference(&mut self, name: &str) -> Result<String> {
        if !self.fault()? {
            return Ok(format!("{{\"node\":{}}}", quoted(name)));
        }
        Ok(match self.u.int_in_range(0..=3)? {
            0 => "{\"node\":7}".into(),
            1 => format!("{{\"node\":{},\"also\":1}}", quoted(name)),
            2 => "{\"node\":null}".into(),
            _ => "{\"node\":\"no such node\"}".into(),
        })
    }

    /// A literal argument: numbers of every size, NaN and Infinity, strings, nesting.
    fn literal(&mut self, depth: usize) -> Result<String> {
        let kind = if self.fault()? {
            self.u.int_in_range(0..=9)?
        } else {
            self.u.int_in_range(0..=3)?
        };
        Ok(match kind {
            0 => self.u.int_in_range(-4i64..=64)?.to_string(),
            1 => "null".into(),
            2 => format!("[{},{}]", self.u.int_in_range(0..=8)?, -1),
            3 => quoted(self.pick(DTYPES)?),
            4 => self.u.arbitrary::<i64>()?.to_string(),
            5 => "18446744073709551616123".into(),
            6 => self
                .pick(&["NaN", "Infinity", "-Infinity", "1e400", "-0.0", "2.5e-320"])?
                .into(),
            7 => quoted(&self.u.arbitrary::<String>()?),
            8 if depth < 4 => {
                let inner = self.literal(depth + 1)?;
                format!("{{\"k\":{inner},\"node\":{inner}}}")
            }
            _ => {
                // Deep nesting, past the parser's limits now and then.
                let levels = self.u.int_in_range(1..=400)?;
                format!("{}0{}", "[".repeat(levels), "]".repeat(levels))
            }
        })
    }

    /// A dimension: small mostly; huge, negative, symbolic or not a number now and then.
    fn dim(&mut self) -> Result<String> {
        if !self.fault()? {
            return Ok(self.u.int_in_range(1u32..=64)?.to_string());
        }
        Ok(self
            .pick(&[
                "9223372036854775807",
                "18446744073709551615",
                "-1",
                "-9223372036854775808",
                "0",
                "1e30",
                "2.5",
                "\"s0\"",
                "\"\"",
                "null",
                "[2]",
                "NaN",
            ])?
            .into())
    }

    fn meta(&mut self) -> Result<String> {
        let rank = self.u.int_in_range(0..=4)?;
        let dims: Vec<String> = (0..rank).map(|_| self.dim()).collect::<Result<_>>()?;
        let dtype = if self.fault()? {
            self.pick(&["\"float\"", "7", "null", "\"\""])?.to_string()
        } else {
            quoted(self.pick(DTYPES)?)
        };
        Ok(format!(
            "{{\"shape\":[{}],\"dtype\":{dtype}}}",
            dims.join(",")
        ))
    }

    /// The name of a node for `at` to read: an earlier one mostly; itself or a later one (a
    /// forward reference, which may close a cycle) or a missing one now and then.
    fn read(&mut self, nodes: &[Node], at: usize, later: usize) -> Result<String> {
        if self.fault()? {
            let i = self.u.int_in_range(at..=later)?;
            return Ok(format!("n{i}"));
        }
        match nodes.get(..at).filter(|n| !n.is_empty()) {
            Some(earlier) => Ok(self.u.choose(earlier)?.name.clone()),
            None => Ok("nowhere".into()),
        }
    }

    fn node_text(&mut self, node: &Node) -> Result<String> {
        let supported = match self.fault()? {
            true => self.pick(&["", ",\"supported\":\"yes\"", ",\"supported\":1"])?,
            false => self.pick(&[",\"supported\":true", ",\"supported\":false"])?,
        };
        // A conversion verdict (docs/conversion.md): none, one of refusal or of success, or a
        // malformed one.
        let conversion = match self.fault()? {
            true => self.pick(&[
                ",\"conversion\":{\"converts\":\"no\"}",
                ",\"conversion\":{\"found_by\":\"probe\"}",
                ",\"conversion\":{\"converts\":false,\"why\":1}",
                ",\"conversion\":[]",
            ])?,
            false => self.pick(&[
                "",
                "",
                ",\"conversion\":{\"converts\":true,\"found_by\":\"probe\"}",
                ",\"conversion\":{\"converts\":false,\"found_by\":\"probe\",\"converter\":\"coremltools 9.0\",\"error\":\"ValueError: refused\"}",
                ",\"conversion\":{\"converts\":false,\"found_by\":\"verification\",\"error\":\"a \\\"quoted\\\" error\"}",
            ])?,
        };
        let tag = if self.fault()? {
            self.pick(&["7", "\"\"", "[\"tag0\"]"])?.to_string()
        } else if node.op == "call_function" && self.u.arbitrary()? {
            quoted(&format!("tag{}", self.u.int_in_range(0..=2)?))
        } else {
            "null".into()
        };
        let meta = self.meta()?;
        let extra = if self.fault()? {
            ",\"supportd\":true"
        } else {
            ""
        };
        let fields = [
            format!("\"name\":{}", quoted(&node.name)),
            format!("\"op\":{}", quoted(node.op)),
            format!("\"target\":{}", quoted(node.target)),
            format!("\"args\":{}", node.args),
            format!("\"kwargs\":{}", node.kwargs),
            format!("\"delegation_tag\":{tag}{supported}{conversion}{extra}"),
            format!("\"meta\":{meta}"),
        ];
        // Any key order is allowed; the exporter writes `name` first.
        let rotate = if self.fault()? {
            self.u.int_in_range(1..=6)?
        } else {
            0
        };
        let mut fields = fields.to_vec();
        fields.rotate_left(rotate);
        Ok(format!("{{{}}}", fields.join(",")))
    }
}

/// Documents exported from real programs (data/): the seed programs, and the LFM2.5 topology
/// (short convolutions with conv state, attention with KV caches).
const EXPORTED: &[&str] = &[
    include_str!("../../data/executorch-1.5.1/seed_slice_ios18.json"),
    include_str!("../../data/executorch-1.5.1/seed_slice_takeover_off_ios17.json"),
    include_str!("../../data/executorch-1.5.1/seed_slice_writer_untagged.json"),
    include_str!("../../data/executorch-1.4.0/seed_whole_ios18.json"),
    include_str!("../../data/executorch-1.5.1/lfm2_5_350m_takeover_off_ios18.json"),
];

/// Writes one bridge document from the fuzzer's bytes: one in four an exported document from
/// data/ with a few structural edits ([`edited_document`]), the rest generated.
pub fn bridge_document(u: &mut Unstructured) -> Result<String> {
    if u.ratio(1u8, 4)? {
        return edited_document(u);
    }
    generated_document(u)
}

/// An exported document from data/ with one to four edits, each of a kind a buggy exporter or a
/// hand edit makes: a reference moved to another node (which may point forward or close a cycle),
/// a node's support or tag flipped, its target replaced, a node removed (leaving references
/// dangling), a mutation's writer moved to another node, the options changed.
pub fn edited_document(u: &mut Unstructured) -> Result<String> {
    use serde_json::{Value, json};
    let text = *u.choose(EXPORTED)?;
    let Ok(mut doc) = serde_json::from_str::<Value>(text) else {
        return Ok(text.to_string());
    };
    for _ in 0..u.int_in_range(1..=4)? {
        let count = doc["nodes"].as_array().map_or(0, Vec::len);
        if count == 0 {
            break;
        }
        let at = u.int_in_range(0..=count - 1)?;
        let other = u.int_in_range(0..=count - 1)?;
        let other_name = doc["nodes"][other]["name"].clone();
        let node = &mut doc["nodes"][at];
        match u.int_in_range(0..=6)? {
            0 => {
                let args = node["args"].as_array_mut();
                if let Some(slot) =
                    args.and_then(|a| a.iter_mut().find(|v| v.get("node").is_some()))
                {
                    *slot = json!({ "node": other_name });
                }
            }
            1 => {
                let supported = node["supported"].as_bool().unwrap_or(true);
                node["supported"] = json!(!supported);
            }
            2 => {
                node["delegation_tag"] = match u.int_in_range(0..=3)? {
                    0 => Value::Null,
                    t => json!(format!("tag{t}")),
                };
            }
            3 => node["target"] = json!(*u.choose(TARGETS)?),
            4 => {
                if let Some(nodes) = doc["nodes"].as_array_mut() {
                    nodes.remove(at);
                }
            }
            5 => {
                let mutate = &mut doc["graph_signature"]["buffers_to_mutate"];
                if let Some(map) = mutate.as_object_mut()
                    && let Some(first) = map.keys().next().cloned()
                    && let (Some(buffer), Some(name)) = (map.remove(&first), other_name.as_str())
                {
                    map.insert(name.to_string(), buffer);
                }
            }
            _ => {
                doc["options"] = json!({
                    "take_over_mutable_buffer": u.arbitrary::<bool>()?,
                    "minimum_deployment_target": *u.choose(&["iOS17", "iOS18"])?,
                });
            }
        }
    }
    Ok(doc.to_string())
}

/// A document written from scratch: see the module's comment.
fn generated_document(u: &mut Unstructured) -> Result<String> {
    let faults = match u.int_in_range(0u8..=5)? {
        0..=2 => 0,
        n => n - 2,
    };
    let mut w = Writer { u, faults };
    let parameters = w.u.int_in_range(0..=3)?;
    let buffers = w.u.int_in_range(0..=4)?;
    let user_inputs = w.u.int_in_range(1..=2)?;
    let compute = w.u.int_in_range(0..=24)?;
    let mut nodes: Vec<Node> = Vec::new();
    let placeholder = |name: String| Node {
        name,
        op: "placeholder",
        target: "placeholder",
        args: "[]".into(),
        kwargs: "{}".into(),
    };
    for kind in [("p", parameters), ("b", buffers), ("x", user_inputs)] {
        for i in 0..kind.1 {
            let name = w.name(format!("{}{i}", kind.0), &nodes)?;
            nodes.push(placeholder(name));
        }
    }
    // Compute nodes are named `n{index}` (unless renamed as a fault), so a forward reference can
    // name a node not written yet.
    let total_estimate = nodes.len() + compute + buffers * 3 + 1;
    for _ in 0..compute {
        let at = nodes.len();
        let target = w.pick(TARGETS)?;
        // A getitem reads one node, the op it indexes, unless this is a fault.
        let reads = if target != "getitem" || w.fault()? {
            w.u.int_in_range(1..=3)?
        } else {
            1
        };
        let mut args = Vec::new();
        for _ in 0..reads {
            let name = w.read(&nodes, at, total_estimate)?;
            args.push(w.reference(&name)?);
        }
        args.push(w.literal(0)?);
        let kwargs = if w.u.arbitrary()? {
            format!("{{\"alpha\":{}}}", w.literal(0)?)
        } else {
            "{}".into()
        };
        let op = if w.fault()? {
            w.pick(&["get_attr", "placeholder", "output", "call_method"])?
        } else {
            "call_function"
        };
        let name = w.name(format!("n{at}"), &nodes)?;
        nodes.push(Node {
            name,
            op,
            target,
            args: format!("[{}]", args.join(",")),
            kwargs,
        });
    }
    // A mutation chain per buffer: a read of the buffer, maybe an op on it, then the writer.
    let mut writers: Vec<(String, usize)> = Vec::new();
    for b in 0..buffers {
        let buffer = nodes[parameters + b].name.clone();
        let length = w.u.int_in_range(1..=3)?;
        let mut previous = buffer.clone();
        for step in 0..length {
            let at = nodes.len();
            let value = w.read(&nodes, at, total_estimate)?;
            let target = if step + 1 == length {
                w.pick(WRITERS)?
            } else {
                w.pick(&["aten.slice_copy.Tensor", "aten.mul.Tensor"])?
            };
            let args = format!(
                "[{},{},{}]",
                w.reference(&previous)?,
                w.reference(&value)?,
                w.literal(0)?
            );
            let name = w.name(format!("n{at}"), &nodes)?;
            nodes.push(Node {
                name,
                op: "call_function",
                target,
                args,
                kwargs: "{}".into(),
            });
            previous = nodes[at].name.clone();
        }
        writers.push((previous, b));
    }
    // The output returns every writer and one more value.
    let mut returned: Vec<String> = writers.iter().map(|(name, _)| name.clone()).collect();
    if w.fault()? && !returned.is_empty() {
        returned.remove(0);
    }
    let user_output = nodes.last().map(|n| n.name.clone());
    returned.extend(user_output.clone());
    let refs: Vec<String> = returned
        .iter()
        .map(|n| w.reference(n))
        .collect::<Result<_>>()?;
    let outputs = if w.fault()? {
        w.u.int_in_range(0..=2)?
    } else {
        1
    };
    for i in 0..outputs {
        nodes.push(Node {
            name: if i == 0 {
                "output".into()
            } else {
                format!("output_{i}")
            },
            op: "output",
            target: "output",
            args: format!("[[{}]]", refs.join(",")),
            kwargs: "{}".into(),
        });
    }
    let signature = signature(
        &mut w,
        &nodes,
        parameters,
        buffers,
        user_inputs,
        &writers,
        user_output,
    )?;
    let mut node_texts = Vec::with_capacity(nodes.len());
    for n in &nodes {
        node_texts.push(w.node_text(n)?);
    }
    let schema = if w.fault()? {
        w.pick(&["\"partition-planner/graph@2\"", "null", "1"])?
            .to_string()
    } else {
        "\"partition-planner/graph@1\"".into()
    };
    let options = if w.u.arbitrary()? {
        let target = if w.fault()? {
            "\"iOS99\"".to_string()
        } else if w.u.arbitrary()? {
            quoted(w.pick(TARGET_VERSIONS)?)
        } else {
            "null".into()
        };
        format!(
            ",\"options\":{{\"take_over_mutable_buffer\":{},\"minimum_deployment_target\":{target}}}",
            w.u.arbitrary::<bool>()?
        )
    } else {
        String::new()
    };
    let producer = if w.u.arbitrary()? {
        let version = w.pick(&["1.4.0", "1.5.1", "0.1", "banana"])?;
        format!(
            ",\"producer\":{{\"versions\":{{\"executorch\":{}}}}}",
            quoted(version)
        )
    } else {
        String::new()
    };
    let unknown = if w.fault()? { ",\"extra\":{}" } else { "" };
    let mut text = format!(
        "{{\"schema\":{schema},\"graph_signature\":{signature}{options}{producer}{unknown},\"nodes\":[\n{}\n]}}",
        node_texts.join(",\n")
    );
    if w.fault()? {
        // Truncated, or one byte changed (kept UTF-8: the CLI reads text).
        let at = w.u.int_in_range(0..=text.len())?;
        let at = (0..=at)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        if w.u.arbitrary()? {
            text.truncate(at);
        } else {
            let byte = w.pick(&["{", "}", "[", "]", ",", ":", "\"", "0", " ", "\\"])?;
            text.insert_str(at, byte);
        }
    }
    Ok(text)
}

fn signature(
    w: &mut Writer,
    nodes: &[Node],
    parameters: usize,
    buffers: usize,
    user_inputs: usize,
    writers: &[(String, usize)],
    user_output: Option<String>,
) -> Result<String> {
    let name = |w: &mut Writer, i: usize| -> Result<String> {
        Ok(if w.fault()? {
            w.pick(&["missing", "output", "n0"])?.to_string()
        } else {
            nodes.get(i).map(|n| n.name.clone()).unwrap_or_default()
        })
    };
    let entries = |w: &mut Writer, from: usize, count: usize, prefix: &str| -> Result<String> {
        let mut out = Vec::new();
        for i in 0..count {
            out.push(format!(
                "{}:{}",
                quoted(&name(w, from + i)?),
                quoted(&format!("{prefix}.{i}"))
            ));
        }
        Ok(out.join(","))
    };
    let params = entries(w, 0, parameters, "weight")?;
    let bufs = entries(w, parameters, buffers, "cache")?;
    let mut mutations = Vec::new();
    for (writer, b) in writers {
        let buffer = if w.fault()? {
            // Never read, or a second writer of buffer 0.
            w.pick(&["never.read", "cache.0"])?.to_string()
        } else {
            format!("cache.{b}")
        };
        let writer = if w.fault()? {
            w.pick(&["missing", "p0", "b0", "x0"])?.to_string()
        } else {
            writer.clone()
        };
        mutations.push(format!("{}:{}", quoted(&writer), quoted(&buffer)));
    }
    let inputs: Vec<String> = (0..user_inputs)
        .map(|i| name(w, parameters + buffers + i).map(|n| quoted(&n)))
        .collect::<Result<_>>()?;
    let output = match user_output {
        Some(n) if !w.fault()? => quoted(&n),
        _ => "null".into(),
    };
    let lifted = if w.fault()? {
        "\"p0\":\"lifted.0\""
    } else {
        ""
    };
    Ok(format!(
        "{{\"inputs_to_parameters\":{{{params}}},\"inputs_to_buffers\":{{{bufs}}},\
         \"inputs_to_lifted_tensor_constants\":{{{lifted}}},\"buffers_to_mutate\":{{{}}},\
         \"user_inputs\":[{}],\"user_outputs\":[{output}]}}",
        mutations.join(","),
        inputs.join(",")
    ))
}

//! The document's text as it is written: nodes as bridge JSON, FX names, and the signature's entries.

use std::collections::HashMap;
use std::fmt::Write;

/// A node already written, by index into the names.
#[derive(Clone, Copy)]
pub(super) struct Ref(pub(super) u32);

/// One argument of a `call_function` node.
pub(super) enum ArgText<'a> {
    Node(Ref),
    Nodes(&'a [Ref]),
    /// A literal, as JSON text.
    Lit(&'a str),
}

/// The nodes written so far, as text, and what the signature will name.
pub(super) struct DocumentText {
    pub(super) nodes: String,
    pub(super) names: Vec<String>,
    /// Per FX name stem, how many nodes carry it (FX appends `_N` from the second on).
    stems: HashMap<String, u32>,
    pub(super) parameters: Vec<(u32, String)>,
    pub(super) buffers: Vec<(u32, String)>,
    pub(super) constants: Vec<(u32, String)>,
    pub(super) mutations: Vec<(u32, String)>,
    pub(super) user_inputs: Vec<u32>,
}

impl DocumentText {
    pub(super) fn with_capacity(nodes: usize) -> Self {
        DocumentText {
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

    pub(super) fn count(&self) -> usize {
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

    pub(super) fn begin(&mut self, name: &str) {
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

    pub(super) fn parameter(&mut self, fqn: &str, shape: &[u64]) -> Ref {
        let r = self.placeholder(&format!("p_{}", fqn.replace('.', "_")), shape, "float32");
        self.parameters.push((r.0, fqn.to_string()));
        r
    }

    pub(super) fn buffer(&mut self, fqn: &str, shape: &[u64]) -> Ref {
        let r = self.placeholder(&format!("b_{}", fqn.replace('.', "_")), shape, "float32");
        self.buffers.push((r.0, fqn.to_string()));
        r
    }

    pub(super) fn constant(&mut self) -> Ref {
        let r = self.placeholder("_lifted_tensor_constant", &[], "float32");
        let name = self.names[r.0 as usize].clone();
        self.constants.push((r.0, name));
        r
    }

    pub(super) fn user_input(&mut self, name: &str, shape: &[u64], dtype: &str) -> Ref {
        let r = self.placeholder(name, shape, dtype);
        self.user_inputs.push(r.0);
        r
    }

    pub(super) fn op(
        &mut self,
        target: &str,
        args: &[ArgText],
        supported: bool,
        shape: &[u64],
    ) -> Ref {
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
                ArgText::Node(r) => self.write_ref(*r),
                ArgText::Nodes(rs) => {
                    self.nodes.push('[');
                    for (j, r) in rs.iter().enumerate() {
                        if j > 0 {
                            self.nodes.push(',');
                        }
                        self.write_ref(*r);
                    }
                    self.nodes.push(']');
                }
                ArgText::Lit(text) => self.nodes.push_str(text),
            }
        }
        let _ = write!(
            self.nodes,
            "],\"kwargs\":{{}},\"supported\":{supported},\"delegation_tag\":null"
        );
        self.meta(shape, "float32");
        Ref(self.count() as u32 - 1)
    }

    pub(super) fn write_ref(&mut self, r: Ref) {
        let _ = write!(self.nodes, "{{\"node\":\"{}\"}}", self.names[r.0 as usize]);
    }
}

//! Writing bridge JSON v1 documents from code: for tests, examples and graph generators. The
//! builder only writes; `import::parse_graph` is what validates.

use crate::schema::GRAPH_SCHEMA;
use serde_json::{Map, Value, json};

/// A reference to another node, as the bridge writes it.
fn node_ref(name: &str) -> Value {
    json!({ "node": name })
}

#[derive(Clone, Debug, Default)]
pub struct BridgeBuilder {
    nodes: Vec<Value>,
    inputs_to_parameters: Map<String, Value>,
    inputs_to_buffers: Map<String, Value>,
    inputs_to_constants: Map<String, Value>,
    buffers_to_mutate: Map<String, Value>,
    user_inputs: Vec<Value>,
    user_outputs: Vec<Value>,
    options: Map<String, Value>,
    range_constraints: Option<Map<String, Value>>,
}

impl BridgeBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    fn placeholder(&mut self, name: &str, shape: &[u64], dtype: &str) {
        self.nodes.push(json!({
            "name": name, "op": "placeholder", "target": name,
            "meta": { "shape": shape, "dtype": dtype },
        }));
    }

    pub fn user_input(&mut self, name: &str, shape: &[u64]) -> &mut Self {
        self.placeholder(name, shape, "float32");
        self.user_inputs.push(json!(name));
        self
    }

    pub fn parameter(&mut self, name: &str, shape: &[u64]) -> &mut Self {
        self.placeholder(name, shape, "float32");
        self.inputs_to_parameters
            .insert(name.into(), json!(name.replace('_', ".")));
        self
    }

    /// A registered buffer read through placeholder `name`; mutable once [`Self::mutates`] names it.
    pub fn buffer(&mut self, name: &str, buffer: &str, shape: &[u64]) -> &mut Self {
        self.placeholder(name, shape, "float32");
        self.inputs_to_buffers.insert(name.into(), json!(buffer));
        self
    }

    pub fn constant(&mut self, name: &str, shape: &[u64]) -> &mut Self {
        self.placeholder(name, shape, "float32");
        self.inputs_to_constants.insert(name.into(), json!(name));
        self
    }

    /// A `call_function` node whose args are `inputs` as references followed by `literals`.
    pub fn op(&mut self, name: &str, target: &str, inputs: &[&str], supported: bool) -> &mut Self {
        self.op_with(name, target, inputs, &[], supported)
    }

    pub fn op_with(
        &mut self,
        name: &str,
        target: &str,
        inputs: &[&str],
        literals: &[Value],
        supported: bool,
    ) -> &mut Self {
        let mut args: Vec<Value> = inputs.iter().map(|i| node_ref(i)).collect();
        args.extend(literals.iter().cloned());
        self.nodes.push(json!({
            "name": name, "op": "call_function", "target": target, "args": args,
            "supported": supported, "delegation_tag": null,
        }));
        self
    }

    /// Sets `meta` of the node last added.
    pub fn meta(&mut self, shape: &[u64], dtype: &str) -> &mut Self {
        if let Some(Value::Object(node)) = self.nodes.last_mut() {
            node.insert("meta".into(), json!({ "shape": shape, "dtype": dtype }));
        }
        self
    }

    /// Sets `meta` of the node last added to a shape given as JSON: numbers, and strings for
    /// symbolic sizes (`["1", "16*s0"]` is written `json!([1, "16*s0"])`).
    pub fn symbolic_meta(&mut self, shape: Value, dtype: &str) -> &mut Self {
        if let Some(Value::Object(node)) = self.nodes.last_mut() {
            node.insert("meta".into(), json!({ "shape": shape, "dtype": dtype }));
        }
        self
    }

    /// Declares `size` one of the program's range-constrained sizes (bridge JSON
    /// `range_constraints`), with its bounds; the document then carries the field.
    pub fn range(&mut self, size: &str, low: Option<i64>, high: Option<i64>) -> &mut Self {
        (self.range_constraints.get_or_insert_with(Map::new))
            .insert(size.into(), json!([low, high]));
        self
    }

    /// Gives the node last added a conversion verdict of refusal, found by a probe, with the
    /// converter's error `error` (bridge JSON `conversion`).
    pub fn refused(&mut self, error: &str) -> &mut Self {
        if let Some(Value::Object(node)) = self.nodes.last_mut() {
            let target = node.get("target").cloned().unwrap_or(Value::Null);
            node.insert(
                "conversion".into(),
                json!({
                    "converts": false, "found_by": "probe", "converter": "coremltools 9.0",
                    "call": target, "error": error,
                }),
            );
        }
        self
    }

    /// Sets `module_path` of the node last added (the module torch.export records it came from).
    pub fn module(&mut self, path: &str) -> &mut Self {
        if let Some(Value::Object(node)) = self.nodes.last_mut() {
            node.insert("module_path".into(), json!(path));
        }
        self
    }

    /// Declares `writer` as the new value of `buffer`.
    pub fn mutates(&mut self, writer: &str, buffer: &str) -> &mut Self {
        self.buffers_to_mutate.insert(writer.into(), json!(buffer));
        self
    }

    /// The output node: returns the writers first (as torch.export does), then `user_outputs`.
    pub fn output(&mut self, user_outputs: &[&str]) -> &mut Self {
        let mut returned: Vec<Value> = self.buffers_to_mutate.keys().map(|w| node_ref(w)).collect();
        returned.extend(user_outputs.iter().map(|o| node_ref(o)));
        self.user_outputs = user_outputs.iter().map(|o| json!(o)).collect();
        self.nodes.push(
            json!({ "name": "output", "op": "output", "target": "output", "args": [returned] }),
        );
        self
    }

    /// Sets the stock partitioner's tag of a node.
    pub fn tag(&mut self, node: &str, tag: Option<&str>) -> &mut Self {
        for n in &mut self.nodes {
            if n["name"] == node {
                n["delegation_tag"] = json!(tag);
            }
        }
        self
    }

    pub fn option(&mut self, key: &str, value: Value) -> &mut Self {
        self.options.insert(key.into(), value);
        self
    }

    pub fn to_value(&self) -> Value {
        let mut document = json!({
            "schema": GRAPH_SCHEMA,
            "nodes": self.nodes,
            "graph_signature": {
                "inputs_to_parameters": self.inputs_to_parameters,
                "inputs_to_buffers": self.inputs_to_buffers,
                "inputs_to_lifted_tensor_constants": self.inputs_to_constants,
                "buffers_to_mutate": self.buffers_to_mutate,
                "user_inputs": self.user_inputs,
                "user_outputs": self.user_outputs,
            },
            "options": self.options,
        });
        if let (Some(ranges), Value::Object(fields)) = (&self.range_constraints, &mut document) {
            fields.insert("range_constraints".into(), Value::Object(ranges.clone()));
        }
        document
    }

    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }
}

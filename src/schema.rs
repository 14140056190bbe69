//! Every document kind partition-planner reads or writes, by its `schema` string, and the probes
//! that tell a document of another kind from a broken one. One place, so the Rust side and the
//! Python package (which reads these from `partition_planner._native`) never disagree on a version.

/// The bridge document: an exported graph, its signature and the stock proposal (docs/bridge-json.md).
pub const GRAPH_SCHEMA: &str = "partition-planner/graph@1";
/// A plan: tags per node, decisions per buffer, findings.
pub const PLAN_SCHEMA: &str = "partition-planner/plan@1";
/// The checker's findings on the tags a document carries.
pub const CHECK_SCHEMA: &str = "partition-planner/check@1";
/// What-if answers: the base plan's figures and each scenario's diff.
pub const WHATIF_SCHEMA: &str = "partition-planner/whatif@1";
/// Content keys per delegate partition (docs/manifest.md).
pub const MANIFEST_SCHEMA: &str = "partition-planner/manifest@1";

/// Every schema with the name the Python package gives it.
pub const ALL: [(&str, &str); 5] = [
    ("GRAPH_SCHEMA", GRAPH_SCHEMA),
    ("PLAN_SCHEMA", PLAN_SCHEMA),
    ("CHECK_SCHEMA", CHECK_SCHEMA),
    ("WHATIF_SCHEMA", WHATIF_SCHEMA),
    ("MANIFEST_SCHEMA", MANIFEST_SCHEMA),
];

/// The `schema` a JSON document declares, when it is an object that declares one: read only to tell
/// a document of another kind from a broken one, once reading it as the expected kind failed.
pub fn declared(text: &str) -> Option<serde_json::Value> {
    #[derive(serde::Deserialize)]
    struct Probe {
        schema: Option<serde_json::Value>,
    }
    // serde reads a struct from an array too (`["partition-planner/plan@1"]` would declare it):
    // only an object declares anything.
    if not_an_object(text).is_some() {
        return None;
    }
    serde_json::from_str::<Probe>(text).ok()?.schema
}

/// What a document's top-level value is when it is not an object, as a reader says it ("an
/// array"); `None` for an object, or for text that is not JSON enough to tell.
pub fn not_an_object(text: &str) -> Option<&'static str> {
    Some(match text.trim_start().bytes().next() {
        None => "an empty document",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b'-' | b'0'..=b'9') => "a number",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => return None,
    })
}

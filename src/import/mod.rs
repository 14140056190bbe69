//! Import: bridge JSON v1 text to a validated [`Graph`], or a typed [`ImportError`] naming the place.
//! Reading is `framed.rs` and `scan.rs` (the fast route) or serde's visitors (`bridge.rs`); what
//! a document must hold beyond its syntax is checked in `validate.rs`, its signature resolved in
//! `signature.rs`.

mod bridge;
mod error;
mod framed;
mod node_list;
mod read_args;
mod read_nodes;
mod references;
mod scan;
mod signature;
mod validate;

use crate::schema::GRAPH_SCHEMA;
pub use error::ImportError;

use crate::graph::Graph;
use bridge::{DocumentSeed, RawDocument};
use serde::de::DeserializeSeed;
use validate::validate;

/// Parses and validates one bridge JSON document. A leading UTF-8 byte order mark, which some
/// editors write, is skipped, as RFC 8259 allows a parser to.
pub fn parse_graph(text: &str) -> Result<Graph, ImportError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let raw = match framed::read_framed(text) {
        Some(raw) => raw,
        None => read_document(text)?,
    };
    finish(raw)
}

/// Parses a document with serde's visitors alone: the reader the faster route (`framed`, `scan`)
/// must always agree with. For differential tests and fuzzing; planning uses [`parse_graph`].
#[doc(hidden)]
pub fn parse_graph_by_serde(text: &str) -> Result<Graph, ImportError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    read_document(text).and_then(finish)
}

/// Reads a document on one thread, with the errors a user should see.
fn read_document(text: &str) -> Result<RawDocument, ImportError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = DocumentSeed { bytes: text.len() };
    match seed
        .deserialize(&mut de)
        .and_then(|raw| de.end().map(|()| raw))
    {
        Ok(raw) => Ok(raw),
        Err(e) => {
            // A document of another schema is reported as such, not as the first field it lacks.
            if let Some(found) = crate::schema::declared(text)
                && found.as_str() != Some(GRAPH_SCHEMA)
            {
                return Err(ImportError::Schema {
                    found: found.to_string(),
                    expected: GRAPH_SCHEMA,
                });
            }
            // A value that is not an object at all is not a bridge document; say what one is.
            match crate::schema::not_an_object(text) {
                Some(found) => Err(ImportError::NotADocument { found }),
                None => Err(ImportError::from_json(&e)),
            }
        }
    }
}

fn finish(raw: RawDocument) -> Result<Graph, ImportError> {
    if raw.schema.as_deref() != Some(GRAPH_SCHEMA) {
        return Err(ImportError::Schema {
            found: format!("{:?}", raw.schema.unwrap_or_default()),
            expected: GRAPH_SCHEMA,
        });
    }
    validate(raw)
}

#[cfg(test)]
mod tests;

//! Graphs made in code rather than exported: `BridgeBuilder` writes small bridge documents for
//! tests and examples; `generate` writes LLM-shaped documents of any size for benchmarks, what-if
//! at scale and property tests. Both only write text; `import::parse_graph` validates.

mod builder;
mod generate;

pub use builder::BridgeBuilder;
pub use generate::{GenerateError, MAX_NODES, MIN_NODES, generate};

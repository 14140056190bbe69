//! partition-planner: plans how an exported PyTorch program is split between ExecuTorch's Core ML
//! delegate and the CPU so that every mutable buffer's mutation chain lands where it can live.
//!
//! The data flows one way: [`import`] → [`analyse`](mod@analyse) → [`plan`](mod@plan) beside
//! [`stock`] → [`check`](mod@check) → [`report`], and [`pipeline`] is the one place that runs the
//! stages in that order; [`api`] is the facade over it that the CLI and the Python binding call.
//! [`digraph`] holds the graph traits and the Kahn's algorithm import and plan share, so that
//! neither reaches into the other. The stages' entry points are re-exported here:
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let text = std::fs::read_to_string("graph.json")?;
//! let graph = partition_planner::parse_graph(&text)?;
//! let analysis = partition_planner::analyse(&graph);
//! let request = partition_planner::PlanRequest::new(&graph);
//! let plan = partition_planner::plan(&graph, &analysis, &request)?;
//! let verdict = partition_planner::verify(&graph, &plan, &request);
//! assert_eq!(verdict.violations().count(), 0);
//! # Ok(())
//! # }
//! ```
//!
//! The stages' modules stay public for tools and tests that compose them; what each keeps to itself
//! is `pub(crate)` or private.

pub mod analyse;
pub mod api;
pub mod check;
pub mod cost;
pub mod decision;
pub mod digraph;
#[cfg(test)]
mod fixtures;
pub mod graph;
pub mod human;
pub mod import;
pub mod manifest;
pub mod measure;
pub mod options;
pub mod outcome;
pub mod pipeline;
pub mod plan;
pub mod report;
pub mod rules;
pub mod schema;
pub mod stock;
pub mod synthetic;
pub mod tagging;
pub mod threads;
pub mod whatif;

pub use analyse::{Analysis, analyse};
pub use api::{ApiError, Overrides, check_document, plan_document, whatif_document};
pub use check::check;
pub use graph::Graph;
pub use import::{ImportError, parse_graph};
pub use outcome::{Plan, Verdict};
pub use pipeline::{Session, plan, verify};
pub use plan::{PlanError, PlanRequest};

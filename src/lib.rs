//! partition-planner: plans how an exported PyTorch program is split between ExecuTorch's Core ML
//! delegate and the CPU so that every mutable buffer's mutation chain lands where it can live.
//!
//! The data flows one way: [`import`] → [`analyse`] → [`plan`] → [`check`] → [`report`]; [`verify`] is
//! where callers run the checker on a plan.

pub mod analyse;
pub mod api;
pub mod check;
pub mod cost;
pub mod decision;
#[cfg(test)]
mod fixtures;
pub mod graph;
pub mod import;
pub mod manifest;
pub mod measure;
pub mod options;
pub mod plan;
pub mod report;
pub mod rules;
pub mod schema;
pub mod synthetic;
pub mod tagging;
pub mod verify;
pub mod whatif;

//! Report: a plan or a check as the JSON the Python side applies, or as text a person reads.

mod json;
mod text;

pub use json::{CHECK_SCHEMA, PLAN_SCHEMA, check_json, plan_json};
pub use text::{check_text, plan_text};

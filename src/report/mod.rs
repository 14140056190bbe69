//! Report, the pipeline's last stage: a plan or a check as the JSON the Python side applies, or as text a person reads; a
//! what-if answer; the partition map's pictures; and a plan document read back.

mod findings;
mod json;
pub mod map;
mod plan_pieces;
mod planned;
mod read_plan;
mod reasons;
mod text;
mod whatif;

pub use findings::{Explained, Step, explain, explain_all, render_path};
pub use json::{CheckDocument, PlanDocument, check_json, plan_json};
pub use plan_pieces::{DraftJson, PlanText, plan_alone_json, plan_json_text};
pub use planned::{Planned, title_of};
pub use read_plan::{GivenPlan, PlanDocumentError, read_plan};
pub use reasons::{Prose, options_refusal};
pub use text::{Shown, check_text, manifest_diff_text, plan_text, unsized_warnings, verdict_line};
pub use whatif::{Answered, Base, comparison_table, whatif_json, whatif_text};

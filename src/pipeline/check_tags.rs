//! `check`: the tags a document carries, or the stock proposal reproduced for it, checked against
//! every rule. No plan is made.

use crate::analyse::GraphIndex;
use crate::check::check;
use crate::graph::Graph;
use crate::measure::{Measure, measure};
use crate::options::Options;
use crate::rules::Finding;
use crate::stock::{self, ExecutorchVersion, UnknownVersion};
use crate::tagging::Tagging;

/// Which tagging `check` checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Checking {
    /// The tags the document carries.
    #[default]
    Document,
    /// The stock proposal reproduced for this executorch version (the document's when `None`),
    /// whatever tags the document carries: what stock would do to it, without executorch.
    Stock(Option<ExecutorchVersion>),
}

impl Checking {
    /// From the flags the CLI and the Python binding take: `stock` checks the stock proposal, for
    /// the `executorch` version given (the document's when `None`); the version is ignored
    /// without `stock`. A version not reproduced here is an error naming it and those that are.
    pub fn from_flags(stock: bool, executorch: Option<&str>) -> Result<Self, UnknownVersion> {
        Ok(match (stock, executorch) {
            (false, _) => Checking::Document,
            (true, None) => Checking::Stock(None),
            (true, Some(v)) => Checking::Stock(Some(ExecutorchVersion::parse_supported(v)?)),
        })
    }
}

/// The tagging checked, and what was found.
pub struct CheckedTags {
    pub tagging: Tagging,
    /// `None` for the document's own tags; the version for a reproduced stock proposal.
    pub reproduced: Option<ExecutorchVersion>,
    pub measure: Measure,
    pub findings: Vec<Finding>,
}

/// Checks what `checking` names of `graph` under `options`.
pub fn check_tags(graph: &Graph, options: &Options, checking: Checking) -> CheckedTags {
    let supported = graph.supported();
    let index = GraphIndex::new(graph);
    let (tagging, reproduced) = match checking {
        Checking::Document => (Tagging::carried(graph), None),
        Checking::Stock(version) => {
            let version = version.unwrap_or_else(|| stock::version_of(graph));
            let tagging = stock::reproduce(graph, &index, version, options, &supported);
            (tagging, Some(version))
        }
    };
    let findings = check(graph, &tagging, options, &supported);
    CheckedTags {
        measure: measure(graph, &index, &tagging),
        tagging,
        reproduced,
        findings,
    }
}

//! What Core ML takes at a model's boundary. A delegate's inputs and outputs become a Core ML
//! model's, and coremltools refuses there what it takes inside a program: a tensor of rank above 5
//! ("Core ML only supports tensors with rank <= 5"; inside, its passes rewrite such tensors away)
//! and a size that is an expression of symbols ("Core ML does not support size variables that are
//! expressions of symbolic variables": a model input's size is a number or one of the program's
//! range-constrained symbols). The planner keeps such values inside one partition or on CPU, and
//! the checker holds every tagging to it (`BOUNDARY_VALUES`, docs/rules.md).

use super::{Dim, Graph, NodeId};
use std::collections::HashSet;

/// The sizes the program's `range_constraints` name (`s0`, `16*s89`), each with its range, as the
/// bridge document gives them: what a model input's size may be besides a number.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeConstraints {
    /// In the document's order: the size, its least and greatest value (`None`: unbounded).
    pub ranges: Vec<(Box<str>, Option<i64>, Option<i64>)>,
    named: HashSet<Box<str>>,
}

impl RangeConstraints {
    pub fn new(ranges: Vec<(Box<str>, Option<i64>, Option<i64>)>) -> Self {
        let named = ranges.iter().map(|(size, _, _)| size.clone()).collect();
        RangeConstraints { ranges, named }
    }

    pub fn names(&self, size: &str) -> bool {
        self.named.contains(size)
    }
}

/// Why a value cannot be a Core ML delegate's input or output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Uncrossable {
    /// A tensor of this rank, above 5.
    Rank(usize),
    /// A size that is no number and no size the range constraints name: an expression of symbols.
    ExpressionSize(Box<str>),
}

/// The most dimensions a Core ML model's input or output may have.
pub const MAX_BOUNDARY_RANK: usize = 5;

impl Graph {
    /// Why the value of `n` cannot cross a delegate's boundary, if it cannot. Judged from the
    /// node's shape alone: a value without one is not judged, and symbolic sizes are judged only
    /// when the document gives the range constraints.
    pub fn uncrossable(&self, n: NodeId) -> Option<Uncrossable> {
        let shape = self.node(n).meta.shape.as_deref()?;
        if shape.len() > MAX_BOUNDARY_RANK {
            return Some(Uncrossable::Rank(shape.len()));
        }
        let constraints = self.range_constraints.as_ref()?;
        shape.iter().find_map(|d| match d {
            Dim::Symbolic(size) if !constraints.names(size) => {
                Some(Uncrossable::ExpressionSize(size.as_str().into()))
            }
            _ => None,
        })
    }
}

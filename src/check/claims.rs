//! PLAN_MATCHES_TAGS: a plan's account of itself (where each buffer lives, how many partitions and
//! states, how many bytes cross) against what the checker derives from the plan's tags alone.

use super::Checker;
use crate::graph::NodeId;
use crate::rules::{Fact, Figure, Finding, RuleId};

/// Where a plan says a buffer lives, in the checker's terms: which tags that implies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lives<'a> {
    /// Placeholder and writer in this partition.
    State(Option<&'a str>),
    /// Placeholder and every chain node untagged.
    Cpu,
    /// Placeholder untagged.
    Io,
}

#[derive(Clone, Debug)]
pub struct BufferClaim<'a> {
    pub buffer: &'a str,
    pub placeholder: NodeId,
    pub writer: NodeId,
    pub lives: Lives<'a>,
}

/// What a plan says of itself. The checker derives each figure from the tags its own way and
/// reports every disagreement under PLAN_MATCHES_TAGS.
#[derive(Clone, Debug)]
pub struct Claims<'a> {
    pub buffers: Vec<BufferClaim<'a>>,
    /// Delegate partitions (delegate calls).
    pub partitions: usize,
    pub states: usize,
    /// Bytes of known size crossing partition boundaries, summed over partitions.
    pub boundary_bytes: u64,
}

impl Checker<'_> {
    /// PLAN_MATCHES_TAGS: each buffer where the plan says it lives, and the plan's figures equal to
    /// those the checker derives from the tags.
    pub(super) fn claims(&self, claims: &Claims) -> Vec<Finding> {
        let t = self.tagging;
        let mut out = Vec::new();
        for b in &claims.buffers {
            let p_tag = t.tag(b.placeholder);
            let w_tag = t.tag(b.writer);
            let owned = |t: Option<&str>| t.map(str::to_string);
            let wrong = match b.lives {
                Lives::State(partition) => {
                    let whole = p_tag.is_some() && p_tag == w_tag && partition == p_tag;
                    (!whole).then(|| Fact::NotTheClaimedState {
                        claimed: owned(partition),
                        placeholder_tag: owned(p_tag),
                        writer_tag: owned(w_tag),
                    })
                }
                Lives::Cpu => {
                    let tagged: Vec<NodeId> = self
                        .chain(b.placeholder, b.writer)
                        .into_iter()
                        .filter(|&n| t.tag(n).is_some())
                        .collect();
                    (p_tag.is_some() || !tagged.is_empty()).then(|| Fact::NotOnCpu {
                        placeholder_tag: owned(p_tag),
                        tagged,
                    })
                }
                Lives::Io => p_tag.is_some().then(|| Fact::NotIo {
                    placeholder_tag: owned(p_tag),
                }),
            };
            if let Some(fact) = wrong {
                out.push(Finding::violation(RuleId::PlanMatchesTags, fact).buffer(b.buffer));
            }
        }
        let partitions = self.sides.iter().filter(|s| s.ops > 0).count();
        let states = self
            .graph
            .signature
            .mutable_buffers
            .iter()
            .filter(|b| t.tag(b.placeholder).is_some() && t.tag(b.placeholder) == t.tag(b.writer))
            .count();
        let boundary_bytes: u64 = self
            .sides
            .iter()
            .flat_map(|s| s.inputs.iter().chain(&s.outputs))
            .filter_map(|&v| self.graph.node(v).meta.bytes())
            .fold(0, u64::saturating_add);
        let figures = [
            (
                Figure::DelegatePartitions,
                claims.partitions as u64,
                partitions as u64,
            ),
            (Figure::States, claims.states as u64, states as u64),
            (Figure::BoundaryBytes, claims.boundary_bytes, boundary_bytes),
        ];
        for (figure, said, found) in figures {
            if said != found {
                let fact = Fact::Misreported {
                    figure,
                    said,
                    found,
                };
                out.push(Finding::violation(RuleId::PlanMatchesTags, fact));
            }
        }
        out
    }
}

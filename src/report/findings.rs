//! Findings in words: the checker's facts (and the planner's decisions, via `reasons.rs`) become
//! `Explained` findings, with node names, a message and, for a cycle, the path, for the JSON and
//! text reports.

use crate::graph::{Conversion, FoundBy, Graph, MAX_BOUNDARY_RANK, NodeId, Uncrossable};
use crate::human::{byte_size, count};
use crate::options::target_label;
use crate::rules::{Fact, Figure, Finding, FindingKind, PathStep, RuleId};
use serde::Serialize;
use std::fmt;

/// One step of a path, by node name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    pub node: String,
    /// The node's partition, or `None` on CPU.
    pub tag: Option<String>,
    /// The step is reached by staying inside the previous step's partition, not by an edge.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub within_partition: bool,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tag {
            Some(t) => write!(f, "{} [{t}]", self.node),
            None => write!(f, "{} [cpu]", self.node),
        }
    }
}

/// Renders a path as `a [tag0] -> b [cpu] -> c [tag0]`, with `~>` for a step inside a partition.
pub fn render_path(path: &[Step]) -> String {
    let mut out = String::new();
    for (i, step) in path.iter().enumerate() {
        if i > 0 {
            out.push_str(if step.within_partition {
                " ~> "
            } else {
                " -> "
            });
        }
        out.push_str(&step.to_string());
    }
    out
}

/// A finding or a decision as the reports show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Explained {
    pub rule: RuleId,
    pub kind: FindingKind,
    pub message: String,
    /// The nodes it is about.
    pub nodes: Vec<String>,
    /// For `ACYCLIC`: the path that leaves a partition and re-enters it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<Step>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

impl fmt::Display for Explained {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.rule, self.message)?;
        if !self.path.is_empty() {
            write!(f, "\n    path: {}", render_path(&self.path))?;
        }
        Ok(())
    }
}

/// The checker's path, by node name.
pub fn steps(graph: &Graph, path: &[PathStep]) -> Vec<Step> {
    path.iter()
        .map(|s| Step {
            node: graph.name(s.node).to_string(),
            tag: s.tag.clone(),
            within_partition: s.within_partition,
        })
        .collect()
}

/// What the converter said of a node, as every report says it: `coremltools 9.0 cannot convert
/// aten.max_pool2d_with_indices.default(dilation=[2, 2]): ValueError: @max_pool does not support
/// dilation > 1 (conversion probe)`. Each part the verdict lacks is said plainly.
pub fn conversion_failure(graph: &Graph, node: NodeId) -> String {
    let n = graph.node(node);
    match n.conversion.as_deref() {
        Some(verdict) => refused(verdict, &n.target),
        None => format!("{} has no conversion verdict", n.name),
    }
}

/// Why a value cannot cross a delegate's boundary, in words.
pub fn uncrossable(why: &Uncrossable) -> String {
    match why {
        Uncrossable::Rank(rank) => format!(
            "it has rank {rank}, and a Core ML model's inputs and outputs have rank {MAX_BOUNDARY_RANK} or less"
        ),
        Uncrossable::ExpressionSize(size) => format!(
            "its size {size} is an expression of symbols, which a Core ML model's inputs and outputs cannot have"
        ),
    }
}

/// A verdict of refusal in words, `op` standing for the call where the verdict names none.
pub fn refused(verdict: &Conversion, op: &str) -> String {
    let converter = verdict.converter.as_deref().unwrap_or("the converter");
    let call = verdict.call.as_deref().unwrap_or(op);
    let error = verdict.error.as_deref().unwrap_or("no error recorded");
    let how = match verdict.found_by {
        Some(FoundBy::Probe) => " (conversion probe)",
        Some(FoundBy::Verification) => " (found by converting its planned partition)",
        None => "",
    };
    format!("{converter} cannot convert {call}: {error}{how}")
}

/// A checker's finding in words.
pub fn explain(graph: &Graph, f: &Finding) -> Explained {
    Explained {
        rule: f.rule,
        kind: f.kind,
        message: message(graph, f),
        nodes: f.nodes.iter().map(|&n| graph.name(n).to_string()).collect(),
        path: steps(graph, &f.path),
        buffer: f.buffer.clone(),
        partition: f.partition.clone(),
        bytes: f.bytes,
    }
}

/// Every finding in words, in order.
pub fn explain_all(graph: &Graph, findings: &[Finding]) -> Vec<Explained> {
    findings.iter().map(|f| explain(graph, f)).collect()
}

fn side(tag: &Option<String>) -> &str {
    tag.as_deref().unwrap_or("cpu")
}

fn message(graph: &Graph, f: &Finding) -> String {
    let name = |n: NodeId| graph.name(n);
    let names = |ns: &[NodeId]| ns.iter().map(|&n| graph.name(n)).collect::<Vec<_>>();
    let buffer = f.buffer.as_deref().unwrap_or_default();
    let tag = f.partition.as_deref().unwrap_or_default();
    match &f.fact {
        Fact::NotConvex { exit, entry } => format!(
            "partition {tag} is not convex: a path leaves it at {} and re-enters it at {} through nodes outside it",
            name(*exit),
            name(*entry)
        ),
        Fact::PartitionsInCycle { tags } => format!(
            "partitions {} depend on each other in a cycle",
            tags.join(", ")
        ),
        Fact::UnsupportedTagged { node } => format!(
            "{} ({}) is tagged {tag} but Core ML does not support it",
            name(*node),
            graph.node(*node).target
        ),
        Fact::OutputTagged { node } => format!("the graph output {} is tagged {tag}", name(*node)),
        Fact::NotConvertibleTagged { node } => format!(
            "{} is tagged {tag}, but {}",
            name(*node),
            conversion_failure(graph, *node)
        ),
        Fact::UncrossableValue { value, why, into } => format!(
            "{} is {} {tag}, but {}",
            name(*value),
            if *into { "an input of" } else { "an output of" },
            uncrossable(why)
        ),
        Fact::HiddenState {
            placeholder,
            as_state,
        } => {
            let what = if *as_state {
                "a Core ML state"
            } else {
                "a frozen constant copy"
            };
            format!(
                "buffer {buffer} would become {what} of {tag}: its placeholder {} is tagged although take_over_mutable_buffer is off",
                name(*placeholder)
            )
        }
        Fact::StaleCopy {
            placeholder,
            writer,
            writer_tag,
        } => format!(
            "buffer {buffer}: its placeholder {} is tagged {tag} but its writer {} is on {}; {tag} would read a constant copy frozen at export",
            name(*placeholder),
            name(*writer),
            side(writer_tag)
        ),
        Fact::StateSplit { outside } => {
            let listed: Vec<String> = outside
                .iter()
                .map(|(n, t)| format!("{} on {}", name(*n), side(t)))
                .collect();
            format!(
                "buffer {buffer} is a state of {tag}, but part of its chain or a reader of its old value is elsewhere: {}",
                listed.join(", ")
            )
        }
        Fact::StatesBelowTarget { buffers, target } => format!(
            "{} ({}) but the minimum deployment target is {}",
            count(buffers.len(), "state", "states"),
            buffers.join(", "),
            target_label(*target)
        ),
        Fact::NoRuntimeInput { members, target } => format!(
            "partition {tag} reads no runtime value ({}) but the minimum deployment target is {}",
            names(members).join(", "),
            target_label(*target)
        ),
        Fact::ConstantCopied {
            placeholder,
            readers,
        } => {
            let readers: Vec<&str> = readers.iter().map(side).collect();
            let size = f.bytes.map_or("unknown size".to_string(), byte_size);
            format!(
                "{} is owned by {tag} and copied for {} ({size})",
                name(*placeholder),
                readers.join(", ")
            )
        }
        Fact::OverBudget {
            weight_bytes,
            ops,
            max_weight_bytes,
            max_ops,
        } => {
            let mut over = Vec::new();
            if let Some(max) = max_weight_bytes.filter(|m| weight_bytes > m) {
                over.push(format!(
                    "{} of constants (budget {})",
                    byte_size(*weight_bytes),
                    byte_size(max)
                ));
            }
            if let Some(max) = max_ops.filter(|m| ops > m) {
                over.push(format!("{ops} ops (budget {max})"));
            }
            format!("partition {tag} holds {}", over.join(" and "))
        }
        Fact::TupleSplit {
            getitem,
            producer,
            getitem_tag,
            producer_tag,
        } => format!(
            "{} picks an output of {} but is on {} while {} is on {}",
            name(*getitem),
            name(*producer),
            side(getitem_tag),
            name(*producer),
            side(producer_tag)
        ),
        Fact::NotTheClaimedState {
            claimed,
            placeholder_tag,
            writer_tag,
        } => format!(
            "buffer {buffer} is said to be a state of {claimed:?} but its placeholder is in \
             {placeholder_tag:?} and its writer in {writer_tag:?}"
        ),
        Fact::NotOnCpu {
            placeholder_tag,
            tagged,
        } => format!(
            "buffer {buffer} is said to run on CPU but its placeholder is in {placeholder_tag:?} \
             and chain nodes {:?} are delegated",
            names(tagged)
        ),
        Fact::NotIo { placeholder_tag } => format!(
            "buffer {buffer} is said to be io but its placeholder is tagged {placeholder_tag:?}"
        ),
        Fact::Misreported {
            figure,
            said,
            found,
        } => {
            let what = match figure {
                Figure::DelegatePartitions => "delegate partitions",
                Figure::States => "states",
                Figure::BoundaryBytes => "boundary bytes",
            };
            format!("the plan reports {said} {what}, but its tags hold {found}")
        }
    }
}

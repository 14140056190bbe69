//! The planner's vocabulary, shared by the planner, what-if, reports and the Python binding (never
//! by the checker, which speaks only of tags): where a buffer's chain lives, what was asked, and the
//! decision made with its alternatives and its reasons. Reasons are facts carrying node ids and
//! buffer indices; `report/` alone turns them into sentences.

use crate::analyse::MutationKind;
use crate::cost::CostEstimate;
use crate::graph::NodeId;
use crate::rules::RuleId;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Where a mutable buffer's chain lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// The whole chain in one delegate partition that owns the buffer as a Core ML state.
    State,
    /// The whole chain on CPU, the placeholder untagged; delegates read the buffer as a plain input.
    Cpu,
    /// The chain in delegates where supported, the placeholder untagged, the new value returned as an
    /// ordinary output and written back by the runtime.
    Io,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::State => "state",
            Strategy::Cpu => "cpu",
            Strategy::Io => "io",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the user asked for one buffer or all: a strategy, or the planner's choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StrategyRequest {
    #[default]
    Auto,
    Fixed(Strategy),
}

/// `STRATEGY` for every buffer, or `BUFFER=STRATEGY` for one: the spelling `--strategy` and the
/// what-if change `strategy=` share.
pub fn parse_strategy_spec(s: &str) -> Result<(Option<String>, StrategyRequest), UnknownStrategy> {
    match s.split_once('=') {
        Some((buffer, strategy)) => Ok((Some(buffer.to_string()), strategy.parse()?)),
        None => Ok((None, s.parse()?)),
    }
}

/// A strategy spelled neither state, cpu, io nor auto.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown strategy {0:?} (expected state, cpu, io or auto)")]
pub struct UnknownStrategy(pub String);

impl FromStr for StrategyRequest {
    type Err = UnknownStrategy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "auto" => StrategyRequest::Auto,
            "state" => StrategyRequest::Fixed(Strategy::State),
            "cpu" => StrategyRequest::Fixed(Strategy::Cpu),
            "io" => StrategyRequest::Fixed(Strategy::Io),
            _ => return Err(UnknownStrategy(s.to_string())),
        })
    }
}

impl fmt::Display for StrategyRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StrategyRequest::Auto => f.write_str("auto"),
            StrategyRequest::Fixed(s) => s.fmt(f),
        }
    }
}

/// One strategy for a buffer's class, everything else as chosen: what the whole plan would cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Alternative {
    pub strategy: Strategy,
    pub estimate: CostEstimate,
    /// Set when the alternative was not taken for a reason other than its estimate: `state` tried
    /// and refused, or another strategy that would cost a buffer its state.
    pub refused: Option<Refusal>,
}

/// The decision for one mutable buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferDecision {
    pub buffer: String,
    pub placeholder: NodeId,
    pub writer: NodeId,
    pub requested: StrategyRequest,
    pub strategy: Strategy,
    /// Why, as facts; `report::buffer_reason` says it in a sentence.
    pub reason: Reason,
    /// The rule behind the decision, where one is.
    pub rule: Option<RuleId>,
    /// The partition owning the state, for `state`.
    pub partition: Option<String>,
    /// For `auto`: each strategy the options allow, with the whole plan's estimate had this
    /// buffer's class taken it (the chosen one is the plan's own estimate).
    pub alternatives: Vec<Alternative>,
    /// For `auto`: how many buffers of the same shape were decided together (itself included).
    pub class_size: usize,
}

/// Why a buffer's chain lives where it does.
#[derive(Clone, Debug, PartialEq)]
pub enum Reason {
    /// `cpu` or `io` was requested.
    Requested(Strategy),
    /// A state was refused (by the options or by a fact of the graph): the chain runs on CPU.
    StateRefused {
        requested: StrategyRequest,
        refusal: Refusal,
    },
    /// Kept as a state.
    Kept(KeptState),
    /// `auto`: what the search weighed. The alternatives are the decision's own.
    Weighed {
        basis: Basis,
        chosen: Strategy,
        class_size: usize,
    },
}

/// What made a state possible: the chain's facts.
#[derive(Clone, Debug, PartialEq)]
pub struct KeptState {
    pub partition: String,
    pub chain_nodes: usize,
    pub kind: MutationKind,
    pub old_value_readers: usize,
}

/// Where an `auto` decision starts from: a state kept, a state refused, or none possible.
#[derive(Clone, Debug, PartialEq)]
pub enum Basis {
    Kept(KeptState),
    Refused(Refusal),
    NoState,
}

/// Why a buffer cannot be a Core ML state (or why an alternative was not taken).
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// `take_over_mutable_buffer` is off.
    TakeOverOff,
    /// States need iOS18; the target is lower (`None`: the converter's default).
    TargetBelowIos18(Option<crate::options::DeploymentTarget>),
    /// A node of the state's hull cannot be delegated.
    Blocked {
        node: NodeId,
        place: HullPlace,
        blocker: Blocker,
    },
    /// The state's partition would lie on this cycle through the rest of the graph.
    Cycle(Vec<CycleStep>),
    /// The state's hull cannot be cut, and alone it exceeds a partition budget (`max_weight_bytes`
    /// or `max_ops`): its constant bytes and ops as one partition would hold them.
    OverBudget { weight_bytes: u64, ops: u64 },
    /// A cut the user asked for (`cut_after`/`cut_before`, this pattern) runs through the state's
    /// hull, before this node of it.
    CutThrough { pattern: String, before: NodeId },
    /// Taking the alternative would cost buffer `buffer` (an index into the analysis's buffers) its
    /// state, for this reason (always known, as every demotion records one).
    WouldCostState {
        buffer: usize,
        because: Option<Box<Refusal>>,
    },
}

impl Refusal {
    /// The rule the refusal follows.
    pub fn rule(&self) -> RuleId {
        match self {
            Refusal::TakeOverOff => RuleId::NoHiddenState,
            Refusal::TargetBelowIos18(_) => RuleId::StateTarget,
            Refusal::Blocked { blocker, .. } => blocker.rule(),
            Refusal::Cycle(_) => RuleId::Acyclic,
            Refusal::OverBudget { .. } => RuleId::WithinBudget,
            Refusal::CutThrough { .. } => RuleId::StateWhole,
            Refusal::WouldCostState { because, .. } => {
                because.as_ref().map_or(RuleId::StateWhole, |r| r.rule())
            }
        }
    }
}

/// Why a node cannot be in a delegate partition now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocker {
    /// Placeholders, `get_attr` and the output are not ops a delegate runs.
    NotAnOp,
    Unsupported,
    /// In the chain of this buffer (an index into the analysis's buffers), which runs on CPU.
    CpuChain(usize),
    /// A multi-output op one of whose `getitem`s (this node) cannot be delegated.
    TupleSibling(NodeId),
    /// A `getitem` whose producer (this node) runs on CPU.
    ProducerOnCpu(NodeId),
    /// Its partition would read no runtime value, which Core ML allows only from iOS18.
    NoInput,
    /// The request keeps it on CPU.
    Requested,
    /// With what it cannot be parted from (its tuple), it alone exceeds a partition budget.
    OverBudget,
    /// The converter was found to refuse it (the node's conversion verdict).
    DoesNotConvert,
    /// It makes or reads a value no delegate can take or give at its boundary, and that value's
    /// tied group (an index into the analysis's `tied`) runs on CPU.
    Tied(usize),
}

impl Blocker {
    pub fn rule(self) -> RuleId {
        match self {
            Blocker::NotAnOp | Blocker::CpuChain(_) => RuleId::StateWhole,
            Blocker::NoInput => RuleId::NoInputTarget,
            Blocker::OverBudget => RuleId::WithinBudget,
            Blocker::DoesNotConvert => RuleId::Convertible,
            Blocker::Tied(_) => RuleId::BoundaryValues,
            Blocker::Unsupported
            | Blocker::TupleSibling(_)
            | Blocker::ProducerOnCpu(_)
            | Blocker::Requested => RuleId::Supported,
        }
    }
}

/// Where a blocking node sits relative to the buffer whose state it refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HullPlace {
    Chain,
    OldValueReader,
    /// Between the chain and a reader of the old value.
    Between,
}

/// What one partition must hold whole: a state's hull, or the hull of a tied group (ops tied by
/// values no delegate can take at its boundary).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HullOf {
    /// The state of this buffer (an index into the analysis's buffers).
    State(usize),
    /// This tied group (an index into the analysis's `tied`).
    Tied(usize),
}

/// One step of a cycle the planner found: a node, the group it belongs to, and whether it is
/// reached by staying inside that group rather than by an edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CycleStep {
    pub node: NodeId,
    pub group: Option<HullOf>,
    pub within_partition: bool,
}

/// Why a tied group (ops tied by values no delegate can take or give at its boundary) runs on CPU.
#[derive(Clone, Debug, PartialEq)]
pub enum TiedOnCpu {
    /// This placeholder is one of its values: a delegate takes a placeholder in only as constant
    /// data it holds.
    Placeholder(NodeId),
    /// The graph's output reads one of its values.
    Output,
    /// A node of its hull cannot be delegated.
    Blocked { node: NodeId, blocker: Blocker },
    /// Its hull, which cannot be cut, alone exceeds a partition budget.
    OverBudget { weight_bytes: u64, ops: u64 },
    /// A cut the user asked for runs through its hull, before this node of it.
    CutThrough { pattern: String, before: NodeId },
    /// Its hull would lie on this cycle through the rest of the graph.
    Cycle(Vec<CycleStep>),
}

/// Something the planner decided beyond one buffer's strategy, or a buffer decision worth a finding.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Below iOS18, these ops would form a partition reading no runtime value: they run on CPU.
    InputlessOnCpu(Vec<NodeId>),
    /// In a planning round, buffer `buffer`'s state was given up because it lay on this cycle.
    StateOnCycle { buffer: usize, path: Vec<CycleStep> },
    /// The decision on `Plan::buffers[i]`, which cites a rule.
    Buffer(usize),
    /// The converter was found to refuse these ops, which the support check accepts: they run on
    /// CPU. One decision per verdict (the same call and error), nodes in node order.
    NotConvertibleOnCpu(Vec<NodeId>),
    /// The converter refuses this op whole (`Graph::decomposed[i]`): it was decomposed before
    /// export, and its parts are planned as any others.
    Decomposed(usize),
    /// The ops of this tied group (an index into the analysis's `tied`) run on CPU, for this
    /// reason: together they cannot be one partition's.
    TiedOnCpu { tied: usize, why: TiedOnCpu },
    /// These ops (one op, or a tuple with its `getitem`s) alone exceed a partition budget: they
    /// run on CPU.
    OverBudgetOnCpu {
        nodes: Vec<NodeId>,
        weight_bytes: u64,
        ops: u64,
    },
}

/// Where one delegate partition of the plan ends and the next begins although convexity would
/// let them be one: a budget reached, or a cut the user asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The last op before the cut and the first after it, both in the same partition had it not
    /// been cut (the partitions they end up in are their tags).
    pub after: NodeId,
    pub before: NodeId,
    pub reason: CutReason,
    /// Bytes of the values that cross the cut (made before it and read after, or read on both
    /// sides from elsewhere), as far as sizes are known.
    pub crossing_bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CutReason {
    /// Grown as far as it could, the partition before the cut would have reached this many
    /// constant bytes by taking `reached` in; the cut is at `reached` or earlier, where the fewest
    /// bytes cross among the places that keep the count of partitions.
    WeightBudget { reached: NodeId, would_be: u64 },
    /// The same for ops.
    OpBudget { reached: NodeId, would_be: u64 },
    /// The user asked for it: `cut_after` or `cut_before` with this pattern.
    Asked { pattern: String, after: bool },
}

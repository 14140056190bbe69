//! The rules a tagging must keep, each under a stable ID. Explanations, `check` and the checker
//! all speak in these IDs; docs/rules.md says what each guards against in executorch/coremltools.

use crate::graph::{NodeId, Uncrossable};
use crate::options::DeploymentTarget;
use serde::Serialize;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RuleId {
    /// Contracting each delegate partition to one node leaves a DAG.
    Acyclic,
    /// No unsupported node is tagged.
    Supported,
    /// With take-over off, no mutable buffer's placeholder is tagged.
    NoHiddenState,
    /// A state's placeholder, whole chain and every reader of the placeholder share one partition.
    StateWhole,
    /// States exist only when the minimum deployment target is iOS18 or later.
    StateTarget,
    /// A mutable buffer's placeholder is never tagged into a partition without its writer.
    NoStaleCopy,
    /// A constant used by several partitions is copied into each.
    ConstantSharing,
    /// A delegate partition that reads no runtime value exists only at iOS18 or later.
    NoInputTarget,
    /// A plan's own summary (strategies, states, partitions) agrees with its node tags.
    PlanMatchesTags,
    /// A multi-output op and every `getitem` of it are on one side.
    TupleWhole,
    /// Each delegate partition keeps within the budgets asked for (constant bytes, ops).
    WithinBudget,
    /// No node the converter was found to refuse is tagged.
    Convertible,
    /// Every value crossing a delegate's boundary is one Core ML takes as a model's input or
    /// output: rank 5 or less, every size a number or a range-constrained symbol.
    BoundaryValues,
}

impl RuleId {
    pub const ALL: [RuleId; 13] = [
        RuleId::Acyclic,
        RuleId::Supported,
        RuleId::NoHiddenState,
        RuleId::StateWhole,
        RuleId::StateTarget,
        RuleId::NoStaleCopy,
        RuleId::ConstantSharing,
        RuleId::NoInputTarget,
        RuleId::PlanMatchesTags,
        RuleId::TupleWhole,
        RuleId::WithinBudget,
        RuleId::Convertible,
        RuleId::BoundaryValues,
    ];

    pub fn id(self) -> &'static str {
        match self {
            RuleId::Acyclic => "ACYCLIC",
            RuleId::Supported => "SUPPORTED",
            RuleId::NoHiddenState => "NO_HIDDEN_STATE",
            RuleId::StateWhole => "STATE_WHOLE",
            RuleId::StateTarget => "STATE_TARGET",
            RuleId::NoStaleCopy => "NO_STALE_COPY",
            RuleId::ConstantSharing => "CONSTANT_SHARING",
            RuleId::NoInputTarget => "NO_INPUT_TARGET",
            RuleId::PlanMatchesTags => "PLAN_MATCHES_TAGS",
            RuleId::TupleWhole => "TUPLE_WHOLE",
            RuleId::WithinBudget => "WITHIN_BUDGET",
            RuleId::Convertible => "CONVERTIBLE",
            RuleId::BoundaryValues => "BOUNDARY_VALUES",
        }
    }

    /// What breaking the rule does in executorch/coremltools.
    pub fn consequence(self) -> &'static str {
        match self {
            RuleId::Acyclic => {
                "executorch refuses the partition: \"Invalid partition, found dependency cycles\""
            }
            RuleId::Supported => "coremltools cannot convert the op and lowering fails",
            RuleId::NoHiddenState => {
                "coremltools turns the buffer into a Core ML state although take_over_mutable_buffer is off; the runtime does not bind it (\"must be an MLState\")"
            }
            RuleId::StateWhole => {
                "the buffer's reader and writer land in different programs (SpecViolationError: \"Buffer output ... does not point to a buffer that exists\") or read a stale copy"
            }
            RuleId::StateTarget => {
                "coremltools refuses: \"State model is supported only >= iOS18\""
            }
            RuleId::NoStaleCopy => {
                "executorch copies the buffer into the delegate, coremltools freezes the copy as a constant, and every call after the first reads the stale value, silently"
            }
            RuleId::ConstantSharing => {
                "the constant's bytes are stored once per partition that uses it"
            }
            RuleId::NoInputTarget => {
                "executorch refuses the delegate: \"Deploying a model with no inputs in CoreML requires you set minimum_deployment_target to iOS18 or later\""
            }
            RuleId::PlanMatchesTags => "the plan says one thing and applies another",
            RuleId::TupleWhole => {
                "a partition boundary would carry a tuple, which a fused delegate can neither return nor take (torch.fx's CapabilityBasedPartitioner moves every getitem into its producer's partition for this reason)"
            }
            RuleId::WithinBudget => {
                "a delegate larger than the device takes: the Neural Engine compiler refuses weight files over 2 GiB (\"Weight file size ... exceeds the maximum\"), and very deep programs fail to compile"
            }
            RuleId::Convertible => {
                "coremltools fails to convert the partition, and the whole to_edge_transform_and_lower aborts with the converter's traceback"
            }
            RuleId::BoundaryValues => {
                "coremltools refuses the partition's model: \"Core ML only supports tensors with rank <= 5\", or \"Core ML does not support size variables that are expressions of symbolic variables\", and lowering aborts"
            }
        }
    }

    /// `ConstantSharing` is a cost, everything else breaks lowering or meaning.
    pub fn is_cost(self) -> bool {
        self == RuleId::ConstantSharing
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// The tagging breaks the rule.
    Violation,
    /// The tagging keeps the rule but pays for it (constant copies).
    Cost,
    /// The planner chose something because of the rule.
    Decision,
}

/// One step of a concrete path through the graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathStep {
    pub node: NodeId,
    /// The node's partition, or `None` on CPU.
    pub tag: Option<String>,
    /// The step is reached by staying inside the previous step's partition, not by an edge.
    pub within_partition: bool,
}

/// A checker's finding: the rule, and the fact behind it with the nodes it is about. `report/`
/// says it in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub rule: RuleId,
    pub kind: FindingKind,
    pub fact: Fact,
    /// The nodes the finding is about.
    pub nodes: Vec<NodeId>,
    /// For `ACYCLIC`: the path that leaves a partition and re-enters it.
    pub path: Vec<PathStep>,
    pub buffer: Option<String>,
    pub partition: Option<String>,
    pub bytes: Option<u64>,
}

/// What the checker found, per rule. Tags are names (`None` is CPU); nodes are ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fact {
    /// ACYCLIC: a path leaves the finding's partition at `exit` and re-enters it at `entry`.
    NotConvex { exit: NodeId, entry: NodeId },
    /// ACYCLIC: these partitions depend on each other in a cycle.
    PartitionsInCycle { tags: Vec<String> },
    /// SUPPORTED: an op the backend does not support is tagged.
    UnsupportedTagged { node: NodeId },
    /// SUPPORTED: the graph output is tagged.
    OutputTagged { node: NodeId },
    /// CONVERTIBLE: a node the converter was found to refuse is tagged.
    NotConvertibleTagged { node: NodeId },
    /// BOUNDARY_VALUES: `value` crosses the finding's partition's boundary (an input when
    /// `into`, else an output), but Core ML takes no such value there.
    UncrossableValue {
        value: NodeId,
        why: Uncrossable,
        into: bool,
    },
    /// NO_HIDDEN_STATE: the placeholder is tagged with take-over off; with its writer beside it
    /// (`as_state`) it becomes a state, otherwise a frozen copy.
    HiddenState { placeholder: NodeId, as_state: bool },
    /// NO_STALE_COPY: the placeholder is tagged but the writer is elsewhere.
    StaleCopy {
        placeholder: NodeId,
        writer: NodeId,
        writer_tag: Option<String>,
    },
    /// STATE_WHOLE: these chain nodes or old-value readers are outside the state's partition.
    StateSplit {
        outside: Vec<(NodeId, Option<String>)>,
    },
    /// STATE_TARGET: states below iOS18.
    StatesBelowTarget {
        buffers: Vec<String>,
        target: Option<DeploymentTarget>,
    },
    /// NO_INPUT_TARGET: the partition reads no runtime value, below iOS18.
    NoRuntimeInput {
        members: Vec<NodeId>,
        target: Option<DeploymentTarget>,
    },
    /// CONSTANT_SHARING: a tagged constant copied for each reading side.
    ConstantCopied {
        placeholder: NodeId,
        readers: Vec<Option<String>>,
    },
    /// TUPLE_WHOLE: a getitem on another side than the op whose output it picks.
    TupleSplit {
        getitem: NodeId,
        producer: NodeId,
        getitem_tag: Option<String>,
        producer_tag: Option<String>,
    },
    /// PLAN_MATCHES_TAGS: said to be a state of `claimed`, placeholder and writer are elsewhere.
    NotTheClaimedState {
        claimed: Option<String>,
        placeholder_tag: Option<String>,
        writer_tag: Option<String>,
    },
    /// PLAN_MATCHES_TAGS: said to run on CPU, yet tagged.
    NotOnCpu {
        placeholder_tag: Option<String>,
        tagged: Vec<NodeId>,
    },
    /// PLAN_MATCHES_TAGS: said to be io, yet the placeholder is tagged.
    NotIo { placeholder_tag: Option<String> },
    /// WITHIN_BUDGET: the partition holds more constant bytes or ops than asked.
    OverBudget {
        weight_bytes: u64,
        ops: u64,
        max_weight_bytes: Option<u64>,
        max_ops: Option<u64>,
    },
    /// PLAN_MATCHES_TAGS: a figure the plan reports differs from the tags'.
    Misreported {
        figure: Figure,
        said: u64,
        found: u64,
    },
}

/// A figure a plan reports of itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    DelegatePartitions,
    States,
    BoundaryBytes,
}

impl Finding {
    pub fn new(rule: RuleId, kind: FindingKind, fact: Fact) -> Self {
        Finding {
            rule,
            kind,
            fact,
            nodes: Vec::new(),
            path: Vec::new(),
            buffer: None,
            partition: None,
            bytes: None,
        }
    }

    pub fn violation(rule: RuleId, fact: Fact) -> Self {
        Self::new(
            rule,
            if rule.is_cost() {
                FindingKind::Cost
            } else {
                FindingKind::Violation
            },
            fact,
        )
    }

    pub fn nodes(mut self, nodes: impl IntoIterator<Item = NodeId>) -> Self {
        self.nodes = nodes.into_iter().collect();
        self
    }

    pub fn path(mut self, path: Vec<PathStep>) -> Self {
        self.path = path;
        self
    }

    pub fn buffer(mut self, buffer: impl Into<String>) -> Self {
        self.buffer = Some(buffer.into());
        self
    }

    pub fn partition(mut self, partition: impl Into<String>) -> Self {
        self.partition = Some(partition.into());
        self
    }

    pub fn bytes(mut self, bytes: Option<u64>) -> Self {
        self.bytes = bytes;
        self
    }

    pub fn is_violation(&self) -> bool {
        self.kind == FindingKind::Violation
    }
}

/// The distinct rules the findings break, in rule order (costs and decisions left out).
pub fn violated(findings: &[Finding]) -> Vec<RuleId> {
    let mut rules: Vec<RuleId> = findings
        .iter()
        .filter(|f| f.is_violation())
        .map(|f| f.rule)
        .collect();
    rules.sort();
    rules.dedup();
    rules
}

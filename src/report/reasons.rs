//! The planner's reasons and decisions in sentences: the one place `Reason`, `Refusal` and
//! `Decision` (facts with node ids and buffer indices) become text, for the JSON and text reports.

use super::findings::{Explained, Step, conversion_failure, refused, render_path};
use crate::analyse::{Analysis, MutationKind, Tied};
use crate::decision::{
    Basis, Blocker, BufferDecision, CycleStep, Decision, HullOf, HullPlace, KeptState, Reason,
    Refusal, Strategy, StrategyRequest, TiedOnCpu,
};
use crate::graph::{Graph, Uncrossable};
use crate::human::{byte_size, count};
use crate::options::target_label;
use crate::plan::{CutReason, Draft};
use crate::rules::{FindingKind, RuleId};

/// The refusals that follow from the options alone, with no graph to look at: the blocking fact.
pub fn options_refusal(r: &Refusal) -> Option<String> {
    match r {
        Refusal::TakeOverOff => Some(
            "take_over_mutable_buffer is off, so no delegate may own the buffer as a state"
                .to_string(),
        ),
        Refusal::TargetBelowIos18(t) => Some(format!(
            "a Core ML state needs iOS18 or later and the minimum deployment target is {}",
            target_label(*t)
        )),
        _ => None,
    }
}

/// Prose for what a reason refers to by id.
#[derive(Clone, Copy)]
pub struct Prose<'a> {
    pub graph: &'a Graph,
    pub analysis: &'a Analysis,
}

impl<'a> Prose<'a> {
    pub fn new(graph: &'a Graph, analysis: &'a Analysis) -> Self {
        Prose { graph, analysis }
    }

    fn buffer(&self, b: usize) -> &str {
        self.analysis
            .buffers
            .get(b)
            .map_or("?", |c| c.buffer.as_str())
    }

    /// A reason in a sentence a person reads.
    pub fn reason(&self, b: &BufferDecision) -> String {
        match &b.reason {
            Reason::Requested(Strategy::Cpu) => "cpu was requested: the whole chain runs on CPU and delegates read the buffer as a plain input".into(),
            Reason::Requested(Strategy::Io) => "io was requested: delegates take the buffer as a plain input and return its new value, which the runtime writes back".into(),
            Reason::Requested(Strategy::State) => "state was requested".into(),
            Reason::StateRefused { requested, refusal } => self.refused_state(*requested, refusal),
            Reason::Kept(kept) => kept_text(kept),
            Reason::Weighed {
                basis,
                chosen,
                class_size,
            } => self.weighed(b, basis, *chosen, *class_size),
        }
    }

    fn refused_state(&self, requested: StrategyRequest, refusal: &Refusal) -> String {
        let asked = match requested {
            StrategyRequest::Auto => "",
            StrategyRequest::Fixed(_) => "state was requested, but ",
        };
        match refusal {
            Refusal::TakeOverOff => format!(
                "{asked}take_over_mutable_buffer is off, so no delegate may own the buffer: its chain runs on CPU and delegates read it as a plain input"
            ),
            Refusal::TargetBelowIos18(t) => format!(
                "{asked}a Core ML state needs iOS18 or later and the minimum deployment target is {}: its chain runs on CPU",
                target_label(*t)
            ),
            other => {
                let prefix = match requested {
                    StrategyRequest::Auto => "cannot be a Core ML state:",
                    StrategyRequest::Fixed(_) => "state was requested but is impossible:",
                };
                format!(
                    "{prefix} {}; the whole chain runs on CPU",
                    self.refusal(other)
                )
            }
        }
    }

    fn weighed(
        &self,
        b: &BufferDecision,
        basis: &Basis,
        chosen: Strategy,
        class_size: usize,
    ) -> String {
        let why = match basis {
            Basis::Kept(kept) => {
                return format!(
                    "{} (take-over on keeps every possible state)",
                    kept_text(kept)
                );
            }
            Basis::Refused(Refusal::TakeOverOff) => {
                "take_over_mutable_buffer is off, so no delegate may own the buffer as a state"
                    .to_string()
            }
            Basis::Refused(Refusal::TargetBelowIos18(t)) => format!(
                "a Core ML state needs iOS18 or later and the minimum deployment target is {}",
                target_label(*t)
            ),
            Basis::Refused(r) => format!("cannot be a Core ML state: {}", self.refusal(r)),
            Basis::NoState => "no Core ML state could be kept".to_string(),
        };
        let weighed: Vec<String> = b
            .alternatives
            .iter()
            .map(|a| match &a.refused {
                Some(_) if a.strategy == Strategy::State => "state: impossible".to_string(),
                Some(r) => format!("{}: not taken, {}", a.strategy, self.refusal(r)),
                None => format!("{}: {}", a.strategy, a.estimate),
            })
            .collect();
        let with = match class_size {
            0 | 1 => String::new(),
            n => format!(
                ", together with the {} of its shape",
                count(n - 1, "other buffer", "other buffers")
            ),
        };
        format!(
            "{why}; estimated per step, {}; chose {chosen}{with}",
            weighed.join("; ")
        )
    }

    /// The blocking fact behind a refusal.
    pub fn refusal(&self, r: &Refusal) -> String {
        match r {
            Refusal::TakeOverOff | Refusal::TargetBelowIos18(_) => {
                options_refusal(r).unwrap_or_default()
            }
            Refusal::Blocked {
                node,
                place,
                blocker,
            } => self.blocked(*node, *place, *blocker),
            Refusal::Cycle(path) => format!(
                "its state would share a partition with nodes that a path through the rest of the graph leaves and re-enters ({})",
                render_path(&self.path(path))
            ),
            Refusal::OverBudget { weight_bytes, ops } => format!(
                "its hull cannot be cut, and alone it holds {} of constants and {}, over the partition budget",
                byte_size(*weight_bytes),
                count(*ops as usize, "op", "ops")
            ),
            Refusal::CutThrough { pattern, before } => format!(
                "the cut asked for by {pattern:?} runs through its hull, before {}",
                self.graph.name(*before)
            ),
            Refusal::WouldCostState { buffer, because } => format!(
                "it would cost {} its state ({})",
                self.buffer(*buffer),
                because.as_ref().map_or(String::new(), |r| self.refusal(r))
            ),
        }
    }

    fn blocked(&self, node: crate::graph::NodeId, place: HullPlace, blocker: Blocker) -> String {
        let role = match place {
            HullPlace::Chain => "in its chain",
            HullPlace::OldValueReader => "reading its old value",
            HullPlace::Between => "between its chain and a reader of its old value",
        };
        let n = self.graph.node(node);
        let target: &str = if n.target.is_empty() {
            "output"
        } else {
            &n.target
        };
        let what = format!("{} ({target}) {role}", n.name);
        match blocker {
            Blocker::Unsupported => format!("{what} is not supported by Core ML"),
            Blocker::NotAnOp => format!("{what} cannot be delegated"),
            Blocker::CpuChain(other) => format!(
                "{what} is in the chain of {}, which runs on CPU",
                self.buffer(other)
            ),
            Blocker::TupleSibling(item) => format!(
                "{what} has an output {} that cannot be delegated, so the op stays on CPU",
                self.graph.name(item)
            ),
            Blocker::Requested => format!("{what} is kept on CPU by the request"),
            Blocker::NoInput => format!(
                "{what} would sit in a partition without runtime inputs, which Core ML allows only from iOS18"
            ),
            Blocker::OverBudget => {
                format!("{what} alone exceeds the partition budget, so it runs on CPU")
            }
            Blocker::DoesNotConvert => format!(
                "{what} cannot be delegated: {}",
                conversion_failure(self.graph, node)
            ),
            Blocker::ProducerOnCpu(producer) => format!(
                "{what} takes its value from {}, which runs on CPU",
                self.graph.name(producer)
            ),
            Blocker::Tied(t) => format!("{what} {}, which run on CPU", self.tied_ops(t)),
        }
    }

    /// `makes or reads aten_view_copy_default (rank 6) with 12 other ops`: a tied group by the
    /// first of its values.
    fn tied_ops(&self, t: usize) -> String {
        let Some(tied) = self.analysis.tied.get(t) else {
            return String::from("is tied to ops that cannot be delegated");
        };
        let first = tied.values.first().map_or(String::new(), |(v, why)| {
            format!("{} ({})", self.graph.name(*v), uncrossable_short(why))
        });
        format!(
            "makes or reads {first}, a value no delegate can take at its boundary, with {}",
            count(tied.ops.len().saturating_sub(1), "other op", "other ops")
        )
    }

    /// A tied group's values, the first few, each with why it cannot cross.
    fn tied_values(&self, tied: &Tied) -> String {
        let mut shown: Vec<String> = (tied.values.iter().take(3))
            .map(|(v, why)| format!("{}: {}", self.graph.name(*v), uncrossable_short(why)))
            .collect();
        if tied.values.len() > 3 {
            shown.push(format!("{} more", tied.values.len() - 3));
        }
        shown.join(", ")
    }

    /// Why a tied group runs on CPU, in words.
    fn tied_on_cpu(&self, why: &TiedOnCpu) -> String {
        match why {
            TiedOnCpu::Placeholder(p) => format!(
                "{} is a placeholder, which a delegate takes in only as constant data it holds",
                self.graph.name(*p)
            ),
            TiedOnCpu::Output => "the graph's output reads one of them".to_string(),
            TiedOnCpu::Blocked { node, blocker } => {
                let n = self.graph.node(*node);
                format!(
                    "{} ({}) among them cannot be delegated ({})",
                    n.name,
                    n.target,
                    self.blocker_rule_text(*blocker)
                )
            }
            TiedOnCpu::OverBudget { weight_bytes, ops } => format!(
                "together they cannot be cut, and hold {} of constants and {}, over the partition budget",
                byte_size(*weight_bytes),
                count(*ops as usize, "op", "ops")
            ),
            TiedOnCpu::CutThrough { pattern, before } => format!(
                "the cut asked for by {pattern:?} runs through them, before {}",
                self.graph.name(*before)
            ),
            TiedOnCpu::Cycle(path) => format!(
                "one partition holding them would lie on a cycle through the rest of the graph ({})",
                render_path(&self.path(path))
            ),
        }
    }

    /// The rule a blocker follows, as a reader looks it up.
    fn blocker_rule_text(&self, blocker: Blocker) -> String {
        match blocker {
            Blocker::Tied(t) => self.tied_ops(t),
            other => format!("[{}]", other.rule()),
        }
    }

    /// A planner's cycle as the path findings carry: each node with its state group, if any.
    fn path(&self, steps: &[CycleStep]) -> Vec<Step> {
        steps
            .iter()
            .map(|s| Step {
                node: self.graph.name(s.node).to_string(),
                tag: s.group.map(|g| match g {
                    HullOf::State(b) => format!("state:{}", self.buffer(b)),
                    HullOf::Tied(t) => format!(
                        "tied:{}",
                        (self
                            .analysis
                            .tied
                            .get(t)
                            .and_then(|tied| tied.values.first()))
                        .map_or("?", |(v, _)| self.graph.name(*v))
                    ),
                }),
                within_partition: s.within_partition,
            })
            .collect()
    }

    /// The plan's decisions as the reports list them, in the plan's order.
    pub fn decisions(&self, plan: &Draft) -> Vec<Explained> {
        plan.decisions
            .iter()
            .filter_map(|d| self.decision(plan, d))
            .collect()
    }

    fn decision(&self, plan: &Draft, d: &Decision) -> Option<Explained> {
        let names = |nodes: &mut dyn Iterator<Item = crate::graph::NodeId>| {
            nodes.map(|n| self.graph.name(n).to_string()).collect()
        };
        let decided = |rule: RuleId, message: String| Explained {
            rule,
            kind: FindingKind::Decision,
            message,
            nodes: Vec::new(),
            path: Vec::new(),
            buffer: None,
            partition: None,
            bytes: None,
        };
        Some(match d {
            Decision::InputlessOnCpu(nodes) => {
                let listed: Vec<String> = names(&mut nodes.iter().copied());
                Explained {
                    nodes: listed.clone(),
                    ..decided(
                        RuleId::NoInputTarget,
                        format!(
                            "{} would form a partition that reads no runtime value, which Core ML allows only from iOS18 (the target is {}): they run on CPU",
                            listed.join(", "),
                            plan.options.target_label()
                        ),
                    )
                }
            }
            Decision::NotConvertibleOnCpu(nodes) => {
                let listed: Vec<String> = names(&mut nodes.iter().copied());
                let why = nodes
                    .first()
                    .map_or_else(String::new, |&n| conversion_failure(self.graph, n));
                let placed = match listed.as_slice() {
                    [one] => format!("{one} runs on CPU"),
                    many if many.len() <= 5 => {
                        format!("{} nodes run on CPU: {}", many.len(), many.join(", "))
                    }
                    many => format!(
                        "{} nodes run on CPU: {}, …",
                        many.len(),
                        many[..5].join(", ")
                    ),
                };
                Explained {
                    nodes: listed.clone(),
                    ..decided(RuleId::Convertible, format!("{why}; {placed}"))
                }
            }
            Decision::Decomposed(i) => {
                let d = self.graph.decomposed.get(*i)?;
                decided(
                    RuleId::Convertible,
                    format!(
                        "{}; the op was decomposed rather than kept whole for Core ML, and its parts are planned as any others",
                        refused(&d.conversion, &d.op)
                    ),
                )
            }
            Decision::OverBudgetOnCpu {
                nodes,
                weight_bytes,
                ops,
            } => {
                let listed: Vec<String> = names(&mut nodes.iter().copied());
                Explained {
                    nodes: listed.clone(),
                    ..decided(
                        RuleId::WithinBudget,
                        format!(
                            "{} cannot be parted, and alone would hold {} of constants and {}, over the partition budget ({}): they run on CPU",
                            listed.join(", "),
                            byte_size(*weight_bytes),
                            count(*ops as usize, "op", "ops"),
                            budget_text(&plan.options)
                        ),
                    )
                }
            }
            Decision::TiedOnCpu { tied, why } => {
                let group = self.analysis.tied.get(*tied)?;
                let listed: Vec<String> = names(&mut group.ops.iter().copied());
                let shown = match listed.as_slice() {
                    many if many.len() <= 5 => many.join(", "),
                    many => format!("{}, … ({} ops)", many[..5].join(", "), many.len()),
                };
                let path = match why {
                    TiedOnCpu::Cycle(path) => self.path(path),
                    _ => Vec::new(),
                };
                Explained {
                    nodes: listed.clone(),
                    path,
                    ..decided(
                        RuleId::BoundaryValues,
                        format!(
                            "{shown} run on CPU: they make or read values no delegate can take at its boundary ({}), so they share one partition or none, and {}",
                            self.tied_values(group),
                            self.tied_on_cpu(why)
                        ),
                    )
                }
            }
            Decision::StateOnCycle { buffer, path } => {
                let name = self.buffer(*buffer);
                let why = self.refusal(&Refusal::Cycle(path.clone()));
                Explained {
                    nodes: names(&mut path.iter().map(|s| s.node)),
                    path: self.path(path),
                    buffer: Some(name.to_string()),
                    ..decided(
                        RuleId::Acyclic,
                        format!("{name}: refused to keep as a state: {why}"),
                    )
                }
            }
            Decision::Buffer(i) => {
                let b = plan.buffers.get(*i)?;
                Explained {
                    nodes: names(&mut [b.placeholder, b.writer].into_iter()),
                    buffer: Some(b.buffer.clone()),
                    partition: b.partition.clone(),
                    ..decided(b.rule?, format!("{}: {}", b.buffer, self.reason(b)))
                }
            }
        })
    }
}

fn kept_text(k: &KeptState) -> String {
    let kind = match k.kind {
        MutationKind::Slice => "slice-update",
        MutationKind::Whole => "whole-buffer",
    };
    format!(
        "kept as a Core ML state of {}: its placeholder, its {}-node {kind} chain and the {} of its old value are all supported and fit in one partition",
        k.partition,
        k.chain_nodes,
        count(k.old_value_readers, "reader", "readers")
    )
}

/// The budgets asked for, as the reports state them.
pub fn budget_text(options: &crate::options::Options) -> String {
    let mut parts = Vec::new();
    if let Some(b) = options.max_weight_bytes {
        parts.push(format!("at most {} of constants", byte_size(b)));
    }
    if let Some(n) = options.max_ops {
        parts.push(format!("at most {n} ops"));
    }
    if parts.is_empty() {
        "none asked".to_string()
    } else {
        parts.join(" and ")
    }
}

/// A cut as the text reports list it: the partitions on either side, then why.
pub fn cut_line(
    graph: &Graph,
    tagging: &crate::tagging::Tagging,
    cut: &crate::plan::Cut,
) -> String {
    let side = |n| tagging.tag(n).unwrap_or("cpu");
    format!(
        "{} | {}  {}",
        side(cut.after),
        side(cut.before),
        cut_sentence(graph, cut)
    )
}

/// Why a cut is where it is, in a sentence.
pub fn cut_sentence(graph: &Graph, cut: &crate::plan::Cut) -> String {
    let (after, before) = (graph.name(cut.after), graph.name(cut.before));
    let crossing = cut.crossing_bytes;
    let budget = |what: &str, reached: crate::graph::NodeId, would_be: String| {
        let place = if reached == cut.before {
            format!("cut before {before}")
        } else {
            format!(
                "cut before {before}, earlier, where the fewest bytes cross for as many partitions"
            )
        };
        format!(
            "{what} reached: taking in {} would bring the partition to {would_be}; {place} ({crossing} bytes cross)",
            graph.name(reached)
        )
    };
    match &cut.reason {
        CutReason::WeightBudget { reached, would_be } => budget(
            "max_weight_bytes",
            *reached,
            format!("{} of constants", byte_size(*would_be)),
        ),
        CutReason::OpBudget { reached, would_be } => {
            budget("max_ops", *reached, format!("{would_be} ops"))
        }
        CutReason::Asked {
            pattern,
            after: true,
        } => format!("cut after {after}, as cut_after {pattern:?} asks ({crossing} bytes cross)"),
        CutReason::Asked {
            pattern,
            after: false,
        } => {
            format!("cut before {before}, as cut_before {pattern:?} asks ({crossing} bytes cross)")
        }
    }
}

/// `rank 6`, `size 8*s89`: why a value cannot cross a delegate's boundary, in two words.
fn uncrossable_short(why: &Uncrossable) -> String {
    match why {
        Uncrossable::Rank(rank) => format!("rank {rank}"),
        Uncrossable::ExpressionSize(size) => format!("size {size}"),
    }
}

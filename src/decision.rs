//! The planner's vocabulary, shared by the planner, what-if, reports and the Python binding (never
//! by the checker, which speaks only of tags): where a buffer's chain lives, what was asked, and the
//! decision made with its alternatives.

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
    /// Set when `state` was tried and could not be kept: the rule and the blocking fact.
    pub refused: Option<(RuleId, String)>,
}

/// The decision for one mutable buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferDecision {
    pub buffer: String,
    pub placeholder: NodeId,
    pub writer: NodeId,
    pub requested: StrategyRequest,
    pub strategy: Strategy,
    /// Why, in a sentence a person reads.
    pub reason: String,
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

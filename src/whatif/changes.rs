//! What-if questions as text: a change (`take-over=off`, `strategy=BUFFER=io`, ...) as the CLI,
//! batch scenario files and the Python binding spell it, and scenarios, one JSON object per line.

use crate::cost::{CostError, CostOverrides};
use crate::decision::UnknownStrategy;
use crate::options::{BadByteSize, ByteSize, DeploymentTarget, UnknownTarget};
use crate::plan::{StrategyRequest, parse_strategy_spec};
use std::fmt;
use std::str::FromStr;

/// One change to the question the base plan answered.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    TakeOverMutableBuffer(bool),
    /// `None` is the converter default (below iOS18).
    MinimumDeploymentTarget(Option<DeploymentTarget>),
    /// For one buffer (by buffer or placeholder name), or for every buffer when `buffer` is `None`.
    Strategy {
        buffer: Option<String>,
        strategy: StrategyRequest,
    },
    /// Every node calling this op target, e.g. `llama.gated_delta_rule.default`.
    OpSupported {
        target: String,
        supported: bool,
    },
    NodeSupported {
        node: String,
        supported: bool,
    },
    /// Keep one node on CPU whatever its support.
    NodeOnCpu {
        node: String,
    },
    /// Cost constants replacing the request's (docs/cost.md).
    Cost(CostOverrides),
    /// The budget of constant bytes per delegate partition; `None` lifts it.
    MaxWeightBytes(Option<u64>),
    /// The budget of ops per delegate partition; `None` lifts it.
    MaxOps(Option<u64>),
    /// One more cut asked for, after (`after`) or before what the pattern matches; `None` lifts
    /// every cut asked that way.
    Cut {
        pattern: Option<String>,
        after: bool,
    },
}

/// A change that does not read as one.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ChangeError {
    #[error("a change is WHAT=VALUE, found {0:?}")]
    NotWhatEqualsValue(String),
    #[error("{what} is on or off, found {value:?}")]
    NotAFlag { what: String, value: String },
    #[error(
        "unknown change {0:?} (expected take-over, target, strategy, op-supported, \
         op-unsupported, node-supported, node-unsupported, cpu, cost, max-weight-bytes, \
         max-ops, cut-after or cut-before, or a flag's name: take-over-mutable-buffer, \
         min-target, max-partition-weight-bytes, max-partition-ops)"
    )]
    Unknown(String),
    #[error("{0}")]
    Target(#[from] UnknownTarget),
    #[error("{0}")]
    Strategy(#[from] UnknownStrategy),
    #[error("{0}")]
    Cost(#[from] CostError),
    #[error("{0}")]
    Bytes(#[from] BadByteSize),
    #[error("{what} takes a whole number or none, found {value:?}")]
    NotACount { what: String, value: String },
}

/// A batch scenario that does not read: its line and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {fault}")]
pub struct ScenarioError {
    pub line: usize,
    pub fault: ScenarioFault,
}

#[derive(Debug, thiserror::Error)]
pub enum ScenarioFault {
    /// Not a scenario object; serde's message, its position within the line.
    #[error(
        "not a scenario, at column {}: {} (each line is a JSON object such as \
         {{\"name\": \"ios17\", \"changes\": [\"target=iOS17\"]}})",
        .0.column(),
        without_position(.0)
    )]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Change(#[from] ChangeError),
}

/// The command-line spelling, shared by the CLI, batch scenarios and the Python binding:
/// `take-over=on|off`, `target=iOS15..iOS18|default`, `strategy=[BUFFER=]STRATEGY`,
/// `op-supported=TARGET`, `op-unsupported=TARGET`, `node-supported=NODE`, `node-unsupported=NODE`,
/// `cpu=NODE`, `cost=NAME=VALUE[,NAME=VALUE...]`, `max-weight-bytes=BYTES|none`,
/// `max-ops=N|none`, `cut-after=PATTERN|none`, `cut-before=PATTERN|none`. The keys that are
/// flags of `plan` also answer to the flag's name (`min-target=iOS17`, `max-partition-ops=500`),
/// and `on`/`off` are also `true`/`false`, as the flags take them.
impl FromStr for Change {
    type Err = ChangeError;
    fn from_str(s: &str) -> Result<Self, ChangeError> {
        let (what, value) = s
            .split_once('=')
            .ok_or_else(|| ChangeError::NotWhatEqualsValue(s.to_string()))?;
        let flag = |v: &str| match v {
            "on" | "true" => Ok(true),
            "off" | "false" => Ok(false),
            _ => Err(ChangeError::NotAFlag {
                what: what.to_string(),
                value: v.to_string(),
            }),
        };
        // Each key also answers to the CLI flag's name for the same thing.
        Ok(match what {
            "take-over" | "take-over-mutable-buffer" => Change::TakeOverMutableBuffer(flag(value)?),
            "target" | "min-target" => Change::MinimumDeploymentTarget(match value {
                "default" => None,
                t => Some(t.parse()?),
            }),
            "strategy" => {
                let (buffer, strategy) = parse_strategy_spec(value)?;
                Change::Strategy { buffer, strategy }
            }
            "op-supported" | "op-unsupported" => Change::OpSupported {
                target: value.to_string(),
                supported: what == "op-supported",
            },
            "node-supported" | "node-unsupported" => Change::NodeSupported {
                node: value.to_string(),
                supported: what == "node-supported",
            },
            "cpu" => Change::NodeOnCpu {
                node: value.to_string(),
            },
            "cost" => Change::Cost(CostOverrides::parse(value)?),
            "max-weight-bytes" | "max-partition-weight-bytes" => {
                Change::MaxWeightBytes(match value {
                    "none" => None,
                    v => Some(v.parse::<ByteSize>()?.0),
                })
            }
            "max-ops" | "max-partition-ops" => Change::MaxOps(match value {
                "none" => None,
                v => Some(v.parse().map_err(|_| ChangeError::NotACount {
                    what: what.to_string(),
                    value: v.to_string(),
                })?),
            }),
            "cut-after" | "cut-before" => Change::Cut {
                pattern: (value != "none").then(|| value.to_string()),
                after: what == "cut-after",
            },
            _ => return Err(ChangeError::Unknown(what.to_string())),
        })
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::TakeOverMutableBuffer(v) => {
                write!(f, "take-over={}", if *v { "on" } else { "off" })
            }
            Change::MinimumDeploymentTarget(None) => f.write_str("target=default"),
            Change::MinimumDeploymentTarget(Some(t)) => write!(f, "target={t}"),
            Change::Strategy {
                buffer: None,
                strategy,
            } => write!(f, "strategy={strategy}"),
            Change::Strategy {
                buffer: Some(b),
                strategy,
            } => write!(f, "strategy={b}={strategy}"),
            Change::OpSupported { target, supported } => {
                let what = if *supported {
                    "op-supported"
                } else {
                    "op-unsupported"
                };
                write!(f, "{what}={target}")
            }
            Change::NodeSupported { node, supported } => {
                let what = if *supported {
                    "node-supported"
                } else {
                    "node-unsupported"
                };
                write!(f, "{what}={node}")
            }
            Change::NodeOnCpu { node } => write!(f, "cpu={node}"),
            Change::Cost(c) => write!(f, "cost={c}"),
            Change::MaxWeightBytes(b) => match b {
                Some(b) => write!(f, "max-weight-bytes={b}"),
                None => f.write_str("max-weight-bytes=none"),
            },
            Change::MaxOps(n) => match n {
                Some(n) => write!(f, "max-ops={n}"),
                None => f.write_str("max-ops=none"),
            },
            Change::Cut { pattern, after } => {
                let what = if *after { "cut-after" } else { "cut-before" };
                write!(f, "{what}={}", pattern.as_deref().unwrap_or("none"))
            }
        }
    }
}

/// serde's message without its ` at line 1 column 2`: a scenario's line is the file's, said once.
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// A named list of changes: one line of a batch file,
/// `{"name": "ios17", "changes": ["target=iOS17", "strategy=cpu"]}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub changes: Vec<Change>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    #[serde(default)]
    name: Option<String>,
    changes: Vec<String>,
}

/// Scenarios one JSON object per line; blank lines and lines starting with `#` are skipped. An
/// unnamed scenario is named after its line.
pub fn parse_scenarios(text: &str) -> Result<Vec<Scenario>, ScenarioError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |fault: ScenarioFault| ScenarioError { line: i + 1, fault };
        let raw: RawScenario = serde_json::from_str(line).map_err(|e| at(e.into()))?;
        let changes = raw
            .changes
            .iter()
            .map(|c| c.parse())
            .collect::<Result<Vec<Change>, ChangeError>>()
            .map_err(|e| at(e.into()))?;
        out.push(Scenario {
            name: raw.name.unwrap_or_else(|| format!("line {}", i + 1)),
            changes,
        });
    }
    Ok(out)
}

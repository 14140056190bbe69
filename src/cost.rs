//! The cost model: an estimated per-step cost of a tagging, from the graph's own shapes and dtypes.
//! It is a model with named constants (docs/cost.md), not a device measurement. The planner uses
//! it to choose among the strategies the options allow; reports show it. It decides nothing itself.

use crate::analyse::{Adjacency, GraphIndex};
use crate::graph::{Graph, NodeId, OpKind};
use crate::human::{count, human_bytes};
use crate::options::Options;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The constants of the model. Defaults are orders of magnitude, documented in docs/cost.md.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CostModel {
    /// Fixed cost of one delegate call per step: the Core ML prediction dispatch and ExecuTorch's
    /// argument marshalling around it.
    pub call_overhead_us: f64,
    /// Bytes per microsecond that cross a delegate boundary (in or out).
    pub bytes_per_us: f64,
    /// Cost of one op left on CPU (a portable-kernel dispatch), whatever its size.
    pub cpu_op_us: f64,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            call_overhead_us: 200.0,
            bytes_per_us: 10_000.0,
            cpu_op_us: 5.0,
        }
    }
}

/// The constants a caller gives: any may be absent. The spelling of `--cost` and of the what-if
/// change `cost=` is `NAME=VALUE[,NAME=VALUE...]`; the overrides JSON has the same names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostOverrides {
    #[serde(default)]
    pub call_overhead_us: Option<f64>,
    #[serde(default)]
    pub bytes_per_us: Option<f64>,
    #[serde(default)]
    pub cpu_op_us: Option<f64>,
}

/// A constant that cannot be used: unknown, not a number, or negative (a bandwidth must be > 0).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CostError {
    #[error("unknown cost constant {0:?} (expected call_overhead_us, bytes_per_us or cpu_op_us)")]
    Unknown(String),
    #[error("cost constants are NAME=VALUE, found {0:?}")]
    Malformed(String),
    #[error("{name} takes a number of {unit}, found {value:?}")]
    NotANumber {
        name: String,
        unit: &'static str,
        value: String,
    },
    #[error("{name} must be a finite number {bound}, found {value}")]
    OutOfRange {
        name: &'static str,
        bound: &'static str,
        value: String,
    },
}

impl CostOverrides {
    /// `NAME=VALUE[,NAME=VALUE...]`; a later value for the same name wins.
    pub fn parse(spec: &str) -> Result<Self, CostError> {
        let mut out = CostOverrides::default();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = item
                .split_once('=')
                .ok_or_else(|| CostError::Malformed(item.to_string()))?;
            let (slot, unit) = match name.trim() {
                "call_overhead_us" => (&mut out.call_overhead_us, "microseconds"),
                "bytes_per_us" => (&mut out.bytes_per_us, "bytes per microsecond"),
                "cpu_op_us" => (&mut out.cpu_op_us, "microseconds"),
                other => return Err(CostError::Unknown(other.to_string())),
            };
            let number: f64 = value.trim().parse().map_err(|_| CostError::NotANumber {
                name: name.trim().to_string(),
                unit,
                value: value.trim().to_string(),
            })?;
            *slot = Some(number);
        }
        out.validate()?;
        Ok(out)
    }

    /// Every given value is usable: costs finite and ≥ 0, the bandwidth finite and > 0.
    pub fn validate(&self) -> Result<(), CostError> {
        let costs = [
            ("call_overhead_us", self.call_overhead_us),
            ("cpu_op_us", self.cpu_op_us),
        ];
        for (name, value) in costs {
            if let Some(v) = value
                && !(v.is_finite() && v >= 0.0)
            {
                return Err(CostError::OutOfRange {
                    name,
                    bound: "≥ 0",
                    value: v.to_string(),
                });
            }
        }
        if let Some(v) = self.bytes_per_us
            && !(v.is_finite() && v > 0.0)
        {
            return Err(CostError::OutOfRange {
                name: "bytes_per_us",
                bound: "> 0",
                value: v.to_string(),
            });
        }
        Ok(())
    }

    /// These constants with every one `later` gives replacing them.
    pub fn overridden_by(self, later: CostOverrides) -> CostOverrides {
        CostOverrides {
            call_overhead_us: later.call_overhead_us.or(self.call_overhead_us),
            bytes_per_us: later.bytes_per_us.or(self.bytes_per_us),
            cpu_op_us: later.cpu_op_us.or(self.cpu_op_us),
        }
    }

    /// `base` with every constant given here replacing its own.
    pub fn apply_to(&self, base: &CostModel) -> CostModel {
        CostModel {
            call_overhead_us: self.call_overhead_us.unwrap_or(base.call_overhead_us),
            bytes_per_us: self.bytes_per_us.unwrap_or(base.bytes_per_us),
            cpu_op_us: self.cpu_op_us.unwrap_or(base.cpu_op_us),
        }
    }
}

impl fmt::Display for CostOverrides {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let given = [
            ("call_overhead_us", self.call_overhead_us),
            ("bytes_per_us", self.bytes_per_us),
            ("cpu_op_us", self.cpu_op_us),
        ];
        let parts: Vec<String> = given
            .iter()
            .filter_map(|(name, v)| v.map(|v| format!("{name}={v}")))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// What one step costs under a tagging, by the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CostEstimate {
    /// Delegate partitions: one Core ML call each per step.
    pub delegate_calls: usize,
    /// Bytes of values that enter or leave a delegate at run time, a value counted once per
    /// partition it enters and once when it leaves its own. Constants baked into a delegate
    /// (`take_over_constant_data`) and values inside one partition do not cross.
    pub boundary_bytes: u64,
    /// Crossing values whose size is unknown (symbolic shapes): counted as 0 bytes.
    pub unsized_values: usize,
    /// `call_function` nodes left on CPU.
    pub cpu_ops: usize,
    /// The three terms weighed by the model's constants, in microseconds.
    pub total_us: f64,
}

impl CostEstimate {
    /// The same counts weighed by other constants (what-if compares two plans under one model).
    pub fn weighed(&self, model: &CostModel) -> f64 {
        self.call_us(model) + self.transfer_us(model) + self.cpu_us(model)
    }
    pub fn call_us(&self, model: &CostModel) -> f64 {
        self.delegate_calls as f64 * model.call_overhead_us
    }
    pub fn transfer_us(&self, model: &CostModel) -> f64 {
        self.boundary_bytes as f64 / model.bytes_per_us
    }
    pub fn cpu_us(&self, model: &CostModel) -> f64 {
        self.cpu_ops as f64 * model.cpu_op_us
    }
}

/// `17 partitions, 244.1 KiB crossing, 12 CPU ops: 3512 µs`.
impl fmt::Display for CostEstimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, {} crossing",
            count(self.delegate_calls, "partition", "partitions"),
            human_bytes(self.boundary_bytes)
        )?;
        if self.unsized_values > 0 {
            write!(f, " (+{} of unknown size)", self.unsized_values)?;
        }
        write!(
            f,
            ", {}: {:.0} µs",
            count(self.cpu_ops, "CPU op", "CPU ops"),
            self.total_us
        )
    }
}

/// Reusable scratch for [`estimate`]: one stamp per partition, so that a value read by several
/// nodes of one partition crosses into it once.
#[derive(Default)]
pub struct Scratch {
    stamp: Vec<u32>,
}

/// The estimate for `partition_of` (each node's delegate partition, `None` for CPU) with `count`
/// partitions. O(V + E).
pub fn estimate(
    graph: &Graph,
    index: &GraphIndex,
    options: &Options,
    model: &CostModel,
    partition_of: &[Option<u32>],
    count: usize,
    scratch: &mut Scratch,
) -> CostEstimate {
    scratch.stamp.clear();
    scratch.stamp.resize(count, u32::MAX);
    let mut out = CostEstimate {
        delegate_calls: count,
        ..CostEstimate::default()
    };
    if count == 0 {
        // Nothing is delegated (an untagged stock proposal, say): nothing crosses.
        out.cpu_ops = graph
            .ops
            .iter()
            .filter(|&&op| op == OpKind::CallFunction)
            .count();
        out.total_us = out.weighed(model);
        return out;
    }
    for (i, &home) in partition_of.iter().enumerate() {
        let value = NodeId(i as u32);
        if home.is_none() && graph.op(value) == OpKind::CallFunction {
            out.cpu_ops += 1;
        }
        if options.take_over_constant_data && graph.role(value).is_constant_data() {
            continue;
        }
        let mut crossings = 0u64;
        let mut leaves = false;
        for &user in index.successors(value) {
            let there = partition_of[user.index()];
            if there == home {
                continue;
            }
            leaves |= home.is_some();
            if let Some(p) = there
                && scratch.stamp[p as usize] != i as u32
            {
                scratch.stamp[p as usize] = i as u32;
                crossings += 1;
            }
        }
        crossings += u64::from(leaves);
        if crossings > 0 {
            match graph.value_bytes[i] {
                // Saturating: a document may declare shapes no device holds.
                Some(b) => {
                    out.boundary_bytes =
                        (out.boundary_bytes).saturating_add(b.saturating_mul(crossings))
                }
                None => out.unsized_values += 1,
            }
        }
    }
    out.total_us = out.weighed(model);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_read_as_a_person_would_say_them() {
        let e = CostEstimate {
            delegate_calls: 1,
            boundary_bytes: 308_240,
            unsized_values: 2,
            cpu_ops: 12,
            total_us: 291.2,
        };
        assert_eq!(
            e.to_string(),
            "1 partition, 301.0 KiB crossing (+2 of unknown size), 12 CPU ops: 291 µs"
        );
        let one = CostEstimate { cpu_ops: 1, ..e };
        assert!(one.to_string().ends_with(", 1 CPU op: 291 µs"), "{one}");
    }

    #[test]
    fn overrides_parse_validate_and_apply() {
        let o = CostOverrides::parse("call_overhead_us=50, bytes_per_us=1e3").unwrap();
        let m = o.apply_to(&CostModel::default());
        assert_eq!(m.call_overhead_us, 50.0);
        assert_eq!(m.bytes_per_us, 1000.0);
        assert_eq!(m.cpu_op_us, CostModel::default().cpu_op_us);
        assert_eq!(o.to_string(), "call_overhead_us=50,bytes_per_us=1000");
        assert_eq!(
            CostOverrides::parse("speed=3"),
            Err(CostError::Unknown("speed".into()))
        );
        assert!(matches!(
            CostOverrides::parse("bytes_per_us=0"),
            Err(CostError::OutOfRange { .. })
        ));
        assert!(matches!(
            CostOverrides::parse("cpu_op_us=-1"),
            Err(CostError::OutOfRange { .. })
        ));
        assert!(matches!(
            CostOverrides::parse("cpu_op_us"),
            Err(CostError::Malformed(_))
        ));
        assert!(matches!(
            CostOverrides::parse("cpu_op_us=NaN"),
            Err(CostError::OutOfRange { .. })
        ));
        assert_eq!(
            CostOverrides::parse("call_overhead_us=abc")
                .unwrap_err()
                .to_string(),
            "call_overhead_us takes a number of microseconds, found \"abc\""
        );
    }
}

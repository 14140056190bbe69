//! Options that shape the plan: the arguments of `CoreMLPartitioner` and the Core ML compile specs
//! that decide whether a state can exist at all.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// `minimum_deployment_target` of the Core ML compile specs. Core ML states need iOS18 or later.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum DeploymentTarget {
    #[serde(rename = "iOS15")]
    Ios15,
    #[serde(rename = "iOS16")]
    Ios16,
    #[serde(rename = "iOS17")]
    Ios17,
    #[serde(rename = "iOS18")]
    Ios18,
}

impl DeploymentTarget {
    pub const ALL: [DeploymentTarget; 4] = [Self::Ios15, Self::Ios16, Self::Ios17, Self::Ios18];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ios15 => "iOS15",
            Self::Ios16 => "iOS16",
            Self::Ios17 => "iOS17",
            Self::Ios18 => "iOS18",
        }
    }
}

impl fmt::Display for DeploymentTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A deployment target spelled neither iOS15, iOS16, iOS17 nor iOS18.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown deployment target {0:?} (expected iOS15, iOS16, iOS17 or iOS18)")]
pub struct UnknownTarget(pub String);

impl FromStr for DeploymentTarget {
    type Err = UnknownTarget;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownTarget(s.to_string()))
    }
}

/// A minimum deployment target as reports name it; `None` is the converter's default.
pub fn target_label(target: Option<DeploymentTarget>) -> String {
    match target {
        Some(t) => t.to_string(),
        None => "the converter default (below iOS18)".to_string(),
    }
}

/// Everything outside the graph that the plan depends on.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Options {
    /// As in `CoreMLPartitioner`: may a delegate own a mutable buffer as a Core ML state?
    pub take_over_mutable_buffer: bool,
    /// As in `CoreMLPartitioner`: are parameters and constants tagged into the delegates that use them?
    pub take_over_constant_data: bool,
    /// `None` is the converter's default, which is below iOS18.
    pub minimum_deployment_target: Option<DeploymentTarget>,
    pub compute_unit: Option<String>,
    pub compute_precision: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            take_over_mutable_buffer: true,
            take_over_constant_data: true,
            minimum_deployment_target: None,
            compute_unit: None,
            compute_precision: None,
        }
    }
}

impl Options {
    /// coremltools builds a state only for iOS18+ programs; below that the conversion fails.
    pub fn target_allows_states(&self) -> bool {
        self.minimum_deployment_target
            .is_some_and(|t| t >= DeploymentTarget::Ios18)
    }

    pub fn target_label(&self) -> String {
        target_label(self.minimum_deployment_target)
    }
}

/// Options as a document or a caller gives them: any of them may be absent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartialOptions {
    #[serde(default)]
    pub take_over_mutable_buffer: Option<bool>,
    #[serde(default)]
    pub take_over_constant_data: Option<bool>,
    #[serde(default)]
    pub minimum_deployment_target: Option<DeploymentTarget>,
    #[serde(default)]
    pub compute_unit: Option<String>,
    #[serde(default)]
    pub compute_precision: Option<String>,
}

impl PartialOptions {
    /// `base` with every option given here replacing its own.
    pub fn apply_to(&self, base: &Options) -> Options {
        Options {
            take_over_mutable_buffer: self
                .take_over_mutable_buffer
                .unwrap_or(base.take_over_mutable_buffer),
            take_over_constant_data: self
                .take_over_constant_data
                .unwrap_or(base.take_over_constant_data),
            minimum_deployment_target: self
                .minimum_deployment_target
                .or(base.minimum_deployment_target),
            compute_unit: self
                .compute_unit
                .clone()
                .or_else(|| base.compute_unit.clone()),
            compute_precision: self
                .compute_precision
                .clone()
                .or_else(|| base.compute_precision.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_case_insensitively_and_order() {
        assert_eq!(
            "ios18".parse::<DeploymentTarget>(),
            Ok(DeploymentTarget::Ios18)
        );
        assert!("iOS19".parse::<DeploymentTarget>().is_err());
        assert!(DeploymentTarget::Ios17 < DeploymentTarget::Ios18);
    }

    #[test]
    fn given_options_replace_only_themselves() {
        let base = Options {
            compute_unit: Some("ALL".into()),
            ..Options::default()
        };
        let given = PartialOptions {
            take_over_mutable_buffer: Some(false),
            ..PartialOptions::default()
        };
        let applied = given.apply_to(&base);
        assert!(!applied.take_over_mutable_buffer);
        assert_eq!(applied.compute_unit.as_deref(), Some("ALL"));
        assert_eq!(PartialOptions::default().apply_to(&base), base);
    }

    #[test]
    fn states_need_ios18() {
        let mut o = Options::default();
        assert!(!o.target_allows_states());
        o.minimum_deployment_target = Some(DeploymentTarget::Ios17);
        assert!(!o.target_allows_states());
        o.minimum_deployment_target = Some(DeploymentTarget::Ios18);
        assert!(o.target_allows_states());
    }
}

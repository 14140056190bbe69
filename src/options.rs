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
    /// At most this many bytes of constant data baked into each delegate partition (a constant
    /// copied into several counts in each); `None`: no budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_weight_bytes: Option<u64>,
    /// At most this many `call_function` nodes in each delegate partition; `None`: no budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ops: Option<u64>,
    /// Patterns over node names and module paths: no partition spans the end of what each matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cut_after: Vec<String>,
    /// Patterns over node names and module paths: no partition spans the start of what each matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cut_before: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            take_over_mutable_buffer: true,
            take_over_constant_data: true,
            minimum_deployment_target: None,
            compute_unit: None,
            compute_precision: None,
            max_weight_bytes: None,
            max_ops: None,
            cut_after: Vec::new(),
            cut_before: Vec::new(),
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

/// A byte count as people write it: `2147483648`, `2GiB`, `1.5 GB`, `700MiB`, `64k`. Decimal
/// units (kB, MB, GB, TB) are powers of 1000, binary ones (KiB, MiB, GiB, TiB, and the bare
/// letters k, m, g, t) powers of 1024.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ByteSize(pub u64);

/// A byte count that is not a whole number of bytes: a non-negative number with one of the units
/// above that comes to whole bytes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "not a byte size: {0:?} (expected a whole number of bytes, or a number with a unit such as 700MB, 1.5GB or 2GiB)"
)]
pub struct BadByteSize(pub String);

impl FromStr for ByteSize {
    type Err = BadByteSize;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadByteSize(s.to_string());
        let text = s.trim();
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            "tb" => 1_000_000_000_000,
            "k" | "kib" => 1 << 10,
            "m" | "mib" => 1 << 20,
            "g" | "gib" => 1 << 30,
            "t" | "tib" => 1 << 40,
            _ => return Err(bad()),
        };
        if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
            return Err(bad());
        }
        // Exactly, in integers: `1.5MB` is 1,500,000 bytes; `1.5` or `1.0001KB` is not a whole
        // number of bytes, and is refused rather than rounded to one.
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if fraction.contains('.') || fraction.len() > 18 {
            return Err(bad());
        }
        let digits = |d: &str| d.parse::<u128>().map_err(|_| bad());
        let denominator = 10u128.pow(fraction.len() as u32);
        let fraction = if fraction.is_empty() {
            0
        } else {
            digits(fraction)?
        };
        let scaled = digits(whole)?
            .checked_mul(denominator)
            .and_then(|n| n.checked_add(fraction))
            .and_then(|n| n.checked_mul(u128::from(scale)));
        let bytes = scaled
            .filter(|n| n % denominator == 0)
            .and_then(|n| u64::try_from(n / denominator).ok());
        bytes.map(ByteSize).ok_or_else(bad)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    /// A number of bytes, or a string with a unit.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Given {
            Bytes(u64),
            Text(String),
        }
        match Given::deserialize(d)? {
            Given::Bytes(n) => Ok(ByteSize(n)),
            Given::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
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
    #[serde(default)]
    pub max_weight_bytes: Option<ByteSize>,
    #[serde(default)]
    pub max_ops: Option<u64>,
    #[serde(default)]
    pub cut_after: Option<Vec<String>>,
    #[serde(default)]
    pub cut_before: Option<Vec<String>>,
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
            max_weight_bytes: self.max_weight_bytes.map(|b| b.0).or(base.max_weight_bytes),
            max_ops: self.max_ops.or(base.max_ops),
            cut_after: self
                .cut_after
                .clone()
                .unwrap_or_else(|| base.cut_after.clone()),
            cut_before: self
                .cut_before
                .clone()
                .unwrap_or_else(|| base.cut_before.clone()),
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
    fn byte_sizes_read_as_people_write_them() {
        let bytes = |s: &str| s.parse::<ByteSize>().map(|b| b.0);
        assert_eq!(bytes("2147483648"), Ok(2_147_483_648));
        assert_eq!(bytes("2GiB"), Ok(2 << 30));
        assert_eq!(bytes("2 gib"), Ok(2 << 30));
        assert_eq!(bytes("1.5GB"), Ok(1_500_000_000));
        assert_eq!(bytes("700MB"), Ok(700_000_000));
        assert_eq!(bytes("64k"), Ok(65_536));
        assert_eq!(bytes("1.5KiB"), Ok(1536));
        assert_eq!(bytes("0.5 MB"), Ok(500_000));
        assert_eq!(bytes("2.000"), Ok(2), "a fraction of zeros is whole");
        assert_eq!(bytes("18446744073709551615"), Ok(u64::MAX));
        for bad in [
            "",
            "GiB",
            "-1",
            "1.",
            ".5",
            "1.2.3",
            "12 parsecs",
            "99999999999999999999",
            "20000000TiB",
            "1e9",
            "1.5",
            "1.5B",
            "0.0003KB",
            "1.0001KB",
            "1.5.MB",
        ] {
            assert!(bytes(bad).is_err(), "{bad:?} read as a size");
        }
        let given: PartialOptions =
            serde_json::from_str(r#"{"max_weight_bytes": "1GiB", "max_ops": 500}"#).unwrap();
        assert_eq!(given.max_weight_bytes, Some(ByteSize(1 << 30)));
        let given: PartialOptions = serde_json::from_str(r#"{"max_weight_bytes": 1000}"#).unwrap();
        assert_eq!(given.max_weight_bytes, Some(ByteSize(1000)));
        assert!(serde_json::from_str::<PartialOptions>(r#"{"max_weight_bytes": "lots"}"#).is_err());
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

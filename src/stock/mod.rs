//! The stock proposal: what executorch's `CoreMLPartitioner.partition()` tags, reproduced without
//! executorch. `capability.rs` is torch.fx's `CapabilityBasedPartitioner` as the partitioner
//! configures it; `constants.rs` the placeholder tagging that follows, for each executorch version.
//!
//! A document the stock partitioner has tagged carries its proposal; an untagged one (the drop-in
//! exports before anything is tagged, generated graphs) gets the reproduction, so every plan is
//! compared with what stock would have done.

mod capability;
mod constants;
mod rows;

pub use capability::propose_partitions;

use crate::analyse::GraphIndex;
use crate::graph::{Graph, NodeId, OpKind};
use crate::options::Options;
use crate::tagging::Tagging;
use std::collections::HashMap;

/// The executorch versions whose `CoreMLPartitioner` tags differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExecutorchVersion {
    /// 1.4: a buffer counts as mutated only if its writer reads the placeholder directly.
    V1_4,
    /// 1.5 and later: a buffer is mutated if the signature says so.
    V1_5,
}

/// A version string that names no executorch release this reproduces.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "executorch {0:?} is not a version the stock proposal is reproduced for (supported: {supported})",
    supported = ExecutorchVersion::SUPPORTED.join(", ")
)]
pub struct UnknownVersion(pub String);

impl ExecutorchVersion {
    pub const LATEST: ExecutorchVersion = ExecutorchVersion::V1_5;
    /// The releases whose partitioner is reproduced, and tested against, as a caller names them.
    pub const SUPPORTED: [&str; 2] = ["1.4", "1.5"];

    /// A version a caller asks for: 1.4 or 1.5, with any patch level and a version suffix as
    /// pip writes them (`1.5.1`, `1.5.0rc2`, `1.6.0.dev20261201+cpu`). Unlike [`parse`] (a
    /// document's recorded version, where a later release reads as the latest known), a later or
    /// unknown release is refused rather than silently taken for 1.5, and so is text that is no
    /// version at all (`1.5x`), rather than read as far as it makes sense.
    ///
    /// [`parse`]: ExecutorchVersion::parse
    pub fn parse_supported(text: &str) -> Result<Self, UnknownVersion> {
        if !is_pep440(text) {
            return Err(UnknownVersion(text.to_string()));
        }
        match release(text)? {
            (1, 4) => Ok(ExecutorchVersion::V1_4),
            (1, 5) => Ok(ExecutorchVersion::V1_5),
            _ => Err(UnknownVersion(text.to_string())),
        }
    }

    /// `1.4.0`, `1.5.1`, `1.6.0.dev2026…`: by major and minor version.
    pub fn parse(text: &str) -> Result<Self, UnknownVersion> {
        match release(text)? {
            (1, 4) => Ok(ExecutorchVersion::V1_4),
            (1, minor) if minor >= 5 => Ok(ExecutorchVersion::V1_5),
            (major, _) if major >= 2 => Ok(ExecutorchVersion::V1_5),
            _ => Err(UnknownVersion(text.to_string())),
        }
    }

    /// `1.4`, or `1.5` for 1.5 and later.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutorchVersion::V1_4 => "1.4",
            ExecutorchVersion::V1_5 => "1.5",
        }
    }

    /// The version the document's exporter recorded (`producer.versions.executorch`), if any.
    pub fn recorded_in(graph: &Graph) -> Option<Result<Self, UnknownVersion>> {
        let recorded = graph
            .producer
            .as_ref()?
            .get("versions")?
            .get("executorch")?;
        Some(Self::parse(recorded.as_str()?))
    }
}

/// What `CoreMLPartitioner(...).partition()` of `version` tags on `graph` with `options`, when the
/// backend supports the nodes `supported` marks (its `is_node_supported`; only `call_function` and
/// `get_attr` nodes can be). Tags are named `tag{number}` as fx numbers its partitions. `users` is
/// the graph's index: its adjacency, and which nodes are `getitem`s.
pub fn reproduce(
    graph: &Graph,
    users: &GraphIndex,
    version: ExecutorchVersion,
    options: &Options,
    supported: &[bool],
) -> Tagging {
    let delegable = |n: NodeId| {
        matches!(graph.op(n), OpKind::CallFunction | OpKind::GetAttr)
            && supported.get(n.index()).copied().unwrap_or(false)
    };
    let mut partition = propose_partitions(users, &graph.order, delegable, |n| users.is_getitem(n));
    constants::tag_placeholders(graph, users, version, options, &mut partition);
    let mut names = Vec::new();
    let mut ids: HashMap<u32, u32> = HashMap::new();
    let of = partition
        .into_iter()
        .map(|p| {
            p.map(|p| {
                *ids.entry(p).or_insert_with(|| {
                    names.push(format!("tag{p}"));
                    (names.len() - 1) as u32
                })
            })
        })
        .collect();
    Tagging::new(names, of)
}

/// The major and minor numbers of a version string: `1.6.0.dev2026…` is (1, 6).
fn release(text: &str) -> Result<(u32, u32), UnknownVersion> {
    let unknown = || UnknownVersion(text.to_string());
    let mut parts = text.split('.');
    let mut number = || -> Result<u32, UnknownVersion> {
        let part = parts.next().ok_or_else(unknown)?;
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().map_err(|_| unknown())
    };
    Ok((number()?, number()?))
}

/// Whether `text` has the shape of a PEP 440 version: release numbers, then optionally a pre-release
/// (`a1`, `b2`, `rc1`), a post- and a dev-release (`.post1`, `.dev20261201`) and a local part
/// (`+cpu`). Whether the numbers name a release this reproduces is [`release`]'s to say.
fn is_pep440(text: &str) -> bool {
    let public = match text.split_once('+') {
        Some((public, local)) => {
            let local_ok = !local.is_empty()
                && local.split('.').all(|part| {
                    !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric())
                });
            if !local_ok {
                return false;
            }
            public
        }
        None => text,
    };
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    // The release: numbers separated by dots.
    let mut rest = public;
    loop {
        let n = digits(rest);
        if n == 0 {
            return false;
        }
        rest = &rest[n..];
        match rest.strip_prefix('.') {
            Some(after) if after.starts_with(|c: char| c.is_ascii_digit()) => rest = after,
            _ => break,
        }
    }
    // Each suffix at most once, in PEP 440's order, each with its number.
    for labels in [&["a", "b", "rc"][..], &[".post"], &[".dev"]] {
        if let Some(after) = labels.iter().find_map(|l| rest.strip_prefix(l)) {
            let n = digits(after);
            if n == 0 {
                return false;
            }
            rest = &after[n..];
        }
    }
    rest.is_empty()
}

/// The version whose stock proposal an untagged document is compared with: the one its exporter
/// recorded (`producer.versions.executorch`), or the latest when it records none this knows.
pub fn version_of(graph: &Graph) -> ExecutorchVersion {
    ExecutorchVersion::recorded_in(graph)
        .and_then(Result::ok)
        .unwrap_or(ExecutorchVersion::LATEST)
}

/// Where a stock proposal comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The tags the document carries: the real stock pass ran before export.
    Document,
    /// Reproduced here for this version: the document carries no tags.
    Reproduced(ExecutorchVersion),
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Document => "document",
            Source::Reproduced(_) => "reproduced",
        }
    }
}

/// The stock proposal a plan is compared with: the tags the document carries, or, for an untagged
/// document, the reproduction for [`version_of`] the document with these options and support.
pub fn proposal(
    graph: &Graph,
    users: &GraphIndex,
    options: &Options,
    supported: &[bool],
) -> (Tagging, Source) {
    match graph.stock_partitions {
        0 => {
            let version = version_of(graph);
            let tagging = reproduce(graph, users, version, options, supported);
            (tagging, Source::Reproduced(version))
        }
        _ => (Tagging::carried(graph), Source::Document),
    }
}

#[cfg(test)]
mod tests;

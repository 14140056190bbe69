//! A tagging: every node's delegate partition or CPU. The stock proposal, a plan and a what-if are
//! all taggings, so one checker and one measure serve them all.

use crate::graph::{Graph, NodeId};
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tagging {
    /// Partition names, indexed by partition id.
    names: Vec<String>,
    /// Each node's partition id, or `None` for CPU.
    of: Vec<Option<u32>>,
}

impl Tagging {
    /// `of[n]` indexes `names`.
    pub fn new(names: Vec<String>, of: Vec<Option<u32>>) -> Self {
        debug_assert!(of.iter().flatten().all(|&p| (p as usize) < names.len()));
        Tagging { names, of }
    }

    /// The tags the input document carries (the stock partitioner's proposal).
    pub fn stock(graph: &Graph) -> Self {
        Self::from_names(graph.nodes.iter().map(|n| n.stock_tag.as_deref()))
    }

    /// From one optional tag name per node, in node order; partitions are numbered by first use.
    pub fn from_names<'a>(tags: impl IntoIterator<Item = Option<&'a str>>) -> Self {
        let mut names: Vec<String> = Vec::new();
        let mut ids: HashMap<&'a str, u32> = HashMap::new();
        let of = tags
            .into_iter()
            .map(|t| {
                t.map(|t| {
                    *ids.entry(t).or_insert_with(|| {
                        names.push(t.to_string());
                        (names.len() - 1) as u32
                    })
                })
            })
            .collect();
        Tagging { names, of }
    }

    pub fn partition(&self, n: NodeId) -> Option<u32> {
        self.of[n.index()]
    }

    pub fn tag(&self, n: NodeId) -> Option<&str> {
        self.of[n.index()].map(|p| self.names[p as usize].as_str())
    }

    pub fn name(&self, partition: u32) -> &str {
        &self.names[partition as usize]
    }

    pub fn partition_count(&self) -> usize {
        self.names.len()
    }

    pub fn node_count(&self) -> usize {
        self.of.len()
    }

    pub fn partitions(&self) -> &[Option<u32>] {
        &self.of
    }
}

//! A tagging: every node's delegate partition or CPU. The stock proposal, a plan and a what-if are
//! all taggings, so one checker and one measure serve them all.

use crate::graph::{Graph, NodeId};
use std::collections::HashMap;

/// A node name the graph lacks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no node is named {0:?}")]
pub struct UnknownNode(pub String);

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

    /// The tags the input document carries (the stock partitioner's proposal, when it ran).
    pub fn carried(graph: &Graph) -> Self {
        if graph.stock_partitions == 0 {
            // An untagged document (a generated one, say): no need to read every node.
            return Tagging::new(Vec::new(), vec![None; graph.len()]);
        }
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

    /// Tags the named nodes; every other node is on CPU. A name the graph lacks is an error.
    pub fn by_name<'a>(graph: &Graph, tagged: &[(&'a str, &'a str)]) -> Result<Self, UnknownNode> {
        let mut tags: Vec<Option<&'a str>> = vec![None; graph.len()];
        for &(node, tag) in tagged {
            let id = graph
                .find(node)
                .ok_or_else(|| UnknownNode(node.to_string()))?;
            tags[id.index()] = Some(tag);
        }
        Ok(Self::from_names(tags))
    }

    /// Every node's partition id, in node order.
    pub fn partitions(&self) -> &[Option<u32>] {
        &self.of
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{load, seed_graph};

    #[test]
    fn by_name_tags_named_nodes_and_refuses_unknown_ones() {
        let g = load(&seed_graph());
        let t = Tagging::by_name(&g, &[("mul", "tag3"), ("sum", "tag1"), ("add", "tag3")]).unwrap();
        assert_eq!(t.partition_count(), 2);
        assert_eq!(t.tag(g.find("add").unwrap()), Some("tag3"));
        assert_eq!(t.tag(g.find("x").unwrap()), None);
        assert_eq!(
            Tagging::by_name(&g, &[("nope", "tag0")])
                .unwrap_err()
                .to_string(),
            "no node is named \"nope\""
        );
        assert_eq!(Tagging::carried(&g).partition_count(), 0);
    }
}

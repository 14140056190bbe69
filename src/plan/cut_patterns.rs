//! Cut patterns: where the cuts `cut_after`/`cut_before` ask for fall in the topological order. A
//! pattern names nodes, or module instances by a leading part of their module path; chunking
//! (`chunks.rs`) then keeps every delegate piece on one side of each.

use super::PlanError;
use crate::analyse::Analysis;
use crate::graph::{Graph, NodeId, OpKind};
use crate::human::natural_cmp;
use crate::options::Options;
use std::collections::BTreeSet;

/// A cut the user asked for, placed in the topological order: before the node at `position`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AskedCut {
    pub position: u32,
    pub pattern: String,
    /// `cut_after` (else `cut_before`).
    pub after: bool,
}

/// The cuts `cut_after`/`cut_before` ask for, in the topological order. A pattern matches a node
/// by its name, or by a leading part of its module path, compared component by component (`*`
/// stands for any run of characters within a name or a component). Each distinct match is a
/// group: the node, or the module instance (`layers.*` makes `layers.0`, `layers.1`, … groups).
/// `cut_after` cuts after each group's last op, `cut_before` before its first. A pattern that
/// matches no op is an error naming the nearest names and module paths the graph has: a cut
/// silently not made would leave a partition the user thinks is split.
pub(crate) fn asked_cuts(
    graph: &Graph,
    analysis: &Analysis,
    options: &Options,
) -> Result<Vec<AskedCut>, PlanError> {
    let patterns = options
        .cut_after
        .iter()
        .map(|p| (p, true))
        .chain(options.cut_before.iter().map(|p| (p, false)));
    let mut cuts = Vec::new();
    for (pattern, after) in patterns {
        let components: Vec<&str> = pattern.split('.').collect();
        // Each group's first and last position, groups in order of first appearance.
        let mut groups: Vec<(String, u32, u32)> = Vec::new();
        let mut group_of: std::collections::HashMap<String, usize> = Default::default();
        for (position, &n) in analysis.index.order().iter().enumerate() {
            // Only ops: placeholders (a lifted constant records the module that made it) come
            // first in the order wherever their module is.
            if graph.op(n) != OpKind::CallFunction {
                continue;
            }
            let node = graph.node(n);
            let key = if glob(pattern, &node.name) {
                Some(node.name.to_string())
            } else {
                node.module_path
                    .as_deref()
                    .and_then(|path| module_prefix(&components, path))
            };
            let Some(key) = key else { continue };
            let position = position as u32;
            match group_of.get(&key) {
                Some(&g) => groups[g].2 = position,
                None => {
                    group_of.insert(key.clone(), groups.len());
                    groups.push((key, position, position));
                }
            }
        }
        if groups.is_empty() {
            return Err(PlanError::CutMatchesNothing {
                pattern: pattern.clone(),
                flag: if after { "cut_after" } else { "cut_before" },
                nearest: nearest(graph, analysis.index.order(), &components),
            });
        }
        cuts.extend(groups.into_iter().map(|(_, first, last)| AskedCut {
            position: if after { last + 1 } else { first },
            pattern: pattern.clone(),
            after,
        }));
    }
    Ok(cuts)
}

/// The op names and module paths (cut to as many components as the pattern has) closest to
/// `pattern` by edit distance, at most three: what the user may have meant.
fn nearest(graph: &Graph, order: &[NodeId], pattern: &[&str]) -> Vec<String> {
    let wanted = pattern.join(".");
    let mut candidates: BTreeSet<&str> = BTreeSet::new();
    let mut modules: BTreeSet<String> = BTreeSet::new();
    for &n in order {
        if graph.op(n) != OpKind::CallFunction {
            continue;
        }
        let node = graph.node(n);
        candidates.insert(&node.name);
        if let Some(path) = node.module_path.as_deref() {
            let parts: Vec<&str> = path.split('.').take(pattern.len()).collect();
            modules.insert(parts.join("."));
        }
    }
    let mut scored: Vec<(usize, &str)> = (candidates.into_iter())
        .chain(modules.iter().map(String::as_str))
        .map(|c| (edit_distance(&wanted, c), c))
        .collect();
    // Nearest first; among equals, as a person lists them (layers.9 before layers.19).
    scored.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| natural_cmp(a.1, b.1)));
    let cutoff = (wanted.chars().count() / 2).max(2);
    (scored.into_iter())
        .filter(|&(d, _)| d <= cutoff)
        .take(3)
        .map(|(_, c)| c.to_string())
        .collect()
}

/// Levenshtein distance by characters, in one row of the table.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The leading components of `path` that `pattern` matches one by one, joined again.
fn module_prefix(pattern: &[&str], path: &str) -> Option<String> {
    let mut parts = path.split('.');
    let mut matched = Vec::with_capacity(pattern.len());
    for p in pattern {
        let part = parts.next()?;
        if !glob(p, part) {
            return None;
        }
        matched.push(part);
    }
    Some(matched.join("."))
}

/// Whether `text` matches `pattern`, where `*` stands for any run of characters. Iterative: the
/// last `*` seen is the only place to backtrack to.
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < t.len() {
        if i < p.len() && p[i] == b'*' {
            star = Some((i, j));
            i += 1;
        } else if i < p.len() && p[i] == t[j] {
            i += 1;
            j += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_runs_of_any_characters() {
        assert!(glob("layers.*", "layers.7"));
        assert!(glob("*", ""));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(glob("aten_mm_*", "aten_mm_default_3"));
        assert!(!glob("a*b", "aXc"));
        assert!(!glob("layers", "layers.7"));
        // Backtracking only to the last star: linear enough for long names.
        assert!(!glob(&"*a".repeat(20), &"a".repeat(19)));
    }

    #[test]
    fn edit_distances_count_single_character_edits() {
        assert_eq!(edit_distance("Layers.7", "layers.7"), 1);
        assert_eq!(edit_distance("layers.99", "layers.9"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn module_patterns_match_leading_components_and_name_the_group() {
        let p = |s: &'static str| s.split('.').collect::<Vec<_>>();
        assert_eq!(
            module_prefix(&p("layers.*"), "layers.7.attention.wq"),
            Some("layers.7".into())
        );
        assert_eq!(module_prefix(&p("layers.7"), "layers.70.mlp"), None);
        assert_eq!(
            module_prefix(&p("layers.*.mlp"), "layers.3.attention"),
            None
        );
        assert_eq!(module_prefix(&p("norm"), "norm"), Some("norm".into()));
        assert_eq!(module_prefix(&p("layers.*"), "layers"), None);
    }
}

use super::*;
use crate::digraph::EdgeLists;

fn propose(
    n: u32,
    edges: &[(u32, u32)],
    unsupported: &[u32],
    getitems: &[u32],
) -> Vec<Option<u32>> {
    let graph = EdgeLists::new(n as usize, edges.iter().copied());
    let order: Vec<NodeId> = (0..n).map(NodeId).collect();
    propose_partitions(
        &graph,
        &order,
        |v| !unsupported.contains(&v.0),
        |v| getitems.contains(&v.0),
    )
}

#[test]
fn a_supported_chain_is_one_partition_numbered_as_fx_numbers_it() {
    // fx visits 3, 2, 1, 0: partition 0 at node 3, then 1 at node 2, which absorbs 0 on a tie.
    let p = propose(4, &[(0, 1), (1, 2), (2, 3)], &[], &[]);
    assert_eq!(p, vec![Some(1); 4]);
}

#[test]
fn a_path_through_an_unsupported_node_keeps_two_partitions_apart() {
    // 0 -> 1 (unsupported) -> 2 and 0 -> 2: merging 0 with 2 would make a cycle through 1.
    let p = propose(3, &[(0, 1), (1, 2), (0, 2)], &[1], &[]);
    assert_eq!(p[1], None);
    assert!(p[0].is_some() && p[2].is_some() && p[0] != p[2], "{p:?}");
}

#[test]
fn independent_branches_merge_horizontally() {
    // 0 (unsupported) feeds 1 and 2, both supported, not connected: fx merges them.
    let p = propose(4, &[(0, 1), (0, 2), (1, 3), (2, 3)], &[0, 3], &[]);
    assert_eq!((p[0], p[3]), (None, None));
    assert!(p[1].is_some() && p[1] == p[2], "{p:?}");
}

#[test]
fn getitems_follow_their_producer_even_out_of_any_partition() {
    // 1 is a multi-output op the backend refuses; its getitems 2 and 3 are supported but follow it.
    let p = propose(5, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4)], &[1], &[2, 3]);
    assert_eq!((p[1], p[2], p[3]), (None, None, None), "{p:?}");
    assert!(p[0].is_some() && p[4].is_some());
}

#[test]
fn a_long_chain_of_alternating_support_does_not_recurse_or_blow_up() {
    // Every tenth node refused: 10,000 partitions side by side at some point.
    let n = 100_000u32;
    let edges: Vec<(u32, u32)> = (0..n - 1).map(|i| (i, i + 1)).collect();
    let unsupported: Vec<u32> = (0..n).filter(|i| i % 10 == 9).collect();
    let p = propose(n, &edges, &unsupported, &[]);
    let mut distinct: Vec<u32> = p.iter().flatten().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 10_000);
}

/// torch.fx's `CapabilityBasedPartitioner.propose_partitions` (torch 2.13,
/// torch/fx/passes/infra/partitioner.py) as written, with its per-node descendant sets: the
/// reference the pass above is held to on random graphs. Single-node partitions allowed,
/// horizontal fusion on, as `CoreMLPartitioner` runs it.
fn fx_reference(users: &[Vec<u32>], supported: &[bool], getitem: &[bool]) -> Vec<Option<u32>> {
    use std::collections::{BTreeMap, BTreeSet};
    let n = users.len();
    // fx's _DependencyViewer: every node's transitive users.
    let mut downstream: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); n];
    for v in (0..n).rev() {
        for &u in &users[v] {
            let below = downstream[u as usize].clone();
            downstream[v].insert(u);
            downstream[v].extend(below);
        }
    }
    let path = |u: u32| std::iter::once(u).chain(downstream[u as usize].iter().copied());
    let mut assignment: Vec<Option<u32>> = vec![None; n];
    let mut nodes: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    let mut order: BTreeMap<u32, u32> = BTreeMap::new();
    let mut partition_map: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    let mut partition_users: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    let downstream_partitions = |assignment: &[Option<u32>],
                                 partition_map: &BTreeMap<u32, BTreeSet<u32>>,
                                 user_nodes: &BTreeSet<u32>,
                                 sources: &[u32]| {
        let mut out = BTreeSet::new();
        for &u in user_nodes {
            for p in path(u) {
                if let Some(t) = assignment[p as usize] {
                    out.insert(t);
                    out.extend(partition_map.get(&t).into_iter().flatten().copied());
                }
            }
        }
        for s in sources {
            out.remove(s);
        }
        out
    };
    let mut next = 0u32;
    for v in (0..n).rev() {
        let mut candidates: Vec<u32> = Vec::new();
        if supported[v] && assignment[v].is_none() {
            let id = next;
            next += 1;
            order.insert(id, id);
            assignment[v] = Some(id);
            nodes.insert(id, BTreeSet::from([v as u32]));
            let node_users: BTreeSet<u32> = users[v].iter().copied().collect();
            let down = downstream_partitions(&assignment, &partition_map, &node_users, &[id]);
            partition_users.insert(id, node_users);
            partition_map.entry(id).or_default().extend(down);
            candidates.push(id);
        }
        let mut by_order: Vec<(u32, u32)> = order.iter().map(|(&id, &o)| (id, o)).collect();
        by_order.sort_by_key(|&(_, o)| o);
        for (id, _) in by_order {
            if !candidates.contains(&id) {
                candidates.push(id);
            }
        }
        let Some((&first, rest)) = candidates.split_first() else {
            continue;
        };
        let mut self_id = first;
        for &other in rest {
            // maybe_merge_partition
            let mut all_users: BTreeSet<u32> =
                &partition_users[&self_id] | &partition_users[&other];
            for id in [self_id, other] {
                for m in &nodes[&id] {
                    all_users.remove(m);
                }
            }
            let cycle = all_users.iter().any(|&u| {
                let mut visited = BTreeSet::new();
                path(u).any(|p| {
                    if nodes[&self_id].contains(&p) || nodes[&other].contains(&p) {
                        return true;
                    }
                    let Some(id) = assignment[p as usize] else {
                        return false;
                    };
                    if !visited.insert(id) {
                        return false;
                    }
                    let map = partition_map.get(&id);
                    map.is_some_and(|m| m.contains(&self_id) || m.contains(&other))
                })
            });
            if cycle {
                continue;
            }
            let (merge, removed) = if nodes[&self_id].len() < nodes[&other].len() {
                (other, self_id)
            } else {
                (self_id, other)
            };
            let gone = nodes.remove(&removed).unwrap_or_default();
            for &m in &gone {
                assignment[m as usize] = Some(merge);
            }
            nodes.entry(merge).or_default().extend(gone);
            let removed_order = order.remove(&removed).unwrap_or(u32::MAX);
            order
                .entry(merge)
                .and_modify(|o| *o = (*o).min(removed_order));
            let removed_map = partition_map.remove(&removed).unwrap_or_default();
            partition_map.entry(merge).or_default().extend(removed_map);
            partition_users.remove(&removed);
            let down =
                downstream_partitions(&assignment, &partition_map, &all_users, &[merge, removed]);
            partition_users.insert(merge, all_users);
            let map = partition_map.entry(merge).or_default();
            map.extend(down);
            map.remove(&merge);
            map.remove(&removed);
            self_id = merge;
        }
    }
    // Getitems join their producer's partition, or leave every partition with it, until stable.
    loop {
        let mut moves: Vec<(usize, Option<u32>)> = Vec::new();
        for v in 0..n {
            if users[v].iter().all(|&u| getitem[u as usize]) {
                let id = assignment[v];
                for &u in &users[v] {
                    if assignment[u as usize] != id {
                        moves.retain(|&(m, _)| m != u as usize);
                        moves.push((u as usize, id));
                    }
                }
            }
        }
        if moves.is_empty() {
            return assignment;
        }
        for (u, id) in moves {
            assignment[u] = id;
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
    /// On random DAGs, with random support and getitems, the pass decides as fx does, partition
    /// numbers included.
    #[test]
    fn the_pass_decides_as_torch_fx_does(
        n in 2u32..36,
        edge_bits in proptest::collection::vec(proptest::prelude::any::<u64>(), 36),
        unsupported_bits in proptest::prelude::any::<u64>(),
        getitem_bits in proptest::prelude::any::<u64>(),
        density in 1u64..6,
    ) {
        // Edges i -> j (i < j) with odds density in 16, read from the bits.
        let mut edges = Vec::new();
        for j in 1..n {
            let bits = edge_bits[j as usize];
            for i in 0..j {
                let nibble = (bits.rotate_left(i * 4) & 0xF) ^ u64::from(i % 7);
                if nibble < density {
                    edges.push((i, j));
                }
            }
        }
        let unsupported: Vec<u32> = (0..n).filter(|i| unsupported_bits >> i & 1 == 1 && i % 3 != 0).collect();
        // A getitem reads exactly one node, as import requires.
        let mut in_degree = vec![0; n as usize];
        for &(_, j) in &edges {
            in_degree[j as usize] += 1;
        }
        let getitems: Vec<u32> = (0..n).filter(|&i| getitem_bits >> i & 1 == 1 && in_degree[i as usize] == 1).collect();
        let mut users = vec![Vec::new(); n as usize];
        for &(i, j) in &edges {
            users[i as usize].push(j);
        }
        let supported: Vec<bool> = (0..n).map(|i| !unsupported.contains(&i)).collect();
        let is_getitem: Vec<bool> = (0..n).map(|i| getitems.contains(&i)).collect();
        let expected = fx_reference(&users, &supported, &is_getitem);
        let got = propose(n, &edges, &unsupported, &getitems);
        proptest::prop_assert_eq!(got, expected, "edges {:?} unsupported {:?} getitems {:?}", edges, unsupported, getitems);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Long graphs with many refused nodes: more than 64 and 128 partitions live at once, so the
    /// slot sets widen (keeping the merge log) mid-pass, and the pass still decides as fx does.
    #[test]
    fn the_pass_decides_as_torch_fx_does_through_widening(
        n in 340u32..440,
        reach_bits in proptest::collection::vec(proptest::prelude::any::<u8>(), 440),
        unsupported_bits in proptest::collection::vec(proptest::prelude::any::<u8>(), 440),
    ) {
        // Each node feeds the next and, at random, one or two a few places on: long chains with
        // short skips, as layers are.
        let mut edges = Vec::new();
        for i in 0..n - 1 {
            let bits = reach_bits[i as usize];
            edges.push((i, i + 1));
            for (bit, skip) in [(0x01, 2), (0x02, 3), (0x04, 5)] {
                if bits & bit != 0 && i + skip < n {
                    edges.push((i, i + skip));
                }
            }
        }
        // About three nodes in eight refused.
        let unsupported: Vec<u32> = (0..n).filter(|&i| unsupported_bits[i as usize] < 96).collect();
        let mut users = vec![Vec::new(); n as usize];
        for &(i, j) in &edges {
            users[i as usize].push(j);
        }
        let supported: Vec<bool> = (0..n).map(|i| !unsupported.contains(&i)).collect();
        let expected = fx_reference(&users, &supported, &vec![false; n as usize]);
        let got = propose(n, &edges, &unsupported, &[]);
        proptest::prop_assert_eq!(got, expected);
    }
}

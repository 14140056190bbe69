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

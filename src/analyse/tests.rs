use super::*;
use crate::fixtures::seed_graph;
use crate::graph::NodeId;
use crate::import::parse_graph;
use crate::synthetic::BridgeBuilder;

fn names(g: &Graph, ids: &[NodeId]) -> Vec<String> {
    ids.iter().map(|&i| g.name(i).to_string()).collect()
}

#[test]
fn the_seed_chain_is_a_slice_mutation_with_its_readers() {
    let g = parse_graph(&seed_graph().to_json()).unwrap();
    let a = analyse(&g);
    assert_eq!(a.buffers.len(), 1);
    let c = &a.buffers[0];
    assert_eq!(
        names(&g, &c.chain),
        ["mul", "scatter0", "add", "copy", "scatter1"]
    );
    assert_eq!(c.kind, MutationKind::Slice);
    assert_eq!(names(&g, &c.scatters), ["scatter0", "scatter1"]);
    assert_eq!(names(&g, &c.placeholder_readers), ["mul", "scatter0"]);
    assert_eq!(names(&g, &c.value_readers), ["sum", "output"]);
    assert_eq!(
        names(&g, &c.state_hull),
        ["b_cache", "mul", "scatter0", "add", "copy", "scatter1"]
    );
}

#[test]
fn a_whole_write_and_an_overwrite() {
    let mut b = BridgeBuilder::new();
    b.buffer("b_acc", "acc", &[4])
        .buffer("b_reset", "reset", &[4])
        .user_input("x", &[4])
        .op("acc_new", "aten.add.Tensor", &["b_acc", "x"], true)
        .op("fresh", "aten.mul.Tensor", &["x", "x"], true)
        .op("read_reset", "aten.neg.default", &["b_reset"], true)
        .mutates("acc_new", "acc")
        .mutates("fresh", "reset")
        .output(&["read_reset"]);
    let g = parse_graph(&b.to_json()).unwrap();
    let a = analyse(&g);
    let acc = &a.buffers[0];
    assert_eq!(
        (acc.kind, names(&g, &acc.chain)),
        (MutationKind::Whole, vec!["acc_new".to_string()])
    );
    let reset = &a.buffers[1];
    assert_eq!(names(&g, &reset.chain), ["fresh"]);
    assert_eq!(names(&g, &reset.placeholder_readers), ["read_reset"]);
    // The hull joins the reader of the old value and the writer although no path links them.
    assert_eq!(
        names(&g, &reset.state_hull),
        ["b_reset", "fresh", "read_reset"]
    );
}

#[test]
fn mutation_comes_from_the_signature_not_from_who_uses_the_placeholder() {
    // A buffer read by a scatter whose result is *not* written back is not mutated at all.
    let mut b = BridgeBuilder::new();
    b.buffer("b_mask", "mask", &[4])
        .user_input("x", &[4])
        .op("masked", "aten.index_put.default", &["b_mask", "x"], true)
        .output(&["masked"]);
    let g = parse_graph(&b.to_json()).unwrap();
    assert!(analyse(&g).buffers.is_empty());
}

#[test]
fn the_hull_pulls_in_nodes_between_chain_and_readers() {
    // p -> a -> w (chain); a -> mid -> r where r reads p directly: mid must join the state.
    let mut b = BridgeBuilder::new();
    b.buffer("p", "s", &[4])
        .op("a", "aten.neg.default", &["p"], true)
        .op("w", "aten.add.Tensor", &["a", "p"], true)
        .op("mid", "aten.relu.default", &["a"], true)
        .op("r", "aten.mul.Tensor", &["p", "mid"], true)
        .op("late", "aten.sin.default", &["w"], true)
        .mutates("w", "s")
        .output(&["r", "late"]);
    let g = parse_graph(&b.to_json()).unwrap();
    let c = &analyse(&g).buffers[0];
    assert_eq!(names(&g, &c.chain), ["a", "w"]);
    assert_eq!(names(&g, &c.state_hull), ["p", "a", "w", "mid", "r"]);
}

/// A graph large enough for the index to gather its inputs on two threads: every node's rows are
/// its own inputs and the users those make, and the getitems are the nodes that are.
#[test]
fn the_index_gathered_in_halves_is_the_graph() {
    let text = crate::synthetic::generate(120_000, 3).expect("generates");
    let g = parse_graph(&text).expect("imports");
    assert!(g.len() >= 100_000);
    let index = GraphIndex::new(&g);
    let mut users: Vec<Vec<NodeId>> = vec![Vec::new(); g.len()];
    for n in g.ids() {
        assert_eq!(index.predecessors(n), &g.node(n).inputs[..]);
        assert_eq!(index.is_getitem(n), g.node(n).is_getitem());
        for &p in &g.node(n).inputs {
            users[p.index()].push(n);
        }
    }
    for n in g.ids() {
        assert_eq!(index.successors(n), &users[n.index()][..]);
    }
}

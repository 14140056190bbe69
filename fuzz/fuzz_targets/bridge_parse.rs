//! Bridge parsing on any text: a typed error or a graph, never a panic or a hang, and the same one
//! the serde reader alone gives (the fast reader only ever takes a shorter way to it). An input
//! whose first byte is zero goes through the structure-aware generator; any other is parsed as it
//! is (the corpus is seeded from data/).
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use partition_planner::import::parse_graph_by_serde;
use partition_planner::parse_graph;
use partition_planner_fuzz::bridge_document;

fuzz_target!(|bytes: &[u8]| {
    if let Some((&0, rest)) = bytes.split_first() {
        if let Ok(text) = bridge_document(&mut Unstructured::new(rest)) {
            parse_both_ways(&text);
        }
    } else if let Ok(text) = std::str::from_utf8(bytes) {
        parse_both_ways(text);
    }
});

fn parse_both_ways(text: &str) {
    match (parse_graph(text), parse_graph_by_serde(text)) {
        (Ok(fast), Ok(serde)) => {
            assert_eq!(fast.nodes, serde.nodes);
            assert_eq!(fast.order, serde.order);
            assert_eq!(fast.roles, serde.roles);
            assert_eq!(fast.signature, serde.signature);
            assert_eq!(fast.stock_partitions, serde.stock_partitions);
        }
        (Err(fast), Err(serde)) => assert_eq!(fast, serde),
        (fast, serde) => panic!(
            "the readers disagree: fast {:?}, serde {:?}",
            fast.err(),
            serde.err()
        ),
    }
}

//! Bridge parsing on any text: a typed error or a graph, never a panic or a hang. An input whose
//! first byte is zero goes through the structure-aware generator; any other is parsed as it is
//! (the corpus is seeded from data/).
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use partition_planner::parse_graph;
use partition_planner_fuzz::bridge_document;

fuzz_target!(|bytes: &[u8]| {
    if let Some((&0, rest)) = bytes.split_first() {
        if let Ok(text) = bridge_document(&mut Unstructured::new(rest)) {
            let _ = parse_graph(&text);
        }
    } else if let Ok(text) = std::str::from_utf8(bytes) {
        let _ = parse_graph(text);
    }
});

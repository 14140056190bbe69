//! The generator writes documents that reach the planner most of the time, and faults of every
//! kind the rest of the time: measured over pseudo-random inputs.

use arbitrary::Unstructured;
use partition_planner::api::{Overrides, plan_document};
use partition_planner::parse_graph;
use partition_planner_fuzz::bridge_document;
use std::collections::BTreeMap;

fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn most_documents_plan_and_the_rest_fail_in_many_ways() {
    let (mut planned, mut with_buffers) = (0, 0);
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    let runs = 2000usize;
    for seed in 0..runs as u64 {
        let data = bytes(seed, 4096);
        let text = bridge_document(&mut Unstructured::new(&data)).expect("enough bytes");
        match parse_graph(&text) {
            Ok(graph) => {
                planned += 1;
                with_buffers += usize::from(!graph.signature.mutable_buffers.is_empty());
                let p =
                    plan_document(&text, &Overrides::default()).expect("an imported graph plans");
                let broken: Vec<_> = p.verdict.violations().map(|v| format!("{v:?}")).collect();
                assert!(broken.is_empty(), "{broken:#?}\n{text}");
            }
            Err(e) => {
                let kind = format!("{e:?}");
                let kind = kind
                    .split([' ', '{', '('])
                    .next()
                    .unwrap_or_default()
                    .to_string();
                *errors.entry(kind).or_default() += 1;
            }
        }
    }
    println!("{planned} of {runs} import, {with_buffers} with mutable buffers; errors {errors:?}");
    assert!(planned * 4 > runs, "{planned} of {runs} import");
    assert!(with_buffers * 8 > runs, "{with_buffers} with buffers");
    assert!(errors.len() >= 8, "{errors:?}");
}

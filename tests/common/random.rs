//! Random exported-program-shaped graphs for property tests: DAGs with user inputs, parameters,
//! mutable buffers whose chains mix scatters and whole writes, readers of old and new values,
//! multi-output ops with getitems, random support, ops the converter refuses although they are
//! supported, and random stock tags.

use partition_planner::synthetic::BridgeBuilder;
use serde_json::json;

/// SplitMix64: small, deterministic, good enough to draw graphs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

pub struct RandomGraph {
    pub builder: BridgeBuilder,
    pub description: String,
}

/// A random graph of about `size` ops. Buffers are written once each, by a node that may or may
/// not depend on the old value, and may be read before and after the write.
pub fn random_graph(seed: u64, size: usize) -> RandomGraph {
    let mut rng = Rng::new(seed);
    // Refusals are drawn apart, so that the graph a seed draws is the one it drew before them.
    let mut refusals = Rng::new(seed ^ 0x5EED_C0DE);
    let mut b = BridgeBuilder::new();
    let mut values: Vec<String> = Vec::new();
    let inputs = 1 + rng.below(2);
    for i in 0..inputs {
        let name = format!("x{i}");
        b.user_input(&name, &[4, 8]);
        values.push(name);
    }
    for i in 0..rng.below(3) {
        let name = format!("w{i}");
        b.parameter(&name, &[8, 8]);
        values.push(name);
    }
    let buffers = rng.below(5);
    let mut unwritten: Vec<usize> = Vec::new();
    for i in 0..buffers {
        let name = format!("b_buf{i}");
        b.buffer(&name, &format!("buf{i}"), &[4, 8]);
        values.push(name);
        unwritten.push(i);
    }
    let mut writers: Vec<String> = Vec::new();
    let mut ops = 0;
    let targets = [
        "aten.add.Tensor",
        "aten.mul.Tensor",
        "aten.neg.default",
        "aten.mm.default",
        "aten.cat.default",
    ];
    let scatters = [
        "aten.slice_scatter.default",
        "aten.index_put.default",
        "aten.copy.default",
        "aten.add.Tensor",
    ];
    while ops < size || !unwritten.is_empty() {
        ops += 1;
        let supported = rng.chance(80);
        let name = format!("n{ops}");
        if !unwritten.is_empty() && (ops >= size || rng.chance(15)) {
            let which = unwritten.remove(rng.below(unwritten.len()));
            // The base: the old value itself, or any earlier value (which may depend on it).
            let base = if rng.chance(50) {
                format!("b_buf{which}")
            } else {
                rng.pick(&values).clone()
            };
            let value = rng.pick(&values).clone();
            let scatter: &str = rng.pick::<&str>(&scatters);
            b.op(&name, scatter, &[&base, &value], supported)
                .mutates(&name, &format!("buf{which}"));
            if supported && refusals.chance(10) {
                b.refused("ValueError: the converter refuses this writer");
            }
            writers.push(name.clone());
        } else if rng.chance(8) {
            let input = rng.pick(&values).clone();
            b.op(
                &name,
                "aten.split_with_sizes_copy.default",
                &[&input],
                supported,
            );
            for k in 0..2 {
                let item = format!("{name}_{k}");
                b.op_with(&item, "getitem", &[&name], &[json!(k)], rng.chance(90));
                values.push(item);
            }
            continue;
        } else {
            let arity = 1 + rng.below(3);
            let mut args: Vec<String> = (0..arity).map(|_| rng.pick(&values).clone()).collect();
            args.dedup();
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let target: &str = rng.pick::<&str>(&targets);
            b.op(&name, target, &refs, supported);
            if supported && refusals.chance(8) {
                b.refused("ValueError: the converter refuses this op");
            }
        }
        b.meta(&[4, 8], "float32");
        values.push(name);
    }
    let sinks: Vec<String> = values
        .iter()
        .rev()
        .filter(|v| v.starts_with('n'))
        .take(1 + rng.below(3))
        .cloned()
        .collect();
    let sink_refs: Vec<&str> = sinks.iter().map(String::as_str).collect();
    b.output(&sink_refs);
    // A stock proposal: random tags on ops and placeholders, often wrong, as the checker must expect.
    let tag_names = [None, Some("tag0"), Some("tag1"), Some("tag2")];
    let all: Vec<String> = b.to_value()["nodes"]
        .as_array()
        .map(|n| {
            n.iter()
                .filter_map(|v| v["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    for name in all.iter().filter(|n| *n != "output") {
        b.tag(name, *rng.pick(&tag_names));
    }
    RandomGraph {
        builder: b,
        description: format!("seed {seed}, size {size}, {buffers} buffers, writers {writers:?}"),
    }
}

//! The overviews as Graphviz DOT, for docs and issues: the plan and the stock proposal as two
//! clusters, top to bottom in topological order. Repeats are folded as on the page: a run's first
//! period stands for the rest, labelled with the count, and edges from hidden boxes are drawn from
//! the box that stands for them.

use super::html::plural;
use super::{BoxKind, Map, View, human_bytes};
use std::fmt::Write;

pub fn dot(map: &Map<'_>, title: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "digraph partition_map {{\n  label={};\n  labelloc=t;\n  rankdir=TB;\n  newrank=true;\n  \
         node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n  \
         edge [fontname=\"Helvetica\", fontsize=9, color=\"#718096\"];",
        quote(&format!("partition map: {title}"))
    );
    for view in [&map.plan, &map.stock] {
        cluster(&mut out, view);
    }
    out.push_str("}\n");
    out
}

fn cluster(out: &mut String, view: &View) {
    let side = view.side.as_str();
    let heading = view.side.heading();
    let _ = writeln!(
        out,
        "  subgraph cluster_{side} {{\n    label={};\n    color=\"#a0aec0\";",
        quote(&format!("{heading}: {} partitions", view.partitions))
    );
    for (b, mapbox) in view.boxes.iter().enumerate() {
        if view.shown_as(b) != b {
            continue;
        }
        let (fill, name) = match &mapbox.kind {
            BoxKind::Delegate(tag) => ("#dcecff", tag.as_str()),
            BoxKind::Cpu => ("#f1f1f1", "CPU"),
        };
        let mut label = format!("{name}\n{} op{}", mapbox.ops, plural(mapbox.ops));
        if !mapbox.states.is_empty() {
            let states = mapbox.states.len();
            let _ = write!(label, ", {states} state{}", plural(states));
        }
        if let Some((run, _)) = view.run_of(b) {
            let _ = write!(label, "\n×{}", run.repeats);
        }
        let _ = writeln!(
            out,
            "    {side}_{b} [label={}, fillcolor=\"{fill}\"];",
            quote(&label)
        );
    }
    for ((from, to), bytes) in view.folded_edges() {
        let _ = writeln!(
            out,
            "    {side}_{from} -> {side}_{to} [label={}];",
            quote(&human_bytes(bytes))
        );
    }
    out.push_str("  }\n");
}

/// A DOT string literal.
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

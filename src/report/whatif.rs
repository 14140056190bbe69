//! What-if answers: one scenario's diff in detail, or many scenarios as one comparison table, as
//! text or as `partition-planner/whatif@1` JSON.

use super::Shown;
use super::reasons::{cut_line, cut_sentence};
use super::text::more;
use crate::graph::Graph;
use crate::human::count;
use crate::measure::PartitionSummary;
use crate::outcome::{Plan, Verdict};
use crate::schema::WHATIF_SCHEMA;
use crate::whatif::{Change, PlanDiff};
use serde_json::{Value, json};
use std::fmt::Write;

/// One answered scenario: its name, the changes asked, the plan and how it differs from the base.
pub struct Answered<'a> {
    pub name: &'a str,
    pub changes: &'a [Change],
    pub plan: &'a Plan,
    pub diff: &'a PlanDiff,
    /// The checker's, on `plan`.
    pub verdict: &'a Verdict,
}

/// The plan the scenarios are compared with, and the checker's verdict on it.
#[derive(Clone, Copy)]
pub struct Base<'a> {
    pub plan: &'a Plan,
    pub verdict: &'a Verdict,
}

fn stats(plan: &Plan, verdict: &Verdict) -> Value {
    let m = &plan.draft.measure;
    json!({
        "delegate_calls": m.partitions.len(),
        "largest_weight_bytes": largest(plan, |p| p.weight_bytes),
        "largest_ops": largest(plan, |p| p.nodes as u64),
        "cuts": plan.draft.cuts.len(),
        "delegated_nodes": m.delegated_nodes,
        "states": m.states(),
        "boundary_bytes": m.boundary_bytes(),
        "estimate_us": plan.draft.estimate.total_us,
        "violations": verdict.violations().count(),
    })
}

/// The largest figure among the plan's partitions (0 without partitions).
fn largest(plan: &Plan, figure: impl Fn(&PartitionSummary) -> u64) -> u64 {
    plan.draft
        .measure
        .partitions
        .iter()
        .map(figure)
        .max()
        .unwrap_or(0)
}

fn diff_json(graph: &Graph, base: &Plan, a: &Answered) -> Value {
    let d = a.diff;
    json!({
        "partitions_added": d.partitions_added,
        "partitions_removed": d.partitions_removed,
        "partitions_changed": d.partitions_changed.iter().map(|(a, b)| json!([a, b])).collect::<Vec<_>>(),
        "nodes_moved": d.nodes_moved.iter().map(|m| {
            let tag = |p: &Plan, t: Option<u32>| t.map(|t| p.draft.tagging.name(t).to_string());
            json!({"node": graph.name(m.node), "from": tag(base, m.from), "to": tag(a.plan, m.to)})
        }).collect::<Vec<_>>(),
        "states_gained": d.states_gained,
        "states_lost": d.states_lost,
        "delegate_calls": d.delegate_calls,
        "delegated_nodes": d.delegated_nodes,
        "boundary_bytes": d.boundary_bytes,
        "estimate_us": d.estimate_us,
        "cuts": a.plan.draft.cuts.iter().map(|c| json!({
            "partitions": [a.plan.draft.tagging.tag(c.after), a.plan.draft.tagging.tag(c.before)],
            "reason": cut_sentence(graph, c),
        })).collect::<Vec<_>>(),
    })
}

pub fn whatif_json(graph: &Graph, base: Base, answers: &[Answered]) -> Value {
    let Base {
        plan: base,
        verdict: base_verdict,
    } = base;
    json!({
        "schema": WHATIF_SCHEMA,
        "options": base.draft.options,
        "base": stats(base, base_verdict),
        "scenarios": answers.iter().map(|a| json!({
            "name": a.name,
            "changes": a.changes.iter().map(Change::to_string).collect::<Vec<_>>(),
            "options": a.plan.draft.options,
            "stats": stats(a.plan, a.verdict),
            "diff": diff_json(graph, base, a),
        })).collect::<Vec<_>>(),
    })
}

fn signed(v: impl Into<i128>) -> String {
    let v = v.into();
    if v > 0 {
        format!("+{v}")
    } else {
        v.to_string()
    }
}

fn some(names: &[String], most: usize) -> String {
    let mut out = names
        .iter()
        .take(most)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > most {
        let _ = write!(out, " (+{} more)", names.len() - most);
    }
    out
}

/// One scenario in detail: the figures before and after, then what moved.
pub fn whatif_text(graph: &Graph, base: &Plan, a: &Answered, shown: &Shown) -> String {
    let mut out = String::new();
    let changes: Vec<String> = a.changes.iter().map(Change::to_string).collect();
    let _ = writeln!(
        out,
        "what if {}",
        if changes.is_empty() {
            "nothing changed".to_string()
        } else {
            changes.join(", ")
        }
    );
    let (b, n) = (&base.draft.measure, &a.plan.draft.measure);
    let rows = [
        (
            "delegate calls",
            b.partitions.len() as i128,
            n.partitions.len() as i128,
        ),
        (
            "delegated nodes",
            b.delegated_nodes as i128,
            n.delegated_nodes as i128,
        ),
        ("states", b.states() as i128, n.states() as i128),
        (
            "largest weights",
            i128::from(largest(base, |p| p.weight_bytes)),
            i128::from(largest(a.plan, |p| p.weight_bytes)),
        ),
        (
            "largest ops",
            i128::from(largest(base, |p| p.nodes as u64)),
            i128::from(largest(a.plan, |p| p.nodes as u64)),
        ),
        (
            "boundary bytes",
            i128::from(b.boundary_bytes()),
            i128::from(n.boundary_bytes()),
        ),
    ];
    let _ = writeln!(
        out,
        "  {:<16} {:>12} {:>12} {:>10}",
        "", "base", "what-if", "change"
    );
    for (label, before, after) in rows {
        let _ = writeln!(
            out,
            "  {label:<16} {before:>12} {after:>12} {:>10}",
            signed(after - before)
        );
    }
    // Both plans weighed by the what-if's constants, so that only the plans differ.
    let after = a.plan.draft.estimate.total_us;
    let _ = writeln!(
        out,
        "  {:<16} {:>12.0} {after:>12.0} {:>10}",
        "estimated µs",
        after - a.diff.estimate_us,
        signed(a.diff.estimate_us.round() as i64)
    );
    let d = a.diff;
    if shown.quiet {
        return out;
    }
    if d.is_empty() {
        let _ = writeln!(out, "\nthe plan does not change");
    }
    let lists = [
        ("partitions added", d.partitions_added.clone()),
        ("partitions removed", d.partitions_removed.clone()),
        (
            "partitions changed",
            d.partitions_changed
                .iter()
                .map(|(o, n)| changed_partition(base, a.plan, o, n))
                .collect(),
        ),
        ("states gained", d.states_gained.clone()),
        ("states lost", d.states_lost.clone()),
        (
            "nodes moved",
            d.nodes_moved
                .iter()
                .map(|m| {
                    let (from, to) = m.tags(base, a.plan);
                    format!("{} {from} -> {to}", graph.name(m.node))
                })
                .collect(),
        ),
    ];
    for (label, names) in lists.iter().filter(|(_, names)| !names.is_empty()) {
        let _ = writeln!(out, "{label} ({}): {}", names.len(), some(names, 8));
    }
    if !a.plan.draft.cuts.is_empty() {
        let _ = writeln!(out, "cuts ({}):", a.plan.draft.cuts.len());
        let (cuts, left_out) = shown.rows(&a.plan.draft.cuts);
        for c in cuts {
            let _ = writeln!(out, "  {}", cut_line(graph, &a.plan.draft.tagging, c));
        }
        more(&mut out, left_out, "cut", "cuts");
    }
    let violations = a.verdict.violations().count();
    if violations > 0 {
        let _ = writeln!(
            out,
            "\ninternal error: the checker rejects this plan ({})",
            count(violations, "violation", "violations")
        );
    }
    out
}

/// `tag3 (87 -> 60 nodes)` when the partition keeps its name, `tag3 -> tag7 (87 -> 60 nodes)`
/// when it does not: a partition changed is one whose nodes changed.
fn changed_partition(base: &Plan, new: &Plan, old_tag: &str, new_tag: &str) -> String {
    let nodes = |p: &Plan, tag: &str| {
        (p.draft.measure.partitions.iter())
            .find(|s| s.tag == tag)
            .map_or(0, |s| s.nodes)
    };
    let sizes = format!(
        "{} -> {}",
        nodes(base, old_tag),
        count(nodes(new, new_tag), "node", "nodes")
    );
    if old_tag == new_tag {
        format!("{old_tag} ({sizes})")
    } else {
        format!("{old_tag} -> {new_tag} ({sizes})")
    }
}

/// Many scenarios, one row each after the base row.
pub fn comparison_table(base: Base, answers: &[Answered]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<24} {:>6} {:>7} {:>10} {:>7} {:>14} {:>12} {:>7} {:>10}  changes",
        "scenario",
        "calls",
        "Δcalls",
        "delegated",
        "states",
        "boundary bytes",
        "estimated µs",
        "moved",
        "violations"
    );
    let row = |out: &mut String,
               name: &str,
               plan: &Plan,
               verdict: &Verdict,
               diff: Option<&PlanDiff>,
               changes: &str| {
        let m = &plan.draft.measure;
        let _ = writeln!(
            out,
            "{:<24} {:>6} {:>7} {:>10} {:>7} {:>14} {:>12.0} {:>7} {:>10}  {changes}",
            name,
            m.partitions.len(),
            diff.map_or("-".into(), |d| signed(d.delegate_calls)),
            m.delegated_nodes,
            m.states(),
            m.boundary_bytes(),
            plan.draft.estimate.total_us,
            diff.map_or("-".into(), |d| d.nodes_moved.len().to_string()),
            verdict.violations().count(),
        );
    };
    row(&mut out, "base", base.plan, base.verdict, None, "-");
    for a in answers {
        let changes: Vec<String> = a.changes.iter().map(Change::to_string).collect();
        row(
            &mut out,
            a.name,
            a.plan,
            a.verdict,
            Some(a.diff),
            &changes.join(" "),
        );
    }
    out
}

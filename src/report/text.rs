//! The terminal report: one line per buffer, one per partition, then the explanations.

use super::Prose;
use super::findings::{Explained, explain_all};
use super::reasons::{budget_text, cut_line};
use crate::analyse::Analysis;
use crate::graph::{Graph, NodeId};
use crate::manifest::ManifestDiff;
use crate::measure::{Measure, PartitionSummary};
use crate::outcome::{Plan, Verdict};
use crate::rules::Finding;
use crate::stock;
use std::fmt::Write;

fn list(graph: &Graph, ids: &[NodeId], most: usize) -> String {
    let shown: Vec<&str> = ids.iter().take(most).map(|&n| graph.name(n)).collect();
    let more = ids.len().saturating_sub(most);
    let mut out = if shown.is_empty() {
        "-".to_string()
    } else {
        shown.join(", ")
    };
    if more > 0 {
        let _ = write!(out, " (+{more} more)");
    }
    out
}

fn partition_line(out: &mut String, graph: &Graph, p: &PartitionSummary) {
    let states = if p.states.is_empty() {
        String::new()
    } else {
        format!(
            "  states ({} bytes): {}",
            p.state_bytes,
            p.states.join(", ")
        )
    };
    let unknown_size = if p.unsized_boundary_values > 0 {
        format!(" (+{} of unknown size)", p.unsized_boundary_values)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  {:<8} {:>6} nodes  in: {}  out: {}  boundary: {} bytes{unknown_size}  weights: {} bytes{states}",
        p.tag,
        p.nodes,
        list(graph, &p.inputs, 4),
        list(graph, &p.outputs, 4),
        p.boundary_bytes,
        p.weight_bytes
    );
}

fn finding_lines(out: &mut String, findings: &[Explained]) {
    for f in findings {
        let _ = writeln!(out, "  {}", f.to_string().replace('\n', "\n  "));
    }
}

/// `verdict` is the checker's, run on `plan` by the caller.
pub fn plan_text(graph: &Graph, analysis: &Analysis, plan: &Plan, verdict: &Verdict) -> String {
    let mut out = String::new();
    let o = &plan.options;
    let _ = writeln!(
        out,
        "plan for {} nodes: take_over_mutable_buffer={}, take_over_constant_data={}, minimum_deployment_target={}",
        graph.len(),
        o.take_over_mutable_buffer,
        o.take_over_constant_data,
        o.minimum_deployment_target
            .map_or("default".to_string(), |t| t.to_string())
    );
    let prose = Prose { graph, analysis };
    let _ = writeln!(out, "\nbuffers ({}):", plan.buffers.len());
    for (b, chain) in plan.buffers.iter().zip(&analysis.buffers) {
        let kind = match chain.kind {
            crate::analyse::MutationKind::Slice => "slice",
            crate::analyse::MutationKind::Whole => "whole",
        };
        let rule = b.rule.map_or(String::new(), |r| format!("[{r}] "));
        let _ = writeln!(
            out,
            "  {:<40} {:<5} [{kind}, {} nodes]  {rule}{}",
            b.buffer,
            b.strategy.as_str(),
            chain.chain.len(),
            prose.reason(b)
        );
    }
    let _ = writeln!(
        out,
        "\npartitions ({}; the stock proposal{} had {}):",
        plan.measure.partitions.len(),
        match plan.stock.source {
            stock::Source::Document => "",
            stock::Source::Reproduced(_) => ", reproduced,",
        },
        plan.stock.tagging.partition_count()
    );
    for p in &plan.measure.partitions {
        partition_line(&mut out, graph, p);
    }
    if !plan.cuts.is_empty() {
        let _ = writeln!(
            out,
            "\ncuts ({}; budgets: {}):",
            plan.cuts.len(),
            budget_text(o)
        );
        for c in &plan.cuts {
            let _ = writeln!(out, "  {}", cut_line(graph, &plan.tagging, c));
        }
    }
    // A buffer's decision is already its line above; what adds to it is a path or a finding.
    let explained: Vec<Explained> = prose
        .decisions(plan)
        .into_iter()
        .filter(|d| d.buffer.is_none() || !d.path.is_empty())
        .chain(explain_all(graph, &verdict.plan))
        .collect();
    if !explained.is_empty() {
        let _ = writeln!(out, "\nexplanations:");
        finding_lines(&mut out, &explained);
    }
    if !verdict.stock.is_empty() {
        let _ = writeln!(out, "\nthe stock proposal breaks:");
        finding_lines(&mut out, &explain_all(graph, &verdict.stock));
    }
    let m = &plan.measure;
    let _ = writeln!(
        out,
        "\n{} of {} nodes delegated in {} partition(s), {} state(s), {} boundary bytes, {} bytes of constant copies",
        m.delegated_nodes,
        graph.len(),
        m.partitions.len(),
        m.states(),
        m.boundary_bytes(),
        m.constant_copy_bytes()
    );
    let c = &plan.cost;
    let _ = writeln!(
        out,
        "estimated per step: {}; the stock proposal: {} (a model with call_overhead_us={}, bytes_per_us={}, cpu_op_us={}, not a device measurement)",
        plan.estimate, plan.stock.estimate, c.call_overhead_us, c.bytes_per_us, c.cpu_op_us
    );
    out
}

pub fn check_text(
    graph: &Graph,
    reproduced: Option<stock::ExecutorchVersion>,
    measure: &Measure,
    found: &[Finding],
) -> String {
    let mut out = String::new();
    if let Some(version) = reproduced {
        let _ = writeln!(
            out,
            "the stock proposal of executorch {}'s CoreMLPartitioner, reproduced\n",
            version.as_str()
        );
    }
    let _ = writeln!(out, "partitions ({}):", measure.partitions.len());
    for p in &measure.partitions {
        partition_line(&mut out, graph, p);
    }
    let violations = found.iter().filter(|f| f.is_violation()).count();
    if !found.is_empty() {
        let _ = writeln!(out, "\nfindings:");
        finding_lines(&mut out, &explain_all(graph, found));
    }
    let _ = writeln!(
        out,
        "\n{}",
        if violations == 0 {
            "ok: no rule is broken".to_string()
        } else {
            format!("{violations} rule violation(s)")
        }
    );
    out
}

/// What a cache must drop and compile, one line per entry.
pub fn manifest_diff_text(d: &ManifestDiff) -> String {
    let mut out = String::new();
    for (verb, entries) in [("drop", &d.drop), ("add", &d.add)] {
        for e in entries {
            let states = if e.states.is_empty() {
                String::new()
            } else {
                format!(", states: {}", e.states.join(", "))
            };
            let _ = writeln!(
                out,
                "{verb:<5} {}  {} ({} nodes, {} inputs, {} outputs{states})",
                e.key,
                e.tag,
                e.nodes,
                e.inputs.len(),
                e.outputs.len()
            );
        }
    }
    let _ = writeln!(
        out,
        "{} to drop, {} to compile, {} kept",
        d.drop.len(),
        d.add.len(),
        d.keep.len()
    );
    out
}

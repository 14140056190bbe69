//! The terminal report: one line per buffer, one per partition, then the explanations grouped by
//! rule, each part as long as [`Shown`] allows, and a summary at the end.

use super::Prose;
use super::findings::{Explained, explain_all};
use super::reasons::{budget_text, cut_line};
use crate::analyse::Analysis;
use crate::graph::{Graph, NodeId};
use crate::human::{count, human_bytes};
use crate::manifest::ManifestDiff;
use crate::measure::{Measure, PartitionSummary};
use crate::outcome::{Plan, Verdict};
use crate::rules::{Finding, FindingKind, RuleId};
use crate::stock;
use std::fmt::Write;

/// How much of a text report to show: everything (the library's reports, `-v`), lists cut short
/// (the CLI's default), or the summary alone (`-q`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shown {
    /// The summary at the end alone.
    pub quiet: bool,
    /// At most this many lines of each list (buffers, partitions, cuts); `None` for all.
    pub rows: Option<usize>,
    /// At most this many findings of each rule; `None` for all.
    pub findings_per_rule: Option<usize>,
}

impl Shown {
    /// Every line.
    pub const ALL: Shown = Shown {
        quiet: false,
        rows: None,
        findings_per_rule: None,
    };

    /// The lines of a list that are shown, and how many are not.
    pub(super) fn rows<'a, T>(&self, items: &'a [T]) -> (&'a [T], usize) {
        let shown = self.rows.map_or(items.len(), |m| m.min(items.len()));
        (&items[..shown], items.len() - shown)
    }
}

impl Default for Shown {
    fn default() -> Self {
        Shown::ALL
    }
}

/// `  … and 12 more partitions`, when some were left out: `noun` for one, `plural` for more.
pub(super) fn more(out: &mut String, left_out: usize, noun: &str, plural: &str) {
    if left_out > 0 {
        let what = if left_out == 1 { noun } else { plural };
        let _ = writeln!(out, "  … and {left_out} more {what}");
    }
}

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
    let unknown = |n: usize| {
        if n > 0 {
            format!(" (+{n} of unknown size)")
        } else {
            String::new()
        }
    };
    let states = if p.states.is_empty() {
        String::new()
    } else {
        format!(
            "  states ({}{}): {}",
            human_bytes(p.state_bytes),
            unknown(p.unsized_states),
            p.states.join(", ")
        )
    };
    let (unknown_size, unknown_weights) = (
        unknown(p.unsized_boundary_values),
        unknown(p.unsized_weights),
    );
    let _ = writeln!(
        out,
        "  {:<8} {:>12}  in: {}  out: {}  boundary: {}{unknown_size}  weights: {}{unknown_weights}{states}",
        p.tag,
        count(p.nodes, "node", "nodes"),
        list(graph, &p.inputs, 4),
        list(graph, &p.outputs, 4),
        human_bytes(p.boundary_bytes),
        human_bytes(p.weight_bytes)
    );
}

fn partition_lines(
    out: &mut String,
    graph: &Graph,
    partitions: &[PartitionSummary],
    shown: &Shown,
) {
    let (rows, left_out) = shown.rows(partitions);
    for p in rows {
        partition_line(out, graph, p);
    }
    more(out, left_out, "partition", "partitions");
}

/// How many findings each rule has, rules in order of their first finding.
fn by_rule<'a>(findings: impl IntoIterator<Item = &'a Explained>) -> Vec<(RuleId, usize)> {
    let mut counts: Vec<(RuleId, usize)> = Vec::new();
    for f in findings {
        match counts.iter_mut().find(|(rule, _)| *rule == f.rule) {
            Some((_, n)) => *n += 1,
            None => counts.push((f.rule, 1)),
        }
    }
    counts
}

/// `3 NO_STALE_COPY, 1 ACYCLIC`.
fn counts_text(counts: &[(RuleId, usize)]) -> String {
    let counts: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    counts.join(", ")
}

/// `heading: 3 NO_STALE_COPY, 1 ACYCLIC`, then each rule's findings, as many as `shown` allows.
fn finding_lines(out: &mut String, heading: &str, findings: &[Explained], shown: &Shown) {
    let counts = by_rule(findings);
    let _ = writeln!(out, "\n{heading}: {}", counts_text(&counts));
    for (rule, total) in counts {
        let of_rule = findings.iter().filter(|f| f.rule == rule);
        let most = shown.findings_per_rule.unwrap_or(usize::MAX);
        for f in of_rule.take(most) {
            let _ = writeln!(out, "  {}", f.to_string().replace('\n', "\n  "));
        }
        let tag = format!("[{rule}]");
        more(out, total.saturating_sub(most), &tag, &tag);
    }
}

/// `verdict` is the checker's, run on `plan` by the caller.
pub fn plan_text(
    graph: &Graph,
    analysis: &Analysis,
    plan: &Plan,
    verdict: &Verdict,
    shown: &Shown,
) -> String {
    let mut out = String::new();
    if !shown.quiet {
        plan_sections(&mut out, graph, analysis, plan, verdict, shown);
    }
    plan_summary(&mut out, graph, plan);
    out
}

fn plan_sections(
    out: &mut String,
    graph: &Graph,
    analysis: &Analysis,
    plan: &Plan,
    verdict: &Verdict,
    shown: &Shown,
) {
    let o = &plan.draft.options;
    let _ = writeln!(
        out,
        "plan for {}: take_over_mutable_buffer={}, take_over_constant_data={}, minimum_deployment_target={}",
        count(graph.len(), "node", "nodes"),
        o.take_over_mutable_buffer,
        o.take_over_constant_data,
        o.minimum_deployment_target
            .map_or("default".to_string(), |t| t.to_string())
    );
    let prose = Prose { graph, analysis };
    let _ = writeln!(out, "\nbuffers ({}):", plan.draft.buffers.len());
    let (buffers, buffers_left_out) = shown.rows(&plan.draft.buffers);
    for (b, chain) in buffers.iter().zip(&analysis.buffers) {
        let kind = match chain.kind {
            crate::analyse::MutationKind::Slice => "slice",
            crate::analyse::MutationKind::Whole => "whole",
        };
        let rule = b.rule.map_or(String::new(), |r| format!("[{r}] "));
        let _ = writeln!(
            out,
            "  {:<40} {:<5} [{kind}, {}]  {rule}{}",
            b.buffer,
            b.strategy.as_str(),
            count(chain.chain.len(), "node", "nodes"),
            prose.reason(b)
        );
    }
    more(out, buffers_left_out, "buffer", "buffers");
    let _ = writeln!(
        out,
        "\npartitions ({}; the stock proposal{} had {}):",
        plan.draft.measure.partitions.len(),
        match plan.stock.source {
            stock::Source::Document => "",
            stock::Source::Reproduced(_) => ", reproduced,",
        },
        plan.stock.tagging.partition_count()
    );
    partition_lines(out, graph, &plan.draft.measure.partitions, shown);
    if !plan.draft.cuts.is_empty() {
        let _ = writeln!(
            out,
            "\ncuts ({}; budgets: {}):",
            plan.draft.cuts.len(),
            budget_text(o)
        );
        let (cuts, left_out) = shown.rows(&plan.draft.cuts);
        for c in cuts {
            let _ = writeln!(out, "  {}", cut_line(graph, &plan.draft.tagging, c));
        }
        more(out, left_out, "cut", "cuts");
    }
    // A buffer's decision is already its line above; what adds to it is a path or a finding.
    let explained: Vec<Explained> = prose
        .decisions(&plan.draft)
        .into_iter()
        .filter(|d| d.buffer.is_none() || !d.path.is_empty())
        .chain(explain_all(graph, &verdict.plan))
        .collect();
    if !explained.is_empty() {
        finding_lines(out, "explanations", &explained, shown);
    }
    if !verdict.stock.is_empty() {
        let stock = explain_all(graph, &verdict.stock);
        finding_lines(out, "the stock proposal breaks", &stock, shown);
    }
    out.push('\n');
}

/// The plan in two lines: what is delegated, and what the cost model makes of it and of stock.
fn plan_summary(out: &mut String, graph: &Graph, plan: &Plan) {
    let m = &plan.draft.measure;
    let _ = writeln!(
        out,
        "{} of {} delegated in {}, {}, {} crossing, {} of constant copies",
        m.delegated_nodes,
        count(graph.len(), "node", "nodes"),
        count(m.partitions.len(), "partition", "partitions"),
        count(m.states(), "state", "states"),
        human_bytes(m.boundary_bytes()),
        human_bytes(m.constant_copy_bytes())
    );
    let c = &plan.draft.cost;
    let _ = writeln!(
        out,
        "estimated per step: {}; the stock proposal: {} (a model with call_overhead_us={}, bytes_per_us={}, cpu_op_us={}, not a device measurement)",
        plan.draft.estimate, plan.stock.estimate, c.call_overhead_us, c.bytes_per_us, c.cpu_op_us
    );
}

pub fn check_text(
    graph: &Graph,
    reproduced: Option<stock::ExecutorchVersion>,
    measure: &Measure,
    found: &[Finding],
    shown: &Shown,
) -> String {
    let mut out = String::new();
    let explained = explain_all(graph, found);
    if !shown.quiet {
        if let Some(version) = reproduced {
            let _ = writeln!(
                out,
                "the stock proposal of executorch {}'s CoreMLPartitioner, reproduced\n",
                version.as_str()
            );
        }
        let _ = writeln!(out, "partitions ({}):", measure.partitions.len());
        partition_lines(&mut out, graph, &measure.partitions, shown);
        if !explained.is_empty() {
            finding_lines(&mut out, "findings", &explained, shown);
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{}", verdict_line(&explained));
    out
}

/// `ok: no rule is broken`, or `2 rule violations: 1 ACYCLIC, 1 NO_STALE_COPY`: what a check
/// comes to, in one line (the last of `check`'s report; what `render --plan` says of a plan).
pub fn verdict_line<'a>(findings: impl IntoIterator<Item = &'a Explained>) -> String {
    let counts = by_rule(
        findings
            .into_iter()
            .filter(|f| f.kind == FindingKind::Violation),
    );
    let violations: usize = counts.iter().map(|(_, n)| n).sum();
    if violations == 0 {
        return "ok: no rule is broken".to_string();
    }
    format!(
        "{}: {}",
        count(violations, "rule violation", "rule violations"),
        counts_text(&counts)
    )
}

/// One warning for each of the first `most` nodes whose value has a dtype but no size (budgets and
/// weights leave them out), then how many more there are: what the CLI and the Python partitioner
/// both warn of.
pub fn unsized_warnings(graph: &Graph, most: usize) -> Vec<String> {
    let values = &graph.unsized_values;
    let mut warnings: Vec<String> = (values.iter().take(most))
        .map(|(node, why)| {
            format!(
                "node {:?}: {why}; its size counts as unknown (budgets and weights leave it out)",
                graph.name(*node)
            )
        })
        .collect();
    if values.len() > most {
        let more = values.len() - most;
        warnings.push(format!("… and {more} more nodes of unknown size"));
    }
    warnings
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
                "{verb:<5} {}  {} ({}, {}, {}{states})",
                e.key,
                e.tag,
                count(e.nodes, "node", "nodes"),
                count(e.inputs.len(), "input", "inputs"),
                count(e.outputs.len(), "output", "outputs")
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

//! The partition map as one self-contained HTML page: no network, no CDN, opens from `file://`.
//! The overviews (plan and stock side by side), the buffers and the findings are written here as
//! elements; the nodes behind them travel as one JSON document in the page, read by the page's
//! script (`page.js`) for the drill-down and the highlighting, and for the arcs between boxes.
//!
//! The DOM contract tests and tools rely on: every plan partition is an element with
//! `data-partition="TAG"` (the stock side's boxes carry `data-stock-partition` instead, so that
//! `[data-partition]` counts the plan's partitions); every buffer carries `data-buffer="NAME"
//! data-strategy="…"`; every finding carries `data-rule="RULE_ID"`. A node the page marks carries
//! `data-node="NAME"` and the class of the mark (`on-path`, `chain`, `reader`).

use super::{BoxKind, Map, View, human_bytes};
use crate::graph::{Dim, OpKind};
use serde::Serialize;
use std::fmt::Write;

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// The page for `map`, titled after the model the document records (or its file).
pub fn html(map: &Map<'_>, title: &str) -> String {
    let mut page = String::with_capacity(map.graph.len() * 120 + 65_536);
    let _ = write!(
        page,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <link rel=\"icon\" href=\"data:,\">\
         <title>partition map: {}</title><style>{STYLE}</style></head><body>\n",
        escape(title)
    );
    header(&mut page, map, title);
    page.push_str("<main><section class=\"views\">\n");
    view(&mut page, map, &map.plan);
    view(&mut page, map, &map.stock);
    page.push_str(
        "</section><aside id=\"details\"><h2>Details</h2><div id=\"panel\">\
         <p class=\"hint\">Click a box to see its nodes, a buffer to see its chain and readers, \
         a finding to see the path or node behind it.</p></div></aside></main>\n",
    );
    buffers(&mut page, map);
    findings(&mut page, map);
    page.push_str("<script type=\"application/json\" id=\"map-data\">");
    // `</` would end the script element early; JSON allows `<\/` for it.
    page.push_str(&data(map).replace("</", "<\\/"));
    let _ = write!(
        page,
        "</script>\n<script>{SCRIPT}</script>\n</body></html>\n"
    );
    page
}

fn header(page: &mut String, map: &Map<'_>, title: &str) {
    let side = |view: &View, estimate: &crate::cost::CostEstimate| {
        let states: usize = view.boxes.iter().map(|b| b.states.len()).sum();
        format!(
            "{} delegate call{}, {} state{}, {} crossing, {} op{} on CPU, about {:.0} µs a step",
            view.partitions,
            plural(view.partitions),
            states,
            plural(states),
            human_bytes(estimate.boundary_bytes),
            estimate.cpu_ops,
            plural(estimate.cpu_ops),
            estimate.total_us
        )
    };
    let _ = writeln!(
        page,
        "<header><h1>Partition map: {}</h1><dl class=\"summary\">\
         <dt>plan</dt><dd id=\"plan-summary\">{}</dd>\
         <dt>stock ({})</dt><dd id=\"stock-summary\">{}</dd>\
         <dt>graph</dt><dd>{} nodes, {} mutable buffer{}</dd></dl>\
         <form id=\"find\"><label>Find a node: <input id=\"find-node\" list=\"node-names\" \
         size=\"40\" placeholder=\"an FX node name\"></label> <button type=\"submit\">find</button></form>\
         <datalist id=\"node-names\"></datalist></header>",
        escape(title),
        side(&map.plan, &map.plan_estimate),
        map.stock_source,
        side(&map.stock, &map.stock_estimate),
        map.graph.len(),
        map.buffers.len(),
        plural(map.buffers.len()),
    );
}

/// One side's overview: its boxes in topological order, repeats folded.
fn view(page: &mut String, map: &Map<'_>, view: &View) {
    let side = view.side.as_str();
    let heading = match view.side {
        super::Side::Plan => "Plan",
        super::Side::Stock => "Stock proposal",
    };
    let _ = writeln!(
        page,
        "<div class=\"view\" id=\"{side}-view\" data-side=\"{side}\"><h2>{heading} \
         <small>{} partition{}, {} CPU segment{}</small></h2><div class=\"lane\">\
         <svg class=\"arcs\" aria-hidden=\"true\"></svg><div class=\"boxes\">",
        view.partitions,
        plural(view.partitions),
        view.boxes.len() - view.partitions.min(view.boxes.len()),
        plural(view.boxes.len() - view.partitions.min(view.boxes.len())),
    );
    let mut outgoing: Vec<Vec<&super::MapEdge>> = vec![Vec::new(); view.boxes.len()];
    for e in &view.edges {
        outgoing[e.from as usize].push(e);
    }
    let mut b = 0;
    while b < view.boxes.len() {
        match view.runs.iter().find(|r| r.start == b) {
            Some(run) => {
                let _ = writeln!(
                    page,
                    "<div class=\"run folded\" data-period=\"{}\" data-repeats=\"{}\">\
                     <button class=\"unfold\" type=\"button\">{}</button>",
                    run.period,
                    run.repeats,
                    folded_label(run.period, run.repeats)
                );
                for i in b..b + run.period * run.repeats {
                    map_box(page, map, view, i, &outgoing, i >= b + run.period);
                }
                page.push_str("</div>\n");
                b += run.period * run.repeats;
            }
            None => {
                map_box(page, map, view, b, &outgoing, false);
                b += 1;
            }
        }
    }
    page.push_str("</div></div></div>\n");
}

fn map_box(
    page: &mut String,
    map: &Map<'_>,
    view: &View,
    index: usize,
    outgoing: &[Vec<&super::MapEdge>],
    repeat: bool,
) {
    let b = &view.boxes[index];
    let outgoing = &outgoing[index];
    let attribute = match (&b.kind, view.side) {
        (BoxKind::Delegate(tag), super::Side::Plan) => {
            format!(" data-partition=\"{}\"", escape(tag))
        }
        (BoxKind::Delegate(tag), super::Side::Stock) => {
            format!(" data-stock-partition=\"{}\"", escape(tag))
        }
        (BoxKind::Cpu, _) => " data-segment=\"cpu\"".to_string(),
    };
    let kind = match b.kind {
        BoxKind::Delegate(_) => "delegate",
        BoxKind::Cpu => "cpu",
    };
    let label = match &b.kind {
        BoxKind::Delegate(tag) => escape(tag),
        BoxKind::Cpu => "CPU".to_string(),
    };
    // Named by its first op: its weights come first in FX order but say less.
    let graph = map.graph;
    let first = (b.nodes.iter())
        .find(|&&n| graph.op(n) == OpKind::CallFunction)
        .or(b.nodes.first())
        .map_or("", |&n| graph.name(n));
    let _ = write!(
        page,
        "<div class=\"box {kind}{}\" tabindex=\"0\" data-box=\"{index}\"{attribute}>\
         <span class=\"label\">{label}</span> <span class=\"size\">{} op{} from {}</span>",
        if repeat { " repeat" } else { "" },
        b.ops,
        plural(b.ops),
        escape(first),
    );
    if b.weight_bytes > 0 {
        let _ = write!(
            page,
            "<span class=\"weights\">{} of weights</span>",
            escape(&human_bytes(b.weight_bytes))
        );
    }
    if !b.states.is_empty() {
        // A box with hundreds of states names a few; the panel lists its nodes.
        const NAMED: usize = 6;
        let named: Vec<&str> = b.states.iter().take(NAMED).map(String::as_str).collect();
        let more = b.states.len().saturating_sub(NAMED);
        let _ = write!(
            page,
            "<span class=\"states\">{} state{}: {}{}</span>",
            b.states.len(),
            plural(b.states.len()),
            escape(&named.join(", ")),
            if more > 0 {
                format!(", and {more} more")
            } else {
                String::new()
            }
        );
    }
    if !outgoing.is_empty() {
        page.push_str("<span class=\"out\">");
        for (i, e) in outgoing.iter().take(4).enumerate() {
            let to = &view.boxes[e.to as usize];
            let _ = write!(
                page,
                "{}→ {} #{} {}",
                if i > 0 { ", " } else { "" },
                escape(to.tag()),
                e.to,
                human_bytes(e.bytes)
            );
        }
        if outgoing.len() > 4 {
            let _ = write!(page, ", {} more", outgoing.len() - 4);
        }
        page.push_str("</span>");
    }
    page.push_str("</div>\n");
}

fn buffers(page: &mut String, map: &Map<'_>) {
    page.push_str(
        "<section id=\"buffers\"><h2>Mutable buffers</h2>\
         <table><thead><tr><th>buffer</th><th>strategy</th><th>partition</th><th>why</th></tr></thead><tbody>\n",
    );
    for (i, b) in map.buffers.iter().enumerate() {
        let strategy = b.strategy.as_str();
        let _ = writeln!(
            page,
            "<tr class=\"buffer\" tabindex=\"0\" data-index=\"{i}\" data-buffer=\"{}\" data-strategy=\"{strategy}\">\
             <td>{}</td><td class=\"strategy {strategy}\">{strategy}</td><td>{}</td><td>{}</td></tr>",
            escape(&b.name),
            escape(&b.name),
            escape(b.partition.as_deref().unwrap_or("—")),
            escape(&b.reason),
        );
    }
    page.push_str("</tbody></table></section>\n");
}

fn findings(page: &mut String, map: &Map<'_>) {
    page.push_str("<section id=\"findings\"><h2>Findings</h2>");
    for side in [super::Side::Plan, super::Side::Stock] {
        let heading = match side {
            super::Side::Plan => "On the plan",
            super::Side::Stock => "On the stock proposal",
        };
        let of_side: Vec<(usize, &super::MapFinding)> = (map.findings.iter().enumerate())
            .filter(|(_, f)| f.side == side)
            .collect();
        let _ = writeln!(
            page,
            "<h3>{heading} <small>{}</small></h3><ul class=\"findings\" data-side=\"{}\">",
            of_side.len(),
            side.as_str()
        );
        for (i, f) in of_side {
            let e = &f.explained;
            let _ = writeln!(
                page,
                "<li class=\"finding {}\" tabindex=\"0\" data-index=\"{i}\" data-side=\"{}\" data-rule=\"{}\">\
                 <b>{}</b> {}</li>",
                kind_class(e.kind),
                side.as_str(),
                e.rule,
                e.rule,
                escape(&e.message)
            );
        }
        page.push_str("</ul>\n");
    }
    page.push_str("</section>\n");
}

fn kind_class(kind: crate::rules::FindingKind) -> &'static str {
    match kind {
        crate::rules::FindingKind::Violation => "violation",
        crate::rules::FindingKind::Cost => "cost",
        crate::rules::FindingKind::Decision => "decision",
    }
}

/// What the page's script reads: nodes by index, each side's boxes, the buffers and findings.
#[derive(Serialize)]
struct Data<'a> {
    /// `[name, op or target, shape, dtype, supported]` per node.
    nodes: Vec<(&'a str, &'a str, String, &'a str, bool)>,
    views: [ViewData; 2],
    buffers: Vec<BufferData<'a>>,
    findings: Vec<FindingData<'a>>,
}

#[derive(Serialize)]
struct ViewData {
    side: &'static str,
    /// Each box's nodes, by index.
    boxes: Vec<Vec<u32>>,
    /// Each box's label.
    labels: Vec<String>,
    /// `[from, to, bytes]` per edge.
    edges: Vec<(u32, u32, u64)>,
    /// `[start, period, repeats]` per run.
    runs: Vec<(usize, usize, usize)>,
    /// Each node's box, -1 for none.
    box_of: Vec<i64>,
}

#[derive(Serialize)]
struct BufferData<'a> {
    name: &'a str,
    strategy: &'static str,
    partition: Option<&'a str>,
    reason: &'a str,
    chain: Vec<u32>,
    readers: Vec<u32>,
}

#[derive(Serialize)]
struct FindingData<'a> {
    side: &'static str,
    rule: String,
    message: &'a str,
    marks: Vec<u32>,
}

fn data(map: &Map<'_>) -> String {
    let graph = map.graph;
    let nodes = graph
        .nodes
        .iter()
        .map(|n| {
            let op = match n.op {
                OpKind::CallFunction => &*n.target,
                OpKind::Placeholder => "placeholder",
                OpKind::GetAttr => "get_attr",
                OpKind::Output => "output",
            };
            (
                n.name.as_str(),
                op,
                shape(n.meta.shape.as_deref()),
                n.meta.dtype.as_deref().unwrap_or(""),
                n.supported,
            )
        })
        .collect();
    let view_data = |view: &View| ViewData {
        side: view.side.as_str(),
        boxes: (view.boxes.iter())
            .map(|b| b.nodes.iter().map(|n| n.0).collect())
            .collect(),
        labels: view.boxes.iter().map(|b| b.tag().to_string()).collect(),
        edges: (view.edges.iter())
            .map(|e| (e.from, e.to, e.bytes))
            .collect(),
        runs: (view.runs.iter())
            .map(|r| (r.start, r.period, r.repeats))
            .collect(),
        box_of: (view.box_of.iter())
            .map(|b| b.map_or(-1, i64::from))
            .collect(),
    };
    let data = Data {
        nodes,
        views: [view_data(&map.plan), view_data(&map.stock)],
        buffers: (map.buffers.iter())
            .map(|b| BufferData {
                name: &b.name,
                strategy: b.strategy.as_str(),
                partition: b.partition.as_deref(),
                reason: &b.reason,
                chain: b.chain.iter().map(|n| n.0).collect(),
                readers: b.readers.iter().map(|n| n.0).collect(),
            })
            .collect(),
        findings: (map.findings.iter())
            .map(|f| FindingData {
                side: f.side.as_str(),
                rule: f.explained.rule.to_string(),
                message: &f.explained.message,
                marks: f.marks.iter().map(|n| n.0).collect(),
            })
            .collect(),
    };
    serde_json::to_string(&data).unwrap_or_else(|_| "{}".into())
}

/// `1x8x64`, symbolic sizes by name; empty when unknown.
fn shape(dims: Option<&[Dim]>) -> String {
    let Some(dims) = dims else {
        return String::new();
    };
    let parts: Vec<String> = dims
        .iter()
        .map(|d| match d {
            Dim::Static(v) => v.to_string(),
            Dim::Symbolic(s) => s.clone(),
        })
        .collect();
    parts.join("×")
}

/// The label of a folded run's button (the page's script writes the same).
fn folded_label(period: usize, repeats: usize) -> String {
    let what = if period == 1 {
        "1 box"
    } else {
        &format!("{period} boxes")
    };
    format!("{what} repeated ×{repeats}: show all")
}

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Text for an HTML element or a quoted attribute.
pub(super) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

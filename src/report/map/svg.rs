//! The overviews as one static SVG, for docs and issues: the plan and the stock proposal side by
//! side, each a column of boxes in topological order (repeats folded, as on the page) with the
//! edges drawn as arcs beside the column, thicker for more bytes. The layout is this fixed column,
//! not a general graph layout: Graphviz and layout-rs take minutes on a 10^5-node graph's overview
//! where this is linear (docs/pictures.md has the measurements).

use super::html::{escape, plural};
use super::{BoxKind, Map, Side, View, human_bytes};
use std::collections::BTreeMap;
use std::fmt::Write;

const BOX_WIDTH: usize = 300;
const BOX_HEIGHT: usize = 38;
const GAP: usize = 8;
const ARC_ROOM: usize = 110;
const COLUMN: usize = BOX_WIDTH + ARC_ROOM + 40;
const TOP: usize = 64;

pub fn svg(map: &Map<'_>, title: &str) -> String {
    let shown = |view: &View| {
        (0..view.boxes.len())
            .filter(|&b| view.shown_as(b) == b)
            .count()
    };
    let rows = shown(&map.plan).max(shown(&map.stock));
    let height = TOP + rows * (BOX_HEIGHT + GAP) + 20;
    let width = 2 * COLUMN + 20;
    let mut out = String::with_capacity(4096 + rows * 800);
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n\
         <text x=\"20\" y=\"24\" font-size=\"16\" font-weight=\"bold\">partition map: {}</text>\n",
        escape(title)
    );
    for (column, view) in [&map.plan, &map.stock].into_iter().enumerate() {
        draw_view(&mut out, view, 20 + column * COLUMN);
    }
    out.push_str("</svg>\n");
    out
}

fn draw_view(out: &mut String, view: &View, x: usize) {
    let heading = view.side.heading();
    let _ = writeln!(
        out,
        "<text x=\"{x}\" y=\"48\" font-size=\"13\" font-weight=\"bold\">{heading}: {} partition{}</text>",
        view.partitions,
        plural(view.partitions)
    );
    // Rows of the boxes drawn, in order.
    let mut row: BTreeMap<usize, usize> = BTreeMap::new();
    for b in 0..view.boxes.len() {
        if view.shown_as(b) == b {
            let next = row.len();
            row.insert(b, next);
        }
    }
    let center = |b: usize| TOP + row[&b] * (BOX_HEIGHT + GAP) + BOX_HEIGHT / 2;
    // Arcs first, under the boxes: one per pair of boxes drawn, bytes summed.
    let arcs = view.folded_edges();
    let right = x + BOX_WIDTH;
    for ((from, to), bytes) in arcs {
        let (y1, y2) = (center(from), center(to));
        let bend = right + (8 + y1.abs_diff(y2) / 12).min(ARC_ROOM - 6);
        let stroke = ((bytes as f64 + 1.0).log10() - 2.0).clamp(1.0, 6.0);
        let _ = writeln!(
            out,
            "<path d=\"M{right} {y1} C {bend} {y1}, {bend} {y2}, {right} {y2}\" fill=\"none\" \
             stroke=\"#718096\" stroke-opacity=\"0.55\" stroke-width=\"{stroke:.1}\">\
             <title>#{from} → #{to}: {}</title></path>",
            human_bytes(bytes)
        );
    }
    for (&b, &r) in &row {
        let mapbox = &view.boxes[b];
        let y = TOP + r * (BOX_HEIGHT + GAP);
        let (fill, stroke, label, attribute) = match (&mapbox.kind, view.side) {
            (BoxKind::Delegate(tag), Side::Plan) => (
                "#dcecff",
                "#2b6cb0",
                tag.as_str(),
                format!(" data-partition=\"{}\"", escape(tag)),
            ),
            (BoxKind::Delegate(tag), Side::Stock) => (
                "#dcecff",
                "#2b6cb0",
                tag.as_str(),
                format!(" data-stock-partition=\"{}\"", escape(tag)),
            ),
            (BoxKind::Cpu, _) => ("#f1f1f1", "#8a8a8a", "CPU", String::new()),
        };
        let mut detail = format!("{} ops", mapbox.ops);
        if mapbox.weight_bytes > 0 {
            let _ = write!(detail, ", {} of weights", human_bytes(mapbox.weight_bytes));
        }
        if !mapbox.states.is_empty() {
            let _ = write!(detail, ", {} states", mapbox.states.len());
        }
        if let Some((run, _)) = view.run_of(b) {
            let _ = write!(
                detail,
                ", ×{} (boxes #{}–#{} repeat)",
                run.repeats,
                run.start,
                run.start + run.period * run.repeats - 1
            );
        }
        let _ = writeln!(
            out,
            "<g{attribute}><rect x=\"{x}\" y=\"{y}\" width=\"{BOX_WIDTH}\" height=\"{BOX_HEIGHT}\" rx=\"4\" \
             fill=\"{fill}\" stroke=\"{stroke}\"/><text x=\"{}\" y=\"{}\" font-weight=\"bold\">{} \
             <tspan font-weight=\"normal\" fill=\"#4a5568\">#{b}</tspan></text>\
             <text x=\"{}\" y=\"{}\" fill=\"#4a5568\">{}</text></g>",
            x + 6,
            y + 15,
            escape(label),
            x + 6,
            y + 30,
            escape(&detail)
        );
    }
}

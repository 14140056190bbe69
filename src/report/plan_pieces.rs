//! The `plan@1` document's pretty text written in pieces, to the byte what serde writes for the
//! whole (`json.rs`): the members that depend on the draft alone (most of a large plan's text) are
//! written on the planner's side while the stock side is still at work. Measured against writing
//! the whole document with serde after the run (2026-12-07, `plan --format json` whole processes,
//! 15 pairs each): serde alone took 1.13× the wall time at 10^6 nodes and 1.12× at 10^5, the same
//! CPU time; the pieces gain by writing on the second core. A hand-written `node_tags` writer was
//! measured too and dropped: within 1% of serde's.

use super::Prose;
use super::findings::explain_all;
use super::json::{MEMBERS, Member, PLAN_ALONE, PlanAlone, Scoped, plan_json, scoped};
use crate::analyse::Analysis;
use crate::graph::Graph;
use crate::outcome::{Plan, Verdict};
use crate::plan::Draft;
use crate::rules::Finding;
use serde::Serialize;
use std::ops::Range;

/// A plan document's pretty JSON, as `serde_json::to_string_pretty(&plan_json(..))` writes it,
/// kept in the pieces it was written in and written out one after another: joining them would
/// copy most of a large plan once more.
#[derive(Default)]
pub struct PlanText {
    /// Each an object of some of the document's members, in order, written at the depth they
    /// have in the whole: `{\n  "key": value,\n  …\n}`.
    pieces: Vec<String>,
}

impl PlanText {
    /// The text, in parts to be written one after another: each piece without the braces that
    /// close it and open the next, and a comma between.
    pub fn parts(&self) -> impl Iterator<Item = &str> {
        let last = self.pieces.len().saturating_sub(1);
        self.pieces.iter().enumerate().flat_map(move |(i, piece)| {
            let from = if i == 0 { 0 } else { 2 };
            let to = if i == last {
                piece.len()
            } else {
                piece.len() - 2
            };
            let comma = if i == last { "" } else { ",\n" };
            [&piece[from..to], comma]
        })
    }

    /// The text's length in bytes.
    pub fn len(&self) -> usize {
        self.parts().map(str::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Display for PlanText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.parts().try_for_each(|part| f.write_str(part))
    }
}

/// What of the plan document a draft already has, written: the members in [`PLAN_ALONE`], and the
/// explanations of the planner's decisions and of the checker's findings on it. A caller can write
/// it while the stock side is still at work; [`plan_json_text`] writes the rest around it.
pub struct DraftJson {
    /// A piece of the document: an object of the [`PLAN_ALONE`] members.
    members: String,
    /// The plan's explanations, as the items of the `explanations` array at their depth (empty
    /// for none).
    explanations: String,
}

/// The part of the plan document that the draft `plan` and the checker's findings on it (`found`)
/// already say: see [`DraftJson`].
pub fn plan_alone_json(
    graph: &Graph,
    analysis: &Analysis,
    plan: &Draft,
    found: &[Finding],
) -> serde_json::Result<DraftJson> {
    let members = serde_json::to_string_pretty(&PlanAlone::of(graph, analysis, plan, PLAN_ALONE))?;
    let prose = Prose { graph, analysis };
    let explanations = explanation_items(
        scoped("plan", prose.decisions(plan)).chain(scoped("plan", explain_all(graph, found))),
    )?;
    Ok(DraftJson {
        members,
        explanations,
    })
}

/// `scoped`'s items as pretty JSON at the depth of the `explanations` array's items, without the
/// brackets around them: empty for none.
fn explanation_items(items: impl Iterator<Item = Scoped>) -> serde_json::Result<String> {
    /// A piece of the document holding the explanations alone (written, not built as a value).
    #[derive(Serialize)]
    struct Piece<'a> {
        explanations: &'a [Scoped],
    }
    let items: Vec<Scoped> = items.collect();
    let piece = serde_json::to_string_pretty(&Piece {
        explanations: &items,
    })?;
    Ok(piece
        .strip_prefix(EXPLANATIONS_OPEN)
        .and_then(|rest| rest.strip_suffix(EXPLANATIONS_CLOSE))
        .unwrap_or_default()
        .to_string())
}

/// How a piece holding the `explanations` member alone begins and ends when the array has items.
const EXPLANATIONS_OPEN: &str = "{\n  \"explanations\": [\n";
const EXPLANATIONS_CLOSE: &str = "\n  ]\n}";

/// The plan document's pretty text around `alone`, what [`plan_alone_json`] wrote for the draft
/// `plan` was made from and its findings (`verdict.plan`): the same text as
/// `serde_json::to_string_pretty(&plan_json(..))`.
pub fn plan_json_text(
    graph: &Graph,
    analysis: &Analysis,
    plan: &Plan,
    verdict: &Verdict,
    alone: DraftJson,
) -> serde_json::Result<PlanText> {
    let whole = plan_json(graph, analysis, plan, verdict);
    let piece = |members: Range<usize>| serde_json::to_string_pretty(&whole.only(members));
    let stock = explanation_items(scoped("stock", explain_all(graph, &verdict.stock)))?;
    let explanations = match (alone.explanations.is_empty(), stock.is_empty()) {
        (true, true) => "{\n  \"explanations\": []\n}".to_string(),
        (plan_none, stock_none) => {
            let between = if plan_none || stock_none { "" } else { ",\n" };
            [
                EXPLANATIONS_OPEN,
                &alone.explanations,
                between,
                &stock,
                EXPLANATIONS_CLOSE,
            ]
            .concat()
        }
    };
    let explanations_at = Member::Explanations as usize;
    Ok(PlanText {
        pieces: vec![
            piece(0..PLAN_ALONE.start)?,
            alone.members,
            explanations,
            piece(explanations_at + 1..MEMBERS)?,
        ],
    })
}

#[cfg(test)]
mod tests {
    use crate::api::{Overrides, plan_graph_json};
    use crate::fixtures::load;
    use crate::synthetic::BridgeBuilder;

    /// The text written in pieces, part of it from the draft, is serde's text of the whole
    /// document, whichever scopes have explanations: none, the plan's, the stock proposal's, both.
    #[test]
    fn the_pieces_are_the_whole_document_whoever_explains() {
        let graph = |tags: &[(&str, &str)], supported: bool| {
            let mut b = BridgeBuilder::new();
            b.user_input("x", &[1, 8])
                .op("a", "aten.relu.default", &["x"], supported)
                .op("b", "aten.sin.default", &["a"], false)
                .op("c", "aten.add.Tensor", &["b", "a"], supported)
                .output(&["c"]);
            for (node, tag) in tags {
                b.tag(node, Some(tag));
            }
            load(&b)
        };
        // A mutated buffer: the plan explains where its chain goes.
        let buffer = |tagged: bool, reads_output: bool| {
            let mut b = BridgeBuilder::new();
            b.buffer("b_cache", "cache", &[1, 16, 8])
                .user_input("x", &[1, 8])
                .op("mul", "aten.mul.Tensor", &["b_cache", "x"], true)
                .op(
                    "scatter",
                    "aten.slice_scatter.default",
                    &["b_cache", "mul"],
                    true,
                )
                .op("sin", "aten.sin.default", &["mul"], false)
                .op(
                    "add",
                    "aten.add.Tensor",
                    &[if reads_output { "sin" } else { "mul" }, "x"],
                    true,
                )
                .mutates("scatter", "cache")
                .output(&["add"]);
            if tagged {
                for node in ["b_cache", "mul", "scatter", "add"] {
                    b.tag(node, Some("tag0"));
                }
            }
            load(&b)
        };
        // Where states are allowed, the stock proposal of a whole chain breaks no rule.
        let ios18 = Overrides {
            options: crate::options::PartialOptions {
                minimum_deployment_target: Some(crate::options::DeploymentTarget::Ios18),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut scopes = Vec::new();
        for g in [
            // Nothing the backend runs: nothing to explain.
            graph(&[], false),
            // One partition around an op it cannot run: a cycle the stock proposal has.
            graph(&[("a", "tag0"), ("c", "tag0")], true),
            buffer(true, false),
            buffer(true, true),
            buffer(false, false),
        ] {
            let (planned, pieces) = plan_graph_json(g, &ios18).expect("plans");
            let whole = serde_json::to_string_pretty(&planned.json()).expect("writes");
            assert!(pieces.expect("writes").to_string() == whole);
            let said = |scope: &str| {
                let doc: serde_json::Value = serde_json::from_str(&whole).expect("json");
                (doc["explanations"].as_array().expect("array").iter()).any(|e| e["scope"] == scope)
            };
            scopes.push((said("plan"), said("stock")));
        }
        for both in [(false, false), (false, true), (true, false), (true, true)] {
            assert!(scopes.contains(&both), "{both:?} not among {scopes:?}");
        }
    }

    /// Node names serde escapes (quotes, backslashes, control characters) and names it writes as
    /// they are (other unicode, DEL) come out of the pieces as serde writes the whole.
    #[test]
    fn odd_node_names_come_out_of_the_pieces_as_serde_writes_them() {
        let names = [
            "plain",
            "quo\"te",
            "back\\slash",
            "new\nline",
            "bell\u{7}",
            "del\u{7f}",
            "caf\u{e9} \u{1F600}",
            "tab\t/slash",
        ];
        let mut b = BridgeBuilder::new();
        b.user_input(names[0], &[1, 8]);
        for pair in names.windows(2) {
            b.op(pair[1], "aten.relu.default", &[pair[0]], true);
        }
        b.op("cpu", "aten.sin.default", &[names[names.len() - 1]], false)
            .output(&["cpu"]);
        let (planned, pieces) = plan_graph_json(load(&b), &Overrides::default()).expect("plans");
        let whole = serde_json::to_string_pretty(&planned.json()).expect("writes");
        assert!(pieces.expect("writes").to_string() == whole);
        let doc: serde_json::Value = serde_json::from_str(&whole).expect("json");
        let tags = doc["node_tags"].as_object().expect("an object");
        assert_eq!(
            tags.keys().map(String::as_str).collect::<Vec<_>>()[..names.len()],
            names
        );
        assert!(tags["cpu"].is_null() && tags["plain"].is_null() && tags["del\u{7f}"].is_string());
    }
}

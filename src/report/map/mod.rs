//! The partition map: a plan and the stock proposal it replaces, each drawn as its quotient graph
//! (delegate partitions and CPU segments as boxes in topological order, edges carrying the bytes
//! that cross), with the mutable buffers' chains and the checker's findings. One value, built
//! once, that every picture is written from: the HTML page (`html.rs`), a static SVG (`svg.rs`),
//! Graphviz DOT (`dot.rs`) and Model Explorer's node data (`model_explorer.rs`).
//!
//! Repeated layers collapse: a run of boxes that repeats with a short period (an LLM's blocks,
//! each a delegate and a CPU island, say) is drawn once with its count, so a 7,000-node graph's
//! overview stays a few dozen boxes. Each box keeps its nodes, so nothing is lost by collapsing.

mod dot;
mod html;
mod model_explorer;
mod picture;
mod svg;

pub use dot::dot;
pub use html::html;
pub use model_explorer::{ModelExplorerOverlay, model_explorer};
pub use picture::{Picture, PictureFormat, picture};
pub use svg::svg;

use crate::analyse::{Analysis, BufferChain, GraphIndex};
use crate::cost::CostEstimate;
use crate::decision::Strategy;
use crate::graph::{Graph, NodeId, OpKind};
pub(crate) use crate::human::human_bytes;
use crate::outcome::{Plan, Verdict};
use crate::report::{Explained, Prose, explain};
use crate::rules::Finding;
use crate::tagging::Tagging;
use hashbrown::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

/// The longest period of repetition looked for: an LLM block is a handful of boxes.
const MAX_PERIOD: usize = 12;

pub struct Map<'g> {
    pub graph: &'g Graph,
    pub plan: View,
    pub stock: View,
    pub buffers: Vec<MapBuffer>,
    /// The checker's findings on the plan, then on the stock proposal.
    pub findings: Vec<MapFinding>,
    /// Where the stock proposal comes from: `document` or `reproduced`.
    pub stock_source: &'static str,
    /// The cost model's estimate of each side.
    pub plan_estimate: CostEstimate,
    pub stock_estimate: CostEstimate,
}

/// Which tagging a view or a finding belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Plan,
    Stock,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Plan => "plan",
            Side::Stock => "stock",
        }
    }

    /// What a picture calls the side.
    pub fn heading(self) -> &'static str {
        match self {
            Side::Plan => "plan",
            Side::Stock => "stock proposal",
        }
    }
}

/// One tagging's quotient graph.
pub struct View {
    pub side: Side,
    /// In topological order of their first node.
    pub boxes: Vec<MapBox>,
    pub edges: Vec<MapEdge>,
    /// Runs of boxes that repeat, in order, not overlapping.
    pub runs: Vec<Run>,
    /// Each node's box, `None` for placeholders and outputs left out of every partition.
    pub box_of: Vec<Option<u32>>,
    pub partitions: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoxKind {
    /// A delegate partition, by its tag.
    Delegate(String),
    /// Untagged compute nodes connected to each other: one CPU segment.
    Cpu,
}

pub struct MapBox {
    pub kind: BoxKind,
    /// Its nodes in topological order.
    pub nodes: Vec<NodeId>,
    /// `call_function` nodes among them.
    pub ops: usize,
    /// Buffers owned as Core ML states (placeholder and writer inside).
    pub states: Vec<String>,
    /// For a delegate partition, the bytes of the constant data baked into it (tagged into it or
    /// read by its ops, as executorch copies it); 0 for a CPU segment.
    pub weight_bytes: u64,
    /// What the box computes, for finding repeats: its kind and its operators in order.
    signature: u64,
}

impl MapBox {
    /// The tag, or `cpu`.
    pub fn tag(&self) -> &str {
        match &self.kind {
            BoxKind::Delegate(tag) => tag,
            BoxKind::Cpu => "cpu",
        }
    }
}

/// Values of one box read by another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapEdge {
    pub from: u32,
    pub to: u32,
    /// Distinct values crossing, and the bytes of those whose size is known.
    pub values: usize,
    pub bytes: u64,
}

/// Boxes `start..start + period * repeats` repeat the first `period` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub start: usize,
    pub period: usize,
    pub repeats: usize,
}

pub struct MapBuffer {
    pub name: String,
    pub strategy: Strategy,
    pub partition: Option<String>,
    pub reason: String,
    pub placeholder: NodeId,
    pub writer: NodeId,
    /// Placeholder to writer.
    pub chain: Vec<NodeId>,
    /// Nodes reading the old value, an intermediate or the new value outside the chain.
    pub readers: Vec<NodeId>,
}

pub struct MapFinding {
    pub side: Side,
    pub explained: Explained,
    /// The nodes to mark: the path for a cycle, else the nodes the finding is about.
    pub marks: Vec<NodeId>,
}

/// What a map is drawn from, owned: the two taggings, the buffers as decided, the findings and
/// the estimates. A plan made here gives them (`Map::new`); a plan document read back gives its
/// tags and buffers, the rest found again by the checker (`api::PlanOnGraph`).
pub struct MapParts {
    pub plan: Tagging,
    pub stock: Tagging,
    pub stock_source: &'static str,
    pub buffers: Vec<MapBuffer>,
    pub findings: Vec<MapFinding>,
    pub plan_estimate: CostEstimate,
    pub stock_estimate: CostEstimate,
}

impl<'g> Map<'g> {
    pub fn new(graph: &'g Graph, analysis: &Analysis, plan: &Plan, verdict: &Verdict) -> Self {
        let prose = Prose { graph, analysis };
        let buffers = (plan.draft.buffers.iter().zip(&analysis.buffers))
            .map(|(decision, chain)| {
                MapBuffer::of_chain(
                    chain,
                    decision.strategy,
                    decision.partition.clone(),
                    prose.reason(decision),
                )
            })
            .collect();
        let mut findings = MapFinding::all(graph, &verdict.plan, &verdict.stock);
        let moved = (prose.decisions(&plan.draft).into_iter()).filter(|d| d.buffer.is_none());
        MapFinding::insert_plan_decisions(graph, &mut findings, moved);
        Map::from_parts(
            graph,
            &analysis.index,
            MapParts {
                plan: plan.draft.tagging.clone(),
                stock: plan.stock.tagging.clone(),
                stock_source: plan.stock.source.as_str(),
                buffers,
                findings,
                plan_estimate: plan.draft.estimate,
                stock_estimate: plan.stock.estimate,
            },
        )
    }

    /// `index` is the graph's (for the partitions' weights).
    pub fn from_parts(graph: &'g Graph, index: &GraphIndex, parts: MapParts) -> Self {
        let states: Vec<(NodeId, &str)> = (parts.buffers.iter())
            .filter(|b| b.strategy == Strategy::State)
            .map(|b| (b.placeholder, b.name.as_str()))
            .collect();
        let plan = View::new(graph, index, &parts.plan, Side::Plan, &states);
        let stock = View::new(graph, index, &parts.stock, Side::Stock, &[]);
        Map {
            graph,
            plan,
            stock,
            buffers: parts.buffers,
            findings: parts.findings,
            stock_source: parts.stock_source,
            plan_estimate: parts.plan_estimate,
            stock_estimate: parts.stock_estimate,
        }
    }
}

impl MapBuffer {
    /// A buffer's chain as analysed, living as decided.
    pub fn of_chain(
        chain: &BufferChain,
        strategy: Strategy,
        partition: Option<String>,
        reason: String,
    ) -> Self {
        MapBuffer {
            name: chain.buffer.clone(),
            strategy,
            partition,
            reason,
            placeholder: chain.placeholder,
            writer: chain.writer,
            chain: std::iter::once(chain.placeholder)
                .chain(chain.chain.iter().copied())
                .collect(),
            readers: distinct(
                (chain.placeholder_readers.iter())
                    .chain(&chain.value_readers)
                    .copied(),
            ),
        }
    }
}

impl MapFinding {
    /// The findings on the plan, then those on the stock proposal.
    pub fn all(graph: &Graph, plan: &[Finding], stock: &[Finding]) -> Vec<MapFinding> {
        let finding = |side: Side| {
            move |f: &Finding| MapFinding {
                side,
                explained: explain(graph, f),
                marks: if f.path.is_empty() {
                    f.nodes.clone()
                } else {
                    distinct(f.path.iter().map(|step| step.node))
                },
            }
        };
        (plan.iter().map(finding(Side::Plan)))
            .chain(stock.iter().map(finding(Side::Stock)))
            .collect()
    }
}

impl MapFinding {
    /// The plan's decisions that are not one buffer's (ops kept on CPU: not convertible, over a
    /// budget, or in a partition without inputs), after the checker's findings on the plan and
    /// before those on the stock proposal: a person reading the map asks why an op is on CPU.
    pub fn insert_plan_decisions(
        graph: &Graph,
        findings: &mut Vec<MapFinding>,
        decisions: impl IntoIterator<Item = Explained>,
    ) {
        let at = findings.iter().take_while(|f| f.side == Side::Plan).count();
        let decided = decisions.into_iter().map(|explained| MapFinding {
            side: Side::Plan,
            marks: (explained.nodes.iter())
                .filter_map(|name| graph.find(name))
                .collect(),
            explained,
        });
        findings.splice(at..at, decided);
    }
}

impl View {
    /// `states`: each buffer kept as a state, by placeholder, on the plan's side; the stock side's
    /// are read from its tags.
    fn new(
        graph: &Graph,
        index: &GraphIndex,
        tagging: &Tagging,
        side: Side,
        states: &[(NodeId, &str)],
    ) -> Self {
        let n = graph.len();
        // Delegate partitions first, by id; CPU segments after, by their root.
        let mut key_of: Vec<Option<u32>> = vec![None; n];
        let partitions = tagging.partition_count();
        let mut cpu = Segments::new(n);
        for id in graph.ids() {
            if let Some(p) = tagging.partition(id) {
                key_of[id.index()] = Some(p);
            } else if graph.op(id) == OpKind::CallFunction {
                for &input in &graph.nodes[id.index()].inputs {
                    if tagging.partition(input).is_none() && graph.op(input) == OpKind::CallFunction
                    {
                        cpu.union(id.index(), input.index());
                    }
                }
            }
        }
        let mut cpu_key: HashMap<usize, u32> = HashMap::new();
        for id in graph.ids() {
            if key_of[id.index()].is_none() && graph.op(id) == OpKind::CallFunction {
                let root = cpu.find(id.index());
                let next = (partitions + cpu_key.len()) as u32;
                key_of[id.index()] = Some(*cpu_key.entry(root).or_insert(next));
            }
        }
        // Boxes by key, in topological order of their first node.
        let mut boxes: Vec<Option<MapBox>> =
            (0..partitions + cpu_key.len()).map(|_| None).collect();
        for &id in &graph.order {
            let Some(key) = key_of[id.index()] else {
                continue;
            };
            let slot = &mut boxes[key as usize];
            let b = slot.get_or_insert_with(|| MapBox {
                kind: match tagging.tag(id) {
                    Some(tag) => BoxKind::Delegate(tag.to_string()),
                    None => BoxKind::Cpu,
                },
                nodes: Vec::new(),
                ops: 0,
                states: Vec::new(),
                weight_bytes: 0,
                signature: 0,
            });
            b.nodes.push(id);
            b.ops += usize::from(graph.op(id) == OpKind::CallFunction);
        }
        // Boxes are numbered in the topological order of their first op: placeholders come first
        // in FX order, and a partition holding a weight would otherwise come before every CPU
        // segment. A box without ops (only placeholders) goes by its first node.
        let mut number: Vec<Option<u32>> = vec![None; boxes.len()];
        let mut ordered = Vec::new();
        let ops_first = (graph.order.iter()).filter(|&&id| graph.op(id) == OpKind::CallFunction);
        let then_the_rest = graph
            .order
            .iter()
            .filter(|&&id| graph.op(id) != OpKind::CallFunction);
        for &id in ops_first.chain(then_the_rest) {
            if let Some(key) = key_of[id.index()]
                && number[key as usize].is_none()
            {
                number[key as usize] = Some(ordered.len() as u32);
                if let Some(b) = boxes[key as usize].take() {
                    ordered.push(b);
                }
            }
        }
        let box_of: Vec<Option<u32>> = key_of
            .iter()
            .map(|k| k.and_then(|k| number[k as usize]))
            .collect();
        let states = states_by_box(graph, tagging, states, &box_of, side);
        let weights = crate::measure::weight_bytes(graph, index, tagging);
        for (b, names) in ordered.iter_mut().zip(states) {
            b.states = names;
            b.signature = signature(graph, b);
            // A delegate box is its partition: every node carries its tag.
            let partition = b.nodes.first().and_then(|&n| tagging.partition(n));
            if let (BoxKind::Delegate(_), Some(p)) = (&b.kind, partition) {
                b.weight_bytes = weights[p as usize];
            }
        }
        let edges = edges(graph, &box_of);
        let runs = runs(&ordered);
        View {
            side,
            boxes: ordered,
            edges,
            runs,
            box_of,
            partitions,
        }
    }

    /// The run a box is in, with its offset in the run.
    pub fn run_of(&self, b: usize) -> Option<(&Run, usize)> {
        self.runs
            .iter()
            .find(|r| (r.start..r.start + r.period * r.repeats).contains(&b))
            .map(|r| (r, b - r.start))
    }

    /// The box drawn for box `b` when runs are folded: itself, or the box at the same place in its
    /// run's first period.
    pub fn shown_as(&self, b: usize) -> usize {
        match self.run_of(b) {
            Some((run, offset)) => run.start + offset % run.period,
            None => b,
        }
    }

    /// The edges between the boxes drawn when runs are folded, bytes summed, by (from, to).
    pub fn folded_edges(&self) -> std::collections::BTreeMap<(usize, usize), u64> {
        let mut edges = std::collections::BTreeMap::new();
        for e in &self.edges {
            let (from, to) = (self.shown_as(e.from as usize), self.shown_as(e.to as usize));
            if from != to {
                let bytes: &mut u64 = edges.entry((from, to)).or_default();
                *bytes = bytes.saturating_add(e.bytes);
            }
        }
        edges
    }
}

/// The buffers each box owns as states. On the plan's side, the plan's decisions; on the stock
/// side, a buffer whose placeholder and writer share a partition.
fn states_by_box(
    graph: &Graph,
    tagging: &Tagging,
    states_kept: &[(NodeId, &str)],
    box_of: &[Option<u32>],
    side: Side,
) -> Vec<Vec<String>> {
    let mut states: Vec<Vec<String>> = Vec::new();
    let mut add = |node: NodeId, name: &str| {
        if let Some(b) = box_of[node.index()] {
            let b = b as usize;
            if states.len() <= b {
                states.resize_with(b + 1, Vec::new);
            }
            states[b].push(name.to_string());
        }
    };
    match side {
        Side::Plan => {
            for &(placeholder, buffer) in states_kept {
                add(placeholder, buffer);
            }
        }
        Side::Stock => {
            for buffer in &graph.signature.mutable_buffers {
                let (p, w) = (buffer.placeholder, buffer.writer);
                if tagging.partition(p).is_some() && tagging.partition(p) == tagging.partition(w) {
                    add(p, &buffer.buffer);
                }
            }
        }
    }
    let boxes = box_of.iter().flatten().max().map_or(0, |&b| b as usize + 1);
    states.resize_with(boxes, Vec::new);
    states
}

/// The values each box reads from another, one edge per ordered pair of boxes.
fn edges(graph: &Graph, box_of: &[Option<u32>]) -> Vec<MapEdge> {
    let mut by_pair: HashMap<(u32, u32), MapEdge> = HashMap::new();
    let mut counted: HashSet<(u32, NodeId)> = HashSet::new();
    for &id in &graph.order {
        let Some(to) = box_of[id.index()] else {
            continue;
        };
        for &input in &graph.nodes[id.index()].inputs {
            let Some(from) = box_of[input.index()] else {
                continue;
            };
            if from == to || !counted.insert((to, input)) {
                continue;
            }
            let edge = by_pair.entry((from, to)).or_insert(MapEdge {
                from,
                to,
                values: 0,
                bytes: 0,
            });
            edge.values += 1;
            let bytes = graph.value_bytes[input.index()].unwrap_or(0);
            edge.bytes = edge.bytes.saturating_add(bytes);
        }
    }
    let mut edges: Vec<MapEdge> = by_pair.into_values().collect();
    edges.sort_by_key(|e| (e.from, e.to));
    edges
}

fn signature(graph: &Graph, b: &MapBox) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    matches!(b.kind, BoxKind::Cpu).hash(&mut h);
    b.states.len().hash(&mut h);
    for &n in &b.nodes {
        // A placeholder's or get_attr's target is its own name, different in every layer.
        let node = &graph.nodes[n.index()];
        match node.op {
            OpKind::CallFunction => node.target.hash(&mut h),
            op => op.hash(&mut h),
        }
    }
    h.finish()
}

/// Runs of repeating boxes, found left to right: at each box, the period (up to [`MAX_PERIOD`])
/// whose repeats cover the most boxes, if it repeats at least twice.
fn runs(boxes: &[MapBox]) -> Vec<Run> {
    let sig: Vec<u64> = boxes.iter().map(|b| b.signature).collect();
    let mut runs = Vec::new();
    let mut at = 0;
    while at < sig.len() {
        let best = (1..=MAX_PERIOD)
            .filter(|&p| at + 2 * p <= sig.len())
            .map(|p| {
                let mut repeats = 1;
                while at + (repeats + 1) * p <= sig.len()
                    && sig[at..at + p] == sig[at + repeats * p..at + (repeats + 1) * p]
                {
                    repeats += 1;
                }
                (p, repeats)
            })
            .filter(|&(_, repeats)| repeats >= 2)
            .max_by_key(|&(p, repeats)| (p * repeats, std::cmp::Reverse(p)));
        match best {
            Some((period, repeats)) => {
                runs.push(Run {
                    start: at,
                    period,
                    repeats,
                });
                at += period * repeats;
            }
            None => at += 1,
        }
    }
    runs
}

/// Union-find over node indices, for CPU segments.
struct Segments {
    parent: Vec<u32>,
}

impl Segments {
    fn new(n: usize) -> Self {
        Segments {
            parent: (0..n as u32).collect(),
        }
    }

    /// The root, halving the path on the way (iterative).
    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] as usize != x {
            let grand = self.parent[self.parent[x] as usize];
            self.parent[x] = grand;
            x = grand as usize;
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            // The lower index stays the root: deterministic segments.
            let (low, high) = (ra.min(rb), ra.max(rb));
            self.parent[high] = low as u32;
        }
    }
}

/// The distinct ids of `ids`, in first-seen order.
fn distinct(ids: impl Iterator<Item = NodeId>) -> Vec<NodeId> {
    let mut seen = HashSet::new();
    ids.filter(|id| seen.insert(*id)).collect()
}

#[cfg(test)]
mod tests;

//! The checker: verifies any tagging (the stock proposal, a hand-made one, a plan) against the
//! rules, from the graph alone. It shares no decision code with the planner: it builds its own
//! petgraph view of the graph, finds chains by plain forward/backward search, and tests ACYCLIC on
//! an explicit quotient graph. Every plan produced in the tests goes through it.

use crate::graph::{Graph, NodeId, OpKind};
use crate::measure::{Measure, measure};
use crate::options::Options;
use crate::plan::{Plan, Strategy};
use crate::rules::{Finding, PathStep, RuleId};
use crate::tagging::Tagging;
use petgraph::Direction::Outgoing;
use petgraph::algo::{tarjan_scc, toposort};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{Bfs, EdgeFiltered, EdgeRef, Reversed, Walker};
use std::collections::{HashMap, HashSet, VecDeque};

struct Checker<'a> {
    graph: &'a Graph,
    tagging: &'a Tagging,
    dag: DiGraph<(), ()>,
    /// Each node's place in the import's topological order.
    position: Vec<usize>,
    /// What the tagging costs, measured once for every rule that reads it.
    measured: Measure,
}

fn ix(n: NodeId) -> NodeIndex {
    NodeIndex::new(n.index())
}

fn id(i: NodeIndex) -> NodeId {
    NodeId(i.index() as u32)
}

/// Every rule the tagging breaks, and what it costs, given what the backend supports.
pub fn check(
    graph: &Graph,
    tagging: &Tagging,
    options: &Options,
    supported: &[bool],
) -> Vec<Finding> {
    Checker::new(graph, tagging).rules(options, supported)
}

/// `check` on a plan's tagging, plus: does the plan's own account of itself match its tags?
pub fn verify_plan(graph: &Graph, plan: &Plan, supported: &[bool]) -> Vec<Finding> {
    let t = &plan.tagging;
    let c = Checker::new(graph, t);
    let mut findings = c.rules(&plan.options, supported);
    for b in &plan.buffers {
        let p_tag = t.tag(b.placeholder);
        let w_tag = t.tag(b.writer);
        let wrong = match b.strategy {
            Strategy::State => (p_tag.is_none() || p_tag != w_tag || b.partition.as_deref() != p_tag)
                .then(|| format!("is said to be a state of {:?} but its placeholder is in {p_tag:?} and its writer in {w_tag:?}", b.partition)),
            Strategy::Cpu => {
                let tagged: Vec<&str> = c.chain(b.placeholder, b.writer).into_iter().filter(|&n| t.tag(n).is_some()).map(|n| graph.name(n)).collect();
                (p_tag.is_some() || !tagged.is_empty()).then(|| format!("is said to run on CPU but its placeholder is in {p_tag:?} and chain nodes {tagged:?} are delegated"))
            }
            Strategy::Io => p_tag.is_some().then(|| format!("is said to be io but its placeholder is tagged {p_tag:?}")),
        };
        if let Some(wrong) = wrong {
            findings.push(
                Finding::violation(
                    RuleId::PlanMatchesTags,
                    format!("buffer {} {wrong}", b.buffer),
                )
                .buffer(&b.buffer),
            );
        }
    }
    let states = plan
        .buffers
        .iter()
        .filter(|b| b.strategy == Strategy::State)
        .count();
    let measured = &c.measured;
    if measured.states() != states || *measured != plan.measure {
        findings.push(Finding::violation(
            RuleId::PlanMatchesTags,
            format!(
                "the plan reports {} states and its own measure, but its tags hold {} states",
                states,
                measured.states()
            ),
        ));
    }
    findings
}

impl<'a> Checker<'a> {
    fn new(graph: &'a Graph, tagging: &'a Tagging) -> Self {
        let mut dag = DiGraph::with_capacity(graph.len(), 0);
        for _ in 0..graph.len() {
            dag.add_node(());
        }
        for n in graph.ids() {
            for &q in &graph.node(n).inputs {
                dag.add_edge(ix(q), ix(n), ());
            }
        }
        let mut position = vec![0; graph.len()];
        for (i, n) in graph.order.iter().enumerate() {
            position[n.index()] = i;
        }
        Checker {
            graph,
            tagging,
            dag,
            position,
            measured: measure(graph, tagging),
        }
    }

    /// Every rule, on this tagging.
    fn rules(&self, options: &Options, supported: &[bool]) -> Vec<Finding> {
        let mut findings = self.supported(supported);
        findings.extend(self.buffers(options));
        findings.extend(self.acyclic());
        findings.extend(self.constant_sharing());
        findings.extend(self.inputs(options));
        findings
    }

    /// executorch copies a tagged placeholder for each other side that reads it
    /// (`_maybe_duplicate_constant_nodes`) before it validates partitions: no dependency there.
    fn is_copied(&self, from: NodeId, to: NodeId) -> bool {
        self.graph.node(from).op == OpKind::Placeholder
            && self.tagging.partition(from).is_some()
            && self.tagging.partition(from) != self.tagging.partition(to)
    }

    fn name(&self, n: NodeId) -> &str {
        self.graph.name(n)
    }

    fn step(&self, n: NodeId, within_partition: bool) -> PathStep {
        PathStep {
            node: self.name(n).to_string(),
            tag: self.tagging.tag(n).map(str::to_string),
            within_partition,
        }
    }

    fn side(&self, n: NodeId) -> String {
        match self.tagging.tag(n) {
            Some(t) => t.to_string(),
            None => "cpu".to_string(),
        }
    }

    /// SUPPORTED: only ops the backend runs are tagged; the output never is.
    fn supported(&self, supported: &[bool]) -> Vec<Finding> {
        let mut out = Vec::new();
        for n in self.graph.ids() {
            let Some(tag) = self.tagging.tag(n) else {
                continue;
            };
            let node = self.graph.node(n);
            let problem = match node.op {
                OpKind::CallFunction if !supported[n.index()] => format!(
                    "{} ({}) is tagged {tag} but Core ML does not support it",
                    node.name, node.target
                ),
                OpKind::Output => format!("the graph output {} is tagged {tag}", node.name),
                _ => continue,
            };
            out.push(
                Finding::violation(RuleId::Supported, problem)
                    .nodes([node.name.as_str()])
                    .partition(tag),
            );
        }
        out
    }

    /// Nodes on a path from `p` to `w`, `w` included: those reachable from `p` that come no later
    /// than `w` in the import's topological order (nothing later can lead back to `w`), then those
    /// of them that reach `w`. Bounding by position keeps each search to the chain's neighbourhood
    /// rather than the rest of the graph.
    fn chain(&self, p: NodeId, w: NodeId) -> Vec<NodeId> {
        let limit = self.position[w.index()];
        let forward =
            EdgeFiltered::from_fn(&self.dag, |e| self.position[e.target().index()] <= limit);
        let ahead: HashSet<NodeIndex> = Bfs::new(&forward, ix(p)).iter(&forward).collect();
        // In the reversed graph an edge's target is the input being walked to.
        let backward = EdgeFiltered::from_fn(Reversed(&self.dag), |e| {
            ahead.contains(&e.target()) && e.target() != ix(p)
        });
        let mut chain: Vec<NodeId> = Bfs::new(&backward, ix(w)).iter(&backward).map(id).collect();
        chain.sort();
        chain
    }

    /// NO_HIDDEN_STATE, NO_STALE_COPY, STATE_WHOLE and STATE_TARGET, buffer by buffer.
    fn buffers(&self, options: &Options) -> Vec<Finding> {
        let mut out = Vec::new();
        let mut states = Vec::new();
        for b in &self.graph.signature.mutable_buffers {
            let (p, w) = (b.placeholder, b.writer);
            let Some(owner) = self.tagging.tag(p) else {
                continue;
            };
            let is_state = self.tagging.tag(w) == Some(owner);
            let buffer = b.buffer.as_str();
            if !options.take_over_mutable_buffer {
                let what = if is_state {
                    "a Core ML state"
                } else {
                    "a frozen constant copy"
                };
                out.push(
                    Finding::violation(
                        RuleId::NoHiddenState,
                        format!("buffer {buffer} would become {what} of {owner}: its placeholder {} is tagged although take_over_mutable_buffer is off", self.name(p)),
                    )
                    .buffer(buffer)
                    .partition(owner)
                    .nodes([self.name(p)]),
                );
            }
            if !is_state {
                out.push(
                    Finding::violation(
                        RuleId::NoStaleCopy,
                        format!(
                            "buffer {buffer}: its placeholder {} is tagged {owner} but its writer {} is on {}; {owner} would read a constant copy frozen at export",
                            self.name(p),
                            self.name(w),
                            self.side(w)
                        ),
                    )
                    .buffer(buffer)
                    .partition(owner)
                    .nodes([self.name(p), self.name(w)]),
                );
                continue;
            }
            states.push(buffer);
            let chain = self.chain(p, w);
            let readers: Vec<NodeId> = self
                .dag
                .neighbors_directed(ix(p), Outgoing)
                .map(id)
                .collect();
            let mut outside: Vec<NodeId> = chain
                .iter()
                .chain(&readers)
                .copied()
                .filter(|&n| self.tagging.tag(n) != Some(owner))
                .collect();
            outside.sort();
            outside.dedup();
            if !outside.is_empty() {
                let listed: Vec<String> = outside
                    .iter()
                    .map(|&n| format!("{} on {}", self.name(n), self.side(n)))
                    .collect();
                out.push(
                    Finding::violation(
                        RuleId::StateWhole,
                        format!("buffer {buffer} is a state of {owner}, but part of its chain or a reader of its old value is elsewhere: {}", listed.join(", ")),
                    )
                    .buffer(buffer)
                    .partition(owner)
                    .nodes(outside.iter().map(|&n| self.name(n))),
                );
            }
        }
        if !states.is_empty() && !options.target_allows_states() {
            out.push(
                Finding::violation(
                    RuleId::StateTarget,
                    format!(
                        "{} state(s) ({}) but the minimum deployment target is {}",
                        states.len(),
                        states.join(", "),
                        options.target_label()
                    ),
                )
                .nodes(states.iter().copied()),
            );
        }
        out
    }

    /// ACYCLIC: contract every partition to one vertex; the result must be a DAG. Each cycle is
    /// reported with a concrete path: per non-convex partition the shortest path that leaves and
    /// re-enters it, otherwise one cycle through several partitions.
    fn acyclic(&self) -> Vec<Finding> {
        let parts = self.tagging.partition_count();
        let vertex = |n: NodeId| match self.tagging.partition(n) {
            Some(p) => p as usize,
            None => parts + n.index(),
        };
        let mut q = DiGraph::<(), NodeId>::with_capacity(parts + self.graph.len(), 0);
        for _ in 0..parts + self.graph.len() {
            q.add_node(());
        }
        let mut edge_of: HashMap<(usize, usize), (NodeId, NodeId)> = HashMap::new();
        for e in self.dag.raw_edges() {
            let (a, b) = (id(e.source()), id(e.target()));
            let (va, vb) = (vertex(a), vertex(b));
            if va != vb && !self.is_copied(a, b) && !edge_of.contains_key(&(va, vb)) {
                edge_of.insert((va, vb), (a, b));
                q.add_edge(NodeIndex::new(va), NodeIndex::new(vb), a);
            }
        }
        if toposort(&q, None).is_ok() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for scc in tarjan_scc(&q).into_iter().filter(|s| s.len() > 1) {
            let mut parts_in: Vec<usize> = scc
                .iter()
                .map(|v| v.index())
                .filter(|&v| v < parts)
                .collect();
            parts_in.sort();
            let before = out.len();
            for &p in &parts_in {
                if let Some(path) = self.leave_and_reenter(p as u32) {
                    let tag = self.tagging.name(p as u32);
                    let (exit, entry) = (&path[0].node, &path[path.len() - 1].node);
                    out.push(
                        Finding::violation(RuleId::Acyclic, format!("partition {tag} is not convex: a path leaves it at {exit} and re-enters it at {entry} through nodes outside it"))
                            .partition(tag)
                            .nodes(path.iter().map(|s| s.node.clone()))
                            .path(path),
                    );
                }
            }
            if out.len() == before
                && let Some(path) = self.cycle_through(&q, &scc, &edge_of, parts)
            {
                let tags: Vec<String> = parts_in
                    .iter()
                    .map(|&p| self.tagging.name(p as u32).to_string())
                    .collect();
                out.push(
                    Finding::violation(
                        RuleId::Acyclic,
                        format!(
                            "partitions {} depend on each other in a cycle",
                            tags.join(", ")
                        ),
                    )
                    .nodes(path.iter().map(|s| s.node.clone()))
                    .path(path),
                );
            }
        }
        out
    }

    /// Shortest path from a node of partition `p` out through other nodes and back into `p`.
    fn leave_and_reenter(&self, p: u32) -> Option<Vec<PathStep>> {
        let inside = |n: NodeId| self.tagging.partition(n) == Some(p);
        let mut parent: HashMap<NodeId, NodeId> = HashMap::new();
        let mut queue = VecDeque::new();
        for a in self.graph.ids().filter(|&n| inside(n)) {
            for b in self.dag.neighbors_directed(ix(a), Outgoing).map(id) {
                if !inside(b) && !self.is_copied(a, b) && !parent.contains_key(&b) {
                    parent.insert(b, a);
                    queue.push_back(b);
                }
            }
        }
        while let Some(x) = queue.pop_front() {
            for y in self.dag.neighbors_directed(ix(x), Outgoing).map(id) {
                if inside(y) {
                    let mut path = vec![y, x];
                    let mut at = x;
                    while let Some(&prev) = parent.get(&at) {
                        path.push(prev);
                        if inside(prev) {
                            break;
                        }
                        at = prev;
                    }
                    path.reverse();
                    return Some(path.into_iter().map(|n| self.step(n, false)).collect());
                }
                if let std::collections::hash_map::Entry::Vacant(e) = parent.entry(y) {
                    e.insert(x);
                    queue.push_back(y);
                }
            }
        }
        None
    }

    /// One cycle of the quotient graph inside `scc`, as graph edges joined by steps inside partitions.
    fn cycle_through(
        &self,
        q: &DiGraph<(), NodeId>,
        scc: &[NodeIndex],
        edge_of: &HashMap<(usize, usize), (NodeId, NodeId)>,
        parts: usize,
    ) -> Option<Vec<PathStep>> {
        let members: HashSet<NodeIndex> = scc.iter().copied().collect();
        let start = scc
            .iter()
            .copied()
            .filter(|v| v.index() < parts)
            .min()
            .unwrap_or(scc[0]);
        let mut parent: HashMap<NodeIndex, NodeIndex> = HashMap::new();
        let mut queue = VecDeque::from([start]);
        let mut last = None;
        'search: while let Some(v) = queue.pop_front() {
            for u in q.neighbors_directed(v, Outgoing) {
                if u == start {
                    last = Some(v);
                    break 'search;
                }
                if members.contains(&u) && !parent.contains_key(&u) {
                    parent.insert(u, v);
                    queue.push_back(u);
                }
            }
        }
        let mut vertices = vec![start, last?];
        while let Some(&p) = parent.get(vertices.last()?) {
            vertices.push(p);
        }
        vertices.reverse(); // start, ..., last, start
        let mut steps: Vec<PathStep> = Vec::new();
        for pair in vertices.windows(2) {
            let &(a, b) = edge_of.get(&(pair[0].index(), pair[1].index()))?;
            let jump = steps
                .last()
                .is_some_and(|s: &PathStep| s.node != self.name(a));
            if steps.last().is_none_or(|s| s.node != self.name(a)) {
                steps.push(self.step(a, jump));
            }
            steps.push(self.step(b, false));
        }
        // Close the loop inside the partition it started from.
        if let (Some(first), Some(last)) = (steps.first(), steps.last())
            && first.node != last.node
        {
            let mut close = first.clone();
            close.within_partition = true;
            steps.push(close);
        }
        Some(steps)
    }

    /// NO_INPUT_TARGET: below iOS18 every partition reads a runtime value; constants tagged into it
    /// and states it owns are not inputs of the Core ML model.
    fn inputs(&self, options: &Options) -> Vec<Finding> {
        if options.target_allows_states() {
            return Vec::new();
        }
        self.measured
            .partitions
            .iter()
            .filter(|p| p.inputs.is_empty() && p.nodes > 0)
            .map(|p| {
                let members: Vec<&str> = self
                    .graph
                    .ids()
                    .filter(|&n| self.tagging.tag(n) == Some(p.tag.as_str()) && self.graph.node(n).op == OpKind::CallFunction)
                    .map(|n| self.name(n))
                    .collect();
                Finding::violation(
                    RuleId::NoInputTarget,
                    format!("partition {} reads no runtime value ({}) but the minimum deployment target is {}", p.tag, members.join(", "), options.target_label()),
                )
                .partition(&p.tag)
                .nodes(members)
            })
            .collect()
    }

    /// CONSTANT_SHARING: a tagged constant read by other partitions or CPU is copied for each.
    fn constant_sharing(&self) -> Vec<Finding> {
        self.measured
            .constant_copies
            .iter()
            .filter(|c| self.graph.role(c.placeholder).is_constant_data())
            .map(|c| {
                let readers: Vec<String> = c
                    .readers
                    .iter()
                    .map(|r| r.clone().unwrap_or_else(|| "cpu".into()))
                    .collect();
                let size = c
                    .total_bytes()
                    .map_or("unknown size".to_string(), |b| format!("{b} bytes"));
                Finding::violation(
                    RuleId::ConstantSharing,
                    format!(
                        "{} is owned by {} and copied for {} ({size})",
                        self.name(c.placeholder),
                        c.owner,
                        readers.join(", ")
                    ),
                )
                .nodes([self.name(c.placeholder)])
                .partition(&c.owner)
                .bytes(c.total_bytes())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;

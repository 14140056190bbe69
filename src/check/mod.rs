//! The checker: verifies any tagging (the stock proposal, a hand-made one, a plan) against the
//! rules, from the graph alone. Like regalloc2's checker it is independent of what it checks: it
//! imports only the crate's vocabulary (graph, tagging, options, rules), never the planner, and the
//! planner never calls it; the pipeline runs the planner, then the checker (`crate::pipeline`). It
//! shares no decision code with the planner: it builds its own petgraph view of the graph, reads
//! constant roles from the signature and the target from the options itself, finds chains by plain
//! forward/backward search, derives each partition's inputs, outputs and copies from the edges, and
//! tests ACYCLIC on an explicit quotient graph (`cycles.rs`).

mod claims;
mod cycles;

pub use claims::{BufferClaim, Claims, Lives};

use crate::graph::{Graph, NodeId, OpKind};
use crate::options::{DeploymentTarget, Options};
use crate::rules::{Fact, Finding, PathStep, RuleId};
use crate::tagging::Tagging;
use petgraph::Direction::{self, Incoming, Outgoing};
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::OnceLock;

/// Every rule the tagging breaks, and what it costs, given what the backend supports.
pub fn check(
    graph: &Graph,
    tagging: &Tagging,
    options: &Options,
    supported: &[bool],
) -> Vec<Finding> {
    check_in(&GraphView::default(), graph, tagging, options, supported)
}

/// [`check`] in `view`, the checker's view of `graph` (built here if no check in it built it yet).
pub fn check_in(
    view: &GraphView,
    graph: &Graph,
    tagging: &Tagging,
    options: &Options,
    supported: &[bool],
) -> Vec<Finding> {
    // Nothing delegated (an untagged document's stock proposal): every rule is about tagged nodes,
    // so none can be broken, and building the checker's view of a large graph is wasted.
    if tagging.partitions().iter().all(Option::is_none) {
        return Vec::new();
    }
    Checker::new(view.of(graph), graph, tagging).rules(options, supported)
}

/// [`check_in`], plus: does the plan's own account of itself (`claims`) match its tags?
pub fn check_claims_in(
    view: &GraphView,
    graph: &Graph,
    tagging: &Tagging,
    options: &Options,
    supported: &[bool],
    claims: &Claims,
) -> Vec<Finding> {
    let c = Checker::new(view.of(graph), graph, tagging);
    let mut findings = c.rules(options, supported);
    findings.extend(c.claims(claims));
    findings
}

/// The checker's own view of one graph, the same whatever the tagging checked, built by the first
/// check that needs it and shared by every later one, on any thread: a plan and the stock proposal,
/// what-if's scenarios. It must be used with one graph only.
#[derive(Default)]
pub struct GraphView(OnceLock<Edges>);

impl GraphView {
    fn of(&self, graph: &Graph) -> &Edges {
        let edges = self.0.get_or_init(|| Edges::new(graph));
        // A view of another graph would check this one against the wrong edges.
        assert_eq!(
            edges.position.len(),
            graph.len(),
            "the checker's view is of another graph"
        );
        edges
    }
}

/// What the view holds: the checker's adjacency (a petgraph `DiGraph` of its own), each node's
/// place in the import's topological order, and the placeholders that are constant data.
struct Edges {
    dag: DiGraph<(), ()>,
    /// Each node's place in the import's topological order.
    position: Vec<usize>,
    /// Parameters, lifted constants and buffers nothing mutates, as the signature lists them.
    constant: Vec<bool>,
    /// Each `getitem` whose first input is a `call_function` (the multi-output op it indexes),
    /// with that op, in node order: what TUPLE_WHOLE looks at.
    getitems: Vec<(NodeId, NodeId)>,
}

impl Edges {
    fn new(graph: &Graph) -> Self {
        let mut dag = DiGraph::with_capacity(graph.len(), 0);
        for _ in 0..graph.len() {
            dag.add_node(());
        }
        let mut getitems = Vec::new();
        for n in graph.ids() {
            let node = graph.node(n);
            for &q in &node.inputs {
                dag.add_edge(ix(q), ix(n), ());
            }
            // Read from the target here, not from the graph's own helper.
            let getitem = node.op == OpKind::CallFunction
                && node.target.rsplit('.').next() == Some("getitem");
            if getitem
                && let Some(&producer) = node.inputs.first()
                && graph.op(producer) == OpKind::CallFunction
            {
                getitems.push((n, producer));
            }
        }
        let mut position = vec![0; graph.len()];
        for (i, n) in graph.order.iter().enumerate() {
            position[n.index()] = i;
        }
        let sig = &graph.signature;
        let mut constant = vec![false; graph.len()];
        for (p, _) in sig
            .inputs_to_parameters
            .iter()
            .chain(&sig.inputs_to_lifted_tensor_constants)
            .chain(&sig.inputs_to_buffers)
        {
            constant[p.index()] = true;
        }
        for b in &sig.mutable_buffers {
            constant[b.placeholder.index()] = false;
        }
        Edges {
            dag,
            position,
            constant,
            getitems,
        }
    }
}

/// One delegate partition as the checker sees it from the edges.
#[derive(Default)]
struct Side {
    /// `call_function` nodes in it.
    ops: usize,
    /// Values read from outside it, copied constants not counted.
    inputs: BTreeSet<NodeId>,
    /// Its values read outside it.
    outputs: BTreeSet<NodeId>,
}

/// A tagged placeholder read from another side, which executorch copies for each such side.
struct Copied {
    placeholder: NodeId,
    /// The other sides reading it; `None` is CPU.
    readers: Vec<Option<u32>>,
}

struct Checker<'a> {
    graph: &'a Graph,
    tagging: &'a Tagging,
    view: &'a Edges,
    sides: Vec<Side>,
    copied: Vec<Copied>,
}

fn ix(n: NodeId) -> NodeIndex {
    NodeIndex::new(n.index())
}

fn id(i: NodeIndex) -> NodeId {
    NodeId(i.index() as u32)
}

/// Core ML states exist from iOS18 on; read here, not borrowed from the options' own helper.
fn states_allowed(options: &Options) -> bool {
    matches!(options.minimum_deployment_target, Some(t) if t >= DeploymentTarget::Ios18)
}

impl<'a> Checker<'a> {
    fn new(view: &'a Edges, graph: &'a Graph, tagging: &'a Tagging) -> Self {
        let mut c = Checker {
            graph,
            tagging,
            view,
            sides: Vec::new(),
            copied: Vec::new(),
        };
        c.derive_sides();
        c
    }

    /// Each partition's ops, inputs and outputs, and the copies of tagged placeholders, from the
    /// edges in node order (the view's edge list, made in that order: a few bytes an edge, where
    /// the nodes are a few hundred bytes each).
    fn derive_sides(&mut self) {
        let t = self.tagging;
        let mut sides: Vec<Side> = (0..t.partition_count()).map(|_| Side::default()).collect();
        let mut copied: Vec<Copied> = Vec::new();
        let mut copy_of: HashMap<NodeId, usize> = HashMap::new();
        for n in self.graph.ids() {
            if let Some(p) = t.partition(n)
                && self.graph.op(n) == OpKind::CallFunction
            {
                sides[p as usize].ops += 1;
            }
        }
        for edge in self.view.dag.raw_edges() {
            let (q, n) = (id(edge.source()), id(edge.target()));
            let (here, there) = (t.partition(n), t.partition(q));
            if there == here {
                continue;
            }
            if self.graph.op(q) == OpKind::Placeholder && there.is_some() {
                let k = *copy_of.entry(q).or_insert_with(|| {
                    copied.push(Copied {
                        placeholder: q,
                        readers: Vec::new(),
                    });
                    copied.len() - 1
                });
                if !copied[k].readers.contains(&here) {
                    copied[k].readers.push(here);
                }
                continue;
            }
            if let Some(p) = here {
                sides[p as usize].inputs.insert(q);
            }
            if let Some(p) = there {
                sides[p as usize].outputs.insert(q);
            }
        }
        self.sides = sides;
        self.copied = copied;
    }

    /// Every rule, on this tagging.
    fn rules(&self, options: &Options, supported: &[bool]) -> Vec<Finding> {
        let mut findings = self.supported(supported);
        findings.extend(self.buffers(options));
        findings.extend(self.acyclic());
        findings.extend(self.constant_sharing());
        findings.extend(self.inputs(options));
        findings.extend(self.tuples());
        findings.extend(self.budgets(options));
        findings.extend(self.boundary_values());
        findings
    }

    /// BOUNDARY_VALUES: every value a partition reads from outside or gives outside is one Core ML
    /// takes at a model's boundary (`Graph::uncrossable`, the rule's one statement).
    fn boundary_values(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        for (p, side) in self.sides.iter().enumerate() {
            let crossing = (side.inputs.iter().map(|&v| (v, true)))
                .chain(side.outputs.iter().map(|&v| (v, false)));
            for (value, into) in crossing {
                if let Some(why) = self.graph.uncrossable(value) {
                    let fact = Fact::UncrossableValue { value, why, into };
                    out.push(
                        Finding::violation(RuleId::BoundaryValues, fact)
                            .partition(self.tagging.name(p as u32))
                            .nodes([value]),
                    );
                }
            }
        }
        out
    }

    /// WITHIN_BUDGET: each partition's ops (its `call_function` nodes) and constant bytes: every
    /// parameter, lifted constant or unmutated buffer that is tagged, counted in its own partition
    /// and in each other partition with a node that reads it (executorch copies it there). An
    /// untagged constant is a runtime input, baked into nothing.
    fn budgets(&self, options: &Options) -> Vec<Finding> {
        if options.max_weight_bytes.is_none() && options.max_ops.is_none() {
            return Vec::new();
        }
        let count = self.sides.len();
        let mut weight = vec![0u64; count];
        let mut holders: Vec<usize> = Vec::new();
        for c in self.graph.ids() {
            let Some(owner) = self.tagging.partition(c) else {
                continue;
            };
            if !self.view.constant[c.index()] {
                continue;
            }
            holders.clear();
            holders.push(owner as usize);
            for user in self.view.dag.neighbors_directed(ix(c), Outgoing) {
                if let Some(t) = self.tagging.partition(id(user)) {
                    holders.push(t as usize);
                }
            }
            holders.sort_unstable();
            holders.dedup();
            let bytes = self.graph.node(c).meta.bytes().unwrap_or(0);
            for &h in &holders {
                weight[h] = weight[h].saturating_add(bytes);
            }
        }
        let mut out = Vec::new();
        for (p, side) in self.sides.iter().enumerate() {
            let ops = side.ops as u64;
            let over_weight = options.max_weight_bytes.is_some_and(|m| weight[p] > m);
            let over_ops = options.max_ops.is_some_and(|m| ops > m);
            if over_weight || over_ops {
                let fact = Fact::OverBudget {
                    weight_bytes: weight[p],
                    ops,
                    max_weight_bytes: options.max_weight_bytes,
                    max_ops: options.max_ops,
                };
                out.push(
                    Finding::violation(RuleId::WithinBudget, fact)
                        .partition(self.tagging.name(p as u32))
                        .bytes(Some(weight[p])),
                );
            }
        }
        out
    }

    /// executorch copies a tagged placeholder for each other side that reads it
    /// (`_maybe_duplicate_constant_nodes`) before it validates partitions: no dependency there.
    fn is_copied(&self, from: NodeId, to: NodeId) -> bool {
        self.graph.op(from) == OpKind::Placeholder
            && self.tagging.partition(from).is_some()
            && self.tagging.partition(from) != self.tagging.partition(to)
    }

    fn step(&self, n: NodeId, within_partition: bool) -> PathStep {
        PathStep {
            node: n,
            tag: self.tag(n),
            within_partition,
        }
    }

    /// A node's tag, `None` on CPU.
    fn tag(&self, n: NodeId) -> Option<String> {
        self.tagging.tag(n).map(str::to_string)
    }

    /// SUPPORTED: only ops the backend runs are tagged; the output never is. CONVERTIBLE: no op
    /// whose conversion verdict (read from the node itself) says the converter refuses it.
    fn supported(&self, supported: &[bool]) -> Vec<Finding> {
        let mut out = Vec::new();
        for n in self.graph.ids() {
            let Some(tag) = self.tagging.tag(n) else {
                continue;
            };
            let (rule, fact) = match self.graph.op(n) {
                OpKind::CallFunction if !supported[n.index()] => {
                    (RuleId::Supported, Fact::UnsupportedTagged { node: n })
                }
                OpKind::CallFunction
                    if (self.graph.nodes[n.index()].conversion)
                        .as_ref()
                        .is_some_and(|c| !c.converts) =>
                {
                    (RuleId::Convertible, Fact::NotConvertibleTagged { node: n })
                }
                OpKind::Output => (RuleId::Supported, Fact::OutputTagged { node: n }),
                _ => continue,
            };
            out.push(Finding::violation(rule, fact).nodes([n]).partition(tag));
        }
        out
    }

    /// Nodes on a path from `p` to `w`, `w` included: those reachable from `p` that come no later
    /// than `w` in the import's topological order (nothing later can lead back to `w`), then those
    /// of them that reach `w`. Bounding by position keeps each search to the chain's neighbourhood
    /// rather than the rest of the graph.
    ///
    /// Each search keeps what it has seen in a set of its own size: petgraph's `Bfs` clears a bit
    /// per node of the graph, which for tens of thousands of buffers in a 10^6-node graph costs
    /// more than the searches.
    fn chain(&self, p: NodeId, w: NodeId) -> Vec<NodeId> {
        let limit = self.view.position[w.index()];
        let ahead = self.search(ix(p), Outgoing, |n| self.view.position[n.index()] <= limit);
        let chain = self.search(ix(w), Incoming, |n| n != ix(p) && ahead.contains(&n));
        let mut chain: Vec<NodeId> = chain.into_iter().map(id).collect();
        chain.sort();
        chain
    }

    /// `from` and every node reached from it along edges in `direction` through nodes that `enter`
    /// admits.
    fn search(
        &self,
        from: NodeIndex,
        direction: Direction,
        enter: impl Fn(NodeIndex) -> bool,
    ) -> HashSet<NodeIndex> {
        let mut seen = HashSet::from([from]);
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            for next in self.view.dag.neighbors_directed(n, direction) {
                if enter(next) && seen.insert(next) {
                    stack.push(next);
                }
            }
        }
        seen
    }

    /// NO_HIDDEN_STATE, NO_STALE_COPY, STATE_WHOLE and STATE_TARGET, buffer by buffer.
    fn buffers(&self, options: &Options) -> Vec<Finding> {
        let mut out = Vec::new();
        let mut states = Vec::new();
        let mut state_placeholders = Vec::new();
        for b in &self.graph.signature.mutable_buffers {
            let (p, w) = (b.placeholder, b.writer);
            let Some(owner) = self.tagging.tag(p) else {
                continue;
            };
            let is_state = self.tagging.tag(w) == Some(owner);
            let buffer = b.buffer.as_str();
            if !options.take_over_mutable_buffer {
                let fact = Fact::HiddenState {
                    placeholder: p,
                    as_state: is_state,
                };
                out.push(
                    Finding::violation(RuleId::NoHiddenState, fact)
                        .buffer(buffer)
                        .partition(owner)
                        .nodes([p]),
                );
            }
            if !is_state {
                let fact = Fact::StaleCopy {
                    placeholder: p,
                    writer: w,
                    writer_tag: self.tag(w),
                };
                out.push(
                    Finding::violation(RuleId::NoStaleCopy, fact)
                        .buffer(buffer)
                        .partition(owner)
                        .nodes([p, w]),
                );
                continue;
            }
            states.push(buffer);
            state_placeholders.push(p);
            let chain = self.chain(p, w);
            let readers: Vec<NodeId> = self
                .view
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
                let fact = Fact::StateSplit {
                    outside: outside.iter().map(|&n| (n, self.tag(n))).collect(),
                };
                out.push(
                    Finding::violation(RuleId::StateWhole, fact)
                        .buffer(buffer)
                        .partition(owner)
                        .nodes(outside),
                );
            }
        }
        if !states.is_empty() && !states_allowed(options) {
            let fact = Fact::StatesBelowTarget {
                buffers: states.iter().map(|b| b.to_string()).collect(),
                target: options.minimum_deployment_target,
            };
            // The finding is about buffers, not nodes: it names each state's placeholder.
            out.push(Finding::violation(RuleId::StateTarget, fact).nodes(state_placeholders));
        }
        out
    }

    /// NO_INPUT_TARGET: below iOS18 every partition reads a runtime value; constants tagged into it
    /// and states it owns are not inputs of the Core ML model.
    fn inputs(&self, options: &Options) -> Vec<Finding> {
        if states_allowed(options) {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (p, side) in self.sides.iter().enumerate() {
            if !side.inputs.is_empty() || side.ops == 0 {
                continue;
            }
            let tag = self.tagging.name(p as u32);
            let members: Vec<NodeId> = self
                .graph
                .ids()
                .filter(|&n| {
                    self.tagging.partition(n) == Some(p as u32)
                        && self.graph.op(n) == OpKind::CallFunction
                })
                .collect();
            let fact = Fact::NoRuntimeInput {
                members: members.clone(),
                target: options.minimum_deployment_target,
            };
            out.push(
                Finding::violation(RuleId::NoInputTarget, fact)
                    .partition(tag)
                    .nodes(members),
            );
        }
        out
    }

    /// CONSTANT_SHARING: a tagged constant read by other partitions or CPU is copied for each.
    fn constant_sharing(&self) -> Vec<Finding> {
        self.copied
            .iter()
            .filter(|c| self.view.constant[c.placeholder.index()])
            .map(|c| {
                let readers: Vec<Option<String>> = c
                    .readers
                    .iter()
                    .map(|r| r.map(|p| self.tagging.name(p).to_string()))
                    .collect();
                let total = self
                    .graph
                    .node(c.placeholder)
                    .meta
                    .bytes()
                    .map(|b| b * readers.len() as u64);
                let owner = self.tagging.tag(c.placeholder).unwrap_or_default();
                let fact = Fact::ConstantCopied {
                    placeholder: c.placeholder,
                    readers,
                };
                Finding::violation(RuleId::ConstantSharing, fact)
                    .nodes([c.placeholder])
                    .partition(owner)
                    .bytes(total)
            })
            .collect()
    }

    /// TUPLE_WHOLE: a `getitem` lives where the multi-output op it reads lives.
    fn tuples(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        for &(n, producer) in &self.view.getitems {
            if self.tagging.partition(n) != self.tagging.partition(producer) {
                let fact = Fact::TupleSplit {
                    getitem: n,
                    producer,
                    getitem_tag: self.tag(n),
                    producer_tag: self.tag(producer),
                };
                out.push(Finding::violation(RuleId::TupleWhole, fact).nodes([producer, n]));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;

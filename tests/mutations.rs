//! Mutation tests, in the spirit of regalloc2's checker: a plan the checker accepts is broken in one
//! known way, and the checker must name the rule the break violates. Each mutation is a bug a
//! planner could have; a checker that let one through would let that planner bug through too.
//!
//! The plans are real: every graph in data/ and generated LLM-shaped graphs, each planned with
//! take-over on at iOS18, off at iOS18 and off at iOS17. A mutation applies where the plan has the
//! spot it needs (a state, a getitem, an unsupported op, an op the converter refuses, a value no
//! boundary takes); every rule must be caught somewhere.

use partition_planner::analyse::{Analysis, analyse};
use partition_planner::graph::{Graph, NodeId, OpKind};
use partition_planner::import::parse_graph;
use partition_planner::options::DeploymentTarget;
use partition_planner::outcome::Plan;
use partition_planner::pipeline::plan;
use partition_planner::pipeline::verify;
use partition_planner::plan::{PlanRequest, Strategy};
use partition_planner::rules::RuleId;
use partition_planner::synthetic::generate;
use partition_planner::tagging::Tagging;
use std::collections::{BTreeMap, BTreeSet};

mod common;

/// The tag a mutation gives to a partition that did not exist.
const FRESH: &str = "mutant";

/// A graph, its plan under one option set, and what the mutations need to find their spots.
struct Subject {
    name: String,
    graph: Graph,
    analysis: Analysis,
    request: PlanRequest,
    plan: Plan,
    users: Vec<Vec<NodeId>>,
}

impl Subject {
    fn new(name: &str, graph: &Graph, take_over: bool, target: DeploymentTarget) -> Subject {
        let analysis = analyse(graph);
        let mut request = PlanRequest::new(graph);
        request.options.take_over_mutable_buffer = take_over;
        request.options.minimum_deployment_target = Some(target);
        let plan = plan(graph, &analysis, &request).expect("plans");
        let mut users = vec![Vec::new(); graph.len()];
        for n in graph.ids() {
            for &i in &graph.node(n).inputs {
                users[i.index()].push(n);
            }
        }
        Subject {
            name: format!("{name} (take-over {take_over}, {target})"),
            graph: graph.clone(),
            analysis,
            request,
            plan,
            users,
        }
    }

    fn tag(&self, n: NodeId) -> Option<&str> {
        self.plan.draft.tagging.tag(n)
    }

    fn is_op(&self, n: NodeId) -> bool {
        self.graph.op(n) == OpKind::CallFunction
    }

    /// The plan with some nodes moved: `Some(tag)` to that partition (made if new), `None` to CPU.
    /// Everything else the plan says of itself is left as it was.
    fn retagged(&self, moves: &[(NodeId, Option<&str>)]) -> Plan {
        let t = &self.plan.draft.tagging;
        let mut names: Vec<String> = (0..t.partition_count() as u32)
            .map(|p| t.name(p).to_string())
            .collect();
        let mut of = t.partitions().to_vec();
        for &(n, tag) in moves {
            of[n.index()] = tag.map(|tag| match names.iter().position(|x| x == tag) {
                Some(p) => p as u32,
                None => {
                    names.push(tag.to_string());
                    (names.len() - 1) as u32
                }
            });
        }
        let mut mutant = self.plan.clone();
        mutant.draft.tagging = Tagging::new(names, of);
        mutant
    }

    /// Every rule the checker finds broken, costs included.
    fn caught(&self, mutant: &Plan) -> BTreeSet<RuleId> {
        verify(&self.graph, mutant, &self.request)
            .plan
            .iter()
            .map(|f| f.rule)
            .collect()
    }
}

/// One way to break a plan: the rule it breaks and where it applies.
struct Mutation {
    rule: RuleId,
    what: &'static str,
    apply: fn(&Subject) -> Option<Plan>,
}

const MUTATIONS: &[Mutation] = &[
    Mutation {
        rule: RuleId::Acyclic,
        what: "a delegated op moved to CPU between two ops of its partition",
        apply: |s| {
            s.graph.ids().find_map(|n| {
                let p = s.tag(n).filter(|_| s.is_op(n))?;
                let fed = s
                    .graph
                    .node(n)
                    .inputs
                    .iter()
                    .any(|&i| s.is_op(i) && s.tag(i) == Some(p));
                let feeds = s.users[n.index()].iter().any(|&u| s.tag(u) == Some(p));
                (fed && feeds).then(|| s.retagged(&[(n, None)]))
            })
        },
    },
    Mutation {
        rule: RuleId::Supported,
        what: "an op Core ML cannot run tagged into a partition",
        apply: |s| {
            let unsupported = s
                .graph
                .ids()
                .find(|&n| s.is_op(n) && !s.request.supported[n.index()])?;
            Some(s.retagged(&[(unsupported, Some(FRESH))]))
        },
    },
    Mutation {
        rule: RuleId::Convertible,
        what: "an op the converter refuses tagged into the partition of an op it reads",
        apply: |s| {
            s.graph.ids().find_map(|n| {
                let refused = s.is_op(n)
                    && s.request.supported[n.index()]
                    && (s.graph.node(n).conversion.as_ref()).is_some_and(|c| !c.converts);
                if !refused {
                    return None;
                }
                let input = s.graph.node(n).inputs.iter().find_map(|&i| s.tag(i))?;
                Some(s.retagged(&[(n, Some(input))]))
            })
        },
    },
    Mutation {
        rule: RuleId::Supported,
        what: "the graph output tagged",
        apply: |s| {
            let output = s.graph.ids().find(|&n| s.graph.op(n) == OpKind::Output)?;
            Some(s.retagged(&[(output, Some(FRESH))]))
        },
    },
    Mutation {
        rule: RuleId::NoHiddenState,
        what: "a buffer's placeholder tagged with its writer although take-over is off",
        apply: |s| {
            if s.request.options.take_over_mutable_buffer {
                return None;
            }
            s.graph.signature.mutable_buffers.iter().find_map(|b| {
                let w = s.tag(b.writer)?;
                Some(s.retagged(&[(b.placeholder, Some(w))]))
            })
        },
    },
    Mutation {
        rule: RuleId::NoStaleCopy,
        what: "a buffer's placeholder tagged away from its writer",
        apply: |s| {
            let b = s.graph.signature.mutable_buffers.first()?;
            Some(s.retagged(&[(b.placeholder, Some(FRESH))]))
        },
    },
    Mutation {
        rule: RuleId::StateWhole,
        what: "a chain node or old-value reader of a state moved to CPU",
        apply: |s| {
            s.analysis.buffers.iter().find_map(|b| {
                let owner = s
                    .tag(b.placeholder)
                    .filter(|&t| s.tag(b.writer) == Some(t))?;
                let part = b
                    .chain
                    .iter()
                    .chain(&b.placeholder_readers)
                    .find(|&&n| n != b.writer && s.tag(n) == Some(owner))?;
                Some(s.retagged(&[(*part, None)]))
            })
        },
    },
    Mutation {
        rule: RuleId::StateTarget,
        what: "a plan holding states that says its target is iOS17",
        apply: |s| {
            (s.plan.draft.measure.states() > 0).then(|| {
                let mut mutant = s.plan.clone();
                mutant.draft.options.minimum_deployment_target = Some(DeploymentTarget::Ios17);
                mutant
            })
        },
    },
    Mutation {
        rule: RuleId::TupleWhole,
        what: "a getitem moved away from the multi-output op it reads",
        apply: |s| {
            let g = s.graph.ids().find(|&n| {
                s.graph.node(n).is_getitem()
                    && s.graph.node(n).inputs.first().is_some_and(|&p| s.is_op(p))
            })?;
            let moved = if s.tag(g).is_some() {
                None
            } else {
                Some(FRESH)
            };
            Some(s.retagged(&[(g, moved)]))
        },
    },
    Mutation {
        rule: RuleId::NoInputTarget,
        what: "below iOS18, an op that reads only constants delegated alone",
        apply: |s| {
            if s.request.options.minimum_deployment_target >= Some(DeploymentTarget::Ios18) {
                return None;
            }
            let n = s.graph.ids().find(|&n| {
                s.is_op(n)
                    && s.request.supported[n.index()]
                    && s.graph
                        .node(n)
                        .inputs
                        .iter()
                        .all(|&i| s.graph.role(i).is_constant_data())
            })?;
            let mut moves = vec![(n, Some(FRESH))];
            moves.extend(s.graph.node(n).inputs.iter().map(|&i| (i, Some(FRESH))));
            Some(s.retagged(&moves))
        },
    },
    Mutation {
        rule: RuleId::ConstantSharing,
        what: "a constant tagged alone, away from every op that reads it",
        apply: |s| {
            let c = s
                .graph
                .ids()
                .find(|&n| s.graph.role(n).is_constant_data() && !s.users[n.index()].is_empty())?;
            Some(s.retagged(&[(c, Some(FRESH))]))
        },
    },
    Mutation {
        rule: RuleId::PlanMatchesTags,
        what: "a buffer's strategy misreported",
        apply: |s| {
            let mut mutant = s.plan.clone();
            let b = mutant.draft.buffers.first_mut()?;
            b.strategy = if b.strategy == Strategy::State {
                Strategy::Io
            } else {
                Strategy::State
            };
            Some(mutant)
        },
    },
    Mutation {
        rule: RuleId::PlanMatchesTags,
        what: "one delegate partition too few reported",
        apply: |s| {
            let mut mutant = s.plan.clone();
            mutant.draft.measure.partitions.pop()?;
            Some(mutant)
        },
    },
    Mutation {
        rule: RuleId::BoundaryValues,
        what: "an op making a value no boundary takes (rank 6, an expression size) moved to a partition of its own, its reader left",
        apply: |s| {
            s.graph.ids().find_map(|n| {
                let p = s.tag(n).filter(|_| s.is_op(n))?;
                s.graph.uncrossable(n)?;
                let read_inside = s.users[n.index()].iter().any(|&u| s.tag(u) == Some(p));
                read_inside.then(|| s.retagged(&[(n, Some(FRESH))]))
            })
        },
    },
    Mutation {
        rule: RuleId::WithinBudget,
        what: "a budget of ops one below the largest partition, the tags kept (a planner ignoring it)",
        apply: |s| {
            let largest = s
                .plan
                .draft
                .measure
                .partitions
                .iter()
                .map(|p| p.nodes)
                .max()?;
            let mut mutant = s.plan.clone();
            mutant.draft.options.max_ops = Some(largest as u64 - 1);
            Some(mutant)
        },
    },
    Mutation {
        rule: RuleId::WithinBudget,
        what: "a budget of constant bytes one below the heaviest partition, the tags kept",
        apply: |s| {
            let heaviest = s
                .plan
                .draft
                .measure
                .partitions
                .iter()
                .map(|p| p.weight_bytes)
                .max()?;
            let mut mutant = s.plan.clone();
            mutant.draft.options.max_weight_bytes = Some(heaviest.checked_sub(1)?);
            Some(mutant)
        },
    },
];

fn subjects() -> Vec<Subject> {
    let mut graphs: Vec<(String, Graph)> = Vec::new();
    for (version, path) in common::data::all_documents() {
        let text = std::fs::read_to_string(&path).expect("readable");
        let graph = parse_graph(&text).expect("imports");
        graphs.push((format!("executorch-{version}/{}", path.display()), graph));
    }
    for seed in [1, 2, 3] {
        let text = generate(3000, seed).expect("generates");
        graphs.push((
            format!("generated 3000 nodes, seed {seed}"),
            parse_graph(&text).expect("imports"),
        ));
    }
    let mut subjects = Vec::new();
    for (name, graph) in &graphs {
        for (take_over, target) in [
            (true, DeploymentTarget::Ios18),
            (false, DeploymentTarget::Ios18),
            (false, DeploymentTarget::Ios17),
        ] {
            subjects.push(Subject::new(name, graph, take_over, target));
        }
    }
    subjects
}

#[test]
fn the_checker_catches_every_mutation_of_real_plans() {
    let mut caught: BTreeMap<&str, usize> = BTreeMap::new();
    let mut missed = Vec::new();
    for s in subjects() {
        let clean = s.caught(&s.plan);
        assert!(
            clean.iter().all(|r| r.is_cost()),
            "{}: the unmutated plan already breaks {clean:?}",
            s.name
        );
        for m in MUTATIONS {
            let Some(mutant) = (m.apply)(&s) else {
                continue;
            };
            if s.caught(&mutant).contains(&m.rule) {
                *caught.entry(m.what).or_default() += 1;
            } else {
                missed.push(format!("{}: {} ({})", s.name, m.what, m.rule));
            }
        }
    }
    assert!(missed.is_empty(), "the checker missed: {missed:#?}");
    // Every mutation, and so every rule, found a spot somewhere.
    for m in MUTATIONS {
        assert!(caught.contains_key(m.what), "never applied: {}", m.what);
    }
    for rule in RuleId::ALL {
        assert!(
            MUTATIONS.iter().any(|m| m.rule == rule),
            "no mutation breaks {rule}"
        );
    }
    eprintln!("{caught:#?}");
}

//! `auto`: choose each buffer's strategy among those the options allow by the cost model's
//! estimate of the whole plan. Buffers interact (one chain on CPU splits the partitions every other
//! value crosses), so every candidate is planned whole and estimated whole.
//!
//! With take-over on at iOS18 or later every buffer is first tried as a state, and one that can be
//! a state stays one. The rest (every buffer, when states are not allowed) are searched: the
//! search starts from the best of the states-first plan and the uniform assignments (all `io`, all
//! `cpu`), so its result is never estimated above any of them. It then moves one class of
//! interchangeable buffers at a time (same kind, size, chain length and writer op: the KV caches of
//! every layer, say) to the other strategy, keeping a move that lowers the estimate, until no move
//! does (the best move of each pass; a pass's candidates are planned on two threads on a large
//! graph). Moving a class rather than a buffer is what finds "every layer's cache on CPU" even when
//! splitting at one layer alone never pays. Each candidate plan costs one O(V + E) planning pass.

use super::cut_patterns::AskedCut;
use super::strategy::{self, Asked, Decided};
use super::{Alternative, PlanRequest, Strategy, StrategyRequest};
use crate::analyse::{Analysis, BufferChain};
use crate::cost::{CostEstimate, Scratch, estimate};
use crate::decision::{Basis, Decision, KeptState, Reason, Refusal};
use crate::graph::Graph;
use crate::rules::RuleId;
use hashbrown::HashMap;
use std::rc::Rc;

/// What the search settled on.
pub(super) struct Searched {
    pub decided: Decided,
    pub estimate: CostEstimate,
    /// Per buffer: the alternatives weighed for it (empty for a fixed request).
    pub alternatives: Vec<Vec<Alternative>>,
    /// Per buffer: how many buffers were decided together with it (its class), 0 for fixed.
    pub class_size: Vec<usize>,
    /// Refused merges of states the chosen plan does not keep: the findings (with their cycle
    /// paths) of the candidate that tried them, so that the refusal is explained either way.
    pub refusals: Vec<Decision>,
    /// Candidate plans the search estimated.
    pub evaluated: usize,
}

/// At most this many passes over the classes: each kept move lowers the estimate, so the search
/// ends anyway; the bound keeps pathological graphs linear in practice.
const MAX_PASSES: usize = 8;

struct Evaluation {
    decided: Decided,
    estimate: CostEstimate,
}

struct Evaluator<'a> {
    graph: &'a Graph,
    analysis: &'a Analysis,
    request: &'a PlanRequest,
    asked: Asked<'a>,
    /// Shared: two assignments can plan the same tags (a refused state is on CPU either way).
    memo: HashMap<Vec<Strategy>, Rc<Evaluation>>,
    scratch: Scratch,
}

/// Graphs this large plan a batch of candidates on two threads; below it a thread costs more than
/// it saves.
const TWO_THREADS_FROM: usize = 10_000;

/// One candidate: the plan of `assigned`, and its estimate.
fn evaluate(
    graph: &Graph,
    analysis: &Analysis,
    request: &PlanRequest,
    asked: Asked,
    assigned: &[Strategy],
    scratch: &mut Scratch,
) -> Evaluation {
    let decided = strategy::decide(graph, analysis, request, asked, assigned);
    let estimate = estimate(
        graph,
        &analysis.index,
        &request.options,
        &request.cost,
        &decided.partition,
        decided.partition_count as usize,
        scratch,
    );
    Evaluation { decided, estimate }
}

impl Evaluator<'_> {
    fn evaluate(&mut self, assigned: &[Strategy]) -> Evaluation {
        evaluate(
            self.graph,
            self.analysis,
            self.request,
            self.asked,
            assigned,
            &mut self.scratch,
        )
    }

    /// Plans every candidate not planned yet, half of them on a second thread when the graph is
    /// large: candidates are independent, so a batch takes the time of about half of them.
    fn prepare(&mut self, candidates: &[Vec<Strategy>]) {
        let mut missing: Vec<&Vec<Strategy>> = Vec::new();
        for c in candidates {
            if !self.memo.contains_key(c.as_slice()) && !missing.contains(&c) {
                missing.push(c);
            }
        }
        if missing.len() < 2 || self.graph.len() < TWO_THREADS_FROM {
            for c in missing {
                self.get(c);
            }
            return;
        }
        let (theirs, ours) = missing.split_at(missing.len() / 2);
        let (graph, analysis, request, asked) =
            (self.graph, self.analysis, self.request, self.asked);
        let scratch = &mut self.scratch;
        let done = std::thread::scope(|s| {
            let helper = s.spawn(move || {
                let mut scratch = Scratch::default();
                theirs
                    .iter()
                    .map(|c| evaluate(graph, analysis, request, asked, c, &mut scratch))
                    .collect::<Vec<_>>()
            });
            let mine: Vec<Evaluation> = ours
                .iter()
                .map(|c| evaluate(graph, analysis, request, asked, c, scratch))
                .collect();
            match helper.join() {
                Ok(helped) => helped.into_iter().chain(mine).collect::<Vec<_>>(),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        });
        for (c, e) in theirs.iter().chain(ours).zip(done) {
            self.memo.insert((*c).clone(), Rc::new(e));
        }
    }

    fn get(&mut self, assigned: &[Strategy]) -> &Evaluation {
        if !self.memo.contains_key(assigned) {
            let e = self.evaluate(assigned);
            self.memo.insert(assigned.to_vec(), Rc::new(e));
        }
        &self.memo[assigned]
    }

    /// The evaluation of `assigned`, the memo given up (so that it is not copied).
    fn into_evaluation(mut self, assigned: &[Strategy]) -> Evaluation {
        let Some(shared) = self.memo.remove(assigned) else {
            return self.evaluate(assigned);
        };
        self.memo.clear();
        Rc::try_unwrap(shared).unwrap_or_else(|rc| Evaluation {
            decided: rc.decided.clone(),
            estimate: rc.estimate,
        })
    }
}

/// Interchangeable buffers: same kind, size, chain length and writer op.
fn class_key(graph: &Graph, chain: &BufferChain) -> (bool, Option<u64>, usize, String) {
    (
        chain.kind == crate::analyse::MutationKind::Slice,
        graph.value_bytes[chain.placeholder.index()],
        chain.chain.len(),
        graph.node(chain.writer).target.to_string(),
    )
}

pub(super) fn search(
    graph: &Graph,
    analysis: &Analysis,
    request: &PlanRequest,
    requested: &[StrategyRequest],
    cuts: &[AskedCut],
) -> Searched {
    let options = &request.options;
    let states_allowed = options.take_over_mutable_buffer && options.target_allows_states();
    let auto: Vec<bool> = requested
        .iter()
        .map(|r| *r == StrategyRequest::Auto)
        .collect();
    let mut eval = Evaluator {
        graph,
        analysis,
        request,
        asked: Asked {
            strategies: requested,
            cuts,
        },
        memo: HashMap::new(),
        scratch: Scratch::default(),
    };
    let start: Vec<Strategy> = requested
        .iter()
        .map(|r| match r {
            StrategyRequest::Fixed(s) => *s,
            StrategyRequest::Auto if states_allowed => Strategy::State,
            StrategyRequest::Auto => Strategy::Io,
        })
        .collect();
    if !states_allowed {
        // Every auto buffer is searched: the two uniform assignments can be planned together.
        let all_cpu: Vec<Strategy> = start
            .iter()
            .zip(&auto)
            .map(|(&s, &auto)| if auto { Strategy::Cpu } else { s })
            .collect();
        eval.prepare(&[start.clone(), all_cpu]);
    }
    // With take-over on, a buffer that can be a state stays one; the search weighs io against cpu
    // for the rest. What kept the others from being states is the first plan's account.
    let first = &eval.get(&start).decided;
    let kept: Vec<bool> = (0..requested.len())
        .map(|b| states_allowed && auto[b] && first.outcomes[b].strategy == Strategy::State)
        .collect();
    let state_refusals: Vec<Option<Refusal>> = first
        .outcomes
        .iter()
        .map(|o| o.state_refusal.clone())
        .collect();
    let searched: Vec<bool> = (0..requested.len()).map(|b| auto[b] && !kept[b]).collect();
    // The first plan's refusals of the buffers searched, for the case the chosen plan is another.
    let refusals: Vec<Decision> = first
        .decisions
        .iter()
        .filter(|d| matches!(d, Decision::StateOnCycle { buffer, .. } if searched[*buffer]))
        .cloned()
        .collect();
    // The first plan itself, in effect: refused states are on CPU there. Planning that assignment
    // gives the same tags, so it is not planned again.
    let mut best: Vec<Strategy> = start
        .iter()
        .zip(&first.outcomes)
        .zip(&searched)
        .map(|((&s, o), &searched)| if searched { o.strategy } else { s })
        .collect();
    let first_aliased = best != start;
    if first_aliased {
        let same = Rc::clone(&eval.memo[&start]);
        eval.memo.insert(best.clone(), same);
    }
    // A candidate that gives up a kept state is not a choice.
    let keeps_states = |e: &Evaluation| {
        (0..requested.len()).all(|b| !kept[b] || e.decided.outcomes[b].strategy == Strategy::State)
    };
    let cost = |eval: &mut Evaluator, candidate: &[Strategy]| {
        let e = eval.get(candidate);
        if keeps_states(e) {
            e.estimate.total_us
        } else {
            f64::INFINITY
        }
    };
    // Classes of searched buffers, in order of their first member.
    let mut class_of_key: HashMap<_, usize> = HashMap::new();
    let mut classes: Vec<Vec<usize>> = Vec::new();
    for (b, chain) in analysis.buffers.iter().enumerate() {
        if searched[b] {
            let next = classes.len();
            let c = *class_of_key.entry(class_key(graph, chain)).or_insert(next);
            if c == next {
                classes.push(Vec::new());
            }
            classes[c].push(b);
        }
    }
    let all_searched: Vec<usize> = classes.iter().flatten().copied().collect();
    let with = |base: &[Strategy], members: &[usize], s: Strategy| {
        let mut candidate = base.to_vec();
        for &b in members {
            candidate[b] = s;
        }
        candidate
    };
    const CHOICES: [Strategy; 2] = [Strategy::Io, Strategy::Cpu];
    // Each class moved to each strategy, everything else as in `base`.
    let moves = |base: &[Strategy]| -> Vec<Vec<Strategy>> {
        classes
            .iter()
            .flat_map(|members| CHOICES.map(|s| with(base, members, s)))
            .filter(|candidate| candidate.as_slice() != base)
            .collect()
    };
    if !classes.is_empty() {
        // The uniform assignments first (io wins a tie), then the best single class move of each
        // pass, until none lowers the estimate.
        let uniforms = CHOICES.map(|s| with(&best, &all_searched, s));
        eval.prepare(&uniforms);
        for candidate in uniforms {
            if cost(&mut eval, &candidate) < cost(&mut eval, &best) {
                best = candidate;
            }
        }
        for _ in 0..MAX_PASSES {
            let candidates = moves(&best);
            eval.prepare(&candidates);
            let mut improved = None;
            let mut lowest = cost(&mut eval, &best);
            for candidate in candidates {
                let c = cost(&mut eval, &candidate);
                if c < lowest {
                    lowest = c;
                    improved = Some(candidate);
                }
            }
            match improved {
                Some(candidate) => best = candidate,
                None => break,
            }
        }
    }
    // Each class's alternatives against the chosen plan: the last pass estimated them already.
    eval.prepare(&moves(&best));
    let mut alternatives = vec![Vec::new(); requested.len()];
    let mut class_size = vec![0; requested.len()];
    let states_first = eval.memo[&start].estimate;
    for members in &classes {
        for &b in members {
            class_size[b] = members.len();
            if states_allowed {
                alternatives[b].push(Alternative {
                    strategy: Strategy::State,
                    estimate: states_first,
                    refused: state_refusals[b].clone(),
                });
            }
        }
        for s in CHOICES {
            let candidate = with(&best, members, s);
            let e = eval.get(&candidate);
            let lost = (0..requested.len())
                .find(|&k| kept[k] && e.decided.outcomes[k].strategy != Strategy::State);
            let refused = lost.map(|k| Refusal::WouldCostState {
                buffer: k,
                because: e.decided.outcomes[k].state_refusal.clone().map(Box::new),
            });
            for &b in members {
                alternatives[b].push(Alternative {
                    strategy: s,
                    estimate: e.estimate,
                    refused: refused.clone(),
                });
            }
        }
    }
    let evaluated = eval.memo.len() - usize::from(first_aliased);
    let chosen_is_first = Rc::ptr_eq(&eval.memo[&best], &eval.memo[&start]);
    let chosen = eval.into_evaluation(&best);
    Searched {
        decided: chosen.decided,
        estimate: chosen.estimate,
        alternatives,
        class_size,
        // The first plan's refusals are already the chosen plan's own when it is that plan.
        refusals: if chosen_is_first {
            Vec::new()
        } else {
            refusals
        },
        evaluated,
    }
}

/// The account of one `auto` buffer's decision: why a state was or was not possible, and the
/// choice among the alternatives (which the decision carries). `outcome` is the chosen plan's for
/// this buffer; `kept` the state it keeps, if any.
pub(super) fn explain(
    request: &PlanRequest,
    outcome: &strategy::Outcome,
    kept: Option<KeptState>,
    alternatives: &[Alternative],
    class_size: usize,
) -> (Reason, Option<RuleId>) {
    let options = &request.options;
    let refusal = alternatives
        .iter()
        .find(|a| a.strategy == Strategy::State)
        .and_then(|a| a.refused.as_ref());
    let basis = if !options.take_over_mutable_buffer {
        Basis::Refused(Refusal::TakeOverOff)
    } else if !options.target_allows_states() {
        Basis::Refused(Refusal::TargetBelowIos18(options.minimum_deployment_target))
    } else if let Some(kept) = kept.filter(|_| outcome.strategy == Strategy::State) {
        Basis::Kept(kept)
    } else if let Some(refusal) = refusal {
        Basis::Refused(refusal.clone())
    } else {
        Basis::NoState
    };
    let rule = match &basis {
        Basis::Kept(_) => Some(RuleId::StateWhole),
        Basis::Refused(r) => Some(r.rule()),
        Basis::NoState => None,
    };
    let reason = Reason::Weighed {
        basis,
        chosen: outcome.strategy,
        class_size,
    };
    (reason, rule)
}

//! What-if planning: a session holds one imported and analysed graph and answers changed requests
//! without analysing again (analysis depends on structure only). Each answer is a plan, how it
//! differs from the session's base plan, and the checker's verdict on it. Changes are values
//! (`crate::whatif`), applied to a copy of the base request. The stock side is made again only for
//! a scenario that asks something else of it.

use super::{plan, run_in, verify_in, verify_plan};
use crate::analyse::Analysis;
use crate::check::GraphView;
use crate::graph::Graph;
use crate::outcome::{Plan, Verdict};
use crate::plan::{PlanError, PlanRequest, draft};
use crate::whatif::{Callers, Change, PlanDiff, WhatIf, WhatIfError, diff};

pub struct Session {
    pub graph: Graph,
    pub analysis: Analysis,
    pub base_request: PlanRequest,
    pub base: Plan,
    pub base_verdict: Verdict,
    callers: Callers,
    /// The checker's view of `graph`, built for the base plan's verdict and reused for every
    /// scenario's.
    check_view: GraphView,
}

impl Session {
    /// Analyses `graph` once and plans the request `base_request` makes of it.
    pub fn new(graph: Graph, base_request: PlanRequest) -> Result<Self, PlanError> {
        let check_view = GraphView::default();
        let run = run_in(&check_view, &graph, &base_request)?;
        Ok(Session {
            callers: Callers::of(&graph),
            graph,
            analysis: run.analysis,
            base_request,
            base: run.plan,
            base_verdict: run.verdict,
            check_view,
        })
    }

    /// The base request with `changes` applied in order.
    pub fn request(&self, changes: &[Change]) -> Result<PlanRequest, WhatIfError> {
        self.callers
            .request(&self.graph, &self.base_request, changes)
    }

    /// The plan for the base request with `changes` applied, how it differs from the base plan,
    /// and the checker's verdict on it.
    pub fn what_if(&self, changes: &[Change]) -> Result<WhatIf, WhatIfError> {
        let request = self.request(changes)?;
        let (plan, diff) = self.answer(&request)?;
        let verdict = if self.same_stock_as_base(&request) {
            Verdict {
                plan: verify_plan(&self.check_view, &self.graph, &plan.draft, &request),
                stock: self.base_verdict.stock.clone(),
            }
        } else {
            verify_in(&self.check_view, &self.graph, &plan, &request)
        };
        Ok(WhatIf {
            plan,
            diff,
            verdict,
        })
    }

    /// The plan for `request` and how it differs from the base plan, unchecked.
    pub fn answer(&self, request: &PlanRequest) -> Result<(Plan, PlanDiff), WhatIfError> {
        let plan = if self.same_stock_as_base(request) {
            Plan {
                draft: draft(&self.graph, &self.analysis, request)?,
                stock: self.base.stock.clone(),
            }
        } else {
            plan(&self.graph, &self.analysis, request)?
        };
        let diff = diff(&self.graph, &self.base, &plan);
        Ok((plan, diff))
    }

    /// Whether `request` asks what the base request asks of the stock side: the same options and
    /// support (what the proposal is reproduced for and checked under) and the same cost model
    /// (what it is estimated with). Then the base plan's stock comparison and the checker's
    /// findings on it stand: a scenario that changes strategies, budgets or cuts does not
    /// reproduce stock again (a large untagged graph's costliest part).
    fn same_stock_as_base(&self, request: &PlanRequest) -> bool {
        let base = &self.base_request;
        request.options == base.options
            && request.supported == base.supported
            && request.cost == base.cost
    }
}

#[cfg(test)]
mod tests;

//! `partition_planner._native`: a thin binding over the Rust library. Strings in, strings out; no
//! planning logic lives here.

use partition_planner::api::CostOverrides;
use partition_planner::api::{
    ApiError, Checking, Overrides, Picture, PictureFormat, Planned, check_document, plan_document,
    plan_on_graph, unsized_warnings,
};
use partition_planner::cost::CostModel;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

fn overrides(json: Option<&str>) -> PyResult<Overrides> {
    match json {
        None => Ok(Overrides::default()),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| PyValueError::new_err(format!("invalid overrides: {e}"))),
    }
}

fn value_error(e: ApiError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Plans outside the GIL; shared by `plan` and `plan_text`.
fn planned(py: Python<'_>, graph: &str, overrides: Option<&str>) -> PyResult<Planned> {
    let o = self::overrides(overrides)?;
    py.detach(|| plan_document(graph, &o)).map_err(value_error)
}

/// Plans a bridge JSON document; returns the `partition-planner/plan@1` document as JSON text.
/// `overrides` is JSON, every part optional: `{"options": {"take_over_mutable_buffer": bool,
/// "take_over_constant_data": bool, "minimum_deployment_target": "iOS18", "compute_unit": ...,
/// "compute_precision": ...}, "strategies": ["cpu", "BUFFER=state"], "cost": {"call_overhead_us":
/// 200.0, "bytes_per_us": 10000.0, "cpu_op_us": 5.0}}`.
#[pyfunction]
#[pyo3(signature = (graph, overrides=None))]
fn plan(py: Python<'_>, graph: &str, overrides: Option<&str>) -> PyResult<String> {
    serde_json::to_string(&planned(py, graph, overrides)?.json())
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// One plan, kept so that its document, report, manifest and pictures are written from it when
/// asked for, rather than planned again.
#[pyclass(frozen, module = "partition_planner._native", name = "Plan")]
struct PlanHandle {
    planned: Planned,
}

#[pymethods]
impl PlanHandle {
    /// The `plan@1` document as JSON text.
    fn json(&self) -> PyResult<String> {
        serde_json::to_string(&self.planned.json())
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The text report a person reads.
    fn text(&self) -> String {
        self.planned.text()
    }

    /// What the planner warns of on this graph, as the CLI does: nodes whose value has a dtype but
    /// no size it can count (budgets and weights leave them out), the first five by name.
    fn warnings(&self) -> Vec<String> {
        unsized_warnings(&self.planned.graph, 5)
    }

    /// The `partition-planner/manifest@1` document as JSON text.
    fn manifest(&self) -> PyResult<String> {
        serde_json::to_string(&self.planned.manifest())
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The plan drawn beside the stock proposal, as `render` draws it.
    #[pyo3(signature = (format="html", title="graph"))]
    fn render(&self, py: Python<'_>, format: &str, title: &str) -> PyResult<String> {
        let format: PictureFormat = format.parse().map_err(PyValueError::new_err)?;
        let title = self.planned.title(title);
        picture_text(py.detach(|| self.planned.picture(format, &title)))
    }
}

/// Plans as `plan` does, for `PlannedCoreMLPartitioner.partition()`: the plan, kept (`Plan`), each
/// node's tag by name (None: on CPU) and the partitions' tags in the plan's order. Applying a plan
/// needs only the tags; its document, read as JSON, costs a small program more than planning it,
/// and is written when asked for.
#[pyfunction]
#[pyo3(signature = (graph, overrides=None))]
fn plan_with_tags<'py>(
    py: Python<'py>,
    graph: &str,
    overrides: Option<&str>,
) -> PyResult<(PlanHandle, Bound<'py, PyDict>, Vec<String>)> {
    let planned = planned(py, graph, overrides)?;
    let tagging = &planned.plan.draft.tagging;
    // A tag's Python string once per partition.
    let tags: Vec<Bound<'py, PyString>> = (0..tagging.partition_count())
        .map(|p| PyString::new(py, tagging.name(p as u32)))
        .collect();
    let node_tags = PyDict::new(py);
    for n in planned.graph.ids() {
        let name = planned.graph.name(n);
        match tagging.partition(n) {
            Some(p) => node_tags.set_item(name, &tags[p as usize])?,
            None => node_tags.set_item(name, py.None())?,
        }
    }
    let partitions = planned
        .plan
        .draft
        .measure
        .partitions
        .iter()
        .map(|p| p.tag.clone())
        .collect();
    Ok((PlanHandle { planned }, node_tags, partitions))
}

/// Checks the tags a bridge JSON document carries; returns `partition-planner/check@1` as JSON text.
/// With `stock=True`, checks the stock proposal reproduced for `executorch` (a version string; the
/// document's by default) instead: its `node_tags` are what `CoreMLPartitioner` would tag.
#[pyfunction]
#[pyo3(signature = (graph, overrides=None, stock=false, executorch=None))]
fn check(
    py: Python<'_>,
    graph: &str,
    overrides: Option<&str>,
    stock: bool,
    executorch: Option<&str>,
) -> PyResult<String> {
    let o = self::overrides(overrides)?;
    let checking = Checking::from_flags(stock, executorch)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let checked = py
        .detach(|| check_document(graph, &o, checking))
        .map_err(value_error)?;
    serde_json::to_string(&checked.json()).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Plans a document and renders the text report a person reads.
#[pyfunction]
#[pyo3(signature = (graph, overrides=None))]
fn plan_text(py: Python<'_>, graph: &str, overrides: Option<&str>) -> PyResult<String> {
    Ok(planned(py, graph, overrides)?.text())
}

/// Plans a document and returns its `partition-planner/manifest@1`: one content key per delegate
/// partition, for a Core ML cache to drop what changed.
#[pyfunction]
#[pyo3(signature = (graph, overrides=None))]
fn manifest(py: Python<'_>, graph: &str, overrides: Option<&str>) -> PyResult<String> {
    serde_json::to_string(&planned(py, graph, overrides)?.manifest())
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Plans a document and draws the plan beside the stock proposal. `format`: `html` (one
/// self-contained page), `svg` or `dot` return the text; `model-explorer` returns a JSON object of file
/// name to content, one Model Explorer node-data overlay each.
#[pyfunction]
#[pyo3(signature = (graph, overrides=None, format="html", title="graph"))]
fn render(
    py: Python<'_>,
    graph: &str,
    overrides: Option<&str>,
    format: &str,
    title: &str,
) -> PyResult<String> {
    let format: PictureFormat = format.parse().map_err(PyValueError::new_err)?;
    let planned = planned(py, graph, overrides)?;
    let title = planned.title(title);
    picture_text(py.detach(|| planned.picture(format, &title)))
}

/// Draws a plan already made (`plan`, the `plan@1` JSON text) over its graph, as `render` draws a
/// plan made here; a plan for another graph raises `ValueError`.
#[pyfunction]
#[pyo3(signature = (graph, plan, format="html", title="graph"))]
fn render_plan(
    py: Python<'_>,
    graph: &str,
    plan: &str,
    format: &str,
    title: &str,
) -> PyResult<String> {
    let format: PictureFormat = format.parse().map_err(PyValueError::new_err)?;
    let given = py
        .detach(|| plan_on_graph(graph, plan))
        .map_err(value_error)?;
    let title = given.title(title);
    picture_text(py.detach(|| given.picture(format, &title)))
}

/// A picture as text: the picture itself, or a JSON object of file name to content.
fn picture_text(picture: Picture) -> PyResult<String> {
    match picture {
        Picture::Text(text) => Ok(text),
        Picture::Files(files) => {
            let files: serde_json::Map<String, serde_json::Value> = files
                .into_iter()
                .map(|(name, text)| (name, serde_json::Value::String(text)))
                .collect();
            serde_json::to_string(&files).map_err(|e| PyValueError::new_err(e.to_string()))
        }
    }
}

/// The cost constants `auto` would weigh plans by: the defaults with `cost` (JSON, every constant
/// optional) applied, as JSON. Raises `ValueError` for an unknown name or an unusable value.
#[pyfunction]
#[pyo3(signature = (cost=None))]
fn cost_model(cost: Option<&str>) -> PyResult<String> {
    let given: CostOverrides = match cost {
        None => CostOverrides::default(),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| PyValueError::new_err(format!("invalid cost constants: {e}")))?,
    };
    given
        .validate()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    serde_json::to_string(&given.apply_to(&CostModel::default()))
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Checks overrides before there is a graph (`Overrides::validate`): cost constants, strategy
/// spellings, and no `state` asked for while the overrides' own options forbid states. Raises
/// `ValueError` naming the problem; returns None.
#[pyfunction]
fn validate_overrides(overrides: &str) -> PyResult<()> {
    self::overrides(Some(overrides))?
        .validate()
        .map_err(value_error)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cost_model, m)?)?;
    m.add_function(wrap_pyfunction!(validate_overrides, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(plan_with_tags, m)?)?;
    m.add_class::<PlanHandle>()?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(plan_text, m)?)?;
    m.add_function(wrap_pyfunction!(manifest, m)?)?;
    m.add_function(wrap_pyfunction!(render, m)?)?;
    m.add_function(wrap_pyfunction!(render_plan, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    for (name, schema) in partition_planner::schema::ALL {
        m.add(name, schema)?;
    }
    Ok(())
}

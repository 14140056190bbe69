//! `partition-planner`: plan, check, whatif, render, generate and manifest-diff, calling the
//! library's `api` alone. Exit 0 ok; 1 a rule broken (`check`, `render --plan`) or manifests that
//! differ (`manifest-diff --exit-code`); 2 bad input or usage; 3 a plan the planner's own checker
//! rejects (a bug: please report it). docs/cli.md is the reference.

mod args;
mod files;
mod terminal;

use args::{Asked, Cli, Command, Cuts, Format, Input, OutputControl, PictureArg, Planning, Report};
use files::{GraphBytes, Sink, is_dash, named, not_to_a_terminal, one_standard_input, read_text};
use partition_planner::api::{
    ApiError, Checking, Explained, Graph, Manifest, Overrides, PartialOptions, Picture,
    PictureFormat, Scenario, Shown, check_graph, document_text, generate_document,
    manifest_diff_documents, manifest_diff_text, manifest_document, parse_graph, parse_scenarios,
    plan_graph, plan_graph_json, plan_on, unsized_warnings, verdict_line, whatif_graph,
};
use std::path::Path;
use std::process::ExitCode;
use terminal::{Progress, Terminal};

/// A failure that ends the command with its exit code and a message.
pub struct Failure(u8, String);

impl Failure {
    /// Input that cannot be read or used: exit 2.
    pub fn input(message: String) -> Self {
        Failure(2, message)
    }
    /// Arguments that do not go together: exit 2.
    pub fn usage(message: String) -> Self {
        Failure(2, message)
    }
}

/// Lines of each list and findings of each rule a text report shows unless `-v` is given.
const ROWS: usize = 20;
const FINDINGS_PER_RULE: usize = 5;

fn main() -> ExitCode {
    let cli = Cli::read(std::env::args_os().collect());
    let terminal = Terminal::new(&cli.output);
    match run(cli, &terminal) {
        Ok(code) => ExitCode::from(code),
        Err(Failure(code, message)) => {
            terminal.error(&message);
            ExitCode::from(code)
        }
    }
}

fn run(cli: Cli, terminal: &Terminal) -> Result<u8, Failure> {
    let shown = shown_by(&cli.output);
    match cli.command {
        Command::Plan {
            planning,
            report,
            emit_manifest,
        } => plan(
            terminal,
            &shown,
            &planning,
            &report,
            emit_manifest.as_deref(),
        ),
        Command::Check {
            input,
            report,
            stock,
            executorch,
        } => {
            let checking = Checking::from_flags(stock, executorch.as_deref())
                .map_err(|e| Failure::usage(format!("--executorch: {e}")))?;
            let out = Sink::prepare(report.output.as_deref())?;
            let overrides = overrides(&input, None, &Asked::default())?;
            let (graph, _progress) = open_graph(terminal, &input.graph)?;
            let checked = check_graph(graph, &overrides, checking);
            let text = match report.format {
                Format::Json => pretty(&checked.json())?,
                Format::Text => checked.text_with(&shown),
            };
            out.write([text.as_str()])?;
            let code = if checked.ok() { 0 } else { 1 };
            exiting(checked);
            Ok(code)
        }
        Command::Whatif {
            planning,
            report,
            changes,
            scenarios,
        } => whatif(
            terminal,
            &shown,
            &planning,
            &report,
            (&changes, scenarios.as_deref()),
        ),
        Command::Render {
            planning,
            format,
            plan,
            output,
        } => render(
            terminal,
            &planning,
            plan.as_deref(),
            format,
            output.as_deref(),
        ),
        Command::Generate {
            nodes,
            seed,
            output,
        } => {
            not_to_a_terminal(output.as_deref(), "a generated graph")?;
            let out = Sink::prepare(output.as_deref())?;
            let text = generate_document(nodes, seed)
                .map_err(|e| Failure::usage(format!("--nodes: {e}")))?;
            out.write([text.as_str()])?;
            Ok(0)
        }
        Command::ManifestDiff {
            old,
            new,
            format,
            output,
            exit_code,
        } => {
            one_standard_input([old.as_path(), new.as_path()])?;
            let out = Sink::prepare(output.as_deref())?;
            let load = |path: &Path| -> Result<Manifest, Failure> {
                manifest_document(&read_text(path)?)
                    .map_err(|e| Failure::input(format!("{}: {e}", named(path))))
            };
            let d = manifest_diff_documents(&load(&old)?, &load(&new)?);
            let report = match format {
                Format::Json => pretty(&d)?,
                Format::Text => manifest_diff_text(&d),
            };
            out.write([report.as_str()])?;
            let differ = !d.drop.is_empty() || !d.add.is_empty();
            Ok(u8::from(exit_code && differ))
        }
    }
}

/// The overrides of a command that plans: [`overrides`] with its cuts.
fn planned_overrides(planning: &Planning) -> Result<Overrides, Failure> {
    overrides(&planning.input, Some(&planning.cuts), &planning.asked)
}

/// What `-q`, `-v` and `--max-findings` ask of a text report.
fn shown_by(control: &OutputControl) -> Shown {
    if control.verbose {
        return Shown {
            findings_per_rule: control.max_findings,
            ..Shown::ALL
        };
    }
    Shown {
        quiet: control.quiet,
        rows: Some(ROWS),
        findings_per_rule: Some(control.max_findings.unwrap_or(FINDINGS_PER_RULE)),
    }
}

/// The overrides the flags make: the options given, the cuts (none for `check`), the strategies
/// and cost constants. A strategy misspelled is the flag's error, found before the graph is read.
fn overrides(input: &Input, cuts: Option<&Cuts>, asked: &Asked) -> Result<Overrides, Failure> {
    let cut = |patterns: &Vec<String>| (!patterns.is_empty()).then(|| patterns.clone());
    let overrides = Overrides {
        options: PartialOptions {
            take_over_mutable_buffer: input.take_over_mutable_buffer,
            take_over_constant_data: input.take_over_constant_data,
            minimum_deployment_target: input.min_target,
            max_weight_bytes: input.max_weight_bytes,
            max_ops: input.max_ops,
            cut_after: cuts.and_then(|c| cut(&c.cut_after)),
            cut_before: cuts.and_then(|c| cut(&c.cut_before)),
            ..PartialOptions::default()
        },
        strategies: asked.strategies.clone(),
        cost: asked.cost(),
    };
    overrides.check_spelling().map_err(|e| match e {
        ApiError::Strategy(_) => Failure::usage(format!("--strategy: {e}")),
        e => Failure::usage(format!("--cost: {e}")),
    })?;
    Ok(overrides)
}

/// The graph document at `path` (`-`: standard input), imported, its text freed; an error names
/// the path, and a value of unknown size is a warning that names the node. Freed before any
/// work: a large document's text is more than a quarter of the memory planning it takes at its
/// peak. The progress line, for a large document on a terminal, lives as long as the caller
/// keeps it.
fn open_graph(terminal: &Terminal, path: &Path) -> Result<(Graph, Progress), Failure> {
    let bytes = GraphBytes::open(path)?;
    let progress = terminal.progress(
        format!("reading {}", named(path)),
        bytes.bytes().len() as u64,
    );
    let text = document_text(bytes.bytes()).ok_or_else(|| {
        Failure::input(format!(
            "cannot read {}: stream did not contain valid UTF-8",
            named(path)
        ))
    })?;
    let graph = parse_graph(text).map_err(|e| Failure::input(format!("{}: {e}", named(path))))?;
    drop(bytes);
    warn_of_unsized(terminal, path, &graph);
    progress.step(format!("planning {} nodes", graph.len()));
    Ok((graph, progress))
}

/// Nodes whose value has a dtype but no size: named, the first few, since budgets and weights
/// leave them out.
fn warn_of_unsized(terminal: &Terminal, path: &Path, graph: &Graph) {
    for warning in unsized_warnings(graph, 5) {
        terminal.warning(&format!("{}: {warning}", named(path)));
    }
}

fn plan(
    terminal: &Terminal,
    shown: &Shown,
    planning: &Planning,
    report: &Report,
    emit_manifest: Option<&Path>,
) -> Result<u8, Failure> {
    let input = &planning.input;
    // Every output is checked before any work: a manifest that cannot be written fails at once.
    let out = Sink::prepare(report.output.as_deref())?;
    let manifest_out = emit_manifest.map(|p| Sink::prepare(Some(p))).transpose()?;
    if out.target().is_some() && manifest_out.as_ref().and_then(Sink::target) == out.target() {
        return Err(Failure::usage(
            "-o and --emit-manifest name the same file: give each its own".into(),
        ));
    }
    if out.is_stdout() && manifest_out.as_ref().is_some_and(Sink::is_stdout) {
        return Err(Failure::usage(
            "--emit-manifest - and the report would both go to standard output: give one of them a file".into(),
        ));
    }
    let overrides = planned_overrides(planning)?;
    let (graph, _progress) = open_graph(terminal, &input.graph)?;
    let failure = |e: ApiError| Failure::input(format!("{}: {e}", shown_path(input)));
    // A plan its own checker rejects is a bug, reported before anything is written.
    let rejected = |v: Explained| {
        Failure(
            3,
            format!("internal error: the checker rejects this plan: {v}"),
        )
    };
    let planned = match report.format {
        Format::Json => {
            let (planned, json) = plan_graph_json(graph, &overrides).map_err(failure)?;
            if let Some(v) = planned.violation() {
                return Err(rejected(v));
            }
            // Written in the pieces it was made in, most of it beside the stock side.
            let json = json.map_err(unwritable)?;
            out.write(json.parts().chain(["\n"]))?;
            planned
        }
        Format::Text => {
            let planned = plan_graph(graph, &overrides).map_err(failure)?;
            if let Some(v) = planned.violation() {
                return Err(rejected(v));
            }
            out.write([planned.text_with(shown).as_str()])?;
            planned
        }
    };
    if let Some(sink) = manifest_out {
        sink.write([pretty(&planned.manifest())?.as_str()])?;
    }
    exiting(planned);
    Ok(0)
}

/// A report serde could not write: a bug, as a plan its checker rejects is.
fn unwritable(e: serde_json::Error) -> Failure {
    Failure(
        3,
        format!("internal error: cannot write the report as JSON: {e}"),
    )
}

fn shown_path(input: &Input) -> String {
    named(&input.graph)
}

fn whatif(
    terminal: &Terminal,
    shown: &Shown,
    planning: &Planning,
    report: &Report,
    (changes, scenarios): (&[String], Option<&Path>),
) -> Result<u8, Failure> {
    let input = &planning.input;
    if let Some(path) = scenarios {
        one_standard_input([input.graph.as_path(), path])?;
    }
    let out = Sink::prepare(report.output.as_deref())?;
    let scenarios = match scenarios {
        Some(path) => {
            let scenarios = parse_scenarios(&read_text(path)?)
                .map_err(|e| Failure::input(format!("{}: {e}", named(path))))?;
            if scenarios.is_empty() {
                return Err(Failure::input(format!(
                    "{}: no scenario in it: one JSON object per line, such as \
                     {{\"name\": \"ios17\", \"changes\": [\"target=iOS17\"]}}",
                    named(path)
                )));
            }
            scenarios
        }
        None => vec![Scenario {
            name: "what-if".into(),
            changes: (changes.iter())
                .map(|c| c.parse())
                .collect::<Result<_, _>>()
                .map_err(|e: partition_planner::api::ChangeError| {
                    Failure::usage(format!("--change: {e}"))
                })?,
        }],
    };
    let batch = scenarios.len() != 1 || changes.is_empty();
    let overrides = planned_overrides(planning)?;
    let (graph, _progress) = open_graph(terminal, &input.graph)?;
    let answers = whatif_graph(graph, &overrides, scenarios).map_err(|e| match e {
        // A scenario's error names the scenario; anything else is the graph's.
        ApiError::Scenario { .. } => Failure::input(e.to_string()),
        e => Failure::input(format!("{}: {e}", shown_path(input))),
    })?;
    if let Some(v) = answers.violation() {
        return Err(Failure(
            3,
            format!("internal error: the checker rejects a plan: {v}"),
        ));
    }
    let text = match report.format {
        Format::Json => pretty(&answers.json())?,
        Format::Text => answers.text_with(batch, shown),
    };
    out.write([text.as_str()])?;
    exiting(answers);
    Ok(0)
}

fn render(
    terminal: &Terminal,
    planning: &Planning,
    plan: Option<&Path>,
    format: PictureArg,
    output: Option<&Path>,
) -> Result<u8, Failure> {
    let (format, what) = match format {
        PictureArg::Html => (PictureFormat::Html, "an HTML page"),
        PictureArg::Svg => (PictureFormat::Svg, "an SVG picture"),
        PictureArg::Dot => (PictureFormat::Dot, "a DOT graph"),
        PictureArg::ModelExplorer => (PictureFormat::ModelExplorer, "Model Explorer node data"),
    };
    let input = &planning.input;
    if let Some(path) = plan {
        one_standard_input([input.graph.as_path(), path])?;
    }
    // Where the picture goes is settled before any work.
    let sink = match format {
        PictureFormat::ModelExplorer => {
            let dir = output.filter(|o| !is_dash(o)).ok_or_else(|| {
                Failure::usage(
                    "--format model-explorer writes three files: give a directory with -o".into(),
                )
            })?;
            std::fs::create_dir_all(dir)
                .map_err(|e| Failure::input(format!("cannot create {}: {e}", dir.display())))?;
            None
        }
        _ => {
            not_to_a_terminal(output, what)?;
            Some(Sink::prepare(output)?)
        }
    };
    let file_name = input.graph.file_name().map(|f| f.to_string_lossy());
    let fallback = file_name.as_deref().unwrap_or("graph");
    let (picture, verdict) = match plan {
        None => {
            let overrides = planned_overrides(planning)?;
            let (graph, _progress) = open_graph(terminal, &input.graph)?;
            let planned = plan_graph(graph, &overrides)
                .map_err(|e| Failure::input(format!("{}: {e}", shown_path(input))))?;
            let picture = planned.picture(format, &planned.title(fallback));
            exiting(planned);
            (picture, None)
        }
        Some(path) => {
            let (graph, _progress) = open_graph(terminal, &input.graph)?;
            let given = plan_on(graph, &read_text(path)?)
                .map_err(|e| Failure::input(format!("{}: {e}", named(path))))?;
            let title = given.title(fallback);
            let violations = given.violations();
            let verdict = (
                verdict_line(violations.iter().copied()),
                !violations.is_empty(),
            );
            (given.picture(format, &title), Some(verdict))
        }
    };
    match (picture, sink) {
        (Picture::Text(text), Some(sink)) => sink.write([text.as_str()])?,
        (Picture::Files(files), _) => {
            let dir = output.unwrap_or(Path::new("."));
            for (name, text) in files {
                Sink::prepare(Some(&dir.join(name)))?.write([text.as_str()])?;
            }
        }
        (Picture::Text(_), None) => unreachable!("a text picture is drawn only with a sink"),
    }
    // A plan given back is checked here: a broken rule is said, and is exit 1, as `check` does.
    Ok(match verdict {
        Some((line, broken)) => {
            terminal.verdict(&line, broken);
            u8::from(broken)
        }
        None => 0,
    })
}

fn pretty(value: &impl serde::Serialize) -> Result<String, Failure> {
    let mut s = serde_json::to_string_pretty(value).map_err(unwritable)?;
    s.push('\n');
    Ok(s)
}

/// The process ends right after: freeing a large graph node by node (100 ms at 10^6 nodes) is
/// work the kernel does at once when the process exits.
fn exiting<T>(value: T) {
    std::mem::forget(value);
}

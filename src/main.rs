//! `partition-planner plan|check|whatif GRAPH.json`, `generate`: exit 0 ok, 1 rule violations
//! (`check`), 2 bad input or usage, 3 when the planner produced a plan its own checker rejects (a
//! bug: please report it).

use clap::{Args, Parser, Subcommand, ValueEnum};
use partition_planner::api::{
    ApiError, ByteSize, ChangeError, Checking, CostOverrides, DeploymentTarget, Graph, Manifest,
    Overrides, PartialOptions, Picture, PictureFormat, Planned, Scenario, check_graph,
    document_text, generate_document, manifest_diff_documents, manifest_diff_text,
    manifest_document, parse_graph, parse_scenarios, plan_graph, plan_graph_json, plan_on,
    whatif_graph,
};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "partition-planner",
    version,
    about = "Plans how an exported program is split between ExecuTorch's Core ML delegate and the CPU"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Plan a cycle-free tagging that keeps every mutation chain where it can live.
    Plan {
        #[command(flatten)]
        common: Common,
        /// `state`, `cpu`, `io` or `auto` for every buffer, or `BUFFER=STRATEGY` for one (repeatable).
        #[arg(long = "strategy", value_name = "[BUFFER=]STRATEGY")]
        strategies: Vec<String>,
        #[command(flatten)]
        cost: CostArg,
        /// Also write the Core ML cache manifest: one content key per delegate partition.
        #[arg(long, value_name = "FILE")]
        emit_manifest: Option<PathBuf>,
    },
    /// Draw the plan beside the stock proposal: an HTML partition map (boxes, chains, findings,
    /// one self-contained file), a static SVG, Graphviz DOT, or Model Explorer node data.
    Render {
        #[command(flatten)]
        input: Input,
        /// As for `plan`.
        #[arg(long = "strategy", value_name = "[BUFFER=]STRATEGY")]
        strategies: Vec<String>,
        #[command(flatten)]
        cost: CostArg,
        #[arg(long, value_enum, default_value_t = PictureArg::Html)]
        format: PictureArg,
        /// Draw this plan (`plan --format json`) instead of planning: its tags are checked again
        /// here, beside the stock proposal.
        #[arg(long, value_name = "PLAN.json", conflicts_with_all = ["strategies", "cost"])]
        plan: Option<PathBuf>,
        /// Write the picture here (for `model-explorer`, a directory for its three files) instead
        /// of standard output.
        #[arg(short, long, value_name = "PATH")]
        output: Option<PathBuf>,
    },
    /// List the entries of an old manifest a Core ML cache must drop for a new one, and the
    /// entries to compile.
    ManifestDiff {
        old: PathBuf,
        new: PathBuf,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Check the tags the graph already carries (the stock proposal) against every rule; with
    /// `--stock`, check what executorch's CoreMLPartitioner would tag instead, reproduced here.
    Check {
        #[command(flatten)]
        common: Common,
        /// Reproduce the stock proposal (torch.fx's capability partitioner and CoreMLPartitioner's
        /// placeholder tagging) and check it, whatever tags the graph carries.
        #[arg(long)]
        stock: bool,
        /// The executorch version whose partitioner `--stock` reproduces (1.4 or later); by default
        /// the one the document records, else the latest.
        #[arg(long, value_name = "VERSION", requires = "stock")]
        executorch: Option<String>,
    },
    /// Plan once, then answer what changes if the question changes: one scenario from `--change`,
    /// or a batch of scenarios (one JSON object per line) as a comparison table.
    Whatif {
        #[command(flatten)]
        common: Common,
        /// The base plan's strategy, as for `plan` (repeatable).
        #[arg(long = "strategy", value_name = "[BUFFER=]STRATEGY")]
        strategies: Vec<String>,
        #[command(flatten)]
        cost: CostArg,
        /// take-over=on|off, target=iOS15..iOS18|default, strategy=[BUFFER=]STRATEGY,
        /// op-supported=TARGET, op-unsupported=TARGET, node-supported=NODE,
        /// node-unsupported=NODE, cpu=NODE, cost=NAME=VALUE[,NAME=VALUE],
        /// max-weight-bytes=BYTES|none, max-ops=N|none, cut-after=PATTERN|none,
        /// cut-before=PATTERN|none (repeatable, applied in order).
        #[arg(long = "change", value_name = "WHAT=VALUE")]
        changes: Vec<String>,
        /// Scenarios, one `{"name": ..., "changes": [...]}` per line; `-` reads standard input.
        #[arg(long, value_name = "FILE", conflicts_with = "changes")]
        scenarios: Option<PathBuf>,
    },
    /// Write an LLM-shaped graph of exactly N nodes (attention with KV caches, gated delta-net,
    /// short convolution, mixture of experts, unsupported islands), the same for the same seed.
    Generate {
        #[arg(long, value_name = "N")]
        nodes: usize,
        #[arg(long, value_name = "S", default_value_t = 0)]
        seed: u64,
        /// Write the graph here instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// The cost model's constants (docs/cost.md), for `plan` and `whatif`.
#[derive(Args)]
struct CostArg {
    /// Cost constants `auto` weighs plans by: call_overhead_us, bytes_per_us, cpu_op_us, as
    /// NAME=VALUE[,NAME=VALUE] (repeatable; a later value wins).
    #[arg(long = "cost", value_name = "NAME=VALUE[,...]", value_parser = CostOverrides::parse)]
    cost: Vec<CostOverrides>,
}

impl CostArg {
    fn merged(&self) -> CostOverrides {
        self.cost
            .iter()
            .fold(CostOverrides::default(), |acc, &c| acc.overridden_by(c))
    }
}

/// The graph and the options a plan is made for, shared by every command that reads a graph.
#[derive(Args)]
struct Input {
    /// Bridge JSON v1 document (docs/bridge-json.md).
    graph: PathBuf,
    #[arg(long, value_name = "true|false")]
    take_over_mutable_buffer: Option<bool>,
    #[arg(long, value_name = "true|false")]
    take_over_constant_data: Option<bool>,
    /// Minimum deployment target: iOS15, iOS16, iOS17 or iOS18.
    #[arg(long, value_name = "TARGET")]
    min_target: Option<DeploymentTarget>,
    /// At most this many bytes of constants (weights) in each delegate partition, e.g. 2GiB,
    /// 700MB or 2147483648; a constant several partitions read counts in each.
    #[arg(long = "max-partition-weight-bytes", value_name = "BYTES")]
    max_weight_bytes: Option<ByteSize>,
    /// At most this many ops (`call_function` nodes) in each delegate partition.
    #[arg(long = "max-partition-ops", value_name = "N")]
    max_ops: Option<u64>,
    /// No partition spans the end of what PATTERN matches: a node name, or a module path such as
    /// `layers.*` (each block) or `layers.7` (repeatable).
    #[arg(long = "cut-after", value_name = "PATTERN")]
    cut_after: Vec<String>,
    /// No partition spans the start of what PATTERN matches (repeatable).
    #[arg(long = "cut-before", value_name = "PATTERN")]
    cut_before: Vec<String>,
}

impl Input {
    fn overrides(&self, strategies: Vec<String>, cost: CostOverrides) -> Overrides {
        Overrides {
            options: PartialOptions {
                take_over_mutable_buffer: self.take_over_mutable_buffer,
                take_over_constant_data: self.take_over_constant_data,
                minimum_deployment_target: self.min_target,
                max_weight_bytes: self.max_weight_bytes,
                max_ops: self.max_ops,
                cut_after: (!self.cut_after.is_empty()).then(|| self.cut_after.clone()),
                cut_before: (!self.cut_before.is_empty()).then(|| self.cut_before.clone()),
                ..PartialOptions::default()
            },
            strategies,
            cost,
        }
    }

    /// Plans the graph as `plan` does.
    fn plan(&self, strategies: Vec<String>, cost: CostOverrides) -> Result<Planned, Failure> {
        self.plan_by(strategies, cost, plan_graph)
    }

    /// The graph planned by `plan_by` (`plan_graph` or one of its kin).
    fn plan_by<T>(
        &self,
        strategies: Vec<String>,
        cost: CostOverrides,
        plan_by: impl FnOnce(Graph, &Overrides) -> Result<T, ApiError>,
    ) -> Result<T, Failure> {
        let graph = open_graph(&self.graph)?;
        plan_by(graph, &self.overrides(strategies, cost)).map_err(|e| self.failure(e))
    }

    /// An error of the graph's, named by its path.
    fn failure(&self, e: ApiError) -> Failure {
        Failure(2, format!("{}: {e}", self.graph.display()))
    }
}

/// The graph document at `path`, imported, its text freed; an error names the path. Freed before
/// any work: a large document's text is more than a quarter of the memory planning it takes at
/// its peak.
fn open_graph(path: &Path) -> Result<Graph, Failure> {
    let bytes = GraphBytes::open(path)?;
    let text = document_text(bytes.bytes()).ok_or_else(|| {
        Failure(
            2,
            format!(
                "cannot read {}: stream did not contain valid UTF-8",
                path.display()
            ),
        )
    })?;
    parse_graph(text).map_err(|e| Failure(2, format!("{}: {e}", path.display())))
}

#[derive(Args)]
struct Common {
    #[command(flatten)]
    input: Input,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Write the report here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

impl Common {
    fn overrides(&self, strategies: Vec<String>, cost: CostOverrides) -> Overrides {
        self.input.overrides(strategies, cost)
    }

    fn render<J: serde::Serialize>(
        &self,
        json: impl FnOnce() -> J,
        text: impl FnOnce() -> String,
    ) -> String {
        match self.format {
            Format::Json => pretty(&json()),
            Format::Text => text(),
        }
    }

    fn emit(&self, report: String) -> Result<(), Failure> {
        write_to(self.output.as_deref(), &report)
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Json,
    Text,
}

#[derive(Clone, Copy, ValueEnum)]
enum PictureArg {
    /// One self-contained page: the overviews side by side, drill-down, buffers and findings.
    Html,
    /// Both overviews as one static SVG.
    Svg,
    /// Graphviz DOT of both overviews.
    Dot,
    /// Model Explorer node data: partition.json, strategy.json and violation.json.
    ModelExplorer,
}

fn render(
    input: &Input,
    (strategies, cost): (Vec<String>, CostOverrides),
    plan: Option<&Path>,
    format: PictureArg,
    output: Option<&Path>,
) -> Result<u8, Failure> {
    let format = match format {
        PictureArg::Html => PictureFormat::Html,
        PictureArg::Svg => PictureFormat::Svg,
        PictureArg::Dot => PictureFormat::Dot,
        PictureArg::ModelExplorer => PictureFormat::ModelExplorer,
    };
    if format == PictureFormat::ModelExplorer && output.is_none() {
        return Err(Failure(
            2,
            "--format model-explorer writes three files: give a directory with -o".into(),
        ));
    }
    let file_name = input.graph.file_name().map(|f| f.to_string_lossy());
    let fallback = file_name.as_deref().unwrap_or("graph");
    let picture = match plan {
        None => {
            let planned = input.plan(strategies, cost)?;
            let picture = planned.picture(format, &planned.title(fallback));
            exiting(planned);
            picture
        }
        Some(path) => {
            let graph = open_graph(&input.graph)?;
            let given = plan_on(graph, &read(path)?)
                .map_err(|e| Failure(2, format!("{}: {e}", path.display())))?;
            let title = given.title(fallback);
            given.picture(format, &title)
        }
    };
    match picture {
        Picture::Text(text) => write_to(output, &text)?,
        Picture::Files(files) => {
            let dir = output.unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir)
                .map_err(|e| Failure(2, format!("cannot create {}: {e}", dir.display())))?;
            for (name, text) in files {
                write_to(Some(&dir.join(name)), &text)?;
            }
        }
    }
    Ok(0)
}

/// A failure that ends the command with the given exit code.
struct Failure(u8, String);

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => ExitCode::from(code),
        Err(Failure(code, message)) => {
            eprintln!("partition-planner: {message}");
            ExitCode::from(code)
        }
    }
}

fn pretty(value: &impl serde::Serialize) -> String {
    finished(serde_json::to_string_pretty(value))
}

/// A JSON report as written: ending in a newline.
fn finished(json: serde_json::Result<String>) -> String {
    let mut s = json.unwrap_or_default();
    s.push('\n');
    s
}

/// Writes `text` to `path`, or to standard output when there is none.
fn write_to(path: Option<&Path>, text: &str) -> Result<(), Failure> {
    write_parts(path, [text])
}

/// Writes `parts`, one after another, as [`write_to`] writes one text.
fn write_parts<'a>(
    path: Option<&Path>,
    parts: impl IntoIterator<Item = &'a str>,
) -> Result<(), Failure> {
    match path {
        Some(path) => overwrite(path, parts)
            .map_err(|e| Failure(2, format!("cannot write {}: {e}", path.display()))),
        None => {
            let mut out = std::io::stdout().lock();
            (parts.into_iter())
                .try_for_each(|part| out.write_all(part.as_bytes()))
                .and_then(|()| out.flush())
                .map_err(|e| Failure(2, format!("cannot write to standard output: {e}")))
        }
    }
}

/// Writes `bytes` over the file at `path` (made if missing), then cuts it to their length. Not
/// truncated first: ext4 flushes a file truncated to nothing when it is closed (its
/// `auto_da_alloc` guard for programs that rewrite files in place), which costs a run writing the
/// same plan again about 0.7 ms, more than a tenth of planning Qwen3.5. Either way, a reader
/// during the write may see part of it.
fn overwrite<'a>(path: &Path, parts: impl IntoIterator<Item = &'a str>) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let mut written = 0;
    for part in parts {
        file.write_all(part.as_bytes())?;
        written += part.len() as u64;
    }
    // A device or a pipe (`-o /dev/null`) has no length to cut.
    if file.metadata()?.is_file() {
        file.set_len(written)?;
    }
    Ok(())
}

fn read(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path)
        .map_err(|e| Failure(2, format!("cannot read {}: {e}", path.display())))
}

/// A graph document's bytes: mapped from the file rather than copied, since copying a large
/// document costs a page fault per 4 KiB of fresh memory (about a tenth of a 10^6-node run).
enum GraphBytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl GraphBytes {
    fn open(path: &Path) -> Result<Self, Failure> {
        let failure =
            |e: std::io::Error| Failure(2, format!("cannot read {}: {e}", path.display()));
        let file = std::fs::File::open(path).map_err(failure)?;
        let metadata = file.metadata().map_err(failure)?;
        // An empty file cannot be mapped; a pipe or a device has no length to map.
        if metadata.len() == 0 || !metadata.is_file() {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut &file, &mut bytes).map_err(failure)?;
            return Ok(GraphBytes::Read(bytes));
        }
        // SAFETY: the map is only read, and only while this process holds it. Another process
        // truncating the file meanwhile would end this one with SIGBUS, as it would any tool that
        // maps its input (ripgrep, for one); the planner never writes its input.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(failure)?;
        Ok(GraphBytes::Mapped(map))
    }

    fn bytes(&self) -> &[u8] {
        match self {
            GraphBytes::Mapped(map) => &map[..],
            GraphBytes::Read(bytes) => &bytes[..],
        }
    }
}

fn whatif(
    common: &Common,
    strategies: Vec<String>,
    cost: CostOverrides,
    changes: &[String],
    scenarios: Option<&Path>,
) -> Result<u8, Failure> {
    let usage = |e: String| Failure(2, e);
    let scenarios = match scenarios {
        Some(path) => {
            let text = if path == Path::new("-") {
                std::io::read_to_string(std::io::stdin())
                    .map_err(|e| Failure(2, format!("cannot read standard input: {e}")))?
            } else {
                read(path)?
            };
            parse_scenarios(&text).map_err(|e| usage(e.to_string()))?
        }
        None => vec![Scenario {
            name: "what-if".into(),
            changes: changes
                .iter()
                .map(|c| c.parse())
                .collect::<Result<_, _>>()
                .map_err(|e: ChangeError| usage(e.to_string()))?,
        }],
    };
    let batch = scenarios.len() != 1 || changes.is_empty();
    let graph = open_graph(&common.input.graph)?;
    let answers = whatif_graph(graph, &common.overrides(strategies, cost), scenarios).map_err(
        |e| match e {
            // A scenario's error names the scenario; anything else is the graph's.
            ApiError::Scenario { .. } => Failure(2, e.to_string()),
            e => common.input.failure(e),
        },
    )?;
    common.emit(common.render(|| answers.json(), || answers.text(batch)))?;
    match answers.violation() {
        Some(v) => Err(Failure(
            3,
            format!("internal error: the checker rejects a plan: {v}"),
        )),
        None => {
            exiting(answers);
            Ok(0)
        }
    }
}

/// The process ends right after: freeing a large graph node by node (100 ms at 10^6 nodes) is
/// work the kernel does at once when the process exits.
fn exiting<T>(value: T) {
    std::mem::forget(value);
}

fn run(cli: Cli) -> Result<u8, Failure> {
    match cli.command {
        Command::Plan {
            common,
            strategies,
            cost,
            emit_manifest,
        } => {
            let cost = cost.merged();
            let planned = match common.format {
                Format::Json => {
                    let (planned, json) =
                        common.input.plan_by(strategies, cost, plan_graph_json)?;
                    // Written in the pieces it was made in, most of it beside the stock side.
                    let json = json.unwrap_or_default();
                    write_parts(common.output.as_deref(), json.parts().chain(["\n"]))?;
                    planned
                }
                Format::Text => {
                    let planned = common.input.plan(strategies, cost)?;
                    common.emit(planned.text())?;
                    planned
                }
            };
            if let Some(path) = emit_manifest {
                write_to(Some(&path), &pretty(&planned.manifest()))?;
            }
            if let Some(v) = planned.violation() {
                return Err(Failure(
                    3,
                    format!("internal error: the checker rejects this plan: {v}"),
                ));
            }
            exiting(planned);
            Ok(0)
        }
        Command::Render {
            input,
            strategies,
            cost,
            format,
            plan,
            output,
        } => render(
            &input,
            (strategies, cost.merged()),
            plan.as_deref(),
            format,
            output.as_deref(),
        ),
        Command::Check {
            common,
            stock,
            executorch,
        } => {
            let graph = open_graph(&common.input.graph)?;
            let checking = Checking::from_flags(stock, executorch.as_deref())
                .map_err(|e| Failure(2, e.to_string()))?;
            let overrides = common.overrides(Vec::new(), CostOverrides::default());
            let checked = check_graph(graph, &overrides, checking);
            common.emit(common.render(|| checked.json(), || checked.text()))?;
            let code = if checked.ok() { 0 } else { 1 };
            exiting(checked);
            Ok(code)
        }
        Command::Whatif {
            common,
            strategies,
            cost,
            changes,
            scenarios,
        } => whatif(
            &common,
            strategies,
            cost.merged(),
            &changes,
            scenarios.as_deref(),
        ),
        Command::ManifestDiff { old, new, format } => {
            let load = |path: &Path| -> Result<Manifest, Failure> {
                manifest_document(&read(path)?)
                    .map_err(|e| Failure(2, format!("{}: {e}", path.display())))
            };
            let d = manifest_diff_documents(&load(&old)?, &load(&new)?);
            let report = match format {
                Format::Json => pretty(&d),
                Format::Text => manifest_diff_text(&d),
            };
            write_to(None, &report)?;
            Ok(0)
        }
        Command::Generate {
            nodes,
            seed,
            output,
        } => {
            let text = generate_document(nodes, seed).map_err(|e| Failure(2, e.to_string()))?;
            write_to(output.as_deref(), &text)?;
            Ok(0)
        }
    }
}

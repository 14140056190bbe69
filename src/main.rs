//! `partition-planner plan|check GRAPH.json`: exit 0 ok, 1 rule violations, 2 bad input or usage,
//! 3 when the planner produced a plan its own checker rejects (a bug: please report it).

use clap::{Args, Parser, Subcommand, ValueEnum};
use partition_planner::analyse::analyse;
use partition_planner::check::check;
use partition_planner::graph::Graph;
use partition_planner::import::parse_graph;
use partition_planner::measure::measure;
use partition_planner::options::{DeploymentTarget, Options};
use partition_planner::plan::{PlanRequest, StrategyRequest, plan};
use partition_planner::report;
use partition_planner::tagging::Tagging;
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
    },
    /// Check the tags the graph already carries (the stock proposal) against every rule.
    Check {
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Args)]
struct Common {
    /// Bridge JSON v1 document (docs/bridge-json.md).
    graph: PathBuf,
    #[arg(long, value_name = "true|false")]
    take_over_mutable_buffer: Option<bool>,
    #[arg(long, value_name = "true|false")]
    take_over_constant_data: Option<bool>,
    /// Minimum deployment target: iOS15, iOS16, iOS17 or iOS18.
    #[arg(long, value_name = "TARGET")]
    min_target: Option<DeploymentTarget>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Write the report here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Json,
    Text,
}

/// A failure that ends the command with the given exit code.
struct Failure(u8, String);

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(Failure(code, message)) => {
            eprintln!("partition-planner: {message}");
            ExitCode::from(code)
        }
    }
}

fn load(path: &Path) -> Result<Graph, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure(2, format!("cannot read {}: {e}", path.display())))?;
    parse_graph(&text).map_err(|e| Failure(2, format!("{}: {e}", path.display())))
}

fn options(graph: &Graph, common: &Common) -> Options {
    let mut o = graph.options.clone();
    if let Some(v) = common.take_over_mutable_buffer {
        o.take_over_mutable_buffer = v;
    }
    if let Some(v) = common.take_over_constant_data {
        o.take_over_constant_data = v;
    }
    if let Some(t) = common.min_target {
        o.minimum_deployment_target = Some(t);
    }
    o
}

fn emit(common: &Common, text: String) -> Result<(), Failure> {
    match &common.output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| Failure(2, format!("cannot write {}: {e}", path.display()))),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

fn pretty(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

fn run(cli: Cli) -> Result<u8, Failure> {
    match cli.command {
        Command::Plan { common, strategies } => {
            let graph = load(&common.graph)?;
            let mut request = PlanRequest::new(&graph);
            request.options = options(&graph, &common);
            for s in &strategies {
                match s.split_once('=') {
                    Some((buffer, strategy)) => {
                        let r: StrategyRequest = strategy.parse().map_err(|e| Failure(2, e))?;
                        request.buffer_strategies.push((buffer.to_string(), r));
                    }
                    None => request.strategy = s.parse().map_err(|e| Failure(2, e))?,
                }
            }
            let analysis = analyse(&graph);
            let plan = plan(&graph, &analysis, &request).map_err(|e| Failure(2, e.to_string()))?;
            emit(
                &common,
                match common.format {
                    Format::Json => pretty(&report::plan_json(&graph, &analysis, &plan)),
                    Format::Text => report::plan_text(&graph, &analysis, &plan),
                },
            )?;
            if let Some(v) = plan.violations().next() {
                return Err(Failure(
                    3,
                    format!("internal error: the checker rejects this plan: {v}"),
                ));
            }
            Ok(0)
        }
        Command::Check { common } => {
            let graph = load(&common.graph)?;
            let options = options(&graph, &common);
            let tagging = Tagging::stock(&graph);
            let supported: Vec<bool> = graph.nodes.iter().map(|n| n.supported).collect();
            let found = check(&graph, &tagging, &options, &supported);
            let measured = measure(&graph, &tagging);
            emit(
                &common,
                match common.format {
                    Format::Json => {
                        pretty(&report::check_json(&graph, &tagging, &measured, &found))
                    }
                    Format::Text => report::check_text(&graph, &measured, &found),
                },
            )?;
            Ok(if found.iter().any(|f| f.is_violation()) {
                1
            } else {
                0
            })
        }
    }
}

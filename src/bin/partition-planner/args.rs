//! The command line as clap reads it: every subcommand in the order of a day's work (plan, check,
//! whatif, render, generate, manifest-diff), the flag groups they share, and a help line on each.

use clap::builder::BoolishValueParser;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use partition_planner::api::{ByteSize, CostOverrides, DeploymentTarget};
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "partition-planner",
    version,
    about = "Plans how an exported program is split between ExecuTorch's Core ML delegate and the CPU",
    after_help = "Exit codes: 0 ok; 1 a rule is broken (check, render --plan) or manifests differ \
                  (manifest-diff --exit-code); 2 bad input or usage; 3 the planner's own checker \
                  rejects its plan (a bug: please report it). A path of - is standard input or \
                  output (docs/cli.md)."
)]
pub struct Cli {
    #[command(flatten)]
    pub output: OutputControl,
    #[command(subcommand)]
    pub command: Command,
}

/// How much is printed, and how: for every subcommand.
#[derive(Args)]
pub struct OutputControl {
    /// Print the summary alone (and errors).
    #[arg(
        short,
        long,
        global = true,
        conflicts_with = "verbose",
        display_order = 900
    )]
    pub quiet: bool,
    /// Print every line of each list and every finding.
    #[arg(short, long, global = true, display_order = 901)]
    pub verbose: bool,
    /// At most this many findings of each rule in a text report [default: 5; all with -v].
    #[arg(long, value_name = "N", global = true, display_order = 902)]
    pub max_findings: Option<usize>,
    /// Colour on standard error: auto (when it is a terminal and NO_COLOR is unset), always, never.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        default_value_t = ColorWhen::Auto,
        global = true,
        display_order = 903
    )]
    pub color: ColorWhen,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

impl Cli {
    /// The command line, or clap's own message (a usage error, `--help`, `--version`) and exit.
    /// Those messages are written before `--color` is parsed, so it is looked for first: they
    /// keep to it as every other message does.
    pub fn read(args: Vec<OsString>) -> Cli {
        let mut command = Cli::command().color(match asked_color(&args) {
            ColorWhen::Auto => clap::ColorChoice::Auto,
            ColorWhen::Always => clap::ColorChoice::Always,
            ColorWhen::Never => clap::ColorChoice::Never,
        });
        let matches = command
            .try_get_matches_from_mut(args)
            .unwrap_or_else(|e| e.exit());
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut command).exit())
    }
}

/// The last `--color WHEN` or `--color=WHEN` before any `--`, as clap will read it; `auto` when
/// there is none or its value is not one (clap then says so, in no colour it was not asked for).
fn asked_color(args: &[OsString]) -> ColorWhen {
    let mut asked = ColorWhen::Auto;
    let mut args = args.iter().skip(1).map(|a| a.to_str());
    while let Some(arg) = args.next() {
        let value = match arg {
            Some("--") => break,
            Some("--color") => args.next().flatten(),
            Some(arg) => arg.strip_prefix("--color="),
            None => None,
        };
        if let Some(when) = value.and_then(|v| ColorWhen::from_str(v, false).ok()) {
            asked = when;
        }
    }
    asked
}

#[derive(Subcommand)]
pub enum Command {
    /// Plan a cycle-free tagging that keeps every mutation chain where it can live.
    Plan {
        #[command(flatten)]
        planning: Planning,
        #[command(flatten)]
        report: Report,
        /// Also write the Core ML cache manifest: one content key per delegate partition.
        #[arg(long, value_name = "FILE")]
        emit_manifest: Option<PathBuf>,
    },
    /// Check the tags the graph carries, or the stock proposal, against every rule.
    ///
    /// The tags the graph already carries (the stock proposal) by default; with `--stock`, what
    /// executorch's CoreMLPartitioner would tag instead, reproduced here. Budgets are rules here;
    /// cuts are requests to the planner, and `check` takes none.
    Check {
        #[command(flatten)]
        input: Input,
        #[command(flatten)]
        report: Report,
        /// Reproduce the stock proposal (torch.fx's capability partitioner and CoreMLPartitioner's
        /// placeholder tagging) and check it, whatever tags the graph carries.
        #[arg(long)]
        stock: bool,
        /// The executorch version whose partitioner `--stock` reproduces: 1.4 or 1.5 (any patch
        /// level); by default the one the document records, else the latest.
        #[arg(long, value_name = "VERSION", requires = "stock")]
        executorch: Option<String>,
    },
    /// Plan once, then answer what changes if the question changes.
    ///
    /// One scenario from `--change`, or a batch of scenarios (one JSON object per line) as a
    /// comparison table.
    Whatif {
        #[command(flatten)]
        planning: Planning,
        #[command(flatten)]
        report: Report,
        /// take-over=on|off, target=iOS15..iOS18|default, strategy=[BUFFER=]STRATEGY,
        /// op-supported=TARGET, op-unsupported=TARGET, node-supported=NODE,
        /// node-unsupported=NODE, cpu=NODE, cost=NAME=VALUE[,NAME=VALUE],
        /// max-weight-bytes=BYTES|none, max-ops=N|none, cut-after=PATTERN|none,
        /// cut-before=PATTERN|none; each key that is a flag of `plan` also by the flag's name
        /// (repeatable, applied in order).
        #[arg(long = "change", value_name = "WHAT=VALUE")]
        changes: Vec<String>,
        /// Scenarios, one `{"name": ..., "changes": [...]}` per line; - reads standard input.
        #[arg(long, value_name = "FILE", conflicts_with = "changes")]
        scenarios: Option<PathBuf>,
    },
    /// Draw the plan beside the stock proposal (HTML, SVG, DOT or Model Explorer node data).
    ///
    /// An HTML partition map (boxes, chains, findings, one self-contained file), a static SVG,
    /// Graphviz DOT, or Model Explorer node data.
    Render {
        #[command(flatten)]
        planning: Planning,
        /// What to draw.
        #[arg(long, value_enum, default_value_t = PictureArg::Html)]
        format: PictureArg,
        /// Draw this plan (`plan --format json`) instead of planning: its tags are checked again
        /// here, under the options it records, beside the stock proposal; exits 1 if it breaks a
        /// rule. It takes no option flags: the plan carries its own.
        #[arg(long, value_name = "PLAN.json", conflicts_with_all = [
                "strategies",
                "cost",
                "cut_after",
                "cut_before",
                "take_over_mutable_buffer",
                "take_over_constant_data",
                "min_target",
                "max_weight_bytes",
                "max_ops",
            ])]
        plan: Option<PathBuf>,
        /// Write the picture here (for `model-explorer`, a directory for its three files); - is
        /// standard output. Required when standard output is a terminal.
        #[arg(short, long, value_name = "PATH")]
        output: Option<PathBuf>,
    },
    /// Write an LLM-shaped graph of exactly N nodes, the same for the same seed.
    ///
    /// Attention with KV caches, gated delta-net, short convolution, mixture of experts and
    /// unsupported islands.
    Generate {
        /// How many nodes the graph has.
        #[arg(long, value_name = "N")]
        nodes: usize,
        /// The random seed: the same seed, the same graph.
        #[arg(long, value_name = "S", default_value_t = 0)]
        seed: u64,
        /// Write the graph here; - is standard output. Required when standard output is a
        /// terminal.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// List what a Core ML cache must drop and compile going from one manifest to another.
    ManifestDiff {
        /// The manifest the cache holds now (`plan --emit-manifest`); - reads standard input.
        old: PathBuf,
        /// The manifest of the new plan; - reads standard input.
        new: PathBuf,
        /// Text for a person, or JSON.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Write the report here instead of standard output; - is standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Exit 1 when the cache must drop or compile anything, as `git diff --exit-code`.
        #[arg(long)]
        exit_code: bool,
    },
}

/// The graph and the options that every command reading one takes.
#[derive(Args)]
pub struct Input {
    /// Bridge JSON v1 document (docs/bridge-json.md); - reads standard input.
    pub graph: PathBuf,
    /// Let the delegate own mutable buffers as Core ML states: on|off (or true|false).
    #[arg(long, value_name = "on|off", value_parser = BoolishValueParser::new(), hide_possible_values = true)]
    pub take_over_mutable_buffer: Option<bool>,
    /// Bake constants (weights) into the delegates that read them: on|off (or true|false).
    #[arg(long, value_name = "on|off", value_parser = BoolishValueParser::new(), hide_possible_values = true)]
    pub take_over_constant_data: Option<bool>,
    /// Minimum deployment target: iOS15, iOS16, iOS17 or iOS18.
    #[arg(long, value_name = "TARGET")]
    pub min_target: Option<DeploymentTarget>,
    /// At most this many bytes of constants (weights) in each delegate partition: whole bytes or
    /// a number with a unit (2GiB, 1.5GB, 700MiB); a constant several partitions read counts in
    /// each.
    #[arg(long = "max-partition-weight-bytes", value_name = "BYTES")]
    pub max_weight_bytes: Option<ByteSize>,
    /// At most this many ops (`call_function` nodes) in each delegate partition.
    #[arg(long = "max-partition-ops", value_name = "N")]
    pub max_ops: Option<u64>,
}

/// What a plan is made of: the graph and its options, the cuts and what the plan weighs. `plan`,
/// `whatif` and `render` take it; `check` takes the graph and options alone.
#[derive(Args)]
pub struct Planning {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub cuts: Cuts,
    #[command(flatten)]
    pub asked: Asked,
}

/// The cuts a plan is asked for: requests to the planner, not rules, so `check` takes none.
#[derive(Args)]
pub struct Cuts {
    /// No partition spans the end of what PATTERN matches: an op's name, or a module path such as
    /// `layers.*` (each block) or `layers.7`; a pattern that matches nothing is an error
    /// (repeatable).
    #[arg(long = "cut-after", value_name = "PATTERN")]
    pub cut_after: Vec<String>,
    /// No partition spans the start of what PATTERN matches (repeatable).
    #[arg(long = "cut-before", value_name = "PATTERN")]
    pub cut_before: Vec<String>,
}

/// What a plan is asked to weigh: its strategies and the cost model's constants.
#[derive(Args, Default)]
pub struct Asked {
    /// `state`, `cpu`, `io` or `auto` for every buffer, or `BUFFER=STRATEGY` for one (repeatable).
    #[arg(long = "strategy", value_name = "[BUFFER=]STRATEGY")]
    pub strategies: Vec<String>,
    /// Cost constants `auto` weighs plans by: call_overhead_us, bytes_per_us, cpu_op_us, as
    /// NAME=VALUE[,NAME=VALUE] (repeatable; a later value wins; docs/cost.md).
    #[arg(long = "cost", value_name = "NAME=VALUE[,...]", value_parser = CostOverrides::parse)]
    pub cost: Vec<CostOverrides>,
}

impl Asked {
    /// The cost constants given, a later one replacing an earlier.
    pub fn cost(&self) -> CostOverrides {
        (self.cost.iter()).fold(CostOverrides::default(), |acc, &c| acc.overridden_by(c))
    }
}

/// Where a report goes, and in which form.
#[derive(Args)]
pub struct Report {
    /// Text for a person, or JSON (docs/bridge-json.md).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report here instead of standard output; - is standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    /// For a person.
    Text,
    /// For a program.
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum PictureArg {
    /// One self-contained page: the overviews side by side, drill-down, buffers and findings.
    Html,
    /// Both overviews as one static SVG.
    Svg,
    /// Graphviz DOT of both overviews.
    Dot,
    /// Model Explorer node data: partition.json, strategy.json and violation.json.
    ModelExplorer,
}

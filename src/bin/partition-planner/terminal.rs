//! What the tool says on standard error, beside its reports: errors and warnings (coloured when
//! `--color` and the terminal allow; `NO_COLOR` is honoured), the summary `render --plan` gives,
//! and a progress line while a large document is worked on (a terminal only, never in a pipe).

use crate::args::{ColorWhen, OutputControl};
use anstyle::{AnsiColor, Style};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Documents from this many bytes (a 10^5-node graph is about 60 MB) show a progress line: a
/// smaller one is planned before a line would be worth reading.
const PROGRESS_FROM_BYTES: u64 = 16 << 20;

pub struct Terminal {
    color: anstream::ColorChoice,
    quiet: bool,
}

impl Terminal {
    pub fn new(control: &OutputControl) -> Self {
        let color = match control.color {
            ColorWhen::Auto => anstream::ColorChoice::Auto,
            ColorWhen::Always => anstream::ColorChoice::Always,
            ColorWhen::Never => anstream::ColorChoice::Never,
        };
        Terminal {
            color,
            quiet: control.quiet,
        }
    }

    fn say(&self, label: Option<(&str, AnsiColor)>, message: &str) {
        let mut err = anstream::AutoStream::new(std::io::stderr().lock(), self.color);
        let bold = Style::new().bold();
        let _ = write!(err, "{bold}partition-planner:{bold:#} ");
        if let Some((label, color)) = label {
            let style = Style::new().bold().fg_color(Some(color.into()));
            let _ = write!(err, "{style}{label}:{style:#} ");
        }
        let _ = writeln!(err, "{message}");
    }

    /// An error that ends the run.
    pub fn error(&self, message: &str) {
        self.say(None, message);
    }

    /// Something the run went on past, that the user should know (always shown).
    pub fn warning(&self, message: &str) {
        self.say(Some(("warning", AnsiColor::Yellow)), message);
    }

    /// The verdict on a plan given back (`render --plan`): a rule broken is red.
    pub fn verdict(&self, line: &str, broken: bool) {
        let color = if broken {
            AnsiColor::Red
        } else {
            AnsiColor::Green
        };
        let mut err = anstream::AutoStream::new(std::io::stderr().lock(), self.color);
        let style = Style::new().fg_color(Some(color.into()));
        let _ = writeln!(err, "{style}{line}{style:#}");
    }

    /// A spinner saying what is being done to a document of `bytes`, on a terminal and for a
    /// large document alone; finished (cleared) when dropped.
    pub fn progress(&self, what: String, bytes: u64) -> Progress {
        let shown = !self.quiet && bytes >= PROGRESS_FROM_BYTES && std::io::stderr().is_terminal();
        if !shown {
            return Progress(None);
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(what);
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress(Some(bar))
    }
}

/// A progress line while it lives.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// The next step's name.
    pub fn step(&self, what: String) {
        if let Some(bar) = &self.0 {
            bar.set_message(what);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

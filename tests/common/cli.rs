//! Running the `partition-planner` binary as a user does, for the CLI tests.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A document of data/executorch-1.5.1/.
pub fn data(name: &str) -> PathBuf {
    super::data::data_dir().join("executorch-1.5.1").join(name)
}

/// The binary with `args`, standard input empty.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_partition-planner"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

/// The binary with `args`, `input` on its standard input.
pub fn run_with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_partition-planner"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut stdin = child.stdin.take().expect("piped");
    // A command that stops reading early closes the pipe: not this test's failure.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().expect("the binary ends")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A path in this test process's own scratch directory.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("partition-planner-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

pub fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

//! The README's command examples, run as written: a README that drifts from the CLI fails here.
//! Every `cargo run --release -- ARGS` line of its `sh` blocks runs the binary with ARGS in a
//! scratch directory where `data/` is the repository's and the placeholders (`GRAPH.json`,
//! `scenarios.jsonl`, `old.json`) are real files.

mod common;
use common::cli::{scratch, text};
use std::path::Path;
use std::process::Command;

/// The README's commands, each as its words (single quotes kept together, a `#` comment dropped).
fn commands(readme: &str) -> Vec<Vec<String>> {
    let mut in_sh = false;
    let mut out = Vec::new();
    for line in readme.lines() {
        match line.trim() {
            "```sh" => in_sh = true,
            "```" => in_sh = false,
            l if in_sh => {
                if let Some(args) = l.strip_prefix("cargo run --release -- ") {
                    out.push(words(args));
                }
            }
            _ => {}
        }
    }
    out
}

/// Shell words, as far as the README uses them: spaces split, single quotes group, `#` ends.
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let (mut word, mut quoted, mut started) = (String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => (quoted, started) = (!quoted, true),
            '#' if !quoted && !started => break,
            c if c.is_whitespace() && !quoted => {
                if started {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            c => (word, started) = (word + &c.to_string(), true),
        }
    }
    if started {
        words.push(word);
    }
    words
}

#[test]
fn every_readme_command_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let commands = commands(&readme);
    assert!(commands.len() >= 10, "the README's commands were not found");
    // The directory the commands run in: data/ as in a checkout, and the placeholders.
    let dir = scratch("readme");
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("data");
    if !link.exists() {
        std::os::unix::fs::symlink(root.join("data"), &link).unwrap();
    }
    std::fs::copy(
        root.join("data/executorch-1.5.1/seed_slice_ios18.json"),
        dir.join("GRAPH.json"),
    )
    .unwrap();
    std::fs::write(
        dir.join("scenarios.jsonl"),
        "{\"name\": \"ios17\", \"changes\": [\"target=iOS17\"]}\n",
    )
    .unwrap();
    let binary = env!("CARGO_BIN_EXE_partition-planner");
    let old = Command::new(binary)
        .args([
            "plan",
            "GRAPH.json",
            "--min-target",
            "iOS17",
            "--emit-manifest",
            "old.json",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(old.status.code(), Some(0), "{}", text(&old.stderr));
    for args in commands {
        let out = Command::new(binary)
            .args(&args)
            .current_dir(&dir)
            .output()
            .unwrap();
        // `check` exits 1 where a rule is broken, as the README says it does.
        let expected: &[i32] = if args[0] == "check" { &[0, 1] } else { &[0] };
        let code = out.status.code().unwrap_or(-1);
        assert!(
            expected.contains(&code),
            "`{}` exited {code}: {}",
            args.join(" "),
            text(&out.stderr)
        );
    }
    assert!(dir.join("map.html").exists() && dir.join("big.json").exists());
}

#[test]
fn words_split_as_the_shell_splits_the_readme() {
    assert_eq!(
        words("plan G.json --cut-after 'layers.*'   # a comment"),
        ["plan", "G.json", "--cut-after", "layers.*"]
    );
    assert_eq!(words("a '' b"), ["a", "", "b"]);
}

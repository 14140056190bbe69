//! The command line never silently ignores what it is given, and behaves as a Unix tool does
//! (docs/cli.md): each test is one promise, run against the binary as a user runs it.

mod common;
use common::cli::{arg, data, run, run_with_stdin, scratch, text};
use serde_json::Value;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const SEED: &str = "seed_slice_ios18.json";
const LLAMA: &str = "llama3_2_1b_takeover_on_ios18.json";
const QWEN: &str = "qwen3_5_0_8b_takeover_on_ios18.json";

fn fails_with(out: &Output, code: i32, says: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(err.contains(says), "{err:?} lacks {says:?}");
}

fn json(out: &Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON on standard output")
}

/// `args` run under a pseudo-terminal (util-linux `script`), so that standard output and error
/// are a terminal; what the terminal showed, and the exit code. `None` where `script` is missing.
fn on_a_terminal(args: &[&str], env: &[(&str, &str)]) -> Option<(i32, String)> {
    let mut command = env!("CARGO_BIN_EXE_partition-planner").to_string();
    for a in args {
        command.push_str(&format!(" '{a}'"));
    }
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR")
        .env_remove("CLICOLOR_FORCE")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .ok()?;
    Some((out.status.code()?, text(&out.stdout)))
}

// Nothing silently ignored.

#[test]
fn a_cut_pattern_that_matches_nothing_is_an_error_naming_what_is_near() {
    let llama = data(LLAMA);
    for (pattern, near) in [
        ("Layers.7", Some("\"layers.7\"")),
        ("layers.99", Some("\"layers.9\"")),
        ("layers.[0-3]", Some("\"layers.0\"")),
        ("", None),
    ] {
        let out = run(&["plan", arg(&llama), "--cut-after", pattern]);
        fails_with(
            &out,
            2,
            &format!("cut_after pattern {pattern:?} matches no op"),
        );
        if let Some(near) = near {
            fails_with(&out, 2, &format!("did you mean {near}"));
        }
        assert!(out.stdout.is_empty());
    }
    let out = run(&["plan", arg(&llama), "--cut-before", "layers.*"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // In what-if, a scenario's error.
    let out = run(&["whatif", arg(&llama), "--change", "cut-after=nomatch"]);
    fails_with(
        &out,
        2,
        "scenario what-if: cut_after pattern \"nomatch\" matches no op",
    );
}

#[test]
fn check_takes_no_cuts_but_enforces_budgets() {
    let seed = data(SEED);
    let out = run(&["check", arg(&seed), "--cut-after", "layers.*"]);
    fails_with(&out, 2, "unexpected argument '--cut-after'");
    let out = run(&["check", arg(&seed), "--max-partition-ops", "1"]);
    fails_with(&out, 1, "");
    assert!(text(&out.stdout).contains("WITHIN_BUDGET"));
}

#[test]
fn byte_sizes_are_whole_bytes_or_a_number_with_a_unit() {
    let seed = data(SEED);
    for refused in ["1.5", "0.0001KB", "1.5.MB", "3 bytes"] {
        let out = run(&["plan", arg(&seed), "--max-partition-weight-bytes", refused]);
        fails_with(&out, 2, "not a byte size");
    }
    for taken in ["1.5MB", "1.5KiB", "2048"] {
        let out = run(&["plan", arg(&seed), "--max-partition-weight-bytes", taken]);
        assert_eq!(out.status.code(), Some(0), "{taken}: {}", text(&out.stderr));
    }
}

#[test]
fn an_executorch_version_not_reproduced_is_refused_with_those_that_are() {
    let seed = data(SEED);
    for version in ["9.9", "1.3", "1.6.0", "1.5x"] {
        let out = run(&["check", "--stock", "--executorch", version, arg(&seed)]);
        fails_with(
            &out,
            2,
            &format!("--executorch: executorch {version:?} is not a version"),
        );
        fails_with(&out, 2, "(supported: 1.4, 1.5)");
    }
    let out = run(&["check", "--stock", "--executorch", "1.4.0", arg(&seed)]);
    assert_ne!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// The seed document with `edit` made to it, written to a scratch file.
fn edited_seed(name: &str, edit: impl FnOnce(&mut Value)) -> std::path::PathBuf {
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(data(SEED)).unwrap()).unwrap();
    edit(&mut doc);
    let path = scratch(name);
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    path
}

fn node<'a>(doc: &'a mut Value, name: &str) -> &'a mut Value {
    let nodes = doc["nodes"].as_array_mut().unwrap();
    nodes.iter_mut().find(|n| n["name"] == name).unwrap()
}

#[test]
fn unknown_sizes_are_warnings_naming_the_node_and_empty_tags_are_refused() {
    let odd = edited_seed("float128.json", |doc| {
        node(doc, "_lifted_tensor_constant1")["meta"]["dtype"] = "float128".into();
        node(doc, "x")["meta"]["shape"] = serde_json::json!([i64::MAX, 4]);
    });
    let out = run(&["plan", arg(&odd)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("warning: ")
            && err.contains(
                "node \"_lifted_tensor_constant1\": dtype \"float128\" is not one the planner knows"
            )
            && err.contains("its size counts as unknown"),
        "{err}"
    );
    assert!(
        err.contains("node \"x\": its shape's byte count does not fit in 64 bits"),
        "{err}"
    );
    // The report counts it as of unknown size, not as nothing.
    let report = text(&out.stdout);
    assert!(
        report.contains("weights: 0 B (+1 of unknown size)"),
        "{report}"
    );
    // A state too: the buffer's dtype unknown, its state counted as of unknown size.
    let odd_state = edited_seed("float128-state.json", |doc| {
        node(doc, "b_cache")["meta"]["dtype"] = "float128".into();
    });
    let report = text(&run(&["plan", arg(&odd_state)]).stdout);
    assert!(
        report.contains("states (0 B (+1 of unknown size)): cache"),
        "{report}"
    );
    let empty = edited_seed("empty-tag.json", |doc| {
        node(doc, "aten_mul_tensor")["delegation_tag"] = "".into();
    });
    let out = run(&["check", arg(&empty)]);
    fails_with(
        &out,
        2,
        "node \"aten_mul_tensor\" has an empty delegation_tag",
    );
}

// Shell conventions.

#[test]
fn a_dash_is_standard_input_and_output() {
    let seed = std::fs::read(data(SEED)).unwrap();
    let from_file = run(&["plan", arg(&data(SEED)), "--format", "json"]);
    let from_stdin = run_with_stdin(&["plan", "-", "--format", "json", "-o", "-"], &seed);
    assert_eq!(json(&from_stdin), json(&from_file));
    assert!(!Path::new("-").exists(), "-o - wrote a file named -");
    // Scenarios and a manifest read from standard input; two inputs cannot both be.
    let out = run_with_stdin(
        &["whatif", arg(&data(SEED)), "--scenarios", "-"],
        b"{\"name\": \"ios17\", \"changes\": [\"target=iOS17\"]}\n",
    );
    assert!(text(&out.stdout).contains("ios17"), "{}", text(&out.stderr));
    let manifest = scratch("stdin-manifest.json");
    let out = run(&["plan", arg(&data(SEED)), "--emit-manifest", arg(&manifest)]);
    assert_eq!(out.status.code(), Some(0));
    let bytes = std::fs::read(&manifest).unwrap();
    let out = run_with_stdin(&["manifest-diff", "-", arg(&manifest)], &bytes);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run_with_stdin(&["manifest-diff", "-", "-"], &bytes);
    fails_with(&out, 2, "only one input can be standard input");
}

#[test]
fn a_reader_that_closes_the_pipe_ends_the_output_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_partition-planner"))
        .args(["generate", "--nodes", "200000", "-o", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 100];
    let mut stdout = child.stdout.take().unwrap();
    stdout.read_exact(&mut head).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stderr), "", "as `cat` does: nothing said");
}

#[test]
fn every_output_path_is_checked_before_any_work() {
    let out = run(&[
        "plan",
        arg(&data(SEED)),
        "--emit-manifest",
        "/nonexistent/m.json",
    ]);
    fails_with(&out, 2, "cannot write /nonexistent/m.json");
    assert!(
        out.stdout.is_empty(),
        "the plan was printed before the failure"
    );
    let out = run(&["check", arg(&data(SEED)), "-o", "/nonexistent/c.json"]);
    fails_with(&out, 2, "cannot write /nonexistent/c.json");
    let dir = scratch("a-directory");
    std::fs::create_dir_all(&dir).unwrap();
    let out = run(&["plan", arg(&data(SEED)), "-o", arg(&dir)]);
    fails_with(&out, 2, "it is a directory");
    let out = run(&["plan", arg(&data(SEED)), "--emit-manifest", "-"]);
    fails_with(&out, 2, "both go to standard output");
    let same = scratch("same.json");
    let out = run(&[
        "plan",
        arg(&data(SEED)),
        "-o",
        arg(&same),
        "--emit-manifest",
        arg(&same),
    ]);
    fails_with(&out, 2, "-o and --emit-manifest name the same file");
    let out = run(&["plan", arg(&data(SEED)), "-o", "nodir/"]);
    fails_with(
        &out,
        2,
        "cannot write nodir/: a file's path cannot end in /",
    );
    // A file this process may not write is not replaced behind its back (as root, it may).
    let locked = scratch("locked.txt");
    let _ = std::fs::remove_file(&locked);
    std::fs::write(&locked, "kept\n").unwrap();
    let mut permissions = std::fs::metadata(&locked).unwrap().permissions();
    permissions.set_readonly(true);
    std::fs::set_permissions(&locked, permissions).unwrap();
    if std::fs::OpenOptions::new()
        .write(true)
        .open(&locked)
        .is_err()
    {
        let out = run(&["plan", arg(&data(SEED)), "-o", arg(&locked)]);
        fails_with(&out, 2, "Permission denied");
        assert_eq!(std::fs::read_to_string(&locked).unwrap(), "kept\n");
    }
}

#[test]
fn dev_stdout_writes_to_what_the_shell_redirected_it_to() {
    let log = scratch("appended.log");
    std::fs::write(&log, "an earlier line\n").unwrap();
    let command = format!(
        "'{}' plan '{}' -o /dev/stdout >> '{}'",
        env!("CARGO_BIN_EXE_partition-planner"),
        arg(&data(SEED)),
        arg(&log)
    );
    let status = Command::new("sh").args(["-c", &command]).status().unwrap();
    assert!(status.success());
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.starts_with("an earlier line\nplan for 13 nodes"),
        "{logged}"
    );
}

#[test]
fn a_failed_run_leaves_the_old_file_whole_and_no_temporary_file() {
    let dir = scratch("atomic");
    std::fs::create_dir_all(&dir).unwrap();
    let plan = dir.join("plan.json");
    std::fs::write(&plan, "the previous plan\n").unwrap();
    let (llama, seed, out) = (data(LLAMA), data(SEED), arg(&plan));
    let failed = run(&["plan", arg(&llama), "--cut-after", "nomatch", "-o", out]);
    assert_eq!(failed.status.code(), Some(2));
    let kept = std::fs::read_to_string(&plan).unwrap();
    assert_eq!(kept, "the previous plan\n");
    let done = run(&["plan", arg(&seed), "--format", "json", "-o", out]);
    assert_eq!(done.status.code(), Some(0));
    assert!(std::fs::read_to_string(&plan).unwrap().starts_with('{'));
    let names: Vec<String> = (std::fs::read_dir(&dir).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["plan.json"]);
    // A device is written in place: it cannot be replaced.
    let out = run(&["plan", arg(&data(SEED)), "-o", "/dev/null"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn pictures_and_generated_graphs_are_not_written_to_a_terminal() {
    let Some((code, shown)) = on_a_terminal(&["generate", "--nodes", "200"], &[]) else {
        eprintln!("no `script` here: the terminal is not tried");
        return;
    };
    assert_eq!(code, 2, "{shown}");
    assert!(shown.contains("a generated graph would be written to the terminal: give -o FILE"));
    let (code, shown) = on_a_terminal(&["render", arg(&data(SEED))], &[]).unwrap();
    assert_eq!(code, 2, "{shown}");
    assert!(shown.contains("an HTML page would be written to the terminal"));
    let (code, shown) = on_a_terminal(&["generate", "--nodes", "200", "-o", "-"], &[]).unwrap();
    assert_eq!(code, 0);
    assert!(shown.contains("partition-planner/graph@1") || shown.contains("\"nodes\""));
}

// Output control.

#[test]
fn quiet_prints_the_summary_alone() {
    let out = run(&["-q", "plan", arg(&data(QWEN))]);
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].contains("delegated in") && lines[1].starts_with("estimated per step"));
    let out = run(&["check", "--stock", arg(&data(QWEN)), "--quiet"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        "36 rule violations: 36 NO_STALE_COPY\n",
        "the verdict alone"
    );
}

#[test]
fn findings_are_grouped_by_rule_and_cut_short() {
    let qwen = data(QWEN);
    let out = run(&["check", "--stock", arg(&qwen)]);
    let report = text(&out.stdout);
    assert!(report.contains("findings: 36 NO_STALE_COPY\n"), "{report}");
    assert_eq!(
        report.matches("[NO_STALE_COPY]").count(),
        5 + 1,
        "five, then the rest counted"
    );
    assert!(report.contains("  … and 31 more [NO_STALE_COPY]"));
    let out = run(&["check", "--stock", arg(&qwen), "--max-findings", "2"]);
    assert!(text(&out.stdout).contains("… and 34 more [NO_STALE_COPY]"));
    let out = run(&["check", "--stock", arg(&qwen), "-v"]);
    assert_eq!(text(&out.stdout).matches("[NO_STALE_COPY]").count(), 36);
    // A long list is cut short too; -v shows it whole.
    let generated = scratch("generated-20000.json");
    run(&["generate", "--nodes", "20000", "-o", arg(&generated)]);
    let short = text(&run(&["plan", arg(&generated)]).stdout);
    let whole = text(&run(&["plan", arg(&generated), "--verbose"]).stdout);
    assert!(short.contains("… and ") && short.lines().count() < whole.lines().count());
}

#[test]
fn colour_follows_the_flag_the_terminal_and_no_color() {
    let missing = "/nonexistent.json";
    // As a pipe sees it, whatever this process's environment forces.
    let stderr = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_partition-planner"))
            .args(args)
            .env_remove("CLICOLOR_FORCE")
            .env_remove("CLICOLOR")
            .output()
            .unwrap();
        text(&out.stderr)
    };
    assert!(
        stderr(&["--color", "always", "plan", missing]).contains("\u{1b}["),
        "colour asked for"
    );
    assert!(!stderr(&["--color", "never", "plan", missing]).contains("\u{1b}["));
    assert!(
        !stderr(&["plan", missing]).contains("\u{1b}["),
        "a pipe gets none"
    );
    // clap's own messages (a usage error, help) keep to the flag too, though written before it
    // is read.
    for usage in [
        &["--color", "always", "plan", "--nonsense"][..],
        &["plan", "--nonsense", "--color=always"],
    ] {
        assert!(stderr(usage).contains("\u{1b}["), "{usage:?}");
    }
    let help = run(&["--color=always", "--help"]);
    assert!(
        text(&help.stdout).contains("\u{1b}["),
        "help asked in colour"
    );
    if let Some((_, shown)) = on_a_terminal(&["plan", missing], &[]) {
        assert!(shown.contains("\u{1b}["), "a terminal does: {shown:?}");
        let (_, shown) = on_a_terminal(&["plan", missing], &[("NO_COLOR", "1")]).unwrap();
        assert!(
            !shown.contains("\u{1b}["),
            "unless NO_COLOR is set: {shown:?}"
        );
        for usage in [
            &["--color", "never", "plan", "--nonsense"][..],
            &["--help", "--color=never"],
        ] {
            let (_, shown) = on_a_terminal(usage, &[]).unwrap();
            assert!(!shown.contains("\u{1b}["), "{usage:?}: {shown:?}");
            let asked = usage
                .iter()
                .filter(|a| !a.contains("never") && **a != "--color");
            let (_, shown) = on_a_terminal(&asked.copied().collect::<Vec<_>>(), &[]).unwrap();
            assert!(
                shown.contains("\u{1b}["),
                "{usage:?} without --color: {shown:?}"
            );
        }
    }
}

#[test]
fn progress_shows_on_a_terminal_for_a_large_document_and_never_in_a_pipe() {
    let large = scratch("generated-100000.json");
    let out = run(&["generate", "--nodes", "100000", "-o", arg(&large)]);
    assert_eq!(out.status.code(), Some(0));
    assert!(std::fs::metadata(&large).unwrap().len() >= 16 << 20);
    let out = run(&["plan", arg(&large), "-o", "/dev/null"]);
    assert_eq!(text(&out.stderr), "", "nothing on a pipe");
    if let Some((code, shown)) = on_a_terminal(&["plan", arg(&large), "-o", "/dev/null"], &[]) {
        assert_eq!(code, 0);
        assert!(
            shown.contains("planning 100000 nodes") || shown.contains("reading"),
            "{shown:?}"
        );
        let (_, shown) =
            on_a_terminal(&["-q", "plan", arg(&large), "-o", "/dev/null"], &[]).unwrap();
        assert!(!shown.contains("planning"), "-q shows none: {shown:?}");
    }
}

#[test]
fn render_plan_exits_one_when_the_plan_breaks_a_rule() {
    // The stock tags of the seed's writer export, handed back as a plan.
    let graph = data("seed_slice_writer_untagged.json");
    let mut plan = json(&run(&["plan", arg(&graph), "--format", "json"]));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&graph).unwrap()).unwrap();
    for n in doc["nodes"].as_array().unwrap() {
        let name = n["name"].as_str().unwrap();
        plan["node_tags"][name] = n.get("delegation_tag").cloned().unwrap_or(Value::Null);
    }
    let broken = scratch("broken-plan.json");
    std::fs::write(&broken, plan.to_string()).unwrap();
    let page = scratch("broken.html");
    let out = run(&[
        "render",
        arg(&graph),
        "--plan",
        arg(&broken),
        "-o",
        arg(&page),
    ]);
    fails_with(&out, 1, "rule violation");
    assert!(std::fs::read_to_string(&page).unwrap().contains("<html"));
    // The plan can come from standard input.
    let out = run_with_stdin(
        &["render", arg(&graph), "--plan", "-", "-o", arg(&page)],
        plan.to_string().as_bytes(),
    );
    fails_with(&out, 1, "rule violation");
    // The plan carries its own options: flags that would change them are refused, not ignored.
    let out = run(&[
        "render",
        arg(&graph),
        "--plan",
        arg(&broken),
        "--max-partition-ops",
        "1",
    ]);
    fails_with(&out, 2, "cannot be used with");
    // A plan made here draws with exit 0 and says so.
    let good = scratch("good-plan.json");
    run(&["plan", arg(&graph), "--format", "json", "-o", arg(&good)]);
    let out = run(&[
        "render",
        arg(&graph),
        "--plan",
        arg(&good),
        "-o",
        arg(&page),
    ]);
    fails_with(&out, 0, "ok: no rule is broken");
}

#[test]
fn manifest_diff_has_an_exit_code_and_an_output_file() {
    let (old, new) = (scratch("old-manifest.json"), scratch("new-manifest.json"));
    run(&["plan", arg(&data(SEED)), "--emit-manifest", arg(&old)]);
    run(&[
        "plan",
        arg(&data(SEED)),
        "--min-target",
        "iOS17",
        "--emit-manifest",
        arg(&new),
    ]);
    let out = run(&["manifest-diff", arg(&old), arg(&old), "--exit-code"]);
    assert_eq!(out.status.code(), Some(0));
    let out = run(&["manifest-diff", arg(&old), arg(&new), "--exit-code"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let out = run(&["manifest-diff", arg(&old), arg(&new)]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "without --exit-code a difference is no failure"
    );
    let report = scratch("diff.txt");
    let out = run(&["manifest-diff", arg(&old), arg(&new), "-o", arg(&report)]);
    assert!(out.stdout.is_empty());
    assert!(
        std::fs::read_to_string(&report)
            .unwrap()
            .contains("to compile")
    );
}

// One vocabulary.

#[test]
fn flags_take_on_and_off_and_what_if_keys_take_the_flags_names() {
    let seed_path = data(SEED);
    let seed = arg(&seed_path);
    let off = json(&run(&[
        "plan",
        seed,
        "--take-over-mutable-buffer",
        "off",
        "--format",
        "json",
    ]));
    let no = json(&run(&[
        "plan",
        seed,
        "--take-over-mutable-buffer",
        "false",
        "--format",
        "json",
    ]));
    assert_eq!(off, no);
    let by_key = run(&["whatif", seed, "--change", "target=iOS17"]);
    let by_flag = run(&["whatif", seed, "--change", "min-target=iOS17"]);
    assert_eq!(text(&by_key.stdout), text(&by_flag.stdout));
    let by_flag = run(&["whatif", seed, "--change", "take-over-mutable-buffer=off"]);
    assert!(text(&by_flag.stdout).starts_with("what if take-over=off"));
}

#[test]
fn usage_errors_name_the_flag_and_input_errors_the_file_and_what_was_expected() {
    let seed_path = data(SEED);
    let seed = arg(&seed_path);
    fails_with(
        &run(&["plan", seed, "--strategy", "bogus"]),
        2,
        "--strategy: unknown strategy",
    );
    fails_with(
        &run(&["plan", seed, "--cost", "call_overhead_us=abc"]),
        2,
        "call_overhead_us takes a number of microseconds, found \"abc\"",
    );
    fails_with(
        &run(&["whatif", seed, "--change", "gpu=on"]),
        2,
        "--change: unknown change",
    );
    let scenarios = scratch("bad-scenarios.jsonl");
    std::fs::write(&scenarios, "{\"changes\": [\"target=iOS17\"]}\n{name: 1}\n").unwrap();
    let out = run(&["whatif", seed, "--scenarios", arg(&scenarios)]);
    fails_with(
        &out,
        2,
        &format!("{}: line 2: not a scenario", scenarios.display()),
    );
    let empty = scratch("empty-scenarios.jsonl");
    std::fs::write(&empty, "# nothing yet\n").unwrap();
    let out = run(&["whatif", seed, "--scenarios", arg(&empty)]);
    fails_with(&out, 2, "no scenario in it");
    let array = scratch("array.json");
    // An array of one string would fill a schema probe's one field, as serde reads arrays.
    for values in ["[1, 2]", "[\"partition-planner/graph@1\"]"] {
        std::fs::write(&array, values).unwrap();
        fails_with(
            &run(&["plan", arg(&array)]),
            2,
            "array.json: not a bridge document: expected a JSON object",
        );
        fails_with(
            &run(&["manifest-diff", arg(&array), arg(&array)]),
            2,
            "array.json: not a manifest (partition-planner/manifest@1, docs/manifest.md): found an array",
        );
    }
    let plan = scratch("a-plan.json");
    run(&["plan", seed, "--format", "json", "-o", arg(&plan)]);
    fails_with(
        &run(&["manifest-diff", arg(&plan), arg(&plan)]),
        2,
        "a-plan.json: not a manifest (partition-planner/manifest@1, docs/manifest.md): found \"partition-planner/plan@1\"",
    );
    let mut marked = "\u{feff}".as_bytes().to_vec();
    marked.extend(std::fs::read(data(SEED)).unwrap());
    let out = run_with_stdin(&["plan", "-"], &marked);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a byte order mark is skipped: {}",
        text(&out.stderr)
    );
}

#[test]
fn names_sort_naturally_units_are_iec_and_counts_agree() {
    let qwen_path = data(QWEN);
    let qwen = arg(&qwen_path);
    let out = run(&[
        "whatif",
        qwen,
        "--change",
        "take-over=off",
        "--format",
        "json",
    ]);
    let answer = json(&out);
    let lost: Vec<&str> = answer["scenarios"][0]["diff"]["states_lost"]
        .as_array()
        .expect("states lost")
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let at = |prefix: &str| lost.iter().position(|s| s.starts_with(prefix)).unwrap();
    assert!(
        at("layers.3.") < at("layers.11."),
        "layers.3 before layers.11: {lost:?}"
    );
    assert!(at("layers.9.") < at("layers.10."), "{lost:?}");
    // A partition that keeps its name but not its nodes says how it changed.
    let out = run(&[
        "whatif",
        arg(&data(SEED)),
        "--change",
        "cpu=aten_mul_tensor",
    ]);
    assert!(
        text(&out.stdout).contains("partitions changed (1): tag0 (8 -> 7 nodes)\n"),
        "{}",
        text(&out.stdout)
    );
    let report = text(&run(&["plan", arg(&data(SEED))]).stdout);
    assert!(report.contains("KiB") || report.contains(" B "), "{report}");
    assert!(
        !report.contains(" KB") && !report.contains("(s)"),
        "{report}"
    );
    assert!(report.contains("1 partition, 1 state"), "{report}");
}

#[test]
fn every_flag_has_help_and_subcommands_come_in_workflow_order() {
    let help = text(&run(&["--help"]).stdout);
    let listed: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    // In the order of a day's work, then clap's own `help`.
    let commands = [
        "plan",
        "check",
        "whatif",
        "render",
        "generate",
        "manifest-diff",
    ];
    assert_eq!(listed, [&commands[..], &["help"]].concat());
    for command in commands {
        let help = text(&run(&[command, "-h"]).stdout);
        let lines: Vec<&str> = help.lines().collect();
        let indent = |l: &str| l.len() - l.trim_start().len();
        for (i, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            if !(trimmed.starts_with('-') || trimmed.starts_with('<')) {
                continue;
            }
            // An item's help follows two spaces on its line, or is the next line, indented more.
            let same_line = trimmed.split("  ").filter(|s| !s.trim().is_empty()).count() >= 2;
            let next_line = lines.get(i + 1).is_some_and(|next| {
                let t = next.trim_start();
                indent(next) > indent(line) && !t.starts_with('-') && !t.is_empty()
            });
            assert!(same_line || next_line, "`{command}`: {line:?} has no help");
        }
    }
}

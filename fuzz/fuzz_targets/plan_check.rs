//! Plan and check on generated documents, with options (budgets and cuts among them), strategies
//! and cost constants from the fuzzer. Whatever imports must plan, and the plan must pass the checker: a violation on a plan is
//! a planner bug, reported as a crash. The reports (text and JSON) and the stock proposal's check
//! are written too.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use partition_planner::api::{Checking, Overrides, check_document, plan_document};
use partition_planner_fuzz::bridge_document;

const STRATEGIES: &[&str] = &[
    "auto",
    "state",
    "cpu",
    "io",
    "cache.0=cpu",
    "cache.1=state",
    "cache.9=io",
];

fn overrides(u: &mut Unstructured) -> arbitrary::Result<Overrides> {
    let take_over = match u.int_in_range(0..=2)? {
        0 => "",
        1 => "\"take_over_mutable_buffer\":true,",
        _ => "\"take_over_mutable_buffer\":false,",
    };
    let target = *u.choose(&["null", "\"iOS17\"", "\"iOS18\""])?;
    let strategies: Vec<String> = (0..u.int_in_range(0..=2)?)
        .map(|_| u.choose(STRATEGIES).map(|s| format!("\"{s}\"")))
        .collect::<arbitrary::Result<_>>()?;
    // Budgets and asked cuts (docs/chunks.md): small enough to cut the generated graphs.
    let chunks = match u.int_in_range(0..=4)? {
        0 => String::new(),
        1 => format!("\"max_ops\":{},", u.int_in_range(0..=8)?),
        2 => format!("\"max_weight_bytes\":{},", u.int_in_range(0..=4096)?),
        3 => format!(
            "\"cut_after\":[{}],",
            u.choose(&["\"*\"", "\"*_1\"", "\"layers.*\"", "\"\""])?
        ),
        _ => format!(
            "\"cut_before\":[{}],\"max_ops\":{},",
            u.choose(&["\"*\"", "\"*_2\""])?,
            u.int_in_range(1..=4)?
        ),
    };
    let cost = if u.arbitrary()? {
        "\"cost\":{\"delegate_call_us\":0},"
    } else {
        ""
    };
    let json = format!(
        "{{{cost}\"options\":{{{take_over}{chunks}\"minimum_deployment_target\":{target}}},\"strategies\":[{}]}}",
        strategies.join(",")
    );
    Ok(serde_json::from_str(&json).unwrap_or_default())
}

fuzz_target!(|bytes: &[u8]| {
    let mut u = Unstructured::new(bytes);
    let (Ok(text), Ok(overrides)) = (bridge_document(&mut u), overrides(&mut u)) else {
        return;
    };
    if let Ok(planned) = plan_document(&text, &overrides) {
        if let Some(v) = planned.verdict.violations().next() {
            panic!("the plan breaks {v:?}\n{text}\n{overrides:?}");
        }
        let _ = serde_json::to_string(&planned.json());
        let _ = planned.text();
        let _ = planned.manifest();
    }
    for checking in [Checking::Document, Checking::Stock(None)] {
        if let Ok(checked) = check_document(&text, &overrides, checking) {
            let _ = serde_json::to_string(&checked.json());
            let _ = checked.text();
        }
    }
});

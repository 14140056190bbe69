//! What-if: scenario files (one JSON object per line) from the fuzzer, parsed, and where they parse,
//! answered on a generated document; every answer's plan must pass the checker.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use partition_planner::api::{Overrides, whatif_document};
use partition_planner::whatif::parse_scenarios;
use partition_planner_fuzz::bridge_document;

const CHANGES: &[&str] = &[
    "take-over=off",
    "take-over=on",
    "target=iOS17",
    "target=iOS18",
    "target=default",
    "target=iOS99",
    "strategy=cpu",
    "strategy=io",
    "strategy=state",
    "strategy=cache.0=cpu",
    "strategy=nope=io",
    "op-supported=aten.add.Tensor",
    "op-unsupported=aten.mul.Tensor",
    "op-unsupported=llama.gated_delta_rule.default",
    "node-supported=n5",
    "node-unsupported=n3",
    "cpu=n4",
    "cpu=missing",
    "cost=delegate_call_us=0",
    "cost=bytes_per_us=1e300",
    "cost=nonsense=1",
    "take-over",
];

fn scenarios(u: &mut Unstructured) -> arbitrary::Result<String> {
    if u.ratio(1, 8)? {
        return u.arbitrary();
    }
    let mut lines = Vec::new();
    for i in 0..u.int_in_range(1..=3)? {
        let changes: Vec<String> = (0..u.int_in_range(0..=3)?)
            .map(|_| u.choose(CHANGES).map(|c| format!("\"{c}\"")))
            .collect::<arbitrary::Result<_>>()?;
        lines.push(format!(
            "{{\"name\":\"s{i}\",\"changes\":[{}]}}",
            changes.join(",")
        ));
    }
    Ok(lines.join("\n"))
}

fuzz_target!(|bytes: &[u8]| {
    let mut u = Unstructured::new(bytes);
    let (Ok(scenario_text), Ok(document)) = (scenarios(&mut u), bridge_document(&mut u)) else {
        return;
    };
    let Ok(scenarios) = parse_scenarios(&scenario_text) else {
        return;
    };
    if let Ok(answers) = whatif_document(&document, &Overrides::default(), scenarios) {
        if let Some(v) = answers.violation() {
            panic!(
                "a what-if plan breaks {}\n{document}\n{scenario_text}",
                v.rule
            );
        }
        let _ = answers.json();
        let _ = answers.text(true);
        let _ = answers.text(false);
    }
});

//! manifest-diff on two inputs: manifests of plans of generated documents, each edited by the
//! fuzzer now and then, or raw text. Reading either is a typed error or a manifest; the diff and its
//! text never panic.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use partition_planner::api::{
    Overrides, manifest_diff_documents, manifest_document, plan_document,
};
use partition_planner::report::manifest_diff_text;
use partition_planner_fuzz::bridge_document;

fn manifest_text(u: &mut Unstructured) -> arbitrary::Result<String> {
    if u.ratio(1, 4)? {
        return u.arbitrary();
    }
    let document = bridge_document(u)?;
    let Ok(planned) = plan_document(&document, &Overrides::default()) else {
        return u.arbitrary();
    };
    let mut text = serde_json::to_string(&planned.manifest()).unwrap_or_default();
    if u.ratio(1, 3)? && !text.is_empty() {
        // One value replaced by another of any type.
        let at = u.int_in_range(0..=text.len() - 1)?;
        let bytes = text.as_bytes();
        let colon = bytes[at..]
            .iter()
            .position(|&b| b == b':')
            .map(|c| at + c + 1);
        if let Some(colon) = colon {
            let end = (bytes[colon..].iter().position(|&b| b == b',' || b == b'}'))
                .map_or(text.len(), |e| colon + e);
            let value = *u.choose(&[
                "null",
                "-1",
                "1e999",
                "\"x\"",
                "[]",
                "{}",
                "18446744073709551616",
            ])?;
            text.replace_range(colon..end, value);
        }
    }
    Ok(text)
}

fuzz_target!(|bytes: &[u8]| {
    let mut u = Unstructured::new(bytes);
    let (Ok(old), Ok(new)) = (manifest_text(&mut u), manifest_text(&mut u)) else {
        return;
    };
    if let (Ok(old), Ok(new)) = (manifest_document(&old), manifest_document(&new)) {
        let diff = manifest_diff_documents(&old, &new);
        let _ = serde_json::to_string(&diff);
        let _ = manifest_diff_text(&diff);
    }
});

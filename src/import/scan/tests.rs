//! The scanner gives exactly the node serde gives, or declines: never a node serde would not
//! build, never a different one.

use super::*;
use crate::import::read_nodes::NodeSeed;
use proptest::prelude::*;
use serde::de::DeserializeSeed;

/// A list that has read two nodes, `x` and `w`, so that references to them resolve.
fn list() -> NodeList {
    let mut list = NodeList::default();
    for name in ["x", "w"] {
        let text = format!(r#"{{"name": "{name}", "op": "placeholder", "target": "{name}"}}"#);
        let index = list.nodes.len() as u32;
        scan_node(&text, 0, &mut list, index).expect("a placeholder scans");
    }
    list
}

/// What serde reads from `text`, a node and nothing else: the node, and the references it left
/// pending.
fn serde_reads(text: &str) -> Option<(Node, Vec<(u32, String)>)> {
    let mut list = list();
    let mut de = serde_json::Deserializer::from_str(text);
    let node = NodeSeed {
        list: &mut list,
        index: 2,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    list.problem.is_none().then_some((node, list.pending))
}

/// Whether the scanner took `text`; panics when it took it and serde disagrees.
fn agrees(text: &str) -> bool {
    let mut list = list();
    let Some(end) = scan_node(text, 0, &mut list, 2) else {
        assert_eq!(list.pending, [], "a declined node leaves nothing pending");
        assert_eq!(list.nodes.len(), 2, "a declined node is not added");
        return false;
    };
    let node = list.nodes.pop().expect("the node was added");
    assert_eq!(end, text.trim_end().len(), "{text}");
    match serde_reads(text) {
        Some((expected, pending)) => {
            assert_eq!(node, expected, "{text}");
            assert_eq!(list.pending, pending, "{text}");
        }
        None => panic!("scanned what serde refuses: {text}"),
    }
    true
}

#[test]
fn exported_nodes_are_scanned_as_serde_reads_them() {
    let taken = [
        r#"{"name": "add", "op": "call_function", "target": "aten.add.Tensor", "args": [{"node": "x"}, {"node": "w"}], "kwargs": {}, "delegation_tag": "tag0", "meta": {"shape": [1, 8], "dtype": "float32"}}"#,
        r#"{"name":"later","op":"call_function","target":"aten.cat.default","args":[[{"node":"x"},{"node":"y"},{"node":"x"}],-1],"kwargs":{"out":{"node":"z"}},"supported":false}"#,
        r#" { "kwargs" : { "alpha" : 0.5, "dims": [1.5e-3, -2E+4, 0.0] } , "args" : [ { "node" : "w" } ], "name" : "k" , "op" : "call_function" , "target" : "t" } "#,
        r#"{"name": "big", "op": "call_function", "target": "t", "args": [18446744073709551615, 9223372036854775807, -9223372036854775808, true, false, null, "s", {}]}"#,
        r#"{"name": "meta", "op": "call_function", "target": "t", "meta": {"shape": ["s0", 4, 0], "dtype": null, "digest": "ab", "stack": {"a": [1, "b", null, [{}]]}, "val": -1.25}}"#,
        r#"{"name": "noshape", "op": "get_attr", "target": "const", "supported": null, "delegation_tag": null, "meta": {"shape": null}}"#,
        r#"{"name": "kw", "op": "call_function", "target": "t", "kwargs": {"node": "x"}, "args": [{"node": "w"}]}"#,
        r#"{"name": "o", "op": "output", "target": "output", "args": [[{"node": "x"}, {"key": {"node": "w"}}]]}"#,
        "{\"name\": \"unicod\u{e9}_\u{1F600}\", \"op\": \"placeholder\", \"target\": \"p\"}",
        r#"{"name": "pool", "op": "call_function", "target": "t", "supported": true, "conversion": {"converts": false, "found_by": "probe", "converter": "coremltools 9.0", "call": "t(dilation=[2, 2])", "error": "ValueError: @max_pool does not support dilation > 1"}}"#,
        r#"{"name": "ok", "op": "call_function", "target": "t", "conversion": {"found_by": "verification", "converts": true, "error": null}}"#,
        r#"{"name": "none", "op": "call_function", "target": "t", "conversion": null}"#,
    ];
    for text in taken {
        assert!(agrees(text), "declined: {text}");
    }
}

#[test]
fn what_serde_reads_another_way_or_refuses_is_declined() {
    let declined = [
        // Escapes, and numbers serde_json reads as floats.
        r#"{"name": "a\"b", "op": "placeholder", "target": "p"}"#,
        r#"{"name": "a", "op": "call_function", "target": "t", "args": [-0]}"#,
        r#"{"name": "a", "op": "call_function", "target": "t", "args": [18446744073709551616]}"#,
        r#"{"name": "a", "op": "call_function", "target": "t", "args": [-9223372036854775809]}"#,
        // Keys given twice, unknown keys, malformed references.
        r#"{"name": "a", "name": "b", "op": "placeholder", "target": "p"}"#,
        r#"{"name": "a", "op": "placeholder", "target": "p", "meta": {"dtype": "f", "dtype": "g"}}"#,
        r#"{"name": "a", "op": "placeholder", "target": "p", "supportd": true}"#,
        r#"{"name": "a", "op": "call_function", "target": "t", "args": [{"node": 3}]}"#,
        r#"{"name": "a", "op": "call_function", "target": "t", "args": [{"node": "x", "k": 1}]}"#,
        r#"{"name": "a", "op": "call_function", "target": "t", "args": [{"node": "x", "node": "w"}]}"#,
        // Not JSON, or not a node.
        r#"{"name": "a", "op": "call_function", "target": "t", "args": [1,]}"#,
        r#"{"name": "a", "op": "call_function", "target": "t", "args": [01]}"#,
        r#"{"name": "a", "op": "call_function", "target": "t", "args": [1.]}"#,
        r#"{"name": "a", "op": "call_function", "target": "t", "args": [1e400]}"#,
        r#"{"name": "a", "op": "call_function", "target": "t", "args": [tru]}"#,
        "{\"name\": \"a\tb\", \"op\": \"placeholder\", \"target\": \"p\"}",
        r#"{"name": "a", "op": "call", "target": "t"}"#,
        r#"{"op": "placeholder", "target": "p"}"#,
        r#"{"name": "a", "op": "placeholder", "target": null}"#,
        r#"{"name": "a", "op": "placeholder", "target": "p", "args": {}}"#,
        r#"{"name": "a", "op": "placeholder", "target": "p", "kwargs": []}"#,
        r#"{"name": "a", "op": "placeholder", "target": "p", "meta": {"shape": [-1]}}"#,
        r#"{"name": "a", "op": "placeholder", "target": "p", "meta": {"shape": [1.0]}}"#,
        r#"{"name": "a", "op": "placeholder", "target": "p", "meta": {"shape": [9223372036854775808]}}"#,
        r#"{"name": "a", "op": "placeholder", "target": "p""#,
        // A verdict without `converts`, with an unknown member or way of finding, or an escape.
        r#"{"name": "a", "op": "call_function", "target": "t", "conversion": {"found_by": "probe"}}"#,
        r#"{"name": "a", "op": "call_function", "target": "t", "conversion": {"converts": true, "why": 1}}"#,
        r#"{"name": "a", "op": "call_function", "target": "t", "conversion": {"converts": true, "found_by": "guess"}}"#,
        r#"{"name": "a", "op": "call_function", "target": "t", "conversion": {"converts": false, "error": "a "b""}}"#,
        r#"{"name": "a", "op": "call_function", "target": "t", "conversion": {"converts": false, "converts": true}}"#,
    ];
    for text in declined {
        assert!(!agrees(text), "scanned: {text}");
    }
    let mut deep = "1".to_string();
    for _ in 0..40 {
        deep = format!("[{deep}]");
    }
    let text =
        format!(r#"{{"name": "a", "op": "call_function", "target": "t", "args": [{deep}]}}"#);
    assert!(!agrees(&text));
}

/// Pieces of JSON that exporters write.
fn plain_token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("-7".to_string()),
        Just("2.50".to_string()),
        Just("1e5".to_string()),
        Just("-1E-5".to_string()),
        Just("9223372036854775808".to_string()),
        Just("-9223372036854775808".to_string()),
        Just("true".to_string()),
        Just("null".to_string()),
        Just("\"s\"".to_string()),
        Just("\"\u{e9}\"".to_string()),
        Just("{\"node\": \"x\"}".to_string()),
        Just("{\"node\": \"later\"}".to_string()),
        Just("{}".to_string()),
        Just("[]".to_string()),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
    ]
}

/// Pieces of JSON that exporters should not write, or that serde_json reads in its own way.
fn awkward_token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("-0".to_string()),
        Just("01".to_string()),
        Just("1.".to_string()),
        Just("1e400".to_string()),
        Just("18446744073709551616".to_string()),
        Just("nul".to_string()),
        Just("\"e\\u00e9\"".to_string()),
        Just("{\"node\": \"x\", \"b\": 1}".to_string()),
        Just("{\"node\": 1}".to_string()),
        any::<f64>().prop_map(|f| format!("{f:e}")),
    ]
}

/// An argument of up to a few levels built from `token`s; with `awkward`, some lists unclosed or
/// with a trailing comma, and dictionaries with `node` among their keys.
fn argument(
    token: impl Strategy<Value = String> + 'static,
    awkward: bool,
) -> impl Strategy<Value = String> {
    let key = if awkward {
        "[a-z]{1,3}|node"
    } else {
        "[a-z]{1,3}"
    };
    token.prop_recursive(4, 24, 4, move |inner| {
        let list = prop::collection::vec(inner.clone(), 0..4)
            .prop_map(|items| format!("[{}]", items.join(", ")));
        let dict = prop::collection::vec((key, inner.clone()), 0..3).prop_map(|entries| {
            let entries: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("\"{k}\": {v}"))
                .collect();
            format!("{{{}}}", entries.join(", "))
        });
        if awkward {
            prop_oneof![
                list,
                dict,
                inner.clone().prop_map(|v| format!("[{v},]")),
                inner.prop_map(|v| format!("[{v}")),
            ]
            .boxed()
        } else {
            prop_oneof![list, dict].boxed()
        }
    })
}

fn any_argument() -> impl Strategy<Value = String> {
    argument(prop_oneof![plain_token(), awkward_token()], true)
}

/// A member a node may have, its value well-formed or not.
fn member() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(r#""supported": true"#.to_string()),
        Just(r#""delegation_tag": "tag0""#.to_string()),
        Just(r#""delegation_tag": null"#.to_string()),
        prop::collection::vec(any_argument(), 0..4)
            .prop_map(|a| format!(r#""args": [{}]"#, a.join(", "))),
        any_argument().prop_map(|a| format!(r#""kwargs": {a}"#)),
        prop::collection::vec(prop_oneof![plain_token(), awkward_token()], 0..4)
            .prop_map(|d| format!(r#""meta": {{"shape": [{}]}}"#, d.join(","))),
        (plain_token(), any_argument())
            .prop_map(|(d, x)| format!(r#""meta": {{"dtype": {d}, "extra": {x}}}"#)),
        (any::<bool>(), prop_oneof![plain_token(), awkward_token()]).prop_map(|(c, e)| format!(
            r#""conversion": {{"converts": {c}, "found_by": "probe", "error": {e}}}"#
        )),
    ]
}

/// A member that makes a node one serde refuses or reads in its own way.
fn wrong_member() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(r#""name": "x""#.to_string()),
        Just(r#""op": "output""#.to_string()),
        Just(r#""op": "function""#.to_string()),
        Just(r#""target": null"#.to_string()),
        Just(r#""supported": 1"#.to_string()),
        Just(r#""other": 1"#.to_string()),
        any_argument().prop_map(|a| format!(r#""args": {a}"#)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Any node text: whatever the scanner takes, serde reads the same.
    #[test]
    fn the_scanner_agrees_with_serde_or_declines(
        mut members in prop::collection::vec(member(), 0..5),
        wrong in prop::option::weighted(0.3, (wrong_member(), any::<prop::sample::Index>())),
        named in prop::bool::weighted(0.9),
        spaced in any::<bool>(),
    ) {
        if let Some((member, at)) = wrong {
            members.insert(at.index(members.len() + 1), member);
        }
        if named {
            members.insert(0, r#""name": "n", "op": "call_function", "target": "t""#.to_string());
        }
        let separator = if spaced { " ,\n " } else { "," };
        agrees(&format!("{{{}}}", members.join(separator)));
    }

    /// Nodes as exporters write them, with arguments of every kind, are all taken.
    #[test]
    fn well_formed_nodes_are_taken(
        args in prop::collection::vec(argument(plain_token(), false), 0..4),
        kwargs in argument(plain_token(), false),
    ) {
        let text = format!(
            r#"{{"name": "n", "op": "call_function", "target": "t", "args": [{}], "kwargs": {{"k": {kwargs}}}}}"#,
            args.join(", ")
        );
        prop_assert!(agrees(&text), "declined: {}", text);
    }
}

proptest! {
    /// Eight bytes at a time, the same place as one byte at a time: wherever the special byte
    /// falls in a word, whatever precedes it (UTF-8 included), and when there is none.
    #[test]
    fn special_bytes_are_found_as_a_byte_loop_finds_them(
        text in proptest::collection::vec(
            prop_oneof![
                4 => 0x20u8..0x7f,
                1 => 0x80u8..=0xff,
                1 => Just(b'"'),
                1 => Just(b'\\'),
                1 => 0u8..0x20,
            ],
            0..40,
        ),
        from in 0usize..40,
    ) {
        let from = from.min(text.len());
        let expected = (from..text.len())
            .find(|&i| matches!(text[i], b'"' | b'\\' | 0..0x20))
            .unwrap_or(text.len());
        prop_assert_eq!(special_byte(&text, from), expected);
    }
}

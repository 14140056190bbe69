use super::*;
use crate::api::{Overrides, Planned, plan_document};
use crate::synthetic::generate;

fn planned(text: &str) -> Planned {
    plan_document(text, &Overrides::default()).expect("plans")
}

fn data(version: &str, name: &str) -> String {
    let path = format!(
        "{}/data/executorch-{version}/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).expect("a data/ document")
}

/// Every LLM export in data/, both versions, and a generated graph.
fn graphs() -> Vec<(String, Planned)> {
    let mut all = Vec::new();
    for version in ["1.4.0", "1.5.1"] {
        for model in ["lfm2_5_350m", "llama3_2_1b", "qwen3_5_0_8b"] {
            for take_over in ["on", "off"] {
                let name = format!("{model}_takeover_{take_over}_ios18");
                all.push((format!("{version}/{name}"), planned(&data(version, &name))));
            }
        }
    }
    let generated = generate(3_000, 7).expect("generates");
    all.push(("generated 3000".into(), planned(&generated)));
    all
}

fn views<'m>(map: &'m Map<'_>) -> [&'m View; 2] {
    [&map.plan, &map.stock]
}

#[test]
fn boxes_hold_every_op_and_every_tagged_node_once() {
    for (name, p) in graphs() {
        let map = p.map();
        let graph = map.graph;
        for (view, tagging) in views(&map)
            .into_iter()
            .zip([&p.plan.draft.tagging, &p.plan.stock.tagging])
        {
            let mut seen = vec![false; graph.len()];
            let mut last_first_op = 0;
            for (b, mapbox) in view.boxes.iter().enumerate() {
                for &n in &mapbox.nodes {
                    assert!(!seen[n.index()], "{name}: {} in two boxes", graph.name(n));
                    seen[n.index()] = true;
                    assert_eq!(view.box_of[n.index()], Some(b as u32), "{name}");
                    match &mapbox.kind {
                        BoxKind::Delegate(tag) => assert_eq!(tagging.tag(n), Some(tag.as_str())),
                        BoxKind::Cpu => {
                            assert_eq!(tagging.tag(n), None);
                            assert_eq!(graph.op(n), OpKind::CallFunction);
                        }
                    }
                }
                // Boxes follow the topological order of their first op.
                if let Some(&op) =
                    (mapbox.nodes.iter()).find(|&&n| graph.op(n) == OpKind::CallFunction)
                {
                    let at = graph.order.iter().position(|&o| o == op).unwrap();
                    assert!(at >= last_first_op, "{name}: box {b} out of order");
                    last_first_op = at;
                }
            }
            for id in graph.ids() {
                let boxed = tagging.partition(id).is_some() || graph.op(id) == OpKind::CallFunction;
                assert_eq!(seen[id.index()], boxed, "{name}: {}", graph.name(id));
            }
            let delegates = (view.boxes.iter()).filter(|b| matches!(b.kind, BoxKind::Delegate(_)));
            assert_eq!(delegates.count(), tagging.partition_count(), "{name}");
            assert_eq!(view.partitions, tagging.partition_count(), "{name}");
        }
    }
}

#[test]
fn an_edge_counts_each_value_once_per_box_reading_it() {
    for (name, p) in graphs() {
        let map = p.map();
        let graph = map.graph;
        for view in views(&map) {
            let mut expected: std::collections::BTreeMap<(u32, u32), (usize, u64)> =
                Default::default();
            let mut counted = std::collections::BTreeSet::new();
            for id in graph.ids() {
                let Some(to) = view.box_of[id.index()] else {
                    continue;
                };
                for &input in &graph.nodes[id.index()].inputs {
                    if let Some(from) = view.box_of[input.index()]
                        && from != to
                        && counted.insert((to, input))
                    {
                        let e = expected.entry((from, to)).or_default();
                        e.0 += 1;
                        e.1 += graph.nodes[input.index()].meta.bytes().unwrap_or(0);
                    }
                }
            }
            let got: std::collections::BTreeMap<(u32, u32), (usize, u64)> = (view.edges.iter())
                .map(|e| ((e.from, e.to), (e.values, e.bytes)))
                .collect();
            assert_eq!(got, expected, "{name}");
        }
    }
}

#[test]
fn repeated_layers_fold_and_an_llm_overview_stays_small() {
    for (name, p) in graphs() {
        let map = p.map();
        for view in views(&map) {
            let mut end = 0;
            for run in &view.runs {
                assert!(
                    run.start >= end && run.repeats >= 2 && run.period >= 1,
                    "{name}"
                );
                end = run.start + run.period * run.repeats;
                assert!(end <= view.boxes.len(), "{name}");
                for i in run.start + run.period..end {
                    let first = run.start + (i - run.start) % run.period;
                    assert_eq!(
                        view.boxes[i].signature, view.boxes[first].signature,
                        "{name}"
                    );
                }
            }
            let hidden: usize = (view.runs.iter()).map(|r| r.period * (r.repeats - 1)).sum();
            let shown = view.boxes.len() - hidden;
            if !name.starts_with("generated") {
                assert!(
                    shown <= 200,
                    "{name}: {shown} boxes shown of {}",
                    view.boxes.len()
                );
            }
        }
    }
}

#[test]
fn the_page_keeps_the_dom_contract() {
    for (name, p) in graphs().into_iter().take(4) {
        let map = p.map();
        let page = html(&map, &name);
        assert_eq!(
            page.matches(" data-partition=\"").count(),
            p.plan.draft.tagging.partition_count(),
            "{name}"
        );
        assert_eq!(
            page.matches(" data-buffer=\"").count(),
            p.plan.draft.buffers.len(),
            "{name}"
        );
        for b in &p.plan.draft.buffers {
            let row = format!(
                "data-buffer=\"{}\" data-strategy=\"{}\"",
                b.buffer,
                b.strategy.as_str()
            );
            assert!(page.contains(&row), "{name}: {row}");
        }
        assert_eq!(
            page.matches(" data-rule=\"").count(),
            map.findings.len(),
            "{name}"
        );
        // One script element of data, one of code: nothing in the data ends either early.
        assert_eq!(page.matches("</script>").count(), 2, "{name}");
        // Nothing is fetched: the only address is the SVG namespace.
        let addresses = page.matches("http://").count() + page.matches("https://").count();
        assert_eq!(
            addresses,
            page.matches("http://www.w3.org/2000/svg").count(),
            "{name}"
        );
    }
}

#[test]
fn names_that_look_like_markup_are_escaped() {
    let text =
        data("1.5.1", "seed_slice_ios18").replace("\"aten_mul_tensor\"", "\"</script><b>&\"");
    let p = planned(&text);
    let page = html(&p.map(), "<i>title</i>");
    // Markup in names is text in the elements; inside the data it is JSON, whose `</` is escaped.
    let (elements, data) = page
        .split_once("<script type=\"application/json\"")
        .unwrap();
    assert!(!elements.contains("<b>&") && !elements.contains("<i>title"));
    assert!(elements.contains("&lt;/script&gt;&lt;b&gt;&amp;"));
    assert!(data.contains("<\\/script><b>&"));
    assert_eq!(page.matches("</script>").count(), 2);
    assert!(page.contains("&lt;i&gt;title&lt;/i&gt;"));
}

#[test]
fn model_explorer_overlays_follow_the_format() {
    let schema: serde_json::Value = serde_json::from_str(include_str!(
        "../../../docs/model-explorer-node-data.schema.json"
    ))
    .expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    for (name, p) in graphs() {
        let map = p.map();
        let overlays = model_explorer(&map);
        let names: Vec<&str> = overlays.iter().map(|o| o.name).collect();
        assert_eq!(names, ["partition", "strategy", "violation"]);
        for o in &overlays {
            let problems: Vec<String> = validator
                .iter_errors(&o.data)
                .map(|e| format!("{e} at {}", e.instance_path()))
                .collect();
            assert!(problems.is_empty(), "{name} {}: {problems:?}", o.name);
            for key in o.data["results"].as_object().unwrap().keys() {
                assert!(map.graph.find(key).is_some(), "{name}: {key} is no node");
            }
        }
        // Every node has a partition value; every chain node a strategy.
        let partition = overlays[0].data["results"].as_object().unwrap();
        assert_eq!(partition.len(), map.graph.len(), "{name}");
        for id in map.graph.ids() {
            let value = partition[map.graph.name(id)]["value"].as_str().unwrap();
            let expected = p
                .plan
                .draft
                .tagging
                .tag(id)
                .unwrap_or(match map.graph.op(id) {
                    OpKind::CallFunction => "cpu",
                    OpKind::Output => "output",
                    _ => "input",
                });
            assert_eq!(value, expected, "{name}");
        }
        for value in overlays[2].data["results"].as_object().unwrap().values() {
            let labels: Vec<&str> = value["value"].as_str().unwrap().split(", ").collect();
            let unique: std::collections::HashSet<&&str> = labels.iter().collect();
            assert_eq!(unique.len(), labels.len(), "{name}: {labels:?}");
        }
        let strategy = overlays[1].data["results"].as_object().unwrap();
        for b in &p.plan.draft.buffers {
            let placeholder = map.graph.name(b.placeholder);
            assert_eq!(
                strategy[placeholder]["value"],
                b.strategy.as_str(),
                "{name}"
            );
        }
    }
}

#[test]
fn dot_declares_every_box_it_connects() {
    for (name, p) in graphs() {
        let text = dot(&p.map(), &name);
        let declared: std::collections::HashSet<&str> = text
            .lines()
            .filter(|l| l.contains(" [label=") && !l.contains("->"))
            .map(|l| l.trim().split(' ').next().unwrap())
            .collect();
        for line in text.lines().filter(|l| l.contains("->")) {
            let mut ends = line.trim().split(" -> ");
            let from = ends.next().unwrap();
            let to = ends.next().unwrap().split(' ').next().unwrap();
            assert!(
                declared.contains(from) && declared.contains(to),
                "{name}: {line}"
            );
        }
        assert!(text.starts_with("digraph partition_map {") && text.ends_with("}\n"));
    }
}

#[test]
fn the_svg_draws_each_box_shown_once_with_its_arcs() {
    for (name, p) in graphs() {
        let map = p.map();
        let picture = svg(&map, "<title>");
        assert!(picture.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(picture.ends_with("</svg>\n"));
        assert!(picture.contains("partition map: &lt;title&gt;"));
        // A box is drawn unless a run's first period stands for it.
        let shown = |view: &View| {
            (view.boxes.iter().enumerate())
                .filter(|&(b, x)| {
                    matches!(x.kind, BoxKind::Delegate(_))
                        && view
                            .run_of(b)
                            .is_none_or(|(run, offset)| offset < run.period)
                })
                .count()
        };
        assert_eq!(
            picture.matches("<g data-partition=").count(),
            shown(&map.plan),
            "{name}"
        );
        assert_eq!(
            picture.matches("<g data-stock-partition=").count(),
            shown(&map.stock),
            "{name}"
        );
        assert_eq!(
            picture.matches("<path ").count(),
            picture.matches("</path>").count()
        );
    }
}

#[test]
fn a_delegate_box_weighs_what_its_partition_holds() {
    let text = data("1.5.1", "llama3_2_1b_takeover_on_ios18");
    let overrides: Overrides =
        serde_json::from_str(r#"{"options": {"max_weight_bytes": "1.5MB"}}"#).expect("overrides");
    let p = plan_document(&text, &overrides).expect("plans");
    let map = p.map();
    let weights: Vec<u64> = (map.plan.boxes.iter())
        .filter(|b| matches!(b.kind, BoxKind::Delegate(_)))
        .map(|b| b.weight_bytes)
        .collect();
    let measured: Vec<u64> = (p.plan.draft.measure.partitions.iter())
        .map(|m| m.weight_bytes)
        .collect();
    assert!(weights.len() >= 3);
    assert_eq!(weights, measured);
    let page = html(&map, "weights");
    assert!(page.contains("MiB of weights"));
}

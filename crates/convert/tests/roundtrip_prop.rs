//! Property tests: random frontmatter (keys and values with `@`, backticks, ` #`, colons, quotes,
//! unicode, line breaks, YAML-looking words) survives emit → parse, judged by the converter's own
//! parser and by an independent one; random agents convert to every target into files that parse.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{judge_yaml, ours_as_json, raw_frontmatter};
use proptest::prelude::*;
use serde_yaml_ng::{Mapping, Value};
use toolgate_convert::frontmatter::{parse_document, render_document};
use toolgate_convert::{Target, parse_agent};

/// Pieces that are hard for YAML emitters, mixed with ordinary text.
fn tricky_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("@".to_string()),
        Just("`".to_string()),
        Just(" #".to_string()),
        Just("#".to_string()),
        Just(": ".to_string()),
        Just(":".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("\\".to_string()),
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("\t".to_string()),
        Just(" ".to_string()),
        Just("- ".to_string()),
        Just("? ".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just(",".to_string()),
        Just("*".to_string()),
        Just("&".to_string()),
        Just("!".to_string()),
        Just("%".to_string()),
        Just("|".to_string()),
        Just(">".to_string()),
        Just("---".to_string()),
        Just("...".to_string()),
        Just("yes".to_string()),
        Just("No".to_string()),
        Just("on".to_string()),
        Just("null".to_string()),
        Just("~".to_string()),
        Just("true".to_string()),
        Just("0x1F".to_string()),
        Just("1e3".to_string()),
        Just("-.5".to_string()),
        Just("2026-01-01".to_string()),
        Just("12:30".to_string()),
        Just("é".to_string()),
        Just("—".to_string()),
        Just("日本".to_string()),
        Just("🚀".to_string()),
        Just("\u{85}".to_string()),
        Just("\u{a0}".to_string()),
        Just("\u{2028}".to_string()),
        Just("\u{feff}".to_string()),
        "[a-zA-Z0-9 ]{1,8}",
        any::<char>().prop_map(|c| c.to_string()),
    ]
}

fn tricky_string() -> impl Strategy<Value = String> {
    prop::collection::vec(tricky_piece(), 0..8).prop_map(|parts| parts.concat())
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => tricky_string().prop_map(Value::from),
        1 => any::<bool>().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => Just(Value::Null),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => scalar(),
        1 => prop::collection::vec(tricky_string().prop_map(Value::from), 0..5)
            .prop_map(Value::Sequence),
        1 => prop::collection::vec((tricky_string(), scalar()), 0..4).prop_map(|kv| {
            let mut m = Mapping::new();
            for (k, v) in kv {
                m.insert(Value::from(k), v);
            }
            Value::Mapping(m)
        }),
    ]
}

fn frontmatter() -> impl Strategy<Value = Mapping> {
    prop::collection::vec((tricky_string(), value()), 1..6).prop_map(|kv| {
        let mut m = Mapping::new();
        for (k, v) in kv {
            m.insert(Value::from(k), v);
        }
        m
    })
}

fn body() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("\nBody\n".to_string()),
        Just("\n---\nnot: frontmatter\n---\n".to_string()),
        tricky_string(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn emit_then_parse_is_identity(fm in frontmatter(), body in body()) {
        let doc = render_document(&fm, &body).unwrap();
        let back = parse_document(Path::new("prop.md"), &doc)
            .unwrap_or_else(|e| panic!("{e}\n--- emitted ---\n{doc}"));
        prop_assert_eq!(back.frontmatter.as_ref(), Some(&fm), "emitted:\n{}", doc);
        prop_assert_eq!(&back.body, &body);
        // An independent YAML implementation reads the same values.
        let (yaml, rest) = raw_frontmatter(&doc);
        prop_assert_eq!(judge_yaml(yaml), ours_as_json(&fm), "emitted:\n{}", doc);
        prop_assert_eq!(rest, body.as_str());
    }

    #[test]
    fn random_agents_convert_to_files_that_parse(
        name in tricky_string(),
        description in tricky_string(),
        tools in prop::collection::vec(
            prop_oneof![
                Just("Read".to_string()), Just("Grep".to_string()), Just("Bash(git:*)".to_string()),
                Just("mcp__srv__tool".to_string()), Just("WebFetch".to_string()),
                tricky_string(),
            ],
            0..6,
        ),
        extra in tricky_string(),
    ) {
        let mut fm = Mapping::new();
        fm.insert("name".into(), name.into());
        fm.insert("description".into(), description.clone().into());
        fm.insert("tools".into(), Value::Sequence(tools.into_iter().map(Value::from).collect()));
        fm.insert("x-extra".into(), extra.into());
        let source = render_document(&fm, "\nBody\n").unwrap();
        let agent = parse_agent(Path::new("agents/p.md"), &source).unwrap();
        for target in Target::ALL {
            let out = agent.convert(target).unwrap();
            prop_assert!(
                !out.file_name.contains('/') && !out.file_name.starts_with('.'),
                "{}", out.file_name
            );
            if target == Target::Codex {
                let t: toml::Table = toml::from_str(&out.content).unwrap();
                if !description.trim().is_empty() {
                    prop_assert_eq!(t["description"].as_str(), Some(description.as_str()));
                }
                continue;
            }
            let (yaml, rest) = raw_frontmatter(&out.content);
            let judged = judge_yaml(yaml);
            if !description.trim().is_empty() {
                prop_assert_eq!(judged["description"].as_str(), Some(description.as_str()));
            }
            prop_assert_eq!(rest, "\nBody\n");
        }
    }
}

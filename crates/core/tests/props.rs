//! Property tests for the core's invariants.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolgate_core::validate::ParamValidator;
use toolgate_core::{Preview, PreviewInput};

#[derive(Debug, Clone)]
enum Kind {
    Str,
    Num,
    Int,
    Bool,
    NumChoices(Vec<f64>),
    StrChoices(Vec<String>),
}

#[derive(Debug, Clone)]
struct Prop {
    name: String,
    kind: Kind,
    required: bool,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Str),
        Just(Kind::Num),
        Just(Kind::Int),
        Just(Kind::Bool),
        proptest::collection::vec(
            prop_oneof![Just(0.25), Just(0.5), Just(1.5), Just(2.0), Just(3.0)],
            1..4
        )
        .prop_map(Kind::NumChoices),
        proptest::collection::vec("[a-c]{1,2}", 1..4).prop_map(Kind::StrChoices),
    ]
}

fn props() -> impl Strategy<Value = Vec<Prop>> {
    proptest::collection::vec((kind(), any::<bool>()), 0..5).prop_map(|ks| {
        ks.into_iter()
            .enumerate()
            .map(|(i, (kind, required))| Prop {
                name: format!("p{i}"),
                kind,
                required,
            })
            .collect()
    })
}

fn schema_of(props: &[Prop]) -> Value {
    let mut properties = Map::new();
    for p in props {
        let s = match &p.kind {
            Kind::Str => json!({"type": "string"}),
            Kind::Num => json!({"type": "number"}),
            Kind::Int => json!({"type": "integer"}),
            Kind::Bool => json!({"type": "boolean"}),
            Kind::NumChoices(c) => json!({"type": "number", "enum": c}),
            Kind::StrChoices(c) => json!({"type": "string", "enum": c}),
        };
        properties.insert(p.name.clone(), s);
    }
    let required: Vec<&str> = props
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name.as_str())
        .collect();
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..4).prop_map(|n| json!(n)),
        prop_oneof![Just(0.25), Just(0.5), Just(1.5), Just(2.5)].prop_map(|f| json!(f)),
        "[a-c]{1,2}".prop_map(Value::String),
        Just(json!([1, 2])),
    ]
}

/// The oracle: how many problems an input has, counted independently of the validator.
fn expected_problems(props: &[Prop], input: &Map<String, Value>) -> usize {
    let mut n = 0;
    for k in input.keys() {
        if !input[k].is_null() && !props.iter().any(|p| &p.name == k) {
            n += 1;
        }
    }
    for p in props {
        let v = input.get(&p.name).filter(|v| !v.is_null());
        let Some(v) = v else {
            if p.required {
                n += 1;
            }
            continue;
        };
        let type_ok = match &p.kind {
            Kind::Str | Kind::StrChoices(_) => v.is_string(),
            Kind::Num | Kind::NumChoices(_) => v.is_number(),
            Kind::Int => v.as_f64().is_some_and(|f| f.fract() == 0.0),
            Kind::Bool => v.is_boolean(),
        };
        let choice_ok = match &p.kind {
            Kind::NumChoices(c) => v.as_f64().is_some_and(|f| c.contains(&f)),
            Kind::StrChoices(c) => v.as_str().is_some_and(|s| c.iter().any(|x| x == s)),
            _ => true,
        };
        // one problem per property: a wrong type and a wrong choice are reported separately
        // by JSON Schema (type and enum keywords), so count both.
        n += usize::from(!type_ok) + usize::from(!choice_ok);
    }
    n
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Validation accepts exactly the schema-valid inputs and lists every violation.
    #[test]
    fn validation_matches_the_oracle(
        props in props(),
        input in proptest::collection::btree_map("p[0-5]", value(), 0..6),
    ) {
        let schema = schema_of(&props);
        let v = ParamValidator::compile("t", &schema).unwrap();
        let input: Map<String, Value> = input.into_iter().collect();
        let expected = expected_problems(&props, &input);
        let reference = jsonschema::validator_for(&schema).unwrap();
        let cleaned: Map<String, Value> = input.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), v.clone())).collect();
        match v.validate(&input) {
            Ok(out) => {
                prop_assert_eq!(expected, 0);
                prop_assert!(reference.is_valid(&Value::Object(out)));
            }
            Err(problems) => {
                prop_assert!(!reference.is_valid(&Value::Object(cleaned)));
                prop_assert_eq!(problems.len(), expected, "{:?}", problems);
                for p in &problems {
                    prop_assert!(p.contains('"'), "every problem names its parameter: {}", p);
                }
            }
        }
    }

    /// A preview never shows raw JSON, whatever the parameters, names or titles contain.
    #[test]
    fn previews_never_contain_raw_json(
        params in proptest::collection::btree_map(".{0,6}", arb_json(), 0..5),
        title in ".{0,12}",
        target in ".{0,12}",
    ) {
        let params: Map<String, Value> = params.into_iter().collect();
        let p = Preview::build(&PreviewInput {
            tool_title: &title,
            plot_title: Some(&target),
            target: &target,
            params: &params,
            consequence: None,
            notes: std::slice::from_ref(&title),
            effect: std::slice::from_ref(&target),
        });
        prop_assert!(!p.body.contains("{\""), "{}", p.body);
        prop_assert!(!p.title.contains("{\""), "{}", p.title);
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        ".{0,8}".prop_map(Value::String),
        Just(json!("{\"a\":1}")),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(".{0,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

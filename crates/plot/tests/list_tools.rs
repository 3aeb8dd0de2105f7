//! `debrief_listTools` lists what applies: the tools whose selection requirements the named
//! features, the selection or the plot's kinds satisfy (so a catalogue of 70 tools does not
//! flood a model's context), every tool on request, or just the tools asked for.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::{Value, json};
use toolgate_plot::debrief::{LIST_TOOLS, SEARCH};

use common::{PLOT, Scripted, harness, parse};

fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn lists_the_tools_that_apply_to_the_plot_the_features_or_the_selection() {
    let h = harness().await;
    let never = Scripted::new(vec![]);
    let list = |input: Value| {
        let d = &h.debrief;
        let never = &never;
        async move { parse(&d.call(LIST_TOOLS, &input, never).await.unwrap().text) }
    };

    // No plot open: nothing to judge applicability by, so everything is listed.
    let everything = ids(&list(json!({})).await);
    assert!(
        everything.contains(&"enlarge-shape".to_owned()),
        "{everything:?}"
    );

    h.debrief
        .call(SEARCH, &json!({"text": "Alpha", "open": true}), &never)
        .await
        .unwrap();
    // The plot holds a TRACK and a POINT: track tools apply, shape tools do not.
    let plot_tools = ids(&list(json!({})).await);
    assert!(
        plot_tools.contains(&"set-track-color".to_owned()),
        "{plot_tools:?}"
    );
    assert!(
        plot_tools.contains(&"range-bearing".to_owned()),
        "{plot_tools:?}"
    );
    assert!(
        !plot_tools.contains(&"enlarge-shape".to_owned()),
        "{plot_tools:?}"
    );
    assert!(plot_tools.len() < everything.len());

    // all=true lists every tool.
    assert_eq!(ids(&list(json!({"all": true})).await), everything);

    // Named features narrow further: the POINT alone takes no track-only tool.
    let for_point = ids(&list(json!({"featureNames": ["Datum A"]})).await);
    assert!(
        !for_point.contains(&"set-track-color".to_owned()),
        "{for_point:?}"
    );
    assert!(for_point.len() < plot_tools.len(), "{for_point:?}");

    // The selection is the scope when nothing is named.
    h.debrief
        .session()
        .select(PLOT, vec!["track-1".into()])
        .unwrap();
    let for_selection = ids(&list(json!({})).await);
    assert!(for_selection.contains(&"set-track-color".to_owned()));
    assert!(
        !for_selection.contains(&"point-in-zone-classifier".to_owned()),
        "{for_selection:?}"
    );

    // A name that matches nothing falls back to the whole plot rather than hiding everything.
    assert_eq!(
        ids(&list(json!({"featureNames": ["no such feature"]})).await),
        plot_tools
    );

    // toolIds lists exactly those.
    assert_eq!(
        ids(&list(json!({"toolIds": ["trim-track", "range-calc"]})).await),
        ["range-calc", "trim-track"]
    );
}

#[tokio::test]
async fn tool_ids_are_listed_in_full_and_unknown_ids_refused() {
    let h = harness().await;
    let never = Scripted::new(vec![]);
    let reply = |input: Value| {
        let d = &h.debrief;
        let never = &never;
        async move { d.call(LIST_TOOLS, &input, never).await.unwrap().text }
    };
    // Asking for the full detail of one tool always gives it in full.
    let one = parse(&reply(json!({"toolIds": ["set-track-color"]})).await);
    assert_eq!(one.as_array().unwrap().len(), 1);
    assert!(one[0]["parameters"][0]["description"].is_string(), "{one}");
    // The default reply fits the budget: a 70-tool catalogue is shortened, every tool kept.
    let all = reply(json!({"all": true})).await;
    let counter = toolgate_core::TokenCounter::default();
    assert!(
        counter.count(&all) <= toolgate_plot::debrief::LIST_TOKEN_BUDGET,
        "{}",
        counter.count(&all)
    );
    // An id that does not exist is refused with what to do instead.
    let text = reply(json!({"toolIds": ["make-it-pretty"]})).await;
    assert!(text.contains("No tool has the id make-it-pretty"), "{text}");
}

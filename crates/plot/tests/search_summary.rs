//! Search and summary against the demo store: criteria, caps, "N more", open rules, budgets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use toolgate_core::TokenCounter;
use toolgate_plot::demo;
use toolgate_plot::search::{SearchQuery, search};
use toolgate_plot::session::Session;
use toolgate_plot::summary::{SummaryRequest, summarize};

fn store() -> (tempfile::TempDir, toolgate_plot::store::StacStore) {
    let d = tempfile::tempdir().unwrap();
    let s = demo::ensure_demo_store(d.path()).unwrap();
    (d, s)
}

#[test]
fn criteria_are_and_combined_and_description_is_searched() {
    let (_d, s) = store();
    let stores = std::slice::from_ref(&s);
    let q = |q: SearchQuery| search(stores, &q).unwrap();
    // description text (the spike searched only title + tags)
    assert_eq!(
        q(SearchQuery {
            text: Some("western approaches".into()),
            ..Default::default()
        })
        .total,
        1
    );
    // tags
    assert_eq!(
        q(SearchQuery {
            text: Some("prosecution".into()),
            ..Default::default()
        })
        .total,
        1
    );
    // platform by role, AND time window overlapping day 2 only
    let r = q(SearchQuery {
        platforms: vec!["submarine".into()],
        start_time: Some("2026-03-02T01:00:00Z".into()),
        ..Default::default()
    });
    assert_eq!(r.total, 1, "{r:?}");
    assert_eq!(r.matches[0].plot_id, "stac://demo/alpha-day2/item.json");
    assert_eq!(
        r.criteria_applied,
        vec![
            "time ∈ [2026-03-02T01:00:00Z, +∞]".to_owned(),
            "platform ∈ {submarine}".to_owned()
        ]
    );
    // bare dates work
    assert_eq!(
        q(SearchQuery {
            start_time: Some("2026-03-01".into()),
            end_time: Some("2026-03-01".into()),
            ..Default::default()
        })
        .total,
        1
    );
    // bbox far away
    let r = q(SearchQuery {
        bbox: Some([100.0, 10.0, 101.0, 11.0]),
        ..Default::default()
    });
    assert_eq!(r.total, 0);
    assert_eq!(r.message.as_deref(), Some("No plots matched."));
    // cap with an explicit "N more"
    let r = q(SearchQuery {
        limit: Some(1),
        ..Default::default()
    });
    assert_eq!((r.matches.len(), r.total), (1, 3));
    assert!(r.more.as_deref().unwrap().starts_with("2 more not shown"));
    // a bad date is an error, not a silent empty result
    let e = search(
        stores,
        &SearchQuery {
            start_time: Some("March".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        matches!(&e, toolgate_plot::search::QueryError::BadTime { field, value }
            if field == "startTime" && value == "March"),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("\"startTime\" must be an ISO-8601 date"),
        "{e}"
    );
}

#[test]
fn summary_caps_at_200_and_sheds_fields_under_a_budget() {
    let (_d, s) = store();
    let mut session = Session::new(vec![s]);
    let id = "stac://demo/bulk-tracks/item.json";
    session.open(id).unwrap();
    let counter = TokenCounter::default();
    let plot = session.plot(id).unwrap();
    let (view, text) = summarize(&session, plot, &SummaryRequest::default(), &counter);
    assert_eq!((view.total, view.listed, view.truncated), (260, 200, true));
    assert_eq!(view.tokens, counter.count(&text));
    let (small, text) = summarize(
        &session,
        plot,
        &SummaryRequest {
            token_budget: Some(800),
            ..Default::default()
        },
        &counter,
    );
    assert!(small.tokens <= 800, "{}", small.tokens);
    assert_eq!(small.tokens, counter.count(&text));
    assert_eq!(small.shed, vec!["points", "where", "span", "platform"]);
    assert!(small.listed < 200 && small.truncated);
    // A budget a little under the full reply: fields are shed before any row is cut.
    let budget = view.tokens * 9 / 10;
    let (mid, _) = summarize(
        &session,
        plot,
        &SummaryRequest {
            token_budget: Some(budget),
            ..Default::default()
        },
        &counter,
    );
    assert!(
        mid.tokens <= budget && !mid.shed.is_empty() && mid.listed == 200,
        "{:?} {} {}",
        mid.shed,
        mid.tokens,
        mid.listed
    );
}

#[test]
fn nested_selection_paths_resolve_to_their_feature() {
    let (_d, s) = store();
    let mut session = Session::new(vec![s]);
    let id = "stac://demo/alpha-day1/item.json";
    session.open(id).unwrap();
    session
        .select(
            id,
            vec![
                "track-contact/positions/4".into(),
                "track-contact".into(),
                "point-rv".into(),
                "nope/1".into(),
            ],
        )
        .unwrap();
    let plot = session.plot(id).unwrap();
    assert_eq!(plot.selected_ids(), vec!["track-contact", "point-rv"]);
    let counter = TokenCounter::default();
    let (view, _) = summarize(
        &session,
        plot,
        &SummaryRequest {
            selection_only: true,
            ..Default::default()
        },
        &counter,
    );
    assert_eq!(view.listed, 2);
    let t = toolgate_plot::run::resolve(
        plot,
        &toolgate_plot::run::TargetRequest::default(),
        toolgate_plot::run::Intent::Mutate,
    )
    .unwrap();
    assert_eq!(t.description, "Contact, RV Point");
}

#[test]
fn with_several_plots_open_the_summary_names_its_plot_and_lists_the_others() {
    let (_d, s) = store();
    let mut session = Session::new(vec![s]);
    let day1 = "stac://demo/alpha-day1/item.json";
    let day2 = "stac://demo/alpha-day2/item.json";
    session.open(day1).unwrap();
    let counter = TokenCounter::default();
    let (alone, text) = summarize(
        &session,
        session.plot(day1).unwrap(),
        &SummaryRequest::default(),
        &counter,
    );
    assert!(
        alone.plot_id.is_none() && alone.open_plots.is_empty(),
        "{text}"
    );
    session.open(day2).unwrap();
    // The summary of the plot that is not active still says which plot it describes.
    let (view, text) = summarize(
        &session,
        session.plot(day1).unwrap(),
        &SummaryRequest::default(),
        &counter,
    );
    assert_eq!(view.plot_id.as_deref(), Some(day1), "{text}");
    let listed: Vec<(&str, bool)> = view
        .open_plots
        .iter()
        .map(|p| (p.plot_id.as_str(), p.active))
        .collect();
    assert_eq!(listed, [(day1, false), (day2, true)]);
    let reply: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["plotId"], day1);
    assert_eq!(reply["openPlots"].as_array().unwrap().len(), 2);
    assert_eq!(view.tokens, counter.count(&text));
}

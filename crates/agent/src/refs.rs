//! Which features a request is about, resolved in code from the open plot before a small
//! model chooses: names and platform ids ("Nelson", "SSK-RED"), platform roles, types, classes
//! and nationality from the plot's STAC platforms ("the frigate", "the sub", "type 23", "the
//! British warship"), and a pronoun or "selected" with a selection. A phrase that fits several
//! features is *ambiguous* and is asked about, never resolved by guessing; a change with nothing
//! named or selected asks which track.

use serde_json::Value;

use crate::ask::Ask;

/// One feature as the resolver sees it.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub id: String,
    /// The display name (what `featureNames` takes).
    pub name: String,
    /// Lower-cased words that refer to it: name, platform id and name, role, type, class
    /// parts, domain, nationality words.
    pub words: Vec<String>,
    /// The feature is a TRACK.
    pub track: bool,
}

/// What a request refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refs {
    /// These features, by display name (in the order the request names them).
    Named(Vec<String>),
    /// The selection ("it", "this", "the selected track", "them").
    Selection,
    /// A phrase that fits several features: the phrase and the candidates' names.
    Ambiguous {
        phrase: String,
        candidates: Vec<String>,
    },
    /// Nothing the request says names a feature.
    Nothing,
}

/// Words that name no feature although a name contains them.
const GENERIC: &[&str] = &[
    "the", "a", "an", "of", "track", "tracks", "point", "area", "exercise", "rv", "ship", "ships",
    "vessel", "plot", "day", "and", "to", "from", "in", "on",
];

/// What analysts call platforms, mapped to the words the STAC platform records use.
const SYNONYMS: &[(&str, &str)] = &[
    ("sub", "submarine"),
    ("subs", "submarine"),
    ("submarines", "submarine"),
    ("frigates", "frigate"),
    ("destroyers", "destroyer"),
    ("warships", "warship"),
    ("british", "gb"),
    ("uk", "gb"),
    ("royal", "gb"),
    ("surface", "surface"),
    // "RN" is the Royal Navy.
    ("rn", "gb"),
    // Own forces: the plot's OWNSHIP tracks ("our ship", "own ship", "ownship").
    ("own", "ownship"),
    ("our", "ownship"),
    ("friendly", "ownship"),
    ("friendlies", "ownship"),
    // The other side: the plot's CONTACT tracks ("the opposition's speed").
    ("opposition", "contact"),
    ("oppo", "contact"),
    ("enemy", "contact"),
    ("hostile", "contact"),
    ("adversary", "contact"),
    ("target", "contact"),
];

/// Pronouns and words that point at the selection.
const SELECTION_WORDS: &[&str] = &[
    "it",
    "this",
    "that",
    "them",
    "these",
    "those",
    "selected",
    "selection",
    "its",
];

/// The candidates of a plot: its named features, with the words of their platform records
/// (`debrief:platforms` of the STAC item, matched by platform id).
pub fn candidates(features: &[Value], platforms: &[Value]) -> Vec<Candidate> {
    let mut out = Vec::new();
    for f in features {
        let props = &f["properties"];
        let id = f["id"].as_str().unwrap_or_default().to_owned();
        let name = toolgate_plot::model::display_name(f);
        if id.is_empty() || name.is_empty() {
            continue;
        }
        let kind = props["kind"].as_str().unwrap_or_default();
        let mut words: Vec<String> = split(&name);
        let pid = props["platform_id"].as_str().unwrap_or_default();
        if !pid.is_empty() {
            // Whole ("ssk-red"), never its parts: "red" in "make it red" is a colour.
            words.push(pid.to_lowercase());
        }
        if let Some(p) = platforms.iter().find(|p| p["id"].as_str() == Some(pid)) {
            for key in ["name", "vessel_role", "vessel_type", "domain"] {
                if let Some(v) = p[key].as_str() {
                    words.extend(split(v));
                    // "type23" is also said "type 23".
                    words.push(v.to_lowercase().replace([' ', '-'], ""));
                }
            }
            if let Some(c) = p["vessel_class"].as_str() {
                words.extend(c.to_lowercase().split('/').map(str::to_owned));
            }
            if let Some(n) = p["nationality"].as_str() {
                words.push(n.to_lowercase());
            }
        }
        if let Some(t) = props["track_type"].as_str() {
            words.push(t.to_lowercase());
        }
        words.retain(|w| !w.is_empty() && !GENERIC.contains(&w.as_str()));
        words.sort();
        words.dedup();
        out.push(Candidate {
            id,
            name,
            words,
            track: kind == "TRACK",
        });
    }
    out
}

fn split(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The request's words, lower-cased, possessives dropped, "type 23" joined: each as said and
/// as matched (synonyms mapped: "sub" → "submarine", "British" → "gb").
fn request_words(utterance: &str) -> Vec<(String, String)> {
    let lower = utterance.to_lowercase().replace("'s", "").replace('’', "'");
    let raw: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let w = raw[i];
        // "type 23" / "type-23" → "type23".
        if w == "type"
            && raw
                .get(i + 1)
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
        {
            let joined = format!("type{}", raw[i + 1]);
            out.push((format!("type {}", raw[i + 1]), joined));
            i += 2;
            continue;
        }
        let mapped = SYNONYMS
            .iter()
            .find(|(s, _)| *s == w)
            .map_or(w, |(_, to)| *to);
        out.push((w.to_owned(), mapped.to_owned()));
        // A hyphenated platform id is one word ("ssk-red"); its parts count too.
        if w.contains('-') {
            out.extend(
                w.split('-')
                    .filter(|p| !p.is_empty())
                    .map(|p| (p.to_owned(), p.to_owned())),
            );
        }
        i += 1;
    }
    out
}

/// The request points at the selection ("it", "this", "the selected track").
pub fn points_at_selection(utterance: &str) -> bool {
    request_words(utterance)
        .iter()
        .any(|(w, _)| SELECTION_WORDS.contains(&w.as_str()))
}

/// What `utterance` refers to among `candidates`, given whether something is selected.
/// `tracks_only`: the tool acts on tracks, so only tracks are candidates.
pub fn resolve(
    utterance: &str,
    candidates: &[Candidate],
    selected: bool,
    tracks_only: bool,
) -> Refs {
    let words = request_words(utterance);
    let pool: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| !tracks_only || c.track)
        .collect();
    let mut named: Vec<String> = Vec::new();
    let mut ambiguous: Option<(String, Vec<String>)> = None;
    // Every content word that refers to some feature: one feature → named; several → that
    // word is ambiguous unless another word of the request singles one of them out.
    for (said, w) in words.iter().filter(|(_, w)| !GENERIC.contains(&w.as_str())) {
        let mut hits: Vec<&&Candidate> = pool.iter().filter(|c| c.words.contains(w)).collect();
        if hits.is_empty()
            && let Some(stem) = w.strip_suffix('s').filter(|s| s.len() >= 3)
        {
            // A possessive without its apostrophe or a plural: "nelsons track", "frigates".
            hits = pool
                .iter()
                .filter(|c| c.words.iter().any(|x| x == stem))
                .collect();
        }
        match hits.as_slice() {
            [] => {}
            [one] => {
                if !named.contains(&one.name) {
                    named.push(one.name.clone());
                }
            }
            many => {
                let names: Vec<String> = many.iter().map(|c| c.name.clone()).collect();
                if ambiguous.is_none() {
                    ambiguous = Some((said.clone(), names));
                }
            }
        }
    }
    if let Some((phrase, cands)) = ambiguous {
        // "HMS Nelson": "hms" fits two, "nelson" one of them: that one is meant.
        let singled = cands.iter().any(|c| named.contains(c));
        if !singled {
            return Refs::Ambiguous {
                phrase,
                candidates: cands,
            };
        }
    }
    if !named.is_empty() {
        return Refs::Named(named);
    }
    if selected
        && words
            .iter()
            .any(|(w, _)| SELECTION_WORDS.contains(&w.as_str()))
    {
        return Refs::Selection;
    }
    Refs::Nothing
}

/// [`resolve`] with the selected features' ids: a request that names features and also points
/// at the selection ("range and bearing from this ship to the contact") means both, the
/// selection first.
pub fn resolve_with_selection(
    utterance: &str,
    candidates: &[Candidate],
    selected: &[String],
    tracks_only: bool,
) -> Refs {
    match resolve(utterance, candidates, !selected.is_empty(), tracks_only) {
        Refs::Named(mut names) if points_at_selection(utterance) => {
            let chosen: Vec<String> = candidates
                .iter()
                .filter(|c| selected.contains(&c.id) && !names.contains(&c.name))
                .map(|c| c.name.clone())
                .collect();
            names.splice(0..0, chosen);
            Refs::Named(names)
        }
        other => other,
    }
}

/// The question for a request whose target cannot be settled: which of the candidates.
pub fn question(refs: &Refs, candidates: &[Candidate], tracks_only: bool) -> Option<Ask> {
    match refs {
        Refs::Ambiguous { phrase, candidates } => Some(Ask::Ambiguous {
            phrase: phrase.clone(),
            candidates: candidates.clone(),
        }),
        Refs::Nothing => Some(Ask::WhichFeature {
            what: if tracks_only { "track" } else { "feature" }.to_owned(),
            candidates: candidates
                .iter()
                .filter(|c| !tracks_only || c.track)
                .map(|c| c.name.clone())
                .collect(),
        }),
        Refs::Named(_) | Refs::Selection => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plot() -> Vec<Candidate> {
        let features = toolgate_plot::demo::exercise_day(1);
        let platforms = json!([
            {"id": "NELSON", "name": "HMS Nelson", "nationality": "GB", "vessel_class": "surface/warship/frigate/type23", "vessel_type": "type23", "vessel_role": "frigate", "domain": "surface"},
            {"id": "COLLINGWOOD", "name": "HMS Collingwood", "nationality": "GB", "vessel_class": "surface/warship/destroyer/type45", "vessel_type": "type45", "vessel_role": "destroyer", "domain": "surface"},
            {"id": "SSK-RED", "name": "Contact", "vessel_class": "subsurface/submarine/ssk", "vessel_type": "ssk", "vessel_role": "submarine", "domain": "subsurface"}
        ]);
        candidates(&features, platforms.as_array().unwrap())
    }

    fn named(v: &[&str]) -> Refs {
        Refs::Named(v.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn names_platforms_roles_and_types_resolve_to_one_track() {
        let c = plot();
        let r = |u: &str| resolve(u, &c, false, true);
        assert_eq!(r("paint Nelson's track green"), named(&["HMS Nelson"]));
        assert_eq!(
            r("change the colour of NELSON to green"),
            named(&["HMS Nelson"])
        );
        assert_eq!(
            r("I'd like the frigate drawn in green"),
            named(&["HMS Nelson"])
        );
        assert_eq!(r("turn the type 23's track green"), named(&["HMS Nelson"]));
        assert_eq!(r("how fast was the sub going"), named(&["Contact"]));
        assert_eq!(r("SSK-RED mean speed?"), named(&["Contact"]));
        assert_eq!(r("make HMS Nelson green"), named(&["HMS Nelson"]));
        assert_eq!(
            r("range from the frigate to the submarine"),
            named(&["HMS Nelson", "Contact"])
        );
    }

    #[test]
    fn a_request_naming_one_feature_and_pointing_at_the_selection_means_both() {
        let c = plot();
        let sel = vec!["track-nelson".to_owned()];
        assert_eq!(
            resolve_with_selection(
                "range and bearing from this ship to the contact",
                &c,
                &sel,
                true
            ),
            named(&["HMS Nelson", "Contact"])
        );
        // without a word for the selection, only what is named
        assert_eq!(
            resolve_with_selection("average speed of the contact", &c, &sel, true),
            named(&["Contact"])
        );
        // nothing selected: the named feature alone
        assert_eq!(
            resolve_with_selection("from this ship to the contact", &c, &[], true),
            named(&["Contact"])
        );
    }

    /// fresh2: "the opposition" was not the Contact, and "the RN track" / "our ship" asked
    /// among all three tracks instead of the two it fits.
    #[test]
    fn sides_name_the_contact_or_own_ships() {
        let c = plot();
        let r = |u: &str| resolve(u, &c, false, true);
        assert_eq!(
            r("how many miles did the opposition cover"),
            named(&["Contact"])
        );
        assert_eq!(r("enemy at <= 5 kn"), named(&["Contact"]));
        let own = Refs::Ambiguous {
            phrase: "our".to_owned(),
            candidates: vec!["HMS Nelson".to_owned(), "HMS Collingwood".to_owned()],
        };
        assert_eq!(r("Could you make our ship's track yellow?"), own);
        for u in ["turn the RN track yellow please", "colour own ship red"] {
            assert!(
                matches!(r(u), Refs::Ambiguous { ref candidates, .. } if candidates.len() == 2),
                "{u}: {:?}",
                r(u)
            );
        }
        assert_eq!(
            r("range from our ship HMS Nelson to the target"),
            named(&["HMS Nelson", "Contact"])
        );
    }

    #[test]
    fn a_phrase_that_fits_several_is_asked_about() {
        let c = plot();
        let r = |u: &str| resolve(u, &c, false, true);
        for u in [
            "colour the HMS track yellow",
            "make the British warship yellow",
            "paint the surface ship yellow",
        ] {
            assert!(matches!(r(u), Refs::Ambiguous { .. }), "{u}: {:?}", r(u));
        }
        let q = question(&r("colour the HMS track yellow"), &c, true)
            .unwrap()
            .to_string();
        assert!(q.contains("HMS Nelson or HMS Collingwood"), "{q}");
    }

    #[test]
    fn nothing_named_asks_which_track_and_a_pronoun_takes_the_selection() {
        let c = plot();
        assert_eq!(resolve("make it red", &c, false, true), Refs::Nothing);
        assert_eq!(resolve("make it red", &c, true, true), Refs::Selection);
        assert_eq!(
            resolve("yellow for the Royal Navy track", &c, false, true),
            Refs::Ambiguous {
                phrase: "royal".to_owned(),
                candidates: vec!["HMS Nelson".to_owned(), "HMS Collingwood".to_owned()],
            }
        );
        let q = question(&Refs::Nothing, &c, true).unwrap().to_string();
        assert!(
            q.starts_with("Which track? HMS Nelson, HMS Collingwood or Contact"),
            "{q}"
        );
    }
}

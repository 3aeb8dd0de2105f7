//! The registry: every provider's tools behind one lookup, one validator and one filter.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::filter::ToolFilter;
use crate::provider::{CallError, Provider, ProviderError, ToolCall, ToolOutcome};
use crate::spec::{Effect, ParamInfo, ToolSpec};
use crate::validate::{ParamValidator, SchemaError};

/// How many ids an "unknown tool" message lists before it says how many more exist.
const LISTED_IDS: usize = 20;

#[derive(Debug, Clone, thiserror::Error)]
pub enum RegistryError {
    #[error("{}", unknown_message(.id, .hint, .available, .suggestion.as_deref()))]
    UnknownTool {
        id: String,
        hint: String,
        available: Vec<String>,
        suggestion: Option<String>,
    },
    #[error(
        "Tool \"{id}\" is disabled by configuration (TOOLGATE_TOOLS / TOOLGATE_DISABLE or the [tools] table). Available: {}",
        list_ids(.available)
    )]
    Disabled { id: String, available: Vec<String> },
    #[error("Invalid parameters for \"{id}\": {}", .problems.join("; "))]
    InvalidParams { id: String, problems: Vec<String> },
    #[error(
        "duplicate tool id \"{id}\": provided by both \"{first}\" and \"{second}\"; rename one or disable it"
    )]
    DuplicateId {
        id: String,
        first: String,
        second: String,
    },
    #[error("provider \"{provider}\": {source}")]
    Schema {
        provider: String,
        #[source]
        source: SchemaError,
    },
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

fn list_ids(ids: &[String]) -> String {
    if ids.is_empty() {
        return "(registry empty)".to_owned();
    }
    let shown = ids
        .iter()
        .take(LISTED_IDS)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > LISTED_IDS {
        format!("{shown}, … ({} more)", ids.len() - LISTED_IDS)
    } else {
        shown
    }
}

fn unknown_message(id: &str, hint: &str, available: &[String], suggestion: Option<&str>) -> String {
    let mut msg = format!("Unknown tool id \"{id}\".");
    if !hint.is_empty() {
        msg.push(' ');
        msg.push_str(hint);
    }
    msg.push_str(" Available: ");
    msg.push_str(&list_ids(available));
    if let Some(s) = suggestion {
        msg.push_str(&format!(". Did you mean \"{s}\"?"));
    }
    msg
}

struct Entry {
    spec: ToolSpec,
    effect: Effect,
    provider: usize,
    validator: ParamValidator,
}

/// A tool found by [`Registry::resolve`].
#[derive(Clone, Copy)]
pub struct ResolvedTool<'r> {
    pub spec: &'r ToolSpec,
    pub effect: Effect,
    provider: &'r Arc<dyn Provider>,
    validator: &'r ParamValidator,
}

impl ResolvedTool<'_> {
    /// Validate parameters against this tool's schema; all problems are reported together.
    pub fn validate(
        &self,
        params: &Map<String, Value>,
    ) -> Result<Map<String, Value>, RegistryError> {
        self.validator
            .validate(params)
            .map_err(|problems| RegistryError::InvalidParams {
                id: self.spec.id.clone(),
                problems,
            })
    }

    pub fn provider_name(&self) -> &str {
        self.provider.name()
    }

    /// Where the tool runs ([`Provider::origin`]).
    pub fn origin(&self) -> crate::provider::ToolOrigin {
        self.provider.origin()
    }

    /// The provider's reading of parameters written for a person, before validation
    /// ([`Provider::normalise`]).
    pub fn normalise(
        &self,
        params: &Map<String, Value>,
    ) -> Result<crate::provider::Normalised, RegistryError> {
        self.provider
            .normalise(&self.spec.id, params)
            .map_err(|problems| RegistryError::InvalidParams {
                id: self.spec.id.clone(),
                problems,
            })
    }

    /// The provider's check of a prepared call before anyone is asked ([`Provider::check`]).
    pub async fn check(
        &self,
        call: &ToolCall,
        dry_run: bool,
    ) -> Result<crate::provider::Checked, crate::provider::CheckError> {
        self.provider.check(call, dry_run).await
    }

    /// Run the call on the owning provider. Policy must have been decided before this.
    pub async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
        self.provider.call(call).await
    }
}

/// One tool as a listing shows it to a model or a person.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolListing {
    pub id: String,
    pub name: String,
    pub description: String,
    pub parameters: Vec<ParamInfo>,
    pub category: String,
    pub mutating: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_kind: Option<String>,
}

impl ToolListing {
    /// How a listing shows this spec (its effect derived from the declared output kind).
    pub fn of(spec: &ToolSpec) -> Self {
        Self {
            id: spec.id.clone(),
            name: spec.title.clone(),
            description: spec.description.clone(),
            parameters: spec.params(),
            category: spec.category.clone(),
            mutating: spec.effect().is_mutating(),
            output_kind: spec.output_kind.as_ref().map(|k| k.as_str().to_owned()),
        }
    }
}

/// Merges providers; resolves, validates and lists their tools.
pub struct Registry {
    providers: Vec<Arc<dyn Provider>>,
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    filter: ToolFilter,
    discovery_hint: String,
    /// Providers that could not list their tools: (provider, reason).
    unavailable: Vec<(String, String)>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    pub fn new() -> Self {
        Self {
            providers: Vec::new(),
            entries: Vec::new(),
            index: HashMap::new(),
            filter: ToolFilter::allow_all(),
            discovery_hint: String::new(),
            unavailable: Vec::new(),
        }
    }

    #[must_use]
    pub fn with_filter(mut self, filter: ToolFilter) -> Self {
        self.filter = filter;
        self
    }

    /// The sentence an unknown-id error uses to say how to discover tools, e.g.
    /// "Call debrief_listTools first." on the Debrief surface.
    #[must_use]
    pub fn with_discovery_hint(mut self, hint: impl Into<String>) -> Self {
        self.discovery_hint = hint.into();
        self
    }

    /// List a provider's tools and add them. Either every tool is added or none is: a
    /// malformed schema or a duplicate id rejects the whole provider with the reason.
    /// A provider that cannot list its tools is remembered with the reason
    /// ([`Registry::unavailable_providers`]), so a listing can say why it is short.
    pub async fn register(&mut self, provider: Arc<dyn Provider>) -> Result<usize, RegistryError> {
        let specs = match provider.list_tools().await {
            Ok(specs) => specs,
            Err(e) => {
                self.unavailable
                    .push((provider.name().to_owned(), e.message.clone()));
                return Err(e.into());
            }
        };
        self.register_specs(provider, specs)
    }

    /// Providers whose tools could not be listed, with the reason: (provider, reason).
    pub fn unavailable_providers(&self) -> &[(String, String)] {
        &self.unavailable
    }

    /// As [`Registry::register`], with the specs already listed.
    pub fn register_specs(
        &mut self,
        provider: Arc<dyn Provider>,
        specs: Vec<ToolSpec>,
    ) -> Result<usize, RegistryError> {
        let provider_idx = self.providers.len();
        let mut staged: Vec<Entry> = Vec::with_capacity(specs.len());
        for spec in specs {
            if let Some(&existing) = self.index.get(&spec.id) {
                return Err(RegistryError::DuplicateId {
                    id: spec.id,
                    first: self.providers[self.entries[existing].provider]
                        .name()
                        .to_owned(),
                    second: provider.name().to_owned(),
                });
            }
            if staged.iter().any(|e| e.spec.id == spec.id) {
                return Err(RegistryError::DuplicateId {
                    id: spec.id,
                    first: provider.name().to_owned(),
                    second: provider.name().to_owned(),
                });
            }
            let validator = if provider.builtin_specs() {
                ParamValidator::deferred(&spec.id, &spec.input_schema)
            } else {
                ParamValidator::compile(&spec.id, &spec.input_schema).map_err(|source| {
                    RegistryError::Schema {
                        provider: provider.name().to_owned(),
                        source,
                    }
                })?
            };
            staged.push(Entry {
                effect: spec.effect(),
                spec,
                provider: provider_idx,
                validator,
            });
        }
        let added = staged.len();
        for entry in staged {
            self.index.insert(entry.spec.id.clone(), self.entries.len());
            self.entries.push(entry);
        }
        self.providers.push(provider);
        Ok(added)
    }

    /// Ids of every tool the filter permits, in registration order.
    pub fn ids(&self) -> Vec<String> {
        self.visible().map(|e| e.spec.id.clone()).collect()
    }

    fn visible(&self) -> impl Iterator<Item = &Entry> {
        self.entries
            .iter()
            .filter(|e| self.filter.permits(&e.spec.id))
    }

    /// Ids of registered tools the filter hides, in registration order (a surface can say
    /// "disabled" instead of "unknown" when a program names one).
    pub fn disabled_ids(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| !self.filter.permits(&e.spec.id))
            .map(|e| e.spec.id.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.visible().count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Look a tool up. Unknown ids get the corrective message with the valid ids and a
    /// did-you-mean suggestion; disabled ids say so.
    pub fn resolve(&self, id: &str) -> Result<ResolvedTool<'_>, RegistryError> {
        let entry = self.index.get(id).map(|&i| &self.entries[i]);
        match entry {
            Some(e) if self.filter.permits(id) => Ok(ResolvedTool {
                spec: &e.spec,
                effect: e.effect,
                provider: &self.providers[e.provider],
                validator: &e.validator,
            }),
            Some(_) => Err(RegistryError::Disabled {
                id: id.to_owned(),
                available: self.ids(),
            }),
            None => {
                let available = self.ids();
                let suggestion = suggest(id, &available);
                Err(RegistryError::UnknownTool {
                    id: id.to_owned(),
                    hint: self.discovery_hint.clone(),
                    available,
                    suggestion,
                })
            }
        }
    }

    /// The listing projection of every visible tool.
    pub fn listing(&self) -> Vec<ToolListing> {
        self.visible().map(|e| ToolListing::of(&e.spec)).collect()
    }

    /// Every visible spec (for generating stubs and manifests).
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.visible().map(|e| &e.spec)
    }
}

/// The closest id by edit similarity, when it is close enough to be a plausible typo, or an id
/// that contains the request (or is contained by it).
fn suggest(id: &str, available: &[String]) -> Option<String> {
    let needle = id.to_lowercase();
    let mut best: Option<(f64, &String)> = None;
    for cand in available {
        let c = cand.to_lowercase();
        let mut score = strsim::jaro_winkler(&needle, &c);
        if !needle.is_empty() && (c.contains(&needle) || needle.contains(&c)) {
            score = score.max(0.9);
        }
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, cand));
        }
    }
    best.filter(|(s, _)| *s >= 0.82).map(|(_, c)| c.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::OutputKind;
    use async_trait::async_trait;
    use serde_json::json;

    struct Fake {
        name: &'static str,
        specs: Vec<ToolSpec>,
    }

    #[async_trait]
    impl Provider for Fake {
        fn name(&self) -> &str {
            self.name
        }
        async fn list_tools(&self) -> Result<Vec<ToolSpec>, ProviderError> {
            Ok(self.specs.clone())
        }
        async fn call(&self, call: &ToolCall) -> Result<ToolOutcome, CallError> {
            Ok(ToolOutcome {
                kind: OutputKind::new("dataset/echo"),
                summary: call.tool_id.clone(),
                data: Value::Null,
                change_set: None,
            })
        }
    }

    fn spec(id: &str, kind: Option<&str>, schema: Value) -> ToolSpec {
        ToolSpec {
            id: id.to_owned(),
            title: id.to_owned(),
            description: String::new(),
            input_schema: schema,
            output_kind: kind.map(OutputKind::new),
            category: "test".to_owned(),
            annotations: Map::new(),
        }
    }

    fn obj() -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }

    #[tokio::test]
    async fn duplicate_ids_name_both_sources() {
        let mut r = Registry::new();
        let a = Fake {
            name: "native",
            specs: vec![spec(
                "set-track-color",
                Some("mutation/track/styled"),
                obj(),
            )],
        };
        let b = Fake {
            name: "python",
            specs: vec![spec("set-track-color", None, obj())],
        };
        r.register(Arc::new(a)).await.unwrap();
        let err = r.register(Arc::new(b)).await.unwrap_err().to_string();
        assert!(
            err.contains("\"native\"") && err.contains("\"python\""),
            "{err}"
        );
        assert_eq!(r.len(), 1);
    }

    #[tokio::test]
    async fn malformed_schema_rejects_the_whole_provider() {
        let mut r = Registry::new();
        let p = Fake {
            name: "bad",
            specs: vec![
                spec("ok-tool", None, obj()),
                spec("bad-tool", None, json!({"type": "object", "required": "x"})),
            ],
        };
        let err = r.register(Arc::new(p)).await.unwrap_err().to_string();
        assert!(
            err.contains("\"bad-tool\"") && err.contains("/required"),
            "{err}"
        );
        assert!(r.is_empty(), "nothing registered from a rejected provider");
    }

    #[tokio::test]
    async fn unknown_id_is_corrective() {
        let mut r = Registry::new().with_discovery_hint("Call debrief_listTools first.");
        let p = Fake {
            name: "native",
            specs: vec![
                spec("set-track-color", Some("mutation/track/styled"), obj()),
                spec("speed-filter", Some("dataset/x"), obj()),
            ],
        };
        r.register(Arc::new(p)).await.unwrap();
        let err = r.resolve("make-it-pretty").err().unwrap().to_string();
        assert_eq!(
            err,
            "Unknown tool id \"make-it-pretty\". Call debrief_listTools first. Available: set-track-color, speed-filter"
        );
        let err = r.resolve("set-track-colour").err().unwrap().to_string();
        assert!(err.ends_with("Did you mean \"set-track-color\"?"), "{err}");
        let listing = r.listing();
        assert!(listing[0].mutating && !listing[1].mutating);
    }

    #[tokio::test]
    async fn filter_hides_and_explains() {
        let mut r = Registry::new().with_filter(ToolFilter::new(None, vec!["speed-*".into()]));
        let p = Fake {
            name: "native",
            specs: vec![spec("a", None, obj()), spec("speed-filter", None, obj())],
        };
        r.register(Arc::new(p)).await.unwrap();
        assert_eq!(r.ids(), vec!["a".to_owned()]);
        assert_eq!(r.disabled_ids(), vec!["speed-filter".to_owned()]);
        let err = r.resolve("speed-filter").err().unwrap().to_string();
        assert!(
            err.starts_with("Tool \"speed-filter\" is disabled"),
            "{err}"
        );
    }

    #[test]
    fn many_ids_are_capped_in_the_message() {
        let ids: Vec<String> = (0..25).map(|i| format!("t{i}")).collect();
        let s = list_ids(&ids);
        assert!(s.ends_with("… (5 more)"), "{s}");
        assert_eq!(list_ids(&[]), "(registry empty)");
    }
}

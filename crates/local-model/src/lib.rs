//! A model that runs inside toolgate: a GGUF file loaded by llama.cpp (through `llama-cpp-2`)
//! and answered on one thread of this process, so the agent loop, the workbench chat panel and
//! the probe work with no model server at all (`--model-file PATH.gguf`).
//!
//! [`LocalModel`] is a [`ModelClient`] like the HTTP client: the agent loop cannot tell them
//! apart. It owns one *model thread* that holds the model and its context (llama.cpp's context is
//! not `Send`); requests travel to it over a channel and text comes back as it is sampled.
//!
//! - **Prompt**: the model's own chat template from the GGUF metadata (llama.cpp's built-in
//!   template renderer; ChatML when the file has none). Requests carry plain messages: tools go
//!   through [`toolgate_agent::TextProtocol`] (see [`LocalModel::client`]), and the small
//!   profile's constrained turns carry none.
//! - **Constrained decoding**: a request's `response_format` JSON schema is converted to a GBNF
//!   grammar by llama.cpp's own converter (the one its server uses) and sampled under llama.cpp's
//!   grammar sampler, so every reply the small profile reads is valid by construction — the same
//!   constraint the `xllamacpp` server applies. Grammars are compiled once per schema and cached.
//! - **Prompt cache**: the KV cache keeps the previous request's tokens; the next request decodes
//!   only what follows the longest common prefix (the agent loop resends a growing conversation,
//!   so most of each prompt is already there). llama.cpp's server does the same.
//! - **Limits**: the context window (a prompt that does not fit is refused before decoding, as a
//!   server answers HTTP 400), `max_tokens` per reply, the request timeout, and cancellation
//!   (a dropped request stops sampling at the next token).
//!
//! Threads: one by default. On the 2-core build machine one llama.cpp thread was measured
//! fastest (two threads were 4–6× slower with the server; `docs/local-model-eval.md`).

#![warn(unreachable_pub)]
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use serde_json::{Value, json};
use toolgate_agent::client::DeltaSink;
use toolgate_agent::constrain::{ServerInfo, ServerKind};
use toolgate_agent::{
    ChatRequest, ChatResponse, Message, ModelClient, ModelError, Role, TextProtocol, Usage,
};

mod text;

pub use text::{Utf8Stream, common_prefix};

/// How to load and run a local model.
#[derive(Debug, Clone)]
pub struct LocalModelConfig {
    /// The GGUF file.
    pub path: PathBuf,
    /// The id recorded in telemetry and transcripts (default: the file name without `.gguf`).
    pub model_id: Option<String>,
    /// llama.cpp threads for prompt and generation.
    pub threads: u32,
    /// Context window in tokens; `None`: 8,192 or the model's training context if smaller.
    pub n_ctx: Option<u32>,
    /// Tokens one reply may have when the request does not say.
    pub max_tokens: u32,
    /// 0 (the default) samples greedily: the same prompt gives the same reply.
    pub temperature: f32,
    /// Seed of the sampler when `temperature > 0`.
    pub seed: u32,
    /// Limit for one request (prompt and reply).
    pub timeout: Duration,
}

impl LocalModelConfig {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            model_id: None,
            threads: 1,
            n_ctx: None,
            max_tokens: 512,
            temperature: 0.0,
            seed: 0x7001_6a7e,
            timeout: Duration::from_secs(300),
        }
    }
}

/// Why a local model could not be loaded or could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocalModelError {
    #[error(
        "no model file at {path}: pass --model-file with the path of a GGUF file (e.g. one fetched by eval/fetch-models.sh)"
    )]
    Missing { path: PathBuf },
    #[error(
        "{path} is not a model llama.cpp can load ({detail}); --model-file takes a GGUF file (magic bytes \"GGUF\")"
    )]
    NotGguf { path: PathBuf, detail: String },
    #[error("llama.cpp could not load {path}: {detail}")]
    Load { path: PathBuf, detail: String },
    #[error(
        "this CPU lacks {feature}, which this build of llama.cpp needs; rebuild with GGML_{env}=OFF in the environment, or use --model-url with a model server"
    )]
    Cpu {
        feature: &'static str,
        env: &'static str,
    },
    #[error(
        "could not create a {n_ctx}-token context for {path}: {detail}; try a smaller --context"
    )]
    Context {
        path: PathBuf,
        n_ctx: u32,
        detail: String,
    },
    #[error("the model thread could not start: {0}")]
    Thread(String),
}

/// What the last request did (for tests and benchmarks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestStats {
    pub prompt_tokens: usize,
    /// Prompt tokens already in the KV cache from the previous request (not decoded again).
    pub reused_tokens: usize,
    pub completion_tokens: usize,
    pub prompt_ms: u64,
    pub generate_ms: u64,
}

/// The model thread's answer to one request.
struct Generated {
    text: String,
    finish: &'static str,
    stats: RequestStats,
}

/// One request to the model thread.
struct Job {
    messages: Vec<(String, String)>,
    /// A JSON schema the reply must satisfy.
    schema: Option<String>,
    max_tokens: u32,
    deltas: tokio::sync::mpsc::UnboundedSender<String>,
    reply: tokio::sync::oneshot::Sender<Result<Generated, ModelError>>,
    cancel: Arc<AtomicBool>,
}

/// A GGUF model answering in this process. Cheap to share behind an `Arc`; requests are served
/// one at a time, in order.
pub struct LocalModel {
    id: String,
    label: String,
    n_ctx: u32,
    timeout: Duration,
    jobs: Mutex<mpsc::Sender<Job>>,
    last: Arc<Mutex<RequestStats>>,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("id", &self.id)
            .field("n_ctx", &self.n_ctx)
            .finish_non_exhaustive()
    }
}

/// llama.cpp's process-wide backend: initialised once, never freed (it lives as long as the
/// process, as llama.cpp expects).
fn backend() -> Result<&'static LlamaBackend, &'static llama_cpp_2::LlamaCppError> {
    static BACKEND: OnceLock<Result<LlamaBackend, llama_cpp_2::LlamaCppError>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let mut b = LlamaBackend::init()?;
            // llama.cpp logs every tensor at load; toolgate's logs go through tracing.
            b.void_logs();
            Ok(b)
        })
        .as_ref()
}

/// The instruction-set extensions this build of ggml was compiled for must be on the CPU, or
/// the first matrix product dies of SIGILL; say so instead.
fn check_cpu() -> Result<(), LocalModelError> {
    #[cfg(target_arch = "x86_64")]
    {
        for (feature, env, ok) in [
            ("AVX2", "AVX2", std::arch::is_x86_feature_detected!("avx2")),
            ("FMA", "FMA", std::arch::is_x86_feature_detected!("fma")),
            ("F16C", "F16C", std::arch::is_x86_feature_detected!("f16c")),
        ] {
            if built_with(env) && !ok {
                return Err(LocalModelError::Cpu { feature, env });
            }
        }
    }
    Ok(())
}

/// Whether the build enabled `GGML_<name>` (the workspace's `.cargo/config.toml` sets the
/// x86-64-v3 set; the build script forwards `GGML_*` to CMake).
fn built_with(name: &str) -> bool {
    match name {
        "AVX2" => option_env!("GGML_AVX2"),
        "FMA" => option_env!("GGML_FMA"),
        "F16C" => option_env!("GGML_F16C"),
        _ => None,
    }
    .is_some_and(|v| v.eq_ignore_ascii_case("on"))
}

fn check_file(path: &Path) -> Result<(), LocalModelError> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let mut f = std::fs::File::open(path).map_err(|_| LocalModelError::Missing {
        path: path.to_owned(),
    })?;
    f.read_exact(&mut magic)
        .map_err(|e| LocalModelError::NotGguf {
            path: path.to_owned(),
            detail: e.to_string(),
        })
        .and_then(|()| {
            if &magic == b"GGUF" {
                Ok(())
            } else {
                Err(LocalModelError::NotGguf {
                    path: path.to_owned(),
                    detail: format!("it starts with {magic:?}"),
                })
            }
        })
}

impl LocalModel {
    /// Load the model and start its thread. Blocks until the model is loaded (a 0.5B Q4 model:
    /// well under a second from the page cache).
    pub fn load(config: LocalModelConfig) -> Result<Self, LocalModelError> {
        check_file(&config.path)?;
        check_cpu()?;
        let id = config.model_id.clone().unwrap_or_else(|| {
            config
                .path
                .file_stem()
                .map_or_else(|| "local".to_owned(), |s| s.to_string_lossy().into_owned())
        });
        let (jobs, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<u32, LocalModelError>>(1);
        let last = Arc::new(Mutex::new(RequestStats::default()));
        let thread_config = config.clone();
        std::thread::Builder::new()
            .name("toolgate-model".into())
            .spawn(move || model_thread(&thread_config, &rx, &ready_tx))
            .map_err(|e| LocalModelError::Thread(e.to_string()))?;
        let n_ctx = ready_rx
            .recv()
            .map_err(|_| LocalModelError::Thread("it exited while loading".into()))??;
        tracing::info!(model = %id, n_ctx, threads = config.threads, "local model loaded");
        Ok(Self {
            label: format!("in-process model {}", config.path.display()),
            id,
            n_ctx,
            timeout: config.timeout,
            jobs: Mutex::new(jobs),
            last,
        })
    }

    /// The client the agent loop should use: tools travel as text (llama.cpp's built-in template
    /// renderer has no tool syntax), constrained turns go straight to the grammar sampler.
    pub fn client(self) -> Arc<dyn ModelClient> {
        Arc::new(TextProtocol::new(self))
    }

    /// The context window in tokens.
    pub fn n_ctx(&self) -> u32 {
        self.n_ctx
    }

    /// What the last finished request did.
    pub fn last_stats(&self) -> RequestStats {
        self.last.lock().map(|s| *s).unwrap_or_default()
    }
}

/// Sets the cancel flag when the request's future is dropped (the loop was cancelled or timed
/// out), so the model thread stops at its next token instead of finishing a reply nobody reads.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The JSON schema a `response_format` asks for: OpenAI's `json_schema` (the schema inside) or
/// `json_object` (any object).
pub fn schema_of(response_format: &Value) -> Option<Value> {
    match response_format.get("type").and_then(Value::as_str) {
        Some("json_schema") => response_format
            .pointer("/json_schema/schema")
            .or_else(|| response_format.get("schema"))
            .cloned(),
        Some("json_object") => Some(json!({"type": "object"})),
        _ => None,
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// Plain role/content pairs for the template. A tool result that reached here (a caller that
/// did not wrap the model in the text protocol) is shown as a user turn, as the text protocol
/// would.
fn plain_messages(messages: &[Message]) -> Vec<(String, String)> {
    messages
        .iter()
        .map(|m| match m.role {
            Role::Tool => (
                "user".to_owned(),
                format!(
                    "Result of {}:\n{}",
                    m.name.as_deref().unwrap_or("the tool"),
                    m.content
                ),
            ),
            r => (role_name(r).to_owned(), m.content.clone()),
        })
        .collect()
}

#[async_trait]
impl ModelClient for LocalModel {
    fn model_id(&self) -> &str {
        &self.id
    }

    async fn complete(
        &self,
        request: &ChatRequest<'_>,
        deltas: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let schema = request
            .response_format
            .and_then(schema_of)
            .map(|s| s.to_string());
        let cancel = Arc::new(AtomicBool::new(false));
        let _guard = CancelOnDrop(cancel.clone());
        let (delta_tx, mut delta_rx) = tokio::sync::mpsc::unbounded_channel();
        let (reply_tx, reply_rx) = tokio::sync::oneshot::channel();
        let job = Job {
            messages: plain_messages(request.messages),
            schema,
            max_tokens: 0,
            deltas: delta_tx,
            reply: reply_tx,
            cancel: cancel.clone(),
        };
        self.jobs
            .lock()
            .map_err(|_| ModelError::Protocol("the model thread's queue is poisoned".into()))?
            .send(job)
            .map_err(|_| ModelError::Connect {
                url: self.label.clone(),
                detail: "the model thread has stopped".into(),
            })?;
        let work = async {
            while let Some(d) = delta_rx.recv().await {
                deltas(&d);
            }
            reply_rx.await.map_err(|_| ModelError::Connect {
                url: self.label.clone(),
                detail: "the model thread stopped while answering".into(),
            })?
        };
        let generated = match tokio::time::timeout(self.timeout, work).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(ModelError::Timeout {
                    url: self.label.clone(),
                    secs: self.timeout.as_secs(),
                });
            }
        };
        if let Ok(mut last) = self.last.lock() {
            *last = generated.stats;
        }
        Ok(ChatResponse {
            text: generated.text,
            tool_calls: Vec::new(),
            usage: Some(Usage {
                prompt_tokens: generated.stats.prompt_tokens as u64,
                completion_tokens: generated.stats.completion_tokens as u64,
            }),
            model: self.id.clone(),
            finish_reason: Some(generated.finish.to_owned()),
        })
    }

    async fn server_info(&self) -> ServerInfo {
        ServerInfo {
            kind: ServerKind::InProcess,
            n_ctx: usize::try_from(self.n_ctx).ok(),
            n_params: None,
        }
    }
}

/// The model thread: load, report readiness, then answer jobs until every sender is gone.
fn model_thread(
    config: &LocalModelConfig,
    jobs: &mpsc::Receiver<Job>,
    ready: &mpsc::SyncSender<Result<u32, LocalModelError>>,
) {
    let loaded = (|| {
        let backend = backend().map_err(|e| LocalModelError::Load {
            path: config.path.clone(),
            detail: e.to_string(),
        })?;
        let model = LlamaModel::load_from_file(backend, &config.path, &LlamaModelParams::default())
            .map_err(|e| LocalModelError::Load {
                path: config.path.clone(),
                detail: e.to_string(),
            })?;
        let n_ctx = config
            .n_ctx
            .unwrap_or_else(|| model.n_ctx_train().clamp(512, 8192))
            .max(256);
        let threads = i32::try_from(config.threads.max(1)).unwrap_or(1);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(512)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        Ok::<_, LocalModelError>((backend, model, params, n_ctx))
    })();
    let (backend, model, params, n_ctx) = match loaded {
        Ok(l) => l,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let ctx = match model.new_context(backend, params) {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(LocalModelError::Context {
                path: config.path.clone(),
                n_ctx,
                detail: e.to_string(),
            }));
            return;
        }
    };
    let template = model
        .chat_template(None)
        .or_else(|_| LlamaChatTemplate::new("chatml"))
        .ok();
    let _ = ready.send(Ok(n_ctx));
    let mut engine = Engine {
        model: &model,
        ctx,
        template,
        n_ctx,
        config,
        cached: Vec::new(),
        grammars: HashMap::new(),
    };
    while let Ok(job) = jobs.recv() {
        let started = Instant::now();
        let result = engine.answer(&job);
        if let Ok(g) = &result {
            tracing::debug!(
                prompt = g.stats.prompt_tokens,
                reused = g.stats.reused_tokens,
                completion = g.stats.completion_tokens,
                prompt_ms = g.stats.prompt_ms,
                generate_ms = g.stats.generate_ms,
                total_ms = started.elapsed().as_millis() as u64,
                "local model answered"
            );
        }
        let _ = job.reply.send(result);
    }
}

/// Grammars compiled once per schema text: the small profile sends the same few schemas turn
/// after turn. Bounded: the cache is cleared when it reaches this many entries.
const GRAMMAR_CACHE: usize = 64;

/// A request's samplers: the grammar (when the request has a schema) kept apart from the rest.
struct Sampling {
    grammar: Option<LlamaSampler>,
    chain: LlamaSampler,
}

struct Engine<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    template: Option<LlamaChatTemplate>,
    n_ctx: u32,
    config: &'m LocalModelConfig,
    /// The tokens whose keys and values are in the KV cache, in order.
    cached: Vec<LlamaToken>,
    /// Grammars by schema; a schema llama.cpp's converter refused is remembered as refused.
    grammars: HashMap<String, Result<String, Arc<llama_cpp_2::LlamaCppError>>>,
}

fn protocol(what: &str, e: impl std::fmt::Display) -> ModelError {
    ModelError::Protocol(format!("the in-process model {what}: {e}"))
}

impl Engine<'_> {
    fn prompt(&self, messages: &[(String, String)]) -> Result<String, ModelError> {
        let chat: Vec<LlamaChatMessage> = messages
            .iter()
            .map(|(role, content)| {
                // The C API takes NUL-terminated strings; a NUL inside a message would cut it.
                LlamaChatMessage::new(role.clone(), content.replace('\0', ""))
                    .map_err(|e| protocol("could not take a message", e))
            })
            .collect::<Result<_, _>>()?;
        let template = self
            .template
            .as_ref()
            .ok_or_else(|| protocol("has no chat template", "the GGUF file names none"))?;
        self.model
            .apply_chat_template(template, &chat, true)
            .map_err(|e| protocol("could not apply its chat template", e))
    }

    fn grammar(&mut self, schema: &str) -> Result<String, ModelError> {
        if self.grammars.len() >= GRAMMAR_CACHE {
            self.grammars.clear();
        }
        self.grammars
            .entry(schema.to_owned())
            .or_insert_with(|| {
                llama_cpp_2::json_schema_to_grammar(schema).map_err(Arc::new)
            })
            .clone()
            .map_err(|e| {
                ModelError::Protocol(format!(
                    "the response_format schema could not be turned into a grammar ({e}); send a JSON schema of objects, arrays, strings, numbers, booleans and enums"
                ))
            })
    }

    fn sampling(&mut self, schema: Option<&str>) -> Result<Sampling, ModelError> {
        let grammar = match schema {
            Some(s) => {
                let g = self.grammar(s)?;
                Some(
                    LlamaSampler::grammar(self.model, &g, "root")
                        .map_err(|e| protocol("could not compile the grammar", e))?,
                )
            }
            None => None,
        };
        let chain = if self.config.temperature > 0.0 {
            LlamaSampler::chain_simple([
                LlamaSampler::top_k(40),
                LlamaSampler::top_p(0.95, 1),
                LlamaSampler::min_p(0.05, 1),
                LlamaSampler::temp(self.config.temperature),
                LlamaSampler::dist(self.config.seed),
            ])
        } else {
            LlamaSampler::greedy()
        };
        Ok(Sampling { grammar, chain })
    }

    /// The next token: sampled without the grammar first, and only when the grammar rejects
    /// that token, again with the grammar applied to the whole vocabulary (llama.cpp's server
    /// samples the same way: checking one token is cheap, masking 150,000 is not, and a model
    /// writing JSON under a JSON grammar agrees with it most of the time).
    fn next_token(&mut self, s: &mut Sampling) -> Result<LlamaToken, ModelError> {
        let mut all = self.ctx.token_data_array_ith(-1);
        all.apply_sampler(&mut s.chain);
        let mut token = all
            .selected_token()
            .ok_or_else(|| protocol("sampled nothing", "no token was selected"))?;
        if let Some(g) = s.grammar.as_mut() {
            let mut one =
                LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
            one.apply_sampler(g);
            if one.data.first().is_none_or(|d| !d.logit().is_finite()) {
                let mut all = self.ctx.token_data_array_ith(-1);
                all.apply_sampler(g);
                all.apply_sampler(&mut s.chain);
                let admitted = all
                    .selected_token()
                    .and_then(|t| all.data.iter().find(|d| d.id() == t))
                    .filter(|d| d.logit().is_finite())
                    .map(LlamaTokenData::id);
                token = admitted.ok_or_else(|| {
                    protocol("found no token the schema admits", "the grammar is stuck")
                })?;
            }
            g.try_accept(token)
                .map_err(|e| protocol("could not advance the grammar", e))?;
        }
        s.chain.accept(token);
        Ok(token)
    }

    /// Decode `tokens` starting at position `start`, logits for the last one only.
    fn decode(&mut self, tokens: &[LlamaToken], start: usize) -> Result<(), ModelError> {
        let n_batch = usize::try_from(self.ctx.n_batch()).unwrap_or(512).max(1);
        let mut batch = LlamaBatch::new(n_batch, 1);
        for (chunk_no, chunk) in tokens.chunks(n_batch).enumerate() {
            batch.clear();
            let base = start + chunk_no * n_batch;
            for (i, t) in chunk.iter().enumerate() {
                let pos = i32::try_from(base + i).map_err(|e| protocol("position", e))?;
                let last = chunk_no * n_batch + i + 1 == tokens.len();
                batch
                    .add(*t, pos, &[0], last)
                    .map_err(|e| protocol("could not batch the prompt", e))?;
            }
            self.ctx
                .decode(&mut batch)
                .map_err(|e| protocol("could not decode", e))?;
        }
        Ok(())
    }

    fn answer(&mut self, job: &Job) -> Result<Generated, ModelError> {
        let prompt = self.prompt(&job.messages)?;
        let tokens = self.model.vocab().tokenize(prompt.as_bytes(), true, true);
        let max_tokens = if job.max_tokens > 0 {
            job.max_tokens
        } else {
            self.config.max_tokens
        } as usize;
        let n_ctx = self.n_ctx as usize;
        if tokens.len() + 1 > n_ctx {
            // What llama.cpp's server answers for the same request.
            return Err(ModelError::Status {
                url: "in-process".into(),
                status: 400,
                body: format!(
                    "the request exceeds the available context size: {} prompt tokens, context {n_ctx}; shorten the conversation or pass a larger --context",
                    tokens.len()
                ),
            });
        }
        let mut sampling = self.sampling(job.schema.as_deref())?;

        let t0 = Instant::now();
        // Keep what the cache already holds; decode at least the last prompt token so its
        // logits are fresh.
        let reuse = common_prefix(&self.cached, &tokens).min(tokens.len() - 1);
        if reuse < self.cached.len() {
            let p0 = u32::try_from(reuse).map_err(|e| protocol("position", e))?;
            let cleared = self
                .ctx
                .clear_kv_cache_seq(Some(0), Some(p0), None)
                .map_err(|e| protocol("could not trim its cache", e))?;
            if !cleared {
                self.ctx.clear_kv_cache();
                self.cached.clear();
            }
        }
        let reuse = reuse.min(self.cached.len());
        self.cached.truncate(reuse);
        if let Err(e) = self.decode(&tokens[reuse..], reuse) {
            self.ctx.clear_kv_cache();
            self.cached.clear();
            return Err(e);
        }
        self.cached.extend_from_slice(&tokens[reuse..]);
        let prompt_ms = t0.elapsed().as_millis() as u64;

        let t1 = Instant::now();
        let vocab = self.model.vocab();
        let mut utf8 = Utf8Stream::default();
        let mut text = String::new();
        let mut finish = "length";
        let mut completion = 0usize;
        let mut batch = LlamaBatch::new(1, 1);
        while completion < max_tokens {
            if job.cancel.load(Ordering::Relaxed) {
                finish = "cancelled";
                break;
            }
            if self.cached.len() >= n_ctx {
                finish = "length";
                break;
            }
            let token = self.next_token(&mut sampling)?;
            completion += 1;
            if vocab.is_eog(token) {
                finish = "stop";
                break;
            }
            let piece = vocab.token_to_piece(token, false, None);
            let delta = utf8.push(&piece);
            if !delta.is_empty() {
                text.push_str(&delta);
                let _ = job.deltas.send(delta);
            }
            batch.clear();
            let pos = i32::try_from(self.cached.len()).map_err(|e| protocol("position", e))?;
            batch
                .add(token, pos, &[0], true)
                .map_err(|e| protocol("could not batch a token", e))?;
            if let Err(e) = self.ctx.decode(&mut batch) {
                self.ctx.clear_kv_cache();
                self.cached.clear();
                return Err(protocol("could not decode", e));
            }
            self.cached.push(token);
        }
        let rest = utf8.finish();
        if !rest.is_empty() {
            text.push_str(&rest);
            let _ = job.deltas.send(rest);
        }
        Ok(Generated {
            text,
            finish,
            stats: RequestStats {
                prompt_tokens: tokens.len(),
                reused_tokens: reuse,
                completion_tokens: completion,
                prompt_ms,
                generate_ms: t1.elapsed().as_millis() as u64,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn schema_from_response_format() {
        let s = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let f = toolgate_agent::constrain::response_format(&s);
        assert_eq!(schema_of(&f), Some(s));
        assert_eq!(
            schema_of(&json!({"type": "json_object"})),
            Some(json!({"type": "object"}))
        );
        assert_eq!(schema_of(&json!({"type": "text"})), None);
    }

    #[test]
    fn tool_results_become_user_turns() {
        let call = toolgate_agent::ToolCallRequest {
            id: "1".into(),
            name: "debrief_listTools".into(),
            arguments: "{}".into(),
        };
        let m = plain_messages(&[
            Message::system("s"),
            Message::user("u"),
            Message::tool(&call, "r"),
        ]);
        assert_eq!(m[0], ("system".into(), "s".into()));
        assert_eq!(
            m[2],
            ("user".into(), "Result of debrief_listTools:\nr".into())
        );
    }

    #[test]
    fn a_missing_or_foreign_file_is_refused_before_llama_cpp_sees_it() {
        let dir = std::env::temp_dir().join(format!("toolgate-lm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("nope.gguf");
        let e = LocalModel::load(LocalModelConfig::new(&missing)).unwrap_err();
        assert!(matches!(e, LocalModelError::Missing { .. }), "{e}");
        assert!(e.to_string().contains("--model-file"), "{e}");
        let text = dir.join("model.gguf");
        std::fs::write(&text, "not a model").unwrap();
        let e = LocalModel::load(LocalModelConfig::new(&text)).unwrap_err();
        assert!(matches!(e, LocalModelError::NotGguf { .. }), "{e}");
        // A GGUF header with nothing behind it: llama.cpp refuses it, the error says which file.
        let truncated = dir.join("truncated.gguf");
        std::fs::write(&truncated, b"GGUF\x03\x00\x00\x00").unwrap();
        let e = LocalModel::load(LocalModelConfig::new(&truncated)).unwrap_err();
        assert!(matches!(e, LocalModelError::Load { .. }), "{e}");
        assert!(e.to_string().contains("truncated.gguf"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

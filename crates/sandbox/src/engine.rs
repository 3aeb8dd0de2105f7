//! The in-process driver: monty's start/resume loop, with every suspension answered by the host
//! under the limits.
//!
//! Limits in this path (the worker pool adds a process boundary around the same loop):
//! - **time**: the wall-clock deadline raises `TimeoutError` from monty's periodic checkpoint
//!   (`Output::poll_flush`, every 255 instructions), so the error names the running line; a
//!   program that catches it still ends as timed out, and monty's own feed and turn budgets
//!   (50 ms later) stop one that goes on. Tool calls, sleeps and `asyncio.gather` waits are
//!   bounded by the same deadline, checked before every resume; time spent waiting for a
//!   person (`PauseClock`) moves it back. *Residual risk:* one native operation that monty does not
//!   interrupt (e.g. `7 ** 5_000_000`) can overshoot the deadline, and the caller's future does
//!   not complete until it ends; use [`crate::WorkerPool`] where that matters.
//! - **memory**: monty's `max_memory`, which in this path checks single large allocations
//!   before they happen (`'a' * 10**10`, a list doubling past the budget). *Residual risk:*
//!   many small allocations are not counted in-process (no process-global allocator is
//!   installed); the worker process adds `RLIMIT_AS`.
//! - **recursion**: monty's `max_recursion_depth` (catchable `RecursionError`).
//! - **tool calls**: counted here; the call past the budget aborts the program uncatchably.
//! - **output**: captured through a callback that keeps `max_output_bytes` and marks the cut.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use monty::{FunctionCall, MontyRun, NameLookup, OsCall, ResolveFutures, RunProgress};
use monty_types::{
    CallArgs, CompileOptions, ExcType, ExtFunctionResult, MontyException, MontyObject,
    NameLookupResult, OsFunctionCall, PrintStream, PrintWriter, PrintWriterCallback,
    ResourceLimits, ResourceTracker, SourceRange,
};
use serde_json::{Map, Value};

use crate::convert::{ConvertError, json_to_monty, monty_to_json, return_value_to_json};
use crate::envelope::{Envelope, ExecError};
use crate::host::{HostError, ToolHost};
use crate::limits::{ExecRequest, TRUNCATION_MARKER};
use crate::pause::PauseClock;
use toolgate_config::Limits;

/// How many tool names an error message lists before it says how many more exist.
const LISTED_TOOLS: usize = 25;

type HostFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, HostError>> + Send + 'a>>;
type Step = Result<RunProgress, MontyException>;

/// Run one program in this process. Every tool call goes to `host`; the envelope says how it
/// ended. Needs a tokio runtime with the time driver enabled.
pub async fn run(req: ExecRequest, host: &dyn ToolHost) -> Envelope {
    let started = Instant::now();
    let mut session = Session::new(&req, host);
    let result = session.drive(&req).await;
    session.finish(result, started, &req.code)
}

/// How long after the wall-clock deadline monty's own time limit ends a program that caught the
/// `TimeoutError` the deadline raised (see [`Output::poll_flush`]).
const TIME_BACKSTOP: Duration = Duration::from_millis(50);

/// The message of the `TimeoutError` the deadline raises; [`Session::finish`] says it in full.
const DEADLINE_REACHED: &str = "the program's wall-clock limit was reached";

/// Captured stdout/stderr under one byte budget; also the interpreter's periodic checkpoint
/// (see [`Output::poll_flush`]).
#[derive(Debug, Default)]
pub(crate) struct Output {
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    remaining: usize,
    pub(crate) truncated: bool,
    /// The wall-clock deadline in force (moved back by waits for a person).
    deadline: Option<std::time::Instant>,
    /// Set once the deadline raised its `TimeoutError`: the program ends as timed out even if
    /// it caught that exception.
    timed_out: bool,
}

impl Output {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            remaining: cap,
            ..Self::default()
        }
    }

    fn push(&mut self, stream: PrintStream, text: &str) {
        if self.truncated || text.is_empty() {
            return;
        }
        let buf = match stream {
            PrintStream::Stdout => &mut self.stdout,
            PrintStream::Stderr => &mut self.stderr,
        };
        if text.len() <= self.remaining {
            buf.push_str(text);
            self.remaining -= text.len();
        } else {
            let mut cut = self.remaining;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            buf.push_str(&text[..cut]);
            buf.push_str(TRUNCATION_MARKER);
            self.remaining = 0;
            self.truncated = true;
        }
    }
}

impl PrintWriterCallback for Output {
    fn stdout_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.push(PrintStream::Stdout, &output);
        Ok(())
    }

    fn stdout_push(&mut self, end: char) -> Result<(), MontyException> {
        self.push(PrintStream::Stdout, end.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn stderr_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.push(PrintStream::Stderr, &output);
        Ok(())
    }

    fn stderr_push(&mut self, end: char) -> Result<(), MontyException> {
        self.push(PrintStream::Stderr, end.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    /// monty calls this every 255 instructions. Past the deadline it raises `TimeoutError`
    /// here, where the interpreter attaches the running line to it — monty's own time-limit
    /// error carries no frame, so "stopped after 30 s at line 3: while True:" needs this. The
    /// exception is catchable, so [`Output::timed_out`] makes the program end as timed out
    /// anyway, and monty's own limit, [`TIME_BACKSTOP`] later, stops one that goes on.
    fn poll_flush(&mut self) -> Result<(), MontyException> {
        if self
            .deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
        {
            self.timed_out = true;
            return Err(exc(ExcType::TimeoutError, DEADLINE_REACHED));
        }
        Ok(())
    }
}

struct Pending<'a> {
    id: u32,
    fut: Option<HostFuture<'a>>,
    result: Option<Result<Value, HostError>>,
}

struct Session<'a> {
    host: &'a dyn ToolHost,
    /// Sorted, for messages.
    tool_list: Vec<String>,
    tools: HashSet<String>,
    /// Names the host refuses, with the reason (see [`ToolHost::unavailable_tools`]).
    unavailable: HashMap<String, String>,
    limits: Limits,
    /// The wall-clock deadline before any wait for a person ([`Session::deadline`] adds them).
    base_deadline: tokio::time::Instant,
    clock: Option<Arc<PauseClock>>,
    out: Output,
    calls: u32,
    pending: Vec<Pending<'a>>,
    /// Whether the call at a source offset is awaited (see [`call_is_awaited`]).
    awaited_at: HashMap<u32, bool>,
}

fn exc(t: ExcType, msg: impl Into<String>) -> MontyException {
    MontyException::new(t, Some(msg.into()))
}

/// " at line 3: while True:" — the source line `line` (1-based) of `code`, trimmed and cut to 60
/// characters; empty when there is no such line.
fn running_line(code: &str, line: Option<u32>) -> String {
    let Some(n) = line.filter(|n| *n > 0) else {
        return String::new();
    };
    let Some(src) = code.lines().nth(n as usize - 1).map(str::trim) else {
        return String::new();
    };
    let shown: String = src.chars().take(60).collect();
    let more = if src.chars().count() > 60 { " …" } else { "" };
    format!(" at line {n}: {shown}{more}")
}

/// `12 s`, `1.5 s`, `250 ms`.
pub(crate) fn human_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        return format!("{} ms", d.as_millis());
    }
    let s = format!("{:.3}", d.as_secs_f64());
    format!("{} s", s.trim_end_matches('0').trim_end_matches('.'))
}

impl<'a> Session<'a> {
    fn new(req: &ExecRequest, host: &'a dyn ToolHost) -> Self {
        let mut tool_list = host.tool_names();
        tool_list.sort();
        tool_list.dedup();
        let tools: HashSet<String> = tool_list.iter().cloned().collect();
        let unavailable = host
            .unavailable_tools()
            .into_iter()
            .filter(|(name, _)| !tools.contains(name))
            .collect();
        Self {
            host,
            tool_list,
            tools,
            unavailable,
            limits: req.limits.clone(),
            base_deadline: tokio::time::Instant::now() + req.limits.timeout,
            clock: host.pause_clock(),
            out: Output::new(req.limits.max_output_bytes),
            calls: 0,
            pending: Vec::new(),
            awaited_at: HashMap::new(),
        }
    }

    fn listed_tools(&self) -> String {
        if self.tool_list.is_empty() {
            return "(none: no tools are available in this sandbox)".to_owned();
        }
        let shown = self
            .tool_list
            .iter()
            .take(LISTED_TOOLS)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ");
        if self.tool_list.len() > LISTED_TOOLS {
            format!("{shown}, … ({} more)", self.tool_list.len() - LISTED_TOOLS)
        } else {
            shown
        }
    }

    fn name_error(&self, name: &str) -> MontyException {
        if let Some(reason) = self.unavailable.get(name) {
            return exc(
                ExcType::NameError,
                format!("name '{name}' is not defined: {reason}"),
            );
        }
        exc(
            ExcType::NameError,
            format!(
                "name '{name}' is not defined. Available tools: {}",
                self.listed_tools()
            ),
        )
    }

    fn timeout_exc(&self, waiting_for: &str) -> MontyException {
        exc(
            ExcType::TimeoutError,
            format!(
                "the program ran past its wall-clock limit of {}{waiting_for}",
                human_duration(self.limits.timeout)
            ),
        )
    }

    /// The wall-clock deadline, moved back by the time spent waiting for a person.
    fn deadline(&self) -> tokio::time::Instant {
        self.base_deadline + self.clock.as_ref().map_or(Duration::ZERO, |c| c.credit())
    }

    fn paused(&self) -> bool {
        self.clock.as_ref().is_some_and(|c| c.is_paused())
    }

    fn remaining(&self) -> Duration {
        self.deadline()
            .saturating_duration_since(tokio::time::Instant::now())
    }

    fn past_deadline(&self) -> bool {
        !self.paused() && tokio::time::Instant::now() >= self.deadline()
    }

    /// `fut`'s output, or `None` when the deadline passed first. A wait for a person moves the
    /// deadline while it lasts, so the deadline is re-read whenever it is reached.
    async fn within_deadline<F: Future>(
        clock: Option<&PauseClock>,
        base: tokio::time::Instant,
        fut: F,
    ) -> Option<F::Output> {
        let deadline = || base + clock.map_or(Duration::ZERO, PauseClock::credit);
        tokio::pin!(fut);
        loop {
            let at = deadline().max(tokio::time::Instant::now() + Duration::from_millis(20));
            tokio::select! {
                out = &mut fut => return Some(out),
                () = tokio::time::sleep_until(at) => {
                    let paused = clock.is_some_and(PauseClock::is_paused);
                    if !paused && tokio::time::Instant::now() >= deadline() {
                        return None;
                    }
                }
            }
        }
    }

    async fn drive(&mut self, req: &ExecRequest) -> Result<MontyObject, MontyException> {
        let runner = MontyRun::new(
            req.code.clone(),
            &req.script_name,
            Vec::new(),
            CompileOptions::default(),
        )?;
        let limits = ResourceLimits {
            max_feed_duration: Some(self.limits.timeout + TIME_BACKSTOP),
            max_turn_duration: Some(self.limits.timeout + TIME_BACKSTOP),
            max_memory: Some(crate::limits::memory_usize(&self.limits)),
            max_recursion_depth: self.limits.max_recursion_depth as usize,
            max_suspensions: self.limits.max_tool_calls as usize,
            ..ResourceLimits::default()
        };
        self.out.deadline = Some(self.deadline().into_std());
        let mut step = runner.start(
            Vec::new(),
            ResourceTracker::new(limits),
            PrintWriter::Callback(&mut self.out),
        );
        loop {
            let progress = step?;
            // Host time passed (a tool call, a wait for a person): the deadline in force now.
            self.out.deadline = Some(self.deadline().into_std());
            step = match progress {
                RunProgress::Complete(value) => return Ok(value),
                RunProgress::NameLookup(lookup) => self.on_lookup(lookup),
                RunProgress::FunctionCall(call) => self.on_call(call, req).await,
                RunProgress::OsCall(os) => self.on_os(os).await,
                RunProgress::ResolveFutures(wait) => self.on_resolve(wait).await,
            };
        }
    }

    fn on_lookup(&mut self, lookup: NameLookup) -> Step {
        if self.past_deadline() {
            let e = self.timeout_exc("");
            return lookup.abort(e, PrintWriter::Callback(&mut self.out));
        }
        let answer = if lookup.object_id().is_none() && self.tools.contains(&lookup.name) {
            NameLookupResult::Value(MontyObject::function(lookup.name.clone(), None))
        } else {
            NameLookupResult::Error(self.name_error(&lookup.name))
        };
        lookup.resume(answer, PrintWriter::Callback(&mut self.out))
    }

    async fn on_call(&mut self, mut call: FunctionCall, req: &ExecRequest) -> Step {
        let name = call.function_name.clone();
        if call.object_id.is_some() || !self.tools.contains(&name) {
            let e = self.name_error(&name);
            return call.resume(
                ExtFunctionResult::Error(e),
                PrintWriter::Callback(&mut self.out),
            );
        }
        if self.calls >= self.limits.max_tool_calls {
            let e = exc(
                ExcType::RuntimeError,
                format!(
                    "tool-call limit exceeded: the program tried to make more than {} tool calls (max_tool_calls); do more work per call",
                    self.limits.max_tool_calls
                ),
            );
            return call.abort(e, PrintWriter::Callback(&mut self.out));
        }
        if self.past_deadline() {
            let e = self.timeout_exc("");
            return call.abort(e, PrintWriter::Callback(&mut self.out));
        }
        let host = self.host;
        let args = match build_args(&name, &call.args, || host.param_names(&name)) {
            Ok(a) => a,
            Err(e) => {
                return call.resume(
                    ExtFunctionResult::Error(exc(ExcType::TypeError, e.to_string())),
                    PrintWriter::Callback(&mut self.out),
                );
            }
        };
        self.calls += 1;
        if self.is_awaited(&req.code, &req.script_name, &call.position) && !call.allow_eager_await {
            // Awaited among other work: run concurrently, resolved at `ResolveFutures`.
            let fut: HostFuture<'a> = Box::pin(async move { host.call(&name, args).await });
            self.pending.push(Pending {
                id: call.call_id,
                fut: Some(fut),
                result: None,
            });
            return call.resume_pending(PrintWriter::Callback(&mut self.out));
        }
        let result = Self::within_deadline(
            self.clock.as_deref(),
            self.base_deadline,
            host.call(&name, args),
        )
        .await;
        // A call that returns past the deadline ends the program like one cut off there.
        let Some(result) = result.filter(|_| !self.past_deadline()) else {
            let e = self.timeout_exc(&format!(" (waiting for tool '{name}')"));
            return call.abort(e, PrintWriter::Callback(&mut self.out));
        };
        self.refresh_turn(&mut call);
        let answer = to_answer(&name, result);
        if call.allow_eager_await {
            // `await tool(...)` with nothing else to run: answered now, no ResolveFutures round.
            let settled = match answer {
                ExtFunctionResult::Return(v) => Ok(v),
                ExtFunctionResult::Error(e) => Err(e),
                _ => Err(exc(ExcType::RuntimeError, "unexpected tool answer")),
            };
            return call.resume_eager(settled, PrintWriter::Callback(&mut self.out));
        }
        call.resume(answer, PrintWriter::Callback(&mut self.out))
    }

    /// After host time passed, the next stretch of interpreter time may only use what is left
    /// of the wall clock.
    fn refresh_turn(&mut self, call: &mut FunctionCall) {
        let left = self.remaining().max(Duration::from_millis(1));
        call.tracker_mut()
            .set_max_turn_duration(left + TIME_BACKSTOP);
        self.out.deadline = Some(self.deadline().into_std());
    }

    fn is_awaited(&mut self, code: &str, script: &str, pos: &SourceRange) -> bool {
        if pos.filename != script {
            return false;
        }
        *self
            .awaited_at
            .entry(pos.start)
            .or_insert_with(|| call_is_awaited(code, pos.start as usize))
    }

    async fn on_os(&mut self, os: OsCall) -> Step {
        if self.past_deadline() {
            let e = self.timeout_exc("");
            return os.abort(e, PrintWriter::Callback(&mut self.out));
        }
        match &os.function_call {
            OsFunctionCall::Sleep(d) | OsFunctionCall::SystemSleep(d) => {
                let d = *d;
                if d >= self.remaining() {
                    let e = self.timeout_exc(" (in time.sleep)");
                    return os.abort(e, PrintWriter::Callback(&mut self.out));
                }
                tokio::time::sleep(d).await;
                os.resume(MontyObject::none(), PrintWriter::Callback(&mut self.out))
            }
            OsFunctionCall::AsyncSleep(d) | OsFunctionCall::AsyncSystemSleep(d) => {
                let d = *d;
                let id = os.call_id;
                self.pending.push(Pending {
                    id,
                    fut: Some(Box::pin(async move {
                        tokio::time::sleep(d).await;
                        Ok(Value::Null)
                    })),
                    result: None,
                });
                os.resume(
                    ExtFunctionResult::Future(id),
                    PrintWriter::Callback(&mut self.out),
                )
            }
            OsFunctionCall::Time(_) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64());
                os.resume(
                    MontyObject::float(now),
                    PrintWriter::Callback(&mut self.out),
                )
            }
            call => {
                let e = self.os_refusal(call);
                os.resume(
                    ExtFunctionResult::Error(e),
                    PrintWriter::Callback(&mut self.out),
                )
            }
        }
    }

    fn os_refusal(&self, call: &OsFunctionCall) -> MontyException {
        let file_tools = ["view", "create", "edit", "glob", "grep"]
            .into_iter()
            .filter(|t| self.tools.contains(*t))
            .collect::<Vec<_>>();
        let via = if file_tools.is_empty() {
            format!("the tools ({})", self.listed_tools())
        } else {
            format!("the tools ({}, …)", file_tools.join(", "))
        };
        let msg = match call {
            OsFunctionCall::Import(module) => format!(
                "module '{module}' is not available in the sandbox; files, commands and the network are reached only through {via}"
            ),
            OsFunctionCall::Getenv(_) | OsFunctionCall::GetEnviron => {
                "environment variables are not available in the sandbox".to_owned()
            }
            OsFunctionCall::Urandom(_) => {
                "os.urandom is not available in the sandbox; use the random module".to_owned()
            }
            other => format!(
                "'{}' is not allowed in the sandbox: files must be accessed through {via}",
                other.name()
            ),
        };
        exc(ExcType::PermissionError, msg)
    }

    async fn on_resolve(&mut self, wait: ResolveFutures) -> Step {
        let ids = wait.pending_call_ids().to_vec();
        if let Some(unknown) = ids
            .iter()
            .find(|id| !self.pending.iter().any(|p| p.id == **id))
        {
            let e = exc(
                ExcType::RuntimeError,
                format!("internal error: the sandbox waits on unknown call {unknown}"),
            );
            return wait.abort(e, PrintWriter::Callback(&mut self.out));
        }
        let (clock, base) = (self.clock.clone(), self.base_deadline);
        let pending = &mut self.pending;
        let ready = Self::within_deadline(
            clock.as_deref(),
            base,
            poll_fn(|cx| poll_pending(pending, &ids, cx)),
        )
        .await;
        if ready.is_none() || self.past_deadline() {
            let e = self.timeout_exc(" (waiting for awaited tool calls)");
            return wait.abort(e, PrintWriter::Callback(&mut self.out));
        }
        let mut results = Vec::new();
        self.pending.retain_mut(|p| {
            if ids.contains(&p.id)
                && let Some(r) = p.result.take()
            {
                results.push((p.id, to_answer("awaited tool", r)));
                return false;
            }
            true
        });
        wait.resume(results, PrintWriter::Callback(&mut self.out))
    }

    fn finish(
        self,
        result: Result<MontyObject, MontyException>,
        started: Instant,
        code: &str,
    ) -> Envelope {
        let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        // monty's own time limit fires only past the deadline ([`TIME_BACKSTOP`]), so a
        // `TimeoutError` raised once the deadline passed is the wall clock's, whoever raised it.
        let past_deadline = self.past_deadline();
        let Output {
            stdout,
            mut stderr,
            truncated,
            timed_out,
            ..
        } = self.out;
        // A program that caught the deadline's TimeoutError still timed out.
        let result = match result {
            Ok(_) if timed_out => Err(exc(ExcType::TimeoutError, DEADLINE_REACHED)),
            Err(e) if timed_out && e.exc_type() != ExcType::TimeoutError => {
                Err(exc(ExcType::TimeoutError, DEADLINE_REACHED))
            }
            other => other,
        };
        match result {
            Ok(value) => {
                let (return_value, cut) =
                    cap_return_value(return_value_to_json(&value), self.limits.max_output_bytes);
                Envelope {
                    success: true,
                    stdout,
                    stderr,
                    return_value,
                    error: None,
                    tool_calls: self.calls,
                    duration_ms,
                    truncated: truncated || cut,
                }
            }
            Err(e) => {
                let wall_clock =
                    e.exc_type() == ExcType::TimeoutError && (timed_out || past_deadline);
                let mut error = ExecError::from_exception(&e);
                // The deadline's own error, or monty's time limit (its backstop, or inside one
                // long native operation): decided by the exception kind and the clock, not by
                // monty's wording ("feed time limit exceeded: 30.0000537s").
                if wall_clock {
                    error.wall_clock = true;
                    // Said as a developer reads it: the limit in plain units and the line that
                    // was running, not the interpreter's "feed time limit exceeded: 30.0000537s".
                    error.message = format!(
                        "stopped after {}{} (the program's wall-clock limit; raise timeout_secs in the project config if the work needs longer)",
                        human_duration(self.limits.timeout),
                        running_line(code, error.line)
                    );
                }
                if !stderr.is_empty() && !stderr.ends_with('\n') {
                    stderr.push('\n');
                }
                stderr.push_str(&error.render());
                Envelope {
                    success: false,
                    stdout,
                    stderr,
                    return_value: Value::Null,
                    error: Some(error),
                    tool_calls: self.calls,
                    duration_ms,
                    truncated,
                }
            }
        }
    }
}

/// A return value whose JSON text exceeds the output budget becomes that text, cut and marked.
fn cap_return_value(value: Value, cap: usize) -> (Value, bool) {
    match &value {
        Value::Null | Value::Bool(_) | Value::Number(_) => (value, false),
        Value::String(s) if s.len() <= cap => (value, false),
        Value::String(s) => (Value::String(cut_marked(s, cap)), true),
        _ => {
            let text = serde_json::to_string(&value).unwrap_or_default();
            if text.len() <= cap {
                return (value, false);
            }
            (Value::String(cut_marked(&text, cap)), true)
        }
    }
}

fn cut_marked(text: &str, cap: usize) -> String {
    let mut at = cap.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}{TRUNCATION_MARKER}", &text[..at])
}

/// Poll every started host future; ready once one the interpreter waits on has finished.
fn poll_pending(pending: &mut [Pending<'_>], ids: &[u32], cx: &mut Context<'_>) -> Poll<()> {
    let mut ready = false;
    for p in pending.iter_mut() {
        if let Some(fut) = p.fut.as_mut()
            && let Poll::Ready(r) = fut.as_mut().poll(cx)
        {
            p.result = Some(r);
            p.fut = None;
        }
        ready |= p.result.is_some() && ids.contains(&p.id);
    }
    if ready {
        Poll::Ready(())
    } else {
        Poll::Pending
    }
}

fn to_answer(name: &str, result: Result<Value, HostError>) -> ExtFunctionResult {
    match result {
        Ok(v) => match json_to_monty(&v) {
            Ok(obj) => ExtFunctionResult::Return(obj),
            Err(msg) => {
                ExtFunctionResult::Error(exc(ExcType::RuntimeError, format!("{name}: {msg}")))
            }
        },
        Err(e) => ExtFunctionResult::Error(e.to_exception()),
    }
}

/// Why a tool call's Python arguments do not make its parameters (raised as `TypeError`).
#[derive(Debug, thiserror::Error)]
enum ArgsError {
    #[error("{name}() takes keyword arguments only, e.g. {name}(name=value)")]
    KeywordsOnly { name: String },
    #[error(
        "{name}() takes at most {max} positional argument{} ({params}) but {given} were given",
        if *max == 1 { "" } else { "s" }
    )]
    TooManyPositional {
        name: String,
        max: usize,
        params: String,
        given: usize,
    },
    #[error("{name}() argument '{param}': {source}")]
    Argument {
        name: String,
        param: String,
        #[source]
        source: ConvertError,
    },
    #[error("{name}() keywords must be strings")]
    KeywordNotStr { name: String },
    #[error("{name}() got multiple values for argument '{key}'")]
    Repeated { name: String, key: String },
}

/// Python call arguments → the tool's JSON parameters. Positional arguments map onto the
/// declared parameters in order when the host knows them.
fn build_args(
    name: &str,
    args: &CallArgs,
    params: impl FnOnce() -> Option<Vec<String>>,
) -> Result<Map<String, Value>, ArgsError> {
    let argument = |param: &str| {
        let param = param.to_owned();
        move |source| ArgsError::Argument {
            name: name.to_owned(),
            param,
            source,
        }
    };
    let mut map = Map::new();
    let positional = args.args();
    if positional.len() > 0 {
        let Some(params) = params() else {
            return Err(ArgsError::KeywordsOnly {
                name: name.to_owned(),
            });
        };
        if positional.len() > params.len() {
            return Err(ArgsError::TooManyPositional {
                name: name.to_owned(),
                max: params.len(),
                params: params.join(", "),
                given: positional.len(),
            });
        }
        for (param, value) in params.iter().zip(positional) {
            let v = monty_to_json(value).map_err(argument(param))?;
            map.insert(param.clone(), v);
        }
    }
    for (key, value) in args.kwargs() {
        let Some(key) = key.as_str() else {
            return Err(ArgsError::KeywordNotStr {
                name: name.to_owned(),
            });
        };
        if map.contains_key(key) {
            return Err(ArgsError::Repeated {
                name: name.to_owned(),
                key: key.to_owned(),
            });
        }
        let v = monty_to_json(value).map_err(argument(key))?;
        map.insert(key.to_owned(), v);
    }
    Ok(map)
}

/// Whether the call starting at byte `start` is written as an awaitable: right after `await`,
/// or inside the parentheses of `asyncio.gather(...)` (or `create_task`, `ensure_future`,
/// `wait_for`). Such calls return a future the host runs concurrently with the other awaited
/// calls; every other call returns its result directly.
pub(crate) fn call_is_awaited(code: &str, start: usize) -> bool {
    let Some(before) = code.get(..start) else {
        return false;
    };
    let head = before.trim_end_matches(|c: char| c.is_whitespace() || c == '(');
    if ends_with_word(head, "await") {
        return true;
    }
    let mut depth = 0usize;
    for (i, ch) in before.char_indices().rev() {
        match ch {
            ')' | ']' | '}' => depth += 1,
            '(' | '[' | '{' => {
                if depth > 0 {
                    depth -= 1;
                } else if ch == '(' {
                    let callee = before[..i].trim_end();
                    if ["gather", "create_task", "ensure_future", "wait_for"]
                        .iter()
                        .any(|f| ends_with_word(callee, f))
                    {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

fn ends_with_word(text: &str, word: &str) -> bool {
    text.strip_suffix(word).is_some_and(|rest| {
        !rest
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awaited_calls_are_recognised_lexically() {
        let at = |code: &str, call: &str| call_is_awaited(code, code.find(call).unwrap());
        assert!(at("x = await view(path='a')", "view"));
        assert!(at(
            "await asyncio.gather(view(path='a'), view(path='b'))",
            "view"
        ));
        assert!(at(
            "await asyncio.gather(*[view(path=p) for p in ps])",
            "view"
        ));
        assert!(at("r = await (\n    view(path='a'))", "view"));
        assert!(!at("x = view(path='a')", "view"));
        assert!(!at("await foo(view(path='a'))", "view"));
        assert!(!at("noawait view(path='a')", "view"));
        assert!(!at("print(gather_all(view(path='a')))", "view"));
    }

    #[test]
    fn output_is_cut_with_a_marker() {
        let mut o = Output::new(5);
        o.push(PrintStream::Stdout, "abc");
        o.push(PrintStream::Stderr, "défg");
        o.push(PrintStream::Stdout, "more");
        assert_eq!(o.stdout, "abc");
        assert_eq!(o.stderr, format!("d{TRUNCATION_MARKER}"));
        assert!(o.truncated);
    }

    #[test]
    fn durations_read_plainly() {
        assert_eq!(human_duration(Duration::from_secs(30)), "30 s");
        assert_eq!(human_duration(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(human_duration(Duration::from_millis(250)), "250 ms");
    }
}

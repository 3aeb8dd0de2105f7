//! Worker processes for hosts that must outlive any program: each program runs in a child
//! process (the current binary re-executed as `toolgate __sandbox-worker`, with an empty
//! environment and `/` as its working directory), whose tool calls come back over a pipe to the
//! host. A watchdog kills a worker that runs past the deadline or grows past the memory budget,
//! and the pool replaces it.

use std::ffi::OsString;
use std::future::{Future, poll_fn};
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::Semaphore;

use crate::engine::human_duration;
use crate::envelope::{Envelope, ExecError};
use crate::host::{HostError, ToolHost};
use crate::limits::{ExecRequest, TRUNCATION_MARKER};
use crate::protocol::{
    CrashKind, FrameError, FromWorker, ToWorker, ToolDecl, read_frame, write_frame,
};
use toolgate_config::Limits;

/// The hidden subcommand that turns the binary into a worker.
pub const WORKER_SUBCOMMAND: &str = "__sandbox-worker";
/// What the RSS watchdog allows beyond the program's memory budget (the worker's own code and
/// heap). The worker's `RLIMIT_AS` normally stops a program long before this.
const RSS_HEADROOM: u64 = 128 << 20;
/// How often a stop that came while the program waited for a person is looked at again.
const WAIT_RECHECK: Duration = Duration::from_millis(50);
/// How much of the worker's stderr is kept to explain a crash.
const STDERR_TAIL: usize = 4096;
/// Slack beyond the output budget for the traceback a failed program adds to stderr.
const TRACEBACK_SLACK: usize = 64 << 10;

/// How to start a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl WorkerCommand {
    /// This executable, re-run as `<exe> __sandbox-worker`.
    pub fn current_exe() -> io::Result<Self> {
        Ok(Self {
            program: std::env::current_exe()?,
            args: vec![WORKER_SUBCOMMAND.into()],
        })
    }

    /// A dedicated worker executable that runs [`crate::worker_main`] without arguments.
    pub fn program(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
        }
    }
}

/// Pool settings.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Workers running programs at once (default 2).
    pub size: usize,
    pub command: WorkerCommand,
    /// How long past a program's timeout the watchdog waits before killing its worker (the
    /// worker normally stops the program itself at the timeout). Default 1 s.
    pub grace: Duration,
    /// A worker is replaced after this many programs (default 200), so no state or heap
    /// fragmentation accumulates.
    pub max_runs_per_worker: u32,
}

impl PoolConfig {
    pub fn new(command: WorkerCommand) -> Self {
        Self {
            size: 2,
            command,
            grace: Duration::from_secs(1),
            max_runs_per_worker: 200,
        }
    }

    #[must_use]
    pub fn with_size(mut self, size: usize) -> Self {
        self.size = size.max(1);
        self
    }

    #[must_use]
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }
}

struct Worker {
    child: Child,
    pid: Option<u32>,
    stdin: ChildStdin,
    /// `None` only while a program runs (its reader is in flight).
    stdout: Option<FrameReader>,
    stderr_tail: Arc<Mutex<String>>,
    runs: u32,
}

enum Fate {
    Reusable,
    Dead,
}

type CallFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, HostError>> + Send + 'a>>;

/// A small pool of worker processes. Programs beyond `size` wait for a free worker.
pub struct WorkerPool {
    config: PoolConfig,
    idle: Mutex<Vec<Worker>>,
    slots: Semaphore,
}

impl WorkerPool {
    /// A pool that starts workers on demand.
    pub fn new(config: PoolConfig) -> Self {
        let size = config.size.max(1);
        Self {
            config,
            idle: Mutex::new(Vec::new()),
            slots: Semaphore::new(size),
        }
    }

    /// A pool of `<this exe> __sandbox-worker` workers with default settings.
    pub fn for_current_exe() -> io::Result<Self> {
        Ok(Self::new(PoolConfig::new(WorkerCommand::current_exe()?)))
    }

    /// Start the workers now rather than at the first program.
    pub async fn warm(&self) -> io::Result<()> {
        let missing = self.config.size.saturating_sub(self.idle_count());
        for _ in 0..missing {
            let w = self.spawn()?;
            self.put_back(w);
        }
        Ok(())
    }

    /// Workers started and waiting.
    pub fn idle_count(&self) -> usize {
        self.idle.lock().map_or(0, |i| i.len())
    }

    fn put_back(&self, w: Worker) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(w);
        }
    }

    fn take_idle(&self) -> Option<Worker> {
        self.idle.lock().ok()?.pop()
    }

    fn spawn(&self) -> io::Result<Worker> {
        let mut child = Command::new(&self.config.command.program)
            .args(&self.config.command.args)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let missing = |what| io::Error::other(format!("worker {what} not captured"));
        let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
        let stderr = child.stderr.take().ok_or_else(|| missing("stderr"))?;
        let stdout = tokio::io::BufReader::with_capacity(64 << 10, stdout);
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        tokio::spawn(drain_stderr(stderr, Arc::clone(&stderr_tail)));
        Ok(Worker {
            pid: child.id(),
            child,
            stdin,
            stdout: Some(stdout),
            stderr_tail,
            runs: 0,
        })
    }

    /// Run one program in a worker. Tool calls go to `host` in this process, concurrently when
    /// the program awaits them together.
    pub async fn run(&self, req: ExecRequest, host: &dyn ToolHost) -> Envelope {
        let started = Instant::now();
        let Ok(slot) = self.slots.acquire().await else {
            return failure("RuntimeError", "the worker pool is closed", started);
        };
        // Given back while the program waits for a person (see `drive`).
        let mut slot = Some(slot);
        let tools: Vec<ToolDecl> = host
            .tool_names()
            .into_iter()
            .map(|name| ToolDecl {
                params: host.param_names(&name),
                name,
            })
            .collect();
        // A worker that died while idle fails at the first write: retry once with a new one.
        for attempt in 0..2 {
            let mut worker = match self.take_idle() {
                Some(w) => w,
                None => match self.spawn() {
                    Ok(w) => w,
                    Err(e) => {
                        return failure(
                            "RuntimeError",
                            &format!(
                                "could not start a sandbox worker ({}): {e}",
                                self.config.command.program.display()
                            ),
                            started,
                        );
                    }
                },
            };
            let (envelope, fate) = self
                .drive(
                    &mut worker,
                    &req,
                    &tools,
                    host,
                    started,
                    attempt == 0,
                    &mut slot,
                )
                .await;
            worker.runs += 1;
            match fate {
                Fate::Reusable if worker.runs < self.config.max_runs_per_worker => {
                    self.put_back(worker);
                }
                Fate::Reusable => retire(worker).await,
                Fate::Dead => {
                    retire(worker).await;
                    match self.spawn() {
                        Ok(fresh) => self.put_back(fresh),
                        Err(e) => tracing::warn!(error = %e, "sandbox worker not replaced"),
                    }
                }
            }
            if let Some(env) = envelope {
                return env;
            }
        }
        failure(
            "RuntimeError",
            "sandbox workers exit as soon as they start; see the host's log",
            started,
        )
    }

    /// One program in one worker. `None` (with `Dead`) means the worker was gone before the
    /// program reached it and `retry` allows another try.
    ///
    /// While the program waits for a person (the host's [`crate::PauseClock`]), its deadlines
    /// move back by the time waited and its `slot` is given back, so a paused program holds its
    /// worker but never stops other programs from running; it takes a slot again to go on.
    #[allow(clippy::too_many_arguments)]
    async fn drive<'s>(
        &'s self,
        worker: &mut Worker,
        req: &ExecRequest,
        tools: &[ToolDecl],
        host: &dyn ToolHost,
        started: Instant,
        retry: bool,
        slot: &mut Option<tokio::sync::SemaphorePermit<'s>>,
    ) -> (Option<Envelope>, Fate) {
        let clock = host.pause_clock();
        let credit = || clock.as_ref().map_or(Duration::ZERO, |c| c.credit());
        let paused = || clock.as_ref().is_some_and(|c| c.is_paused());
        let paused_ms = || u64::try_from(credit().as_millis()).unwrap_or(u64::MAX);
        let limits = &req.limits;
        let deadline = tokio::time::Instant::now() + limits.timeout + self.config.grace;
        let run = ToWorker::Run {
            req: req.clone(),
            tools: tools.to_vec(),
            unavailable: host.unavailable_tools(),
        };
        match tokio::time::timeout_at(deadline, write_frame(&mut worker.stdin, &run)).await {
            Ok(Ok(())) => {}
            Ok(Err(FrameError::TooLarge(n))) => {
                return (
                    Some(failure(
                        "ValueError",
                        &format!("the program is too large to run ({n} bytes)"),
                        started,
                    )),
                    Fate::Reusable,
                );
            }
            _ if retry => return (None, Fate::Dead),
            _ => {
                return (
                    Some(failure(
                        "RuntimeError",
                        "the sandbox worker is not responding",
                        started,
                    )),
                    Fate::Dead,
                );
            }
        }
        let rss_limit = limits.max_memory_bytes.saturating_add(RSS_HEADROOM);
        let mut inflight: Vec<(u64, CallFuture<'_>)> = Vec::new();
        let mut calls: u32 = 0;
        let mut ticker = tokio::time::interval(Duration::from_millis(50));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        // At the timeout itself, calls still running are answered with TimeoutError, so the
        // worker ends the program with its output and traceback; the hard stop (timeout + grace)
        // kills a worker that does not end.
        let soft_base = deadline - self.config.grace;
        let soft_stop = tokio::time::sleep_until(soft_base);
        let hard_stop = tokio::time::sleep_until(deadline);
        tokio::pin!(soft_stop, hard_stop);
        let mut soft_passed = false;
        let Some(reader) = worker.stdout.take() else {
            return (
                Some(failure(
                    "RuntimeError",
                    "the sandbox worker lost its output pipe",
                    started,
                )),
                Fate::Dead,
            );
        };
        let mut next_frame = Box::pin(read_one(reader));
        let mut crash: Option<CrashKind> = None;
        loop {
            tokio::select! {
                biased;
                (reader, frame) = &mut next_frame => match frame {
                    Ok(Some(FromWorker::Call { id, name, args })) => {
                        next_frame = Box::pin(read_one(reader));
                        calls += 1;
                        if calls > limits.max_tool_calls {
                            kill(worker).await;
                            return (Some(failure_with_calls("RuntimeError", &format!(
                                "tool-call limit exceeded: more than {} tool calls (max_tool_calls)",
                                limits.max_tool_calls), started, calls - 1)), Fate::Dead);
                        }
                        if soft_passed {
                            let answer = ToWorker::Result { id, result: Err(late(limits)), paused_ms: paused_ms() };
                            let _ = tokio::time::timeout_at(deadline, write_frame(&mut worker.stdin, &answer)).await;
                        } else {
                            inflight.push((id, Box::pin(async move { host.call(&name, args).await })));
                        }
                    }
                    Ok(Some(FromWorker::Crashed { kind })) => {
                        // The exit follows; it is classified with this kind.
                        next_frame = Box::pin(read_one(reader));
                        crash = Some(kind);
                    }
                    Ok(Some(FromWorker::Done { envelope })) => {
                        worker.stdout = Some(reader);
                        return (Some(sanitize(envelope, limits, calls, started)), Fate::Reusable);
                    }
                    Err(e) => {
                        kill(worker).await;
                        return (Some(failure_with_calls("RuntimeError", &format!(
                            "the sandbox worker sent an invalid frame ({e}) and was stopped"), started, calls)), Fate::Dead);
                    }
                    Ok(None) => {
                        let status = wait_exit(worker).await;
                        let tail = worker.stderr_tail.lock().map(|t| t.clone()).unwrap_or_default();
                        if calls == 0 && retry && status.is_some_and(|s| s.code() == Some(0)) {
                            return (None, Fate::Dead);
                        }
                        let (t, msg) = classify_exit(status, crash, &tail, limits);
                        return (Some(failure_with_calls(t, &msg, started, calls)), Fate::Dead);
                    }
                },
                (id, result) = poll_first(&mut inflight), if !inflight.is_empty() => {
                    if slot.is_none() && let Ok(permit) = self.slots.acquire().await {
                        *slot = Some(permit);
                    }
                    let answer = ToWorker::Result { id, result, paused_ms: paused_ms() };
                    if let Ok(Err(FrameError::TooLarge(n))) =
                        tokio::time::timeout_at(deadline, write_frame(&mut worker.stdin, &answer)).await
                    {
                        let refused = ToWorker::Result { id, result: Err(HostError::new(
                            crate::host::PyExc::ValueError,
                            format!("the tool result is too large to pass to the sandbox ({n} bytes)"))), paused_ms: paused_ms() };
                        let _ = tokio::time::timeout_at(deadline, write_frame(&mut worker.stdin, &refused)).await;
                    }
                    // Any other write failure: the worker is gone (its exit is read next) or stuck
                    // (the hard stop covers it).
                }
                () = &mut soft_stop, if !soft_passed => {
                    let moved = soft_base + credit();
                    if paused() || tokio::time::Instant::now() < moved {
                        soft_stop.as_mut().reset(moved.max(tokio::time::Instant::now() + WAIT_RECHECK));
                        continue;
                    }
                    soft_passed = true;
                    for (id, _) in inflight.drain(..) {
                        let answer = ToWorker::Result { id, result: Err(late(limits)), paused_ms: paused_ms() };
                        if tokio::time::timeout_at(deadline, write_frame(&mut worker.stdin, &answer)).await.is_err() {
                            break;
                        }
                    }
                }
                () = &mut hard_stop => {
                    let moved = deadline + credit();
                    if paused() || tokio::time::Instant::now() < moved {
                        hard_stop.as_mut().reset(moved.max(tokio::time::Instant::now() + WAIT_RECHECK));
                        continue;
                    }
                    kill(worker).await;
                    let mut env = failure_with_calls("TimeoutError", &format!(
                        "the program ran past its wall-clock limit of {} and its worker was stopped",
                        human_duration(limits.timeout)), started, calls);
                    if let Some(e) = env.error.as_mut() {
                        e.wall_clock = true;
                    }
                    return (Some(env), Fate::Dead);
                }
                _ = ticker.tick() => {
                    if paused() && slot.is_some() {
                        *slot = None;
                    }
                    if let Some(rss) = worker.pid.and_then(resident_bytes)
                        && rss > rss_limit
                    {
                        kill(worker).await;
                        return (Some(failure_with_calls("MemoryError", &format!(
                            "the program exceeded the memory limit of {} MiB (resident {} MiB) and its worker was stopped",
                            limits.max_memory_bytes >> 20, rss >> 20), started, calls)), Fate::Dead);
                    }
                }
            }
        }
    }
}

fn late(limits: &Limits) -> HostError {
    HostError::new(
        crate::host::PyExc::TimeoutError,
        format!(
            "the program ran past its wall-clock limit of {} (waiting for a tool)",
            human_duration(limits.timeout)
        ),
    )
}

async fn poll_first(inflight: &mut Vec<(u64, CallFuture<'_>)>) -> (u64, Result<Value, HostError>) {
    poll_fn(|cx| {
        for i in 0..inflight.len() {
            if let Poll::Ready(out) = inflight[i].1.as_mut().poll(cx) {
                let (id, _) = inflight.swap_remove(i);
                return Poll::Ready((id, out));
            }
        }
        Poll::Pending
    })
    .await
}

type FrameReader = tokio::io::BufReader<ChildStdout>;

/// Read one frame, handing the reader back: a pending read survives `select!` rounds intact.
async fn read_one(
    mut reader: FrameReader,
) -> (FrameReader, Result<Option<FromWorker>, FrameError>) {
    let frame = read_frame(&mut reader).await;
    (reader, frame)
}

async fn drain_stderr(mut stderr: ChildStderr, tail: Arc<Mutex<String>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            return;
        }
        if let Ok(mut t) = tail.lock() {
            t.push_str(&String::from_utf8_lossy(&buf[..n]));
            if t.len() > STDERR_TAIL {
                let mut cut = t.len() - STDERR_TAIL;
                while !t.is_char_boundary(cut) {
                    cut += 1;
                }
                t.drain(..cut);
            }
        }
    }
}

/// Resident memory of a process (`VmRSS` in `/proc/<pid>/status`).
fn resident_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

async fn kill(worker: &mut Worker) {
    let _ = worker.child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(2), worker.child.wait()).await;
}

async fn retire(mut worker: Worker) {
    // Closing stdin ends a healthy worker's loop; kill covers one that does not stop.
    drop(worker.stdin);
    kill_quietly(&mut worker.child).await;
}

async fn kill_quietly(child: &mut Child) {
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
}

async fn wait_exit(worker: &mut Worker) -> Option<ExitStatus> {
    match tokio::time::timeout(Duration::from_secs(2), worker.child.wait()).await {
        Ok(Ok(status)) => Some(status),
        _ => {
            kill(worker).await;
            None
        }
    }
}

/// Why a worker ended on its own: the Python exception type and message to report. Decided by
/// the kind the worker reported ([`FromWorker::Crashed`]) and the exit status; the stderr tail
/// is only quoted, never read for the decision.
fn classify_exit(
    status: Option<ExitStatus>,
    crash: Option<CrashKind>,
    stderr_tail: &str,
    limits: &Limits,
) -> (&'static str, String) {
    #[cfg(unix)]
    let signal = {
        use std::os::unix::process::ExitStatusExt;
        status.and_then(|s| s.signal())
    };
    #[cfg(not(unix))]
    let signal: Option<i32> = None;
    let code = status.and_then(|s| s.code());
    let memory = format!(
        "the program exceeded the memory limit of {} MiB and its worker was stopped",
        limits.max_memory_bytes >> 20
    );
    let tail = stderr_tail.trim();
    let tail = if tail.is_empty() {
        String::new()
    } else {
        format!(": {}", tail.lines().last().unwrap_or_default())
    };
    match (crash, code, signal) {
        (Some(CrashKind::Panic), _, _) => (
            "RuntimeError",
            format!("the sandbox worker hit an internal error (a panic) and was stopped{tail}"),
        ),
        (None, Some(monty_types::OOM_EXIT_CODE), _) => ("MemoryError", memory),
        // SIGKILL that the pool did not send: the kernel's out-of-memory killer.
        (None, _, Some(SIGKILL)) => ("MemoryError", memory),
        // An abort the worker could not announce: the Rust runtime ends the process so when an
        // allocation past the worker's address-space cap fails or its stack overflows (monty's
        // recursion limit normally stops a program well before that).
        (None, _, Some(SIGABRT)) => (
            "MemoryError",
            format!(
                "the program ran out of memory or stack (memory limit {} MiB) and its worker was stopped",
                limits.max_memory_bytes >> 20
            ),
        ),
        (None, c, s) => {
            let how = match (c, s) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(s)) => format!("signal {s}"),
                _ => "unknown status".to_owned(),
            };
            (
                "RuntimeError",
                format!("the sandbox worker exited unexpectedly ({how}){tail}"),
            )
        }
    }
}

const SIGKILL: i32 = 9;
const SIGABRT: i32 = 6;

fn failure(type_: &str, message: &str, started: Instant) -> Envelope {
    failure_with_calls(type_, message, started, 0)
}

fn failure_with_calls(type_: &str, message: &str, started: Instant, calls: u32) -> Envelope {
    let mut env = Envelope::failure(
        ExecError::new(type_, message),
        started.elapsed().as_secs_f64() * 1000.0,
    );
    env.tool_calls = calls;
    env
}

fn cut(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let mut at = max;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    text.push_str(TRUNCATION_MARKER);
    true
}

/// Bound what an untrusted worker reported; the pool's own counts and clock win.
fn sanitize(mut env: Envelope, limits: &Limits, calls: u32, started: Instant) -> Envelope {
    let out_cap = limits.max_output_bytes + TRUNCATION_MARKER.len();
    let mut truncated = env.truncated;
    truncated |= cut(&mut env.stdout, out_cap);
    truncated |= cut(&mut env.stderr, out_cap + TRACEBACK_SLACK);
    env.truncated = truncated;
    if let Some(e) = env.error.as_mut() {
        e.type_.truncate(64);
        if !e
            .type_
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            e.type_ = "RuntimeError".to_owned();
        }
        cut(&mut e.message, 8 << 10);
        e.traceback.truncate(400);
        for l in &mut e.traceback {
            cut(l, 4 << 10);
        }
        env.success = false;
        env.return_value = Value::Null;
    }
    env.tool_calls = calls;
    env.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    env
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    /// A worker's end is classified by the kind it reported and its exit status; the stderr
    /// tail is quoted, never read: the same text decides nothing.
    #[test]
    fn a_workers_end_is_classified_by_kind_and_status_not_by_stderr() {
        let limits = Limits::default();
        let misleading =
            "memory allocation of 8 bytes failed\nthread 'main' has overflowed its stack";
        let exited = |code: i32| Some(ExitStatus::from_raw(code << 8));
        let signalled = |sig: i32| Some(ExitStatus::from_raw(sig));
        let (t, m) = classify_exit(exited(101), Some(CrashKind::Panic), "boom", &limits);
        assert_eq!(t, "RuntimeError");
        assert!(
            m.contains("internal error (a panic)") && m.ends_with(": boom"),
            "{m}"
        );
        let (t, _) = classify_exit(exited(monty_types::OOM_EXIT_CODE), None, "", &limits);
        assert_eq!(t, "MemoryError");
        let (t, _) = classify_exit(signalled(SIGKILL), None, "", &limits);
        assert_eq!(t, "MemoryError");
        let (t, _) = classify_exit(signalled(SIGABRT), None, "", &limits);
        assert_eq!(t, "MemoryError");
        let (t, m) = classify_exit(exited(3), None, misleading, &limits);
        assert_eq!(t, "RuntimeError", "{m}");
        assert!(m.contains("exit code 3"), "{m}");
    }
}

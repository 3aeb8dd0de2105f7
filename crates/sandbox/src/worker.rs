//! The worker process: runs programs sent by a [`crate::WorkerPool`] and asks the pool for every
//! tool call. Its stdout is the protocol channel: nothing else may write there.
//!
//! The worker is single-threaded. A tool call writes its request frame, yields once (so calls
//! awaited together all reach the pool before any answer is awaited), then reads answer frames
//! from stdin until its own arrives, keeping the others for their callers. The pool enforces the
//! wall clock around the worker, so blocking on stdin here is safe.

use std::collections::HashMap;
use std::fs::File;
use std::future::poll_fn;
use std::io::{self, BufReader, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::engine;
use crate::host::{HostError, PyExc, ToolHost};
use crate::pause::PauseClock;
use crate::protocol::{
    CrashKind, FromWorker, ToWorker, ToolDecl, read_frame_sync, write_frame_sync,
};

/// Address space the worker may use beyond its baseline and the program's memory budget
/// (interpreter structures, frames in flight, the result envelope).
const ADDRESS_SPACE_HEADROOM: u64 = 96 << 20;

/// The pipe to the pool: buffered reads of stdin, one unbuffered `write` per frame on stdout.
struct Link {
    input: Mutex<BufReader<File>>,
    output: Mutex<File>,
    /// Answers read while waiting for another call's answer.
    parked: Mutex<HashMap<u64, Result<Value, HostError>>>,
    closed: AtomicBool,
    /// The time the run waited for a person, as the pool reports it with each answer.
    clock: Arc<PauseClock>,
}

impl Link {
    fn open() -> io::Result<Self> {
        let input = File::from(io::stdin().as_fd().try_clone_to_owned()?);
        let output = File::from(io::stdout().as_fd().try_clone_to_owned()?);
        Ok(Self {
            input: Mutex::new(BufReader::with_capacity(64 << 10, input)),
            output: Mutex::new(output),
            parked: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            clock: Arc::new(PauseClock::new()),
        })
    }

    fn send(&self, frame: &FromWorker) -> bool {
        let Ok(mut out) = self.output.lock() else {
            return false;
        };
        write_frame_sync(&mut *out, frame).is_ok()
    }

    fn recv(&self) -> Option<ToWorker> {
        let mut input = self.input.lock().ok()?;
        match read_frame_sync::<ToWorker>(&mut *input) {
            Ok(Some(frame)) => {
                if let ToWorker::Result { paused_ms, .. } = &frame {
                    self.clock.raise_to(Duration::from_millis(*paused_ms));
                }
                Some(frame)
            }
            Ok(None) => None,
            Err(e) => {
                let _ = writeln!(
                    io::stderr(),
                    "toolgate worker: bad frame from the pool: {e}"
                );
                None
            }
        }
    }

    /// Block until the answer to call `id` arrives.
    fn wait_for(&self, id: u64) -> Result<Value, HostError> {
        let lost = || {
            HostError::new(
                PyExc::RuntimeError,
                "the connection to the tool host was lost",
            )
        };
        loop {
            if let Some(r) = self.parked.lock().map_err(|_| lost())?.remove(&id) {
                return r;
            }
            if self.closed.load(Ordering::Relaxed) {
                return Err(lost());
            }
            match self.recv() {
                Some(ToWorker::Result {
                    id: got, result, ..
                }) if got == id => return result,
                Some(ToWorker::Result {
                    id: got, result, ..
                }) => {
                    self.parked.lock().map_err(|_| lost())?.insert(got, result);
                }
                Some(ToWorker::Run { .. }) | None => {
                    self.closed.store(true, Ordering::Relaxed);
                    return Err(lost());
                }
            }
        }
    }
}

struct RemoteHost<'a> {
    link: &'a Link,
    tools: Vec<ToolDecl>,
    unavailable: Vec<(String, String)>,
    next_id: &'a AtomicU64,
}

/// Return `Pending` once, so sibling futures get polled before this one blocks.
async fn yield_once() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await;
}

#[async_trait]
impl ToolHost for RemoteHost<'_> {
    fn tool_names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name.clone()).collect()
    }

    fn param_names(&self, tool: &str) -> Option<Vec<String>> {
        self.tools
            .iter()
            .find(|t| t.name == tool)
            .and_then(|t| t.params.clone())
    }

    fn unavailable_tools(&self) -> Vec<(String, String)> {
        self.unavailable.clone()
    }

    fn pause_clock(&self) -> Option<Arc<PauseClock>> {
        Some(self.link.clock.clone())
    }

    async fn call(&self, name: &str, args: Map<String, Value>) -> Result<Value, HostError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let frame = FromWorker::Call {
            id,
            name: name.to_owned(),
            args,
        };
        if !self.link.send(&frame) {
            return Err(HostError::new(
                PyExc::RuntimeError,
                "the connection to the tool host was lost",
            ));
        }
        yield_once().await;
        self.link.wait_for(id)
    }
}

/// Virtual memory size of this process in bytes (`VmSize` in `/proc/self/status`).
fn address_space_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Cap this process's address space so an allocation past the budget fails (and the process
/// aborts with "memory allocation of … failed", which the pool reports as `MemoryError`).
#[cfg(unix)]
fn cap_address_space(bytes: u64) {
    let hard = rlimit::Resource::AS.get_hard().unwrap_or(rlimit::INFINITY);
    if let Err(e) = rlimit::Resource::AS.set(bytes.min(hard), hard) {
        let _ = writeln!(io::stderr(), "toolgate worker: RLIMIT_AS not set: {e}");
    }
}

#[cfg(not(unix))]
fn cap_address_space(_bytes: u64) {}

/// Tell the pool, as a kind over the protocol, when this worker panics, so the pool need not
/// read the panic text on stderr. The default hook still writes that text for a person.
fn announce_panics() {
    let Ok(out) = io::stdout().as_fd().try_clone_to_owned() else {
        return;
    };
    let out = Mutex::new(File::from(out));
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // `try_lock`: a panic while a frame is being written must not wait on itself.
        if let Ok(mut out) = out.try_lock() {
            let _ = write_frame_sync(
                &mut *out,
                &FromWorker::Crashed {
                    kind: CrashKind::Panic,
                },
            );
        }
        default(info);
    }));
}

/// The worker's main loop; returns the process exit code. Call it from the binary when it is
/// started as `toolgate __sandbox-worker` ([`crate::WORKER_SUBCOMMAND`]), before anything else
/// writes to stdout.
pub fn worker_main() -> i32 {
    let link = match Link::open() {
        Ok(l) => l,
        Err(e) => {
            let _ = writeln!(io::stderr(), "toolgate worker: cannot open its pipes: {e}");
            return 70;
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(io::stderr(), "toolgate worker: no runtime: {e}");
            return 70;
        }
    };
    announce_panics();
    let next_id = AtomicU64::new(0);
    // Measured before the restriction below, which leaves no way to read /proc.
    let mut baseline: Option<u64> = address_space_bytes();
    // No capability either, for good (toolgate may run as root): the worker needs none, and a
    // bug that reached the OS would find nothing to use. A worker that still held one would be
    // a worker running with privilege by accident: it refuses to run.
    // A session of its own, so the terminal toolgate runs in is not the worker's controlling
    // terminal (the pool starts it in toolgate's process group, never as a group leader).
    if let Err(e) = toolgate_confine::leave_terminal() {
        let _ = writeln!(
            io::stderr(),
            "toolgate worker: could not leave the caller's session, so it does not run: {e}"
        );
        return 70;
    }
    if let Err(e) = toolgate_confine::drop_privileges() {
        let _ = writeln!(
            io::stderr(),
            "toolgate worker: could not drop its capabilities, so it does not run: {e}"
        );
        return 70;
    }
    // The interpreter has no OS access of its own (every file, process and network operation is
    // a host tool call, answered by the parent). Should a bug in it ever reach the OS anyway,
    // the kernel refuses: Landlock on this single thread — the whole process, since the worker
    // never starts another — allows no file but `/dev/urandom` and the time zone, and no TCP.
    // Only the pipes to the parent, opened above, stay usable.
    match toolgate_confine::restrict_this_thread_to::<std::fs::File>(&[]) {
        Ok(true) => {}
        Ok(false) => {
            let _ = writeln!(
                io::stderr(),
                "toolgate worker: Landlock is unavailable; the interpreter runs without a kernel file barrier"
            );
        }
        Err(e) => {
            let _ = writeln!(io::stderr(), "toolgate worker: not confined: {e}");
        }
    }
    loop {
        let (req, tools, unavailable) = match link.recv() {
            Some(ToWorker::Run {
                req,
                tools,
                unavailable,
            }) => (req, tools, unavailable),
            // A late answer to a call of a finished program: nobody waits for it.
            Some(ToWorker::Result { .. }) => continue,
            None => return 0,
        };
        // Measured at the first job, once the runtime and buffers exist.
        let base = *baseline.get_or_insert_with(|| address_space_bytes().unwrap_or(0));
        if base > 0 {
            cap_address_space(
                base.saturating_add(req.limits.max_memory_bytes)
                    .saturating_add(ADDRESS_SPACE_HEADROOM),
            );
        }
        if let Ok(mut parked) = link.parked.lock() {
            parked.clear();
        }
        link.clock.reset();
        let host = RemoteHost {
            link: &link,
            tools,
            unavailable,
            next_id: &next_id,
        };
        let envelope = rt.block_on(engine::run(req, &host));
        if !link.send(&FromWorker::Done { envelope }) || link.closed.load(Ordering::Relaxed) {
            return 0;
        }
    }
}

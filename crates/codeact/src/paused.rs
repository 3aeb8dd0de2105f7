//! A program that stops at a call needing a person and goes on from exactly there.
//!
//! [`crate::Runtime::start`] runs a program on its own task with a confirmer that does not
//! answer by itself: a call that needs a confirmation sends its preview out and waits. The
//! interpreter stays suspended at that call — in its worker process, or in this process — so
//! the calls before it are never made again, and [`Progress::Paused`] hands the question to
//! whoever can ask (a terminal, an MCP elicitation now, or a later `run_code` round with a
//! token or MRTR state). [`Paused::resume`] answers it: approved, the call runs; declined, it
//! raises `PermissionError` in the program, which may handle it. A program may pause many
//! times. Dropping a [`Paused`] (or a [`Run`]) stops the program and frees its worker: that is
//! how an unanswered pause expires.
//!
//! Measured choice (benches/README.md, `pause_resume`): keeping the suspended worker costs one
//! idle process per paused run and nothing to resume; serialising monty's snapshot would free
//! the process but re-create it (and its tool host) at every resume.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};
use toolgate_core::CallDigest;
use toolgate_core::flow::{Answer, Confirmer};
use toolgate_core::preview::Preview;
use toolgate_sandbox::{CallLog, Envelope, PauseClock, RegistryHost};

/// The question a paused program asks.
#[derive(Debug, Clone)]
pub struct Asked {
    /// The plain-language preview of the call (tool, target, every argument).
    pub preview: Preview,
    /// The digest of the exact call (tool, validated arguments, context).
    pub digest: CallDigest,
    /// What the program's calls did before this one.
    pub already: CallLog,
}

struct Question {
    preview: Preview,
    digest: CallDigest,
    answer: oneshot::Sender<Answer>,
}

/// The confirmer of a started run: sends each question to the run's owner and waits, timing
/// the wait on the run's [`PauseClock`] so no deadline counts it.
pub(crate) struct Pausing {
    questions: mpsc::UnboundedSender<Question>,
    clock: Arc<PauseClock>,
}

impl Pausing {
    pub(crate) fn new(clock: Arc<PauseClock>) -> (Self, QuestionsIn) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Self {
                questions: tx,
                clock,
            },
            QuestionsIn(rx),
        )
    }
}

/// The receiving end of a run's questions.
pub(crate) struct QuestionsIn(mpsc::UnboundedReceiver<Question>);

#[async_trait]
impl Confirmer for Pausing {
    async fn confirm(&self, preview: &Preview) -> Answer {
        let digest = CallDigest::of(
            "unbound-confirmation",
            &serde_json::Map::new(),
            &serde_json::json!({"title": preview.title, "body": preview.body}),
        );
        self.confirm_call(preview, &digest).await
    }

    async fn confirm_call(&self, preview: &Preview, digest: &CallDigest) -> Answer {
        let _waiting = self.clock.waiting();
        let (tx, rx) = oneshot::channel();
        let question = Question {
            preview: preview.clone(),
            digest: digest.clone(),
            answer: tx,
        };
        if self.questions.send(question).is_err() {
            // Nobody owns the run any more; it is being stopped.
            return Answer::Decline;
        }
        rx.await.unwrap_or(Answer::Decline)
    }
}

/// A task aborted when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<Envelope>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A started program. [`Run::next`] waits until it ends or asks.
pub struct Run {
    questions: QuestionsIn,
    /// The program's task, or how it ended before one could start.
    task: Result<AbortOnDrop, Option<Envelope>>,
    /// The program's host (its call log); `None` when the program could not start.
    host: Option<Arc<RegistryHost>>,
}

/// Where a started program stands.
pub enum Progress {
    /// It ended (the envelope says how).
    Done(Envelope),
    /// It waits at a call for a person's answer.
    Paused(Paused),
}

/// A program stopped at a call that needs a person's answer. Dropping it stops the program.
pub struct Paused {
    asked: Asked,
    answer: oneshot::Sender<Answer>,
    run: Run,
}

impl Run {
    pub(crate) fn new(
        questions: QuestionsIn,
        task: tokio::task::JoinHandle<Envelope>,
        host: Option<Arc<RegistryHost>>,
    ) -> Self {
        Self {
            questions,
            task: Ok(AbortOnDrop(task)),
            host,
        }
    }

    /// A run that ended before it started.
    pub(crate) fn ended(questions: QuestionsIn, envelope: Envelope) -> Self {
        Self {
            questions,
            task: Err(Some(envelope)),
            host: None,
        }
    }

    /// Wait until the program ends or asks.
    pub async fn next(mut self) -> Progress {
        let task = match &mut self.task {
            Ok(task) => task,
            Err(ended) => {
                return Progress::Done(ended.take().unwrap_or_else(|| {
                    crate::setup_failure("the program's run was already reported")
                }));
            }
        };
        tokio::select! {
            biased;
            Some(q) = self.questions.0.recv() => {
                let asked = Asked {
                    preview: q.preview,
                    digest: q.digest,
                    already: self.host.as_ref().map(|h| h.calls_so_far()).unwrap_or_default(),
                };
                Progress::Paused(Paused { asked, answer: q.answer, run: self })
            }
            ended = &mut task.0 => Progress::Done(ended.unwrap_or_else(|e| {
                crate::setup_failure(&format!("the program's task ended abnormally: {e}"))
            })),
        }
    }
}

impl Paused {
    pub fn asked(&self) -> &Asked {
        &self.asked
    }

    /// Answer the question; the program goes on from the paused call (approved: the call runs;
    /// declined: it raises `PermissionError` there) until it ends or asks again.
    pub async fn resume(self, answer: Answer) -> Progress {
        // A send fails only when the program is already gone; `next` then reports its end.
        let _ = self.answer.send(answer);
        self.run.next().await
    }
}

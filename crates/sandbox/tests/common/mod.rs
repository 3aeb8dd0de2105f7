//! A fake tool host for the sandbox tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolgate_sandbox::{HostError, PyExc, ToolHost};

/// Tools:
/// - `echo(**kw)` returns its keyword arguments as a dict;
/// - `ident(value)` returns `value` unchanged (and records it);
/// - `fail(kind, message)` raises the named Python exception type;
/// - `sleep(ms)` waits `ms` milliseconds, then returns `ms`;
/// - `count()` returns how many calls the host has seen.
#[derive(Default)]
pub struct FakeHost {
    pub calls: AtomicUsize,
    pub seen: Mutex<Vec<(String, Map<String, Value>)>>,
}

impl FakeHost {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    pub fn last_args(&self) -> Map<String, Value> {
        self.seen
            .lock()
            .unwrap()
            .last()
            .map(|(_, a)| a.clone())
            .unwrap_or_default()
    }
}

pub fn kind(name: &str) -> Option<PyExc> {
    Some(match name {
        "FileNotFoundError" => PyExc::FileNotFoundError,
        "PermissionError" => PyExc::PermissionError,
        "ValueError" => PyExc::ValueError,
        "TimeoutError" => PyExc::TimeoutError,
        "RuntimeError" => PyExc::RuntimeError,
        "NameError" => PyExc::NameError,
        "KeyError" => PyExc::KeyError,
        "TypeError" => PyExc::TypeError,
        _ => return None,
    })
}

#[async_trait]
impl ToolHost for FakeHost {
    fn tool_names(&self) -> Vec<String> {
        ["echo", "ident", "fail", "sleep", "count"]
            .map(String::from)
            .to_vec()
    }

    fn param_names(&self, tool: &str) -> Option<Vec<String>> {
        match tool {
            "ident" => Some(vec!["value".into()]),
            "fail" => Some(vec!["kind".into(), "message".into()]),
            "sleep" => Some(vec!["ms".into()]),
            _ => None,
        }
    }

    async fn call(&self, name: &str, args: Map<String, Value>) -> Result<Value, HostError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        self.seen
            .lock()
            .unwrap()
            .push((name.to_owned(), args.clone()));
        match name {
            "echo" => Ok(Value::Object(args)),
            "ident" => Ok(args.get("value").cloned().unwrap_or(Value::Null)),
            "fail" => {
                let k = args
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("RuntimeError");
                let msg = args
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("failed");
                Err(HostError::new(kind(k).unwrap_or(PyExc::RuntimeError), msg))
            }
            "sleep" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(json!(ms))
            }
            "count" => Ok(json!(n)),
            other => Err(HostError::new(PyExc::NameError, format!("no tool {other}"))),
        }
    }
}

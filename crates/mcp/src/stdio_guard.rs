//! The stdio line guard: lines too long or too deeply nested are answered, not dropped in
//! silence.
//!
//! rmcp's stdio transport drops a line over its length cap (logging it) and ignores a line
//! serde cannot parse — nesting deeper than serde_json's recursion limit included — so the
//! client waited forever for an answer to a request that was never going to run. [`LineGuard`]
//! sits under rmcp's reader: it passes each line through whole when it is within
//! [`MAX_STDIO_LINE`](crate::transport::MAX_STDIO_LINE) bytes and [`MAX_STDIO_DEPTH`] levels, and
//! otherwise drops it (never buffering more than the cap) and reports it to [`AnswerDropped`],
//! the transport above rmcp's, which answers with a JSON-RPC `-32600 Invalid Request` error
//! carrying the request's `id` when a cheap scan of the line found one at the top level (a
//! number or a short string), else without an id (MCP 2026-07-28 §Error Responses: omitted when
//! the server cannot read it).

use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::RoleServer;
use rmcp::model::{ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc;

/// Deepest nesting of arrays and objects accepted in one message. serde_json refuses 128
/// levels (and rmcp then drops the line without an answer); real MCP messages — GeoJSON
/// coordinates inside tool arguments included — stay under 20.
pub const MAX_STDIO_DEPTH: usize = 100;

/// Longest `id` text recovered from a dropped line (ids are numbers or short strings).
const MAX_ID_BYTES: usize = 256;

/// A line that was dropped, and why.
#[derive(Debug, Clone, PartialEq)]
pub enum Dropped {
    TooLong {
        id: Option<RequestId>,
        bytes: usize,
        limit: usize,
    },
    TooDeep {
        id: Option<RequestId>,
        limit: usize,
    },
}

impl Dropped {
    /// The JSON-RPC error answering it.
    pub fn answer(&self) -> ServerJsonRpcMessage {
        let (id, message) = match self {
            Dropped::TooLong { id, bytes, limit } => (
                id,
                format!(
                    "message too long ({bytes} bytes, limit {limit}): it was dropped unread and nothing ran. Send smaller messages (large inputs belong in files the tools read)."
                ),
            ),
            Dropped::TooDeep { id, limit } => (
                id,
                format!(
                    "message too deeply nested (more than {limit} levels of arrays and objects): it was dropped and nothing ran."
                ),
            ),
        };
        ServerJsonRpcMessage::error(ErrorData::invalid_request(message, None), id.clone())
    }
}

/// A one-pass scan of a line as its bytes go by: nesting depth, and the raw text of the
/// top-level `"id"` value. It tolerates anything (a line need not be JSON) and allocates at
/// most [`MAX_ID_BYTES`].
#[derive(Default)]
struct Scan {
    depth: usize,
    max_depth: usize,
    in_str: bool,
    esc: bool,
    started: bool,
    top_object: bool,
    /// At depth 1 of the top object, the next string is a key.
    expect_key: bool,
    in_key: bool,
    key: [u8; 2],
    key_len: usize,
    key_is_id: bool,
    capturing: bool,
    id_raw: Vec<u8>,
    id_done: bool,
    id_bad: bool,
}

impl Scan {
    fn feed(&mut self, b: u8) {
        if self.capturing {
            if self.id_raw.len() < MAX_ID_BYTES {
                self.id_raw.push(b);
            } else {
                self.id_bad = true;
            }
        }
        if self.in_str {
            if self.esc {
                self.esc = false;
                self.key_len = usize::MAX;
            } else if b == b'\\' {
                self.esc = true;
            } else if b == b'"' {
                self.in_str = false;
                if self.in_key {
                    self.in_key = false;
                    self.key_is_id = self.key_len == 2 && &self.key == b"id";
                }
            } else if self.in_key && self.key_len != usize::MAX {
                if self.key_len < 2 {
                    self.key[self.key_len] = b;
                }
                self.key_len += 1;
            }
            return;
        }
        match b {
            b'"' => {
                self.in_str = true;
                if self.depth == 1 && self.top_object && self.expect_key {
                    self.in_key = true;
                    self.key_len = 0;
                    self.expect_key = false;
                }
            }
            b'{' | b'[' => {
                if !self.started {
                    self.started = true;
                    self.top_object = b == b'{';
                }
                self.depth += 1;
                self.max_depth = self.max_depth.max(self.depth);
                if self.depth == 1 && self.top_object {
                    self.expect_key = true;
                }
            }
            b'}' | b']' => {
                if self.depth == 1 && self.capturing {
                    self.finish_id();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 && self.top_object => {
                if self.key_is_id && !self.id_done {
                    self.capturing = true;
                    self.id_raw.clear();
                }
                self.key_is_id = false;
            }
            b',' if self.depth == 1 && self.top_object => {
                if self.capturing {
                    self.finish_id();
                }
                self.expect_key = true;
                self.key_is_id = false;
            }
            _ => {}
        }
    }

    fn finish_id(&mut self) {
        self.capturing = false;
        self.id_done = true;
        // The `,` or `}` that ended the value.
        self.id_raw.pop();
    }

    fn id(&self) -> Option<RequestId> {
        if !self.id_done || self.id_bad {
            return None;
        }
        serde_json::from_slice(self.id_raw.trim_ascii()).ok()
    }
}

/// An [`AsyncRead`] that hands on whole lines within the caps and reports the others (see the
/// module docs). Lines are handed on with their `\n`; a trailing line without one at EOF is
/// dropped, as rmcp does.
pub struct LineGuard<R> {
    inner: R,
    chunk: Box<[u8]>,
    chunk_pos: usize,
    chunk_len: usize,
    line: Vec<u8>,
    line_bytes: usize,
    oversized: bool,
    scan: Scan,
    out: Vec<u8>,
    out_pos: usize,
    eof: bool,
    max_line: usize,
    max_depth: usize,
    dropped: mpsc::UnboundedSender<Dropped>,
}

impl<R> LineGuard<R> {
    pub fn new(inner: R, max_line: usize, dropped: mpsc::UnboundedSender<Dropped>) -> Self {
        Self {
            inner,
            chunk: vec![0u8; 64 * 1024].into_boxed_slice(),
            chunk_pos: 0,
            chunk_len: 0,
            line: Vec::new(),
            line_bytes: 0,
            oversized: false,
            scan: Scan::default(),
            out: Vec::new(),
            out_pos: 0,
            eof: false,
            max_line,
            max_depth: MAX_STDIO_DEPTH,
            dropped,
        }
    }

    /// Take in what is buffered up to the end of one line; true when a line ended.
    fn take_in(&mut self) -> bool {
        let avail = &self.chunk[self.chunk_pos..self.chunk_len];
        let newline = avail.iter().position(|b| *b == b'\n');
        let take = newline.map_or(avail.len(), |i| i + 1);
        let part = &avail[..take];
        for &b in part {
            self.scan.feed(b);
        }
        self.line_bytes += take;
        if !self.oversized {
            // The newline is not part of the message: only the content counts against the cap.
            let content = self.line_bytes - usize::from(newline.is_some());
            if content > self.max_line {
                self.oversized = true;
                self.line = Vec::new();
            } else {
                self.line.extend_from_slice(part);
            }
        }
        self.chunk_pos += take;
        newline.is_some()
    }

    /// A line ended: hand it on, or report it.
    fn end_line(&mut self) {
        let scan = std::mem::take(&mut self.scan);
        let content = self.line_bytes.saturating_sub(1);
        let verdict = if self.oversized {
            Some(Dropped::TooLong {
                id: scan.id(),
                bytes: content,
                limit: self.max_line,
            })
        } else if scan.max_depth > self.max_depth {
            Some(Dropped::TooDeep {
                id: scan.id(),
                limit: self.max_depth,
            })
        } else {
            None
        };
        match verdict {
            Some(d) => {
                tracing::warn!(?d, "dropped an MCP stdio message; answering with an error");
                let _ = self.dropped.send(d);
                self.line.clear();
            }
            None => {
                self.out = std::mem::take(&mut self.line);
                self.out_pos = 0;
            }
        }
        self.line_bytes = 0;
        self.oversized = false;
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineGuard<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.out_pos < this.out.len() {
                let n = (this.out.len() - this.out_pos).min(dst.remaining());
                dst.put_slice(&this.out[this.out_pos..this.out_pos + n]);
                this.out_pos += n;
                if this.out_pos == this.out.len() {
                    this.out.clear();
                    this.out_pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.chunk_pos < this.chunk_len {
                if this.take_in() {
                    this.end_line();
                }
                continue;
            }
            if this.eof {
                if this.oversized {
                    // The client closed in the middle of an oversized line: still say so.
                    let scan = std::mem::take(&mut this.scan);
                    let _ = this.dropped.send(Dropped::TooLong {
                        id: scan.id(),
                        bytes: this.line_bytes,
                        limit: this.max_line,
                    });
                    this.oversized = false;
                    this.line_bytes = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut buf = ReadBuf::new(&mut this.chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let n = buf.filled().len();
                    this.chunk_pos = 0;
                    this.chunk_len = n;
                    if n == 0 {
                        this.eof = true;
                    }
                }
            }
        }
    }
}

/// The transport over rmcp's stdio transport that answers the lines [`LineGuard`] dropped.
pub struct AnswerDropped<T> {
    inner: T,
    dropped: mpsc::UnboundedReceiver<Dropped>,
}

impl<T> AnswerDropped<T> {
    pub fn new(inner: T, dropped: mpsc::UnboundedReceiver<Dropped>) -> Self {
        Self { inner, dropped }
    }
}

impl<T> AnswerDropped<T>
where
    T: Transport<RoleServer>,
{
    async fn answer(&mut self, d: &Dropped) {
        if let Err(e) = self.inner.send(d.answer()).await {
            tracing::warn!(error = %e, "could not answer a dropped MCP message");
        }
    }
}

impl<T> Transport<RoleServer> for AnswerDropped<T>
where
    T: Transport<RoleServer>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Ok(d) = self.dropped.try_recv() {
                self.answer(&d).await;
                continue;
            }
            // rmcp's receive is cancellation-safe (it keeps a partial line across calls), so
            // an answer to send may interrupt it.
            let d = tokio::select! {
                biased;
                message = self.inner.receive() => {
                    if message.is_none() {
                        // The client closed: answer what was dropped before its last line.
                        while let Ok(d) = self.dropped.try_recv() {
                            self.answer(&d).await;
                        }
                    }
                    return message;
                }
                Some(d) = self.dropped.recv() => d,
            };
            self.answer(&d).await;
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn scan(line: &str) -> Scan {
        let mut s = Scan::default();
        for b in line.bytes() {
            s.feed(b);
        }
        s
    }

    #[test]
    fn finds_the_top_level_id_wherever_it_is() {
        let n = |v: i64| Some(RequestId::Number(v));
        assert_eq!(scan(r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#).id(), n(7));
        assert_eq!(
            scan(r#"{"method":"x","params":{"id":1},"id": 8 }"#).id(),
            n(8)
        );
        assert_eq!(
            scan(r#"{"id":"a,}\"b","method":"x"}"#).id(),
            Some(RequestId::String("a,}\"b".into()))
        );
        // nested ids, keys that only look like it, objects as ids, no id, not JSON
        assert_eq!(scan(r#"{"params":{"id":1}}"#).id(), None);
        assert_eq!(scan(r#"{"i\u0064":3,"x":"id"}"#).id(), None);
        assert_eq!(scan(r#"{"id":{"a":1}}"#).id(), None);
        assert_eq!(scan(r#"[{"id":1}]"#).id(), None);
        assert_eq!(scan("garbage \"id\": 4").id(), None);
        assert_eq!(
            scan(&format!("{}{}", "[".repeat(200), "]".repeat(200))).max_depth,
            200
        );
    }

    async fn guarded(input: Vec<u8>, max_line: usize) -> (String, Vec<Dropped>) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut g = LineGuard::new(&input[..], max_line, tx);
        let mut out = String::new();
        g.read_to_string(&mut out).await.unwrap();
        drop(g);
        let mut dropped = Vec::new();
        while let Some(d) = rx.recv().await {
            dropped.push(d);
        }
        (out, dropped)
    }

    #[tokio::test]
    async fn passes_lines_within_the_caps_and_reports_the_others() {
        let long = format!(r#"{{"id":5,"x":"{}"}}"#, "a".repeat(200_000));
        let deep = format!(
            r#"{{"params":{}1{},"id":6}}"#,
            "[".repeat(150),
            "]".repeat(150)
        );
        let input = format!("{{\"id\":1}}\n{long}\n{{\"id\":2}}\n{deep}\n{{\"id\":3}}\n");
        let (out, dropped) = guarded(input.into_bytes(), 100_000).await;
        assert_eq!(out, "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n");
        assert_eq!(
            dropped,
            vec![
                Dropped::TooLong {
                    id: Some(RequestId::Number(5)),
                    bytes: long.len(),
                    limit: 100_000
                },
                Dropped::TooDeep {
                    id: Some(RequestId::Number(6)),
                    limit: MAX_STDIO_DEPTH
                },
            ]
        );
        let answer = serde_json::to_value(dropped[0].answer()).unwrap();
        assert_eq!(answer["id"], 5);
        assert_eq!(answer["error"]["code"], -32600);
        let msg = answer["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("too long") && msg.contains("limit 100000"),
            "{msg}"
        );
    }

    #[tokio::test]
    async fn a_line_exactly_at_the_cap_passes() {
        let line = format!(r#"{{"id":1,"x":"{}"}}"#, "a".repeat(50));
        let (out, dropped) = guarded(format!("{line}\n").into_bytes(), line.len()).await;
        assert_eq!(out, format!("{line}\n"));
        assert!(dropped.is_empty());
        let (out, dropped) = guarded(format!("{line}\n").into_bytes(), line.len() - 1).await;
        assert_eq!(out, "");
        assert_eq!(dropped.len(), 1);
    }
}

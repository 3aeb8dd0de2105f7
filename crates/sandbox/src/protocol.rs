//! Frames between a pool and its worker processes: a 4-byte big-endian length, then that many
//! bytes of JSON. Every frame from a worker is untrusted: length-checked before anything is
//! allocated, then parsed into a closed set of message types.

use std::io::{self, Read, Write};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::envelope::Envelope;
use crate::host::HostError;
use crate::limits::ExecRequest;

/// Largest frame either side accepts (64 MiB: a tool result or argument may carry a file).
pub const MAX_FRAME: usize = 64 << 20;

/// One tool a worker's program may call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDecl {
    pub name: String,
    pub params: Option<Vec<String>>,
}

/// Pool → worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToWorker {
    /// Run one program.
    Run {
        req: ExecRequest,
        tools: Vec<ToolDecl>,
        /// Names the program may not call, with the reason ([`crate::ToolHost::unavailable_tools`]).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unavailable: Vec<(String, String)>,
    },
    /// The answer to a tool call.
    Result {
        id: u64,
        result: Result<Value, HostError>,
        /// All the time this run has waited for a person so far, in milliseconds: the worker
        /// moves its wall-clock deadline back by it ([`crate::PauseClock`]).
        #[serde(default, skip_serializing_if = "is_zero")]
        paused_ms: u64,
    },
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Worker → pool.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromWorker {
    /// The program calls a tool.
    Call {
        id: u64,
        name: String,
        args: Map<String, Value>,
    },
    /// The program ended.
    Done { envelope: Envelope },
    /// The worker is about to die: what went wrong, as a kind the pool reports without reading
    /// the worker's stderr. Sent at most once, just before the process ends.
    Crashed { kind: CrashKind },
}

/// Why a worker died, as the worker itself knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CrashKind {
    /// The worker's own code panicked (a bug in toolgate or the interpreter, not the program).
    Panic,
}

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("i/o: {0}")]
    Io(#[from] io::Error),
    #[error("frame of {0} bytes exceeds the {MAX_FRAME}-byte limit")]
    TooLarge(usize),
    #[error("malformed frame: {0}")]
    Malformed(#[from] serde_json::Error),
}

fn encode(msg: &impl Serialize) -> Result<Vec<u8>, FrameError> {
    let mut buf = vec![0u8; 4];
    serde_json::to_writer(&mut buf, msg)?;
    let len = buf.len() - 4;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    let len = u32::try_from(len).map_err(|_| FrameError::TooLarge(len))?;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf)
}

fn checked_len(header: [u8; 4]) -> Result<usize, FrameError> {
    let len = u32::from_be_bytes(header) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    Ok(len)
}

/// Write one frame and flush.
pub fn write_frame_sync(w: &mut impl Write, msg: &impl Serialize) -> Result<(), FrameError> {
    let buf = encode(msg)?;
    w.write_all(&buf)?;
    w.flush()?;
    Ok(())
}

/// Read one frame; `Ok(None)` at a clean end of stream.
pub fn read_frame_sync<T: DeserializeOwned>(r: &mut impl Read) -> Result<Option<T>, FrameError> {
    let mut header = [0u8; 4];
    match r.read_exact(&mut header) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let len = checked_len(header)?;
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    Ok(Some(serde_json::from_slice(&body)?))
}

/// Write one frame and flush.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    w: &mut W,
    msg: &impl Serialize,
) -> Result<(), FrameError> {
    let buf = encode(msg)?;
    w.write_all(&buf).await?;
    w.flush().await?;
    Ok(())
}

/// Read one frame; `Ok(None)` at a clean end of stream. Not cancel-safe: read from one task.
pub async fn read_frame<R: AsyncRead + Unpin, T: DeserializeOwned>(
    r: &mut R,
) -> Result<Option<T>, FrameError> {
    let mut header = [0u8; 4];
    match r.read_exact(&mut header).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let len = checked_len(header)?;
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).await?;
    Ok(Some(serde_json::from_slice(&body)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::PyExc;
    use serde_json::json;

    #[test]
    fn frames_round_trip_and_bad_frames_are_refused() {
        let mut buf = Vec::new();
        let msg = ToWorker::Result {
            id: 7,
            result: Err(HostError::new(PyExc::KeyError, "k")),
            paused_ms: 1500,
        };
        write_frame_sync(&mut buf, &msg).unwrap();
        let back: ToWorker = read_frame_sync(&mut buf.as_slice()).unwrap().unwrap();
        assert!(
            matches!(back, ToWorker::Result { id: 7, result: Err(e), paused_ms: 1500 } if e.py_type == PyExc::KeyError)
        );
        // clean EOF
        assert!(
            read_frame_sync::<ToWorker>(&mut [].as_slice())
                .unwrap()
                .is_none()
        );
        // oversized length: refused before allocating
        let huge = (u32::MAX).to_be_bytes();
        assert!(matches!(
            read_frame_sync::<ToWorker>(&mut huge.as_slice()),
            Err(FrameError::TooLarge(_))
        ));
        // truncated body
        let mut short = 10u32.to_be_bytes().to_vec();
        short.extend_from_slice(b"{}");
        assert!(read_frame_sync::<ToWorker>(&mut short.as_slice()).is_err());
        // valid JSON, wrong shape
        let mut wrong = Vec::new();
        write_frame_sync(&mut wrong, &json!({"type": "shell", "cmd": "rm"})).unwrap();
        assert!(matches!(
            read_frame_sync::<FromWorker>(&mut wrong.as_slice()),
            Err(FrameError::Malformed(_))
        ));
    }
}

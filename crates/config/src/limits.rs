//! What one CodeAct program may use: the limits the configuration layers set and the sandbox
//! enforces (`toolgate_sandbox` carries them in its `ExecRequest`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Default wall-clock budget of one program, host tool calls included.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default memory budget (256 MiB).
pub const DEFAULT_MAX_MEMORY_BYTES: u64 = 256 * 1024 * 1024;
/// Default Python call depth.
pub const DEFAULT_MAX_RECURSION_DEPTH: u32 = 200;
/// Default number of tool calls one program may make.
pub const DEFAULT_MAX_TOOL_CALLS: u32 = 1000;
/// Default cap on captured stdout + stderr (64 KiB).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// Resource limits of one program. Every limit is on by default; none can be switched off, only
/// raised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Wall-clock budget for the whole program, time spent in tool calls included. Enforced by
    /// the host (monty's own clock stops while a tool runs).
    #[serde(with = "duration_ms")]
    pub timeout: Duration,
    /// Memory budget in bytes (see `toolgate_sandbox`'s crate docs for what enforces it where).
    pub max_memory_bytes: u64,
    /// Maximum Python call depth; deeper calls raise a catchable `RecursionError`.
    pub max_recursion_depth: u32,
    /// Maximum number of tool calls; the next one ends the program with an uncatchable
    /// `RuntimeError`.
    pub max_tool_calls: u32,
    /// Cap on captured stdout + stderr together; the rest is dropped and
    /// the sandbox's `TRUNCATION_MARKER` marks the cut.
    pub max_output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
            max_recursion_depth: DEFAULT_MAX_RECURSION_DEPTH,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        }
    }
}

/// Why a size such as `256M` cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("invalid size \"{0}\": expected a number such as 256M")]
    NotANumber(String),
    #[error("invalid size unit \"{unit}\" in \"{text}\": use B, K, M or G")]
    Unit { unit: String, text: String },
    #[error("invalid size \"{0}\": out of range")]
    OutOfRange(String),
}

/// Parse a size such as `256M`, `1G`, `512k`, `64MiB` or `1048576` (bytes). Suffixes are binary
/// (`k` = 1024).
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| SizeError::NotANumber(text.to_owned()))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => {
            return Err(SizeError::Unit {
                unit: other.to_owned(),
                text: text.to_owned(),
            });
        }
    };
    let bytes = value * mult as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(SizeError::OutOfRange(text.to_owned()));
    }
    Ok(bytes as u64)
}

mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("1.5K"), Ok(1536));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("10X").is_err());
        assert!(parse_size("0").is_err());
    }

    #[test]
    fn limits_round_trip_through_json() {
        let l = Limits {
            timeout: Duration::from_millis(1500),
            ..Limits::default()
        };
        let v = serde_json::to_value(&l).unwrap();
        assert_eq!(v["timeout"], 1500);
        let back: Limits = serde_json::from_value(v).unwrap();
        assert_eq!(back, l);
    }
}

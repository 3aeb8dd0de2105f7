//! A stable digest of one call, so an approval can be bound to exactly the call it approved.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// SHA-256 over a canonical encoding (object keys sorted at every depth) of the tool id, the
/// parameters and a caller-chosen context (plot id and version, target ids). Two calls that
/// differ in any of these get different digests.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CallDigest(String);

impl CallDigest {
    pub fn of(tool_id: &str, params: &Map<String, Value>, context: &Value) -> Self {
        let mut buf = String::with_capacity(128);
        buf.push_str(tool_id);
        buf.push('\0');
        canonical(&Value::Object(params.clone()), &mut buf);
        buf.push('\0');
        canonical(context, &mut buf);
        let hash = Sha256::digest(buf.as_bytes());
        let mut hex = String::with_capacity(64);
        for b in hash {
            hex.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
            hex.push(char::from_digit(u32::from(b & 0xf), 16).unwrap_or('0'));
        }
        Self(hex)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for CallDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Serialise with sorted keys regardless of the map's insertion order (serde_json's
/// `preserve_order` is on in this workspace, so `to_string` alone would not be canonical).
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_matter_values_do() {
        let a = json!({"a": 1, "b": {"x": 1, "y": 2}});
        let b = json!({"b": {"y": 2, "x": 1}, "a": 1});
        let ctx = json!({"plot": "p", "version": 3});
        let da = CallDigest::of("t", a.as_object().unwrap(), &ctx);
        assert_eq!(da, CallDigest::of("t", b.as_object().unwrap(), &ctx));
        assert_ne!(da, CallDigest::of("u", a.as_object().unwrap(), &ctx));
        assert_ne!(
            da,
            CallDigest::of(
                "t",
                a.as_object().unwrap(),
                &json!({"plot": "p", "version": 4})
            )
        );
        assert_eq!(da.as_str().len(), 64);
    }
}

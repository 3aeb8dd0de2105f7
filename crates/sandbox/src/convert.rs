//! JSON ⇄ Python values at the tool boundary. Lossless both ways for JSON data: `None`, `bool`,
//! `int` (within i64 ∪ u64), finite `float`, `str`, `list`/`tuple` (→ array) and `dict` with
//! `str` keys (→ object, order kept). Anything else is a `TypeError` naming the type.

use monty_types::{MontyObject, ObjectRef};
use num_bigint::BigInt;
use serde_json::{Map, Number, Value};

/// How deep a value may nest in either direction. Below serde_json's own parse limit (128), so
/// whatever crosses can also cross a worker pipe, and shallow enough that the recursive
/// conversion cannot exhaust a thread's stack.
pub const MAX_DEPTH: usize = 100;

/// A value that cannot cross the sandbox boundary (raised in the program as `TypeError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    #[error("value nested deeper than {MAX_DEPTH} levels cannot cross the sandbox boundary")]
    TooDeep,
    #[error(
        "values of type '{0}' cannot cross the sandbox boundary; use None, bool, int, float, str, list, tuple or dict with str keys"
    )]
    Unsupported(String),
    #[error("float {0} is not JSON data (only finite floats are)")]
    NonFiniteFloat(String),
    #[error("dict keys must be str to cross the sandbox boundary, found a key of type '{0}'")]
    NonStrKey(String),
    #[error("int {0} is out of range for JSON data (it must fit in a 64-bit integer)")]
    IntOutOfRange(String),
}

/// JSON → Python.
pub fn json_to_monty(value: &Value) -> Result<MontyObject, ConvertError> {
    to_monty(value, 0)
}

fn to_monty(value: &Value, depth: usize) -> Result<MontyObject, ConvertError> {
    if depth > MAX_DEPTH {
        return Err(ConvertError::TooDeep);
    }
    Ok(match value {
        Value::Null => MontyObject::none(),
        Value::Bool(b) => MontyObject::bool(*b),
        Value::Number(n) => number_to_monty(n),
        Value::String(s) => MontyObject::string(s.as_str()),
        Value::Array(items) => MontyObject::list(
            items
                .iter()
                .map(|v| to_monty(v, depth + 1))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Value::Object(map) => MontyObject::dict(
            map.iter()
                .map(|(k, v)| Ok((MontyObject::string(k.as_str()), to_monty(v, depth + 1)?)))
                .collect::<Result<Vec<_>, ConvertError>>()?,
        ),
    })
}

fn number_to_monty(n: &Number) -> MontyObject {
    if let Some(i) = n.as_i64() {
        MontyObject::int(i)
    } else if let Some(u) = n.as_u64() {
        MontyObject::bigint(BigInt::from(u))
    } else {
        MontyObject::float(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// Python → JSON, strictly: the error is a `TypeError` message naming the offending type.
pub fn monty_to_json(obj: ObjectRef<'_>) -> Result<Value, ConvertError> {
    to_json(obj, 0)
}

/// Python → JSON for a program's return value: what JSON cannot hold comes back as the value's
/// `repr()` string.
pub fn return_value_to_json(obj: &MontyObject) -> Value {
    monty_to_json(obj.as_ref()).unwrap_or_else(|_| Value::String(obj.py_repr()))
}

fn to_json(obj: ObjectRef<'_>, depth: usize) -> Result<Value, ConvertError> {
    if depth > MAX_DEPTH {
        return Err(ConvertError::TooDeep);
    }
    let type_name = obj.type_name();
    match type_name {
        "NoneType" => Ok(Value::Null),
        "bool" => obj
            .as_bool()
            .map(Value::Bool)
            .ok_or_else(|| unsupported(type_name)),
        "int" => int_to_json(obj),
        "float" => {
            let f = obj.as_float().ok_or_else(|| unsupported(type_name))?;
            Number::from_f64(f)
                .map(Value::Number)
                .ok_or_else(|| ConvertError::NonFiniteFloat(obj.py_repr()))
        }
        "str" => obj
            .as_str()
            .map(|s| Value::String(s.to_owned()))
            .ok_or_else(|| unsupported(type_name)),
        "list" | "tuple" => {
            let items = obj.items().ok_or_else(|| unsupported(type_name))?;
            items
                .into_iter()
                .map(|i| to_json(i, depth + 1))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        }
        "dict" => {
            let pairs = obj.pairs().ok_or_else(|| unsupported(type_name))?;
            let mut map = Map::with_capacity(pairs.len());
            for (k, v) in pairs {
                let Some(key) = k.as_str().filter(|_| k.type_name() == "str") else {
                    return Err(ConvertError::NonStrKey(k.type_name().to_owned()));
                };
                map.insert(key.to_owned(), to_json(v, depth + 1)?);
            }
            Ok(Value::Object(map))
        }
        other => Err(unsupported(other)),
    }
}

fn int_to_json(obj: ObjectRef<'_>) -> Result<Value, ConvertError> {
    if let Some(i) = obj.as_int() {
        return Ok(Value::from(i));
    }
    let digits = obj.py_repr();
    digits
        .parse::<u64>()
        .map(Value::from)
        .map_err(|_| ConvertError::IntOutOfRange(digits))
}

fn unsupported(type_name: &str) -> ConvertError {
    ConvertError::Unsupported(type_name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalars_and_containers_round_trip() {
        let v = json!({"a": [1, -2, 3.5, "x", null, true, {"b": []}], "big": u64::MAX, "neg": i64::MIN});
        let back = monty_to_json(json_to_monty(&v).unwrap().as_ref()).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn too_deep_is_refused() {
        let mut v = json!(1);
        for _ in 0..=MAX_DEPTH + 1 {
            v = json!([v]);
        }
        assert!(json_to_monty(&v).is_err());
    }

    #[test]
    fn non_json_types_are_named() {
        let set = MontyObject::set([MontyObject::int(1)]);
        let err = monty_to_json(set.as_ref()).unwrap_err().to_string();
        assert!(err.contains("'set'"), "{err}");
        assert_eq!(return_value_to_json(&set), json!("{1}"));
        let bad_key = MontyObject::dict([(MontyObject::int(1), MontyObject::none())]);
        assert!(
            monty_to_json(bad_key.as_ref())
                .unwrap_err()
                .to_string()
                .contains("'int'")
        );
        let nan = MontyObject::float(f64::NAN);
        assert!(monty_to_json(nan.as_ref()).is_err());
        let huge = MontyObject::bigint(BigInt::from(u64::MAX) * 2);
        assert!(
            monty_to_json(huge.as_ref())
                .unwrap_err()
                .to_string()
                .contains("out of range")
        );
    }
}

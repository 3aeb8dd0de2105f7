//! Reading parameters. The registry validated them already; these checks are the provider's own
//! (a provider can be called directly) and apply the schema defaults the validator does not.

use serde_json::{Map, Value};
use toolgate_core::CallError;

pub(crate) struct Params<'a> {
    tool: &'static str,
    map: &'a Map<String, Value>,
}

impl<'a> Params<'a> {
    pub(crate) fn new(tool: &'static str, map: &'a Map<String, Value>) -> Self {
        Self { tool, map }
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    fn wrong(&self, name: &str, want: &str) -> CallError {
        CallError::invalid(format!(
            "{}: parameter \"{name}\" must be {want}.",
            self.tool
        ))
    }

    pub(crate) fn str_opt(&self, name: &str) -> Result<Option<&'a str>, CallError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.wrong(name, "a string")),
        }
    }

    pub(crate) fn str_req(&self, name: &str) -> Result<&'a str, CallError> {
        self.str_opt(name)?.ok_or_else(|| {
            CallError::invalid(format!("{}: parameter \"{name}\" is required.", self.tool))
        })
    }

    pub(crate) fn str_or(&self, name: &str, default: &'a str) -> Result<&'a str, CallError> {
        Ok(self.str_opt(name)?.unwrap_or(default))
    }

    pub(crate) fn int_opt(&self, name: &str) -> Result<Option<i64>, CallError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .or_else(|| {
                    v.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                        .map(|f| f as i64)
                })
                .map(Some)
                .ok_or_else(|| self.wrong(name, "an integer")),
        }
    }

    pub(crate) fn num_opt(&self, name: &str) -> Result<Option<f64>, CallError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.wrong(name, "a number")),
        }
    }

    pub(crate) fn bool_or(&self, name: &str, default: bool) -> Result<bool, CallError> {
        match self.get(name) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.wrong(name, "true or false")),
        }
    }

    /// A list of strings; a single string counts as a list of one.
    pub(crate) fn strings_opt(&self, name: &str) -> Result<Option<Vec<&'a str>>, CallError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(vec![s.as_str()])),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_str()
                        .ok_or_else(|| self.wrong(name, "a list of strings"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(self.wrong(name, "a string or a list of strings")),
        }
    }

    pub(crate) fn int_pair_opt(&self, name: &str) -> Result<Option<(i64, i64)>, CallError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Array(items)) if items.len() == 2 => {
                let n = |v: &Value| {
                    v.as_i64()
                        .ok_or_else(|| self.wrong(name, "[start, end] integers"))
                };
                Ok(Some((n(&items[0])?, n(&items[1])?)))
            }
            Some(_) => Err(self.wrong(name, "a list of two integers [start, end]")),
        }
    }

    pub(crate) fn value(&self, name: &str) -> Option<&'a Value> {
        self.get(name)
    }

    pub(crate) fn object_opt(
        &self,
        name: &str,
    ) -> Result<Option<&'a Map<String, Value>>, CallError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(self.wrong(name, "an object")),
        }
    }
}

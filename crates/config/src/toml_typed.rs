//! A parsed TOML document deserialized into a configuration type with the failure kept as a
//! kind — an unknown key and the keys that would work, a value of the wrong type, a missing key
//! — and the key path and source position where it happened. The `toml` crate reports these
//! only as message text; reading that text back would tie the configuration's messages to its
//! wording, so the document is walked here with serde's typed error constructors instead.

use std::fmt;
use std::ops::Range;

use serde::de::{
    self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Unexpected, Visitor,
};
use toml::Value;

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// What went wrong, as serde's constructors said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A key the table does not have; `expected` lists the keys it has.
    UnknownKey {
        key: String,
        expected: Vec<&'static str>,
    },
    /// A value of another type than the key takes, in a config author's words.
    WrongType { expected: String, found: String },
    /// A required key is absent.
    MissingKey(&'static str),
    /// Any other message a value's own deserializer gave (e.g. "invalid size …").
    Other(String),
}

/// A failure with the key path it happened at (innermost last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypedError {
    pub kind: Kind,
    pub path: Vec<Seg>,
}

impl TypedError {
    fn kind(kind: Kind) -> Self {
        Self {
            kind,
            path: Vec::new(),
        }
    }

    fn under(mut self, seg: Seg) -> Self {
        self.path.insert(0, seg);
        self
    }

    /// The dotted key path without array indices (`command_tools.argv`), as messages name keys.
    pub(crate) fn keys(&self) -> Vec<String> {
        self.path
            .iter()
            .filter_map(|s| match s {
                Seg::Key(k) => Some(k.clone()),
                Seg::Index(_) => None,
            })
            .collect()
    }

    /// Where in `text` the failure is: the offending value, the unknown key, or the table that
    /// lacks a key.
    pub(crate) fn span(&self, text: &str) -> Option<Range<usize>> {
        let doc = toml::de::DeTable::parse(text).ok()?;
        let mut span = doc.span();
        let mut table = Some(doc.get_ref());
        let mut array: Option<&[toml::Spanned<toml::de::DeValue<'_>>]> = None;
        for seg in &self.path {
            let value = match seg {
                Seg::Key(k) => table?.iter().find(|(name, _)| name.get_ref() == k)?.1,
                Seg::Index(i) => array?.get(*i)?,
            };
            span = value.span();
            (table, array) = match value.get_ref() {
                toml::de::DeValue::Table(t) => (Some(t), None),
                toml::de::DeValue::Array(a) => (None, Some(&a[..])),
                _ => (None, None),
            };
        }
        if let Kind::UnknownKey { key, .. } = &self.kind {
            return table?
                .iter()
                .find(|(name, _)| name.get_ref() == key)
                .map(|(name, _)| name.span())
                .or(Some(span));
        }
        Some(span)
    }
}

impl fmt::Display for TypedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::UnknownKey { key, .. } => write!(f, "unknown key `{key}`"),
            Kind::WrongType { expected, found } => write!(f, "expected {expected}, found {found}"),
            Kind::MissingKey(k) => write!(f, "missing key `{k}`"),
            Kind::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for TypedError {}

impl de::Error for TypedError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self::kind(Kind::Other(msg.to_string()))
    }

    fn invalid_type(unexp: Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        Self::kind(Kind::WrongType {
            expected: exp.to_string(),
            found: unexp.to_string(),
        })
    }

    fn invalid_value(unexp: Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        Self::invalid_type(unexp, exp)
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        Self::kind(Kind::UnknownKey {
            key: field.to_owned(),
            expected: expected.to_vec(),
        })
    }

    fn missing_field(field: &'static str) -> Self {
        Self::kind(Kind::MissingKey(field))
    }
}

/// Deserialize `T` from a parsed document.
pub(crate) fn from_table<T: de::DeserializeOwned>(table: toml::Table) -> Result<T, TypedError> {
    T::deserialize(ValueDe(Value::Table(table)))
}

/// What a request for a type says in a config author's words, with the value found.
fn wrong(value: &Value, expected: &str) -> TypedError {
    let found = match value {
        Value::String(s) => Unexpected::Str(s).to_string(),
        Value::Integer(i) => Unexpected::Signed(*i).to_string(),
        Value::Float(x) => Unexpected::Float(*x).to_string(),
        Value::Boolean(b) => Unexpected::Bool(*b).to_string(),
        Value::Datetime(_) => "a date-time".to_owned(),
        Value::Array(_) => Unexpected::Seq.to_string(),
        Value::Table(_) => Unexpected::Map.to_string(),
    };
    TypedError::kind(Kind::WrongType {
        expected: expected.to_owned(),
        found,
    })
}

struct ValueDe(Value);

impl<'de> IntoDeserializer<'de, TypedError> for ValueDe {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

macro_rules! typed {
    ($($method:ident: $variant:ident => $visit:ident as $words:literal),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TypedError> {
                match self.0 {
                    Value::$variant(v) => visitor.$visit(v),
                    other => Err(wrong(&other, $words)),
                }
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for ValueDe {
    type Error = TypedError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TypedError> {
        match self.0 {
            Value::String(s) => visitor.visit_string(s),
            Value::Integer(i) => visitor.visit_i64(i),
            Value::Float(x) => visitor.visit_f64(x),
            Value::Boolean(b) => visitor.visit_bool(b),
            Value::Datetime(d) => visitor.visit_string(d.to_string()),
            Value::Array(items) => visitor.visit_seq(Seq {
                items: items.into_iter().enumerate(),
            }),
            Value::Table(t) => visitor.visit_map(Table {
                entries: t.into_iter(),
                value: None,
            }),
        }
    }

    typed! {
        deserialize_bool: Boolean => visit_bool as "a boolean",
        deserialize_i8: Integer => visit_i64 as "an integer",
        deserialize_i16: Integer => visit_i64 as "an integer",
        deserialize_i32: Integer => visit_i64 as "an integer",
        deserialize_i64: Integer => visit_i64 as "an integer",
        deserialize_u8: Integer => visit_i64 as "an integer",
        deserialize_u16: Integer => visit_i64 as "an integer",
        deserialize_u32: Integer => visit_i64 as "an integer",
        deserialize_u64: Integer => visit_i64 as "an integer",
        deserialize_string: String => visit_string as "a string",
        deserialize_str: String => visit_string as "a string",
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TypedError> {
        match self.0 {
            Value::Float(x) => visitor.visit_f64(x),
            Value::Integer(i) => visitor.visit_i64(i),
            other => Err(wrong(&other, "a number")),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TypedError> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TypedError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, TypedError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TypedError> {
        match self.0 {
            Value::Array(_) => self.deserialize_any(visitor),
            other => Err(wrong(&other, "an array")),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TypedError> {
        match self.0 {
            Value::Table(_) => self.deserialize_any(visitor),
            other => Err(wrong(&other, "a table")),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TypedError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TypedError> {
        match self.0 {
            Value::String(s) => visitor.visit_enum(s.into_deserializer()),
            other => Err(wrong(&other, "a string")),
        }
    }

    serde::forward_to_deserialize_any! {
        char bytes byte_buf unit unit_struct tuple tuple_struct identifier ignored_any i128 u128
    }
}

struct Seq {
    items: std::iter::Enumerate<std::vec::IntoIter<Value>>,
}

impl<'de> SeqAccess<'de> for Seq {
    type Error = TypedError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, TypedError> {
        match self.items.next() {
            Some((i, v)) => seed
                .deserialize(ValueDe(v))
                .map(Some)
                .map_err(|e| e.under(Seg::Index(i))),
            None => Ok(None),
        }
    }
}

struct Table {
    entries: toml::map::IntoIter<String, Value>,
    value: Option<(String, Value)>,
}

impl<'de> MapAccess<'de> for Table {
    type Error = TypedError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, TypedError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        // An unknown key is reported by the table's own type: the path stays the table's.
        let k = seed.deserialize(IntoDeserializer::<TypedError>::into_deserializer(
            key.clone(),
        ))?;
        self.value = Some((key, value));
        Ok(Some(k))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, TypedError> {
        let Some((key, value)) = self.value.take() else {
            return Err(de::Error::custom("a value was asked for before its key"));
        };
        seed.deserialize(ValueDe(value))
            .map_err(|e| e.under(Seg::Key(key)))
    }
}

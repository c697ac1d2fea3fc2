//! `Map` keys: entry ids and the other values Pi looks entries up by (`parentId`, `targetId`,
//! `firstKeptEntryId`, tool names), compared as `Map` compares them (SameValueZero).

use std::borrow::Cow;

use super::number::{num_json, number_to_string};
use super::value::js_string_of_value;

/// An entry id or any value used as a `Map` key by Pi (`id`, `parentId`, `targetId`, ...).
///
/// JSON gives ids of any type; `Map` compares them with SameValueZero, so `5` and `"5"`
/// differ, and two objects are never equal (each parse makes a new one).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub enum Key {
    /// The field is absent.
    #[default]
    Undefined,
    /// JSON `null`.
    Null,
    /// JSON `true` / `false`.
    Bool(bool),
    /// A number, by the bits of its f64 value (`-0` folded into `0`).
    Num(u64),
    /// A string.
    Str(compact_str::CompactString),
    /// An object or array: unique, equal to nothing else (the value is kept for printing).
    Unique(u32, Opaque),
}

/// A JSON value carried along for output only: every `Opaque` equals every other, so it
/// never takes part in comparing or hashing the key that holds it.
#[derive(Debug, Clone, Default)]
pub struct Opaque(pub Box<serde_json::Value>);

impl serde::Serialize for Opaque {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.to_string())
    }
}

impl<'de> serde::Deserialize<'de> for Opaque {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Opaque, D::Error> {
        let text = String::deserialize(d)?;
        serde_json::from_str(&text)
            .map(|v| Opaque(Box::new(v)))
            .map_err(serde::de::Error::custom)
    }
}

impl PartialEq for Opaque {
    fn eq(&self, _: &Opaque) -> bool {
        true
    }
}

impl Eq for Opaque {}

impl std::hash::Hash for Opaque {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl Key {
    /// JavaScript truthiness (`if (id)`): `undefined`, `null`, `false`, `0` and `""` are falsy.
    pub fn truthy(&self) -> bool {
        match self {
            Key::Undefined | Key::Null => false,
            Key::Bool(b) => *b,
            Key::Num(bits) => {
                let f = f64::from_bits(*bits);
                f != 0.0 && !f.is_nan()
            }
            Key::Str(s) => !s.is_empty(),
            Key::Unique(..) => true,
        }
    }

    /// A string key.
    pub fn str(s: &str) -> Key {
        Key::Str(s.into())
    }

    /// The key from a number.
    pub fn num(f: f64) -> Key {
        let f = if f == 0.0 { 0.0 } else { f };
        Key::Num(f.to_bits())
    }

    /// The string content, when the key is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Key::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The key as JSON (`undefined` prints as `null`, like `x ?? null`).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Key::Undefined | Key::Null => serde_json::Value::Null,
            Key::Bool(b) => serde_json::Value::Bool(*b),
            Key::Num(bits) => num_json(f64::from_bits(*bits)),
            Key::Str(s) => serde_json::Value::String(s.to_string()),
            Key::Unique(_, v) => (*v.0).clone(),
        }
    }

    /// `String(key)` in JavaScript (used where Pi builds strings from ids).
    pub fn js_string(&self) -> Cow<'_, str> {
        match self {
            Key::Undefined => "undefined".into(),
            Key::Null => "null".into(),
            Key::Bool(b) => if *b { "true" } else { "false" }.into(),
            Key::Num(bits) => number_to_string(f64::from_bits(*bits)).into(),
            Key::Str(s) => Cow::Borrowed(s),
            Key::Unique(_, v) => js_string_of_value(&v.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_same_value_zero_and_truthiness() {
        assert_eq!(Key::num(0.0), Key::num(-0.0));
        assert_ne!(Key::num(5.0), Key::str("5"));
        assert!(!Key::str("").truthy());
        assert!(!Key::num(0.0).truthy());
        assert!(Key::Unique(1, Opaque::default()).truthy());
        assert_eq!(Key::num(5.0).js_string(), "5");
    }
}

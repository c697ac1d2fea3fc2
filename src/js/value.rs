//! JavaScript values as Pi's code treats the JSON it parsed: primitives in its sums, and
//! `String(v)`, `ToNumber` and truthiness of any JSON value.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::number::{num_json, number_to_string};
use super::string::js_trim;

/// A parsed JSON value as Pi sees it, reduced to what pisa keeps: `None` stands for
/// JavaScript `undefined` (the key was absent).
pub type Jv = Option<serde_json::Value>;

/// Serde of a [`Jv`] for pisa's cache: the value as JSON text, so that a format that does
/// not describe itself (postcard) keeps `undefined` (absent) and `null` apart.
pub mod jv_text {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &super::Jv, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref().map(|v| v.to_string()).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<super::Jv, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| serde_json::from_str(&t).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// A JavaScript primitive as Pi's sums see it: `total += usage.input` with whatever the file
/// holds. Objects and arrays are kept as the string `ToPrimitive` makes of them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum JsVal {
    Undefined,
    Null,
    Bool(bool),
    Num(f64),
    Str(Box<str>),
}

impl Default for JsVal {
    fn default() -> Self {
        JsVal::Num(0.0)
    }
}

impl JsVal {
    /// The operand a number field converts to (`NaN` stands for an absent field).
    pub fn from_f64(f: f64) -> JsVal {
        if f.is_nan() { JsVal::Undefined } else { JsVal::Num(f) }
    }

    /// `ToNumber`.
    pub fn to_number(&self) -> f64 {
        match self {
            JsVal::Undefined => f64::NAN,
            JsVal::Null => 0.0,
            JsVal::Bool(b) => f64::from(u8::from(*b)),
            JsVal::Num(f) => *f,
            JsVal::Str(s) => js_to_number(&serde_json::Value::String(s.to_string())),
        }
    }

    /// `ToString`.
    pub fn to_js_string(&self) -> Cow<'_, str> {
        match self {
            JsVal::Undefined => "undefined".into(),
            JsVal::Null => "null".into(),
            JsVal::Bool(b) => if *b { "true" } else { "false" }.into(),
            JsVal::Num(f) => number_to_string(*f).into(),
            JsVal::Str(s) => Cow::Borrowed(s),
        }
    }

    /// JavaScript truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            JsVal::Undefined | JsVal::Null => false,
            JsVal::Bool(b) => *b,
            JsVal::Num(f) => *f != 0.0 && !f.is_nan(),
            JsVal::Str(s) => !s.is_empty(),
        }
    }

    /// `self + rhs`: string concatenation when either side is a string, else numeric addition.
    pub fn plus(&self, rhs: &JsVal) -> JsVal {
        match (self, rhs) {
            (JsVal::Num(a), JsVal::Num(b)) => JsVal::Num(a + b),
            (JsVal::Str(_), _) | (_, JsVal::Str(_)) => {
                JsVal::Str(format!("{}{}", self.to_js_string(), rhs.to_js_string()).into())
            }
            _ => JsVal::Num(self.to_number() + rhs.to_number()),
        }
    }

    /// `self += rhs`.
    pub fn add_assign(&mut self, rhs: &JsVal) {
        if let (JsVal::Num(a), JsVal::Num(b)) = (&mut *self, rhs) {
            *a += b;
        } else {
            *self = self.plus(rhs);
        }
    }

    /// The value as `JSON.stringify` prints it (`NaN` and `undefined` as `null`).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            JsVal::Undefined | JsVal::Null => serde_json::Value::Null,
            JsVal::Bool(b) => serde_json::Value::Bool(*b),
            JsVal::Num(f) => num_json(*f),
            JsVal::Str(s) => serde_json::Value::String(s.to_string()),
        }
    }
}

/// `String(v)` in JavaScript for a JSON value (`undefined` when absent).
pub fn js_string_of(v: &Jv) -> Cow<'_, str> {
    match v {
        None => "undefined".into(),
        Some(serde_json::Value::Null) => "null".into(),
        Some(serde_json::Value::Bool(b)) => if *b { "true" } else { "false" }.into(),
        Some(serde_json::Value::Number(n)) => number_to_string(n.as_f64().unwrap_or(f64::NAN)).into(),
        Some(serde_json::Value::String(s)) => Cow::Borrowed(s.as_str()),
        Some(serde_json::Value::Array(a)) => {
            // Array#toString: elements joined by ",", null/undefined as "".
            let mut out = String::new();
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !item.is_null() {
                    let _ = write!(out, "{}", js_string_of(&Some(item.clone())));
                }
            }
            out.into()
        }
        Some(serde_json::Value::Object(_)) => "[object Object]".into(),
    }
}

/// JavaScript `ToNumber` for the values a header `version` can hold.
pub fn js_to_number(v: &serde_json::Value) -> f64 {
    match v {
        serde_json::Value::Null => 0.0,
        serde_json::Value::Bool(b) => f64::from(u8::from(*b)),
        serde_json::Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        serde_json::Value::String(s) => {
            let t = js_trim(s);
            if t.is_empty() {
                0.0
            } else if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                u64::from_str_radix(hex, 16).map_or(f64::NAN, |u| u as f64)
            } else {
                match t {
                    "Infinity" | "+Infinity" => f64::INFINITY,
                    "-Infinity" => f64::NEG_INFINITY,
                    _ if t.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) => {
                        t.parse::<f64>().unwrap_or(f64::NAN)
                    }
                    _ => f64::NAN,
                }
            }
        }
        serde_json::Value::Array(a) => match a.as_slice() {
            [] => 0.0,
            [one] => js_to_number(one),
            _ => f64::NAN,
        },
        serde_json::Value::Object(_) => f64::NAN,
    }
}

/// JavaScript truthiness of a JSON value.
pub fn js_truthy(v: &Jv) -> bool {
    match v {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(serde_json::Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_number_matches_javascript() {
        assert_eq!(js_to_number(&serde_json::json!("2")), 2.0);
        assert_eq!(js_to_number(&serde_json::json!(" 3 ")), 3.0);
        assert!(js_to_number(&serde_json::json!("v3")).is_nan());
        assert_eq!(js_to_number(&serde_json::json!(true)), 1.0);
    }

    #[test]
    fn sums_follow_javascript_plus() {
        let mut t = JsVal::Num(1.0);
        t.add_assign(&JsVal::Str("2".into()));
        t.add_assign(&JsVal::Num(3.0));
        assert_eq!(t, JsVal::Str("123".into()));
        assert!(JsVal::Undefined.plus(&JsVal::Num(1.0)).to_number().is_nan());
        assert_eq!(JsVal::Null.plus(&JsVal::Bool(true)), JsVal::Num(1.0));
    }
}

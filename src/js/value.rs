//! JavaScript values as Pi's code treats the JSON it parsed: primitives in its sums, and
//! `String(v)`, `ToNumber` and truthiness of any JSON value.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::number::{Num, num_json, number_to_string};
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
///
/// In JSON (a human-readable serializer) it is written as `JSON.stringify` writes it
/// (`undefined` and `NaN` as `null`, integers without a fraction); in pisa's binary cache
/// encoding every variant is kept.
#[derive(Debug, Clone, PartialEq)]
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

/// The binary form of [`JsVal`].
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(remote = "JsVal")]
enum JsValRepr {
    Undefined,
    Null,
    Bool(bool),
    Num(f64),
    Str(Box<str>),
}

impl serde::Serialize for JsVal {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !s.is_human_readable() {
            return JsValRepr::serialize(self, s);
        }
        match self {
            JsVal::Undefined | JsVal::Null => s.serialize_unit(),
            JsVal::Bool(b) => s.serialize_bool(*b),
            JsVal::Num(f) => Num(*f).serialize(s),
            JsVal::Str(t) => s.serialize_str(t),
        }
    }
}

impl<'de> serde::Deserialize<'de> for JsVal {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<JsVal, D::Error> {
        if !d.is_human_readable() {
            return JsValRepr::deserialize(d);
        }
        Ok(match serde_json::Value::deserialize(d)? {
            serde_json::Value::Null => JsVal::Null,
            serde_json::Value::Bool(b) => JsVal::Bool(b),
            serde_json::Value::Number(n) => JsVal::Num(n.as_f64().unwrap_or(f64::NAN)),
            serde_json::Value::String(t) => JsVal::Str(t.into()),
            other => JsVal::Str(other.to_string().into()),
        })
    }
}

/// A JSON value carried as Pi read it: written as itself in JSON, as its JSON text in
/// pisa's binary cache encoding (which cannot describe a value of any shape).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Json(pub serde_json::Value);

impl Json {
    /// The value of a field, `null` when it was absent.
    pub fn of(v: &Jv) -> Json {
        Json(v.clone().unwrap_or(serde_json::Value::Null))
    }
}

impl serde::Serialize for Json {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            self.0.serialize(s)
        } else {
            s.serialize_str(&self.0.to_string())
        }
    }
}

impl<'de> serde::Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        if d.is_human_readable() {
            return serde_json::Value::deserialize(d).map(Json);
        }
        let text = String::deserialize(d)?;
        serde_json::from_str(&text).map(Json).map_err(serde::de::Error::custom)
    }
}

/// `String(v)` in JavaScript for a JSON value (`undefined` when absent).
pub fn js_string_of(v: &Jv) -> Cow<'_, str> {
    match v {
        None => "undefined".into(),
        Some(v) => js_string_of_value(v),
    }
}

/// `String(v)` in JavaScript for a present JSON value.
pub fn js_string_of_value(v: &serde_json::Value) -> Cow<'_, str> {
    match v {
        serde_json::Value::Null => "null".into(),
        serde_json::Value::Bool(b) => if *b { "true" } else { "false" }.into(),
        serde_json::Value::Number(n) => number_to_string(n.as_f64().unwrap_or(f64::NAN)).into(),
        serde_json::Value::String(s) => Cow::Borrowed(s.as_str()),
        serde_json::Value::Array(a) => {
            // Array#toString: elements joined by ",", null/undefined as "".
            let mut out = String::new();
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !item.is_null() {
                    let _ = write!(out, "{}", js_string_of_value(item));
                }
            }
            out.into()
        }
        serde_json::Value::Object(_) => "[object Object]".into(),
    }
}

/// A [`Jv`] that is nearly always a short string: an answer's provider, model, response model
/// and stop reason. The string is kept inline up to 24 bytes (a `CompactString`), so reading
/// one allocates nothing; any other value is kept as it is. Every answer names its provider,
/// model and stop reason, and as `serde_json::Value` strings they were three allocations per
/// answer, made and freed again: 4 % of a scan's time.
///
/// In pisa's cache it is written as [`jv_text`] writes a [`Jv`] (its JSON text, or nothing when
/// absent), so the cache reads the same either way.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum StrJv {
    /// The key was absent (`undefined`).
    #[default]
    Undefined,
    Str(compact_str::CompactString),
    /// Any other value: `null`, a number, an object...
    Other(Box<serde_json::Value>),
}

impl StrJv {
    /// The string `s`.
    pub fn str(s: &str) -> StrJv {
        StrJv::Str(s.into())
    }

    /// The value a [`Jv`] holds.
    pub fn of(v: Jv) -> StrJv {
        match v {
            None => StrJv::Undefined,
            Some(serde_json::Value::String(s)) => StrJv::Str(s.into()),
            Some(other) => StrJv::Other(Box::new(other)),
        }
    }

    /// As a [`Jv`].
    pub fn to_jv(&self) -> Jv {
        match self {
            StrJv::Undefined => None,
            StrJv::Str(s) => Some(serde_json::Value::String(s.to_string())),
            StrJv::Other(v) => Some((**v).clone()),
        }
    }

    /// The string, when it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            StrJv::Str(s) => Some(s),
            _ => None,
        }
    }

    /// `undefined` or `null`.
    pub fn is_nullish(&self) -> bool {
        match self {
            StrJv::Undefined => true,
            StrJv::Str(_) => false,
            StrJv::Other(v) => v.is_null(),
        }
    }

    /// `String(v)`.
    pub fn js_string(&self) -> Cow<'_, str> {
        match self {
            StrJv::Undefined => "undefined".into(),
            StrJv::Str(s) => Cow::Borrowed(s),
            StrJv::Other(v) => js_string_of_value(v),
        }
    }
}

impl serde::Serialize for StrJv {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            StrJv::Undefined => None::<String>.serialize(s),
            StrJv::Str(text) => Some(serde_json::Value::from(text.as_str()).to_string()).serialize(s),
            StrJv::Other(v) => Some(v.to_string()).serialize(s),
        }
    }
}

impl<'de> serde::Deserialize<'de> for StrJv {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<StrJv, D::Error> {
        jv_text::deserialize(d).map(StrJv::of)
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

    /// JSON shows what `JSON.stringify` shows; the binary form keeps every variant.
    #[test]
    fn values_serialize_as_json_prints_them_and_round_trip_in_binary() {
        let values = [
            JsVal::Undefined,
            JsVal::Null,
            JsVal::Bool(true),
            JsVal::Num(3.0),
            JsVal::Num(0.5),
            JsVal::Num(f64::NAN),
            JsVal::Str("07".into()),
        ];
        let json: Vec<String> = values.iter().map(|v| serde_json::to_string(v).unwrap()).collect();
        assert_eq!(json, ["null", "null", "true", "3", "0.5", "null", "\"07\""]);
        for v in &values {
            let back: JsVal = postcard::from_bytes(&postcard::to_stdvec(v).unwrap()).unwrap();
            assert_eq!(format!("{back:?}"), format!("{v:?}"));
        }
        let j = Json(serde_json::json!({"a": [1, null]}));
        assert_eq!(serde_json::to_string(&j).unwrap(), r#"{"a":[1,null]}"#);
        let back: Json = postcard::from_bytes(&postcard::to_stdvec(&j).unwrap()).unwrap();
        assert_eq!(back, j);
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

    /// A [`StrJv`] reads as the [`Jv`] it stands for (`String(v)`, nullishness, the value back),
    /// and pisa's cache holds the same bytes for it as for that [`Jv`]: a cache written before
    /// it reads the same.
    #[test]
    fn a_str_jv_is_its_jv_in_every_use_and_in_the_cache() {
        #[derive(serde::Serialize)]
        struct Before<'a>(#[serde(with = "jv_text")] &'a Jv);
        let long = "a model name longer than twenty-four bytes, with \"quotes\" and é";
        let values: Vec<Jv> = vec![
            None,
            Some(serde_json::Value::Null),
            Some(serde_json::json!("")),
            Some(serde_json::json!("claude-sonnet-4-5")),
            Some(serde_json::json!(long)),
            Some(serde_json::json!(5)),
            Some(serde_json::json!(false)),
            Some(serde_json::json!([1, null, "a"])),
            Some(serde_json::json!({"a": 1})),
        ];
        for v in &values {
            let s = StrJv::of(v.clone());
            assert_eq!(s.to_jv(), *v);
            assert_eq!(s.js_string(), js_string_of(v), "{v:?}");
            assert_eq!(
                s.is_nullish(),
                matches!(v, None | Some(serde_json::Value::Null)),
                "{v:?}"
            );
            assert_eq!(s.as_str(), v.as_ref().and_then(|v| v.as_str()));
            let bytes = postcard::to_stdvec(&s).unwrap();
            assert_eq!(bytes, postcard::to_stdvec(&Before(v)).unwrap(), "{v:?}");
            assert_eq!(postcard::from_bytes::<StrJv>(&bytes).unwrap(), s);
        }
        assert_eq!(StrJv::str(long), StrJv::of(Some(serde_json::json!(long))));
        assert!(matches!(StrJv::of(Some(serde_json::json!("x"))), StrJv::Str(_)));
    }
}

//! JavaScript value semantics that Pi's code relies on and pisa must reproduce.
//!
//! Pi reads session lines with `JSON.parse` and then works with plain JavaScript values: ids
//! are `Map` keys (SameValueZero), truthiness decides whether a walk goes on, string lengths
//! are UTF-16 code units, sums of missing fields become `NaN`, and `JSON.stringify(x).length`
//! feeds the token estimate. This module holds those rules once, on values already read; how
//! they are read off a simd-json tape is `parse::tape`'s business.
//!
//! - [`key`]: `Map` keys (entry ids and other values Pi looks up by).
//! - [`value`]: primitives as Pi's sums see them, and `String(v)`, `ToNumber`, truthiness of
//!   JSON values.
//! - [`string`]: string lengths in UTF-16 units and as `JSON.stringify` writes them, `trim`,
//!   JavaScript's string order.
//! - [`number`]: numbers as JavaScript prints them.

pub mod key;
pub mod number;
pub mod string;
pub mod value;

pub use key::{Key, Opaque};
pub use number::{Num, num_json, number_to_string, stringify_num_len};
pub use string::{cmp_utf16, is_js_blank, is_js_space, js_trim, stringified_content_len, utf16_len};
pub use value::{JsVal, Json, Jv, StrJv, js_string_of, js_string_of_value, js_to_number, js_truthy, jv_text};

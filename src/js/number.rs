//! Numbers as JavaScript prints them (`String(n)`, `JSON.stringify(n)`).

/// A JSON number for output: integral values within 2^53 print without a fraction, like JavaScript.
pub fn num_json(f: f64) -> serde_json::Value {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        serde_json::Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, serde_json::Value::Number)
    }
}

/// A JavaScript number in pisa's outputs: in JSON (a human-readable serializer) written as
/// [`num_json`] writes it (integers without a fraction, `NaN` and infinities as `null`), in
/// pisa's binary cache encoding as the double itself.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Num(pub f64);

impl serde::Serialize for Num {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.0;
        if !s.is_human_readable() {
            s.serialize_f64(f)
        } else if f.is_finite() && f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
            s.serialize_i64(f as i64)
        } else if f.is_finite() {
            s.serialize_f64(f)
        } else {
            s.serialize_unit()
        }
    }
}

impl<'de> serde::Deserialize<'de> for Num {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        if d.is_human_readable() {
            Ok(Num(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN)))
        } else {
            f64::deserialize(d).map(Num)
        }
    }
}

/// `Number.prototype.toString()` for a double.
pub fn number_to_string(f: f64) -> String {
    let mut buf = ryu_js::Buffer::new();
    buf.format(f).to_owned()
}

/// `JSON.stringify(v).length` for a number.
pub fn stringify_num_len(f: f64) -> u64 {
    if !f.is_finite() {
        return 4; // "null"
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        // Integers print in plain decimal; count digits without formatting.
        let mut a = f.abs();
        let mut digits = 1u64;
        while a >= 10.0 {
            a /= 10.0;
            digits += 1;
        }
        // Division can drift near powers of ten; confirm with exact formatting there.
        if digits >= 15 {
            return number_to_string(f).len() as u64;
        }
        return digits + u64::from(f < 0.0);
    }
    let mut buf = ryu_js::Buffer::new();
    buf.format(f).len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stringified_number_lengths() {
        assert_eq!(stringify_num_len(0.0), 1);
        assert_eq!(stringify_num_len(-12.0), 3);
        assert_eq!(stringify_num_len(0.1), 3);
        assert_eq!(stringify_num_len(1e21), 5);
        assert_eq!(stringify_num_len(123456789012345680000.0), 21);
        assert_eq!(
            stringify_num_len(99999999999999990.0),
            number_to_string(99999999999999990.0).len() as u64
        );
        assert_eq!(stringify_num_len(f64::NAN), 4);
    }

    #[test]
    fn numbers_serialize_as_num_json_writes_them() {
        for f in [
            0.0,
            -0.0,
            3.0,
            0.1,
            1e21,
            9_007_199_254_740_993.0,
            -2.5e-7,
            f64::NAN,
            f64::INFINITY,
        ] {
            assert_eq!(serde_json::to_string(&Num(f)).unwrap(), num_json(f).to_string(), "{f}");
        }
    }
}

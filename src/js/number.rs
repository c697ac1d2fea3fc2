//! Numbers as JavaScript prints them (`String(n)`, `JSON.stringify(n)`).

/// A JSON number for output: integral values within 2^53 print without a fraction, like JavaScript.
pub fn num_json(f: f64) -> serde_json::Value {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        serde_json::Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, serde_json::Value::Number)
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
}

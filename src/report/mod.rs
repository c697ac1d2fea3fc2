//! Rendering: terminal tables and JSON documents, always into an `impl Write`.

pub mod blocks;
pub mod calls;
pub mod compactions;
pub mod compat;
pub mod html;
pub mod inspect;
pub mod json;
pub mod pricing;

pub use json::sessions_document;
pub mod rollup;
pub mod status;
pub mod table;

/// Remove control characters, escape sequences and bidirectional overrides from file-derived
/// text before it reaches a terminal (a session name could otherwise rewrite the screen).
pub fn terminal_safe(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Skip a CSI (ESC [ ... final byte) or OSC (ESC ] ... BEL or ESC \) sequence.
            match chars.peek() {
                Some('[') => {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    chars.next();
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {
                    chars.next();
                }
            }
        } else if c.is_control() {
            out.push(' ');
        } else if matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
            // Bidirectional embeddings, overrides and isolates would reorder the rest of the
            // row on screen (a name could show other figures than its own).
        } else {
            out.push(c);
        }
    }
    out
}

/// A writer that writes the C1 control characters (U+0080 to U+009F) of UTF-8 text as JSON
/// escapes (`\u009b`). JSON needs only U+0000 to U+001F escaped, so a session name could carry
/// a C1 CSI, which some terminals obey, straight through `--json` to the screen. Outside
/// strings JSON is ASCII, so the change keeps every document's meaning. For JSON only: in CSV
/// the escape would change the text.
#[derive(Debug)]
pub struct C1Escaped<W: std::io::Write> {
    inner: W,
    /// A `0xC2` lead byte whose continuation has not come yet.
    held: bool,
}

impl<W: std::io::Write> C1Escaped<W> {
    pub fn new(inner: W) -> Self {
        C1Escaped { inner, held: false }
    }
}

impl<W: std::io::Write> std::io::Write for C1Escaped<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        if self.held {
            let Some(&next) = rest.first() else { return Ok(0) };
            self.held = false;
            if (0x80..0xA0).contains(&next) {
                write!(self.inner, "\\u{next:04x}")?;
            } else {
                self.inner.write_all(&[0xC2, next])?;
            }
            rest = &rest[1..];
        }
        while let Some(i) = memchr::memchr(0xC2, rest) {
            self.inner.write_all(&rest[..i])?;
            match rest.get(i + 1) {
                Some(&next) if (0x80..0xA0).contains(&next) => write!(self.inner, "\\u{next:04x}")?,
                Some(&next) => self.inner.write_all(&[0xC2, next])?,
                None => {
                    self.held = true;
                    return Ok(buf.len());
                }
            }
            rest = &rest[i + 2..];
        }
        self.inner.write_all(rest)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if std::mem::take(&mut self.held) {
            // A lone lead byte at the end: not UTF-8, passed on as it came.
            self.inner.write_all(&[0xC2])?;
        }
        self.inner.flush()
    }
}

impl<W: std::io::Write> Drop for C1Escaped<W> {
    fn drop(&mut self) {
        if self.held {
            // A lone lead byte at the end (never in UTF-8 text): passed on as it came.
            let _ = self.inner.write_all(&[0xC2]);
        }
    }
}

/// Format a token count with thousands separators.
pub fn tokens(n: f64) -> String {
    if !n.is_finite() {
        return "?".into();
    }
    let s = format!("{:.0}", n.abs());
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0.0 { format!("-{out}") } else { out }
}

/// Format a cost in USD.
pub fn usd(c: f64) -> String {
    if c.abs() < 0.005 && c != 0.0 {
        format!("${c:.4}")
    } else {
        format!("${c:.2}")
    }
}

/// Any frame as a terminal table (`pisa query`): nulls blank, numbers right-aligned.
pub fn frame_table(
    out: &mut impl std::io::Write,
    df: &polars::prelude::DataFrame,
    terminal: bool,
) -> std::io::Result<()> {
    use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
    use polars::prelude::AnyValue;
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(if terminal {
        ContentArrangement::Dynamic
    } else {
        ContentArrangement::Disabled
    });
    t.set_header(df.columns().iter().map(|c| c.name().to_string()));
    for i in 0..df.height() {
        t.add_row(df.columns().iter().map(|c| {
            let v = c.get(i).unwrap_or(AnyValue::Null);
            let numeric = v.is_primitive_numeric();
            let text = match &v {
                AnyValue::Null => String::new(),
                AnyValue::String(s) => terminal_safe(s),
                AnyValue::StringOwned(s) => terminal_safe(s),
                AnyValue::Float64(x) => crate::js::number_to_string(*x),
                AnyValue::Datetime(..) | AnyValue::DatetimeOwned(..) => {
                    crate::export::any_json(&v).as_str().unwrap_or_default().to_string()
                }
                other => terminal_safe(&other.to_string()),
            };
            let cell = Cell::new(text);
            if numeric {
                cell.set_alignment(CellAlignment::Right)
            } else {
                cell
            }
        }));
    }
    writeln!(out, "{t}")?;
    writeln!(out, "{} rows", df.height())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_never_reach_the_terminal() {
        assert_eq!(terminal_safe("a\u{1b}[31mred\u{1b}[0m"), "ared");
        assert_eq!(terminal_safe("x\u{1b}]0;title\u{7}y"), "xy");
        assert_eq!(terminal_safe("x\u{1b}]8;;http://e\u{1b}\\link"), "xlink");
        assert_eq!(terminal_safe("tab\there\r\n"), "tab here  ");
        assert_eq!(terminal_safe("a\u{202e}cba\u{2066}x\u{2069}\u{9b}"), "acbax ");
    }

    #[test]
    fn c1_controls_become_json_escapes_even_split_across_writes() {
        use std::io::Write;
        let text = serde_json::to_string(&serde_json::json!({"n": "a\u{9b}2J\u{85}é\u{a0}"})).unwrap();
        for cut in 0..=text.len() {
            let mut out = C1Escaped::new(Vec::new());
            out.write_all(&text.as_bytes()[..cut]).unwrap();
            out.write_all(&text.as_bytes()[cut..]).unwrap();
            out.flush().unwrap();
            let written = String::from_utf8(std::mem::take(&mut out.inner)).unwrap();
            assert_eq!(written, "{\"n\":\"a\\u009b2J\\u0085é\u{a0}\"}");
            let back: serde_json::Value = serde_json::from_str(&written).unwrap();
            assert_eq!(back["n"], "a\u{9b}2J\u{85}é\u{a0}");
        }
    }

    #[test]
    fn number_formats() {
        assert_eq!(tokens(1234567.0), "1,234,567");
        assert_eq!(tokens(12.0), "12");
        assert_eq!(usd(1.234), "$1.23");
        assert_eq!(usd(0.001), "$0.0010");
    }
}

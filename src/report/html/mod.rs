//! `pisa report --html`: one self-contained HTML file with figures of a corpus's spend.
//!
//! [`gather`] sums what the page shows (module `data`); [`write`] renders it: inline SVG charts drawn
//! here ([`svg`]), sortable tables, a few lines of script and style, all inside the file. A
//! Content-Security-Policy forbids fetching anything and running any script but the page's own
//! (a nonce), and every text that comes from a session file goes through [`esc`], so a hostile
//! session name shows as text.

mod data;
mod page;
pub mod svg;

pub use data::{CompactionMark, Compactions, Page, Scope, SessionSpend, TimeSeries, gather};
pub use page::write;

use std::borrow::Cow;

/// Text for HTML (element content and quoted attribute values alike): `& < > " '` escaped;
/// control characters become spaces and bidirectional overrides are dropped, so a name can
/// neither break the markup nor reorder what is shown next to it.
pub fn esc(s: &str) -> Cow<'_, str> {
    let plain = |c: char| {
        !matches!(c, '&' | '<' | '>' | '"' | '\'' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
            && !c.is_control()
    };
    if s.chars().all(plain) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {}
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn markup_in_names_becomes_text() {
        assert_eq!(
            esc(r#"</title><script>alert("x")</script>"#),
            "&lt;/title&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
        );
        assert_eq!(esc("a' onmouseover='b"), "a&#39; onmouseover=&#39;b");
        assert_eq!(esc("x\u{202e}y\u{0}z\u{9b}"), "xy z ");
        assert!(matches!(esc("plain – ünïcode 日本"), std::borrow::Cow::Borrowed(_)));
    }
}

//! File names and paths as pisa shows them, and what a name says about a file. Depends on
//! nothing else in pisa.

use std::ffi::OsStr;
use std::path::Path;

/// A file or folder name as text: itself when it is UTF-8; else each byte that is not part
/// of valid UTF-8 becomes `\xNN` and a backslash `\\`, so names that differ in such bytes stay
/// distinct (a lossy conversion would make them all `\u{FFFD}`) and output stays UTF-8.
pub fn name_text(name: &OsStr) -> std::borrow::Cow<'_, str> {
    if let Some(s) = name.to_str() {
        return s.into();
    }
    let mut out = String::new();
    for chunk in name.as_encoded_bytes().utf8_chunks() {
        out.push_str(&chunk.valid().replace('\\', "\\\\"));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out.into()
}

/// Whether a file name (the last component of `rel`) is one Pi gives a session file:
/// `<ISO timestamp with : and . as ->_<session id>.jsonl`, as `SessionManager` names them.
pub fn pi_session_name(rel: &str) -> bool {
    let name = base_name(rel).as_bytes();
    // 2026-05-01T10-00-00-000Z_ then an id, then .jsonl
    const SHAPE: &[u8; 25] = b"dddd-dd-ddTdd-dd-dd-dddZ_";
    name.len() > SHAPE.len() + ".jsonl".len()
        && name.ends_with(b".jsonl")
        && SHAPE
            .iter()
            .zip(name)
            .all(|(&s, &b)| if s == b'd' { b.is_ascii_digit() } else { s == b })
}

/// A whole path as text, each component as [`name_text`] writes it.
pub fn path_text(path: &Path) -> String {
    match path.to_str() {
        Some(s) => s.to_string(),
        None => name_text(path.as_os_str()).into_owned(),
    }
}

/// The last component of a `/`- or `\\`-separated path.
pub fn base_name(p: &str) -> &str {
    p.rsplit(['/', '\\']).next().unwrap_or(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_session_names_are_told_apart() {
        for yes in [
            "2026-05-01T10-00-00-000Z_019de1a2-0000-7000-8000-000000000000.jsonl",
            "--proj--/2025-12-09T00-53-12-345Z_x.jsonl",
        ] {
            assert!(pi_session_name(yes), "{yes}");
        }
        for no in [
            "todo-log.jsonl",
            "--proj--/2026-05-01T10-00-00-000Z_run/subagent-artifacts/a1_worker_0_transcript.jsonl",
            "2026-05-01T10-00-00-000Z_.jsonl",
            "2026-05-01T10:00:00.000Z_x.jsonl",
            "2026-05-01T10-00-00-000Z_x.json",
            "session.jsonl",
        ] {
            assert!(!pi_session_name(no), "{no}");
        }
    }

    /// Names that are not UTF-8 keep distinct, UTF-8 texts (a lossy conversion makes them
    /// all `a\u{FFFD}.jsonl`).
    #[cfg(unix)]
    #[test]
    fn names_that_are_not_utf8_stay_distinct() {
        use std::os::unix::ffi::OsStrExt;
        let names: [&[u8]; 5] = [
            b"a\xff.jsonl",
            b"a\xfe.jsonl",
            b"a\xef\xbf\xbd.jsonl",
            b"a\\xFF\xff",
            b"ok",
        ];
        let texts: Vec<_> = names.iter().map(|n| name_text(OsStr::from_bytes(n))).collect();
        assert_eq!(
            texts,
            ["a\\xFF.jsonl", "a\\xFE.jsonl", "a\u{FFFD}.jsonl", "a\\\\xFF\\xFF", "ok"]
        );
    }

    #[test]
    fn base_names() {
        assert_eq!(base_name("x/y\\z.jsonl"), "z.jsonl");
        assert_eq!(base_name("z.jsonl"), "z.jsonl");
    }
}

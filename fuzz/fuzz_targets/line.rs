//! The line parser: one line of bytes (up to its first `\n`) → a typed entry, through the
//! same path a scan takes (`FileParser::lines` → simd-json, the `JSON.parse` repairs, entry
//! extraction). The line follows a fixed session header so that the file is accepted and
//! its entry kept. Invariants, besides not panicking:
//! - cutting image payloads before parsing (the default) gives the entry parsed whole;
//! - the line read as an unterminated last line gives the same entry (or is a pending tail);
//! - the entry survives the cache's postcard encoding unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pisa::parse::entry::Entry;
use pisa::parse::{FileParser, ParsedFile, Scratch};

const HEADER: &[u8] = br#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

fn parse(line: &[u8], terminated: bool, cut_payloads: bool) -> ParsedFile {
    let mut scratch = Scratch::default();
    scratch.cut_payloads = cut_payloads;
    let mut parser = FileParser::new(None, &mut scratch);
    let mut bytes = HEADER.to_vec();
    bytes.push(b'\n');
    bytes.extend_from_slice(line);
    if terminated {
        bytes.push(b'\n');
        parser.lines(&bytes, &mut scratch);
        parser.finish(&[], &mut scratch).0
    } else {
        parser.lines(&bytes[..=HEADER.len()], &mut scratch);
        parser.finish(&bytes[HEADER.len() + 1..], &mut scratch).0
    }
}

fuzz_target!(|data: &[u8]| {
    let line = data.split(|&b| b == b'\n').next().unwrap_or_default();
    let cut = parse(line, true, true);
    assert!(cut.reject.is_none(), "the header alone is a session");
    assert!(cut.entries.len() <= 2);
    let whole = parse(line, true, false);
    assert_eq!(
        format!("{cut:?}"),
        format!("{whole:?}"),
        "cutting images changed the parse"
    );

    let tail = parse(line, false, true);
    if tail.stats.pending_tail_bytes == 0 {
        assert_eq!(
            format!("{:?}", cut.entries),
            format!("{:?}", tail.entries),
            "terminated vs not"
        );
    } else {
        assert_eq!(cut.stats.malformed_lines, 1);
        assert_eq!(tail.entries.len(), 1);
    }

    let saved = postcard::to_stdvec(&cut.entries).expect("entries encode");
    let back: Vec<Entry> = postcard::from_bytes(&saved).expect("entries decode");
    assert_eq!(format!("{back:?}"), format!("{:?}", cut.entries), "postcard round trip");
});

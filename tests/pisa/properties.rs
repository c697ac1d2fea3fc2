//! Property tests: the line splitter and the tree never panic or hang, whatever the input.

use pisa::analyze::{FileAnalysis, analyze_bytes};
use pisa::parse::{Scratch, parse_file};
use proptest::prelude::*;

const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(br#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}"#.to_vec()),
        Just(br#"{"type":"custom","id":"b","parentId":"a"}"#.to_vec()),
        Just(b"".to_vec()),
        Just(b"   \r".to_vec()),
        Just("\u{feff}".as_bytes().to_vec()),
        Just(b"null".to_vec()),
        Just(b"42".to_vec()),
        Just(b"{\"type\":\"x\",\"t\":\"\\ud83d\"}".to_vec()),
        Just(b"{\"type\":\"x\",\"t\":\"\xff\xfe\"}".to_vec()),
        prop::collection::vec(any::<u8>(), 0..40),
    ]
}

fn file() -> impl Strategy<Value = Vec<u8>> {
    (prop::collection::vec(line(), 0..30), any::<bool>(), any::<bool>()).prop_map(
        |(lines, header, trailing_newline)| {
            let mut out = Vec::new();
            if header {
                out.extend_from_slice(HEADER.as_bytes());
                out.push(b'\n');
            }
            for (i, l) in lines.iter().enumerate() {
                out.extend_from_slice(l);
                if i + 1 < lines.len() || trailing_newline {
                    out.push(b'\n');
                }
            }
            out
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every physical line is accounted for exactly once: blank, kept, dropped, malformed
    /// or the pending tail.
    #[test]
    fn line_splitter_accounts_for_every_line(bytes in file()) {
        let p = parse_file(&bytes, &mut Scratch::default());
        let s = &p.stats;
        let expected_lines = bytes.split(|&b| b == b'\n').count() as u64 - u64::from(bytes.last() == Some(&b'\n')) ;
        prop_assert_eq!(s.lines, if bytes.is_empty() { 0 } else { expected_lines });
        let pending = u64::from(s.pending_tail_bytes > 0);
        prop_assert_eq!(s.blank_lines + s.parsed_lines + s.dropped_values + s.malformed_lines + pending, s.lines);
        prop_assert!(s.raw_blank_lines <= s.blank_lines);
        if p.reject.is_none() {
            prop_assert_eq!(p.entries.len() as u64, s.parsed_lines);
        }
    }

    /// Random trees, with cycles, self-parents, duplicate ids and missing parents:
    /// analysis terminates and its paths stay within the entries.
    #[test]
    fn random_trees_never_hang(parents in prop::collection::vec((0u8..12, 0u8..14, 0u8..4), 1..60)) {
        let mut text = format!("{HEADER}\n");
        for (i, (id, parent, kind)) in parents.iter().enumerate() {
            let parent = match parent { 12 => "null".to_string(), 13 => "\"nowhere\"".to_string(), p => format!("\"e{p}\"") };
            let body = match kind {
                0 => r#""type":"message","message":{"role":"assistant","content":[{"type":"text","text":"x"}],"provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.001}},"stopReason":"stop"}"#.to_string(),
                1 => format!(r#""type":"compaction","summary":"s","firstKeptEntryId":"e{}","tokensBefore":10"#, i % 12),
                2 => format!(r#""type":"context_edit","targetId":"e{}","replacement":null"#, i % 12),
                _ => r#""type":"message","message":{"role":"user","content":"u"}"#.to_string(),
            };
            text.push_str(&format!("{{{body},\"id\":\"e{id}\",\"parentId\":{parent}}}\n"));
        }
        match analyze_bytes(text.as_bytes(), &mut Scratch::default()) {
            FileAnalysis::Session(a) => {
                prop_assert!(a.active_path_length <= a.tree.entries.len() as u64);
                prop_assert!(a.context_entry_count <= a.tree.entries.len() as u64 + 1);
                prop_assert_eq!(a.accounting.records.len(), parents.iter().filter(|p| p.2 == 0).count());
            }
            FileAnalysis::Rejected { .. } => prop_assert!(false, "a file with a header is accepted"),
        }
    }
}

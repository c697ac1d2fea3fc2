//! The whole-file path: bytes → `parse_file` → `analyze_parsed` → what `pisa sessions --json`
//! and `pisa inspect` print, the usage frame rows and the reports' rows. Invariants, besides not
//! panicking:
//! - going on from a prefix parsed before (the cache's resume path, through its postcard
//!   encoding) gives exactly the parse of the whole file;
//! - feeding `FileParser` the same bytes in arbitrary line-aligned pieces gives it too;
//! - the reports' fixed-width rows of the billed calls read back as the records say.
//!
//! Cut points are drawn from a hash of the input, so every run of one input is the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pisa::analyze::{FileAnalysis, FileRecord, SessionFacts, analyze_parsed};
use pisa::corpus::SessionRef;
use pisa::corpus::billed::{Billed, BilledCalls};
use pisa::frame::{CallRow, Pricer, UsageColumns, UsageRow};
use pisa::parse::{FileParser, ParsedFile, Prefix, Scratch, parse_file, parse_file_from};
use pisa::report::inspect;

/// The embedded price table, read once.
static PRICING: std::sync::OnceLock<pisa::pricing::Pricing> = std::sync::OnceLock::new();

/// A small deterministic generator seeded from the input (FNV-1a, then xorshift).
struct Draw(u64);

impl Draw {
    fn of(data: &[u8]) -> Draw {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in data {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Draw(h | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % (n as u64 + 1)) as usize
    }
}

fn resumed(data: &[u8], cut: usize) -> Option<ParsedFile> {
    let (first, resume) = parse_file_from(&data[..cut], None, &mut Scratch::default());
    if first.reject.is_some() {
        return None;
    }
    let saved = postcard::to_stdvec(&resume.prefix_of(&first.entries)).expect("a prefix encodes");
    let prefix: Prefix = postcard::from_bytes(&saved).expect("a prefix decodes");
    Some(parse_file_from(data, Some(prefix), &mut Scratch::default()).0)
}

fn in_pieces(data: &[u8], draw: &mut Draw) -> ParsedFile {
    let mut scratch = Scratch::default();
    let mut parser = FileParser::new(None, &mut scratch);
    let end = data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut start = 0;
    while start < end {
        let goal = start + draw.below(end - start);
        let cut = data[goal..end]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(end, |i| goal + i + 1);
        parser.lines(&data[start..cut], &mut scratch);
        start = cut;
    }
    parser.finish(&data[end..], &mut scratch).0
}

fuzz_target!(|data: &[u8]| {
    let parsed = parse_file(data, &mut Scratch::default());
    let whole = format!("{parsed:?}");
    let mut draw = Draw::of(data);

    let cut = draw.below(data.len());
    if let Some(again) = resumed(data, cut) {
        assert_eq!(format!("{again:?}"), whole, "resumed from byte {cut}");
    }
    assert_eq!(format!("{:?}", in_pieces(data, &mut draw)), whole, "parsed in pieces");

    let rel = "p/f.jsonl";
    match analyze_parsed(parsed) {
        FileAnalysis::Rejected {
            stats,
            reason,
            pi_entries,
            transcript,
        } => {
            let not_session = pisa::analyze::not_a_session(rel, pi_entries);
            let record = FileRecord::rejected(rel, &stats, &reason, not_session, transcript.is_some());
            serde_json::to_string(&record.document()).expect("JSON serializes");
            if let Some(records) = transcript {
                let calls = pisa::usage::transcript_records(&records);
                assert!(calls.iter().all(|c| c.source == pisa::usage::Source::Transcript));
            }
        }
        FileAnalysis::Session(a) => {
            let facts = SessionFacts::of(rel, &a);
            let json = serde_json::to_string(&facts).expect("JSON serializes");
            let back: SessionFacts =
                postcard::from_bytes(&postcard::to_stdvec(&facts).expect("facts encode")).expect("facts decode");
            assert_eq!(serde_json::to_string(&back).expect("JSON serializes"), json, "binary round trip");
            serde_json::to_string(&inspect::to_json(rel, &a, &[])).expect("JSON serializes");
            inspect::render(&mut Vec::new(), rel, &a, &[]).expect("writing to a Vec");
            let session = SessionRef {
                rel,
                session_id: a.tree.header.id.as_deref(),
                project: &facts.project,
            };
            let records = &a.accounting.records;
            let pricing = PRICING.get_or_init(pisa::pricing::Pricing::default);
            let mut pricer = Pricer::new(pricing, pisa::pricing::CostMode::Auto);
            // The usage frame's rows, from the records as the spill holds and reads them back.
            let mut spilled = Vec::new();
            pisa::corpus::spill::encode_records(records, &mut spilled);
            let spilled = pisa::corpus::spill::Records::new(spilled);
            let views = spilled.views().expect("spilled records read back");
            assert_eq!(views.len(), records.len());
            let mut part = UsageColumns::default();
            for record in &views {
                let call = Billed::of(record);
                let priced = pricer.price(&call);
                let row = CallRow {
                    file: &session,
                    spawned_by: None,
                    call,
                    reason: None,
                    priced,
                };
                part.push(&UsageRow { row, record });
            }
            let frame = part.finish().expect("the usage rows follow their schema");
            assert_eq!(frame.height(), records.len());
            let mut bytes = Vec::new();
            pisa::corpus::billed::encode(records, &mut bytes);
            let back = BilledCalls::new(bytes).expect("encoded rows read back");
            assert_eq!(back.len(), records.len());
            for (b, r) in back.iter().zip(records) {
                assert_eq!(format!("{b:?}"), format!("{:?}", Billed::of(r)), "a report's row");
            }
        }
    }
});

//! What reports need of each billed call (its source, kind, model keys, time, tokens and
//! cost), in a fixed-width encoding beside the full records: a report reads 80 bytes a call
//! and a small string table per file, with nothing to parse (no UTF-8 check per value, no
//! timestamp to read), where the full records (what exports write) take about three times
//! the bytes and a decoder.
//!
//! Layout (little-endian): `u32` calls, `u32` strings, each string as `u32` length and bytes,
//! then one [`ROW`]-byte row per call: source `u8`, flags `u8` (time, one-hour cache write),
//! 2 bytes of padding, the string indices of kind, provider, model and response model (`u32`,
//! [`NONE`] for none), 4 bytes of padding, the time (Unix ms, `i64`), then input, output, cache read, cache
//! write, one-hour cache write and cost (`f64` bits).

use std::io;

use crate::usage::{Record, Source, UsageRecord};

/// Bytes of one call's row.
const ROW: usize = 80;
/// A string index that stands for no string.
const NONE: u32 = u32::MAX;
const HAS_TIME: u8 = 1;
const HAS_CACHE_WRITE_1H: u8 = 2;

/// The sources, by their code in a row.
pub(super) const SOURCES: [Source; 7] = [
    Source::Assistant,
    Source::Usage,
    Source::Tool,
    Source::Compaction,
    Source::BranchSummary,
    Source::Subagent,
    Source::Transcript,
];

/// One billed call as reports see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Billed<'a> {
    pub source: Source,
    /// `kind` of a usage entry.
    pub kind: Option<&'a str>,
    pub provider: Option<&'a str>,
    pub model: Option<&'a str>,
    pub response_model: Option<&'a str>,
    /// Unix ms, UTC: the entry's time, else the message's ([`crate::analyze::time_of`]).
    pub ms: Option<i64>,
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub cache_write_1h: Option<f64>,
    /// What Pi recorded (`cost.total`).
    pub cost: f64,
}

impl<'a> Billed<'a> {
    /// The call of a full record.
    pub fn of<S: AsRef<str>>(r: &'a Record<S>) -> Billed<'a> {
        let text = |s: &'a Option<S>| s.as_ref().map(AsRef::as_ref);
        Billed {
            source: r.source,
            kind: text(&r.kind),
            provider: text(&r.provider),
            model: text(&r.model),
            response_model: text(&r.response_model),
            ms: crate::analyze::time_of(text(&r.timestamp), r.message_timestamp),
            input: r.input,
            output: r.output,
            cache_read: r.cache_read,
            cache_write: r.cache_write,
            cache_write_1h: r.cache_write_1h,
            cost: r.cost_total,
        }
    }

    /// `input + output + cacheRead + cacheWrite`.
    pub fn tokens(&self) -> f64 {
        self.input + self.output + self.cache_read + self.cache_write
    }
}

/// Encode the calls of `records` into `out` (cleared first).
pub fn encode(records: &[UsageRecord], out: &mut Vec<u8>) {
    let mut strings: Vec<&str> = Vec::new();
    let mut index: hashbrown::HashMap<&str, u32> = hashbrown::HashMap::new();
    let mut rows = Vec::with_capacity(records.len() * ROW);
    for r in records {
        let b = Billed::of(r);
        let source = SOURCES
            .iter()
            .position(|s| *s == b.source)
            .expect("every source has a code") as u8;
        let flags = if b.ms.is_some() { HAS_TIME } else { 0 }
            | if b.cache_write_1h.is_some() {
                HAS_CACHE_WRITE_1H
            } else {
                0
            };
        rows.extend_from_slice(&[source, flags, 0, 0]);
        for s in [b.kind, b.provider, b.model, b.response_model] {
            let id = s.map_or(NONE, |s| {
                *index.entry(s).or_insert_with(|| {
                    strings.push(s);
                    strings.len() as u32 - 1
                })
            });
            rows.extend_from_slice(&id.to_le_bytes());
        }
        rows.extend_from_slice(&[0; 4]);
        rows.extend_from_slice(&b.ms.unwrap_or(0).to_le_bytes());
        let numbers = [
            b.input,
            b.output,
            b.cache_read,
            b.cache_write,
            b.cache_write_1h.unwrap_or(0.0),
            b.cost,
        ];
        for x in numbers {
            rows.extend_from_slice(&x.to_bits().to_le_bytes());
        }
    }
    out.clear();
    out.extend_from_slice(&(records.len() as u32).to_le_bytes());
    out.extend_from_slice(&(strings.len() as u32).to_le_bytes());
    for s in &strings {
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    out.extend_from_slice(&rows);
}

/// A file's calls as [`encode`] wrote them, checked once and read without copies.
#[derive(Debug, Default)]
pub struct BilledCalls {
    bytes: Vec<u8>,
    /// Where each string is in `bytes`.
    strings: Vec<(usize, usize)>,
    /// Where the rows start.
    rows: usize,
    len: usize,
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("billed calls: {what}"))
}

impl BilledCalls {
    /// Check `bytes` (every string UTF-8, every index and source in range) and keep them.
    pub fn new(bytes: Vec<u8>) -> io::Result<BilledCalls> {
        let u32_at = |at: usize| -> io::Result<u32> {
            let b = bytes.get(at..at + 4).ok_or_else(|| bad("cut short"))?;
            Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
        };
        if bytes.is_empty() {
            return Ok(BilledCalls::default());
        }
        let len = u32_at(0)? as usize;
        let count = u32_at(4)? as usize;
        let mut at = 8;
        let mut strings = Vec::with_capacity(count);
        for _ in 0..count {
            let n = u32_at(at)? as usize;
            let s = bytes.get(at + 4..at + 4 + n).ok_or_else(|| bad("cut short"))?;
            std::str::from_utf8(s).map_err(|_| bad("a string is not UTF-8"))?;
            strings.push((at + 4, n));
            at += 4 + n;
        }
        if bytes.len() != at + len * ROW {
            return Err(bad("wrong length"));
        }
        for row in bytes[at..].chunks_exact(ROW) {
            let indices = row[4..20]
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")));
            if usize::from(row[0]) >= SOURCES.len() || indices.into_iter().any(|i| i != NONE && i as usize >= count) {
                return Err(bad("a value out of range"));
            }
        }
        Ok(BilledCalls {
            bytes,
            strings,
            rows: at,
            len,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn string(&self, index: u32) -> Option<&str> {
        let &(at, n) = self.strings.get(index as usize)?;
        // SAFETY: every string was checked to be UTF-8 in `new`, and the bytes are not changed since.
        Some(unsafe { std::str::from_utf8_unchecked(&self.bytes[at..at + n]) })
    }

    /// The calls, in file order.
    pub fn iter(&self) -> impl Iterator<Item = Billed<'_>> + '_ {
        self.bytes[self.rows..].chunks_exact(ROW).map(|row| {
            let u32_at = |at: usize| u32::from_le_bytes(row[at..at + 4].try_into().expect("4 bytes"));
            let f64_at = |at: usize| f64::from_bits(u64::from_le_bytes(row[at..at + 8].try_into().expect("8 bytes")));
            let flags = row[1];
            Billed {
                source: SOURCES[usize::from(row[0])],
                kind: self.string(u32_at(4)),
                provider: self.string(u32_at(8)),
                model: self.string(u32_at(12)),
                response_model: self.string(u32_at(16)),
                ms: (flags & HAS_TIME != 0).then(|| i64::from_le_bytes(row[24..32].try_into().expect("8 bytes"))),
                input: f64_at(32),
                output: f64_at(40),
                cache_read: f64_at(48),
                cache_write: f64_at(56),
                cache_write_1h: (flags & HAS_CACHE_WRITE_1H != 0).then(|| f64_at(64)),
                cost: f64_at(72),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use compact_str::CompactString;

    fn record(source: Source, provider: Option<&str>, model: Option<&str>, ts: Option<&str>) -> UsageRecord {
        UsageRecord {
            entry: 0,
            entry_id: None,
            source,
            kind: (source == Source::Usage).then(|| CompactString::from("cache_warm")),
            provider: provider.map(CompactString::from),
            model: model.map(CompactString::from),
            response_model: None,
            api: None,
            stop_reason: None,
            thinking_level: None,
            timestamp: ts.map(CompactString::from),
            message_timestamp: ts.map(|_| 1.7e12),
            child: None,
            input: 1.5,
            output: f64::NAN,
            cache_read: -0.0,
            cache_write: 1e300,
            cache_write_1h: (source == Source::Assistant).then_some(3.0),
            reasoning: None,
            total_tokens: 0.0,
            cost_input: 0.0,
            cost_output: 0.0,
            cost_cache_read: 0.0,
            cost_cache_write: 0.0,
            cost_total: 0.1 + 0.2,
            cost_from_provider: false,
            missing: 0,
            on_active_path: true,
            identity: 0,
            inherited: false,
        }
    }

    #[test]
    fn calls_read_back_as_the_records_say_bit_for_bit() {
        let records: Vec<UsageRecord> = SOURCES
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                let model = ["claude-sonnet-4-5", "gpt-5", "日本"][i % 3];
                let ts = [Some("2026-01-02T03:04:05.678Z"), None, Some("not a time")][i % 3];
                record(s, (i % 2 == 0).then_some("anthropic"), Some(model), ts)
            })
            .collect();
        let mut bytes = Vec::new();
        encode(&records, &mut bytes);
        let calls = BilledCalls::new(bytes).expect("valid");
        assert_eq!(calls.len(), records.len());
        let back: Vec<Billed<'_>> = calls.iter().collect();
        for (b, r) in back.iter().zip(&records) {
            let want = Billed::of(r);
            assert_eq!(
                (b.source, b.kind, b.provider, b.model, b.response_model, b.ms),
                (
                    want.source,
                    want.kind,
                    want.provider,
                    want.model,
                    want.response_model,
                    want.ms
                )
            );
            let bits = |x: &Billed<'_>| {
                [
                    x.input,
                    x.output,
                    x.cache_read,
                    x.cache_write,
                    x.cache_write_1h.unwrap_or(7.0),
                    x.cost,
                ]
                .map(f64::to_bits)
            };
            assert_eq!(bits(b), bits(&want));
            assert_eq!(b.cache_write_1h.is_some(), want.cache_write_1h.is_some());
        }
        assert!(back.iter().any(|b| b.ms.is_none()) && back.iter().any(|b| b.ms.is_some()));
    }

    #[test]
    fn damaged_bytes_are_an_error_not_a_panic() {
        let mut bytes = Vec::new();
        encode(&[record(Source::Assistant, Some("p"), Some("m"), None)], &mut bytes);
        for cut in 1..bytes.len() {
            assert!(BilledCalls::new(bytes[..cut].to_vec()).is_err(), "cut at {cut}");
        }
        let mut bad_source = bytes.clone();
        let rows = bytes.len() - ROW;
        bad_source[rows] = 200;
        assert!(BilledCalls::new(bad_source).is_err());
        let mut bad_index = bytes.clone();
        bad_index[rows + 8] = 9;
        assert!(BilledCalls::new(bad_index).is_err());
        assert!(BilledCalls::new(Vec::new()).is_ok_and(|c| c.is_empty()));
    }
}

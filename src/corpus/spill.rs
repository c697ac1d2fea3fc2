//! Where the per-session bulk waits for the cross-session step: an anonymous temporary file.
//!
//! A session's `sessions --json` document and the identity and totals of each of its billed
//! calls are needed only after every file is read (fork deduplication needs them all, and the
//! output is sorted). Kept in memory they made peak RSS grow with the corpus (52 → 79 MB from
//! 1.5 to 3 GB); written here, what stays in memory per session is a few spans. Without a
//! cache the file has no name (`tempfile::tempfile`, `$TMPDIR`) and is gone when pisa exits,
//! however it exits. With one, it is made in the cache folder and kept when the cache points
//! into it (see [`super::cache`]): a file unchanged since an earlier run has its bulk read from
//! that run's spill, neither decoded nor written again.
//! Workers write concurrently: each reserves its range with an atomic add and writes there.
//! When no temporary file can be made or written (no `$TMPDIR`, a full disk), the bytes are
//! kept in memory instead: pisa then needs more memory, but its output is the same.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::usage::{RecordView, Totals, UsageRecord};

/// Where a [`Span`]'s bytes are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Place {
    /// This run's file.
    #[default]
    File,
    /// Memory (no file could be written).
    Memory,
    /// An earlier run's file kept by the cache (its index in [`Spill::kept`]).
    Kept(u32),
}

/// A range of bytes written to a [`Spill`] (or kept from an earlier run's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Span {
    offset: u64,
    len: u64,
    place: Place,
}

impl Span {
    pub fn len(self) -> u64 {
        self.len
    }

    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// The part of this span from `at`, `len` bytes long (`None` beyond its end).
    pub fn part(self, at: u64, len: u64) -> Option<Span> {
        (at.checked_add(len)? <= self.len).then_some(Span {
            offset: self.offset + at,
            len,
            place: self.place,
        })
    }

    /// Where this span lies in this run's file, if it was written there: what the cache
    /// can point at once the file is kept.
    pub fn in_file(self) -> Option<(u64, u64)> {
        (self.place == Place::File).then_some((self.offset, self.len))
    }
}

/// An append-only temporary file shared by the workers (memory when there is no file), and
/// the files of earlier runs that the cache kept, read-only.
#[derive(Debug, Default)]
pub struct Spill {
    file: Option<File>,
    /// `file` is this run's alone (no cache keeps it): [`Spill::discard`] may empty it.
    temporary: bool,
    end: AtomicU64,
    memory: Mutex<Vec<u8>>,
    kept: Vec<File>,
}

impl Spill {
    /// A new, empty spill: a temporary file, or memory when none can be made.
    pub fn new() -> Spill {
        Spill {
            temporary: true,
            ..Spill::with_file(tempfile::tempfile().ok(), Vec::new())
        }
    }

    /// Empty this run's temporary file (not one a cache keeps), whose pages the system would
    /// otherwise free when pisa exits (5 ms for the 44 MB an export of 1.5 GB spills): for a
    /// command that will read nothing back any more, which can do it beside other work.
    /// Reading a span of the file fails afterwards.
    pub fn discard(&self) {
        if let (true, Some(file)) = (self.temporary, &self.file) {
            let _ = file.set_len(0);
        }
    }

    /// A spill writing to `file` (memory if `None`), and reading earlier runs' `kept` files.
    pub fn with_file(file: Option<File>, kept: Vec<File>) -> Spill {
        Spill {
            file,
            kept,
            ..Spill::default()
        }
    }

    /// Only memory (for tests of the fallback).
    pub fn in_memory() -> Spill {
        Spill::default()
    }

    /// The span `offset..offset + len` of the kept file `kept` (as given to
    /// [`Spill::with_file`]).
    pub fn kept_span(kept: u32, offset: u64, len: u64) -> Span {
        Span {
            offset,
            len,
            place: Place::Kept(kept),
        }
    }

    /// Write `bytes`; where they are.
    pub fn put(&self, bytes: &[u8]) -> Span {
        let len = bytes.len() as u64;
        if let Some(file) = &self.file {
            let offset = self.end.fetch_add(len, Ordering::Relaxed);
            if file.write_all_at(bytes, offset).is_ok() {
                return Span {
                    offset,
                    len,
                    place: Place::File,
                };
            }
        }
        let mut memory = self.memory.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let offset = memory.len() as u64;
        memory.extend_from_slice(bytes);
        Span {
            offset,
            len,
            place: Place::Memory,
        }
    }

    /// Read the bytes of `span` into `buf` (cleared first).
    pub fn get_into(&self, span: Span, buf: &mut Vec<u8>) -> io::Result<()> {
        buf.clear();
        let file = match span.place {
            Place::File => self.file.as_ref(),
            Place::Kept(k) => self.kept.get(k as usize),
            Place::Memory => {
                let range = span.offset as usize..(span.offset + span.len) as usize;
                let memory = self.memory.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let bytes = memory
                    .get(range)
                    .ok_or_else(|| io::Error::other("span beyond the spill"))?;
                buf.extend_from_slice(bytes);
                return Ok(());
            }
        };
        let file = file.ok_or_else(|| io::Error::other("span of a file the spill does not have"))?;
        buf.resize(span.len as usize, 0);
        file.read_exact_at(buf, span.offset)
    }

    /// The bytes of `span`.
    pub fn get(&self, span: Span) -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.get_into(span, &mut buf)?;
        Ok(buf)
    }

    /// Bytes written so far, to the file and to memory.
    pub fn len(&self) -> u64 {
        let memory = self
            .memory
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len();
        self.end.load(Ordering::Relaxed) + memory as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The parts of a file's bulk, one after the other: a session's facts, then its billed calls'
/// identities, totals, lean rows ([`super::billed`]) and full records.
pub const PARTS: usize = 5;

/// Billed calls as postcard (what reports and frames read back, one file at a time).
pub fn encode_records(records: &[UsageRecord], out: &mut Vec<u8>) {
    out.clear();
    *out = postcard::to_extend(records, std::mem::take(out)).expect("records encode");
}

/// A file's billed calls as [`encode_records`] spilled them, read back: their bytes, which
/// [`Records::views`] reads without copying their texts.
#[derive(Debug, Default)]
pub struct Records(Vec<u8>);

impl Records {
    pub fn new(bytes: Vec<u8>) -> Records {
        Records(bytes)
    }

    /// The records, in file order, their texts in these bytes.
    pub fn views(&self) -> io::Result<Vec<RecordView<'_>>> {
        if self.0.is_empty() {
            return Ok(Vec::new());
        }
        postcard::from_bytes(&self.0).map_err(io::Error::other)
    }

    /// Visit records `skip..skip + take`, in file order, decoded one at a time: none is kept
    /// after its visit (those before `skip` are decoded and passed over; none after the last
    /// visited is decoded). An error when the bytes do not hold as many.
    pub fn visit(&self, skip: usize, take: usize, mut visit: impl FnMut(&RecordView<'_>)) -> io::Result<()> {
        if take == 0 {
            return Ok(());
        }
        // postcard writes a sequence as its length (a varint) and its elements one after the
        // other, as `views` reads them.
        let (count, mut rest) = postcard::take_from_bytes::<usize>(&self.0).map_err(io::Error::other)?;
        let end = skip.saturating_add(take);
        if end > count {
            return Err(io::Error::other(format!("{end} records asked for, {count} spilled")));
        }
        for i in 0..end {
            let (record, next) = postcard::take_from_bytes::<RecordView<'_>>(rest).map_err(io::Error::other)?;
            if i >= skip {
                visit(&record);
            }
            rest = next;
        }
        Ok(())
    }
}

/// Bytes of one identity in a spilled list.
pub const IDENTITY_BYTES: usize = 16;
/// Bytes of one [`Totals`] in a spilled list.
pub const TOTALS_BYTES: usize = 40;

/// Identities as little-endian bytes.
pub fn encode_identities(ids: impl Iterator<Item = u128>, out: &mut Vec<u8>) {
    out.clear();
    for id in ids {
        out.extend_from_slice(&id.to_le_bytes());
    }
}

/// The identities of [`encode_identities`].
pub fn identities(bytes: &[u8]) -> impl Iterator<Item = u128> + '_ {
    bytes
        .chunks_exact(IDENTITY_BYTES)
        .map(|c| u128::from_le_bytes(c.try_into().expect("16 bytes")))
}

/// Totals as little-endian bytes (the bits of each `f64`, so `NaN`s and `-0` survive).
pub fn encode_totals(totals: impl Iterator<Item = Totals>, out: &mut Vec<u8>) {
    out.clear();
    for t in totals {
        for x in [t.input, t.output, t.cache_read, t.cache_write, t.cost] {
            out.extend_from_slice(&x.to_bits().to_le_bytes());
        }
    }
}

/// The totals of [`encode_totals`].
pub fn totals(bytes: &[u8]) -> impl Iterator<Item = Totals> + '_ {
    bytes.chunks_exact(TOTALS_BYTES).map(|c| {
        let f = |i: usize| f64::from_bits(u64::from_le_bytes(c[i * 8..i * 8 + 8].try_into().expect("8 bytes")));
        Totals {
            input: f(0),
            output: f(1),
            cache_read: f(2),
            cache_write: f(3),
            cost: f(4),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::billed::SOURCES;
    use compact_str::CompactString;
    use proptest::prelude::*;

    /// Texts short and long (past a `CompactString`'s 24 inline bytes), not all ASCII.
    fn text() -> impl Strategy<Value = Option<CompactString>> {
        prop::option::of("[a-z0-9/é-]{0,40}".prop_map(CompactString::from))
    }

    fn number() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>(),
            Just(-0.0),
            Just(f64::NAN),
            (0u32..1_000_000).prop_map(f64::from)
        ]
    }

    fn record() -> impl Strategy<Value = UsageRecord> {
        let texts = prop::collection::vec(text(), 10);
        let numbers = prop::collection::vec(number(), 12);
        let optional = prop::collection::vec(prop::option::of(number()), 3);
        let rest = (any::<u32>(), 0..SOURCES.len(), any::<u16>(), any::<[bool; 3]>());
        (texts, numbers, optional, rest).prop_map(|(t, n, o, (entry, source, missing, flags))| UsageRecord {
            entry,
            entry_id: t[0].clone(),
            source: SOURCES[source],
            kind: t[1].clone(),
            provider: t[2].clone(),
            model: t[3].clone(),
            response_model: t[4].clone(),
            api: t[5].clone(),
            stop_reason: t[6].clone(),
            thinking_level: t[7].clone(),
            timestamp: t[8].clone(),
            message_timestamp: o[0],
            child: None,
            input: n[0],
            output: n[1],
            cache_read: n[2],
            cache_write: n[3],
            cache_write_1h: o[1],
            reasoning: o[2],
            total_tokens: n[4],
            cost_input: n[5],
            cost_output: n[6],
            cost_cache_read: n[7],
            cost_cache_write: n[8],
            cost_total: n[9],
            cost_from_provider: flags[0],
            missing,
            on_active_path: flags[1],
            identity: 0,
            inherited: flags[2],
        })
    }

    proptest! {
        /// Spilled records read back as views are the records, field for field and bit for bit
        /// (owned and borrowed texts are written and read alike).
        #[test]
        fn spilled_records_read_back_as_their_views(records in prop::collection::vec(record(), 0..20)) {
            let mut bytes = Vec::new();
            encode_records(&records, &mut bytes);
            let back = Records::new(bytes);
            let views = back.views().expect("the records decode");
            let expected: Vec<String> = records.iter().map(|r| format!("{r:?}")).collect();
            let got: Vec<String> = views.iter().map(|v| format!("{v:?}")).collect();
            prop_assert_eq!(got, expected);
        }

        /// Any run of spilled records visited one at a time is that run of the views, and a
        /// run past the last record is an error, not fewer records. (Up to 150 records: their
        /// count takes two bytes past 127.)
        #[test]
        fn a_run_of_spilled_records_is_visited_in_order(
            records in prop::collection::vec(record(), 0..150),
            skip in 0usize..160,
            take in 0usize..160,
        ) {
            let mut bytes = Vec::new();
            encode_records(&records, &mut bytes);
            let back = Records::new(bytes);
            let views = back.views().expect("the records decode");
            let mut visited = Vec::new();
            let result = back.visit(skip, take, |r| visited.push(format!("{r:?}")));
            if take > 0 && skip + take > records.len() {
                prop_assert!(result.is_err(), "{skip} + {take} of {} records", records.len());
            } else {
                prop_assert!(result.is_ok());
                let expected: Vec<String> = views.iter().skip(skip).take(take).map(|v| format!("{v:?}")).collect();
                prop_assert_eq!(visited, expected);
            }
        }
    }

    /// A temporary spill is emptied when discarded (its spans no longer read back); one a
    /// cache may keep is left as it is, as is a spill in memory.
    #[test]
    fn only_a_temporary_spill_is_discarded() {
        let temporary = Spill::new();
        let kept = Spill::with_file(tempfile::tempfile().ok(), Vec::new());
        let memory = Spill::in_memory();
        let spans: Vec<Span> = [&temporary, &kept, &memory]
            .map(|s| s.put(b"forty-seven megabytes"))
            .to_vec();
        for s in [&temporary, &kept, &memory] {
            s.discard();
        }
        assert!(temporary.get(spans[0]).is_err(), "the temporary file is empty");
        assert_eq!(kept.get(spans[1]).expect("kept"), b"forty-seven megabytes");
        assert_eq!(memory.get(spans[2]).expect("in memory"), b"forty-seven megabytes");
    }

    #[test]
    fn concurrent_writers_read_back_what_they_wrote() {
        for spill in [Spill::new(), Spill::in_memory()] {
            concurrent_writers(spill);
        }
    }

    fn concurrent_writers(spill: Spill) {
        let spans: Vec<(usize, Span)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    let spill = &spill;
                    s.spawn(move || {
                        (0..200)
                            .map(|i| {
                                let n = t * 1000 + i;
                                (n, spill.put(n.to_string().repeat(i % 7 + 1).as_bytes()))
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let total: u64 = spans.iter().map(|(_, s)| s.len()).sum();
        assert_eq!(spill.len(), total);
        for (n, span) in spans {
            let want = n.to_string().repeat(n % 1000 % 7 + 1);
            assert_eq!(spill.get(span).unwrap(), want.as_bytes());
        }
    }

    #[test]
    fn identities_and_totals_round_trip_bit_for_bit() {
        let ids = [0u128, 1, u128::MAX, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210];
        let mut buf = Vec::new();
        encode_identities(ids.iter().copied(), &mut buf);
        assert_eq!(identities(&buf).collect::<Vec<_>>(), ids);
        let t = [
            Totals {
                input: f64::NAN,
                output: -0.0,
                cache_read: 1e300,
                cache_write: 0.1 + 0.2,
                cost: f64::NEG_INFINITY,
            },
            Totals::default(),
        ];
        encode_totals(t.iter().copied(), &mut buf);
        let back: Vec<Totals> = totals(&buf).collect();
        for (a, b) in t.iter().zip(&back) {
            for (x, y) in [
                (a.input, b.input),
                (a.output, b.output),
                (a.cache_read, b.cache_read),
                (a.cache_write, b.cache_write),
                (a.cost, b.cost),
            ] {
                assert_eq!(x.to_bits(), y.to_bits());
            }
        }
    }
}

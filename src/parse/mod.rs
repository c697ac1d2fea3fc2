//! Bytes → lines → typed entries, following Pi's `loadEntriesFromFile` exactly.
//!
//! Pi splits the decoded file on `\n`, skips lines that `String#trim` empties, parses the
//! rest with `JSON.parse`, silently drops lines that fail or parse to a falsy value, and
//! accepts the file only when the first parsed value is a `session` header with a string
//! `id`. pisa does the same on bytes, and counts everything it skips.

pub mod cut;
pub mod entry;
pub mod extract;
pub mod known;
pub mod measure;
pub mod repair;
pub mod tape;

use simd_json::tape::Tape;

use entry::{Body, Entry, EntryType, Header, TranscriptRecord};
use extract::LineCtx;
use tape::{Marks, Val};

/// Why Pi refuses a whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectReason {
    /// The file has no bytes.
    EmptyFile,
    /// No line parses to a value Pi keeps.
    NoParsableEntries,
    /// The first kept value is not a `session` header with a string `id`.
    FirstEntryNotSessionHeader {
        /// What the first kept value was, for the message.
        found: String,
        /// Byte offset of that line.
        offset: u64,
    },
}

impl RejectReason {
    /// The code the oracle prints.
    pub fn code(&self) -> &'static str {
        match self {
            RejectReason::EmptyFile => "empty_file",
            RejectReason::NoParsableEntries => "no_parsable_entries",
            RejectReason::FirstEntryNotSessionHeader { .. } => "first_entry_not_session_header",
        }
    }

    /// A one-line explanation for people.
    pub fn message(&self) -> String {
        match self {
            RejectReason::EmptyFile => "empty file".into(),
            RejectReason::NoParsableEntries => "no line parses as JSON".into(),
            RejectReason::FirstEntryNotSessionHeader { found, offset } => {
                format!(
                    "Pi does not load it: the first entry (byte {offset}) is {found}, not a session header with a string id"
                )
            }
        }
    }
}

/// The first line pisa had to skip, for the report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Damage {
    /// Physical line number, 1-based.
    pub line: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// Why the line was skipped.
    pub reason: String,
}

/// Line-level accounting of one file.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LineStats {
    pub bytes: u64,
    /// Physical lines split on `\n`; an unterminated last line counts.
    pub lines: u64,
    pub ends_with_newline: bool,
    /// Lines of only spaces, tabs and `\r` (the oracle's diagnostic definition).
    pub raw_blank_lines: u64,
    /// Lines `String#trim` empties (what Pi skips as blank; includes BOM-only lines).
    pub blank_lines: u64,
    /// Lines that are not JSON (Pi skips them silently), not counting a pending tail.
    pub malformed_lines: u64,
    /// Lines that parse to `null`, `0`, `false` or `""` (Pi drops them).
    pub dropped_values: u64,
    /// Bytes of an unterminated last line that does not parse: Pi is still writing it.
    pub pending_tail_bytes: u64,
    /// Lines with invalid UTF-8 that parsed after decoding with U+FFFD, as Node does.
    pub invalid_utf8_lines: u64,
    /// Lines with lone surrogate escapes (valid for `JSON.parse`).
    pub lone_surrogate_lines: u64,
    /// Lines with number literals beyond the double range (`Infinity` for `JSON.parse`).
    pub out_of_range_number_lines: u64,
    /// Parsed values kept (header included): `loadEntriesFromFile(...).length`.
    pub parsed_lines: u64,
    /// The first skipped line.
    pub first_damage: Option<Damage>,
    /// The file starts with a UTF-8 byte order mark.
    pub bom: bool,
}

impl LineStats {
    /// Add the line counts of lines that follow these (`first_damage` already numbered).
    fn add_lines(&mut self, next: &LineStats) {
        let LineStats {
            bytes: _,
            lines,
            ends_with_newline: _,
            raw_blank_lines,
            blank_lines,
            malformed_lines,
            dropped_values,
            pending_tail_bytes: _,
            invalid_utf8_lines,
            lone_surrogate_lines,
            out_of_range_number_lines,
            parsed_lines,
            first_damage,
            bom: _,
        } = next;
        self.lines += lines;
        self.raw_blank_lines += raw_blank_lines;
        self.blank_lines += blank_lines;
        self.malformed_lines += malformed_lines;
        self.dropped_values += dropped_values;
        self.invalid_utf8_lines += invalid_utf8_lines;
        self.lone_surrogate_lines += lone_surrogate_lines;
        self.out_of_range_number_lines += out_of_range_number_lines;
        self.parsed_lines += parsed_lines;
        if self.first_damage.is_none() {
            self.first_damage.clone_from(first_damage);
        }
    }
}

/// A file read the way Pi reads it.
#[derive(Debug, Clone, Default)]
pub struct ParsedFile {
    pub stats: LineStats,
    /// Every kept value in file order, the header first. Empty when rejected.
    pub entries: Vec<Entry>,
    /// `None` when Pi accepts the file.
    pub reject: Option<RejectReason>,
    /// Some kept value is an entry of a type Pi writes (a header included): a rejected file
    /// with such entries is a session Pi cannot load, not a file of something else.
    pub pi_entries: bool,
    /// A rejected file whose first value is a subagent transcript record: its records.
    pub transcript: Option<Vec<TranscriptRecord>>,
}

impl ParsedFile {
    /// The header (the first entry) of an accepted file.
    pub fn header(&self) -> Option<&Header> {
        match self.entries.first().map(|e| &e.body) {
            Some(Body::Header(h)) if self.reject.is_none() => Some(h),
            _ => None,
        }
    }
}

/// Per-worker buffers, reused for every line: the padded line copy, simd-json's buffers
/// and tape, and the repair buffer.
pub struct Scratch {
    line: Vec<u8>,
    repaired: Vec<u8>,
    buffers: simd_json::Buffers,
    tape: Option<Tape<'static>>,
    unique: u32,
    cutter: cut::Cutter,
    /// The worker's read buffer (see [`Scratch::read_file`]).
    read: Vec<u8>,
    /// Cut payloads of image, text and thinking blocks out of lines before parsing (see
    /// `cut::copy_cutting_payloads`), and read tool results and user messages in Pi's form
    /// without simd-json (see `known`). Off, every line is parsed whole by simd-json: the
    /// reference the tests compare with.
    pub cut_payloads: bool,
    /// Scratch of the cores that help with a big file.
    helpers: Vec<Scratch>,
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scratch")
            .field("line_capacity", &self.line.capacity())
            .finish_non_exhaustive()
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            line: Vec::with_capacity(64 * 1024),
            repaired: Vec::new(),
            // JSON.parse has no nesting limit; nothing pisa does with a tape recurses.
            buffers: simd_json::Buffers::with_max_depth(64 * 1024, usize::MAX),
            tape: Some(Tape(Vec::with_capacity(4096))),
            unique: 0,
            cutter: cut::Cutter::default(),
            read: Vec::new(),
            cut_payloads: true,
            helpers: Vec::new(),
        }
    }
}

/// The outcome of parsing one line.
enum LineOutcome {
    /// Its entry was pushed onto the file's entries (where it is made, not moved once more
    /// through this value).
    Parsed,
    Falsy,
    Invalid,
}

impl Scratch {
    /// Parse `bytes` as one JSON document and turn it into an entry (`None` for a falsy value).
    fn parse_line(&mut self, bytes: &[u8], line: u32, offset: u64, marks: Marks<'_>) -> Result<Option<Entry>, ()> {
        // A repaired line's U+FFFF may stand for a lone surrogate, which `JSON.stringify`
        // writes longer: such (rare) lines are parsed whole.
        let cutting = self.cut_payloads && !marks.lone_surrogates;
        // Without a cut, `copy_cutting_payloads` leaves the line as it is in `self.line`.
        if cutting && cut::copy_cutting_payloads(bytes, &mut self.line, &self.cutter) {
            let unique = self.unique;
            let needed = std::cell::Cell::new(false);
            let outcome = self.parse_copied(line, offset, marks.with_cuts(&needed));
            if !needed.get() {
                return outcome;
            }
            // A reader needed what a cut payload held: read the line whole.
            self.unique = unique;
            self.line.clear();
            self.line.extend_from_slice(bytes);
        } else if !cutting {
            self.line.clear();
            self.line.extend_from_slice(bytes);
        }
        self.parse_copied(line, offset, marks)
    }

    /// Parse the line copied into `self.line`.
    fn parse_copied(&mut self, line: u32, offset: u64, marks: Marks<'_>) -> Result<Option<Entry>, ()> {
        let Scratch {
            line: buf,
            buffers,
            tape,
            unique,
            ..
        } = self;
        let len = buf.len();
        buf.resize(len + simd_json::INPUT_PADDING, b' ');
        let mut t: Tape<'_> = tape.take().unwrap_or_else(|| Tape(Vec::new())).reset();
        let result = match simd_json::fill_tape_padded(buf, len, buffers, &mut t) {
            Ok(()) => {
                let root = Val::root(&t);
                if !root.truthy() {
                    Ok(None)
                } else {
                    let mut ctx = LineCtx {
                        marks,
                        unique_base: *unique,
                    };
                    let e = extract::entry_of(root, line, offset, &mut ctx);
                    *unique = ctx.unique_base;
                    Ok(Some(e))
                }
            }
            Err(_) => Err(()),
        };
        *tape = Some(t.reset());
        result
    }

    /// The entry of a tool-result, user or assistant line in Pi's own form at the start of
    /// `bytes` (which may run on into the lines after it), and the line's length: read without
    /// a tape of the line, simd-json parses only an assistant message's usage object when it is
    /// not in Pi's form either. `None` for any other line.
    fn known_entry(&mut self, bytes: &[u8], (line, offset): (u32, u64)) -> Option<(Entry, usize)> {
        if !self.cut_payloads {
            return None;
        }
        let Scratch {
            line: buf,
            buffers,
            tape,
            ..
        } = self;
        let mut usage = |object: &[u8]| {
            buf.clear();
            buf.extend_from_slice(object);
            let len = buf.len();
            buf.resize(len + simd_json::INPUT_PADDING, b' ');
            let mut t: Tape<'_> = tape.take().unwrap_or_else(|| Tape(Vec::new())).reset();
            let usage = simd_json::fill_tape_padded(buf, len, buffers, &mut t)
                .ok()
                .and_then(|()| extract::usage_of(Val::root(&t), Marks::default()));
            *tape = Some(t.reset());
            usage
        };
        known::message(bytes, line, offset, &mut usage)
    }

    /// Parse a line that [`Scratch::known_entry`] did not take, repairing it first when simd-json
    /// rejects what `JSON.parse` accepts, and push its entry onto `entries`.
    fn parse_js_line(
        &mut self,
        bytes: &[u8],
        (line, offset): (u32, u64),
        stats: &mut LineStats,
        entries: &mut Vec<Entry>,
    ) -> LineOutcome {
        let parsed = match self.parse_line(bytes, line, offset, Marks::default()) {
            Ok(parsed) => Ok(parsed),
            Err(()) => {
                let mut repaired = std::mem::take(&mut self.repaired);
                let repair = repair::repair_line(bytes, &mut repaired);
                let parsed = if repair.any() {
                    self.parse_line(&repaired, line, offset, repair.marks())
                } else {
                    Err(())
                };
                if parsed.is_ok() {
                    stats.invalid_utf8_lines += u64::from(repair.lossy);
                    stats.lone_surrogate_lines += u64::from(repair.lone_surrogates);
                    stats.out_of_range_number_lines += u64::from(repair.infinities);
                }
                self.repaired = repaired;
                parsed
            }
        };
        match parsed {
            Ok(Some(e)) => {
                entries.push(e);
                LineOutcome::Parsed
            }
            Ok(None) => LineOutcome::Falsy,
            Err(()) => LineOutcome::Invalid,
        }
    }
}

impl Scratch {
    /// Read and parse an open file, going on from `prefix` when given (its bytes up to
    /// `prefix.offset` are taken as read before). Returns the parsed file, the point to go on
    /// from next time and the file's length as read. `size` is the file's length as `fstat` gave
    /// it just before (what is read; see [`crate::scan::source::read_lines`]). Only the longest
    /// line is ever held.
    pub fn read_file(
        &mut self,
        file: &mut std::fs::File,
        size: u64,
        prefix: Option<Prefix>,
    ) -> std::io::Result<(ParsedFile, ResumePoint, u64)> {
        let resumed = prefix.is_some();
        let mut parser = FileParser::new(prefix, self);
        let start = parser.offset();
        let mut buf = std::mem::take(&mut self.read);
        parser.expect(size.saturating_sub(start));
        let threads = rayon::current_num_threads();
        let read = if size.saturating_sub(start) >= PARALLEL_MIN && threads > 1 {
            // A big file: pieces of several MB, each parsed by all cores.
            let mut helpers = std::mem::take(&mut self.helpers);
            helpers.resize_with(threads, Scratch::default);
            for h in &mut helpers {
                h.cut_payloads = self.cut_payloads;
            }
            let read = crate::scan::source::read_lines(file, start, size, &mut buf, piece_bytes(threads), |lines| {
                parser.lines_parallel(lines, self, &mut helpers)
            });
            self.helpers = helpers;
            read
        } else {
            crate::scan::source::read_lines(file, start, size, &mut buf, crate::scan::source::CHUNK, |lines| {
                parser.lines(lines, self)
            })
        };
        let out = read.map(|end| {
            let (parsed, resume) = parser.finish(&buf[end.tail], self);
            (parsed, resume, end.len)
        });
        self.read = buf;
        self.trim();
        match out {
            // The file became shorter than the prefix: read it all again.
            Ok((_, _, len)) if resumed && len < start => {
                use std::io::Seek;
                file.rewind()?;
                let size = file.metadata()?.len();
                self.read_file(file, size, None)
            }
            out => out,
        }
    }
}

impl Scratch {
    /// Parse a file whose bytes from `prefix.offset` (0 without a prefix) on are `rest`, e.g.
    /// a map of it: what [`Scratch::read_file`] makes of the same bytes, without reading them
    /// into a buffer first. The bytes are parsed in pieces as there (big files by every core);
    /// `parsed(done)` is called after each piece with the bytes of `rest` parsed so far, which
    /// are not looked at again.
    pub fn parse_bytes(
        &mut self,
        rest: &[u8],
        prefix: Option<Prefix>,
        mut parsed: impl FnMut(usize),
    ) -> (ParsedFile, ResumePoint) {
        let mut parser = FileParser::new(prefix, self);
        let whole = memchr::memrchr(b'\n', rest).map_or(0, |i| i + 1);
        parser.expect(whole as u64);
        let threads = rayon::current_num_threads();
        let parallel = whole as u64 >= PARALLEL_MIN && threads > 1;
        let mut helpers = std::mem::take(&mut self.helpers);
        if parallel {
            helpers.resize_with(threads, Scratch::default);
            for h in &mut helpers {
                h.cut_payloads = self.cut_payloads;
            }
        }
        let mut start = 0;
        while start < whole {
            let goal = (start + piece_bytes(threads)).min(whole);
            let end = memchr::memchr(b'\n', &rest[goal - 1..whole]).map_or(whole, |i| goal + i);
            if parallel {
                parser.lines_parallel(&rest[start..end], self, &mut helpers);
            } else {
                parser.lines(&rest[start..end], self);
            }
            start = end;
            parsed(start);
        }
        self.helpers = helpers;
        let out = parser.finish(&rest[whole..], self);
        self.trim();
        out
    }
}

impl Scratch {
    /// Give back what one file's longest lines made the buffers grow to. Kept, every worker's
    /// buffers (and its helpers') would each hold the longest line it ever met, and peak memory
    /// would creep up with the number of files read (measured: +4 MB from 1.5 to 3 GB with the
    /// same largest files), where it should depend only on the file being read.
    fn trim(&mut self) {
        const KEEP: usize = 1 << 20;
        // The read buffer of a big file is as big as its pieces whatever the file; dropped and
        // grown again for each one, it was zeroed and faulted in again every time (2 % of a
        // scan). Only what a very long line added is given back.
        let pieces = piece_bytes(rayon::current_num_threads()).max(crate::scan::source::CHUNK);
        if self.read.capacity() > 2 * pieces {
            self.read = Vec::new();
        }
        if self.line.capacity() > KEEP || self.repaired.capacity() > KEEP {
            let fresh = Scratch::default();
            self.line = fresh.line;
            self.repaired = fresh.repaired;
            self.buffers = fresh.buffers;
            self.tape = fresh.tape;
        }
        self.helpers.clear();
    }
}

/// Read one session file from its bytes, as Pi's loader does.
pub fn parse_file(bytes: &[u8], scratch: &mut Scratch) -> ParsedFile {
    parse_file_from(bytes, None, scratch).0
}

/// What a parse of `[0, offset)` of a file leaves behind, to go on from when the file grows
/// (Pi only appends). `offset` is the end of the last terminated line: an unterminated last
/// line may still be being written, so it is parsed again.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Prefix {
    pub offset: u64,
    pub line_no: u32,
    pub unique: u32,
    /// Line statistics of `[0, offset)`; the whole-file fields (`bytes`, `ends_with_newline`,
    /// `pending_tail_bytes`) are taken again from the whole file.
    pub stats: LineStats,
    /// Every value kept from `[0, offset)`, in file order.
    pub entries: Vec<Entry>,
}

/// Where [`parse_file_from`] stopped being sure: `[0, offset)` holds `entries` of the
/// parsed file's entries and `stats`. Save it (with those entries) as a [`Prefix`].
#[derive(Debug, Clone, Default)]
pub struct ResumePoint {
    pub offset: u64,
    pub line_no: u32,
    pub unique: u32,
    pub stats: LineStats,
    pub entries: usize,
}

impl ResumePoint {
    /// The prefix to store, borrowing the parsed entries.
    pub fn prefix_of<'a>(&'a self, entries: &'a [Entry]) -> PrefixRef<'a> {
        PrefixRef {
            offset: self.offset,
            line_no: self.line_no,
            unique: self.unique,
            stats: &self.stats,
            entries: &entries[..self.entries],
        }
    }
}

/// A [`Prefix`] that borrows, for serializing (same encoding).
#[derive(Debug, serde::Serialize)]
pub struct PrefixRef<'a> {
    pub offset: u64,
    pub line_no: u32,
    pub unique: u32,
    pub stats: &'a LineStats,
    pub entries: &'a [Entry],
}

/// Read a file whose first `prefix.offset` bytes were read before (their entries and line
/// statistics are in `prefix`), parsing only the rest. With no prefix, this is [`parse_file`].
/// The result equals a parse of the whole file when those bytes did not change.
pub fn parse_file_from(bytes: &[u8], prefix: Option<Prefix>, scratch: &mut Scratch) -> (ParsedFile, ResumePoint) {
    let prefix = prefix.filter(|p| p.offset as usize <= bytes.len());
    let mut parser = FileParser::new(prefix, scratch);
    let rest = &bytes[parser.offset() as usize..];
    let whole = memchr::memrchr(b'\n', rest).map_or(0, |i| i + 1);
    parser.lines(&rest[..whole], scratch);
    parser.finish(&rest[whole..], scratch)
}

/// One file parsed as its bytes arrive: whole lines in pieces of any size ([`FileParser::lines`]),
/// then the unterminated last line, if any ([`FileParser::finish`]). Fed the bytes of a file
/// from [`FileParser::offset`] on, it gives what [`parse_file_from`] gives for the whole file;
/// the reader never has to hold more than the longest line.
#[derive(Debug)]
pub struct FileParser {
    out: ParsedFile,
    /// File offset of the next line.
    offset: u64,
    line_no: u32,
}

impl FileParser {
    /// Start a file, or go on from a prefix of it parsed before.
    pub fn new(prefix: Option<Prefix>, scratch: &mut Scratch) -> FileParser {
        let mut p = FileParser {
            out: ParsedFile::default(),
            offset: 0,
            line_no: 0,
        };
        if let Some(prefix) = prefix {
            p.out.stats = prefix.stats;
            p.out.entries = prefix.entries;
            p.offset = prefix.offset;
            p.line_no = prefix.line_no;
            scratch.unique = scratch.unique.max(prefix.unique);
        }
        p
    }

    /// Make room for the entries of `bytes` more bytes of lines, at about one per
    /// `BYTES_PER_ENTRY`: growing the list one doubling at a time copied every entry once or
    /// twice more (2 % of a scan's instructions).
    pub fn expect(&mut self, bytes: u64) {
        const BYTES_PER_ENTRY: u64 = 2048;
        self.out
            .entries
            .reserve(usize::try_from(bytes / BYTES_PER_ENTRY).unwrap_or(0));
    }

    /// The file offset the next bytes must start at.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Parse whole lines (`lines` is empty or ends with `\n`) that start at [`FileParser::offset`].
    /// (Bytes rewritten under a map can break that between the cut and the parse; the reader of
    /// maps catches what follows, see `corpus::worker::parse_mapped`.)
    pub fn lines(&mut self, lines: &[u8], scratch: &mut Scratch) {
        debug_assert!(lines.last().is_none_or(|&b| b == b'\n'));
        if self.offset == 0 && lines.starts_with(BOM) {
            self.out.stats.bom = true;
        }
        let mut start = 0;
        while start < lines.len() {
            start += self.next_line(&lines[start..], true, scratch) + 1;
        }
    }

    /// The line at the start of `rest` (the rest of a piece, or the file's unterminated last
    /// line when not `terminated`): its length. A line in Pi's form is read to its end by the
    /// known path, which finds its newline on the way; only other lines are searched for theirs.
    fn next_line(&mut self, rest: &[u8], terminated: bool, scratch: &mut Scratch) -> usize {
        let Some((entry, len)) = scratch.known_entry(rest, (self.line_no, self.offset)) else {
            let len = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
            self.line(&rest[..len], terminated, scratch);
            return len;
        };
        // What `line` does with a line that parses.
        let stats = &mut self.out.stats;
        stats.lines += 1;
        stats.parsed_lines += 1;
        self.out.entries.push(entry);
        self.line_no = self.line_no.saturating_add(1);
        self.offset += len as u64 + u64::from(terminated);
        len
    }

    /// [`FileParser::lines`] on the worker's cores: the piece is cut at line ends into up to
    /// one segment per helper, parsed in parallel, and the results joined in file order, so
    /// the entries, their numbers and the statistics are those of a parse in one go.
    pub fn lines_parallel(&mut self, lines: &[u8], scratch: &mut Scratch, helpers: &mut [Scratch]) {
        use rayon::prelude::*;
        let parts = helpers.len().min(lines.len() / MIN_SEGMENT).max(1);
        if parts == 1 || self.offset == 0 {
            // The first piece holds the header (and maybe a BOM): keep the simple path.
            return self.lines(lines, scratch);
        }
        let mut segments = Vec::with_capacity(parts);
        let mut start = 0;
        for k in 1..=parts {
            let goal = (lines.len() * k / parts).max(start);
            let end = if k == parts {
                lines.len()
            } else {
                memchr::memchr(b'\n', &lines[goal..]).map_or(lines.len(), |i| goal + i + 1)
            };
            segments.push((start, end));
            start = end;
        }
        let base = self.offset;
        let parsed: Vec<(FileParser, u32)> = helpers[..parts]
            .par_iter_mut()
            .zip(segments.par_iter())
            .map(|(helper, &(start, end))| {
                helper.unique = 0;
                let mut seg = FileParser {
                    out: ParsedFile::default(),
                    offset: base + start as u64,
                    line_no: 0,
                };
                seg.lines(&lines[start..end], helper);
                (seg, helper.unique)
            })
            .collect();
        for (seg, used) in parsed {
            self.absorb(seg, used, scratch);
        }
    }

    /// Take over the lines a helper parsed right after this parser's (numbered from line 0
    /// and unique key 0), as if this parser had parsed them.
    fn absorb(&mut self, seg: FileParser, used: u32, scratch: &mut Scratch) {
        let FileParser {
            out: mut seg_out,
            offset,
            line_no,
        } = seg;
        for e in &mut seg_out.entries {
            e.line = e.line.saturating_add(self.line_no);
            e.shift_unique(scratch.unique);
        }
        if let Some(d) = &mut seg_out.stats.first_damage {
            d.line += u64::from(self.line_no);
        }
        self.out.stats.add_lines(&seg_out.stats);
        self.out.entries.append(&mut seg_out.entries);
        self.offset = offset;
        self.line_no = self.line_no.saturating_add(line_no);
        scratch.unique = scratch.unique.wrapping_add(used);
    }

    /// Finish the file with its unterminated last line (`tail`, empty when the file ends with
    /// a newline): the parsed file and the point to go on from when it grows.
    pub fn finish(mut self, tail: &[u8], scratch: &mut Scratch) -> (ParsedFile, ResumePoint) {
        if self.offset == 0 && tail.starts_with(BOM) {
            self.out.stats.bom = true;
        }
        let total = self.offset + tail.len() as u64;
        let mut resume = ResumePoint {
            offset: self.offset,
            line_no: self.line_no,
            unique: scratch.unique,
            stats: self.out.stats.clone(),
            entries: self.out.entries.len(),
        };
        if !tail.is_empty() {
            self.next_line(tail, false, scratch);
        }
        let mut out = self.out;
        out.stats.bytes = total;
        out.stats.ends_with_newline = total > 0 && tail.is_empty();
        if total == 0 {
            out.reject = Some(RejectReason::EmptyFile);
            return (out, ResumePoint::default());
        }
        out.reject = match out.entries.first() {
            None => Some(RejectReason::NoParsableEntries),
            Some(first) => match &first.body {
                Body::Header(h) if h.id.is_some() => None,
                _ => Some(RejectReason::FirstEntryNotSessionHeader {
                    found: describe(first),
                    offset: first.offset,
                }),
            },
        };
        if out.reject.is_some() {
            out.pi_entries = out.entries.iter().any(|e| e.ty.is_pi());
            let entries = std::mem::take(&mut out.entries);
            if matches!(entries.first().map(|e| &e.body), Some(Body::Transcript(_))) {
                let records = entries.into_iter().filter_map(|e| match e.body {
                    Body::Transcript(r) => Some(*r),
                    _ => None,
                });
                out.transcript = Some(records.collect());
            }
            resume = ResumePoint::default();
        }
        (out, resume)
    }

    /// One physical line (without its `\n`) that [`Scratch::known_entry`] did not take,
    /// `terminated` unless it is the file's last.
    fn line(&mut self, line: &[u8], terminated: bool, scratch: &mut Scratch) {
        let start = self.offset;
        let stats = &mut self.out.stats;
        stats.lines += 1;
        if line.iter().all(|&b| b == b' ' || b == b'\t' || b == b'\r') {
            stats.raw_blank_lines += 1;
        }
        if crate::js::is_js_blank(line) {
            stats.blank_lines += 1;
        } else {
            match scratch.parse_js_line(line, (self.line_no, start), stats, &mut self.out.entries) {
                LineOutcome::Parsed => stats.parsed_lines += 1,
                LineOutcome::Falsy => stats.dropped_values += 1,
                LineOutcome::Invalid if !terminated => stats.pending_tail_bytes = line.len() as u64,
                LineOutcome::Invalid => {
                    stats.malformed_lines += 1;
                    if stats.first_damage.is_none() {
                        let reason = if start == 0 && stats.bom {
                            "line starts with a UTF-8 byte order mark".to_string()
                        } else {
                            "not valid JSON".to_string()
                        };
                        stats.first_damage = Some(Damage {
                            line: u64::from(self.line_no) + 1,
                            offset: start,
                            reason,
                        });
                    }
                }
            }
        }
        self.line_no = self.line_no.saturating_add(1);
        self.offset = start + line.len() as u64 + u64::from(terminated);
    }
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Files from this size on are parsed by several cores (see [`FileParser::lines_parallel`]).
pub const PARALLEL_MIN: u64 = 8 << 20;

/// The least a helper is given to parse. Small enough that a piece read by one core is still
/// in the caches when the cores parse it: with 1 MB segments (8 MB pieces) a scan of the
/// 1.5 GB corpus took 5 % longer and held 7 MB more.
const MIN_SEGMENT: usize = 1 << 17;

/// The bytes read at once from a big file, to be parsed by `threads` cores.
fn piece_bytes(threads: usize) -> usize {
    4 * MIN_SEGMENT * threads
}

fn describe(e: &Entry) -> String {
    match &e.ty {
        EntryType::Session => "a session header without a string id".into(),
        EntryType::NonObject(_) | EntryType::NoType => format!("a value of kind {}", e.ty.name()),
        other => format!("an entry of type \"{}\"", other.name()),
    }
}

/// The xorshift64 generator the parser's randomized tests draw from (the same sequence for the
/// same seed, every run).
#[cfg(test)]
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &[u8]) -> ParsedFile {
        parse_file(s, &mut Scratch::default())
    }

    const H: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

    #[test]
    fn header_blank_malformed_and_pending_tail() {
        let text =
            format!("{H}\n\n  \n{{bad\n{{\"type\":\"custom\",\"id\":\"a\",\"parentId\":null}}\r\n{{\"type\":\"cus");
        let p = parse(text.as_bytes());
        assert!(p.reject.is_none());
        assert_eq!(p.entries.len(), 2);
        assert_eq!(p.stats.lines, 6);
        assert_eq!(p.stats.blank_lines, 2);
        assert_eq!(p.stats.malformed_lines, 1);
        assert_eq!(p.stats.pending_tail_bytes, 12);
        let d = p.stats.first_damage.unwrap();
        assert_eq!((d.line, d.offset), (4, H.len() as u64 + 5));
    }

    #[test]
    fn unterminated_last_line_that_parses_is_kept() {
        let text = format!("{H}\n{{\"type\":\"custom\",\"id\":\"a\"}}");
        let p = parse(text.as_bytes());
        assert_eq!(p.entries.len(), 2);
        assert_eq!(p.stats.pending_tail_bytes, 0);
        assert!(!p.stats.ends_with_newline);
    }

    /// A rejected file with an entry of one of Pi's types (a header that is not first, a
    /// header without a string id, entries behind a lost header) is a session Pi cannot load;
    /// one without is something else.
    #[test]
    fn rejected_files_say_whether_they_hold_pi_entries() {
        let pi = |s: &str| {
            let p = parse(s.as_bytes());
            assert!(p.reject.is_some(), "{s}");
            p.pi_entries
        };
        assert!(!pi(""));
        assert!(!pi("\n\n"));
        assert!(!pi("{\"version\":1,\"recordType\":\"message\"}\n"));
        assert!(!pi("{\"type\":\"task\"}\n[1]\n"));
        assert!(pi(&format!("{{\"type\":\"thinking_level_change\"}}\n{H}\n")));
        assert!(pi("{\"type\":\"session\",\"id\":5}\n"));
        assert!(pi(&format!("\u{feff}{H}\n{{\"type\":\"message\"}}\n")));
    }

    #[test]
    fn rejections() {
        assert_eq!(parse(b"").reject, Some(RejectReason::EmptyFile));
        assert_eq!(parse(b"\n \nnot json\n").reject, Some(RejectReason::NoParsableEntries));
        assert_eq!(parse(b"null\n0\n").reject, Some(RejectReason::NoParsableEntries));
        let bom = format!("\u{feff}{H}\n{{\"type\":\"custom\"}}\n");
        assert_eq!(
            parse(bom.as_bytes()).reject.unwrap().code(),
            "first_entry_not_session_header"
        );
        let no_id = "{\"type\":\"session\",\"id\":5}\n";
        assert_eq!(
            parse(no_id.as_bytes()).reject.unwrap().code(),
            "first_entry_not_session_header"
        );
        // A BOM-only line is blank to String#trim.
        let bom_line = format!("\u{feff}\n{H}\n");
        assert!(parse(bom_line.as_bytes()).reject.is_none());
    }

    #[test]
    fn scalars_falsy_dropped_truthy_kept() {
        let text = format!("{H}\nnull\n0\nfalse\n\"\"\n42\n[1]\n\"s\"\ntrue\n");
        let p = parse(text.as_bytes());
        assert_eq!(p.stats.dropped_values, 4);
        assert_eq!(p.entries.len(), 5);
        let names: Vec<_> = p.entries[1..].iter().map(|e| e.ty.name().to_string()).collect();
        assert_eq!(names, ["(number)", "(array)", "(string)", "(boolean)"]);
    }

    #[test]
    fn lone_surrogates_and_invalid_utf8_parse() {
        let text = format!("{H}\n{{\"type\":\"x\",\"t\":\"\\ud83d\"}}\n");
        let p = parse(text.as_bytes());
        assert_eq!(p.entries.len(), 2);
        assert_eq!(p.stats.lone_surrogate_lines, 1);
        let mut bytes = format!("{H}\n").into_bytes();
        bytes.extend_from_slice(b"{\"type\":\"x\",\"t\":\"\xff\"}\n{\"type\":\xff}\n");
        let p = parse(&bytes);
        assert_eq!(p.entries.len(), 2);
        assert_eq!(p.stats.invalid_utf8_lines, 1);
        assert_eq!(p.stats.malformed_lines, 1);
    }

    /// Parsing what was appended, from a prefix saved at any earlier length of the file,
    /// gives exactly the parse of the whole file.
    #[test]
    fn going_on_from_a_prefix_equals_parsing_the_whole_file() {
        let mut text = format!("{H}\n\n{{bad\n{{\"type\":\"custom\",\"id\":\"a\",\"parentId\":{{}}}}\r\nnull\n");
        text.push_str("{\"type\":\"x\",\"t\":\"\\ud83d\"}\n[1]\n{\"type\":\"message\",\"id\":\"b\",\"parentId\":[2]}");
        let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/sample");
        let mut files: Vec<Vec<u8>> = vec![text.into_bytes()];
        for e in walkdir::WalkDir::new(sample)
            .into_iter()
            .filter_map(Result::ok)
            .take(12)
        {
            if e.path().extension().is_some_and(|x| x == "jsonl") {
                files.push(std::fs::read(e.path()).unwrap());
            }
        }
        for bytes in &files {
            let whole = format!("{:?}", parse(bytes));
            let cuts = (0..bytes.len()).step_by((bytes.len() / 40).max(1)).chain([bytes.len()]);
            for cut in cuts {
                let mut scratch = Scratch::default();
                let (first, resume) = parse_file_from(&bytes[..cut], None, &mut scratch);
                if first.reject.is_some() {
                    continue;
                }
                let saved = postcard::to_stdvec(&resume.prefix_of(&first.entries)).unwrap();
                let prefix: Prefix = postcard::from_bytes(&saved).unwrap();
                let (again, _) = parse_file_from(bytes, Some(prefix), &mut Scratch::default());
                assert_eq!(format!("{again:?}"), whole, "cut at {cut} of {}", bytes.len());
            }
        }
    }

    /// Lines holding payloads (images, text, thinking and signatures, tool-call arguments) in
    /// every place Pi writes them and some it does not; with the parts they repeat, to check
    /// how much was cut: (lines, prose, signature, image data).
    fn payload_lines() -> (Vec<String>, String, String, String) {
        let data = "iVBORw0KGgo".repeat(40);
        let img = format!(r#"{{"type":"image","data":"{data}","mimeType":"image/png"}}"#);
        // Every kind of escape, characters of one to four bytes, and a pair written as escapes.
        let prose =
            r#"fn main() {\n\t\"quoted\" \\ back\/slash \b\f\r \u00e9\u0022\u005c\u001f\u007f é 日本 😀 \ud83d\ude00 "#
                .repeat(6);
        let text = format!(r#"{{"type":"text","text":"{prose}"}}"#);
        let sig = "EqQBCkgIARABGAIiQ+/=".repeat(20);
        let thinking = format!(r#"{{"type":"thinking","thinking":"{prose}","thinkingSignature":"{sig}"}}"#);
        let short_thinking = format!(r#"{{"type":"thinking","thinking":"hm","thinkingSignature":"{sig}"}}"#);
        let lines = vec![
            format!(
                r#"{{"type":"message","id":"a","parentId":null,"message":{{"role":"user","content":[{img},{{"type":"text","text":"hi"}},{text}]}}}}"#
            ),
            format!(
                r#"{{"type":"message","id":"b","parentId":"a","message":{{"role":"assistant","content":[{thinking},{short_thinking},{text},{{"type":"toolCall","id":"t","name":"n","arguments":{{"x":[{img},{text}]}}}}]}}}}"#
            ),
            format!(
                r#"{{"type":"message","id":"c","parentId":"b","message":{{"role":"system","content":"s","sections":{img},"toolsAdded":[{{"name":"k","p":{img}}}]}}}}"#
            ),
            format!(r#"{{"type":"custom","id":{img},"parentId":"c"}}"#),
            format!(r#"{{"type":"custom","id":"d","parentId":"c","x":"\u0000","y":{img}}}"#),
            format!(r#"{{"type":"model_change","id":"e","parentId":"d","provider":{img},"modelId":"m"}}"#),
            format!(r#"{{"type":"custom","id":{text},"parentId":"e"}}"#),
            format!(
                r#"{{"type":"message","id":"f","parentId":"e","message":{{"role":"system","content":"s","sections":{text}}}}}"#
            ),
            format!(
                r#"{{"type":"custom_message","id":"g","parentId":"f","content":[{text},{thinking}],"data":{text}}}"#
            ),
            // U+0000 inside a payload only: the payload is cut.
            format!(
                r#"{{"type":"message","id":"i","parentId":"h","message":{{"role":"user","content":[{{"type":"text","text":"\u0000{prose}"}}]}}}}"#
            ),
            // Duplicate keys: the last one counts.
            format!(
                r#"{{"type":"message","id":"h","parentId":"g","message":{{"role":"user","content":[{{"type":"text","text":"{prose}","text":"short"}}]}}}}"#
            ),
        ];
        (lines, prose, sig, data)
    }

    /// Cutting image payloads changes no figure, wherever the image block stands: in content
    /// (a fixed count), inside tool-call arguments and tool lists (measured by
    /// `JSON.stringify`), as a section (measured by length) or an id (kept as JSON).
    #[test]
    fn cut_payloads_change_nothing() {
        let (lines, prose, ..) = payload_lines();
        let text = format!("{H}\n{}\n", lines.join("\n"));
        let (a, b) = parse_both(text.as_bytes());
        assert_eq!(a.entries.len(), 12);
        assert_eq!(a.stats.malformed_lines, 0);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        let mut out = Vec::new();
        let finder = cut::Cutter::default();
        assert!(cut::copy_cutting_payloads(lines[0].as_bytes(), &mut out, &finder));
        assert!(out.len() < lines[0].len() - 400 - prose.len());
        assert!(!cut::copy_cutting_payloads(lines[4].as_bytes(), &mut out, &finder));
    }

    /// Where this machine measures payloads in place, text, thinking and the signature after it
    /// are cut too, and so are tool-call arguments.
    #[test]
    #[cfg_attr(
        not(pisa_avx2),
        ignore = "this machine lacks AVX2, POPCNT or BMI1: text is not measured in place"
    )]
    fn text_and_arguments_are_cut_where_they_can_be_measured() {
        assert!(measure::available(), "the build script saw AVX2, POPCNT and BMI1");
        let (lines, prose, sig, data) = payload_lines();
        let mut out = Vec::new();
        let finder = cut::Cutter::default();
        assert!(cut::copy_cutting_payloads(lines[1].as_bytes(), &mut out, &finder));
        assert!(out.len() < lines[1].len() - 3 * prose.len() - sig.len() - data.len());
        assert!(std::str::from_utf8(&out).unwrap().contains(r#""arguments":"\u0000="#));
        assert!(cut::copy_cutting_payloads(lines[9].as_bytes(), &mut out, &finder));
    }

    /// Parse a file with payloads cut and whole.
    fn parse_both(text: &[u8]) -> (ParsedFile, ParsedFile) {
        let mut cutting = Scratch::default();
        let mut whole = Scratch {
            cut_payloads: false,
            ..Scratch::default()
        };
        (parse_file(text, &mut cutting), parse_file(text, &mut whole))
    }

    proptest::proptest! {
        /// Text payloads made of any mix of escapes (valid or not), raw characters (control
        /// characters and bytes that are not UTF-8 too) and lone surrogates: the parse with
        /// payloads cut equals the parse of the whole lines, valid, repaired or rejected.
        #[test]
        fn cut_text_payloads_parse_as_whole(
            pieces in proptest::collection::vec(0usize..18, 0..200),
            reps in 1usize..4,
            bad in proptest::option::of((0usize..9, proptest::arbitrary::any::<proptest::sample::Index>())),
        ) {
            const GOOD: [&[u8]; 18] = [
                b"plain ascii words ", b"\\n", b"\\\"", b"\\\\", b"\\/", b"\\b", b"\\t", b"\\u00e9",
                b"\\u001f", b"\\u0022", b"\\uD83D\\uDE00", "é".as_bytes(), "日本".as_bytes(),
                "😀".as_bytes(), b"\x7f", "\u{2028}".as_bytes(), b"\\u005c", b"\\u000A",
            ];
            const BAD: [&[u8]; 9] = [
                b"\\ud800", b"\\udc00x", b"\\ud83d\\u0041", b"\x01", b"\xff", b"\xe2\x82", b"\\x",
                b"\\u12", b"\\",
            ];
            let mut payload = Vec::new();
            for _ in 0..reps {
                for &p in &pieces {
                    payload.extend_from_slice(GOOD[p]);
                }
            }
            if let Some((b, at)) = bad {
                let at = at.index(payload.len() + 1);
                // Keep UTF-8 sequences whole: insert at a character boundary.
                let at = (0..=at).rev().find(|&i| i == payload.len() || (payload[i] as i8) >= -0x40).unwrap_or(0);
                payload.splice(at..at, BAD[b].iter().copied());
            }
            let mut file = format!("{H}\n").into_bytes();
            for block in [&b"{\"type\":\"text\",\"text\":\""[..], b"{\"type\":\"thinking\",\"thinking\":\""] {
                file.extend_from_slice(br#"{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":["#);
                file.extend_from_slice(block);
                file.extend_from_slice(&payload);
                file.extend_from_slice(br#""},{"type":"toolCall","name":"n","arguments":{"a":"#);
                file.extend_from_slice(block);
                file.extend_from_slice(&payload);
                file.extend_from_slice(b"\"}}}]}}\n");
            }
            // Tool-call arguments as Pi writes them, measured whole.
            file.extend_from_slice(br#"{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"edit","arguments":{"path":"a.rs","edits":[{"oldText":""#);
            file.extend_from_slice(&payload);
            file.extend_from_slice(br#"","n":[1,2.5,-3]}],"p":""#);
            file.extend_from_slice(&payload);
            file.extend_from_slice(b"\"}}]}}\n");
            let (a, b) = parse_both(&file);
            proptest::prop_assert_eq!(format!("{a:?}"), format!("{b:?}"));
        }
    }

    /// A big file parsed in pieces split between helpers gives exactly the parse in one go:
    /// entries, line numbers, unique keys of object ids, statistics and first damage.
    #[test]
    fn parallel_pieces_equal_one_parse() {
        let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/sample");
        let mut text = format!("{H}\n").into_bytes();
        // Object keys (numbered per file) in ids and in a system message's tool names.
        let odd = concat!(
            "{\"type\":\"custom\",\"id\":{\"o\":1},\"parentId\":[2]}\n{bad\n\n null\n",
            "{\"type\":\"message\",\"id\":\"s\",\"parentId\":null,\"message\":{\"role\":\"system\",",
            "\"content\":\"c\",\"toolsAdded\":[{\"name\":{\"t\":1}}],\"toolsRemoved\":[{\"name\":[1]}]}}\n",
        );
        while text.len() < 7 << 20 {
            for e in walkdir::WalkDir::new(&sample).sort_by_file_name() {
                let e = e.unwrap();
                if e.path().extension().is_some_and(|x| x == "jsonl") {
                    text.extend_from_slice(&std::fs::read(e.path()).unwrap());
                    if text.last() != Some(&b'\n') {
                        text.push(b'\n');
                    }
                    text.extend_from_slice(odd.as_bytes());
                }
            }
        }
        text.extend_from_slice(b"{\"type\":\"cus");
        let whole = format!("{:?}", parse(&text));
        let mut scratch = Scratch::default();
        let mut helpers: Vec<Scratch> = (0..3).map(|_| Scratch::default()).collect();
        let mut parser = FileParser::new(None, &mut scratch);
        let end = memchr::memrchr(b'\n', &text).unwrap() + 1;
        let mut start = 0;
        for piece in 0.. {
            if start == end {
                break;
            }
            let goal = (start + (3 << 20) + piece * 1000).min(end);
            let cut = memchr::memrchr(b'\n', &text[start..goal]).map_or(end, |i| start + i + 1);
            parser.lines_parallel(&text[start..cut], &mut scratch, &mut helpers);
            start = cut;
        }
        let (parsed, _) = parser.finish(&text[end..], &mut scratch);
        assert!(parsed.stats.malformed_lines > 10);
        assert_eq!(format!("{parsed:?}"), whole);
    }

    #[test]
    fn raw_control_characters_are_invalid_json() {
        let text = format!("{H}\n{{\"type\":\"x\",\"t\":\"a\tb\"}}\n");
        assert_eq!(parse(text.as_bytes()).stats.malformed_lines, 1);
    }
}

//! The incremental re-scan cache: what pisa learnt of each file, kept between runs.
//!
//! Pi only appends to a session file (and rewrites it when it migrates an old session). So:
//! - a file with the same size, modification time, inode and first and last bytes as last
//!   time is taken from the cache without being read (its summary), or without being parsed
//!   (its entries, when every record is wanted);
//! - a file that grew, whose old first and last bytes are still in place, is parsed from the
//!   end of its last complete line onward; the entries kept from before rebuild the tree;
//! - anything else (shrunk, rewritten, even to the same size) is parsed from scratch.
//!
//! Layout under the cache folder:
//! - `index.bin`: one [`Record`] per file: its stamp and its small summary;
//! - `spills/<id>.bin`: the spill files of earlier runs (see [`crate::corpus::spill`]), where
//!   each session's bulk (its `sessions --json` text and its billed calls) was written while it
//!   was analysed. A run with a cache writes its spill in this folder and keeps it when the new
//!   index points into it, so a re-run reads an unchanged session's bulk where it lies: only
//!   what changed is written, and the index stays small (about 0.5 KB per file);
//! - `entries/<hash of the path>.bin`: the parsed entries of one file (a
//!   [`crate::parse::Prefix`]), to go on from when the file grows.
//!
//! Runs share the folder through [`super::lock`]: the run that takes its write lock reads and
//! writes the cache; a run that finds it taken reads the cache without writing anything into
//! it ([`Cache::read_only`]), so it never waits and never overwrites the other's index.
//!
//! The index and the entries start with a magic number and [`FORMAT`]; a file that does not
//! decode, or was written by another format, is discarded with a warning and never trusted.
//! Each part of a session's bulk that a run uses, and each entries file, is checked against a
//! hash kept in the index before it is used. Writes go to a temporary name and are renamed
//! into place. Spills no longer pointed at are deleted; a spill whose live bytes fall under
//! half its size, or any beyond the [`MAX_SPILLS`] largest, is retired: its live sessions are
//! copied into the current run's spill.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::parse::Prefix;

/// Bump on any change to a cached type or to what pisa computes from a file.
pub const FORMAT: u32 = 13;
const MAGIC: &[u8; 8] = b"pisa\x00cch";
/// Bytes hashed at each end of a file.
const PROBE: u64 = 4096;
/// Spills of earlier runs kept at most (see the module's text).
pub const MAX_SPILLS: usize = 8;
/// A temporary file left in the cache folder this long ago belongs to no live run.
const STALE_SECONDS: u64 = 3600;

/// The folder used when none is given: the user's cache folder.
pub fn default_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("pisa"))
}

/// What identifies a file's bytes as last seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub size: u64,
    pub mtime_ns: i128,
    pub inode: u64,
    pub device: u64,
    /// Hash of the first `min(size, PROBE)` bytes.
    pub head: u64,
    /// Hash of the last `min(size, PROBE)` bytes.
    pub tail: u64,
}

/// File metadata, before any byte is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub size: u64,
    pub mtime_ns: i128,
    pub inode: u64,
    pub device: u64,
}

impl Meta {
    pub fn of(m: &std::fs::Metadata) -> Meta {
        use std::os::unix::fs::MetadataExt;
        Meta {
            size: m.len(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            inode: m.ino(),
            device: m.dev(),
        }
    }
}

/// The hash the cache checks its files and bulk with.
pub fn hash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// The hash of each part of `bytes`, the parts `parts` bytes long one after the other;
/// `None` when they do not add up to `bytes`.
pub fn part_hashes(bytes: &[u8], parts: &[u64]) -> Option<Vec<u64>> {
    let mut rest = bytes;
    let hashes = parts
        .iter()
        .map(|&len| {
            let (part, after) = rest.split_at_checked(usize::try_from(len).ok()?)?;
            rest = after;
            Some(hash(part))
        })
        .collect::<Option<Vec<u64>>>()?;
    rest.is_empty().then_some(hashes)
}

impl Stamp {
    /// The stamp of a file of `meta.size` bytes, read from its two ends.
    pub fn of(meta: Meta, file: &File) -> std::io::Result<Stamp> {
        let (head, tail) = crate::scan::source::end_hashes(file, meta.size, PROBE)?;
        Ok(Stamp {
            size: meta.size,
            mtime_ns: meta.mtime_ns,
            inode: meta.inode,
            device: meta.device,
            head,
            tail,
        })
    }

    /// Same file, same metadata: worth checking the bytes.
    pub fn same_meta(&self, m: Meta) -> bool {
        self.size == m.size && self.mtime_ns == m.mtime_ns && self.inode == m.inode && self.device == m.device
    }

    /// The file's bytes still begin with what this stamp saw: the same bytes (`Same`: same
    /// size and time too), or those bytes and more (`Grown`), as far as the probes at each end
    /// of the old length can tell.
    pub fn compare(&self, meta: Meta, file: &File) -> Change {
        if self.inode != meta.inode || self.device != meta.device || meta.size < self.size {
            return Change::Other;
        }
        if !self.same_ends(file).unwrap_or(false) {
            return Change::Other;
        }
        match meta.size == self.size {
            // Same size but written since: rewritten in place (a migration), not appended to.
            true if self.mtime_ns == meta.mtime_ns => Change::Same,
            true => Change::Other,
            false => Change::Grown,
        }
    }

    /// Whether the file's bytes at both ends of the old length are those this stamp saw.
    pub fn same_ends(&self, file: &File) -> std::io::Result<bool> {
        Ok(crate::scan::source::end_hashes(file, self.size, PROBE)? == (self.head, self.tail))
    }
}

/// How a file relates to its cached stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Same,
    Grown,
    Other,
}

/// The entries of a file for [`Cache::put`].
#[derive(Debug)]
pub enum Blob {
    /// None (a rejected file).
    None,
    /// The cached blob with this hash still holds (nothing new was parsed).
    Keep(u64),
    /// Newly encoded entries ([`encode_part`]; `None` if they could not be encoded).
    New(Option<Vec<u8>>),
}

/// Encode a file's summary (for [`Cache::put`]) or its parsed entries (for [`Blob::New`]).
pub fn encode_part<T: Serialize + ?Sized>(value: &T) -> Option<Vec<u8>> {
    encode(value).ok()
}

/// What the cache holds for one file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// The path relative to its scanned root, when the summary was made (it names the file
    /// inside the summary, so a summary is only reused under the same name).
    pub rel: String,
    pub stamp: Stamp,
    /// The file's small summary ([`crate::corpus`]'s encoding), before any corpus-wide figure.
    #[serde(with = "raw_bytes")]
    pub summary: Vec<u8>,
    /// Where a session's bulk lies in a kept spill.
    pub bulk: Option<Bulk>,
    /// Hash of the file's entries blob, when there is one (an accepted session).
    pub entries: Option<u64>,
}

/// A session's bulk in a spill: its parts one after the other from `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bulk {
    /// The spill's id (its file is `spills/<id as 16 hex digits>.bin`).
    pub spill: u64,
    pub offset: u64,
    /// Bytes of each part (the corpus's: facts, identities, totals, billed calls, records).
    pub parts: [u64; crate::corpus::spill::PARTS],
    /// Hash of each part's bytes: a run reads and checks only the parts it uses (a report
    /// skips the full records, most of the bytes).
    pub hashes: [u64; crate::corpus::spill::PARTS],
}

impl Bulk {
    pub fn len(&self) -> u64 {
        self.parts.iter().sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Byte vectors as one byte string (serde's default is a sequence of numbers, which
/// postcard decodes one byte at a time).
pub mod raw_bytes {
    use serde::{Deserializer, Serializer, de};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct Bytes;
        impl<'de> de::Visitor<'de> for Bytes {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
        }
        d.deserialize_byte_buf(Bytes)
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Index {
    files: HashMap<String, Record>,
}

/// The cache of one run: the index read at the start, the records made during the run.
#[derive(Debug)]
pub struct Cache {
    dir: PathBuf,
    old: Index,
    /// This run's spill id, and its file (made by [`Cache::spill`], kept by [`Cache::save`]
    /// if the new index points into it).
    run: u64,
    run_file: std::sync::OnceLock<tempfile::NamedTempFile>,
    /// The kept spills the old index points into, opened: their ids, and their files until
    /// [`Cache::spill`] takes them.
    kept_ids: HashMap<u64, u32>,
    kept_files: Mutex<Vec<File>>,
    /// Kept spills whose live sessions are copied into this run's (see the module's text).
    retired: std::collections::HashSet<u64>,
    new: Mutex<HashMap<String, Record>>,
    /// Files whose old record still holds (carried into the next index as they are).
    kept: Mutex<std::collections::HashSet<String>>,
    /// A record was added or replaced (else the index needs no rewrite, unless files went).
    changed: std::sync::atomic::AtomicBool,
    warnings: Mutex<Vec<String>>,
    /// The write lock, held until [`Cache::save`]; `None` in a read-only view.
    _lock: Option<super::lock::WriteLock>,
    /// Another run held the lock (or the view was asked for): write nothing into `dir`.
    read_only: bool,
}

/// The key of a file: its path as given to the scan, made absolute.
pub fn key(path: &Path) -> String {
    // Not lossy: two names that differ only in bytes that are not UTF-8 keep two keys.
    crate::paths::path_text(&std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
}

fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, postcard::Error> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&FORMAT.to_le_bytes());
    postcard::to_extend(value, out)
}

fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, String> {
    let rest = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or_else(|| "not a pisa cache file".to_string())?;
    let (format, rest) = rest.split_at_checked(4).ok_or_else(|| "truncated".to_string())?;
    let format = u32::from_le_bytes(format.try_into().expect("4 bytes"));
    if format != FORMAT {
        return Err(format!(
            "written by another version of pisa (format {format}, this one reads {FORMAT})"
        ));
    }
    postcard::from_bytes(rest).map_err(|e| format!("does not decode ({e})"))
}

/// Where the kept spill `id` is.
fn spill_path(dir: &Path, id: u64) -> PathBuf {
    dir.join("spills").join(format!("{id:016x}.bin"))
}

/// The id of a kept spill from its file name.
fn spill_id(name: &std::ffi::OsStr) -> Option<u64> {
    let name = name.to_str()?.strip_suffix(".bin")?;
    (name.len() == 16).then(|| u64::from_str_radix(name, 16).ok())?
}

/// Where the entries of the file `key` are kept.
fn entries_path(dir: &Path, key: &str) -> PathBuf {
    dir.join("entries").join(format!("{:016x}.bin", hash(key.as_bytes())))
}

/// Write `bytes` to `path` under a temporary name, then rename it into place.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().expect("cache files are in a folder");
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

impl Cache {
    /// Open the cache in `dir` (created when first written) with its write lock, or read-only
    /// when another run holds the lock. An unreadable index is reported by
    /// [`Cache::warnings`] and the run starts afresh.
    pub fn open(dir: &Path) -> Cache {
        match super::lock::try_write(dir) {
            Ok(super::lock::Attempt::Held(lock)) => Cache {
                _lock: Some(lock),
                ..Cache::read(dir, false)
            },
            Ok(super::lock::Attempt::Busy) => Cache::read(dir, true),
            // No lock to be had (a read-only folder): as before locks, writes fail and warn.
            Err(_) => Cache::read(dir, false),
        }
    }

    /// Open the cache in `dir` to read only: nothing is written into the folder, no lock taken.
    pub fn open_read_only(dir: &Path) -> Cache {
        Cache::read(dir, true)
    }

    /// Whether this run writes nothing into the cache folder.
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    fn read(dir: &Path, read_only: bool) -> Cache {
        let index_path = dir.join("index.bin");
        let mut warnings = Vec::new();
        let old = match std::fs::read(&index_path) {
            Ok(bytes) => decode::<Index>(&bytes).unwrap_or_else(|why| {
                warnings.push(format!("ignoring the cache {}: {why}", index_path.display()));
                Index::default()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Index::default(),
            Err(e) => {
                warnings.push(format!("ignoring the cache {}: {e}", index_path.display()));
                Index::default()
            }
        };
        // The spills the index points into, with their live bytes.
        let mut live: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
        for b in old.files.values().filter_map(|r| r.bulk) {
            *live.entry(b.spill).or_default() += b.len();
        }
        let (mut kept_ids, mut kept_files, mut sizes) = (HashMap::new(), Vec::new(), Vec::new());
        for (&id, &bytes) in &live {
            let path = spill_path(dir, id);
            match File::open(&path).and_then(|f| Ok((f.metadata()?.len(), f))) {
                Ok((size, f)) => {
                    kept_ids.insert(id, kept_files.len() as u32);
                    kept_files.push(f);
                    sizes.push((id, bytes, size));
                }
                Err(e) => warnings.push(format!(
                    "cache spill {} unreadable ({e}); reading its sessions again",
                    path.display()
                )),
            }
        }
        let mut retired: std::collections::HashSet<u64> = sizes
            .iter()
            .filter(|&&(_, live, size)| live.saturating_mul(2) < size)
            .map(|&(id, _, _)| id)
            .collect();
        let mut standing: Vec<(u64, u64)> = sizes
            .iter()
            .filter(|(id, _, _)| !retired.contains(id))
            .map(|&(id, live, _)| (live, id))
            .collect();
        standing.sort_unstable_by(|a, b| b.cmp(a));
        // Room for this run's spill.
        retired.extend(standing.iter().skip(MAX_SPILLS - 1).map(|&(_, id)| id));
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut run = hash(format!("{}-{nanos}", std::process::id()).as_bytes());
        while live.contains_key(&run) {
            run = run.wrapping_add(1);
        }
        Cache {
            dir: dir.to_path_buf(),
            old,
            run,
            run_file: std::sync::OnceLock::new(),
            kept_ids,
            kept_files: Mutex::new(kept_files),
            retired,
            new: Mutex::new(HashMap::new()),
            kept: Mutex::new(std::collections::HashSet::new()),
            changed: std::sync::atomic::AtomicBool::new(false),
            warnings: Mutex::new(warnings),
            _lock: None,
            read_only,
        }
    }

    /// The spill of this run: a file in the cache folder (kept if the next index points into
    /// it), reading the kept spills of earlier runs. Called once, before any file is analysed.
    pub fn spill(&self) -> crate::corpus::spill::Spill {
        use crate::corpus::spill::Spill;
        let kept = std::mem::take(&mut *self.kept_files.lock().expect("cache lock"));
        if self.read_only {
            // Without a run file nothing of this run is recorded (see `Cache::bulk`).
            return Spill::with_file(tempfile::tempfile().ok(), kept);
        }
        let dir = self.dir.join("spills");
        let made = std::fs::create_dir_all(&dir)
            .and_then(|()| tempfile::NamedTempFile::new_in(&dir))
            .and_then(|tmp| Ok((tmp.as_file().try_clone()?, tmp)));
        match made {
            Ok((file, tmp)) => {
                // Called once: a second spill would not be kept.
                let _ = self.run_file.set(tmp);
                Spill::with_file(Some(file), kept)
            }
            Err(e) => {
                self.warn(format!("cannot write to the cache {}: {e}", self.dir.display()));
                Spill::with_file(tempfile::tempfile().ok(), kept)
            }
        }
    }

    /// Where a session's bulk, just written to this run's spill at `span`, will be found by
    /// the next run; `None` when this run's spill is not in the cache folder.
    pub fn bulk(
        &self,
        span: crate::corpus::spill::Span,
        parts: [u64; crate::corpus::spill::PARTS],
        hashes: [u64; crate::corpus::spill::PARTS],
    ) -> Option<Bulk> {
        let (offset, len) = span.in_file()?;
        if self.run_file.get().is_none() || len != parts.iter().sum::<u64>() {
            return None;
        }
        Some(Bulk {
            spill: self.run,
            offset,
            parts,
            hashes,
        })
    }

    /// Where the bulk of `record` lies in the spill of this run ([`Cache::spill`]), and whether
    /// it must be copied into this run's own file (its spill is retired).
    pub fn kept_bulk(&self, record: &Record) -> Option<(crate::corpus::spill::Span, bool)> {
        let b = record.bulk?;
        let kept = *self.kept_ids.get(&b.spill)?;
        Some((
            crate::corpus::spill::Spill::kept_span(kept, b.offset, b.len()),
            self.retired.contains(&b.spill),
        ))
    }

    /// The record of a file from the previous run.
    pub fn get(&self, key: &str) -> Option<&Record> {
        self.old.files.get(key)
    }

    /// The entries of a file as cached with `record`; `None` (with a warning) when the blob
    /// is missing, damaged or from another record.
    pub fn entries(&self, key: &str, record: &Record) -> Option<Prefix> {
        let want = record.entries?;
        let path = entries_path(&self.dir, key);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                self.warn(format!(
                    "cache entry {} unreadable ({e}); parsing {key} again",
                    path.display()
                ));
                return None;
            }
        };
        if hash(&bytes) != want {
            self.warn(format!(
                "cache entry {} does not match its index; parsing {key} again",
                path.display()
            ));
            return None;
        }
        match decode::<Prefix>(&bytes) {
            Ok(p) => Some(p),
            Err(why) => {
                self.warn(format!("cache entry {}: {why}; parsing {key} again", path.display()));
                None
            }
        }
    }

    /// Keep a file's old record for the next run, unchanged.
    pub fn keep(&self, key: String) {
        self.kept.lock().expect("cache lock").insert(key);
    }

    /// Record a freshly read file: its stamp, its summary and (for a session) its entries.
    pub fn put(&self, key: String, rel: &str, stamp: Stamp, summary: Vec<u8>, bulk: Option<Bulk>, entries: Blob) {
        if self.read_only {
            return;
        }
        let entries = match entries {
            Blob::None => None,
            Blob::Keep(hash) => Some(hash),
            Blob::New(None) => {
                self.warn(format!("cannot cache the entries of {key}"));
                return;
            }
            Blob::New(Some(bytes)) => match write_atomic(&entries_path(&self.dir, &key), &bytes) {
                Ok(()) => Some(hash(&bytes)),
                Err(e) => {
                    self.warn(format!("cannot write to the cache {}: {e}", self.dir.display()));
                    return;
                }
            },
        };
        let record = Record {
            rel: rel.to_string(),
            stamp,
            summary,
            bulk,
            entries,
        };
        self.changed.store(true, std::sync::atomic::Ordering::Relaxed);
        self.new.lock().expect("cache lock").insert(key, record);
    }

    /// Decode a summary made by [`encode_part`].
    pub fn decode_summary<T: for<'de> Deserialize<'de>>(&self, key: &str, bytes: &[u8]) -> Option<T> {
        decode(bytes)
            .map_err(|why| self.warn(format!("cached summary of {key}: {why}; reading it again")))
            .ok()
    }

    pub fn warn(&self, message: String) {
        self.warnings.lock().expect("cache lock").push(message);
    }

    /// Problems met with the cache (none of them changes a result).
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.lock().expect("cache lock").clone()
    }

    /// Write the index for the next run, unless nothing changed: this run's new records, the
    /// old records it kept, and those of files outside `roots` that still exist. Entries of
    /// files that are gone are removed; this run's spill is kept if the index points into it,
    /// and spills it no longer points into are removed.
    pub fn save(self, roots: &[PathBuf]) -> Result<(), String> {
        if self.read_only {
            return Ok(());
        }
        let mut changed = self.changed.into_inner();
        let mut files = self.new.into_inner().expect("cache lock");
        let kept = self.kept.into_inner().expect("cache lock");
        let roots: Vec<String> = roots.iter().map(|r| key(r)).collect();
        for (k, r) in self.old.files {
            if files.contains_key(&k) {
                continue;
            }
            let inside = roots.iter().any(|root| Path::new(&k).starts_with(root));
            if kept.contains(&k) || (!inside && Path::new(&k).exists()) {
                files.insert(k, r);
            } else {
                changed = true;
                if r.entries.is_some() {
                    let _ = std::fs::remove_file(entries_path(&self.dir, &k));
                }
            }
        }
        let run_file = self.run_file.into_inner();
        if !changed {
            return Ok(());
        }
        if let Some(tmp) = run_file
            && files.values().any(|r| r.bulk.is_some_and(|b| b.spill == self.run))
            && tmp.persist(spill_path(&self.dir, self.run)).is_err()
        {
            // The records made this run point into a spill that is gone (dropped with the
            // error): drop them too.
            files.retain(|_, r| r.bulk.is_none_or(|b| b.spill != self.run));
        }
        let live: std::collections::HashSet<u64> = files.values().filter_map(|r| r.bulk).map(|b| b.spill).collect();
        let bytes = encode(&Index { files }).map_err(|e| e.to_string())?;
        write_atomic(&self.dir.join("index.bin"), &bytes)
            .map_err(|e| format!("cannot write the cache {}: {e}", self.dir.display()))?;
        remove_dead_spills(&self.dir.join("spills"), &live);
        Ok(())
    }
}

/// Remove the spills in `dir` not in `live`, and temporary files no run can still be writing.
fn remove_dead_spills(dir: &Path, live: &std::collections::HashSet<u64>) {
    let Ok(list) = std::fs::read_dir(dir) else { return };
    for e in list.flatten() {
        let name = e.file_name();
        let dead = match spill_id(&name) {
            Some(id) => !live.contains(&id),
            None => e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age.as_secs() > STALE_SECONDS)),
        };
        if dead {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

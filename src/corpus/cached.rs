//! One file through the cache: its summary (and its bulk where an earlier run's spill holds
//! it) when the file did not change, its cached entries and a parse of what was appended when
//! it grew, else a parse. The result is the same as without a cache.

use super::cache::{self, Blob, Cache, Change, Meta, Record};
use super::spill::PARTS;
use super::worker::{Settled, Work, Written, read_open, unreadable};
use crate::parse::Scratch;
use crate::scan::{self, FoundFile};

/// Analyse `f` through `cache`.
pub(super) fn analyze(work: &Work<'_>, f: &FoundFile, scratch: &mut Scratch, cache: &Cache) -> Settled {
    let key = cache::key(&f.path);
    let record = cache.get(&key);
    let mut file = match scan::source::open(&f.path) {
        Ok(file) => file,
        Err(e) => return unreadable(f, e).settle(work.spill).0,
    };
    // The open file's, not the path's: the path may name another file by now.
    let meta = file.metadata().map(|m| Meta::of(&m));
    if let (Some(r), Ok(meta)) = (record, &meta)
        && r.rel == f.rel
        && r.stamp.same_meta(*meta)
        && r.stamp.same_ends(&file).unwrap_or(false)
        && let Some(settled) = from_cache(&key, r, cache, work)
    {
        return settled;
    }
    let change = match (record, &meta) {
        (Some(r), Ok(meta)) => Some(r.stamp.compare(*meta, &file)),
        _ => None,
    };
    let prefix = match (record, change) {
        (Some(r), Some(Change::Same | Change::Grown)) => cache.entries(&key, r),
        _ => None,
    };
    let reused = prefix.as_ref().map(|p| p.offset);
    let (parsed, resume, len) = match read_open(f, &mut file, prefix, scratch) {
        Ok(read) => read,
        Err(e) => return unreadable(f, e).settle(work.spill).0,
    };
    let blob = match (reused, record.and_then(|r| r.entries)) {
        (Some(offset), Some(old)) if offset == resume.offset => Blob::Keep(old),
        _ => Blob::New(cache::encode_part(&resume.prefix_of(&parsed.entries))),
    };
    let (settled, written) = work.outcome(f, parsed).settle(work.spill);
    let Ok(meta) = meta else { return settled };
    let read = Read {
        key,
        record,
        change,
        meta,
        len,
        blob,
    };
    remember(cache, f, &file, read, settled, written)
}

/// What a fresh read learnt of a file, for the cache.
struct Read<'c> {
    key: String,
    record: Option<&'c Record>,
    change: Option<Change>,
    meta: Meta,
    /// The file's length as read.
    len: u64,
    blob: Blob,
}

/// Record a freshly read file in the cache (unless its old record still holds, or it changed
/// while it was read: the next run then reads it again).
fn remember(
    cache: &Cache,
    f: &FoundFile,
    file: &std::fs::File,
    mut read: Read<'_>,
    settled: Settled,
    written: Option<Written>,
) -> Settled {
    if let Settled::Rejected(_) = settled {
        // A file Pi refuses is read whole when it changes: no entries to go on from.
        read.blob = Blob::None;
    }
    let bulk = match (&settled, written) {
        (_, Some(w)) => {
            match cache::part_hashes(&w.bytes, &w.parts).and_then(|h| cache.bulk(w.span, w.parts, h.try_into().ok()?)) {
                Some(b) => Some(b),
                // No spill in the cache folder: nothing of this file can be cached.
                None => return settled,
            }
        }
        (Settled::Rejected(_), None) => None,
        (Settled::Session(_), None) => return settled,
    };
    let old = read.record;
    let same_entries = match (&read.blob, old.and_then(|r| r.entries)) {
        (Blob::Keep(new), Some(old)) => *new == old,
        (Blob::None, None) => true,
        _ => false,
    };
    let old_bulk_holds = old.is_some_and(|r| r.bulk.is_none() || matches!(cache.kept_bulk(r), Some((_, false))));
    if read.change == Some(Change::Same) && same_entries && old_bulk_holds {
        // The same bytes, nothing new parsed: the old record still holds.
        cache.keep(read.key);
        return settled;
    }
    if read.len == read.meta.size
        && file.metadata().is_ok_and(|m| Meta::of(&m) == read.meta)
        && let Ok(stamp) = cache::Stamp::of(read.meta, file)
        && let Some(summary) = cache::encode_part(&settled)
    {
        cache.put(read.key, &f.rel, stamp, summary, bulk, read.blob);
    }
    settled
}

/// A file unchanged since the cache's record of it: its summary, with its bulk where an
/// earlier run's spill holds it (copied into this run's spill when that spill is retired).
/// The parts of the bulk this run reads ([`Work::reads`]; the facts, identities and totals
/// always) are read and checked against their hashes, the others left unread. `None` when the
/// record cannot be used.
fn from_cache(key: &str, r: &Record, cache: &Cache, work: &Work<'_>) -> Option<Settled> {
    let settled = cache.decode_summary::<Settled>(key, &r.summary)?;
    let Some(b) = r.bulk else {
        // Only a file without calls (a rejected one) has no bulk.
        let Settled::Rejected(_) = settled else { return None };
        cache.keep(key.to_string());
        return Some(settled);
    };
    let (span, retired) = cache.kept_bulk(r)?;
    // The parts up to the last one read: facts, identities and totals, then billed calls and
    // records as asked (all of them to copy the bulk).
    let used = if retired || work.reads.records {
        PARTS
    } else if work.reads.billed {
        PARTS - 1
    } else {
        PARTS - 2
    };
    let len = b.parts[..used].iter().sum();
    let bytes = span
        .part(0, len)
        .and_then(|read| work.spill.get(read).ok())
        .filter(|bytes| cache::part_hashes(bytes, &b.parts[..used]).is_some_and(|h| h == b.hashes[..used]));
    let Some(bytes) = bytes else {
        cache.warn(format!(
            "cached bulk of {key} does not match its index; reading it again"
        ));
        return None;
    };
    if !retired {
        cache.keep(key.to_string());
        return Some(settled.with_bulk(span, b.parts));
    }
    let span = work.spill.put(&bytes);
    let moved = cache.bulk(span, b.parts, b.hashes);
    let blob = r.entries.map_or(Blob::None, Blob::Keep);
    match moved {
        Some(bulk) => cache.put(key.to_string(), &r.rel, r.stamp, r.summary.clone(), Some(bulk), blob),
        // This run's spill is not in the cache folder: the old record still holds.
        None => cache.keep(key.to_string()),
    }
    Some(settled.with_bulk(span, b.parts))
}

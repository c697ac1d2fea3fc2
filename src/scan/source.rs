//! Getting a file's bytes: read in pieces of whole lines into a buffer the worker reuses (or
//! memory-mapped when `--read-mode` asks for it, see [`super::map`]).
//!
//! Pi writes these files while pisa reads them. [`open`] never blocks (a FIFO or a device
//! can take a session file's place between discovery and open) and [`read_steady`] notices
//! a file that changed while it was read (or mapped), reads it again once, and gives up on it
//! rather than mixing old and new bytes.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use crate::Error;

/// Bytes asked of each `read`: a piece that stays in a core's cache while it is parsed.
pub const CHUNK: usize = 256 * 1024;

/// Open a session file for reading without ever blocking, and make sure it is a regular file.
///
/// `O_NONBLOCK` makes opening a FIFO without a writer return at once (a blocking open would
/// wait for a writer forever); the file type is checked on the open descriptor, as the path
/// may name something else by now than what discovery saw. `O_NOCTTY` keeps a terminal
/// device from becoming pisa's controlling terminal.
pub fn open(path: &Path) -> Result<File, Error> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let failed = |cause: io::Error| match cause.kind() {
        io::ErrorKind::NotFound => Error::Gone {
            path: path.to_path_buf(),
        },
        _ => Error::Read {
            path: path.to_path_buf(),
            cause,
        },
    };
    let file = options.open(path).map_err(failed)?;
    let kind = file.metadata().map_err(failed)?.file_type();
    if !kind.is_file() {
        return Err(Error::NotAFile {
            path: path.to_path_buf(),
            kind: kind_name(kind),
        });
    }
    #[cfg(unix)]
    blocking(&file);
    Ok(file)
}

/// Clear `O_NONBLOCK` on a regular file: Linux ignores it for local files, but a network or
/// FUSE file system may honour it and answer a read with `EAGAIN`.
///
/// `F_SETFL` sets only the file status flags (`O_APPEND`, `O_ASYNC`, `O_DIRECT`, `O_NOATIME`,
/// `O_NONBLOCK`) and leaves the access mode and the other open flags as they are. Of those,
/// `open` above sets only `O_NONBLOCK`, so setting none clears it without asking for the flags
/// first (`F_GETFL`).
#[cfg(unix)]
fn blocking(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: `fcntl` with `F_SETFL` and an integer on a descriptor `file` owns and keeps open
    // for the call; no memory is passed. A failure leaves the flag set, which is harmless on
    // local files.
    unsafe {
        libc::fcntl(file.as_raw_fd(), libc::F_SETFL, 0);
    }
}

/// What a file that is not a regular file is, for a message.
pub fn kind_name(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a folder"
    } else if kind.is_symlink() {
        "a symlink"
    } else {
        "not a regular file"
    }
}

/// What `fstat` says of an open file: enough to tell that it was written to meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub len: u64,
    /// Modification and status-change times, in nanoseconds.
    pub modified: i128,
    pub changed: i128,
}

impl Stamp {
    /// The stamp of an open file.
    pub fn of(file: &File) -> io::Result<Stamp> {
        let m = file.metadata()?;
        #[cfg(unix)]
        let (modified, changed) = {
            use std::os::unix::fs::MetadataExt;
            let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
            (ns(m.mtime(), m.mtime_nsec()), ns(m.ctime(), m.ctime_nsec()))
        };
        #[cfg(not(unix))]
        let (modified, changed) = (0, 0);
        Ok(Stamp {
            len: m.len(),
            modified,
            changed,
        })
    }

    /// How the file changed between this stamp (taken before a read), the `read` bytes the read
    /// ended at, and `after` (taken after it); `None` when the read saw one unchanging file.
    pub fn change(&self, read: u64, after: &Stamp) -> Option<String> {
        if after.len != self.len {
            Some(format!("{} bytes when opened, {} after the read", self.len, after.len))
        } else if read != self.len {
            Some(format!("{} bytes when opened, {} read", self.len, read))
        } else if after != self {
            Some(format!("written to during the read ({} bytes)", self.len))
        } else {
            None
        }
    }
}

/// Read an open file with `read` (which returns what it made of the file and the offset it
/// read to) and check that the file did not change meanwhile: the same length, modification
/// and status-change times before and after, and that length read. A live file (modified in
/// the last [`super::map::SETTLED_AFTER`]) that only grew (the length read is its length at the
/// start, and its first and last [`GROWTH_PROBE`] bytes up to there are unchanged) was appended
/// to, as Pi appends to a live session: the read is the file as it was when it began, and
/// stands. A file that changed otherwise, or a settled one that changed at all, is read once
/// more from its start (`read` is called again; hand it no resume point then), taken as live; a
/// file that changes during that read too is [`Error::Changed`]. (Hashing both ends of every
/// file before its read, for the rare settled file that grows meanwhile, was 2 % of a scan.)
///
/// Timestamps have the kernel's clock-tick granularity, so a rewrite to the same length within
/// one tick of the stamp can go unseen; Pi's appends and migrations change the length.
pub fn read_steady<T>(
    path: &Path,
    file: &mut File,
    mut read: impl FnMut(&mut File) -> io::Result<(T, u64)>,
) -> Result<T, Error> {
    read_steady_by(path, file, |file, _, _| Ok(Attempt::Read(read(file)?)))
}

/// What one attempt of [`read_steady_by`] made of a file.
#[derive(Debug)]
pub enum Attempt<T> {
    /// What was made of it and the offset it was read to.
    Read((T, u64)),
    /// The file changed in a way the attempt saw for itself (it was cut short under a map):
    /// what changed.
    Changed(String),
}

/// [`read_steady`] with a `read` that is told the file's stamp (taken just before it) and the
/// attempt (0, then 1), and can say that the file changed under it.
pub fn read_steady_by<T>(
    path: &Path,
    file: &mut File,
    mut read: impl FnMut(&mut File, &Stamp, u32) -> io::Result<Attempt<T>>,
) -> Result<T, Error> {
    let failed = |cause| Error::Read {
        path: path.to_path_buf(),
        cause,
    };
    debug_panic(path);
    let mut what = String::new();
    for attempt in 0..2 {
        if attempt > 0 {
            file.rewind().map_err(failed)?;
        }
        let before = Stamp::of(file).map_err(failed)?;
        let live = attempt > 0 || !super::map::settled(before.modified, std::time::SystemTime::now());
        let ends = match live {
            true => Some(end_hashes(file, before.len, GROWTH_PROBE).map_err(failed)?),
            false => None,
        };
        let (made, len) = match read(file, &before, attempt).map_err(failed)? {
            Attempt::Read(read) => read,
            Attempt::Changed(w) => {
                what = w;
                continue;
            }
        };
        let after = Stamp::of(file).map_err(failed)?;
        match before.change(len, &after) {
            None => return Ok(made),
            // Appended to while it was read (Pi writing a live session): what was read is the
            // file as it was when the read began, if its first and last bytes are still those.
            Some(_)
                if after.len > before.len
                    && len == before.len
                    && ends.is_some()
                    && end_hashes(file, before.len, GROWTH_PROBE).ok() == ends =>
            {
                return Ok(made);
            }
            Some(w) => what = w,
        }
    }
    Err(Error::Changed {
        path: path.to_path_buf(),
        what,
    })
}

/// Bytes compared at each end of what was read, when a file grew during the read.
pub const GROWTH_PROBE: u64 = 4096;

/// Hashes (xxh3) of the first and the last `min(len, probe)` bytes of the first `len` bytes.
pub fn end_hashes(file: &File, len: u64, probe: u64) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::FileExt;
    let n = len.min(probe);
    let mut buf = vec![0u8; n as usize];
    file.read_exact_at(&mut buf, 0)?;
    let head = xxhash_rust::xxh3::xxh3_64(&buf);
    file.read_exact_at(&mut buf, len - n)?;
    Ok((head, xxhash_rust::xxh3::xxh3_64(&buf)))
}

/// Debug builds only: panic on a file whose path contains `$PISA_DEBUG_PANIC_ON`, so that tests
/// can prove a panic costs only its file (a worker's) or ends in one line (the main thread's).
fn debug_panic(path: &Path) {
    if debug_hook_names("PISA_DEBUG_PANIC_ON", path) {
        panic!("PISA_DEBUG_PANIC_ON matched {}", path.display());
    }
}

/// Whether the debug hook `$var` (a substring of a path) names `path`; never in release builds.
pub fn debug_hook_names(var: &str, path: &Path) -> bool {
    #[cfg(debug_assertions)]
    if let Some(name) = std::env::var_os(var) {
        return !name.is_empty() && path.to_string_lossy().contains(&*name.to_string_lossy());
    }
    let _ = (var, path);
    false
}

/// Read `file` from `offset` to its end, `chunk` bytes at a time, handing whole lines to `lines`
/// (each piece ends with `\n`; a line is never split). Returns the file's length as read and
/// where in `buf` its unterminated last line, if any, was left. `buf` grows to hold the longest
/// line and is reused by the caller.
///
/// The end is `len`, the length `fstat` gave just before the read (the [`Stamp`]
/// [`read_steady_by`] hands its read): a file appended to faster than pisa parses (a runaway
/// writer) would otherwise keep the read going forever. Bytes appended meanwhile make
/// [`read_steady`] read the file again.
///
/// Each read lands at the file position's place in a 64-byte line ([`ALIGN`]): the kernel's
/// copy (`rep movsb`) ran 2.5 times slower on this machine's AMD cores when the destination was
/// 1 to 15 bytes past the source (modulo a page), and 12 % slower at 16 to 31, which is where
/// a buffer from `malloc` put the first read of every file.
pub fn read_lines(
    file: &mut File,
    offset: u64,
    len: u64,
    buf: &mut Vec<u8>,
    chunk: usize,
    mut lines: impl FnMut(&[u8]),
) -> io::Result<ReadEnd> {
    if offset > 0 {
        file.seek(SeekFrom::Start(offset))?;
    }
    // At least one byte is asked for, so that a read error shows, as does a pseudo-file whose
    // length says 0 (`/proc`): it reads as more than its length, a change.
    let stop = len.max(offset + 1);
    let mut pos = offset;
    // Bytes not yet handed on (the start of a line) are `buf[start..start + held]`.
    let (mut start, mut held) = (0usize, 0usize);
    while pos < stop {
        // Ask for at least `chunk` bytes, more when a long line already fills the buffer.
        let want = held.max(chunk);
        if buf.len() < ALIGN + held + want {
            buf.resize(ALIGN + held + want, 0);
        }
        // The held bytes moved so that the read's first byte has the file position's alignment.
        let to = (pos as usize).wrapping_sub(buf.as_ptr() as usize + held) % ALIGN;
        if to != start {
            buf.copy_within(start..start + held, to);
            start = to;
        }
        let at = start + held;
        let ask = want.min(usize::try_from(stop - pos).unwrap_or(usize::MAX));
        let n = match file.read(&mut buf[at..at + ask]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io::Error::new(e.kind(), format!("{e}, at byte {pos}"))),
        };
        pos += n as u64;
        let filled = at + n;
        if let Some(last) = memchr::memrchr(b'\n', &buf[at..filled]) {
            let end = at + last + 1;
            lines(&buf[start..end]);
            start = end;
            held = filled - end;
        } else {
            held += n;
        }
    }
    Ok(ReadEnd {
        len: pos,
        tail: start..start + held,
    })
}

/// The alignment [`read_lines`] reads to (a cache line).
const ALIGN: usize = 64;

/// Where [`read_lines`] stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadEnd {
    /// The file's length as read.
    pub len: u64,
    /// Where the unterminated last line is in the buffer.
    pub tail: std::ops::Range<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO without a writer would block a plain open forever; a folder is no session file.
    #[cfg(unix)]
    #[test]
    fn open_never_blocks_and_takes_only_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("x.jsonl");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(status.success());
        let err = open(&fifo).unwrap_err();
        assert!(matches!(err, Error::NotAFile { kind: "a FIFO", .. }), "{err}");
        let err = open(Path::new("/dev/null")).unwrap_err();
        assert!(
            matches!(
                err,
                Error::NotAFile {
                    kind: "a character device",
                    ..
                }
            ),
            "{err}"
        );
        assert!(matches!(
            open(dir.path()).unwrap_err(),
            Error::NotAFile { kind: "a folder", .. }
        ));
        let err = open(&dir.path().join("gone.jsonl")).unwrap_err();
        assert!(matches!(err, crate::Error::Gone { .. }), "{err}");
        // A regular file is left blocking, as a plain open leaves it.
        std::fs::write(dir.path().join("f.jsonl"), "x").unwrap();
        let file = open(&dir.path().join("f.jsonl")).unwrap();
        use std::os::fd::AsRawFd;
        // SAFETY: F_GETFL on an open descriptor.
        let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_NONBLOCK, 0);
    }

    /// A read ends at the length the file had when it started, however fast a writer appends.
    #[test]
    fn a_read_ends_at_the_length_it_started_with() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        std::fs::write(&path, "a\n".repeat(1000)).unwrap();
        let mut writer = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        let mut file = open(&path).unwrap();
        let mut buf = Vec::new();
        // Each piece handed on makes the file grow by more than the piece.
        let end = read_lines(&mut file, 0, 2000, &mut buf, 64, |piece| {
            writer.write_all(&b"b\n".repeat(piece.len())).unwrap();
        })
        .unwrap();
        assert_eq!(end.len, 2000);
        assert!(end.tail.is_empty());
    }

    /// A file written to during the first read is read again; one written to during every
    /// read is given up on, with what changed.
    #[test]
    fn a_file_that_changes_while_read_is_read_again_then_given_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        std::fs::write(&path, "a\n").unwrap();
        let append = |text: &str| {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(text.as_bytes()).unwrap();
        };
        let read_all = |file: &mut File| -> io::Result<(Vec<u8>, u64)> {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            let len = bytes.len() as u64;
            Ok((bytes, len))
        };
        // The reads it took and what stood, with `text` (if any) appended during each read.
        let read_appending = |text: Option<&str>| {
            let mut calls = 0;
            let mut file = open(&path).unwrap();
            let bytes = read_steady(&path, &mut file, |file| {
                calls += 1;
                let read = read_all(file)?;
                if let Some(text) = text {
                    append(text);
                }
                Ok(read)
            })
            .unwrap();
            (calls, bytes)
        };
        // Appended to during the read: the file as it was when the read began stands.
        assert_eq!(read_appending(Some("b\n")), (1, b"a\n".to_vec()));

        // A settled file (last written an hour ago) appended to during the read: its ends were
        // not kept, so it is read again, as it is then (and that read stands: it is live now).
        let settle = || {
            let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
            let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.set_modified(hour_ago).unwrap();
        };
        settle();
        assert_eq!(read_appending(Some("c\n")), (2, b"a\nb\nc\n".to_vec()));
        // Settled and not written to: one read.
        settle();
        assert_eq!(read_appending(None), (1, b"a\nb\nc\nc\n".to_vec()));

        // Rewritten (first bytes changed) and longer: read again, then reported.
        let rewrite = |text: &str| std::fs::write(&path, text).unwrap();
        let mut calls = 0;
        let mut file = open(&path).unwrap();
        let bytes = read_steady(&path, &mut file, |file| {
            calls += 1;
            let read = read_all(file)?;
            if calls == 1 {
                rewrite("A\nb\nc\n");
            }
            Ok(read)
        })
        .unwrap();
        assert_eq!((calls, bytes.as_slice()), (2, b"A\nb\nc\n".as_slice()));
        let mut file = open(&path).unwrap();
        let mut n = 0;
        let err = read_steady(&path, &mut file, |file| {
            let read = read_all(file)?;
            n += 1;
            rewrite(&format!("{n}\n{}", "x\n".repeat(n + 5)));
            Ok(read)
        })
        .unwrap_err();
        assert!(matches!(err, crate::Error::Changed { .. }), "{err}");
        assert!(err.to_string().contains("bytes when opened"), "{err}");

        // Bytes read that the length at open does not account for: truncated mid-read.
        let mut file = open(&path).unwrap();
        let err = read_steady(&path, &mut file, |file| Ok((read_all(file)?.0, 1))).unwrap_err();
        assert!(err.to_string().contains("1 read"), "{err}");
    }

    /// Each read lands at its file position's place in a cache line, where the kernel's copy is
    /// fastest: the first piece handed on starts there.
    #[test]
    fn reads_land_at_the_file_positions_alignment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        std::fs::write(&path, "{}\n".repeat(100_000)).unwrap();
        for offset in [0u64, 1, 13, 16, 63, 100, 4096 + 7] {
            let mut file = File::open(&path).unwrap();
            let mut buf = Vec::new();
            let mut first = None;
            read_lines(&mut file, offset, 300_000, &mut buf, CHUNK, |piece| {
                first.get_or_insert(piece.as_ptr() as usize);
            })
            .unwrap();
            assert_eq!(first.unwrap() % ALIGN, offset as usize % ALIGN, "offset {offset}");
        }
    }

    /// Every way of cutting a file into pieces hands on the same lines and the same tail.
    #[test]
    fn pieces_hold_whole_lines_and_the_tail_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let long = "x".repeat(CHUNK * 2 + 17);
        for text in ["", "a\n", "a\nbb\nccc", "\n\n\n", &format!("a\n{long}\nb\n{long}")] {
            let path = dir.path().join("f");
            std::fs::write(&path, text).unwrap();
            for (offset, chunk) in [(0, CHUNK), (1, CHUNK), (0, 7), (3, 67)] {
                if offset > text.len() {
                    continue;
                }
                let mut file = File::open(&path).unwrap();
                let mut buf = Vec::new();
                let mut seen = Vec::new();
                let end = read_lines(&mut file, offset as u64, text.len() as u64, &mut buf, chunk, |piece| {
                    assert_eq!(piece.last(), Some(&b'\n'));
                    seen.extend_from_slice(piece);
                })
                .unwrap();
                seen.extend_from_slice(&buf[end.tail.clone()]);
                assert_eq!(seen, text.as_bytes()[offset..]);
                assert_eq!(end.len, text.len() as u64);
                assert!(!buf[end.tail].contains(&b'\n'));
            }
        }
    }
}

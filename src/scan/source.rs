//! Getting a file's bytes: read in pieces of whole lines into a buffer the worker reuses.
//!
//! Files are read, not memory-mapped. Measured on the generated 1.5 GB corpus (`pisa bench`,
//! stages `map` and `read`): pieces of [`CHUNK`] bytes stay in the core's cache while they
//! are parsed, where a map makes the parser take every page from memory on first touch
//! (a third of the parse profile). A map also raises SIGBUS when another process truncates
//! the file under it, and Pi rewrites files when it migrates them; `read` just returns
//! fewer bytes.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// Bytes asked of each `read`: a piece that stays in a core's cache while it is parsed.
pub const CHUNK: usize = 256 * 1024;

/// Open a file for reading.
pub fn open(path: &Path) -> Result<File, crate::Error> {
    File::open(path).map_err(|cause| crate::Error::Read {
        path: path.to_path_buf(),
        cause,
    })
}

/// Read `file` from `offset` to its end, `chunk` bytes at a time, handing whole lines to `lines`
/// (each piece ends with `\n`; a line is never split). Returns the file's length as read and
/// leaves its unterminated last line, if any, at the start of `buf` (`buf[..len - end of last
/// newline]`). `buf` grows to hold the longest line and is reused by the caller.
pub fn read_lines(
    file: &mut File,
    offset: u64,
    buf: &mut Vec<u8>,
    chunk: usize,
    mut lines: impl FnMut(&[u8]),
) -> io::Result<ReadEnd> {
    if offset > 0 {
        file.seek(SeekFrom::Start(offset))?;
    }
    let mut pos = offset;
    // Bytes at the start of `buf` not yet handed on: the start of a line.
    let mut held = 0usize;
    loop {
        // Ask for at least `chunk` bytes, more when a long line already fills the buffer.
        let want = held.max(chunk);
        if buf.len() < held + want {
            buf.resize(held + want, 0);
        }
        let n = match file.read(&mut buf[held..held + want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        pos += n as u64;
        let filled = held + n;
        if let Some(last) = memchr::memrchr(b'\n', &buf[held..filled]) {
            let end = held + last + 1;
            lines(&buf[..end]);
            buf.copy_within(end..filled, 0);
            held = filled - end;
        } else {
            held = filled;
        }
    }
    Ok(ReadEnd { len: pos, tail: held })
}

/// Where [`read_lines`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadEnd {
    /// The file's length as read.
    pub len: u64,
    /// Bytes of the unterminated last line, at the start of the buffer.
    pub tail: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every way of cutting a file into pieces hands on the same lines and the same tail.
    #[test]
    fn pieces_hold_whole_lines_and_the_tail_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let long = "x".repeat(CHUNK * 2 + 17);
        for text in ["", "a\n", "a\nbb\nccc", "\n\n\n", &format!("a\n{long}\nb\n{long}")] {
            let path = dir.path().join("f");
            std::fs::write(&path, text).unwrap();
            for offset in [0, 1] {
                if offset > text.len() {
                    continue;
                }
                let mut file = File::open(&path).unwrap();
                let mut buf = Vec::new();
                let mut seen = Vec::new();
                let end = read_lines(&mut file, offset as u64, &mut buf, CHUNK, |piece| {
                    assert_eq!(piece.last(), Some(&b'\n'));
                    seen.extend_from_slice(piece);
                })
                .unwrap();
                seen.extend_from_slice(&buf[..end.tail]);
                assert_eq!(seen, text.as_bytes()[offset..]);
                assert_eq!(end.len, text.len() as u64);
                assert!(!buf[..end.tail].contains(&b'\n'));
            }
        }
    }
}

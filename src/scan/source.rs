//! Getting a file's bytes: a memory map for big settled files, a plain read otherwise.

use std::fs::File;
use std::io::Read;
use std::ops::Deref;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Files smaller than this are read: a map costs more than it saves.
pub const MMAP_MIN_BYTES: u64 = 256 * 1024;

/// Files modified more recently than this are read, not mapped: a live Pi may be
/// appending to them, or rewriting them when it migrates a session.
pub const SETTLE_TIME: Duration = Duration::from_secs(5);

/// The bytes of one file.
#[derive(Debug)]
pub enum FileBytes {
    Read(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Read(v) => v,
            FileBytes::Mapped(m) => m,
        }
    }
}

/// Open a file and get its bytes, mapping it when that is safe and worth it.
pub fn load(path: &Path) -> Result<FileBytes, crate::Error> {
    read_bytes(path).map_err(|cause| crate::Error::Read {
        path: path.to_path_buf(),
        cause,
    })
}

fn read_bytes(path: &Path) -> std::io::Result<FileBytes> {
    let mut file = File::open(path)?;
    let meta = file.metadata()?;
    let settled = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_some_and(|age| age >= SETTLE_TIME);
    if meta.len() >= MMAP_MIN_BYTES && settled {
        // SAFETY: see `map_settled_file`; the file was last modified SETTLE_TIME ago.
        if let Ok(map) = unsafe { map_settled_file(&file) } {
            return Ok(FileBytes::Mapped(map));
        }
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut buf)?;
    Ok(FileBytes::Read(buf))
}

/// Map a session file read-only.
///
/// # Safety
///
/// A mapped file that another process truncates while the map is alive makes reads of the
/// lost pages raise SIGBUS, and writes in place change bytes under the parser. Pi appends
/// to the file of the session it runs (appending is harmless: the map keeps its length)
/// and rewrites a file only when it migrates an old session on load. The caller must only
/// map files that have not been modified for [`SETTLE_TIME`], which rules out the session
/// Pi is running, and must drop the map as soon as the file is parsed.
unsafe fn map_settled_file(file: &File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: upheld by the caller as documented above.
    unsafe { memmap2::MmapOptions::new().map(file) }
}

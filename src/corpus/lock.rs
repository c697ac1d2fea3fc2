//! The cache's cross-process lock: one pisa run at a time writes the cache; any other run
//! meanwhile reads it without writing (a read-only view) instead of waiting.
//!
//! The lock is an advisory lock (`flock` through `fs4`) on `DIR/lock`, held from the moment a
//! run reads the index until it has written the next one. The kernel drops it when the holder
//! exits, even when it is killed, so a crashed run never leaves the cache locked. Readers take
//! no lock: every file the cache writes is renamed into place whole, and everything read
//! back is checked against a hash, so a reader sees the old state or the new one, never a
//! mix it would trust.

use std::fs::File;
use std::path::Path;

/// The name of the lock file in the cache folder.
pub const LOCK_FILE: &str = "lock";

/// The write lock on a cache folder, released on drop.
#[derive(Debug)]
pub struct WriteLock {
    file: File,
}

/// What trying the lock gave.
#[derive(Debug)]
pub enum Attempt {
    /// This run may write the cache.
    Held(WriteLock),
    /// Another run holds it: read without writing.
    Busy,
}

/// Take the write lock on the cache folder `dir` without waiting (creating the folder and
/// the lock file when missing).
pub fn try_write(dir: &Path) -> std::io::Result<Attempt> {
    std::fs::create_dir_all(dir)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(LOCK_FILE))?;
    // Through the trait: `File::try_lock` in std (1.89) is newer than this crate's MSRV.
    match fs4::FileExt::try_lock(&file) {
        Ok(()) => Ok(Attempt::Held(WriteLock { file })),
        Err(fs4::TryLockError::WouldBlock) => Ok(Attempt::Busy),
        Err(fs4::TryLockError::Error(e)) => Err(e),
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        // Closing the file releases it too; unlocking first makes the order plain.
        let _ = fs4::FileExt::unlock(&self.file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_told_the_cache_is_busy_until_the_first_is_done() {
        let dir = tempfile::tempdir().expect("temp dir");
        let first = try_write(dir.path()).expect("lock");
        assert!(matches!(first, Attempt::Held(_)));
        // flock locks belong to the open file: a second open in the same process conflicts.
        assert!(matches!(try_write(dir.path()).expect("lock"), Attempt::Busy));
        drop(first);
        assert!(matches!(try_write(dir.path()).expect("lock"), Attempt::Held(_)));
    }
}

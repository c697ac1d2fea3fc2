//! Typed errors and per-file problems. Library code never prints; `main` decides.

use std::path::{Path, PathBuf};

/// Errors of the library. Per-file problems never stop a scan: the corpus stage turns
/// them into a listed, skipped file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be opened, mapped or read.
    #[error("cannot read {}: {cause}", path.display())]
    Read { path: PathBuf, cause: std::io::Error },
    /// pisa's own temporary file could not be read back.
    #[error("cannot read back pisa's temporary file: {cause}")]
    Spill { cause: std::io::Error },
    /// The file was removed between discovery and open.
    #[error("{} is gone: removed after the scan found it", path.display())]
    Gone { path: PathBuf },
    /// A FIFO, a device or a folder where a session file was expected.
    #[error("{} is {kind}, not a regular file: not read", path.display())]
    NotAFile { path: PathBuf, kind: &'static str },
    /// The file changed while it was read, and again while it was read once more.
    #[error("{} changed while it was read, twice ({what}): not counted, run pisa again", path.display())]
    Changed { path: PathBuf, what: String },
}

/// A folder or file that discovery or reading could not handle.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ScanIssue {
    /// As text even when the name is not UTF-8 (see [`crate::paths::path_text`]).
    #[serde(serialize_with = "path_as_text")]
    pub path: PathBuf,
    pub reason: String,
}

impl ScanIssue {
    /// A new issue for `path`.
    pub fn new(path: &Path, reason: impl Into<String>) -> ScanIssue {
        ScanIssue {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }
}

fn path_as_text<S: serde::Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&crate::paths::path_text(path))
}

/// What a panic said (its payload as text).
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

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
}

/// A folder or file that discovery or reading could not handle.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ScanIssue {
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

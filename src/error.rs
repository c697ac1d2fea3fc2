//! Typed errors and per-file problems. Library code never prints; `main` decides.

use std::path::{Path, PathBuf};

/// Errors that stop a whole command (a single bad file never does).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The sessions folder does not exist.
    #[error("no sessions folder at {path}")]
    NoRoot { path: PathBuf },
    /// A file named on the command line could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Writing output failed.
    #[error("cannot write output: {0}")]
    Output(#[from] std::io::Error),
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

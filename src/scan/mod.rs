//! Finding session files and getting their bytes.
//!
//! The root is a command-line path, else `PI_CODING_AGENT_SESSION_DIR`, else
//! `~/.pi/agent/sessions`. Discovery is recursive, follows symlinks with loop detection,
//! and reports what it cannot read instead of failing. Files are scheduled largest first
//! so the big ones do not finish last on one core.

pub mod map;
pub mod source;

use crate::paths::{name_text, path_text};
use std::path::{Path, PathBuf};

use crate::error::ScanIssue;

/// The environment variable that overrides Pi's sessions folder.
pub const SESSION_DIR_ENV: &str = "PI_CODING_AGENT_SESSION_DIR";

/// The environment variable that overrides Pi's agent folder (`~/.pi/agent`).
pub const AGENT_DIR_ENV: &str = "PI_CODING_AGENT_DIR";

/// A session file found by the scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundFile {
    /// Where to read it.
    pub path: PathBuf,
    /// Relative to the root it was found under, `/`-separated (a file given directly: its name).
    pub rel: String,
    pub size: u64,
}

/// What discovery found.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// Files, largest first.
    pub files: Vec<FoundFile>,
    /// Folders or files that could not be read, symlink loops, missing roots.
    pub issues: Vec<ScanIssue>,
}

/// Where Pi keeps sessions, resolved as Pi resolves it (`main.js`, `config.js`):
/// `$PI_CODING_AGENT_SESSION_DIR`, else the `sessionDir` setting of the agent folder's
/// `settings.json`, else `<agent folder>/sessions`, the agent folder being
/// `$PI_CODING_AGENT_DIR` or `~/.pi/agent`. A leading `~` is the home folder, and a relative
/// `sessionDir` is taken from the working folder, as Pi does.
pub fn default_root() -> Option<PathBuf> {
    let home = std::env::home_dir();
    let expand = |p: &str| -> PathBuf {
        match (p.strip_prefix('~'), &home) {
            (Some(""), Some(h)) => h.clone(),
            (Some(rest), Some(h)) if rest.starts_with(['/', '\\']) => h.join(&rest[1..]),
            _ => PathBuf::from(p),
        }
    };
    if let Some(dir) = std::env::var(SESSION_DIR_ENV).ok().filter(|d| !d.is_empty()) {
        return Some(expand(&dir));
    }
    let agent = match std::env::var(AGENT_DIR_ENV).ok().filter(|d| !d.is_empty()) {
        Some(dir) => expand(&dir),
        None => home.as_ref()?.join(".pi").join("agent"),
    };
    let setting = std::fs::read(agent.join("settings.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("sessionDir").and_then(|d| d.as_str()).map(str::to_owned))
        .filter(|d| !d.is_empty());
    Some(match setting {
        Some(dir) => expand(&dir),
        None => agent.join("sessions"),
    })
}

/// Find every `*.jsonl` file under the given roots (directories or files).
pub fn discover(roots: &[PathBuf]) -> Discovery {
    let mut d = Discovery::default();
    for root in roots {
        match std::fs::metadata(root) {
            Err(e) => d.issues.push(ScanIssue::new(root, format!("cannot read: {e}"))),
            Ok(m) if m.is_file() => {
                let rel = root
                    .file_name()
                    .map_or_else(|| path_text(root), |n| name_text(n).into_owned());
                d.files.push(FoundFile {
                    path: root.clone(),
                    rel,
                    size: m.len(),
                });
            }
            Ok(m) if m.is_dir() => walk(root, &mut d),
            // A FIFO or a device given as a root: never opened.
            Ok(m) => d.issues.push(ScanIssue::new(
                root,
                format!(
                    "is {}, not a session file or folder: not read",
                    source::kind_name(m.file_type())
                ),
            )),
        }
    }
    // Largest first; ties by path so the order is deterministic.
    d.files
        .sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.rel.cmp(&b.rel)));
    d
}

/// Walk `root` in the order the folders list their entries; the issues found are put in path
/// order after (a folder before what it holds, names in byte order: the order of a walk sorted
/// by name). walkdir's sorting took every name out of its path again for each comparison,
/// and the files are sorted by size anyway: a sixth of the time before the first file was read.
fn walk(root: &Path, d: &mut Discovery) {
    let (first_issue, first_file) = (d.issues.len(), d.files.len());
    if walk_unsorted(root, d) {
        // Names that are not UTF-8 can share their text with one that is (`\xFF`); files of
        // the same size and text keep the sorted walk's order.
        d.files[first_file..].sort_by(|a, b| a.path.cmp(&b.path));
    }
    d.issues[first_issue..].sort_by(|a, b| a.path.cmp(&b.path));
}

/// Walks `root` in the folders' order; says whether a name under it is not UTF-8.
fn walk_unsorted(root: &Path, d: &mut Discovery) -> bool {
    let mut not_utf8 = false;
    let first_file = d.files.len();
    for item in walkdir::WalkDir::new(root).follow_links(true) {
        match item {
            Err(e) => {
                let path = e.path().map_or_else(|| root.to_path_buf(), Path::to_path_buf);
                let what = if e.loop_ancestor().is_some() {
                    "symlink loop".to_string()
                } else if let Some(to) = broken_link(&path, &e) {
                    format!("broken symlink: its target {} does not exist", path_text(&to))
                } else if e.io_error().is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
                    && std::fs::symlink_metadata(&path).is_err()
                {
                    "gone: removed while the scan listed its folder".to_string()
                } else if let Some(io) = e.io_error() {
                    format!("cannot read: {io}")
                } else {
                    e.to_string()
                };
                d.issues.push(ScanIssue::new(&path, what));
            }
            Ok(entry) => {
                let ft = entry.file_type();
                // The path's end is the name's (read from the name, a path's parts are parsed).
                if !entry.path().as_os_str().as_encoded_bytes().ends_with(b".jsonl") || ft.is_dir() {
                    continue;
                }
                if !ft.is_file() {
                    // A FIFO or a device with a session file's name: never opened.
                    let what = format!("is {}, not a regular file: not read", source::kind_name(ft));
                    d.issues.push(ScanIssue::new(entry.path(), what));
                    continue;
                }
                let under = entry.path().strip_prefix(root).unwrap_or(entry.path());
                // A walk joins names with one `/`: as UTF-8, the path under the root is its
                // names joined; else each name is made text on its own.
                let rel = match under.to_str() {
                    Some(text) => text.to_owned(),
                    None => {
                        not_utf8 = true;
                        under
                            .components()
                            .map(|c| name_text(c.as_os_str()))
                            .collect::<Vec<_>>()
                            .join("/")
                    }
                };
                d.files.push(FoundFile {
                    path: entry.into_path(),
                    rel,
                    // Below, once the folders are listed.
                    size: 0,
                });
            }
        }
    }
    sizes(&mut d.files[first_file..]);
    not_utf8
}

/// Each file's length, looked up on the thread pool: made during the walk, a `stat` per file
/// (by its whole path) kept the other core waiting. On the 1,205 files of the 1.5 GB corpus,
/// emptied, a whole `sessions` run took 0.92 of the time (28.9 → 26.7 ms, 40 alternating
/// rounds). What cannot be read counts as empty, as it did.
fn sizes(files: &mut [FoundFile]) {
    use rayon::prelude::*;
    // `metadata` follows a symlink as the walk does; a regular file is the same either way.
    files
        .par_iter_mut()
        .with_min_len(64)
        .for_each(|f| f.size = std::fs::metadata(&f.path).map_or(0, |m| m.len()));
}

/// The target of a symlink that points nowhere, when that is what `e` is about.
fn broken_link(path: &Path, e: &walkdir::Error) -> Option<PathBuf> {
    let missing = e.io_error()?.kind() == std::io::ErrorKind::NotFound;
    let target = std::fs::read_link(path).ok()?;
    (missing && std::fs::metadata(path).is_err()).then_some(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_jsonl_recursively_largest_first_and_reports_missing_roots() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("--proj--");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("a.jsonl"), "x").unwrap();
        std::fs::write(sub.join("b.jsonl"), "xxxx").unwrap();
        std::fs::write(sub.join("c.txt"), "xxxxxxxx").unwrap();
        let d = discover(&[dir.path().to_path_buf(), dir.path().join("nope")]);
        let rels: Vec<_> = d.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(rels, ["--proj--/b.jsonl", "--proj--/a.jsonl"]);
        assert_eq!(d.issues.len(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loops_are_reported_not_followed_forever() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("s");
        std::fs::create_dir(&sub).unwrap();
        std::os::unix::fs::symlink(dir.path(), sub.join("loop")).unwrap();
        std::fs::write(sub.join("a.jsonl"), "x").unwrap();
        let d = discover(&[dir.path().to_path_buf()]);
        assert_eq!(d.files.len(), 1);
        assert!(d.issues.iter().any(|i| i.reason.contains("loop")));
    }

    /// The walk is not sorted: files of one size and name text, and the issues, still come in
    /// the order of a walk sorted by name, whatever order the folders list their entries in.
    #[cfg(unix)]
    #[test]
    fn ties_and_issues_come_in_path_order() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("p");
        std::fs::create_dir(&sub).unwrap();
        // A name that is not UTF-8, and a UTF-8 name written the way the first is shown.
        let odd = sub.join(std::ffi::OsStr::from_bytes(b"a\xFF.jsonl"));
        let shown = sub.join(r"a\xFF.jsonl");
        std::fs::write(&odd, "x").unwrap();
        std::fs::write(&shown, "y").unwrap();
        let mut broken = Vec::new();
        for name in ["z", "m", "b", "q", "a", "y", "c", "x"].map(|n| format!("{n}.jsonl")) {
            std::os::unix::fs::symlink(dir.path().join("gone"), sub.join(&name)).unwrap();
            broken.push(sub.join(name));
        }
        let d = discover(&[dir.path().to_path_buf()]);
        let texts: Vec<_> = d.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(texts, [r"p/a\xFF.jsonl", r"p/a\xFF.jsonl"]);
        let paths: Vec<_> = d.files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(paths, [shown, odd]);
        let issues: Vec<_> = d.issues.iter().map(|i| i.path.clone()).collect();
        broken.sort();
        assert_eq!(issues, broken);
    }
}

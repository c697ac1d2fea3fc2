//! Finding session files and getting their bytes.
//!
//! The root is a command-line path, else `PI_CODING_AGENT_SESSION_DIR`, else
//! `~/.pi/agent/sessions`. Discovery is recursive, follows symlinks with loop detection,
//! and reports what it cannot read instead of failing. Files are scheduled largest first
//! so the big ones do not finish last on one core.

pub mod source;

use std::ffi::OsStr;
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

fn walk(root: &Path, d: &mut Discovery) {
    for item in walkdir::WalkDir::new(root).follow_links(true).sort_by_file_name() {
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
                if !entry.file_name().to_string_lossy().ends_with(".jsonl") || ft.is_dir() {
                    continue;
                }
                if !ft.is_file() {
                    // A FIFO or a device with a session file's name: never opened.
                    let what = format!("is {}, not a regular file: not read", source::kind_name(ft));
                    d.issues.push(ScanIssue::new(entry.path(), what));
                    continue;
                }
                let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                let rel = entry
                    .path()
                    .strip_prefix(root)
                    .unwrap_or(entry.path())
                    .components()
                    .map(|c| name_text(c.as_os_str()))
                    .collect::<Vec<_>>()
                    .join("/");
                d.files.push(FoundFile {
                    path: entry.into_path(),
                    rel,
                    size,
                });
            }
        }
    }
}

/// The target of a symlink that points nowhere, when that is what `e` is about.
fn broken_link(path: &Path, e: &walkdir::Error) -> Option<PathBuf> {
    let missing = e.io_error()?.kind() == std::io::ErrorKind::NotFound;
    let target = std::fs::read_link(path).ok()?;
    (missing && std::fs::metadata(path).is_err()).then_some(target)
}

/// A file or folder name as text: itself when it is UTF-8; else each byte that is not part
/// of valid UTF-8 becomes `\xNN` and a backslash `\\`, so names that differ in such bytes stay
/// distinct (a lossy conversion would make them all `\u{FFFD}`) and output stays UTF-8.
pub fn name_text(name: &OsStr) -> std::borrow::Cow<'_, str> {
    if let Some(s) = name.to_str() {
        return s.into();
    }
    let mut out = String::new();
    for chunk in name.as_encoded_bytes().utf8_chunks() {
        out.push_str(&chunk.valid().replace('\\', "\\\\"));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out.into()
}

/// Whether a file name (the last component of `rel`) is one Pi gives a session file:
/// `<ISO timestamp with : and . as ->_<session id>.jsonl`, as `SessionManager` names them.
pub fn pi_session_name(rel: &str) -> bool {
    let name = rel.rsplit(['/', '\\']).next().unwrap_or(rel).as_bytes();
    // 2026-05-01T10-00-00-000Z_ then an id, then .jsonl
    const SHAPE: &[u8; 25] = b"dddd-dd-ddTdd-dd-dd-dddZ_";
    name.len() > SHAPE.len() + ".jsonl".len()
        && name.ends_with(b".jsonl")
        && SHAPE
            .iter()
            .zip(name)
            .all(|(&s, &b)| if s == b'd' { b.is_ascii_digit() } else { s == b })
}

/// A whole path as text, each component as [`name_text`] writes it.
pub fn path_text(path: &Path) -> String {
    match path.to_str() {
        Some(s) => s.to_string(),
        None => name_text(path.as_os_str()).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_session_names_are_told_apart() {
        for yes in [
            "2026-05-01T10-00-00-000Z_019de1a2-0000-7000-8000-000000000000.jsonl",
            "--proj--/2025-12-09T00-53-12-345Z_x.jsonl",
        ] {
            assert!(pi_session_name(yes), "{yes}");
        }
        for no in [
            "todo-log.jsonl",
            "--proj--/2026-05-01T10-00-00-000Z_run/subagent-artifacts/a1_worker_0_transcript.jsonl",
            "2026-05-01T10-00-00-000Z_.jsonl",
            "2026-05-01T10:00:00.000Z_x.jsonl",
            "2026-05-01T10-00-00-000Z_x.json",
            "session.jsonl",
        ] {
            assert!(!pi_session_name(no), "{no}");
        }
    }

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

    /// Names that are not UTF-8 keep distinct, UTF-8 texts (a lossy conversion makes them
    /// all `a\u{FFFD}.jsonl`).
    #[cfg(unix)]
    #[test]
    fn names_that_are_not_utf8_stay_distinct() {
        use std::os::unix::ffi::OsStrExt;
        let names: [&[u8]; 5] = [
            b"a\xff.jsonl",
            b"a\xfe.jsonl",
            b"a\xef\xbf\xbd.jsonl",
            b"a\\xFF\xff",
            b"ok",
        ];
        let texts: Vec<_> = names.iter().map(|n| name_text(OsStr::from_bytes(n))).collect();
        assert_eq!(
            texts,
            ["a\\xFF.jsonl", "a\\xFE.jsonl", "a\u{FFFD}.jsonl", "a\\\\xFF\\xFF", "ok"]
        );
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
}

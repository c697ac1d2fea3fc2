//! The bundled sample: the session files of `datasets/sample`, compiled into the binary, so
//! that `pisa sessions --demo` (and pisa without a sessions folder) has something to show
//! wherever the binary was installed or copied to.

use std::path::Path;

use include_dir::{Dir, include_dir};

static SAMPLE: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/datasets/sample");

/// The sample's session files written out under a new temporary folder, which is removed
/// when the returned value is dropped.
pub fn unpack() -> std::io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix("pisa-sample-").tempdir()?;
    write(&SAMPLE, dir.path())?;
    Ok(dir)
}

/// Session files in the sample.
pub fn files() -> usize {
    count(&SAMPLE)
}

fn write(d: &Dir<'_>, to: &Path) -> std::io::Result<()> {
    for f in d.files().filter(|f| is_session(f.path())) {
        let path = to.join(f.path());
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, f.contents())?;
    }
    d.dirs().try_for_each(|sub| write(sub, to))
}

fn count(d: &Dir<'_>) -> usize {
    d.files().filter(|f| is_session(f.path())).count() + d.dirs().map(count).sum::<usize>()
}

fn is_session(p: &Path) -> bool {
    p.extension().is_some_and(|x| x == "jsonl")
}

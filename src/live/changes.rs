//! When to refresh: a session file under the watched folders changed. File notifications
//! through `notify` (inotify, FSEvents, ...) where the system has them, else `notify`'s
//! polling watcher, which compares the files every `interval`.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use notify::{PollWatcher, RecommendedWatcher, RecursiveMode, Watcher};

/// A watcher of session folders.
#[derive(Debug)]
pub struct Changes {
    /// Kept alive while watching.
    _watcher: Option<Box<dyn std::any::Any + Send>>,
    events: Receiver<()>,
    mode: String,
}

impl Changes {
    /// Watch `roots` (recursively) with notifications, else by polling every `interval`.
    pub fn watch(roots: &[PathBuf], interval: Duration) -> Changes {
        let (tx, events) = channel();
        let send = move |e: notify::Result<notify::Event>| {
            if e.is_ok_and(|e| is_write(&e)) {
                let _ = tx.send(());
            }
        };
        if let Ok(w) =
            RecommendedWatcher::new(send.clone(), notify::Config::default()).and_then(|w| watch_all(w, roots))
        {
            return Changes {
                _watcher: Some(Box::new(w)),
                events,
                mode: "refreshes on file notifications".into(),
            };
        }
        let config = notify::Config::default()
            .with_poll_interval(interval)
            .with_compare_contents(false);
        let w = PollWatcher::new(send, config).and_then(|w| watch_all(w, roots)).ok();
        let mode = match &w {
            Some(_) => format!("polling every {:.1} s", interval.as_secs_f64()),
            None => "cannot watch the folders: refreshes once a minute".into(),
        };
        Changes {
            _watcher: w.map(|w| Box::new(w) as Box<dyn std::any::Any + Send>),
            events,
            mode,
        }
    }

    /// Whether anything changed since the last call (every event so far is taken).
    pub fn changed(&self) -> bool {
        self.events.try_iter().count() > 0
    }

    /// Wait up to `timeout` for a change.
    pub fn wait(&self, timeout: Duration) -> bool {
        let got = self.events.recv_timeout(timeout).is_ok();
        got | self.changed()
    }

    /// How changes are noticed, for the screen.
    pub fn mode(&self) -> &str {
        &self.mode
    }
}

fn watch_all<W: Watcher>(mut w: W, roots: &[PathBuf]) -> notify::Result<W> {
    for r in roots {
        w.watch(r, RecursiveMode::Recursive)?;
    }
    Ok(w)
}

/// A file was created, written or renamed (reads and metadata-only events are ignored: the
/// view's own reads must not wake it).
fn is_write(e: &notify::Event) -> bool {
    use notify::EventKind;
    use notify::event::ModifyKind;
    match e.kind {
        EventKind::Create(_) | EventKind::Remove(_) => true,
        EventKind::Modify(ModifyKind::Metadata(_)) => false,
        EventKind::Modify(_) => true,
        // An `Access(Close(Write))` says a writer finished.
        EventKind::Access(notify::event::AccessKind::Close(notify::event::AccessMode::Write)) => true,
        _ => false,
    }
}

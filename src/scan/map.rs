//! Memory-mapped reads of settled files, and the SIGBUS guard that turns a file truncated under
//! its map into a changed file instead of a crash.
//!
//! With `--read-mode auto` a settled file (not modified for [`SETTLED_AFTER`]) is mapped
//! read-only and parsed straight from the map, without the copy from the page cache into a
//! buffer that `read` makes (`--read-mode map`: every file). Pi only
//! appends to a session file, which a map does not mind (the map ends at the length the file had
//! when it was mapped), but it rewrites a file when it migrates it, and a file that becomes
//! shorter than a map of it makes the next touch of a page past its new end raise SIGBUS.
//!
//! Every live map is registered in a fixed table of atomics. A process-wide SIGBUS handler
//! (installed once, before the first map) looks the faulting address up in that table; when it
//! lies in one of pisa's maps, the handler maps zero pages over the rest of that map (so the
//! faulting read, done again, reads zeros), flags the map and returns. The reader checks the flag
//! when it is done and counts the file as changed while it was read: it is read once more (as a
//! read that sees a change is), and reported `changed` when it changes again. Any other SIGBUS goes to the handler that was
//! there before (Rust's own, which ends the process as the default action does).
//!
//! Files are read, not mapped, unless `--read-mode` says otherwise: on the generated 1.5 GB
//! corpora (2 cores, in a VM) the whole pipeline took as long or 1–4 % more CPU from maps. The
//! map saves the kernel's copy (a tenth of the CPU of a scan), but its pages come into the
//! process by page faults and TLB fills (costly in a VM), and the parser then reads the bytes
//! from memory where a read leaves them in the core's cache. Only counting lines is faster
//! mapped (`pisa bench`, stages `map` and `split`). See benches/README.md for the figures.

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering, fence};
use std::time::{Duration, SystemTime};

/// How session files are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum ReadMode {
    /// Read every file (the default: mapping measured no faster, see the module's docs).
    #[default]
    Read,
    /// Map settled files, read the others.
    Auto,
    /// Map every file (a file that changed while it was read is read again by mapping it too).
    Map,
}

static MODE: AtomicU8 = AtomicU8::new(0);

/// Set how files are read, for the whole process.
pub fn set_mode(mode: ReadMode) {
    MODE.store(mode as u8, Ordering::Relaxed);
}

/// How files are read.
pub fn mode() -> ReadMode {
    match MODE.load(Ordering::Relaxed) {
        1 => ReadMode::Auto,
        2 => ReadMode::Map,
        _ => ReadMode::Read,
    }
}

/// A file not modified for this long is settled: in [`ReadMode::Auto`] it is mapped. A live
/// session is written to every few seconds while Pi works; the map would not mind Pi's appends,
/// but a file written to meanwhile is read again, and that read is a plain one.
pub const SETTLED_AFTER: Duration = Duration::from_secs(5 * 60);

/// Whether a file modified at `modified` (nanoseconds since the epoch, as in
/// [`super::source::Stamp`]) is mapped rather than read, at `now`, on the `attempt`-th read of it
/// (0 first): in `Auto`, settled files on the first attempt (a file that changed during the
/// first is not settled).
pub fn wanted(mode: ReadMode, modified: i128, now: SystemTime, attempt: u32) -> bool {
    match mode {
        ReadMode::Read => false,
        ReadMode::Map => true,
        ReadMode::Auto => attempt == 0 && settled(modified, now),
    }
}

/// Whether a file modified at `modified` (nanoseconds since the epoch) is settled at `now`: not
/// modified for [`SETTLED_AFTER`], so Pi is not writing it.
pub fn settled(modified: i128, now: SystemTime) -> bool {
    let now = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    now - modified >= SETTLED_AFTER.as_nanos() as i128
}

/// A read-only map of a file from `offset` to `offset + len`, registered with the SIGBUS guard
/// for as long as it lives.
#[derive(Debug)]
pub struct Mapped {
    slot: usize,
    released: std::cell::Cell<usize>,
    // Dropped after `Drop::drop` took the map out of the guard's table.
    map: memmap2::Mmap,
}

impl Mapped {
    /// Map `len` bytes of `file` from `offset`, for sequential use. `None` when there is nothing
    /// to map or all slots of the guard are taken: read the file instead.
    ///
    /// Not `MAP_POPULATE`: entering every page at once cost more CPU than the faults it saved
    /// (measured on the 1.5 GB corpora, 2 cores, in a VM) and put the whole file in pisa's
    /// resident memory at once; see benches/README.md.
    pub fn new(file: &File, offset: u64, len: u64) -> io::Result<Option<Mapped>> {
        let Ok(len) = usize::try_from(len) else {
            return Ok(None);
        };
        if len == 0 {
            return Ok(None);
        }
        install();
        let Some(slot) = claim() else { return Ok(None) };
        // SAFETY: memmap2's contract is that the file is not changed while it is mapped. pisa
        // cannot keep Pi or anyone else from changing it, so it keeps what it relies on instead:
        // the map is read-only and private to this value, its bytes are only ever read (never
        // handed on as `&'static`), a shrinking file's SIGBUS is caught by the guard, which this
        // map is registered with below before any byte of it is touched, and a file whose bytes
        // change under the map is noticed afterwards by its stamp (`source::read_steady`) and
        // its parse thrown away.
        let map = unsafe { memmap2::MmapOptions::new().offset(offset).len(len).map(file) };
        let map = match map {
            Ok(m) => m,
            Err(e) => {
                release(slot);
                return Err(e);
            }
        };
        // Only advice (read-ahead when the page cache is cold): a kernel that ignores it reads
        // the same bytes.
        let _ = map.advise(memmap2::Advice::Sequential);
        register(slot, map.as_ptr() as usize, map.len());
        let mapped = Mapped {
            slot,
            map,
            released: std::cell::Cell::new(0),
        };
        debug_truncate(file, offset);
        Ok(Some(mapped))
    }

    /// The first `done` bytes are parsed and not looked at again: take their pages out of this
    /// process's page tables (they stay in the page cache). Every page a map touched would
    /// otherwise count in pisa's resident memory until the map is dropped: a 60 MB file added
    /// 60 MB to the peak.
    pub fn release(&self, done: usize) {
        let page = PAGE.load(Ordering::Relaxed);
        let upto = done.min(self.map.len()) / page * page;
        let released = self.released.get();
        if upto > released {
            // SAFETY: `MADV_DONTNEED` on a shared read-only file map drops page table entries
            // only: the file's pages stay in the page cache, and a later touch maps them again
            // with the same bytes (or the guard's zeros). No reference into the released range
            // is used again (the parser went past it), though it would stay valid to read.
            let _ = unsafe {
                self.map
                    .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, released, upto - released)
            };
            self.released.set(upto);
        }
    }

    /// The mapped bytes (zeros from where the file was cut short, if it was).
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The file became shorter than the map while it was read: the bytes are not the file's.
    pub fn truncated(&self) -> bool {
        TABLE[self.slot].faulted.load(Ordering::Acquire)
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        release(self.slot);
    }
}

/// Debug builds only: truncate a file whose path contains `$PISA_DEBUG_TRUNCATE_MAPPED` to half
/// the length just mapped, as a migration by Pi could at that moment, so that tests see a
/// truncation under a live map every time.
fn debug_truncate(file: &File, offset: u64) {
    #[cfg(debug_assertions)]
    if std::env::var_os("PISA_DEBUG_TRUNCATE_MAPPED").is_some() {
        use std::os::fd::AsRawFd;
        let path = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap_or_default();
        if super::source::debug_hook_names("PISA_DEBUG_TRUNCATE_MAPPED", &path)
            && let Ok(m) = file.metadata()
            && let Ok(w) = std::fs::OpenOptions::new().write(true).open(&path)
        {
            let _ = w.set_len(offset + (m.len() - offset) / 2);
        }
    }
    #[cfg(not(debug_assertions))]
    let _ = (file, offset);
}

/// Debug builds only: panic in the parse from a map of a file whose path contains
/// `$PISA_DEBUG_PANIC_MAPPED`, as a parse of bytes rewritten under it can, so that tests see
/// such a file read again (by `read`) every time.
pub fn debug_panic_mapped(path: &std::path::Path) {
    if super::source::debug_hook_names("PISA_DEBUG_PANIC_MAPPED", path) {
        panic!("PISA_DEBUG_PANIC_MAPPED matched {}", path.display());
    }
}

/// Maps at once, at most: each core maps one file at a time, and one more for each file it
/// takes up while it waits for help with a big one. With every slot taken, files are read.
const SLOTS: usize = 256;

/// One live map, as the handler sees it. `seq` is odd while the slot is being written (a
/// seqlock: the handler reads `start` and `len` only between two equal even values of `seq`);
/// `len` 0 is a free slot.
struct Slot {
    seq: AtomicUsize,
    start: AtomicUsize,
    len: AtomicUsize,
    taken: AtomicBool,
    faulted: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    seq: AtomicUsize::new(0),
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    taken: AtomicBool::new(false),
    faulted: AtomicBool::new(false),
};

static TABLE: [Slot; SLOTS] = [FREE; SLOTS];

/// A free slot, taken.
fn claim() -> Option<usize> {
    (0..SLOTS).find(|&i| {
        TABLE[i]
            .taken
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    })
}

/// Publish a map in its slot.
fn register(slot: usize, start: usize, len: usize) {
    let s = &TABLE[slot];
    s.faulted.store(false, Ordering::Relaxed);
    s.seq.fetch_add(1, Ordering::Relaxed);
    fence(Ordering::Release);
    s.start.store(start, Ordering::Relaxed);
    s.len.store(len, Ordering::Relaxed);
    s.seq.fetch_add(1, Ordering::Release);
}

/// Take a map out of the table (before it is unmapped) and free its slot.
fn release(slot: usize) {
    let s = &TABLE[slot];
    s.seq.fetch_add(1, Ordering::Relaxed);
    fence(Ordering::Release);
    s.len.store(0, Ordering::Relaxed);
    s.start.store(0, Ordering::Relaxed);
    s.seq.fetch_add(1, Ordering::Release);
    s.taken.store(false, Ordering::Release);
}

/// The handler's view of a slot: its map's range when the slot is steady and in use.
fn range(s: &Slot) -> Option<(usize, usize)> {
    let before = s.seq.load(Ordering::Acquire);
    if before % 2 == 1 {
        return None;
    }
    let start = s.start.load(Ordering::Relaxed);
    let len = s.len.load(Ordering::Relaxed);
    fence(Ordering::Acquire);
    (len > 0 && s.seq.load(Ordering::Relaxed) == before).then_some((start, len))
}

/// The page size, read once when the handler is installed (`sysconf` in a handler is not
/// async-signal-safe).
static PAGE: AtomicUsize = AtomicUsize::new(4096);

/// The SIGBUS action that was in place before pisa's, to hand other faults on to.
struct Previous(std::cell::UnsafeCell<std::mem::MaybeUninit<libc::sigaction>>);

// SAFETY: written once by `install` (under its `Once`) before the handler that reads it is
// installed, and never written again; the handler and `install` only read it after that.
unsafe impl Sync for Previous {}

static PREVIOUS: Previous = Previous(std::cell::UnsafeCell::new(std::mem::MaybeUninit::zeroed()));

/// Install the SIGBUS handler, once per process.
fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `sysconf` has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if page > 0 {
            PAGE.store(page as usize, Ordering::Relaxed);
        }
        // SAFETY: a zeroed `sigaction` is a valid value of this plain C struct; the handler
        // has the signature `SA_SIGINFO` asks for; `PREVIOUS` is written here, before the
        // handler can run, and nowhere else (see its `Sync`).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, (*PREVIOUS.0.get()).as_mut_ptr());
        }
    });
}

/// The SIGBUS handler. Lock-free and allocation-free: atomics, `mmap`, `sigaction`, `raise`.
extern "C" fn on_sigbus(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel hands a valid `siginfo_t` to an `SA_SIGINFO` handler; `si_addr` is the
    // faulting address for SIGBUS.
    let (addr, code) = unsafe { ((*info).si_addr() as usize, (*info).si_code) };
    if guard(addr) {
        return;
    }
    // SAFETY: `PREVIOUS` was written before this handler was installed (see `install`).
    let previous = unsafe { (*PREVIOUS.0.get()).assume_init_ref() };
    let handler = previous.sa_sigaction;
    if handler == libc::SIG_IGN && code <= 0 {
        // Sent by a process to a process that ignored it.
        return;
    }
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // SAFETY: `sigaction` and `raise` are async-signal-safe; a zeroed action with
        // `SIG_DFL` restores the default. The signal is blocked in this handler, so the raised
        // one (or the fault, repeated on return) ends the process as it would have without pisa.
        unsafe {
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(libc::SIGBUS, &default, std::ptr::null_mut());
            libc::raise(libc::SIGBUS);
        }
        return;
    }
    // SAFETY: the previous handler was installed for SIGBUS with these flags, so it has the
    // signature they say; it is called with the arguments the kernel gave this one.
    unsafe {
        if previous.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = std::mem::transmute(handler);
            f(signal, info, context);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(handler);
            f(signal);
        }
    }
}

/// When `addr` lies in one of pisa's maps: map zero pages over that map from the faulting page
/// to its end, flag it, and say so.
fn guard(addr: usize) -> bool {
    let page = PAGE.load(Ordering::Relaxed);
    for s in &TABLE {
        let Some((start, len)) = range(s) else { continue };
        if addr < start || addr - start >= len {
            continue;
        }
        let from = addr & !(page - 1);
        let to = (start + len).div_ceil(page) * page;
        // SAFETY: `[from, to)` lies within this map's pages (the map starts at or before the
        // page of `start` and covers whole pages to `to`); this slot stays registered until its
        // owner drops the map, which it cannot do while one of its reads is faulting. Replacing
        // those pages with private zero pages only changes what the map's reader sees: zeros
        // past the file's new end instead of a fault. `mmap` is a plain system call.
        let done = unsafe {
            libc::mmap(
                from as *mut libc::c_void,
                to - from,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if done == libc::MAP_FAILED {
            return false;
        }
        s.faulted.store(true, Ordering::Release);
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A file cut short under its map reads as zeros past its new end, and says so; no SIGBUS
    /// reaches the process. Without the guard this test dies of SIGBUS.
    #[test]
    fn a_file_truncated_under_its_map_reads_zeros_and_is_flagged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        let text = b"{\"a\":1}\n".repeat(100_000);
        std::fs::File::create(&path).unwrap().write_all(&text).unwrap();
        let file = File::open(&path).unwrap();
        let other = File::open(&path).unwrap();
        let keep = Mapped::new(&other, 0, 4096).unwrap().unwrap();
        let map = Mapped::new(&file, 0, text.len() as u64).unwrap().unwrap();
        assert_eq!(map.bytes(), &text[..]);
        assert!(!map.truncated());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(10_000)
            .unwrap();
        let bytes = map.bytes();
        let page = PAGE.load(Ordering::Relaxed);
        let end = 10_000usize.div_ceil(page) * page;
        assert_eq!(&bytes[..10_000], &text[..10_000]);
        assert!(bytes[end..].iter().all(|&b| b == 0));
        assert!(map.truncated());
        // Another map of the same process is left alone.
        assert!(!keep.truncated());
        assert_eq!(keep.bytes(), &text[..4096]);
        drop(map);
        // Its slot is free again and clean for the next map.
        let again = Mapped::new(&file, 0, 10_000).unwrap().unwrap();
        assert!(!again.truncated());
        assert_eq!(again.bytes(), &text[..10_000]);
    }

    /// A map from an offset that is not a page's covers exactly the bytes asked for.
    #[test]
    fn a_map_from_an_offset_holds_the_bytes_from_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let text: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &text).unwrap();
        let file = File::open(&path).unwrap();
        let map = Mapped::new(&file, 5_000, 12_000).unwrap().unwrap();
        assert_eq!(map.bytes(), &text[5_000..17_000]);
        assert!(Mapped::new(&file, 0, 0).unwrap().is_none());
    }

    /// The pages of parsed bytes leave pisa's resident memory: a map touched whole and released
    /// holds none, where it held them all.
    #[test]
    fn released_pages_leave_resident_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let len = 4 << 20;
        std::fs::write(&path, vec![b'x'; len]).unwrap();
        let file = File::open(&path).unwrap();
        let map = Mapped::new(&file, 0, len as u64).unwrap().unwrap();
        let resident = || {
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
            let start = format!("{:x}-", map.bytes().as_ptr() as usize);
            let entry = smaps.split_once(&start).expect("the map in smaps").1;
            let rss = entry.lines().find(|l| l.starts_with("Rss:")).unwrap();
            rss.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap()
        };
        assert_eq!(map.bytes().iter().filter(|&&b| b == b'x').count(), len);
        assert_eq!(resident(), len / 1024);
        map.release(len / 2 + 1);
        assert_eq!(resident(), len / 2 / 1024);
        map.release(len);
        assert_eq!(resident(), 0);
        // Released bytes still read the same.
        assert_eq!(map.bytes()[len - 1], b'x');
    }

    /// Settled files are mapped in `auto`, on a first attempt only; `read` and `map` say it all.
    #[test]
    fn which_files_are_mapped() {
        let now = SystemTime::now();
        let ns = |ago: Duration| (now - ago).duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos() as i128;
        let old = ns(SETTLED_AFTER + Duration::from_secs(1));
        let fresh = ns(Duration::from_secs(3));
        assert!(wanted(ReadMode::Auto, old, now, 0));
        assert!(!wanted(ReadMode::Auto, old, now, 1));
        assert!(!wanted(ReadMode::Auto, fresh, now, 0));
        assert!(!wanted(ReadMode::Read, old, now, 0));
        assert!(wanted(ReadMode::Map, fresh, now, 1));
    }
}

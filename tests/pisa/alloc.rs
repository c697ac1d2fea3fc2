//! Allocation counting, as simd-json's own tests do: once a worker's buffers are warm, the
//! parser allocates nothing for a line it skips, and for a line it keeps only the few small
//! records of the entry, however long the line is (content is measured, never copied).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use pisa::parse::{Scratch, parse_file};

/// The system allocator, counting the allocations of each thread.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `GlobalAlloc`'s contract, which this passes on as it is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `GlobalAlloc`'s contract, which this passes on as it is.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `GlobalAlloc`'s contract, which this passes on as it is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds `GlobalAlloc`'s contract, which this passes on as it is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

/// Allocations made by parsing a file of `n` copies of `line` with warm buffers, the file's
/// own text and the parsed result not counted.
fn allocations(line: &str, n: usize, scratch: &mut Scratch) -> u64 {
    let text = format!("{HEADER}\n{}", format!("{line}\n").repeat(n));
    // Warm up: the buffers grow to this file's longest line.
    drop(parse_file(text.as_bytes(), scratch));
    let before = ALLOCATIONS.with(Cell::get);
    let parsed = parse_file(text.as_bytes(), scratch);
    let after = ALLOCATIONS.with(Cell::get);
    drop(parsed);
    after - before
}

/// Allocations per line in steady state: the difference between `2n` and `n` lines, so the
/// per-file costs (and the doubling of the entry list) cancel out.
fn per_line(line: &str) -> f64 {
    let mut scratch = Scratch::default();
    let n = 256;
    let one = allocations(line, n, &mut scratch);
    let two = allocations(line, 2 * n, &mut scratch);
    (two as f64 - one as f64) / n as f64
}

fn assistant(text: &str) -> String {
    format!(
        r#"{{"type":"message","id":"a1b2c3d4","parentId":"e5f6a7b8","timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":"{text}"}},{{"type":"text","text":"{text}"}},{{"type":"toolCall","id":"t1","name":"bash","arguments":{{"command":"{text}"}}}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{{"input":10,"output":20,"cacheRead":30,"cacheWrite":40,"totalTokens":100,"cost":{{"input":0.1,"output":0.2,"cacheRead":0.3,"cacheWrite":0.4,"total":1}}}},"stopReason":"toolUse","timestamp":1767225601000}}}}"#
    )
}

fn tool_result(text: &str) -> String {
    let image = "iVBORw0KGgo".repeat(text.len() / 11 + 30);
    format!(
        r#"{{"type":"message","id":"b1b2c3d4","parentId":"a1b2c3d4","timestamp":"2026-01-01T00:00:02.000Z","message":{{"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{{"type":"text","text":"{text}"}},{{"type":"image","data":"{image}","mimeType":"image/png"}}],"isError":false,"timestamp":1767225602000}}}}"#
    )
}

#[test]
fn skipped_lines_allocate_nothing() {
    for line in ["", "   ", "{bad json", "null", "0", "\"\"", r#"{"type":"x","#] {
        assert_eq!(per_line(line), 0.0, "line {line:?}");
    }
}

#[test]
fn kept_lines_allocate_only_their_records_whatever_their_length() {
    // An assistant answer: its message box, provider, model, api and stop reason (ids and
    // timestamps are inline); a tool result: its message box. The scratch's first growth is
    // spread over the lines counted, hence the fraction.
    for (make, records) in [(assistant as fn(&str) -> String, 5.0), (tool_result, 1.0)] {
        let short = per_line(&make("hi"));
        let long = per_line(&make(&"long text \\n with escapes \\\" and ünïcödé ".repeat(400)));
        assert_eq!(short, long, "a long line allocates more than a short one");
        assert!(short.floor() <= records, "{short} allocations per line, not {records}");
    }
}

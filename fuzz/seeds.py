#!/usr/bin/env python3
"""Build the seed corpora of the fuzz targets (fuzz/corpus/{line,file}) at run time.

Sources: the session files Pi wrote (../tests/data/pi-mono), the committed sample (../datasets/sample),
a small generated corpus and mutants of it (../datasets/generate.py, ../datasets/mutate.py), and
a few hand-written oddities. Nothing here is committed but this script.

- file: every source file up to FILE_MAX bytes whole; bigger files as windows of whole lines
  behind their header (and one window cut mid-line, as a file Pi is still writing).
- line: the distinct lines of all sources up to LINE_MAX bytes, at most PER_SHAPE per JSON
  shape (the set of key paths), so that thousands of look-alike lines do not swamp the rest.

Usage: python3 fuzz/seeds.py [--out fuzz/corpus] [--work DIR]   (stdlib only)
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FILE_MAX = 8 * 1024
WINDOW = 4 * 1024
WINDOWS_PER_FILE = 6
LINE_MAX = 16 * 1024
PER_SHAPE = 3

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
H = b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}'

# Inputs the generators do not write: the JSON.parse repairs, odd ids and parents, odd numbers.
ODD_LINES = [
    b'\xef\xbb\xbf' + H,
    b'{"type":"x","t":"\\ud83d"}',
    b'{"type":"x","t":"\xff\xfe"}',
    b'{"type":"message","id":"a","parentId":"a","message":{"role":"assistant","usage":{"input":1e400,"output":-3,"cacheRead":0.5,"cacheWrite":18446744073709551617,"cost":{"total":"NaN"}}}}',
    b'{"type":"custom","id":{"o":1},"parentId":[2]}',
    b'{"type":"compaction","id":"c","parentId":null,"firstKeptEntryId":{},"tokensBefore":-1,"summary":""}',
    b'{"type":"session","id":5}',
    b'[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]',
    b'  null ',
    b'{"type":"message","message":{"role":"user","content":[{"type":"image","data":"iVBORw0KGgo","mimeType":"image/png"}]}}',
]
ODD_FILES = [
    H + b'\n{"type":"custom","id":"a","parentId":"b"}\n{"type":"custom","id":"b","parentId":"a"}\n',
    H + b'\r\n\n  \n{bad\n{"type":"cus',
    b'\xef\xbb\xbf' + H + b'\n',
    b'\n \nnot json\n',
]


def name(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def write(dir: Path, data: bytes) -> None:
    (dir / name(data)).write_bytes(data)


def shape(line: bytes):
    """The sorted key paths of a JSON line (None when it is not JSON)."""
    try:
        v = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    paths = set()

    def walk(v, path, depth):
        if depth > 6:
            return
        if isinstance(v, dict):
            t = v.get("type") if isinstance(v.get("type"), str) else ""
            for k, x in v.items():
                p = f"{path}.{k}:{t}"
                paths.add(p)
                walk(x, p, depth + 1)
        elif isinstance(v, list):
            for x in v[:8]:
                walk(x, path + "[]", depth + 1)

    walk(v, "", 0)
    return tuple(sorted(paths))


def sources(work: Path) -> list[Path]:
    gen = work / "gen"
    mut = work / "mut"
    subprocess.run([sys.executable, str(REPO / "datasets/generate.py"), "--out", str(gen), "--seed", "7",
                    "--scale", "small", "--sessions", "15", "--jobs", "1"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, str(REPO / "datasets/mutate.py"), "--seed", "7", "--count", "40",
                    "--out", str(mut), str(gen)], check=True, stdout=subprocess.DEVNULL)
    roots = [REPO / "tests/data/pi-mono", REPO / "datasets/sample", gen, mut]
    files = []
    for root in roots:
        if not root.is_dir():
            sys.exit(f"seeds: {root} is missing")
        files += sorted(p for p in root.rglob("*.jsonl") if p.is_file())
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE / "corpus")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one)")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="pisa-fuzz-seeds-"))
    line_dir, file_dir = args.out / "line", args.out / "file"
    for d in (line_dir, file_dir):
        d.mkdir(parents=True, exist_ok=True)
    try:
        files = sources(work)
        shapes: dict = {}
        lines_seen = set()
        for data in ODD_FILES:
            write(file_dir, data)
        for line in ODD_LINES:
            write(line_dir, line)
        for path in files:
            data = path.read_bytes()
            lines = data.split(b"\n")
            if len(data) <= FILE_MAX:
                write(file_dir, data)
            else:
                head, body = lines[0] + b"\n", lines[1:]
                step = max(1, len(body) // WINDOWS_PER_FILE)
                for start in range(0, len(body), step):
                    window, size = [], len(head)
                    for l in body[start:]:
                        if size + len(l) + 1 > WINDOW and window:
                            break
                        window.append(l)
                        size += len(l) + 1
                    write(file_dir, head + b"\n".join(window) + b"\n")
                cut = head + b"\n".join(body[:3])
                write(file_dir, cut[: len(cut) - len(body[2]) // 2 if len(body) > 2 else len(cut)])
            for line in lines:
                if not line or len(line) > LINE_MAX or line in lines_seen:
                    continue
                lines_seen.add(line)
                key = shape(line)
                n = shapes.get(key, 0)
                if n < PER_SHAPE:
                    shapes[key] = n + 1
                    write(line_dir, line)
        count = lambda d: sum(1 for _ in d.iterdir())
        print(f"seeds: {len(files)} source files -> {count(file_dir)} file seeds, {count(line_dir)} line seeds in {args.out}")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

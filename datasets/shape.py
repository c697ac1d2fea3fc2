#!/usr/bin/env python3
"""The shape of a session corpus: where its bytes are (by entry kind) and how big its files are.

    python3 datasets/shape.py DIR [--json]

Prints, for every kind of line (a message by its role, otherwise the entry's type), its share of
the corpus's bytes, its line count and its average line length (newline included), then the
file-size distribution: median, p90, p99, largest, and the files of 8 MB or more. Issue 20 gives a
real corpus's shape in these terms (tool results 66 % of bytes at 5.4 KB a line, assistant messages
24 % at 2.2 KB, user 8.5 % at 3.8 KB, system 0.7 %, compaction 0.4 %; median file 330 KB, p99
12.4 MB, largest 57 MB, 26 files >= 8 MB at 1.5 GB), so that generated corpora can be compared with
it. Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import defaultdict

# Pi writes `type` first and a message's `role` first: the kind is read from the line's start,
# and only lines that do not start that way are parsed whole.
TYPE = re.compile(rb'^\{"type":"([^"\\]{1,40})"')
ROLE = re.compile(rb'"message":\{"role":"([^"\\]{1,40})"')


def kind_of(line: bytes) -> str:
    m = TYPE.match(line)
    if m and m.group(1) != b"message":
        return m.group(1).decode()
    if m:
        r = ROLE.search(line, 0, 400)
        if r:
            return r.group(1).decode()
    try:
        v = json.loads(line)
    except ValueError:
        return "(not json)" if line.strip() else "(blank)"
    if not isinstance(v, dict):
        return "(not an object)"
    if v.get("type") == "message" and isinstance(v.get("message"), dict):
        return str(v["message"].get("role"))
    return str(v.get("type"))


def percentile(sorted_values, p):
    if not sorted_values:
        return 0
    i = min(len(sorted_values) - 1, max(0, round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[i]


def shape(root):
    by_kind = defaultdict(lambda: [0, 0])  # kind -> [bytes, lines]
    sizes = []
    for d, _, names in os.walk(root):
        for n in names:
            if not n.endswith(".jsonl"):
                continue
            path = os.path.join(d, n)
            sizes.append(os.path.getsize(path))
            with open(path, "rb") as f:
                for line in f:
                    k = by_kind[kind_of(line)]
                    k[0] += len(line)
                    k[1] += 1
    total = sum(b for b, _ in by_kind.values())
    sizes.sort()
    return {
        "files": len(sizes),
        "bytes": total,
        "lines": sum(n for _, n in by_kind.values()),
        "kinds": {
            k: {"bytes": b, "share": b / total if total else 0.0, "lines": n, "avg_line": b / n}
            for k, (b, n) in sorted(by_kind.items(), key=lambda kv: -kv[1][0])
        },
        "file_median": percentile(sizes, 50),
        "file_p90": percentile(sizes, 90),
        "file_p99": percentile(sizes, 99),
        "file_max": sizes[-1] if sizes else 0,
        "files_8mb": sum(1 for s in sizes if s >= 8 << 20),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args()
    s = shape(a.dir)
    if a.json:
        json.dump(s, sys.stdout, indent=1)
        print()
        return
    mb = lambda b: "%.1f MB" % (b / 1e6)
    kb = lambda b: "%.1f KB" % (b / 1e3)
    print("%d files, %s, %d lines" % (s["files"], mb(s["bytes"]), s["lines"]))
    print("%-22s %7s %9s %10s" % ("kind", "bytes", "lines", "avg line"))
    for k, v in s["kinds"].items():
        print("%-22s %6.1f%% %9d %10s" % (k, 100 * v["share"], v["lines"], kb(v["avg_line"])))
    print("file size: median %s, p90 %s, p99 %s, largest %s; %d files >= 8 MB"
          % (kb(s["file_median"]), mb(s["file_p90"]), mb(s["file_p99"]), mb(s["file_max"]), s["files_8mb"]))


if __name__ == "__main__":
    main()

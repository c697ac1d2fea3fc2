"""Cut 5-hour windows from a pisa export, independently of pisa, and compare with `pisa blocks --json`.

usage: blocks_check.py EXPORT_DIR BLOCKS_JSON MANIFEST_JSON

The windows follow ccusage's identifySessionBlocks (src/_session-blocks.ts): calls in time order;
the first opens a window at its UTC hour; a call more than 5 h after the window's start or after
the call before it opens the next. The calls are the export's usage rows that are not inherited
(each billed call once). Their total cost must also equal the generator's own truth (the
manifest), which pisa never sees. Prints "blocks: ok (N windows)"; exits 1 on a disagreement.
"""

import json
import math
import sys
from pathlib import Path

import pyarrow.parquet as pq

export, blocks_doc, manifest = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text()), json.loads(Path(sys.argv[3]).read_text())
WINDOW = 5 * 3600 * 1000
HOUR = 3600 * 1000


def fail(what):
    print(f"blocks: {what}")
    sys.exit(1)


def model_key(origin, provider, model, response_model):
    if origin == "assistant":
        return f"{provider or '?'}/{response_model or model or '?'}"
    if origin == "usage":
        return f"{provider or '?'}/{model or '?'}"
    return "Tools/summaries"


rows = pq.read_table(export / "usage.parquet").to_pylist()
calls = [r for r in rows if not r["inherited"]]
truth = manifest["truth"]
# `truth` counts each answer a subagent's aggregate usage stands for; cost and tokens match.
tokens = sum(r["input"] + r["output"] + r["cache_read"] + r["cache_write"] for r in calls)
want_tokens = sum(truth[k] for k in ("input", "output", "cacheRead", "cacheWrite"))
if tokens != want_tokens or not math.isclose(sum(r["cost"] for r in calls), truth["cost"], rel_tol=1e-9):
    fail(f"the export's calls ({tokens} tokens) are not the generator's truth ({want_tokens})")
timed = sorted((r for r in calls if r["timestamp"] is not None), key=lambda r: r["timestamp"].timestamp())

windows = []
for r in timed:
    ms = round(r["timestamp"].timestamp() * 1000)
    w = windows[-1] if windows else None
    if w is None or ms - w["start"] > WINDOW or ms - w["last"] > WINDOW:
        w = {"start": ms // HOUR * HOUR, "first": ms, "calls": 0, "cost": 0.0, "tokens": 0, "models": []}
        windows.append(w)
    w["last"] = ms
    w["calls"] += 1
    w["cost"] += r["cost"]
    w["tokens"] += r["input"] + r["output"] + r["cache_read"] + r["cache_write"]
    key = model_key(r["origin"], r["provider"], r["model"], r["response_model"])
    if key not in w["models"]:
        w["models"].append(key)

now = blocks_doc["now"]
got = blocks_doc["blocks"]
if len(got) != len(windows):
    fail(f"{len(got)} windows, the independent cut has {len(windows)}")
iso = lambda ms: __import__("datetime").datetime.fromtimestamp(ms / 1000, __import__("datetime").timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
for i, (g, w) in enumerate(zip(got, windows)):
    want = {"start": iso(w["start"]), "end": iso(w["start"] + WINDOW), "firstCall": iso(w["first"]), "lastCall": iso(w["last"]), "calls": w["calls"], "totalTokens": w["tokens"]}
    for k, v in want.items():
        if g[k] != v:
            fail(f"window {i}: {k} is {g[k]!r}, want {v!r}")
    if not math.isclose(g["cost"], w["cost"], rel_tol=1e-9, abs_tol=1e-12):
        fail(f"window {i}: cost {g['cost']} want {w['cost']}")
    if sorted(g["models"]) != sorted(w["models"]):
        fail(f"window {i}: models {g['models']} want {w['models']}")
print(f"blocks: ok ({len(windows)} windows, {len(timed)} calls)")

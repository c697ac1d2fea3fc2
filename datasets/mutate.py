#!/usr/bin/env python3
"""Deterministic mutants of session files, for differential tests against the oracle.

    python3 datasets/mutate.py --seed S --count N --out DIR SOURCE_DIR [SOURCE_DIR ...]

Each mutant is a copy of a randomly chosen source file with one to four changes: a new
parent, type, role, edit target, first-kept entry or id taken from the file; a JSON value
deleted, replaced by a value of another type (null, 0, "", [], {}, a number, a string, true,
-3) or mutated deeper; a line deleted, duplicated, swapped or cut short; a byte replaced. Pi's reader and pisa must agree on every mutant. Mutants on which one of Pi's walks
never ends are dropped (parent links that loop above the leaf or a compaction, or entries
without ids that make getTree's children graph cyclic): the oracle would hang there. pisa's
own guards are tested elsewhere. Python standard library only.
"""
import argparse
import json
import os
import random
import shutil

REPLACEMENTS = [None, 0, "", [], {}, 1.5, "x", True, -3]


def mutate_value(rng, value):
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        r = rng.random()
        if r < 0.25:
            del value[key]
        elif r < 0.4:
            value[key] = rng.choice(REPLACEMENTS)
        else:
            mutate_value(rng, value[key])
    elif isinstance(value, list) and value:
        i = rng.randrange(len(value))
        r = rng.random()
        if r < 0.2:
            del value[i]
        elif r < 0.3:
            value[i] = None
        else:
            mutate_value(rng, value[i])


TYPES = ["message", "compaction", "branch_summary", "context_edit", "usage", "custom", "custom_message",
         "label", "session_info", "model_change", "thinking_level_change", "session", "other"]
ROLES = ["user", "assistant", "toolResult", "system", "custom", "bashExecution", "branchSummary",
         "compactionSummary", "hookMessage", "other"]


def rewire(rng, lines, i):
    """Structural changes: a new parent, type, role or edit target taken from the file."""
    try:
        value = json.loads(lines[i])
    except (ValueError, RecursionError):
        return
    if not isinstance(value, dict):
        return
    ids = []
    for line in lines:
        try:
            other = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(other, dict) and "id" in other:
            ids.append(other["id"])
    r = rng.random()
    if r < 0.35 and ids:
        value["parentId"] = rng.choice(ids + [None])
    elif r < 0.55:
        value["type"] = rng.choice(TYPES)
    elif r < 0.75 and isinstance(value.get("message"), dict):
        value["message"]["role"] = rng.choice(ROLES)
    elif r < 0.9 and ids:
        value[rng.choice(["targetId", "firstKeptEntryId", "id"])] = rng.choice(ids)
    else:
        value.pop(rng.choice(["id", "parentId", "timestamp"]), None)
    lines[i] = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "backslashreplace")


def mutate_lines(rng, lines):
    for _ in range(rng.randint(1, 4)):
        if len(lines) < 2:
            break
        i = rng.randrange(1, len(lines))
        r = rng.random()
        if r < 0.25:
            rewire(rng, lines, i)
        elif r < 0.5:
            try:
                value = json.loads(lines[i])
            except (ValueError, RecursionError):
                continue
            mutate_value(rng, value)
            # Lone surrogates cannot be written raw: escape them as JSON.stringify does.
            lines[i] = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "backslashreplace")
        elif r < 0.6:
            del lines[i]
        elif r < 0.7:
            lines.insert(i, lines[rng.randrange(1, len(lines))])
        elif r < 0.8:
            j = rng.randrange(1, len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif r < 0.9 and lines[i]:
            b = bytearray(lines[i])
            b[rng.randrange(len(b))] = rng.randrange(256)
            lines[i] = bytes(b)
        else:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]


UNDEFINED = object()


def walks_forever(lines):
    """Whether one of Pi's walks would never end on this file: the parent walk from the leaf
    or from a compaction (`getBranch`), or the child sort of `getTree`, which loops when
    entries without ids make the children graph cyclic."""
    entries = []
    for line in lines:
        try:
            value = json.loads(line.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            continue
        if value and not (isinstance(value, dict) and value.get("type") == "session"):
            entries.append(value)

    def key(e, field):
        if not isinstance(e, dict) or field not in e:
            return UNDEFINED
        v = e[field]
        if isinstance(v, (dict, list)):
            return ("unique", id(v))
        return json.dumps(v)

    by_id = {}
    for e in entries:
        by_id[key(e, "id")] = e
    starts = [e for e in entries if isinstance(e, dict) and e.get("type") == "compaction"]
    if entries and isinstance(entries[-1], dict):
        starts.append(entries[-1])
    for start in starts:
        seen = set()
        current = start
        while isinstance(current, dict):
            if id(current) in seen:
                return True
            seen.add(id(current))
            parent = current.get("parentId")
            if not parent or isinstance(parent, (dict, list)):
                break
            current = by_id.get(key(current, "parentId"))
    # getTree: one node per id (the last entry wins), edges parent -> child, then a walk
    # from the roots that sorts children; a cycle reachable from a root never ends.
    children = {}
    roots = []
    for e in entries:
        node, parent = key(e, "id"), key(e, "parentId")
        if parent == "null" or parent == node:
            roots.append(node)
        elif parent in by_id:
            children.setdefault(parent, []).append(node)
        else:
            roots.append(node)
    state = {}
    for root in roots:
        stack = [(root, iter(children.get(root, [])))]
        state[root] = "open"
        while stack:
            node, it = stack[-1]
            child = next(it, None)
            if child is None:
                state[node] = "done"
                stack.pop()
            elif state.get(child) == "open":
                return True
            elif child not in state:
                state[child] = "open"
                stack.append((child, iter(children.get(child, []))))
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("sources", nargs="+")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sources = sorted(
        os.path.join(root, name)
        for src in args.sources
        for root, _, names in os.walk(src)
        for name in names
        if name.endswith(".jsonl")
    )
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    written = 0
    for n in range(args.count):
        with open(rng.choice(sources), "rb") as f:
            lines = f.read().split(b"\n")
        mutate_lines(rng, lines)
        if walks_forever(lines):
            continue
        with open(os.path.join(args.out, f"m{n:04d}.jsonl"), "wb") as f:
            f.write(b"\n".join(lines))
        written += 1
    print(f"wrote {written} mutants to {args.out}")


if __name__ == "__main__":
    main()

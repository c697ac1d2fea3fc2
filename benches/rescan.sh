#!/usr/bin/env bash
# The incremental re-scan: how long `pisa sessions --json` takes after Pi appended one turn
# to 1 % of the files, against a run without the cache, and whether both print the same.
#
#   benches/rescan.sh CORPUS_DIR [RUNS=3] [PERCENT=1]
#
# Works on a copy of CORPUS_DIR (in $TMPDIR), never on the corpus itself. Steps:
#   1. `pisa --no-cache sessions --json COPY`, RUNS times (the uncached time);
#   2. one run that fills a fresh cache;
#   3. appends one assistant turn (a line Pi would write) to every 100/PERCENT-th file;
#   4. `pisa --cache-dir CACHE sessions --json COPY` once (the re-run that matters: the
#      grown files are parsed from their old end), then RUNS-1 more (nothing changed);
#   5. checks that the first cached re-run printed exactly what an uncached run prints.
# Prints a Markdown table of medians (wall and CPU seconds, max RSS) and the ratio.
set -euo pipefail
CORPUS=${1:?usage: rescan.sh CORPUS_DIR [RUNS] [PERCENT]}
RUNS=${2:-3}
PERCENT=${3:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PISA_BIN=${PISA_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/pisa}
[[ -x $PISA_BIN ]] || (cd "$ROOT" && cargo build --release >&2)
TIME=/usr/bin/time
[[ -x $TIME ]] || { echo "rescan.sh: needs GNU time (apt-get install time)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
log() { echo "rescan.sh: $*" >&2; }

log "copying $CORPUS"
cp -r "$CORPUS" "$WORK/corpus"
COPY=$WORK/corpus
# timed NAME ARGS...: one run; appends "name wall cpu rss_kb" to runs.tsv
timed() {
    local name=$1 rc=0
    shift
    "$TIME" -f '%e %U %S %M' -o "$WORK/time" "$PISA_BIN" "$@" >"$WORK/$name.out" 2>/dev/null || rc=$?
    [[ $rc -eq 0 || $rc -eq 2 ]] || { echo "rescan.sh: pisa $* exited $rc" >&2; exit 1; }
    read -r wall user sys rss < <(tail -n 1 "$WORK/time")
    echo "$name $wall $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') $rss" >>"$WORK/runs.tsv"
    log "  $name: wall $wall s, cpu $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') s, rss $rss KB"
}
: >"$WORK/runs.tsv"
for ((r = 1; r <= RUNS; r++)); do timed uncached --no-cache sessions --json "$COPY"; done
log "filling the cache"
"$PISA_BIN" --cache-dir "$WORK/cache" sessions --json "$COPY" >/dev/null 2>&1 || true

STEP=$((100 / PERCENT))
mapfile -t FILES < <(find "$COPY" -type f -name '*.jsonl' | sort | awk -v s="$STEP" 'NR % s == 0')
log "appending one turn to ${#FILES[@]} files"
for f in "${FILES[@]}"; do
    python3 - "$f" <<'EOF'
import json, sys
path = sys.argv[1]
last = None
with open(path, "rb") as fh:
    for line in fh:
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict) and isinstance(v.get("id"), str):
            last = v["id"]
turn = {"type": "message", "id": "rescan01", "parentId": last, "timestamp": "2026-07-01T10:00:00.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "appended"}],
                    "provider": "anthropic", "model": "claude-sonnet-4-5", "api": "anthropic-messages",
                    "stopReason": "stop", "timestamp": 1782900000000,
                    "usage": {"input": 11, "output": 7, "cacheRead": 1000, "cacheWrite": 3, "totalTokens": 1021,
                              "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0.3, "cacheWrite": 0.4, "total": 1.0}}}}
with open(path, "ab") as fh:
    fh.write(json.dumps(turn, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")
EOF
done
timed rescan --cache-dir "$WORK/cache" sessions --json "$COPY"
cp "$WORK/rescan.out" "$WORK/first-rescan.out"
for ((r = 2; r <= RUNS; r++)); do timed unchanged --cache-dir "$WORK/cache" sessions --json "$COPY"; done
"$PISA_BIN" --no-cache sessions --json "$COPY" >"$WORK/truth.out" 2>/dev/null || true
if cmp -s "$WORK/truth.out" "$WORK/first-rescan.out"; then SAME=yes; else SAME=NO; fi

median() { awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$WORK/runs.tsv" | sort -g |
    awk '{ a[NR] = $1 } END { if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
U=$(median uncached 2)
echo "## pisa re-scan after appending one turn to ${#FILES[@]} of $(find "$COPY" -type f -name '*.jsonl' | wc -l) files (${PERCENT} %)"
echo
echo "| run | wall s | CPU s | max RSS MiB | wall vs uncached |"
echo "|---|---:|---:|---:|---:|"
for n in uncached rescan unchanged; do
    w=$(median "$n" 2)
    [[ -n $w ]] || continue
    printf '| %s | %.3f | %.3f | %.1f | %s |\n' "$n" "$w" "$(median "$n" 3)" \
        "$(awk -v k="$(median "$n" 4)" 'BEGIN { print k / 1024 }')" \
        "$(awk -v a="$w" -v b="$U" 'BEGIN { printf "%.1f %%", 100 * a / b }')"
done
echo
echo "- uncached: \`pisa --no-cache sessions --json\` (median of $RUNS); rescan: the first cached run after the appends;"
echo "  unchanged: the cached runs after it (median of $((RUNS - 1)))"
echo "- output of the re-scan identical to an uncached run: **$SAME**"
[[ $SAME == yes ]]

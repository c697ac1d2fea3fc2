#!/usr/bin/env bash
# The incremental re-scan: how long `pisa sessions --json` takes after Pi appended one turn
# to 1 % of the files, against a run without the cache, and whether both print the same.
#
#   benches/rescan.sh CORPUS_DIR [RUNS=3] [PERCENT=1]
#
# Works on a copy of CORPUS_DIR (in $TMPDIR), never on the corpus itself. Steps:
#   1. `pisa --no-cache sessions --json COPY`, RUNS times (the uncached time);
#   2. one run that fills a fresh cache;
#   3. RUNS rounds of: append one assistant turn (a line Pi would write) to every
#      100/PERCENT-th file, then `pisa --cache-dir CACHE sessions --json COPY` (the re-run
#      that matters: the grown files are parsed from their old end), and check that it
#      printed exactly what an uncached run prints;
#   4. RUNS more cached runs with nothing changed.
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
SAME=yes
for ((r = 1; r <= RUNS; r++)); do
    log "round $r: appending one turn to ${#FILES[@]} files"
    for f in "${FILES[@]}"; do
        python3 - "$f" "$r" <<'EOF'
import json, sys
path, round_ = sys.argv[1], int(sys.argv[2])
last = None
with open(path, "rb") as fh:
    for line in fh:
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict) and isinstance(v.get("id"), str):
            last = v["id"]
turn = {"type": "message", "id": f"rescan{round_:02d}", "parentId": last, "timestamp": "2026-07-01T10:00:00.000Z",
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
    "$PISA_BIN" --no-cache sessions --json "$COPY" >"$WORK/truth.out" 2>/dev/null || true
    cmp -s "$WORK/truth.out" "$WORK/rescan.out" || SAME=NO
done
for ((r = 1; r <= RUNS; r++)); do timed unchanged --cache-dir "$WORK/cache" sessions --json "$COPY"; done

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
echo "- uncached: \`pisa --no-cache sessions --json\`; rescan: the cached run after each round of appends;"
echo "  unchanged: cached runs with nothing changed (medians of $RUNS each)"
echo "- output of every re-scan identical to an uncached run: **$SAME**"
[[ $SAME == yes ]]

#!/usr/bin/env bash
# Side-by-side benchmark: pisa (sessions, reports, export) vs. ccusage (pi session) vs. a
# `wc -l` floor.
#
#   benches/compare.sh CORPUS_DIR [RUNS=3]
#
# CORPUS_DIR is a Pi sessions root (the layout of ~/.pi/agent/sessions:
# <root>/--<encoded-cwd>--/<timestamp>_<uuid>.jsonl). Every tool is pointed at it:
#   wc -l    find CORPUS -type f -name '*.jsonl' -print0 | wc -l --files0-from=-
#   pisa     $PISA_BIN --no-cache sessions --json CORPUS         (every byte parsed)
#   pisa-cached  $PISA_BIN --cache-dir TMP sessions --json CORPUS (cache filled before round 1)
#   pisa-daily, pisa-monthly, pisa-model
#            $PISA_BIN --no-cache daily|monthly|model -z UTC CORPUS   (the table)
#   pisa-daily-cached, pisa-monthly-cached, pisa-model-cached
#            the same with --cache-dir TMP (each run once before round 1 to fill the cache)
#   pisa-export  $PISA_BIN --no-cache export --out TMP/export.N CORPUS  (Parquet, removed after)
#   ccusage  ccusage pi session --json --offline --no-color --pi-path CORPUS
#   duckdb   (only when python3 can `import duckdb`) sum of assistant message.usage
# Runs are interleaved (round 1: wc, pisa, ccusage[, duckdb]; round 2: ...) after one
# warm-up pass that reads the corpus into the page cache, each timed with GNU time
# (`/usr/bin/time -f '%e %U %S %M'`). A Markdown report goes to stdout, progress to stderr.
#
# Environment:
#   PISA_BIN          pisa binary (default: ${CARGO_TARGET_DIR:-<repo>/target}/release/pisa, built with
#                     `cargo build --release` when missing). Any program accepting the
#                     commands above works as a stand-in.
#   CCUSAGE_VERSION   ccusage version to install (default 20.0.24)
#   CCUSAGE_HOME      npm prefix for ccusage (default ${XDG_CACHE_HOME:-~/.cache}/pisa-bench/ccusage-$CCUSAGE_VERSION)
#   CCUSAGE_BIN       use this ccusage binary instead of installing one
#   TOOLS             tools to run, space separated (default: all of the above, in that order,
#                     ccusage and duckdb last; duckdb is skipped when the python package is absent)
#   KEEP_OUTPUT       directory: stdout/stderr of round 1 of each tool is kept there
#                     (default: stdout goes to /dev/null, stderr to a temp file)
set -euo pipefail

[[ ${BASH_VERSINFO[0]} -ge 5 ]] || { echo "compare.sh: needs bash >= 5 (for \$EPOCHREALTIME)" >&2; exit 1; }

usage() {
    echo "usage: $0 CORPUS_DIR [RUNS=3]" >&2
    exit 2
}
[[ $# -ge 1 && $# -le 2 ]] || usage
[[ -d $1 ]] || { echo "compare.sh: not a directory: $1" >&2; exit 2; }
CORPUS=$(cd "$1" && pwd -P)
RUNS=${2:-3}
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: RUNS must be a positive integer" >&2; exit 2; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
CCUSAGE_VERSION=${CCUSAGE_VERSION:-20.0.24}
CACHE=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/pisa-bench
CCUSAGE_HOME=${CCUSAGE_HOME:-$CACHE/ccusage-$CCUSAGE_VERSION}
REPORTS="pisa-daily pisa-daily-cached pisa-monthly pisa-monthly-cached pisa-model pisa-model-cached"
TOOLS=${TOOLS:-wc pisa pisa-cached $REPORTS pisa-export ccusage duckdb}
TIME=/usr/bin/time

log() { echo "compare.sh: $*" >&2; }
want() { [[ " $TOOLS " == *" $1 "* ]]; }
# Whether any pisa tool is wanted.
want_pisa() { [[ " $TOOLS " == *" pisa"* ]]; }
# Whether a tool runs through the warm cache.
cached() { [[ $1 == pisa-cached || $1 == pisa-*-cached ]]; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pisa-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# --- GNU time --------------------------------------------------------------------------
if ! [[ -x $TIME ]] || ! "$TIME" -f '%e' true >/dev/null 2>&1; then
    echo "compare.sh: needs GNU time at $TIME (Debian/Ubuntu: apt-get install time; it measures peak memory)" >&2
    exit 1
fi
if want ccusage && [[ -z ${CCUSAGE_BIN:-} ]] && ! command -v npm >/dev/null 2>&1; then
    echo "compare.sh: needs npm (Node.js >= 20) to install ccusage; or set CCUSAGE_BIN, or leave ccusage out of TOOLS" >&2
    exit 1
fi

# --- ccusage (npm package with a native binary) ------------------------------------------
if want ccusage; then
    if [[ -z ${CCUSAGE_BIN:-} ]]; then
        case "$(uname -s)-$(uname -m)" in
            Linux-x86_64) NATIVE=@ccusage/ccusage-linux-x64 ;;
            Linux-aarch64 | Linux-arm64) NATIVE=@ccusage/ccusage-linux-arm64 ;;
            Darwin-arm64) NATIVE=@ccusage/ccusage-darwin-arm64 ;;
            Darwin-x86_64) NATIVE=@ccusage/ccusage-darwin-x64 ;;
            *) echo "compare.sh: no native ccusage package for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
        esac
        CCUSAGE_BIN=$CCUSAGE_HOME/node_modules/$NATIVE/bin/ccusage
        if ! [[ -f $CCUSAGE_BIN ]] || [[ "$(chmod +x "$CCUSAGE_BIN" && "$CCUSAGE_BIN" --version 2>/dev/null)" != "ccusage $CCUSAGE_VERSION" ]]; then
            log "installing ccusage $CCUSAGE_VERSION into $CCUSAGE_HOME"
            mkdir -p "$CCUSAGE_HOME"
            npm install --prefix "$CCUSAGE_HOME" --no-audit --no-fund --loglevel=error \
                "ccusage@$CCUSAGE_VERSION" "$NATIVE@$CCUSAGE_VERSION" >&2
        fi
        chmod +x "$CCUSAGE_BIN"   # npm does not keep the exec bit of the native binary
    fi
    [[ -x $CCUSAGE_BIN ]] || { echo "compare.sh: ccusage binary not executable: $CCUSAGE_BIN" >&2; exit 1; }
    # ccusage looks for config files under $HOME and the cwd: run it with an empty HOME
    # and cwd so that only --pi-path decides what it reads.
    CC_HOME=$WORK/ccusage-home
    mkdir -p "$CC_HOME"
fi

# --- pisa ----------------------------------------------------------------------------
if want_pisa; then
    if [[ -z ${PISA_BIN:-} ]]; then
        PISA_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/pisa
        if ! [[ -x $PISA_BIN ]]; then
            [[ -f $ROOT/Cargo.toml ]] || { echo "compare.sh: no $ROOT/Cargo.toml; set PISA_BIN or TOOLS" >&2; exit 1; }
            log "building pisa (cargo build --release)"
            (cd "$ROOT" && cargo build --release >&2)
        fi
    fi
    [[ -x $PISA_BIN ]] || { echo "compare.sh: pisa binary not executable: $PISA_BIN" >&2; exit 1; }
fi

# --- duckdb (optional, never installed here) -----------------------------------------
if want duckdb; then
    if python3 -c 'import duckdb' >/dev/null 2>&1; then
        cat >"$WORK/duck.py" <<'EOF'
import os, sys, duckdb
con = duckdb.connect()
con.execute("SET threads TO %d" % (os.cpu_count() or 1))
print(con.execute("""
SELECT count(*) AS assistant_messages,
  sum(CAST(json_extract(message, '$.usage.input') AS BIGINT)) AS input,
  sum(CAST(json_extract(message, '$.usage.output') AS BIGINT)) AS output,
  sum(CAST(json_extract(message, '$.usage.cacheRead') AS BIGINT)) AS cache_read,
  sum(CAST(json_extract(message, '$.usage.cacheWrite') AS BIGINT)) AS cache_write,
  sum(CAST(json_extract(message, '$.usage.cost.total') AS DOUBLE)) AS cost
FROM read_ndjson(?, columns = {type: 'VARCHAR', message: 'JSON'},
                 ignore_errors = true, maximum_object_size = 1073741824)
WHERE type = 'message' AND json_extract_string(message, '$.role') = 'assistant'
""", [sys.argv[1].rstrip('/') + '/**/*.jsonl']).fetchall())
EOF
        DUCKDB_VERSION=$(python3 -c 'import duckdb; print(duckdb.__version__)')
    else
        log "python3 cannot import duckdb: skipping the duckdb line"
        TOOLS=${TOOLS//duckdb/}
    fi
fi

# --- corpus ------------------------------------------------------------------------------
read -r FILES BYTES < <(find "$CORPUS" -type f -name '*.jsonl' -printf '%s\n' |
    awk '{ n++; s += $1 } END { printf "%d %.0f\n", n, s }')
[[ $FILES -gt 0 ]] || { echo "compare.sh: no *.jsonl files under $CORPUS" >&2; exit 1; }
MB=$(awk -v b="$BYTES" 'BEGIN { printf "%.1f", b / 1e6 }')
AVAIL_KB=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo 2>/dev/null || echo 0)
if [[ ${AVAIL_KB:-0} -gt 0 && $((BYTES / 1024)) -gt $((AVAIL_KB * 8 / 10)) ]]; then
    log "warning: corpus ($MB MB) may not fit in the page cache (MemAvailable ${AVAIL_KB} kB)"
fi

log "warming the page cache: $FILES files, $MB MB"
find "$CORPUS" -type f -name '*.jsonl' -print0 | xargs -0 cat >/dev/null
# pisa's commands behind the tool names: pisa_args TOOL ROUND prints one argument a line.
pisa_args() {
    local tool=$1 round=$2 cache=(--no-cache)
    cached "$tool" && cache=(--cache-dir "$WORK/pisa-cache")
    case $tool in
        pisa | pisa-cached) printf '%s\n' "${cache[@]}" sessions --json "$CORPUS" ;;
        pisa-daily* | pisa-monthly* | pisa-model*)
            local cmd=${tool#pisa-}
            printf '%s\n' "${cache[@]}" "${cmd%-cached}" -z UTC "$CORPUS"
            ;;
        pisa-export) printf '%s\n' --no-cache export --out "$WORK/export.$round" "$CORPUS" ;;
    esac
}
# One pisa run through the cache per cached tool, before round 1: each command finds in the
# cache what it needs, as on a user's second run.
for t in $TOOLS; do
    if cached "$t"; then
        log "filling pisa's cache in $WORK/pisa-cache ($t)"
        mapfile -t ARGS < <(pisa_args "$t" 0)
        "$PISA_BIN" "${ARGS[@]}" >/dev/null 2>&1 || true
    fi
done

# --- runs ---------------------------------------------------------------------------------
# run TOOL ROUND: one timed run; appends "tool round wall user sys maxrss_kb" to runs.tsv
run() {
    local tool=$1 round=$2 out=/dev/null err=$WORK/$1.$2.err rc=0 t0 t1
    if [[ -n ${KEEP_OUTPUT:-} && $round -eq 1 ]]; then
        mkdir -p "$KEEP_OUTPUT"
        out=$KEEP_OUTPUT/$tool.out
        err=$KEEP_OUTPUT/$tool.err
    fi
    t0=$EPOCHREALTIME
    case $tool in
        wc)
            # wc reads each file itself (one process, every byte read once, no pipe copy);
            # its last output line is the total line count.
            out=$WORK/wc.out
            # shellcheck disable=SC2016 # $1 is expanded by the inner bash
            "$TIME" -f '%e %U %S %M' -o "$WORK/time" bash -c \
                'find "$1" -type f -name "*.jsonl" -print0 | wc -l --files0-from=-' _ "$CORPUS" \
                >"$out" 2>"$err" || rc=$?
            ;;
        pisa*)
            # Exit status 2 means "some files were rejected or damaged" (a generated corpus
            # has some on purpose): the run itself succeeded.
            local args
            mapfile -t args < <(pisa_args "$tool" "$round")
            "$TIME" -f '%e %U %S %M' -o "$WORK/time" "$PISA_BIN" "${args[@]}" \
                >"$out" 2>"$err" || rc=$?
            [[ $rc -eq 2 ]] && rc=0
            # The export's Parquet files: kept with KEEP_OUTPUT (round 1), else removed.
            if [[ $tool == pisa-export ]]; then
                if [[ -n ${KEEP_OUTPUT:-} && $round -eq 1 ]]; then
                    rm -rf "$KEEP_OUTPUT/export" && mv "$WORK/export.$round" "$KEEP_OUTPUT/export"
                else
                    rm -rf "$WORK/export.$round"
                fi
            fi
            ;;
        ccusage)
            (cd "$CC_HOME" && env -u PI_AGENT_DIR HOME="$CC_HOME" XDG_CONFIG_HOME="$CC_HOME/.config" \
                "$TIME" -f '%e %U %S %M' -o "$WORK/time" \
                "$CCUSAGE_BIN" pi session --json --offline --no-color --pi-path "$CORPUS") \
                >"$out" 2>"$err" || rc=$?
            ;;
        duckdb)
            "$TIME" -f '%e %U %S %M' -o "$WORK/time" python3 "$WORK/duck.py" "$CORPUS" \
                >"$out" 2>"$err" || rc=$?
            ;;
    esac
    t1=$EPOCHREALTIME
    if [[ $rc -ne 0 ]]; then
        log "$tool (round $round) exited with status $rc; stderr:"
        head -n 20 "$err" >&2
        echo "$tool" >>"$WORK/failed"
    fi
    [[ -s $err ]] && echo "$tool" >>"$WORK/stderr-tools"
    # GNU time adds "Command exited with non-zero status N" before the numbers. Its %e has
    # 10 ms resolution, so the wall time used in the report is taken with $EPOCHREALTIME
    # around the GNU time call (µs resolution; includes ~1 ms of fork/exec of time itself).
    local line
    line="$tool $round $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }') $(tail -n 1 "$WORK/time")"
    echo "$line" >>"$WORK/runs.tsv"
    log "  $line  (wall s, GNU time: wall user sys maxrss_kb)"
}

read -r -a TOOL_LIST <<<"$TOOLS"
: >"$WORK/runs.tsv"
for ((r = 1; r <= RUNS; r++)); do
    log "round $r/$RUNS"
    for t in "${TOOL_LIST[@]}"; do run "$t" "$r"; done
done
LINES=$(tail -n 1 "$WORK/wc.out" 2>/dev/null | awk '{ print $1 }' || true)

# --- report -------------------------------------------------------------------------------
median() { # median for tool $1 of: wall | cpu | rss
    awk -v t="$1" -v c="$2" '$1 == t { print (c == "wall") ? $3 : (c == "cpu") ? $5 + $6 : $7 }' "$WORK/runs.tsv" |
        sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) exit; if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
declare -A WALL CPU RSS
for t in "${TOOL_LIST[@]}"; do
    WALL[$t]=$(median "$t" wall)
    CPU[$t]=$(median "$t" cpu)
    RSS[$t]=$(median "$t" rss)
done
ratio() { # ratio WALL_A WALL_B
    if [[ -z ${2:-} ]]; then echo "n/a"; else awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f×", a / b; else print "n/a" }'; fi
}
label() {
    case $1 in
        wc) echo 'wc -l' ;;
        pisa) echo "pisa (no cache)" ;;
        pisa-cached) echo "pisa (cache warm)" ;;
        pisa-export) echo "pisa export (no cache)" ;;
        pisa-*-cached) t=${1#pisa-}; echo "pisa ${t%-cached} (cache warm)" ;;
        pisa-*) echo "pisa ${1#pisa-} (no cache)" ;;
        ccusage) echo "ccusage $CCUSAGE_VERSION" ;;
        duckdb) echo "duckdb ${DUCKDB_VERSION:-} (python)" ;;
    esac
}

echo "## pisa vs. ccusage: \`$CORPUS\`"
echo
echo "- corpus: $FILES files, $MB MB (10^6 bytes)${LINES:+, $LINES lines}; page cache warm; $RUNS interleaved round(s); medians"
echo "- machine: $(nproc) CPU(s), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || uname -m), $(uname -sr)"
want pisa && echo "- pisa: \`$PISA_BIN --no-cache sessions --json $CORPUS\`"
want pisa-cached && echo "- pisa (cache warm): \`$PISA_BIN --cache-dir TMP sessions --json $CORPUS\`, the cache filled before round 1"
for t in $REPORTS; do
    if want "$t"; then
        echo "- pisa reports: \`$PISA_BIN --no-cache daily|monthly|model -z UTC $CORPUS\` (the table), and each with \`--cache-dir TMP\` (the cache filled by one run of each before round 1)"
        break
    fi
done
want pisa-export && echo "- pisa export: \`$PISA_BIN --no-cache export --out TMP/export.N $CORPUS\` (Parquet; the folder removed after each run)"
want ccusage && echo "- ccusage: \`$CCUSAGE_BIN pi session --json --offline --no-color --pi-path $CORPUS\`"
echo
echo "| tool | median wall s | median CPU s (user+sys) | median max RSS MiB | MB/s | wall vs \`wc -l\` | wall vs ccusage | wall vs pisa (no cache) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for t in "${TOOL_LIST[@]}"; do
    name=$(label "$t")
    grep -qx "$t" "$WORK/failed" 2>/dev/null && name="$name (FAILED)"
    printf '| %s | %.3f | %.3f | %.1f | %s | %s | %s | %s |\n' "$name" "${WALL[$t]}" "${CPU[$t]}" \
        "$(awk -v k="${RSS[$t]}" 'BEGIN { print k / 1024 }')" \
        "$(awk -v b="$BYTES" -v w="${WALL[$t]}" 'BEGIN { if (w > 0) printf "%.0f", b / 1e6 / w; else print "∞" }')" \
        "$(ratio "${WALL[$t]}" "${WALL[wc]:-}")" "$(ratio "${WALL[$t]}" "${WALL[ccusage]:-}")" \
        "$(ratio "${WALL[$t]}" "${WALL[pisa]:-}")"
done
echo
echo "<details><summary>all runs (tool, round, wall s, GNU time: wall s, user s, sys s, max RSS KB)</summary>"
echo
echo '```'
column -t "$WORK/runs.tsv" 2>/dev/null || cat "$WORK/runs.tsv"
echo '```'
echo "</details>"
if [[ -s $WORK/failed ]]; then
    echo
    echo "**failed runs:** $(sort "$WORK/failed" | uniq -c | awk '{ printf "%s%s×%s", sep, $2, $1; sep = ", " }')"
fi
if [[ -s $WORK/stderr-tools ]]; then
    echo
    echo "note: wrote to stderr: $(sort -u "$WORK/stderr-tools" | paste -sd, -)"
fi
[[ ! -s $WORK/failed ]]

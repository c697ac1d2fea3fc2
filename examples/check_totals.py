"""Check that DuckDB and Spark, reading partitioned exports, say what `pisa monthly` says.

usage: check_totals.py REPORT_JSON EXPORT_DIR [EXPORT_DIR ...]

REPORT_JSON is `pisa monthly --json -z UTC` over a corpus; each EXPORT_DIR a partitioned export
of that same corpus (`pisa export --partition month --source NAME`), each under its own source.
Runs examples/duckdb_totals.sql and examples/spark_totals.py (one local Spark session for all)
over each export alone, then over all of them laid out as a shared bucket
(usage/export=NAME/month=YYYY-MM/part-0.parquet) and read as one table. Every (source, month)
must carry the report's input, output, cacheWrite, cacheRead, totalTokens and requests exactly,
and its cost to 1e-9 relative. Prints "<engine> <what>: ok" per read, exits 1 on the first
difference, 3 when a Python package is missing.
"""

import json
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

try:
    import duckdb
    import spark_totals
except ImportError as e:
    print(f"{e}: pip install -r notebooks/requirements.txt", file=sys.stderr)
    sys.exit(3)

# Report key → result column; tokens and requests must be equal, cost close.
EXACT = {"input": "input", "output": "output", "cacheWrite": "cache_write", "cacheRead": "cache_read",
         "totalTokens": "total_tokens", "requests": "requests"}


def expected(report):
    """Month → the report's figures. Months with compactions but no billed call have no
    usage rows to read back; they must be all zero."""
    months = {}
    for row in report["rows"]:
        month = "unknown" if row["key"] == "(none)" else row["key"]
        if row["requests"] == 0:
            zero = all(row[k] == 0 for k in EXACT) and row["cost"] == 0
            assert zero, f"month {month}: no billed call but non-zero figures {row}"
            continue
        months[month] = row
    return months


def compare(engine, what, rows, sources, want):
    """rows: dicts with source, month and the result columns."""
    got = {}
    for r in rows:
        got.setdefault(r["source"], {})[r["month"]] = r
    if sorted(got) != sorted(sources):
        fail(engine, what, f"sources {sorted(got)}, expected {sorted(sources)}")
    for source in sources:
        if sorted(got[source]) != sorted(want):
            fail(engine, what, f"{source}: months {sorted(got[source])}, the report has {sorted(want)}")
        for month, w in want.items():
            g = got[source][month]
            for key, col in EXACT.items():
                if g[col] != w[key]:
                    fail(engine, what, f"{source} {month} {key}: {g[col]!r}, the report says {w[key]!r}")
            if not math.isclose(g["cost"], w["cost"], rel_tol=1e-9, abs_tol=0.0):
                fail(engine, what, f"{source} {month} cost: {g['cost']!r}, the report says {w['cost']!r}")
    print(f"{engine} {what}: ok ({len(sources)} source(s) × {len(want)} months)")


def fail(engine, what, message):
    print(f"{engine} {what}: {message}")
    sys.exit(1)


def with_duckdb(glob):
    con = duckdb.connect()
    con.execute("SET VARIABLE usage = ?", [glob])
    cur = con.execute((HERE / "duckdb_totals.sql").read_text())
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def source_of(export):
    return duckdb.sql(f"SELECT DISTINCT source FROM read_parquet('{export}/usage/*/*.parquet')").fetchall()


def main():
    report = json.loads(Path(sys.argv[1]).read_text())
    exports = [Path(p) for p in sys.argv[2:]]
    want = expected(report)
    sources = []
    for e in exports:
        names = source_of(e)
        if len(names) != 1:
            fail("duckdb", str(e), f"one source per export expected, found {names}")
        sources.append(names[0][0])
    if len(set(sources)) != len(sources):
        fail("setup", "sources", f"each export needs its own --source, got {sources}")

    with tempfile.TemporaryDirectory() as tmp:
        # A shared bucket as a team would lay it out: one folder per export under usage/.
        bucket = Path(tmp) / "usage"
        for e, s in zip(exports, sources):
            shutil.copytree(e / "usage", bucket / f"export={s}")

        t = time.monotonic()
        for e, s in zip(exports, sources):
            compare("duckdb", f"export {s}", with_duckdb(f"{e}/usage/*/*.parquet"), [s], want)
        compare("duckdb", "bucket", with_duckdb(f"{bucket}/*/*/*.parquet"), sources, want)
        print(f"duckdb: {time.monotonic() - t:.1f} s")

        t = time.monotonic()
        try:
            spark = spark_totals.session("local[2]")
        except Exception as e:  # py4j's errors when the JVM does not start
            fail("spark", "session", f"could not start Spark (it needs Java 17 or later on the PATH or in JAVA_HOME): {e}")
        print(f"spark: session started in {time.monotonic() - t:.1f} s")
        try:
            for e, s in zip(exports, sources):
                rows = [r.asDict() for r in spark_totals.monthly_totals(spark, str(e / "usage")).collect()]
                compare("spark", f"export {s}", rows, [s], want)
            rows = [r.asDict() for r in spark_totals.monthly_totals(spark, str(bucket)).collect()]
            compare("spark", "bucket", rows, sources, want)
        finally:
            spark.stop()
        print(f"spark: {time.monotonic() - t:.1f} s")


main()

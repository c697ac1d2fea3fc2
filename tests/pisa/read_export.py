"""Read a pisa export with duckdb, polars and pyarrow; check rows, sums and types.

usage: read_export.py FLAT_DIR PARTITIONED_DIR EXPECTED_JSON
EXPECTED_JSON: {"n": rows of usage, "cost": sum of cost, "tokens": sum of the four token
columns, "own_cost": sum of cost over rows that are not inherited}, as pisa's own SQL says.
Prints "<reader>: ok" per reader; exits 1 on the first disagreement.
"""

import json
import math
import sys
from pathlib import Path

flat, parts, expected = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
TABLES = ["usage", "sessions", "compactions", "files"]


def check(reader, what, got, want):
    ok = math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12) if isinstance(want, float) else got == want
    if not ok:
        print(f"{reader}: {what}: got {got!r}, want {want!r}")
        sys.exit(1)


def check_sums(reader, n, cost, tokens, own_cost, label):
    check(reader, f"{label} rows", n, expected["n"])
    check(reader, f"{label} cost", float(cost), float(expected["cost"]))
    check(reader, f"{label} tokens", float(tokens), float(expected["tokens"]))
    check(reader, f"{label} own cost", float(own_cost), float(expected["own_cost"]))


def with_duckdb():
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    sums = """SELECT count(*), sum(cost), sum(input + output + cache_read + cache_write),
              sum(CASE WHEN inherited THEN 0 ELSE cost END) FROM {}"""
    check_sums("duckdb", *con.execute(sums.format(f"'{flat / 'usage.parquet'}'")).fetchone(), "flat")
    hive = f"read_parquet('{parts / 'usage' / '*' / '*.parquet'}', hive_partitioning = true)"
    check_sums("duckdb", *con.execute(sums.format(hive)).fetchone(), "partitioned")
    bad = con.execute(f"SELECT count(*) FROM {hive} WHERE month <> strftime(timestamp, '%Y-%m')").fetchone()[0]
    check("duckdb", "rows outside their month partition", bad, 0)
    types = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM '{flat / 'usage.parquet'}')").fetchall())
    check("duckdb", "usage.timestamp type", types["timestamp"], "TIMESTAMP WITH TIME ZONE")
    check("duckdb", "usage.input type", types["input"], "DOUBLE")
    check("duckdb", "usage.inherited type", types["inherited"], "BOOLEAN")
    stypes = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM '{flat / 'sessions.parquet'}')").fetchall())
    check("duckdb", "sessions.last_activity_at type", stypes["last_activity_at"], "TIMESTAMP WITH TIME ZONE")
    for t in TABLES:
        n = con.execute(f"SELECT count(*) FROM '{flat / (t + '.parquet')}'").fetchone()[0]
        check("duckdb", f"{t} is not empty", n > 0, True)
    print("duckdb: ok")


def with_polars():
    import polars as pl

    df = pl.read_parquet(flat / "usage.parquet")
    check("polars", "usage.timestamp dtype", df.schema["timestamp"], pl.Datetime("ms", "UTC"))
    check("polars", "usage.entry_index dtype", df.schema["entry_index"], pl.UInt32)

    def sums(frame):
        tokens = frame.select((pl.col("input") + pl.col("output") + pl.col("cache_read") + pl.col("cache_write")).sum()).item()
        own = frame.filter(~pl.col("inherited"))["cost"].sum()
        return frame.height, frame["cost"].sum(), tokens, own

    check_sums("polars", *sums(df), "flat")
    hive = pl.scan_parquet(parts / "usage" / "**" / "*.parquet", hive_partitioning=True).collect()
    check_sums("polars", *sums(hive), "partitioned")
    check("polars", "partition column", "month" in hive.columns, True)
    comp = pl.scan_parquet(parts / "compactions" / "**" / "*.parquet", hive_partitioning=True).collect()
    check("polars", "compaction rows", comp.height, pl.read_parquet(flat / "compactions.parquet").height)
    print("polars: ok")


def with_pyarrow():
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    t = pq.read_table(flat / "usage.parquet")
    check("pyarrow", "usage.timestamp type", t.schema.field("timestamp").type, pa.timestamp("ms", tz="UTC"))

    def sums(table):
        tokens = sum(pc.sum(table[c]).as_py() or 0 for c in ["input", "output", "cache_read", "cache_write"])
        own = pc.sum(pc.if_else(table["inherited"], 0.0, table["cost"])).as_py()
        return table.num_rows, pc.sum(table["cost"]).as_py(), tokens, own

    check_sums("pyarrow", *sums(t), "flat")
    hive = ds.dataset(parts / "usage", format="parquet", partitioning="hive").to_table()
    check_sums("pyarrow", *sums(hive), "partitioned")
    for name in TABLES:
        check("pyarrow", f"{name} readable", pq.read_table(flat / f"{name}.parquet").num_rows > 0, True)
    print("pyarrow: ok")


with_duckdb()
with_polars()
with_pyarrow()

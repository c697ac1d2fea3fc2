"""Tokens and cost per month from a partitioned pisa export, or a bucket of many, with PySpark.

usage: spark_totals.py USAGE_PATH [--master MASTER]

USAGE_PATH is an export's usage folder (`pisa export --out DIR --partition month` writes
DIR/usage/month=YYYY-MM/part-0.parquet) or a shared bucket's (s3a://team-bucket/pisa/usage, with
export=NAME/month=YYYY-MM/ below it). Each billed call is counted once (fork copies, `inherited`,
left out), so each (source, month) row carries the figures of `pisa monthly --json -z UTC`:
input, output, cache write, cache read, total tokens, cost and requests. Prints one JSON object
per row. Runs in local mode by default (`local[*]`); needs Java 17 or later.
"""

import argparse
import json

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def session(master: str = "local[*]") -> SparkSession:
    """A Spark session that keeps partition values as written (month stays '2026-05')."""
    spark = (
        SparkSession.builder.master(master)
        .appName("pisa-monthly-totals")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def monthly_totals(spark: SparkSession, usage_path: str) -> DataFrame:
    """Per source and month: the token columns, their sum, cost and billed calls."""
    usage = spark.read.parquet(usage_path)
    tokens = F.col("input") + F.col("output") + F.col("cache_write") + F.col("cache_read")
    return (
        usage.where(~F.col("inherited"))
        .groupBy("source", "month")
        .agg(
            F.sum("input").alias("input"),
            F.sum("output").alias("output"),
            F.sum("cache_write").alias("cache_write"),
            F.sum("cache_read").alias("cache_read"),
            F.sum(tokens).alias("total_tokens"),
            F.sum("cost").alias("cost"),
            F.count(F.lit(1)).alias("requests"),
        )
        .orderBy("source", "month")
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("usage_path")
    p.add_argument("--master", default="local[*]")
    a = p.parse_args()
    spark = session(a.master)
    try:
        for row in monthly_totals(spark, a.usage_path).collect():
            print(json.dumps(row.asDict()))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()

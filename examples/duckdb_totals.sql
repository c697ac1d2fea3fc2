-- Tokens and cost per month from a partitioned pisa export, or from a bucket holding many,
-- each billed call counted once (fork copies, `inherited`, left out): per source, the figures
-- of `pisa monthly --json -z UTC` (input, output, cacheWrite, cacheRead, totalTokens, cost,
-- requests).
--
-- One export (pisa export --out pisa-export --partition month):
--   cd pisa-export && duckdb < ../examples/duckdb_totals.sql
-- Any other place, a shared bucket included (see "Notebooks and scale-out" in the README):
--   duckdb -cmd "SET VARIABLE usage = 's3://team-bucket/pisa/usage/*/*/*.parquet'" < examples/duckdb_totals.sql
--
-- Months are UTC, from the partition folders; `unknown` holds calls without a time, which the
-- report keys `(none)`.
SELECT
    source,
    month,
    sum(input) AS input,
    sum(output) AS output,
    sum(cache_write) AS cache_write,
    sum(cache_read) AS cache_read,
    sum(input + output + cache_write + cache_read) AS total_tokens,
    sum(cost) AS cost,
    count(*) AS requests
FROM read_parquet(
    coalesce(getvariable('usage'), 'usage/*/*.parquet'),
    hive_partitioning = true,
    hive_types = {'month': VARCHAR}
)
WHERE NOT inherited
GROUP BY source, month
ORDER BY source, month;

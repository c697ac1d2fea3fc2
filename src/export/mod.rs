//! Writing frames to disk: Parquet (zstd, full statistics), CSV or NDJSON, each file
//! written beside its destination under a temporary name and renamed into place, so a
//! reader never sees half a file. `--partition month` writes a hive-partitioned dataset.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde_json::{Map, Value};

use crate::frame::Frames;

/// Output file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Parquet,
    Csv,
    Ndjson,
}

impl Format {
    fn extension(self) -> &'static str {
        match self {
            Format::Parquet => "parquet",
            Format::Csv => "csv",
            Format::Ndjson => "ndjson",
        }
    }
}

/// How the time-stamped frames (`usage`, `compactions`) are split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partition {
    /// One file per frame.
    None,
    /// `usage/month=YYYY-MM/part-0.parquet` (UTC months; rows without a time under `month=unknown`).
    Month,
}

/// Errors of an export, with the file concerned.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("cannot write {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("cannot encode {path}: {source}")]
    Polars { path: PathBuf, source: PolarsError },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ExportError + '_ {
    move |source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Write `df` to `path` in `format`, through a temporary file in the same folder.
pub fn write_file(df: &mut DataFrame, path: &Path, format: Format) -> Result<(), ExportError> {
    let tmp = temp_name(path);
    let result = (|| {
        let file = File::create(&tmp).map_err(io(&tmp))?;
        let mut w = BufWriter::new(file);
        encode(df, &mut w, format).map_err(|source| ExportError::Polars {
            path: path.to_path_buf(),
            source,
        })?;
        let file = w.into_inner().map_err(|e| io(&tmp)(e.into_error()))?;
        file.sync_all().map_err(io(&tmp))?;
        fs::rename(&tmp, path).map_err(io(path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn temp_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Encode a frame into a writer.
pub fn encode(df: &mut DataFrame, w: &mut impl Write, format: Format) -> PolarsResult<()> {
    match format {
        Format::Parquet => {
            ParquetWriter::new(w)
                .with_compression(ParquetCompression::Zstd(None))
                .with_statistics(StatisticsOptions::full())
                .finish(df)?;
        }
        Format::Csv => CsvWriter::new(w).include_header(true).finish(df)?,
        Format::Ndjson => {
            for i in 0..df.height() {
                serde_json::to_writer(&mut *w, &row_json(df, i)?).map_err(|e| PolarsError::IO {
                    error: std::sync::Arc::new(e.into()),
                    msg: None,
                })?;
                w.write_all(b"\n")?;
            }
        }
    }
    Ok(())
}

/// Row `i` of a frame as a JSON object (column order kept; times as ISO 8601 UTC).
pub fn row_json(df: &DataFrame, i: usize) -> PolarsResult<Value> {
    let mut m = Map::new();
    for c in df.columns() {
        m.insert(c.name().to_string(), any_json(&c.get(i)?));
    }
    Ok(Value::Object(m))
}

/// One cell as JSON.
pub fn any_json(v: &AnyValue<'_>) -> Value {
    match v {
        AnyValue::Null => Value::Null,
        AnyValue::Boolean(b) => Value::Bool(*b),
        AnyValue::String(s) => Value::String((*s).to_string()),
        AnyValue::StringOwned(s) => Value::String(s.to_string()),
        AnyValue::UInt8(x) => (*x).into(),
        AnyValue::UInt16(x) => (*x).into(),
        AnyValue::UInt32(x) => (*x).into(),
        AnyValue::UInt64(x) => (*x).into(),
        AnyValue::Int8(x) => (*x).into(),
        AnyValue::Int16(x) => (*x).into(),
        AnyValue::Int32(x) => (*x).into(),
        AnyValue::Int64(x) => (*x).into(),
        AnyValue::Float32(x) => crate::js::num_json(f64::from(*x)),
        AnyValue::Float64(x) => crate::js::num_json(*x),
        AnyValue::Datetime(ms, TimeUnit::Milliseconds, _) | AnyValue::DatetimeOwned(ms, TimeUnit::Milliseconds, _) => {
            crate::analyze::facts::iso_ms(*ms as f64).map_or(Value::Null, Value::String)
        }
        other => Value::String(other.to_string()),
    }
}

/// The paths written by [`export`].
#[derive(Debug, Default)]
pub struct Written {
    pub files: Vec<(PathBuf, usize)>,
}

/// Write the four frames into `dir`.
pub fn export(frames: &Frames, dir: &Path, format: Format, partition: Partition) -> Result<Written, ExportError> {
    fs::create_dir_all(dir).map_err(io(dir))?;
    let mut written = Written::default();
    for (name, df) in frames.named() {
        let partitioned = partition == Partition::Month && matches!(name, "usage" | "compactions");
        if partitioned {
            let target = dir.join(name);
            for (path, rows) in write_partitioned(df, &target, format)? {
                written.files.push((path, rows));
            }
        } else {
            let path = dir.join(format!("{name}.{}", format.extension()));
            let mut df = df.clone();
            write_file(&mut df, &path, format)?;
            written.files.push((path, df.height()));
        }
    }
    Ok(written)
}

/// `target/month=YYYY-MM/part-0.<ext>`, built in a temporary folder that replaces `target`.
fn write_partitioned(df: &DataFrame, target: &Path, format: Format) -> Result<Vec<(PathBuf, usize)>, ExportError> {
    let polars = |source| ExportError::Polars {
        path: target.to_path_buf(),
        source,
    };
    let months: Vec<String> = df
        .column("timestamp")
        .map_err(polars)?
        .as_materialized_series()
        .iter()
        .map(|v| match v {
            AnyValue::Datetime(ms, _, _) => jiff::Timestamp::from_millisecond(ms)
                .map(|t| t.strftime("%Y-%m").to_string())
                .unwrap_or_else(|_| "unknown".into()),
            _ => "unknown".into(),
        })
        .collect();
    let mut with_month = df.clone();
    with_month
        .with_column(Column::new("month".into(), months))
        .map_err(polars)?;
    let parts = with_month.partition_by_stable(["month"], true).map_err(polars)?;
    let tmp = temp_name(target);
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(io(&tmp))?;
    let mut out = Vec::new();
    let mut planned = Vec::new();
    for mut part in parts {
        let month = part
            .column("month")
            .and_then(|c| c.get(0).map(|v| v.str_value().to_string()))
            .map_err(polars)?;
        let _ = part.drop_in_place("month").map_err(polars)?;
        let folder = tmp.join(format!("month={month}"));
        fs::create_dir_all(&folder).map_err(io(&folder))?;
        let path = folder.join(format!("part-0.{}", format.extension()));
        write_file(&mut part, &path, format)?;
        planned.push((format!("month={month}"), part.height()));
    }
    // Swap the finished folder in: the old one is moved aside first, then removed.
    let old = target.with_file_name(format!(
        ".{}.old-{}",
        target
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        std::process::id()
    ));
    let had_old = target.exists();
    if had_old {
        fs::rename(target, &old).map_err(io(target))?;
    }
    fs::rename(&tmp, target).map_err(io(target))?;
    if had_old {
        let _ = fs::remove_dir_all(&old);
    }
    for (folder, rows) in planned {
        out.push((target.join(folder).join(format!("part-0.{}", format.extension())), rows));
    }
    Ok(out)
}

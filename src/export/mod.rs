//! Writing frames to disk: Parquet (zstd, full statistics), CSV or NDJSON, each file
//! written beside its destination under a temporary name and renamed into place, so a
//! reader never sees half a file. `--partition month` writes a hive-partitioned dataset.
//! The usage frame is written in batches as its rows are read back from the corpus, so an
//! export holds one batch, not the corpus's calls.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde_json::{Map, Value};

use crate::corpus::Corpus;
use crate::pricing::{CostMode, Pricing};

mod compress;
mod dictionary;

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

/// Rows of a Parquet row group in a frame written whole (polars' default).
const ROW_GROUP_ROWS: usize = 512 * 512;

/// Encode a frame into a writer.
pub fn encode(df: &mut DataFrame, w: &mut impl Write, format: Format) -> PolarsResult<()> {
    match format {
        Format::Parquet => {
            // What `ParquetWriter::finish` does, through the sink that holds only compressed
            // pages (polars' writer holds every column's encoded pages until it writes them).
            let chunked = polars::frame::chunk_df_for_writing(df, ROW_GROUP_ROWS)?;
            let mut sink = ParquetSink::new(w, chunked.schema())?;
            sink.write(&chunked)?;
            sink.finish()?;
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

/// Rows of the usage frame written at a time (a Parquet row group each).
pub const BATCH_ROWS: usize = 25_000;

/// What an export writes: a corpus's frames, costs under `mode`, `source` in the first column.
#[derive(Debug, Clone, Copy)]
pub struct Exported<'a> {
    pub corpus: &'a Corpus,
    pub source: &'a str,
    pub pricing: &'a Pricing,
    pub mode: CostMode,
    /// Rows of the usage frame written at a time ([`BATCH_ROWS`]).
    pub batch_rows: usize,
    /// The corpus is read for nothing else afterwards: its temporary spill is emptied beside
    /// the export's last write ([`crate::corpus::spill::Spill::discard`]).
    pub last_use: bool,
}

/// Write the four frames into `dir`, the usage frame in batches.
pub fn export(what: &Exported<'_>, dir: &Path, format: Format, partition: Partition) -> Result<Written, ExportError> {
    fs::create_dir_all(dir).map_err(io(dir))?;
    let monthly = partition == Partition::Month;
    let usage = if monthly {
        Target::Partitioned(Partitioned::new(&dir.join("usage"), format)?)
    } else {
        Target::File(Box::new(Out::new(
            &dir.join(format!("usage.{}", format.extension())),
            format,
        )))
    };
    // The small frames are made and written beside the usage frame's batches. Made first, they
    // kept a core idle: the sessions frame is one loop over the sessions' facts on one core
    // (about 20 ms of the 1.5 GB corpus's export), and each batch ends with a core waiting for
    // the other's last piece or column.
    let (others, usage) = rayon::join(
        || small_frames(what, dir, format, monthly),
        || usage_batches(what, dir, usage),
    );
    let (others, usage) = match (others, usage) {
        (Ok(others), Ok(usage)) => (others, usage),
        (Err(e), usage) => {
            if let Ok(usage) = usage {
                usage.abandon();
            }
            return Err(e);
        }
        (Ok(_), Err(e)) => return Err(e),
    };
    // Nothing is read back any more: the spill is emptied beside the last write and sync.
    let discard = || {
        if what.last_use {
            what.corpus.spill.discard();
        }
    };
    let (finished, ()) = rayon::join(|| usage.finish(), discard);
    // The usage frame's files are listed first, as they always were.
    let mut written = Written::default();
    written.files.extend(finished?);
    written.files.extend(others);
    Ok(written)
}

/// The sessions, compactions and files frames, written into `dir`: their files and rows.
fn small_frames(
    what: &Exported<'_>,
    dir: &Path,
    format: Format,
    monthly: bool,
) -> Result<Vec<(PathBuf, usize)>, ExportError> {
    let polars = |source| ExportError::Polars {
        path: dir.to_path_buf(),
        source,
    };
    let write = |name: &str, mut df: DataFrame| {
        if monthly && name == "compactions" {
            let mut target = Partitioned::new(&dir.join(name), format)?;
            target.push(&mut df)?;
            target.finish()
        } else {
            let path = dir.join(format!("{name}.{}", format.extension()));
            write_file(&mut df, &path, format)?;
            Ok::<_, ExportError>(vec![(path, df.height())])
        }
    };
    let (both, compactions) = rayon::join(
        || crate::frame::sessions_and_files(what.corpus, what.source),
        || crate::frame::compactions(what.corpus, what.source),
    );
    let (sessions, files) = both.map_err(polars)?;
    let compactions = compactions.map_err(polars)?;
    let (sessions, (compactions, files)) = rayon::join(
        || write("sessions", sessions),
        || rayon::join(|| write("compactions", compactions), || write("files", files)),
    );
    let others = [sessions?, compactions?, files?].concat();
    // What they held, back to the system (glibc keeps freed memory otherwise, and the usage
    // frame's batches, built in other threads' arenas, might not reuse it).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory of glibc's arenas.
    unsafe {
        libc::malloc_trim(0);
    }
    Ok(others)
}

/// The usage frame's batches written into `usage`, not yet finished.
fn usage_batches(what: &Exported<'_>, dir: &Path, mut usage: Target) -> Result<Target, ExportError> {
    let mut failed = None;
    let streamed = crate::frame::usage_batches(
        what.corpus,
        what.source,
        what.pricing,
        what.mode,
        what.batch_rows,
        |mut df| {
            usage.push(&mut df).map_err(|e| {
                failed = Some(e);
                PolarsError::ComputeError("the export stopped".into())
            })
        },
    );
    // A failed write removed what its target wrote (see `Out::push`, `Partitioned::push`).
    if let Some(e) = failed {
        return Err(e);
    }
    if let Err(source) = streamed {
        // A batch that could not be made: what the target wrote so far is removed.
        usage.abandon();
        return Err(ExportError::Polars {
            path: dir.to_path_buf(),
            source,
        });
    }
    Ok(usage)
}

/// Where a frame's batches go: one file, or one file per month.
enum Target {
    File(Box<Out>),
    Partitioned(Partitioned),
}

impl Target {
    fn push(&mut self, df: &mut DataFrame) -> Result<(), ExportError> {
        match self {
            Target::File(out) => out.push(df),
            Target::Partitioned(p) => p.push(df),
        }
    }

    fn finish(self) -> Result<Vec<(PathBuf, usize)>, ExportError> {
        match self {
            Target::File(out) => Ok(vec![out.finish()?]),
            Target::Partitioned(p) => p.finish(),
        }
    }

    /// Give up on it: what was written so far is removed (nothing was renamed into place).
    fn abandon(mut self) {
        match &mut self {
            Target::File(out) => out.abandon(),
            Target::Partitioned(p) => p.abandon(),
        }
    }
}

/// A file shared by its encoder and its [`Out`], which takes it back to flush and sync it once
/// the encoder is done (polars' batched writers do not give their writer back).
#[derive(Clone)]
struct Shared(std::sync::Arc<std::sync::Mutex<BufWriter<File>>>);

impl Shared {
    /// The file, for one write.
    fn lock(&self) -> std::io::Result<std::sync::MutexGuard<'_, BufWriter<File>>> {
        self.0.lock().map_err(|_| std::io::Error::other("writer poisoned"))
    }

    /// Hand what is written so far to the disk, without waiting: the sync that ends the file
    /// then waits only for its last row group. (That sync took 17.5 ms at an export's end on
    /// the 1.5 GB corpus, the cores idle, its 8 MB written back all at once.)
    fn start_writeback(&self) -> std::io::Result<()> {
        let mut w = self.lock()?;
        w.flush()?;
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // Its result is not looked at: where it fails (a file system without it), the
            // final sync does all the work, as it did before.
            // SAFETY: `sync_file_range` only starts the write-back of the open file's dirty
            // pages (offset 0, length 0: all of them); it reads no memory of ours.
            unsafe {
                libc::sync_file_range(w.get_ref().as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
            }
        }
        Ok(())
    }
}

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.lock()?.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.lock()?.flush()
    }
}

/// A Parquet file written a row group at a time. polars' `write_batch` encodes the columns in
/// parallel but compresses them one after the other, lazily, while the file is written; here
/// each column is encoded and compressed on the thread pool, and the finished pages are written
/// in column order. The pages, and so the file's bytes, are those `write_batch` writes.
struct ParquetSink<W: Write> {
    writer: polars::io::parquet::write::BatchedWriter<W>,
    /// The file's columns as Parquet types, in order.
    fields: Vec<polars_parquet::write::ParquetType>,
    /// Each column's encodings (as polars picks them).
    encodings: Vec<Vec<polars_parquet::write::Encoding>>,
    options: polars_parquet::write::WriteOptions,
}

/// One column of a row group, compressed: its leaves' pages.
type ColumnPages = Vec<Vec<polars_parquet::write::CompressedPage>>;

impl<W: Write> ParquetSink<W> {
    fn new(w: W, schema: &Schema) -> PolarsResult<ParquetSink<W>> {
        use polars_parquet::write::{Version, WriteOptions};
        let compression = ParquetCompression::Zstd(None);
        let statistics = StatisticsOptions::full();
        let mut writer = ParquetWriter::new(w)
            .with_compression(compression)
            .with_statistics(statistics)
            .batched(schema)?;
        let fields = writer.parquet_schema().fields().to_vec();
        let arrow = schema.to_arrow(CompatLevel::newest());
        let encodings = polars::io::parquet::write::get_encodings(&arrow).to_vec();
        // What `ParquetWriter` gives its batched writer for these settings.
        let options = WriteOptions {
            statistics,
            compression: compression.into(),
            version: Version::V1,
            data_page_size: None,
        };
        Ok(ParquetSink {
            writer,
            fields,
            encodings,
            options,
        })
    }

    /// Write a frame a row group per chunk (none for an empty one); its chunks aligned.
    fn write(&mut self, df: &DataFrame) -> PolarsResult<()> {
        for batch in df.iter_chunks(CompatLevel::newest(), false) {
            if !batch.is_empty() {
                self.row_group(batch.len(), |i| Ok(batch.columns()[i].clone()))?;
            }
        }
        Ok(())
    }

    /// Write a frame as one row group (none for an empty frame): each column's chunks joined
    /// on the thread pool as it is encoded, so the frame's pieces are never copied whole.
    fn write_group(&mut self, df: &DataFrame) -> PolarsResult<()> {
        if df.height() == 0 {
            return Ok(());
        }
        let columns = df.columns();
        self.row_group(df.height(), |i| {
            Ok(columns[i]
                .as_materialized_series()
                .rechunk()
                .to_arrow(0, CompatLevel::newest()))
        })
    }

    /// Write a row group of `rows` rows whose `i`th column is `column(i)`: the columns made,
    /// encoded and compressed on the thread pool, written in order.
    fn row_group(&mut self, rows: usize, column: impl Fn(usize) -> PolarsResult<ArrayRef> + Sync) -> PolarsResult<()> {
        use rayon::prelude::*;
        // A task per column: rayon otherwise cuts the columns into a few runs (as many as
        // there are cores, then halves), and a core done with its runs waits while another
        // encodes the columns of its last run one after the other.
        let columns = (0..self.fields.len())
            .into_par_iter()
            .with_max_len(1)
            .map(|i| column_pages(&column(i)?, &self.fields[i], &self.encodings[i], self.options))
            .collect::<PolarsResult<Vec<ColumnPages>>>()?;
        let leaves: Vec<_> = columns.into_iter().flatten().collect();
        self.writer.write_row_group(rows as u64, &leaves)
    }

    /// Write the file's footer.
    fn finish(&self) -> PolarsResult<()> {
        self.writer.finish().map(|_| ())
    }
}

/// What polars' own `ParquetWriter` writes of `df` with the export's settings (zstd, full
/// statistics): the reference the export's files are tested against, byte for byte.
pub fn polars_parquet(df: &mut DataFrame) -> PolarsResult<Vec<u8>> {
    let mut bytes = Vec::new();
    ParquetWriter::new(&mut bytes)
        .with_compression(ParquetCompression::Zstd(None))
        .with_statistics(StatisticsOptions::full())
        .finish(df)?;
    Ok(bytes)
}

/// One column encoded, and each of its leaves' pages compressed.
fn column_pages(
    array: &ArrayRef,
    field: &polars_parquet::write::ParquetType,
    encoding: &[polars_parquet::write::Encoding],
    options: polars_parquet::write::WriteOptions,
) -> PolarsResult<ColumnPages> {
    let leaves = match dictionary::string_column(array.as_ref(), encoding) {
        Some((array, encoding)) => polars_parquet::write::array_to_columns(array, field.clone(), options, &[encoding])?,
        None => match dictionary::float_column(array.as_ref(), encoding) {
            Some(plain) => polars_parquet::write::array_to_columns(array, field.clone(), options, &[plain])?,
            None => polars_parquet::write::array_to_columns(array, field.clone(), options, encoding)?,
        },
    };
    leaves
        .into_iter()
        .map(|pages| pages.map(|page| compress::page(page?, options.compression)).collect())
        .collect()
}

/// An encoder of batches.
enum Sink {
    Parquet(Box<ParquetSink<Shared>>),
    Csv(polars::io::csv::write::BatchedWriter<Shared>),
    Ndjson(Shared),
}

/// One file being written in batches under a temporary name (opened at the first batch, whose
/// columns the file's schema is).
struct Out {
    path: PathBuf,
    tmp: PathBuf,
    format: Format,
    sink: Option<Sink>,
    file: Option<Shared>,
    rows: usize,
}

impl Out {
    fn new(path: &Path, format: Format) -> Out {
        Out {
            path: path.to_path_buf(),
            tmp: temp_name(path),
            format,
            sink: None,
            file: None,
            rows: 0,
        }
    }

    fn polars(&self) -> impl FnOnce(PolarsError) -> ExportError + '_ {
        move |source| ExportError::Polars {
            path: self.path.clone(),
            source,
        }
    }

    fn push(&mut self, df: &mut DataFrame) -> Result<(), ExportError> {
        let result = self.write(df);
        if result.is_err() {
            self.abandon();
        }
        result
    }

    /// Close the file and remove it.
    fn abandon(&mut self) {
        self.sink = None;
        self.file = None;
        let _ = fs::remove_file(&self.tmp);
    }

    fn write(&mut self, df: &mut DataFrame) -> Result<(), ExportError> {
        if self.sink.is_none() {
            let file = File::create(&self.tmp).map_err(io(&self.tmp))?;
            let w = Shared(std::sync::Arc::new(std::sync::Mutex::new(BufWriter::new(file))));
            self.file = Some(w.clone());
            let schema = df.schema().as_ref().clone();
            self.sink = Some(match self.format {
                Format::Parquet => Sink::Parquet(Box::new(ParquetSink::new(w, &schema).map_err(self.polars())?)),
                Format::Csv => Sink::Csv(
                    CsvWriter::new(w)
                        .include_header(true)
                        .batched(&schema)
                        .map_err(self.polars())?,
                ),
                Format::Ndjson => Sink::Ndjson(w),
            });
        }
        self.rows += df.height();
        let sink = self.sink.as_mut().expect("opened above");
        let result = match sink {
            Sink::Parquet(w) => w.write_group(df),
            Sink::Csv(w) => w.write_batch(df.rechunk_mut()),
            Sink::Ndjson(w) => encode(df.rechunk_mut(), w, Format::Ndjson),
        };
        result.map_err(|source| ExportError::Polars {
            path: self.path.clone(),
            source,
        })?;
        self.file
            .as_ref()
            .expect("opened with the sink")
            .start_writeback()
            .map_err(io(&self.tmp))
    }

    /// Finish the file and rename it into place; its path and rows.
    fn finish(mut self) -> Result<(PathBuf, usize), ExportError> {
        let result = (|| {
            match self.sink.take().expect("a batch was written") {
                Sink::Parquet(w) => {
                    w.finish().map_err(self.polars())?;
                }
                Sink::Csv(mut w) => w.finish().map_err(self.polars())?,
                Sink::Ndjson(_) => {}
            }
            let shared = self.file.take().expect("opened with the sink");
            let w = std::sync::Arc::try_unwrap(shared.0)
                .map_err(|_| io(&self.tmp)(std::io::Error::other("the encoder still holds the file")))?
                .into_inner()
                .map_err(|_| io(&self.tmp)(std::io::Error::other("writer poisoned")))?;
            let file = w.into_inner().map_err(|e| io(&self.tmp)(e.into_error()))?;
            file.sync_all().map_err(io(&self.tmp))?;
            fs::rename(&self.tmp, &self.path).map_err(io(&self.path))
        })();
        if result.is_err() {
            let _ = fs::remove_file(&self.tmp);
        }
        result.map(|()| (self.path, self.rows))
    }
}

/// `target/month=YYYY-MM/part-0.<ext>` (UTC months of `timestamp`, `month=unknown` without
/// one), built in a temporary folder that replaces `target` when finished.
struct Partitioned {
    target: PathBuf,
    tmp: PathBuf,
    format: Format,
    /// Each month's file, in the order the months first came.
    months: Vec<(String, Out)>,
}

impl Partitioned {
    fn new(target: &Path, format: Format) -> Result<Partitioned, ExportError> {
        let tmp = temp_name(target);
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(&tmp).map_err(io(&tmp))?;
        Ok(Partitioned {
            target: target.to_path_buf(),
            tmp,
            format,
            months: Vec::new(),
        })
    }

    /// Write a frame's rows into their months' files; on an error the folder is removed, as
    /// [`Out::push`] removes its file.
    fn push(&mut self, df: &mut DataFrame) -> Result<(), ExportError> {
        let result = self.write(df);
        if result.is_err() {
            self.abandon();
        }
        result
    }

    /// Close every month's file and remove the folder.
    fn abandon(&mut self) {
        self.months.clear();
        let _ = fs::remove_dir_all(&self.tmp);
    }

    fn write(&mut self, df: &mut DataFrame) -> Result<(), ExportError> {
        let polars = |source| ExportError::Polars {
            path: self.target.clone(),
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
        for mut part in with_month.partition_by_stable(["month"], true).map_err(polars)? {
            let month = part
                .column("month")
                .and_then(|c| c.get(0).map(|v| v.str_value().to_string()))
                .map_err(polars)?;
            let _ = part.drop_in_place("month").map_err(polars)?;
            let at = match self.months.iter().position(|(m, _)| *m == month) {
                Some(at) => at,
                None => {
                    let folder = self.tmp.join(format!("month={month}"));
                    fs::create_dir_all(&folder).map_err(io(&folder))?;
                    let path = folder.join(format!("part-0.{}", self.format.extension()));
                    self.months.push((month, Out::new(&path, self.format)));
                    self.months.len() - 1
                }
            };
            self.months[at].1.push(&mut part)?;
        }
        Ok(())
    }

    /// Finish every month's file and swap the folder in.
    fn finish(self) -> Result<Vec<(PathBuf, usize)>, ExportError> {
        let Partitioned {
            target,
            tmp,
            format,
            months,
        } = self;
        let target = target.as_path();
        let mut planned = Vec::new();
        for (month, out) in months {
            let (_, rows) = out.finish()?;
            planned.push((format!("month={month}"), rows));
        }
        let mut out = Vec::new();
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame whose columns come in several chunks (the pieces of a batch) is written as one
    /// row group, byte for byte what the same frame in one chunk makes.
    #[test]
    fn a_batch_in_pieces_is_written_as_in_one_chunk() {
        let whole = df!(
            "id" => (0..5_000).map(|i| format!("entry-{i:08}-with-a-long-name")).collect::<Vec<_>>(),
            "model" => (0..5_000).map(|i| ["claude-sonnet-4-5", "gpt-5"][i % 7 / 5]).collect::<Vec<_>>(),
            "tokens" => (0..5_000).map(|i| (i * 37 % 1_001) as f64).collect::<Vec<_>>(),
            "cost" => (0..5_000).map(|i| (i % 3 != 0).then_some(i as f64 / 7.0)).collect::<Vec<_>>(),
        )
        .expect("a frame");
        let mut pieces = whole.slice(0, 1_234);
        for (from, len) in [(1_234, 1), (1_235, 2_000), (3_235, 1_765)] {
            pieces.vstack_mut_owned(whole.slice(from, len)).expect("same columns");
        }
        assert!(pieces.first_col_n_chunks() > 1, "the frame is in pieces");
        let dir = tempfile::tempdir().expect("temp dir");
        let written = |name: &str, df: &DataFrame| {
            let mut out = Out::new(&dir.path().join(name), Format::Parquet);
            out.push(&mut df.clone()).expect("written");
            let (path, rows) = out.finish().expect("finished");
            assert_eq!(rows, 5_000);
            fs::read(path).expect("read back")
        };
        let (a, b) = (written("pieces.parquet", &pieces), written("whole.parquet", &whole));
        assert!(a == b, "{} bytes in pieces, {} whole", a.len(), b.len());
        let back = ParquetReader::new(std::io::Cursor::new(a)).finish().expect("read");
        assert!(back.equals_missing(&whole));
    }
}

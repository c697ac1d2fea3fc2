//! A page compressed as polars compresses it, with zstd's context kept on each thread.
//!
//! polars' `compress` makes a zstd context for every page (`zstd::bulk::compress_to_buffer`:
//! a new `Compressor`, its tables allocated and cleared) and zeroes the whole bound of the
//! output before zstd writes into it. A usage batch has one or two pages a column. Here each
//! thread keeps one `Compressor` at the same level and writes into the vector's spare room:
//! `compress_to_buffer` on a context at that level is what polars calls (zstd starts each
//! frame afresh and its output depends only on the level and the input), so the pages are
//! the same bytes.

use std::cell::RefCell;

use polars::prelude::PolarsResult;
use polars_parquet::parquet::CowBuffer;
use polars_parquet::parquet::page::{CompressedDictPage, DataPageHeader};
use polars_parquet::write::{CompressedDataPage, CompressedPage, CompressionOptions, Page};

thread_local! {
    /// This thread's context and its level.
    static CONTEXT: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> = const { RefCell::new(None) };
}

/// `page` compressed with `compression`: polars' own `compress` unless it is zstd, whose pages
/// (version 1 data pages, dictionary pages) are compressed here with the same bytes.
pub fn page(page: Page, compression: CompressionOptions) -> PolarsResult<CompressedPage> {
    let CompressionOptions::Zstd(level) = compression else {
        return Ok(polars_parquet::write::compress(page, Vec::new(), compression)?);
    };
    // polars' level: zstd's default (0) unless one is given.
    let level = level.map(|l| l.compression_level()).unwrap_or_default();
    Ok(match page {
        Page::Data(page) if matches!(page.header(), DataPageHeader::V1(_)) => {
            let bytes = zstd_bytes(page.buffer(), level)?;
            let (header, size) = (page.header().clone(), page.buffer().len());
            let rows = page.num_rows.expect("a written page counts its rows");
            CompressedPage::Data(CompressedDataPage::new(
                header,
                CowBuffer::Owned(bytes),
                compression.into(),
                size,
                page.descriptor,
                rows,
            ))
        }
        Page::Dict(page) => {
            let bytes = zstd_bytes(&page.buffer, level)?;
            CompressedPage::Dict(CompressedDictPage::new(
                CowBuffer::Owned(bytes),
                compression.into(),
                page.buffer.len(),
                page.num_values,
                page.is_sorted,
            ))
        }
        other => polars_parquet::write::compress(other, Vec::new(), compression)?,
    })
}

/// `input` as one zstd frame at `level`, by this thread's context.
fn zstd_bytes(input: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(input.len()));
    CONTEXT.with_borrow_mut(|context| {
        let compressor = match context {
            Some((at, compressor)) if *at == level => compressor,
            _ => &mut context.insert((level, zstd::bulk::Compressor::new(level)?)).1,
        };
        compressor.compress_to_buffer(input, &mut out)
    })?;
    Ok(out)
}

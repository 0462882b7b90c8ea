//! Reading the export's `fleet_windows` table back — `llctop diff --fleet` over Parquet
//! directories: each file's windows grouped by host, after checking that it is a Parquet
//! file llctop wrote, of that table and of a schema version that has it. A file that is
//! not is refused with one line saying why; the caller names it and reads the rest.

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt32Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::tables::{FLEET_WINDOWS, SCHEMA_VERSION};
use super::window::Metrics;

/// The first schema version with the `fleet_windows` table.
pub const FLEET_WINDOWS_SINCE: u32 = 3;
/// Bytes of one file read at most (a host's run: a few hundred bytes per window).
const MAX_FILE: u64 = 1 << 30;
/// Rows per batch read.
const BATCH: usize = 8192;
/// The columns read.
const COLUMNS: [&str; 5] = ["host", "run_id", "window_index", "metric", "value"];

/// One file's windows: per host (its `host`, or its `run_id` where that is NULL) and run,
/// the metrics of each of its windows, in window order.
pub type HostWindows = BTreeMap<(String, String), Vec<Metrics>>;

/// Read one `fleet_windows` file; the error says why it is not one (the caller names the
/// file).
pub fn windows_of(path: &Path) -> Result<HostWindows, String> {
    // Not a FIFO or a device named *.parquet: opening one could block for ever.
    if !std::fs::metadata(path)
        .map_err(|e| e.to_string())?
        .is_file()
    {
        return Err("not a regular file".into());
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    if len > MAX_FILE {
        return Err(format!(
            "{len} bytes: more than the {} MiB a host's windows take",
            MAX_FILE >> 20
        ));
    }
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| format!("not a Parquet file llctop can read: {e}"))?;
    let kv = |k: &str| -> Option<String> {
        builder
            .metadata()
            .file_metadata()
            .key_value_metadata()?
            .iter()
            .find(|x| x.key == k)?
            .value
            .clone()
    };
    check_kind(
        kv("llctop.table").as_deref(),
        kv("llctop.schema_version").as_deref(),
    )?;
    // What the pages would decompress to, as the file declares it, bounded before any is
    // read (a small file of highly compressed pages is no host's windows either).
    let declared: i64 = builder
        .metadata()
        .row_groups()
        .iter()
        .map(|g| g.total_byte_size())
        .fold(0i64, i64::saturating_add);
    check_size(declared)?;
    let mask = ProjectionMask::columns(builder.parquet_schema(), COLUMNS);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH)
        .build()
        .map_err(|e| e.to_string())?;
    // (host, run, window) → the window's metrics: a file is one run, written in order,
    // but nothing here relies on it.
    let mut by: BTreeMap<(String, String, u32), Metrics> = BTreeMap::new();
    for batch in reader {
        let batch = batch.map_err(|e| format!("unreadable: {e}"))?;
        rows(&batch, &mut by)?;
    }
    let mut out = HostWindows::new();
    for ((host, run, _), m) in by {
        out.entry((host, run)).or_default().push(m);
    }
    Ok(out)
}

/// Whether a file's metadata says it is llctop's `fleet_windows` of a version that has it
/// (pure).
pub fn check_kind(table: Option<&str>, version: Option<&str>) -> Result<(), String> {
    let Some(version) = version else {
        return Err("no llctop.schema_version in its metadata: not an llctop export".into());
    };
    let v: u32 = version.parse().map_err(|_| {
        format!(
            "schema version {:?} is no number",
            crate::text::Esc(version)
        )
    })?;
    if table != Some(FLEET_WINDOWS.name) {
        return Err(format!(
            "table {}, not {}",
            crate::text::Esc(table.unwrap_or("(none)")),
            FLEET_WINDOWS.name
        ));
    }
    if !(FLEET_WINDOWS_SINCE..=SCHEMA_VERSION).contains(&v) {
        return Err(format!(
            "schema version {v}; this llctop reads {} of versions {FLEET_WINDOWS_SINCE} to {SCHEMA_VERSION}",
            FLEET_WINDOWS.name
        ));
    }
    Ok(())
}

/// Whether `declared` uncompressed bytes (the row groups' sizes as the file says them)
/// are within what one host's windows take (pure).
pub fn check_size(declared: i64) -> Result<(), String> {
    if !(0..=MAX_FILE as i64).contains(&declared) {
        return Err(format!(
            "its row groups declare {declared} bytes uncompressed: more than the {} MiB a host's windows take",
            MAX_FILE >> 20
        ));
    }
    Ok(())
}

/// One batch's rows into `by`.
fn rows(
    batch: &RecordBatch,
    by: &mut BTreeMap<(String, String, u32), Metrics>,
) -> Result<(), String> {
    let column = |name: &str| {
        batch
            .column_by_name(name)
            .ok_or_else(|| format!("no column {name}"))
    };
    let wrong = |name: &str, t: &str| format!("column {name} is not {t}");
    let host = column("host")?;
    let host = host.as_string_opt::<i32>().ok_or(wrong("host", "text"))?;
    let run = column("run_id")?;
    let run = run.as_string_opt::<i32>().ok_or(wrong("run_id", "text"))?;
    let window = column("window_index")?;
    let window = window
        .as_primitive_opt::<UInt32Type>()
        .ok_or(wrong("window_index", "UINTEGER"))?;
    let metric = column("metric")?;
    let metric = metric
        .as_string_opt::<i32>()
        .ok_or(wrong("metric", "text"))?;
    let value = column("value")?;
    let value = value
        .as_primitive_opt::<Float64Type>()
        .ok_or(wrong("value", "DOUBLE"))?;
    for i in 0..batch.num_rows() {
        // Columns the schema has as NOT NULL: a NULL is a file not written by llctop.
        if run.is_null(i) || window.is_null(i) || metric.is_null(i) || value.is_null(i) {
            return Err(format!("row {i}: NULL in a column that has none"));
        }
        let run_id = run.value(i);
        let h = Some(host)
            .filter(|h| !h.is_null(i))
            .map(|h| h.value(i))
            .filter(|h| !h.is_empty())
            .unwrap_or(run_id);
        let v = value.value(i);
        if !v.is_finite() {
            continue;
        }
        by.entry((h.to_string(), run_id.to_string(), window.value(i)))
            .or_default()
            .insert(metric.value(i).to_string(), v);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_declaring_more_than_a_hosts_windows_is_refused_before_reading() {
        assert_eq!(check_size(8 << 20), Ok(()));
        assert!(check_size(MAX_FILE as i64 + 1).is_err());
        assert!(check_size(-1).is_err(), "a negative size is a lie");
    }

    #[test]
    fn only_fleet_windows_of_a_version_that_has_it_is_read() {
        let now = SCHEMA_VERSION.to_string();
        assert_eq!(check_kind(Some("fleet_windows"), Some(&now)), Ok(()));
        let e = check_kind(Some("fleet_windows"), Some("2")).unwrap_err();
        assert!(e.starts_with("schema version 2;"), "{e}");
        let later = (SCHEMA_VERSION + 1).to_string();
        assert!(check_kind(Some("fleet_windows"), Some(&later)).is_err());
        let e = check_kind(Some("intervals"), Some(&now)).unwrap_err();
        assert_eq!(e, "table intervals, not fleet_windows");
        assert!(
            check_kind(None, None)
                .unwrap_err()
                .contains("not an llctop export")
        );
        // A file's text reaches the terminal escaped.
        let e = check_kind(Some("fleet_windows"), Some("\u{1b}[2J")).unwrap_err();
        assert!(e.contains("is no number") && !e.contains('\u{1b}'), "{e}");
        let e = check_kind(Some("\u{1b}[2J"), Some(&now)).unwrap_err();
        assert!(!e.contains('\u{1b}'), "{e}");
    }
}

//! `llctop export --parquet REC -o DIR`: a recording as Parquet tables, one file per table
//! at `DIR/TABLE/RUN_ID.parquet` (tables.rs defines them), read line by line and written
//! in batches of snapshots: memory bounded by a batch and a row group, whatever the
//! recording's length. Files of many hosts' recordings exported into one DIR make one
//! table per TABLE directory (`read_parquet('DIR/cpus/*.parquet')`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow_schema::Schema;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use super::columns::{self, Column};
use super::tables::{self, Ctx, KnobValue, LineRow, SCHEMA_VERSION, WindowMetric, WindowOf};
use super::window::Windower;
use crate::experiment::Experiment;
use crate::findings::advisor::FindingLine;
use crate::knobs::session::KnobEvent;
use crate::output::Output;
use crate::record::Line;
use crate::record::Marker;
use crate::record::reader::Stream;
use crate::snapshot::Snapshot;
use crate::topology::Topology;

/// Snapshots read before their rows are written (a batch per table per this many).
const BATCH_SNAPSHOTS: usize = 32;
/// Rows per row group: what a reader skips or reads at once, and what the writer holds.
const ROW_GROUP: usize = 65_536;
/// zstd's level for every column.
const ZSTD_LEVEL: i32 = 1;

/// A path as messages show it (control characters escaped).
fn shown(p: &Path) -> String {
    crate::text::escape(&p.display().to_string()).into_owned()
}

/// `llctop export --parquet REC -o DIR`: the export, then what it wrote.
pub fn command(rec: &Path, dir: &Path) -> Result<(), crate::run::Error> {
    let stop = crate::run::stop_flag()?;
    let w = run(rec, dir, &stop)?;
    let rows: u64 = w.files.iter().map(|f| f.2).sum();
    crate::say!(
        "llctop: exported {} snapshots ({rows} rows in {} tables{}) to {}/TABLE/{}",
        w.snapshots,
        w.files.len(),
        if w.truncated {
            "; the recording ends mid-line: what was whole is exported"
        } else {
            ""
        },
        shown(dir),
        w.files
            .first()
            .and_then(|f| f.1.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    for (table, path, n) in &w.files {
        crate::say!("  {table:<15} {n:>9} rows  {}", shown(path));
    }
    Ok(())
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Written {
    /// (table, file, rows) per table.
    pub files: Vec<(String, PathBuf, u64)>,
    pub snapshots: u64,
    pub truncated: bool,
}

/// One table's file being written.
struct Out {
    table: &'static str,
    output: Option<Output>,
    writer: Option<ArrowWriter<std::fs::File>>,
    schema: Arc<Schema>,
    rows: u64,
}

impl Out {
    fn open<R>(
        dir: &Path,
        table: &'static str,
        name: &str,
        cols: &[Column<R>],
        input: &Path,
    ) -> Result<Out, String> {
        let sub = dir.join(table);
        make_dir(&sub)?;
        let path = sub.join(name);
        let output = Output::create(&path, &[input], crate::output::Wait::default())
            .map_err(|e| format!("{}: {e}", shown(&path)))?;
        let file = output
            .try_clone_file()
            .map_err(|e| format!("{}: {e}", shown(&path)))?;
        let schema = Arc::new(columns::schema(cols));
        // Dictionaries for the text columns only (the identity, names, kinds: a handful of
        // values each); numbers are written plain, then compressed — their dictionaries
        // took a quarter of the export's time.
        let texts = cols
            .iter()
            .filter(|c| c.data_type() == arrow_schema::DataType::Utf8)
            .map(|c| parquet::schema::types::ColumnPath::from(c.name.as_str()));
        let props = texts
            .fold(
                WriterProperties::builder()
                    .set_dictionary_enabled(false)
                    // Min/max per column chunk (what engines skip row groups by), not per
                    // page: the page index cost the writer time no query here uses.
                    .set_statistics_enabled(parquet::file::properties::EnabledStatistics::Chunk),
                |b, p| b.set_column_dictionary_enabled(p, true),
            )
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(ZSTD_LEVEL).map_err(|e| e.to_string())?,
            ))
            .set_max_row_group_row_count(Some(ROW_GROUP))
            .set_created_by(format!("llctop {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(vec![
                KeyValue::new("llctop.schema_version".into(), SCHEMA_VERSION.to_string()),
                KeyValue::new("llctop.table".into(), table.to_string()),
            ]))
            .build();
        let writer = ArrowWriter::try_new(file, Arc::clone(&schema), Some(props))
            .map_err(|e| format!("{}: {e}", shown(&path)))?;
        Ok(Out {
            table,
            output: Some(output),
            writer: Some(writer),
            schema,
            rows: 0,
        })
    }

    fn write<R>(&mut self, cols: &[Column<R>], rows: &[R]) -> Result<(), String> {
        if rows.is_empty() {
            return Ok(());
        }
        let b = columns::batch(cols, &self.schema, rows)
            .map_err(|e| format!("table {}: {e}", self.table))?;
        if let Some(w) = self.writer.as_mut() {
            w.write(&b)
                .map_err(|e| format!("table {}: {e}", self.table))?;
        }
        self.rows += rows.len() as u64;
        Ok(())
    }

    /// Footer written, file committed under its name.
    fn finish(&mut self) -> Result<(String, PathBuf, u64), String> {
        let path = self
            .output
            .as_ref()
            .map(|o| o.path().to_path_buf())
            .unwrap_or_default();
        if let Some(w) = self.writer.take() {
            w.close().map_err(|e| format!("{}: {e}", shown(&path)))?;
        }
        if let Some(o) = self.output.take() {
            o.commit().map_err(|e| format!("{}: {e}", shown(&path)))?;
        }
        Ok((self.table.to_string(), path, self.rows))
    }
}

/// `d` made if missing; a link or anything but a directory is refused (llctop runs as
/// root: a link planted at a table's name must not send its files elsewhere).
fn make_dir(d: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(d) {
        Ok(m) if m.file_type().is_dir() => Ok(()),
        Ok(_) => Err(format!(
            "{}: not a directory (a link or a file): the Parquet tables go into directories of their own",
            shown(d)
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir_all(d)
            .map_err(|e| format!("{}: {e}", shown(d)))
            .and_then(|()| make_dir(d)),
        Err(e) => Err(format!("{}: {e}", shown(d))),
    }
}

/// A file name from a run id: letters, digits, `.`, `_` and `-` kept, anything else `_`,
/// at most 200 characters, then `.parquet`.
pub fn file_name(run_id: &str) -> String {
    let mut s: String = run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(200)
        .collect();
    if s.is_empty() || s.starts_with('.') {
        s.insert(0, '_');
    }
    s + ".parquet"
}

/// The open files, one per table.
struct Outs {
    intervals: Out,
    cpus: Out,
    llcs: Out,
    nodes: Out,
    processes: Out,
    llc_migrations: Out,
    process_pairs: Out,
    thread_pairs: Out,
    balance: Out,
    resctrl: Out,
    knob_values: Out,
    knob_changes: Out,
    markers: Out,
    findings: Out,
    windows: Out,
    fleet_windows: Out,
}

impl Outs {
    fn open(dir: &Path, name: &str, input: &Path) -> Result<Outs, String> {
        use tables::*;
        Ok(Outs {
            intervals: Out::open(dir, INTERVALS.name, name, &intervals(), input)?,
            cpus: Out::open(dir, CPUS.name, name, &cpus(), input)?,
            llcs: Out::open(dir, LLCS.name, name, &llcs(), input)?,
            nodes: Out::open(dir, NODES.name, name, &nodes(), input)?,
            processes: Out::open(dir, PROCESSES.name, name, &processes(), input)?,
            llc_migrations: Out::open(dir, LLC_MIGRATIONS.name, name, &llc_migrations(), input)?,
            process_pairs: Out::open(dir, PROCESS_PAIRS.name, name, &process_pairs(), input)?,
            thread_pairs: Out::open(dir, THREAD_PAIRS.name, name, &thread_pairs(), input)?,
            balance: Out::open(dir, BALANCE.name, name, &balance(), input)?,
            resctrl: Out::open(dir, RESCTRL.name, name, &resctrl(), input)?,
            knob_values: Out::open(dir, KNOB_VALUES.name, name, &knob_values(), input)?,
            knob_changes: Out::open(dir, KNOB_CHANGES.name, name, &knob_changes(), input)?,
            markers: Out::open(dir, MARKERS.name, name, &markers(), input)?,
            findings: Out::open(dir, FINDINGS.name, name, &findings(), input)?,
            windows: Out::open(dir, WINDOWS.name, name, &windows(), input)?,
            fleet_windows: Out::open(dir, FLEET_WINDOWS.name, name, &fleet_windows(), input)?,
        })
    }

    fn all(&mut self) -> [&mut Out; 16] {
        [
            &mut self.intervals,
            &mut self.cpus,
            &mut self.llcs,
            &mut self.nodes,
            &mut self.processes,
            &mut self.llc_migrations,
            &mut self.process_pairs,
            &mut self.thread_pairs,
            &mut self.balance,
            &mut self.resctrl,
            &mut self.knob_values,
            &mut self.knob_changes,
            &mut self.markers,
            &mut self.findings,
            &mut self.windows,
            &mut self.fleet_windows,
        ]
    }
}

/// What a batch holds until it is written.
#[derive(Default)]
struct Pending {
    snapshots: Vec<Snapshot>,
    knobs: Vec<KnobEvent>,
    markers: Vec<Marker>,
    findings: Vec<FindingLine>,
    windows: Vec<WindowOf>,
    /// The knob values of a `knob_values` line (a recording whose header has none).
    knob_values: Vec<KnobValue>,
}

impl Pending {
    fn len(&self) -> usize {
        self.knobs.len()
            + self.markers.len()
            + self.findings.len()
            + self.windows.len()
            + self.knob_values.len()
    }
}

/// Export recording `input` into `dir`. A stop (`stop` set: SIGINT, SIGTERM…) ends it with
/// an error and leaves no file (each is discarded uncommitted).
pub fn run(input: &Path, dir: &Path, stop: &AtomicBool) -> Result<Written, String> {
    let mut stream = Stream::open(input, u64::MAX).map_err(|e| e.to_string())?;
    let header = stream.header.clone();
    let ctx = Ctx::of(&header);
    let topo = header.topology.clone();
    make_dir(dir)?;
    let name = file_name(&ctx.run_id);
    let mut outs = Outs::open(dir, &name, input)?;
    let mut knob_values: Vec<KnobValue> = header
        .knobs
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    write_knob_values(&mut outs, &ctx, &knob_values)?;
    // Two threads: this one reads and parses the recording, the other builds and
    // compresses the batches (about half the time each) — two batches in flight at most.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Pending>(2);
    let (read, written) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| -> Result<(), String> {
            let mut cut = Windower::default();
            for mut p in rx {
                flush(&mut outs, &ctx, &topo, &mut p, &mut cut)?;
            }
            Ok(())
        });
        let read = (|| -> Result<(u64, bool), String> {
            let mut experiment: Option<Experiment> = None;
            let mut pending = Pending::default();
            let mut snapshots = 0u64;
            // A send fails only when the writer has stopped: its error says why.
            let send = |p: &mut Pending| tx.send(std::mem::take(p)).is_ok();
            for line in &mut stream {
                if stop.load(Ordering::Relaxed) {
                    return Err("stopped by a signal: nothing written".into());
                }
                match line.map_err(|e| e.to_string())? {
                    Line::Snapshot(s) => {
                        snapshots += 1;
                        pending.snapshots.push(s);
                    }
                    Line::Knob(k) => pending.knobs.push(k),
                    Line::Marker(m) => pending.markers.push(m),
                    Line::Finding(f) => pending.findings.push(*f),
                    Line::Experiment(e) => experiment = Some(e),
                    Line::Window(w) => pending.windows.push((w, experiment.clone())),
                    Line::KnobValues(k) if knob_values.is_empty() => {
                        knob_values = k.into_iter().collect();
                        pending.knob_values = knob_values.clone();
                    }
                    Line::KnobValues(_) | Line::Verdict(_) | Line::Unknown => {}
                }
                if (pending.snapshots.len() >= BATCH_SNAPSHOTS || pending.len() >= 1024)
                    && !send(&mut pending)
                {
                    break;
                }
            }
            send(&mut pending);
            Ok((snapshots, stream.truncated))
        })();
        drop(tx);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err("the Parquet writer panicked".into()));
        (read, written)
    });
    written?;
    let (snapshots, truncated) = read?;
    let mut files = Vec::new();
    for o in outs.all() {
        files.push(o.finish()?);
    }
    Ok(Written {
        files,
        snapshots,
        truncated,
    })
}

fn write_knob_values(outs: &mut Outs, ctx: &Ctx, values: &[KnobValue]) -> Result<(), String> {
    let rows: Vec<_> = values.iter().map(|x| LineRow { ctx, x }).collect();
    outs.knob_values.write(&tables::knob_values(), &rows)
}

/// The LLC's node in the topology.
fn node_of_llc(topo: &Topology, llc: u32) -> Option<u32> {
    topo.llcs.iter().find(|l| l.id == llc).and_then(|l| l.node)
}

/// Every table's rows of `p`, written; `p` emptied; its snapshots go on to `cut` (the
/// `fleet_windows` it completes written).
fn flush(
    outs: &mut Outs,
    ctx: &Ctx,
    topo: &Topology,
    p: &mut Pending,
    cut: &mut Windower,
) -> Result<(), String> {
    let values = std::mem::take(&mut p.knob_values);
    write_knob_values(outs, ctx, &values)?;
    let snaps = std::mem::take(&mut p.snapshots);
    let rows: Vec<_> = snaps
        .iter()
        .map(|s| tables::IntervalRow { ctx, s })
        .collect();
    outs.intervals.write(&tables::intervals(), &rows)?;
    let rows: Vec<_> = snaps
        .iter()
        .flat_map(|s| {
            s.cpus.iter().map(move |c| tables::CpuRow {
                ctx,
                s,
                c,
                llc: topo.llc_of(c.cpu),
                node: topo.node_of(c.cpu),
            })
        })
        .collect();
    outs.cpus.write(&tables::cpus(), &rows)?;
    let rows: Vec<_> = snaps
        .iter()
        .flat_map(|s| {
            s.llcs.iter().map(move |g| tables::GroupRow {
                ctx,
                s,
                g,
                node: node_of_llc(topo, g.id),
            })
        })
        .collect();
    outs.llcs.write(&tables::llcs(), &rows)?;
    let rows: Vec<_> = snaps
        .iter()
        .flat_map(|s| {
            s.nodes.iter().map(move |g| tables::GroupRow {
                ctx,
                s,
                g,
                node: None,
            })
        })
        .collect();
    outs.nodes.write(&tables::nodes(), &rows)?;
    let rows: Vec<_> = snaps
        .iter()
        .flat_map(|s| {
            s.processes
                .iter()
                .flat_map(|t| &t.rows)
                .map(move |p| tables::ProcessRow { ctx, s, p })
        })
        .collect();
    outs.processes.write(&tables::processes(), &rows)?;
    let rows: Vec<_> = snaps
        .iter()
        .flat_map(|s| {
            s.migrations.iter().flat_map(move |m| {
                m.llc_matrix
                    .iter()
                    .enumerate()
                    .flat_map(move |(from, row)| {
                        row.iter().enumerate().map(move |(to, &n)| tables::MoveRow {
                            ctx,
                            s,
                            from: from as u32,
                            to: to as u32,
                            n,
                        })
                    })
            })
        })
        .collect();
    outs.llc_migrations
        .write(&tables::llc_migrations(), &rows)?;
    let rows: Vec<_> = snaps
        .iter()
        .flat_map(|s| tables::pairs_of(ctx, s))
        .collect();
    outs.process_pairs.write(&tables::process_pairs(), &rows)?;
    let rows: Vec<_> = snaps
        .iter()
        .flat_map(|s| tables::thread_pairs_of(ctx, s))
        .collect();
    outs.thread_pairs.write(&tables::thread_pairs(), &rows)?;
    let rows: Vec<_> = snaps
        .iter()
        .flat_map(|s| {
            s.balance.iter().flat_map(move |b| {
                b.domains.iter().map(move |d| tables::DomainRow {
                    ctx,
                    s,
                    version: b.version,
                    d,
                })
            })
        })
        .collect();
    outs.balance.write(&tables::balance(), &rows)?;
    let rows: Vec<_> = snaps
        .iter()
        .flat_map(|s| {
            s.resctrl.iter().flat_map(move |r| {
                r.groups.iter().flat_map(move |g| {
                    g.domains
                        .iter()
                        .map(move |d| tables::ResctrlRow { ctx, s, g, d })
                })
            })
        })
        .collect();
    outs.resctrl.write(&tables::resctrl(), &rows)?;
    let knobs = std::mem::take(&mut p.knobs);
    let rows: Vec<_> = knobs.iter().map(|x| LineRow { ctx, x }).collect();
    outs.knob_changes.write(&tables::knob_changes(), &rows)?;
    let markers = std::mem::take(&mut p.markers);
    let rows: Vec<_> = markers.iter().map(|x| LineRow { ctx, x }).collect();
    outs.markers.write(&tables::markers(), &rows)?;
    let findings = std::mem::take(&mut p.findings);
    let rows: Vec<_> = findings.iter().map(|x| LineRow { ctx, x }).collect();
    outs.findings.write(&tables::findings(), &rows)?;
    let windows = std::mem::take(&mut p.windows);
    let rows: Vec<_> = windows.iter().map(|x| LineRow { ctx, x }).collect();
    outs.windows.write(&tables::windows(), &rows)?;
    let metrics: Vec<WindowMetric> = snaps
        .into_iter()
        .filter_map(|s| cut.push(s))
        .flat_map(|w| WindowMetric::of(&w).collect::<Vec<_>>())
        .collect();
    let rows: Vec<_> = metrics.iter().map(|x| LineRow { ctx, x }).collect();
    outs.fleet_windows.write(&tables::fleet_windows(), &rows)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_id_becomes_one_plain_file_name() {
        assert_eq!(file_name("web-7-1700000000"), "web-7-1700000000.parquet");
        // A host name from a file is no path: no separator, no leading dot, no control.
        assert_eq!(file_name("../../etc/x-1"), "_.._.._etc_x-1.parquet");
        assert_eq!(file_name(".hidden-1"), "_.hidden-1.parquet");
        assert_eq!(file_name("a\u{1b}[31m-1"), "a__31m-1.parquet");
        assert_eq!(file_name(""), "_.parquet");
        assert_eq!(file_name(&"x".repeat(500)).len(), 200 + ".parquet".len());
    }
}

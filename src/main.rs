//! The `llctop` command line: subcommands over the library's pipeline.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use llctop::collect::Collector;
use llctop::kroot::KernelRoot;
use llctop::record::{self, Header};
use llctop::snapshot::Snapshot;
use llctop::snapshot::SourceStatus;
use llctop::source::bpf::BpfSource;
use llctop::source::procfs::ProcfsSource;
use llctop::source::{FixedStatus, Source};
use llctop::topology::{self, Distance, Topology};

#[derive(Parser, Debug)]
#[command(
    name = "llctop",
    version,
    about = "Scheduler cache and NUMA behaviour, live: per-LLC occupancy, migrations by distance, preferred-LLC hits"
)]
struct Cli {
    /// Root under which /sys and /proc are read (a fixture tree in tests).
    #[arg(long, global = true, default_value = "/", value_name = "DIR")]
    sysroot: PathBuf,

    /// Time between snapshots (e.g. 1s, 500ms).
    #[arg(long, global = true, default_value = "1s", value_parser = parse_duration)]
    interval: Duration,

    /// Where the data comes from. `auto` picks the best source that works here.
    #[arg(long, global = true, value_enum, default_value_t = SourceKind::Auto)]
    source: SourceKind,

    /// Process rows kept per snapshot (the busiest).
    #[arg(long, global = true, default_value_t = 64)]
    top: usize,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SourceKind {
    /// BPF when it loads, else procfs (the reason is shown).
    Auto,
    /// BPF or fail.
    Bpf,
    /// procfs sampling only.
    Procfs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the CPU / LLC / NUMA topology.
    Topology {
        /// Print JSON instead of the tree.
        #[arg(long)]
        json: bool,
    },
    /// Record snapshots to a JSON Lines file (.gz compresses).
    Record {
        /// Output file.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Stop after this long, i.e. after duration/interval snapshots (default: until
        /// Ctrl-C / SIGTERM).
        #[arg(long, value_parser = parse_duration)]
        duration: Option<Duration>,
    },
    /// Summarise a recording.
    Report { file: PathBuf },
    /// Print one summary line per interval (the default without a subcommand).
    Live {
        /// Stop after this long.
        #[arg(long, value_parser = parse_duration)]
        duration: Option<Duration>,
    },
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = if s.chars().all(|c| c.is_ascii_digit() || c == '.') {
        s.parse::<f64>()
            .map_err(|e| e.to_string())
            .and_then(|x| Duration::try_from_secs_f64(x).map_err(|e| e.to_string()))?
    } else {
        humantime::parse_duration(s).map_err(|e| e.to_string())?
    };
    if d.is_zero() {
        return Err("must be greater than zero".into());
    }
    Ok(d)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("llctop: {e}");
            ExitCode::FAILURE
        }
    }
}

type Error = Box<dyn std::error::Error>;

fn run(mut cli: Cli) -> Result<(), Error> {
    let root = KernelRoot::new(&cli.sysroot);
    let topo = topology::discover(&root)?;
    let command = cli.command.take();
    match command {
        Some(Command::Topology { json }) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&topo)?);
            } else {
                print!("{}", topology::render::tree(&topo));
            }
            Ok(())
        }
        Some(Command::Report { file }) => {
            let rec = record::reader::open(&file)?;
            print!("{}", record::report::render(&rec));
            Ok(())
        }
        Some(Command::Record { output, duration }) => {
            record_cmd(&cli, root, topo, &output, duration)
        }
        Some(Command::Live { duration }) => live(&cli, root, topo, duration),
        None => live(&cli, root, topo, None),
    }
}

/// Build the sources for `--source`. BPF runs first so that procfs (busy, schedstat,
/// NUMA) can use its process rows.
fn sources(cli: &Cli, root: &KernelRoot, topo: &Topology) -> Result<Vec<Box<dyn Source>>, Error> {
    let procfs = || ProcfsSource::new(root.clone(), cli.top);
    if cli.source == SourceKind::Procfs {
        return Ok(vec![Box::new(procfs())]);
    }
    match BpfSource::load(root.clone(), topo, cli.top) {
        Ok(bpf) => Ok(vec![Box::new(bpf), Box::new(procfs().without_task_scan())]),
        Err(e) if cli.source == SourceKind::Bpf => Err(e.into()),
        Err(e) => Ok(vec![
            Box::new(FixedStatus(SourceStatus::absent(
                "bpf",
                format!("{e}; using procfs sampling"),
            ))),
            Box::new(procfs()),
        ]),
    }
}

/// A flag set by SIGINT/SIGTERM so that loops end cleanly (files finished, knobs restored).
fn stop_flag() -> Result<Arc<AtomicBool>, Error> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    Ok(flag)
}

fn signalled(flag: Arc<AtomicBool>) -> impl Fn() -> bool {
    move || flag.load(Ordering::Relaxed)
}

/// How many snapshots cover `duration` (at least one).
fn snapshot_count(duration: Option<Duration>, interval: Duration) -> Option<u64> {
    duration.map(|d| ((d.as_secs_f64() / interval.as_secs_f64()).round() as u64).max(1))
}

fn record_cmd(
    cli: &Cli,
    root: KernelRoot,
    topo: Topology,
    output: &std::path::Path,
    duration: Option<Duration>,
) -> Result<(), Error> {
    let flag = stop_flag()?;
    let (host, kernel) = record::host_and_kernel(&root);
    let mut collector = Collector::new(topo.clone(), sources(cli, &root, &topo)?);
    // The baseline tick's source states go into the header.
    let sources = collector.baseline();
    let header = Header {
        format: record::FORMAT.into(),
        version: record::VERSION,
        llctop_version: env!("CARGO_PKG_VERSION").into(),
        host,
        kernel,
        start_unix_ns: llctop::collect::unix_ns(),
        interval_ns: cli.interval.as_nanos() as u64,
        topology: topo,
        sources,
        command: std::env::args().collect(),
    };
    let mut writer = record::Writer::create(output, &header)?;
    let mut error: Option<record::RecordError> = None;
    let limit = snapshot_count(duration, cli.interval);
    collector.run(cli.interval, signalled(flag), |snap| {
        match writer.write_snapshot(&snap) {
            Ok(()) => limit.is_none_or(|l| snap.seq + 1 < l),
            Err(e) => {
                error = Some(e);
                false
            }
        }
    });
    let n = writer.lines().saturating_sub(1);
    writer.finish()?;
    if let Some(e) = error {
        return Err(e.into());
    }
    eprintln!("llctop: wrote {n} snapshots to {}", output.display());
    Ok(())
}

fn live(
    cli: &Cli,
    root: KernelRoot,
    topo: Topology,
    duration: Option<Duration>,
) -> Result<(), Error> {
    let flag = stop_flag()?;
    println!("{}", topo.summary());
    let mut collector = Collector::new(topo.clone(), sources(cli, &root, &topo)?);
    let mut first = true;
    let limit = snapshot_count(duration, cli.interval);
    collector.run(cli.interval, signalled(flag), |snap| {
        if first {
            for s in &snap.sources {
                if let Some(r) = &s.reason {
                    println!("  {} {:?}: {}", s.name, s.state, r);
                }
            }
            first = false;
        }
        println!("{}", summary_line(&snap));
        limit.is_none_or(|l| snap.seq + 1 < l)
    });
    Ok(())
}

/// One line per tick: busy overall and per LLC, migrations by distance, top process.
fn summary_line(s: &Snapshot) -> String {
    let pct = |x: Option<f64>| x.map_or("  -".into(), |b| format!("{:3.0}", b * 100.0));
    let llcs: Vec<String> = s.llcs.iter().take(16).map(|g| pct(g.busy)).collect();
    let mut line = format!(
        "#{:<4} busy {}% [llc {}]",
        s.seq,
        pct(s.system.busy).trim(),
        llcs.join(" ")
    );
    if s.llcs.len() > 16 {
        line.push_str(" …");
    }
    if let Some(m) = &s.migrations {
        let parts: Vec<String> = Distance::ALL
            .iter()
            .map(|&d| format!("{} {}", d.label(), m.by_distance.get(d)))
            .collect();
        line.push_str(&format!(
            " | mig{} {}",
            if m.precision == llctop::snapshot::Precision::Sampled {
                "~"
            } else {
                ""
            },
            parts.join(" ")
        ));
    }
    if let Some(c) = s.system.ctx_switches {
        line.push_str(&format!(" | cs {c}"));
    }
    if let Some(top) = s.processes.as_ref().and_then(|t| t.rows.first()) {
        let interval = s.time.interval_ns.max(1) as f64;
        line.push_str(&format!(
            " | top {}({}) {:.0}%",
            top.comm,
            top.pid,
            100.0 * top.cpu_time_ns as f64 / interval
        ));
        if let (Some(p), Some(h)) = (top.preferred_llc, top.preferred_hit) {
            line.push_str(&format!(" pref llc{p} hit {:.0}%", h * 100.0));
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("0.25"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn snapshot_counts_cover_the_duration() {
        let s = Duration::from_secs;
        assert_eq!(snapshot_count(Some(s(5)), s(1)), Some(5));
        assert_eq!(
            snapshot_count(Some(Duration::from_millis(2500)), s(1)),
            Some(3)
        );
        assert_eq!(
            snapshot_count(Some(Duration::from_millis(100)), s(1)),
            Some(1)
        );
        assert_eq!(snapshot_count(None, s(1)), None);
    }

    #[test]
    fn summary_line_marks_sampled_migrations() {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/topology/epyc-7702p"
        );
        let t = topology::discover(&KernelRoot::new(fixture)).unwrap();
        let mut snap = llctop::collect::empty_snapshot(&t);
        snap.migrations = Some(llctop::snapshot::Migrations {
            llc_matrix: vec![vec![0; 16]; 16],
            ..Default::default()
        });
        llctop::collect::aggregate(&t, &mut snap);
        let line = summary_line(&snap);
        assert!(line.contains("mig~ smt 0 llc 0 xllc 0 xnode 0"), "{line}");
        assert!(
            line.contains("busy -% [llc "),
            "no busy value is shown as -, not 0: {line}"
        );
    }
}

//! The command line: every subcommand and option of `llctop` (clap), parsed into the
//! library's own option types. main.rs dispatches on it; tests and docs read it too.

use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand};

use crate::knobs::cli::KnobsCommand;
use crate::parse::{parse_duration, parse_interval};
use crate::run::{Changes, Options};
use crate::source;

/// The exit codes, the same for every command (README "Knobs"; the man page's EXIT CODES).
pub const EXIT_CODES: &str = "Exit codes (every command): 0 ok; 1 another error; 2 usage; 3 unknown knob or profile; \
4 invalid value; 5 not writable (lockdown, no interface, --read-only); 6 the kernel refused a \
write or a read failed, or a knob could not be restored at a run's end; 7 the value read back \
differs; 8 journal error; 9 another llctop is changing that knob; 128 + N stopped by signal N \
(Ctrl-C 130, SIGTERM 143) after restoring its knobs; `trace -- CMD` exits with CMD's status. \
A reader that goes away (`llctop … | head`) ends a command quietly with 0.";

#[derive(Parser, Debug)]
#[command(
    name = "llctop",
    version,
    about = "Scheduler cache and NUMA behaviour, live: per-LLC occupancy, migrations by distance, preferred-LLC hits",
    after_long_help = EXIT_CODES
)]
pub struct Cli {
    /// Root under which /sys and /proc are read (a fixture tree in tests).
    #[arg(long, global = true, default_value = "/", value_name = "DIR")]
    pub sysroot: PathBuf,

    /// Time between snapshots (e.g. 1s, 500ms; 10ms to 1h).
    #[arg(long, global = true, default_value = "1s", value_parser = parse_interval)]
    pub interval: Duration,

    /// Where the data comes from. `auto` picks the best source that works here.
    #[arg(long, global = true, value_enum, default_value_t = source::Kind::Auto)]
    pub source: source::Kind,

    /// Process rows kept per snapshot (the busiest).
    #[arg(long, global = true, default_value_t = 64)]
    pub top: usize,

    /// Count which process wakes which, and which thread of a process another of it (the
    /// BPF source; a hash update per wakeup one user thread makes of another, so off
    /// unless asked for).
    #[arg(long, global = true)]
    pub wakeups: bool,

    /// Never write to the kernel (knob changes are refused).
    #[arg(long, global = true)]
    pub read_only: bool,

    /// Leave knob changes in place on exit (they stay journaled: `llctop knobs restore`
    /// puts the originals back later).
    #[arg(long, global = true)]
    pub keep_changes: bool,

    /// Mount resctrl at /sys/fs/resctrl for the run when it is not mounted (journaled;
    /// unmounted at the end if no one else's group is on it).
    #[arg(long, global = true)]
    pub resctrl_mount: bool,

    /// Monitor the L3 occupancy and memory bandwidth of the N busiest processes, each in
    /// a resctrl group of llctop's own (mon_groups/llctop-PID, removed at the end).
    #[arg(long, global = true, default_value_t = 0, value_name = "N",
          value_parser = clap::value_parser!(u16).range(0..=4096))]
    pub cache_top: u16,

    /// Monitor this process's L3 occupancy and memory bandwidth likewise (repeatable).
    #[arg(long, global = true, value_name = "PID")]
    pub cache_pid: Vec<u32>,

    /// The knob journal (default: $LLCTOP_JOURNAL if set and not empty, else
    /// /run/llctop/journal.json as root, else $XDG_STATE_HOME/llctop/journal.json).
    #[arg(long, global = true, value_name = "FILE")]
    pub journal: Option<PathBuf>,

    /// TUI colour theme: dark, light, high-contrast, colorblind, or one of
    /// $XDG_CONFIG_HOME/llctop/themes/*.toml (NO_COLOR turns colour off).
    #[arg(long, global = true, default_value = "dark", value_name = "NAME")]
    pub theme: String,

    /// The TUI view shown first.
    #[arg(long, global = true, value_enum, default_value_t = crate::tui::app::ViewId::Overview)]
    pub view: crate::tui::app::ViewId,

    /// The config file giving defaults for --interval, --theme, --view, --top, --source
    /// and --wakeups (default: $XDG_CONFIG_HOME/llctop/config.toml; the command line wins).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Key rebindings from the config file's `[keys]` table (not an option).
    #[arg(skip)]
    pub keys: std::collections::BTreeMap<String, Vec<String>>,

    /// Schedulers from the config file's `[schedulers]` table (not an option).
    #[arg(skip)]
    pub schedulers: Vec<crate::knobs::scheduler::Binary>,
    /// The config file's `[mcp]` table (checked by `llctop mcp`).
    #[arg(skip)]
    pub mcp: crate::mcp::config::Section,
    /// The config file's `[flight_recorder]` table (`llctop serve`'s recorder).
    #[arg(skip)]
    pub flight_recorder: crate::flight::Section,
    /// The config file read, if one was.
    #[arg(skip)]
    pub config_file: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// How the TUI looks and answers: theme, first view, key rebindings.
    pub fn look(&self) -> crate::tui::launch::Look {
        crate::tui::launch::Look {
            theme: self.theme.clone(),
            view: self.view,
            keys: self.keys.clone(),
        }
    }

    /// The options every run shares.
    pub fn options(&self) -> Options {
        Options {
            interval: self.interval,
            source: self.source,
            top: self.top,
            wakeups: self.wakeups,
            read_only: self.read_only,
            keep_changes: self.keep_changes,
            schedulers: self.schedulers.clone(),
            resctrl: source::resctrl::Options {
                mount: self.resctrl_mount,
                plan: source::resctrl::own::Plan {
                    top: usize::from(self.cache_top),
                    pids: self.cache_pid.clone(),
                },
            },
            journal: self.journal.clone().or_else(|| {
                // Read here, not by clap: an empty value is unset, not an error.
                std::env::var_os("LLCTOP_JOURNAL")
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            }),
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
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
        /// Stop after this long, in wall time (default: until Ctrl-C, SIGTERM, SIGHUP,
        /// SIGQUIT).
        #[arg(long, value_parser = parse_duration)]
        duration: Option<Duration>,
        #[command(flatten)]
        changes: Changes,
    },
    /// A Perfetto trace of every context switch, waking, migration (with its distance
    /// and cause) and placement, with llctop's counters per node, LLC and CPU, knob
    /// changes and findings (open it in ui.perfetto.dev; docs/timeline.md).
    Trace {
        #[command(flatten)]
        plan: crate::trace::live::Plan,
        #[command(flatten)]
        changes: Changes,
    },
    /// A recording in another format: `--perfetto` writes a Perfetto trace of its
    /// counters, migrations, placements, knob changes, markers, findings and A/B windows;
    /// `--parquet` writes its tables as Parquet files for DuckDB, Spark, Trino or
    /// ClickHouse (OUTPUT/TABLE/HOST-START.parquet; docs/fleet-data.md).
    Export {
        /// The recording.
        file: PathBuf,
        /// Write a Perfetto trace (the default).
        #[arg(long, conflicts_with = "parquet")]
        perfetto: bool,
        /// Write Parquet tables into the directory OUTPUT (made if missing; recordings of
        /// many hosts may share it).
        #[arg(long)]
        parquet: bool,
        /// Output file (a directory with --parquet).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Counter tracks per CPU too.
        #[arg(long, conflicts_with = "parquet")]
        cpu_counters: bool,
    },
    /// Summarise a recording.
    Report {
        file: PathBuf,
        /// For a recording made by `llctop ab`: the A windows against the B windows (the
        /// verdict table, recomputed from the file).
        #[arg(long)]
        compare: bool,
        /// With --compare: the verdict as JSON.
        #[arg(long, requires = "compare")]
        json: bool,
        /// Write a self-contained HTML page with charts (inline SVG, nothing fetched)
        /// instead of the text.
        #[arg(long, value_name = "OUT.html", conflicts_with = "json")]
        html: Option<PathBuf>,
    },
    /// Two recordings side by side (e.g. before and after a kernel upgrade): knob
    /// differences first, then per-LLC, per-node, per-domain-level figures with their
    /// change and each recording's interval-to-interval noise.
    Diff {
        a: PathBuf,
        b: PathBuf,
        /// Write a self-contained HTML page (the figures and each recording's busy
        /// heatmap; with --fleet, the verdict and each host's value) instead of the text.
        #[arg(long, value_name = "OUT.html", conflicts_with = "json")]
        html: Option<PathBuf>,
        /// Canary A/B across hosts: A and B are each a directory of recordings (or one
        /// recording) or of `export --parquet` output (its fleet_windows), one or more per
        /// host; per metric each host's median is one value,
        /// the two groups of hosts compared (rank-sum test, bootstrap interval, p adjusted
        /// across metrics by Holm's method). Files that are no recording, hosts too short
        /// and hosts without a metric are dropped and named.
        #[arg(long)]
        fleet: bool,
        /// With --fleet: the verdict as JSON (hosts' summaries included).
        #[arg(long, requires = "fleet")]
        json: bool,
    },
    /// A/B experiment: flip a knob between two values in ABBA-ordered windows, discard a
    /// warm-up after each flip, and say per metric whether B differs from A beyond the
    /// window-to-window noise. The knob is restored at the end (and on Ctrl-C/SIGTERM).
    Ab(crate::run::ab::Plan),
    /// The terminal UI (the default without a subcommand when stdout is a terminal).
    Tui {
        #[command(flatten)]
        changes: Changes,
    },
    /// Open a recording in the TUI: the same views, with pause, seek and speed.
    Replay { file: PathBuf },
    /// Serve the figures to Prometheus: /metrics (OpenMetrics or the classic text
    /// format) and /healthz, read-only, until SIGTERM; with --flight-recorder DIR, keep
    /// the last minutes on disk and dump them on SIGUSR1, POST /flight-recorder/dump or a
    /// WARNING finding.
    Serve {
        /// Address to listen on; not a loopback one only with --allow-remote.
        #[arg(long, default_value = "127.0.0.1:9464", value_name = "ADDR:PORT")]
        listen: std::net::SocketAddr,
        /// Allow listening on an address other machines can reach.
        #[arg(long)]
        allow_remote: bool,
        /// Per-process series for the N busiest processes of each snapshot (pid and comm
        /// labels; 0: none). Opt-in: each process is a series, so cardinality grows with N.
        #[arg(long, default_value_t = 0, value_name = "N")]
        process_series: usize,
        #[command(flatten)]
        flight: crate::flight::Plan,
    },
    /// Serve agents over the Model Context Protocol (stdio, or HTTP with --listen): the live machine, recordings
    /// and, with --allow-writes, guarded knob experiments (docs/agents.md).
    Mcp {
        /// Let the `ab` tool write kernel knobs — knobs only: journaled, restored and read
        /// back after each experiment and when the client goes away. A client runs no
        /// program of its choosing: `ab`'s command is one the config's [mcp.commands]
        /// names, run as [mcp] user (never root). Over HTTP it needs --token-file.
        #[arg(long)]
        allow_writes: bool,
        /// HTTP: a file holding the bearer token every request must carry (root's, mode
        /// 0600; or [mcp] token_file).
        #[arg(long, value_name = "FILE", requires = "listen")]
        token_file: Option<PathBuf>,
        /// Where the `record` and `ab` tools write recordings (default: the state
        /// directory's mcp/, /var/lib/llctop/mcp as root).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Serve MCP's streamable HTTP transport at http://ADDR:PORT/mcp instead of stdio
        /// (port 0: any free one, printed); not a loopback address only with
        /// --allow-remote. Runs until SIGTERM.
        #[arg(long, value_name = "ADDR:PORT")]
        listen: Option<std::net::SocketAddr>,
        /// Allow --listen on an address other machines can reach (then any Host header
        /// is taken: guard the port).
        #[arg(long, requires = "listen")]
        allow_remote: bool,
    },
    /// Print the key table (Markdown), generated from the TUI's keymap.
    Keys,
    /// The config file: `--print` shows the settings in effect and where each came from.
    Config {
        /// Print the settings (TOML, ready to save as the config file).
        #[arg(long)]
        print: bool,
    },
    /// Print shell completions (e.g. `llctop completions bash >
    /// /etc/bash_completion.d/llctop`), generated from these definitions.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page llctop(1) (roff: `llctop man | man -l -`), or with --out-dir
    /// write it and one page per subcommand (llctop-record.1, …) there.
    Man {
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
    /// Print one summary line per interval (the default without a subcommand when
    /// stdout is not a terminal).
    Live {
        /// Stop after this long.
        #[arg(long, value_parser = parse_duration)]
        duration: Option<Duration>,
        #[command(flatten)]
        changes: Changes,
    },
    /// Kernel policy knobs: list, read, change (journaled), restore.
    Knobs {
        #[command(subcommand)]
        command: KnobsCommand,
    },
}

/// Shell completions for `shell`, generated from the clap definitions.
pub fn completions(shell: clap_complete::Shell, out: &mut dyn std::io::Write) {
    clap_complete::generate(shell, &mut Cli::command(), "llctop", out);
}

/// The man page llctop(1) (roff) from the clap definitions: options, subcommands,
/// version.
pub fn man_page(out: &mut dyn std::io::Write) -> std::io::Result<()> {
    clap_mangen::Man::new(Cli::command()).render(out)
}

/// llctop.1 and one page per subcommand (llctop-record.1, …) written into `dir`.
pub fn man_pages(dir: &std::path::Path) -> std::io::Result<()> {
    fn generate(cmd: clap::Command, dir: &std::path::Path) -> std::io::Result<()> {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
            generate(sub, dir)?;
        }
        let man = clap_mangen::Man::new(cmd);
        let mut page = Vec::new();
        man.render(&mut page)?;
        // Through the one output path: no link followed, a page there kept as `.old`.
        crate::output::write_generated(&dir.join(man.get_filename()), &page).map(|_| ())
    }
    std::fs::create_dir_all(dir)?;
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    generate(cmd, dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}

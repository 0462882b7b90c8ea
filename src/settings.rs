//! The operator's config file: `$XDG_CONFIG_HOME/llctop/config.toml` (or `--config
//! FILE`) gives defaults for the global options — interval, theme, view, top, source,
//! wakeups —
//! read and checked with the command line's own parsers, and a `[keys]` table that
//! rebinds the TUI's actions (checked against the keymap), and a `[schedulers]` table that
//! adds the `scheduler` knob's own choices (a sched_ext scheduler with its arguments), and
//! `llctop mcp`'s `[mcp]` table (mcp/config.rs: what a client may run, the server's
//! bounds), and `llctop serve`'s `[flight_recorder]` table (flight/mod.rs). The command
//! line wins over the
//! file, the file over the built-in defaults. `llctop config --print` shows the result
//! and where each value came from, as TOML that can be saved as the file.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use clap::parser::{ArgMatches, ValueSource};
use serde::Deserialize;

use crate::cli::Cli;
use crate::parse::parse_interval;
use crate::source;
use crate::tui::app::ViewId;

/// What the file may set. Unknown keys are refused (a typo is not silently ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    pub interval: Option<String>,
    pub theme: Option<String>,
    pub view: Option<String>,
    pub top: Option<usize>,
    pub source: Option<String>,
    /// Count which process wakes which (`--wakeups`).
    pub wakeups: Option<bool>,
    /// Key rebindings: action name → keys (`quit = ["q", "F10"]`).
    pub keys: Option<std::collections::BTreeMap<String, Vec<String>>>,
    /// The `scheduler` knob's own choices: name → `[program, args…]`
    /// (`lowlat = ["scx_bpfland", "-m", "performance"]`).
    pub schedulers: Option<std::collections::BTreeMap<String, Vec<String>>>,
    /// `llctop mcp`'s allow-list and bounds (mcp/config.rs), checked when it runs.
    pub mcp: Option<crate::mcp::config::Section>,
    /// `llctop serve`'s flight recorder (flight/mod.rs), the options' defaults.
    pub flight_recorder: Option<crate::flight::Section>,
}

/// The options the file may set, in its order: (key, the clap argument id).
pub const KEYS: [&str; 6] = ["interval", "theme", "view", "top", "source", "wakeups"];

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    CommandLine,
    File(PathBuf),
    Default,
}

/// The config file's path: `explicit`, else the XDG one.
pub fn path(explicit: Option<&Path>) -> Option<PathBuf> {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| crate::config::config_dir("config.toml"))
}

/// Read `path`: a missing file is an empty one unless it was named explicitly; so is one
/// the user may not read at the default place (e.g. root's HOME after dropping
/// privileges), with a warning on stderr.
pub fn load(path: &Path, explicit: bool) -> Result<File, String> {
    let text = match crate::config::read_capped(path, crate::config::MAX_FILE) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            return Ok(File::default());
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && !explicit => {
            crate::say!(
                "llctop: {}: {e}; the config file is not read",
                path.display()
            );
            return Ok(File::default());
        }
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    toml::from_str(&text).map_err(|e| {
        let msg = e.message().to_string();
        format!("{}: {}", path.display(), msg.trim())
    })
}

/// Fill `cli`'s global options from the config file where the command line did not give
/// them; returns each option's origin in [`KEYS`] order. Errors name the file and key.
pub fn apply(cli: &mut Cli, matches: &ArgMatches) -> Result<Vec<(&'static str, Origin)>, String> {
    let explicit = cli.config.is_some();
    let file_path = path(cli.config.as_deref());
    let file = match &file_path {
        Some(p) => load(p, explicit)?,
        None => File::default(),
    };
    let given = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
    // An error in one of the file's tables, naming the file.
    let in_file = |e: String| {
        format!(
            "{}: {e}",
            file_path
                .as_deref()
                .map_or("config".into(), |p| p.display().to_string())
        )
    };
    if let Some(k) = &file.keys {
        crate::tui::keymap::with_overrides(k).map_err(|e| in_file(e.to_string()))?;
        cli.keys = k.clone();
    }
    if let Some(m) = &file.mcp {
        cli.mcp = m.clone();
    }
    if let Some(f) = &file.flight_recorder {
        cli.flight_recorder = f.clone();
    }
    cli.config_file = file_path.clone().filter(|p| p.exists());
    if let Some(t) = &file.schedulers {
        let path_var = std::env::var("PATH").unwrap_or_default();
        cli.schedulers = crate::knobs::scheduler::configured(t, &path_var).map_err(in_file)?;
    }
    let mut origins = Vec::new();
    for key in KEYS {
        let origin = if given(key) {
            Origin::CommandLine
        } else if set_from(cli, &file, key)? {
            Origin::File(file_path.clone().unwrap_or_default())
        } else {
            Origin::Default
        };
        origins.push((key, origin));
    }
    Ok(origins)
}

/// Set `key` on `cli` from `file` if the file has it (true), checked as the command line
/// would check it.
fn set_from(cli: &mut Cli, file: &File, key: &str) -> Result<bool, String> {
    let bad = |e: String| format!("config {key}: {e}");
    match key {
        "interval" => match &file.interval {
            Some(v) => cli.interval = parse_interval(v).map_err(bad)?,
            None => return Ok(false),
        },
        "theme" => match &file.theme {
            Some(v) => cli.theme = v.clone(),
            None => return Ok(false),
        },
        "view" => match &file.view {
            Some(v) => cli.view = ViewId::from_str(v, true).map_err(bad)?,
            None => return Ok(false),
        },
        "top" => match file.top {
            Some(v) => cli.top = v,
            None => return Ok(false),
        },
        "source" => match &file.source {
            Some(v) => cli.source = source::Kind::from_str(v, true).map_err(bad)?,
            None => return Ok(false),
        },
        "wakeups" => match file.wakeups {
            Some(v) => cli.wakeups = v,
            None => return Ok(false),
        },
        _ => return Ok(false),
    }
    Ok(true)
}

/// `llctop config --print`: the settings in effect as TOML, each with where it came from.
pub fn render(cli: &Cli, origins: &[(&'static str, Origin)]) -> String {
    let value = |key: &str| -> String {
        match key {
            "interval" => format!("{:?}", humantime::format_duration(cli.interval).to_string()),
            "theme" => format!("{:?}", cli.theme),
            "view" => format!("{:?}", name(cli.view)),
            "top" => cli.top.to_string(),
            "source" => format!("{:?}", name(cli.source)),
            "wakeups" => cli.wakeups.to_string(),
            _ => String::new(),
        }
    };
    let file = path(cli.config.as_deref()).map_or_else(
        || "(no config directory)".into(),
        |p| p.display().to_string(),
    );
    let mut s =
        format!("# llctop settings in effect: the command line, else {file}, else the defaults\n");
    for (key, origin) in origins {
        let from = match origin {
            Origin::CommandLine => "command line".to_string(),
            Origin::File(p) => p.display().to_string(),
            Origin::Default => "default".to_string(),
        };
        s.push_str(&format!("{key} = {}  # {from}\n", value(key)));
    }
    if !cli.schedulers.is_empty() {
        s.push_str("\n[schedulers]  # the scheduler knob's own choices, from the file\n");
        for b in &cli.schedulers {
            let mut cmd = vec![format!("{:?}", b.path.display().to_string())];
            cmd.extend(b.args.iter().map(|a| format!("{a:?}")));
            s.push_str(&format!("{} = [{}]\n", b.name, cmd.join(", ")));
        }
    }
    // The commands' own tables, as the file gave them (each checked by its command).
    for (table, note, text) in [
        (
            "mcp",
            "llctop mcp's allow-list and bounds, from the file",
            toml::to_string(&cli.mcp),
        ),
        (
            "flight_recorder",
            "llctop serve's flight recorder, from the file",
            toml::to_string(&cli.flight_recorder),
        ),
    ] {
        match text {
            Ok(t) if !t.trim().is_empty() => s.push_str(&format!(
                "\n[{table}]  # {note}\n{}",
                section_body(table, &t)
            )),
            Ok(_) => {}
            Err(e) => s.push_str(&format!("\n# [{table}]: cannot be shown: {e}\n")),
        }
    }
    if !cli.keys.is_empty() {
        s.push_str("\n[keys]  # rebound in the file; the rest as `llctop keys` lists\n");
        for (action, keys) in &cli.keys {
            let keys: Vec<String> = keys.iter().map(|k| format!("{k:?}")).collect();
            s.push_str(&format!("{action} = [{}]\n", keys.join(", ")));
        }
    }
    s
}

/// A table serialized on its own, its sub-tables (`[commands]`) named under the table
/// they belong to (`[mcp.commands]`).
fn section_body(table: &str, t: &str) -> String {
    t.lines()
        .map(|l| match l.strip_prefix('[') {
            Some(rest) if !l.starts_with("[[") => format!("[{table}.{rest}\n"),
            _ => format!("{l}\n"),
        })
        .collect()
}

fn name(v: impl ValueEnum) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, FromArgMatches};

    fn cli(args: &[&str], config: &str) -> Result<(Cli, String), String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let f = dir.path().join("config.toml");
        std::fs::write(&f, config).map_err(|e| e.to_string())?;
        let mut argv = vec!["llctop", "--config"];
        let fs = f.display().to_string();
        argv.push(&fs);
        argv.extend(args);
        let m = Cli::command()
            .try_get_matches_from(argv)
            .map_err(|e| e.to_string())?;
        let mut c = Cli::from_arg_matches(&m).map_err(|e| e.to_string())?;
        let o = apply(&mut c, &m)?;
        let text = render(&c, &o).replace(&fs, "FILE");
        Ok((c, text))
    }

    #[test]
    fn the_command_line_wins_then_the_file_then_the_default() {
        let (c, text) = cli(
            &["--interval", "2s"],
            "interval = \"5s\"\ntheme = \"light\"\nview = \"knobs\"\ntop = 10\n",
        )
        .unwrap();
        assert_eq!(c.interval, std::time::Duration::from_secs(2));
        assert_eq!(
            (c.theme.as_str(), c.view, c.top),
            ("light", ViewId::Knobs, 10)
        );
        assert_eq!(c.source, source::Kind::Auto);
        assert!(text.contains("interval = \"2s\"  # command line"), "{text}");
        assert!(text.contains("theme = \"light\"  # FILE"), "{text}");
        assert!(text.contains("view = \"knobs\"  # FILE"), "{text}");
        assert!(text.contains("source = \"auto\"  # default"), "{text}");
        // What --print prints is a config file that gives the same settings.
        let body: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
        let (again, _) = cli(&[], &body).unwrap();
        assert_eq!(
            (again.interval, again.theme, again.view, again.top),
            (c.interval, c.theme, c.view, c.top)
        );
    }

    #[test]
    fn a_keys_table_rebinds_and_round_trips() {
        let (c, text) = cli(&[], "top = 3\n[keys]\nmarker = [\"M\", \"F5\"]\n").unwrap();
        assert_eq!(c.keys["marker"], ["M", "F5"]);
        assert!(text.contains("marker = [\"M\", \"F5\"]"), "{text}");
        let body: String = text
            .lines()
            .skip(1)
            .map(|l| format!("{}\n", l.split("  #").next().unwrap_or(l)))
            .collect();
        let (again, _) = cli(&[], &body).unwrap();
        assert_eq!(again.keys, c.keys);
        let e = cli(&[], "[keys]\nmarker = [\"t\"]\n").err().unwrap();
        assert!(e.contains("t is bound to both"), "{e}");
    }

    #[test]
    fn a_schedulers_table_adds_choices_and_round_trips() {
        let (c, text) = cli(&[], "[schedulers]\nlowlat = [\"/bin/sh\", \"-c\", \"x\"]\n").unwrap();
        assert_eq!(c.schedulers.len(), 1);
        assert_eq!(
            (c.schedulers[0].name.as_str(), c.schedulers[0].args.len()),
            ("lowlat", 2)
        );
        assert!(
            text.contains("lowlat = [\"/bin/sh\", \"-c\", \"x\"]"),
            "{text}"
        );
        let e = cli(&[], "[schedulers]\neevdf = [\"/bin/sh\"]\n")
            .err()
            .unwrap();
        assert!(e.contains("config.toml: [schedulers] \"eevdf\""), "{e}");
        let e = cli(&[], "[schedulers]\nx = [\"scx_nowhere_at_all\"]\n")
            .err()
            .unwrap();
        assert!(e.contains("scx_nowhere_at_all is not on PATH"), "{e}");
    }

    #[test]
    fn a_flight_recorder_table_gives_serves_recorder_its_defaults() {
        let (c, _) = cli(
            &[],
            "[flight_recorder]\ndir = \"/var/lib/llctop/flight\"\nkeep = \"10m\"\n",
        )
        .unwrap();
        let s = crate::flight::Plan::default()
            .resolve(&c.flight_recorder)
            .unwrap()
            .unwrap();
        assert_eq!(s.dir, std::path::PathBuf::from("/var/lib/llctop/flight"));
        assert_eq!(s.keep, std::time::Duration::from_secs(600));
        let e = cli(&[], "[flight_recorder]\nkept = \"10m\"\n")
            .err()
            .unwrap();
        assert!(e.contains("kept"), "{e}");
    }

    #[test]
    fn config_print_shows_the_commands_tables_as_toml_the_file_takes_back() {
        let file = "[flight_recorder]\ndir = \"/var/lib/llctop/flight\"\nkeep = \"10m\"\n\
                    [mcp]\nuser = \"nobody\"\nmax_sessions = 8\n\
                    [mcp.commands]\nbench = [\"/usr/bin/true\", \"-x\"]\n";
        let (_, text) = cli(&[], file).unwrap();
        for want in [
            "[flight_recorder]",
            "dir = \"/var/lib/llctop/flight\"",
            "keep = \"10m\"",
            "[mcp]",
            "user = \"nobody\"",
            "max_sessions = 8",
            "[mcp.commands]",
        ] {
            assert!(text.contains(want), "{want}\n{text}");
        }
        // What it prints is a config file: read back, the same tables.
        let back: File = toml::from_str(&text).unwrap();
        let mcp = back.mcp.unwrap();
        assert_eq!(mcp.user.as_deref(), Some("nobody"));
        assert_eq!(mcp.commands.unwrap()["bench"], ["/usr/bin/true", "-x"]);
        assert_eq!(back.flight_recorder.unwrap().keep.as_deref(), Some("10m"));
        // Neither table in the file: neither printed.
        let (_, text) = cli(&[], "").unwrap();
        assert!(
            !text.contains("[mcp]") && !text.contains("[flight_recorder]"),
            "{text}"
        );
    }

    #[test]
    fn bad_values_and_unknown_keys_name_the_key() {
        let e = cli(&[], "interval = \"1ns\"\n").err().unwrap();
        assert!(e.contains("config interval:") && e.contains("10ms"), "{e}");
        let e = cli(&[], "source = \"ebpf\"\n").err().unwrap();
        assert!(e.contains("config source:"), "{e}");
        let e = cli(&[], "intervall = \"1s\"\n").err().unwrap();
        assert!(e.contains("unknown field `intervall`"), "{e}");
        let e = cli(&[], "top = \"many\"\n").err().unwrap();
        assert!(e.contains("config.toml"), "{e}");
    }
}

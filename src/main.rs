//! The `llctop` command: parse the command line and hand each subcommand to the library.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use llctop::cli::{Cli, Command};
use llctop::kroot::KernelRoot;
use llctop::run::{self, Changes, Error};
use llctop::text::{escape, guard};
use llctop::{knobs, record, topology, tui};

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    if let Some(Command::Knobs { command }) =
        cli.command.take_if(|c| matches!(c, Command::Knobs { .. }))
    {
        // The config file's schedulers are choices of the `scheduler` knob; a broken file
        // never keeps `knobs restore` from putting things back.
        if let Err(e) = llctop::settings::apply(&mut cli, &matches) {
            llctop::say!("llctop: {} (the config file is not used)", escape(&e));
        }
        let root = KernelRoot::new(&cli.sysroot);
        let topo = topology::discover(&root).ok();
        // One-shot commands keep their changes: the journal remembers the originals.
        let mut s = run::knob_session(&cli.options(), &root, topo.as_ref(), true);
        return ExitCode::from(knobs::cli::run(&mut s, command));
    }
    // Generated from the command line's definitions: no kernel, topology or theme needed.
    match &cli.command {
        Some(Command::Completions { shell }) => {
            // Rendered first, then written the one way (a reader that goes away is no error).
            let mut text = Vec::new();
            llctop::cli::completions(*shell, &mut text);
            llctop::stdout::write_bytes(&text);
            return ExitCode::SUCCESS;
        }
        Some(Command::Man { out_dir }) => {
            let res = match out_dir {
                Some(d) => llctop::cli::man_pages(d),
                None => {
                    let mut page = Vec::new();
                    llctop::cli::man_page(&mut page).map(|()| {
                        llctop::stdout::write_bytes(&page);
                    })
                }
            };
            return match res {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    llctop::say!("llctop: man: {}", escape(&e.to_string()));
                    ExitCode::FAILURE
                }
            };
        }
        _ => {}
    }
    // The config file fills what the command line left at its defaults.
    let origins = match llctop::settings::apply(&mut cli, &matches) {
        Ok(o) => o,
        Err(e) => {
            llctop::say!("llctop: {}", escape(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    if let Some(Command::Config { print }) = &cli.command {
        if *print {
            llctop::out!("{}", llctop::settings::render(&cli, &origins));
        } else {
            let path = llctop::settings::path(cli.config.as_deref());
            llctop::outln!(
                "{} (llctop config --print shows the settings in effect)",
                path.map_or_else(|| "no config directory".into(), |p| p.display().to_string())
            );
        }
        return ExitCode::SUCCESS;
    }
    let res = dispatch(cli);
    if let Err(e) = &res {
        llctop::say!("llctop: {}", escape(&e.to_string()));
    }
    if let Some(sig) = run::ended_by_signal() {
        llctop::say!("llctop: stopped by signal {sig}");
        return ExitCode::from(128u8.saturating_add(u8::try_from(sig).unwrap_or(0)));
    }
    ExitCode::from(run::exit_code(&res))
}

fn dispatch(mut cli: Cli) -> Result<(), Error> {
    // A theme name is checked whatever the command (a typo is not silently ignored).
    tui::launch::themes(&cli.theme)?;
    let root = KernelRoot::new(&cli.sysroot);
    let topo = topology::discover(&root)?;
    let opts = cli.options();
    match cli.command.take() {
        Some(Command::Topology { json: true }) => {
            llctop::outln!("{}", serde_json::to_string_pretty(&topo)?);
            Ok(())
        }
        Some(Command::Topology { json: false }) => {
            llctop::out!("{}", guard(&topology::render::tree(&topo)));
            Ok(())
        }
        Some(Command::Report {
            file,
            compare,
            json,
            html,
        }) => {
            if let Some(out) = &html {
                llctop::output::check(out, &[&file])?;
            }
            match (compare, html) {
                (true, Some(out)) => {
                    let rec = record::reader::open(&file)?;
                    record::html::write(&out, &[&file], &record::html::compare(&rec)?)?;
                }
                (true, None) => {
                    let rec = record::reader::open(&file)?;
                    llctop::out!("{}", guard(&record::report::compare(&rec, json)?));
                }
                (false, html) => {
                    // Read as a stream: no bound on the recording's length.
                    let stream = record::reader::Stream::open(&file, u64::MAX)?;
                    let sum = record::report::fold_stream(stream)?;
                    match html {
                        Some(out) => {
                            record::html::write(&out, &[&file], &record::html::report(&sum))?
                        }
                        None => {
                            llctop::out!("{}", guard(&sum.render()));
                        }
                    }
                }
            }
            Ok(())
        }
        Some(Command::Diff {
            a,
            b,
            fleet: true,
            json,
            html,
        }) => llctop::fleet::canary::command(&a, &b, json, html.as_deref()),
        Some(Command::Diff { a, b, html, .. }) => {
            if let Some(out) = &html {
                llctop::output::check(out, &[&a, &b])?;
            }
            let inputs = [a.clone(), b.clone()];
            let (a, b) = (record::reader::open(&a)?, record::reader::open(&b)?);
            match html {
                Some(out) => record::html::write(
                    &out,
                    &[&inputs[0], &inputs[1]],
                    &record::html::diff(
                        &a,
                        &b,
                        (
                            &inputs[0].display().to_string(),
                            &inputs[1].display().to_string(),
                        ),
                    ),
                )?,
                None => {
                    llctop::out!("{}", guard(&record::diff::render(&a, &b)));
                }
            }
            Ok(())
        }
        Some(Command::Ab(plan)) => run::ab::run(&opts, &root, &topo, &plan),
        Some(Command::Record {
            output,
            duration,
            changes,
        }) => run::record::run(&opts, &root, &topo, &output, duration, &changes),
        Some(Command::Trace { plan, changes }) => {
            llctop::trace::live::run(&opts, &root, &topo, &plan, &changes)
        }
        Some(Command::Export {
            file,
            perfetto: _,
            parquet: true,
            output,
            cpu_counters: _,
        }) => llctop::fleet::export::command(&file, &output),
        Some(Command::Export {
            file,
            perfetto: _,
            parquet: false,
            output,
            cpu_counters,
        }) => llctop::trace::export::run(&file, &output, cpu_counters),
        Some(Command::Live { duration, changes }) => {
            run::live::run(&opts, &root, &topo, duration, &changes)
        }
        Some(Command::Tui { changes }) => {
            tui::launch::live(&opts, &cli.look(), &root, &topo, &changes)
        }
        Some(Command::Replay { file }) => tui::launch::replay(&cli.look(), &file),
        Some(Command::Serve {
            listen,
            allow_remote,
            process_series,
            flight,
        }) => {
            // Read-only whatever the command line says: serve reports knobs, never writes.
            let opts = llctop::run::Options {
                read_only: true,
                ..opts
            };
            let flight = flight.resolve(&cli.flight_recorder)?;
            let plan = llctop::serve::Plan {
                listen,
                allow_remote,
                process_series,
                flight,
            };
            llctop::serve::run(&opts, &root, &topo, &plan)
        }
        Some(Command::Mcp {
            allow_writes,
            token_file,
            dir,
            listen,
            allow_remote,
        }) => {
            let config = cli.mcp.check(cli.config_file.as_deref())?;
            let token = match token_file.as_ref().or(config.token_file.as_ref()) {
                Some(f) if listen.is_some() => Some(llctop::mcp::config::read_token(f)?),
                _ => None,
            };
            // The server's own collector never writes; `ab` runs `llctop ab` with the
            // global options given before `mcp`.
            let global: Vec<String> = std::env::args()
                .skip(1)
                .take_while(|a| a != "mcp")
                .collect();
            let opts = llctop::run::Options {
                read_only: true,
                ..opts
            };
            let m = llctop::mcp::McpOptions {
                allow_writes,
                dir: dir.unwrap_or_else(llctop::mcp::default_dir),
                global,
                listen: listen.map(|a| (a, allow_remote)),
                config,
                token,
            };
            llctop::mcp::run(&opts, &root, &topo, m)
        }
        Some(Command::Keys) => {
            llctop::out!("{}", tui::keymap::markdown_table());
            Ok(())
        }
        None if tui::launch::need_terminal().is_ok() => {
            tui::launch::live(&opts, &cli.look(), &root, &topo, &Changes::default())
        }
        None => run::live::run(&opts, &root, &topo, None, &Changes::default()),
        Some(
            Command::Knobs { .. }
            | Command::Completions { .. }
            | Command::Man { .. }
            | Command::Config { .. },
        ) => Err("handled before the pipeline".into()),
    }
}

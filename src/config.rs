//! llctop's own files: where they live (the XDG base directories) and how named TOML
//! files are loaded — the shipped ones built in, the operator's in a directory, an
//! operator's file replacing a shipped one of the same name (profiles, themes).

use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The most llctop reads of one of its own files (config, profile, theme): a larger one
/// is refused rather than read without end (a symlink to /dev/zero, a runaway file).
pub const MAX_FILE: u64 = 1 << 20;

/// Open flags for llctop's own state files (journal, locks, owner files): a symlink at
/// the name is refused (ELOOP), a FIFO does not block the open.
pub const NO_FOLLOW: i32 = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;

/// `f` if it is a regular file.
fn regular(f: std::fs::File, path: &Path) -> std::io::Result<std::fs::File> {
    if f.metadata()?.file_type().is_file() {
        Ok(f)
    } else {
        Err(std::io::Error::other(format!(
            "{}: not a regular file",
            path.display()
        )))
    }
}

/// ELOOP from O_NOFOLLOW, said the way the operator sees it.
fn name_loop(e: std::io::Error, path: &Path) -> std::io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        std::io::Error::other(format!(
            "{} is a symbolic link: refused (llctop's state files are never followed)",
            path.display()
        ))
    } else {
        e
    }
}

fn read_regular(path: &Path, limit: u64, flags: i32) -> std::io::Result<String> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| name_loop(e, path))?;
    let mut text = String::new();
    regular(f, path)?
        .take(limit + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(std::io::Error::other(format!(
            "{}: larger than {} KiB: not read",
            path.display(),
            limit / 1024
        )));
    }
    Ok(text)
}

/// Read `path` as text, at most `limit` bytes, and only from a regular file: a FIFO, a
/// device or a directory is refused (opened without blocking, so a FIFO with no writer
/// cannot hang the read). A symlink to a regular file is read (a config kept elsewhere).
pub fn read_capped(path: &Path, limit: u64) -> std::io::Result<String> {
    read_regular(
        path,
        limit,
        libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC,
    )
}

/// [`read_capped`] for llctop's own state files: a symlink at the name is refused.
pub fn read_own(path: &Path, limit: u64) -> std::io::Result<String> {
    read_regular(path, limit, NO_FOLLOW)
}

/// Open (creating, mode 0600) a lock file: never through a symlink, only a regular file.
pub fn open_lock_file(path: &Path) -> std::io::Result<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(NO_FOLLOW)
        .open(path)
        .map_err(|e| name_loop(e, path))?;
    regular(f, path)
}

/// Each environment variable warned about once per process.
static WARNED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

fn warn_once(var: &'static str, why: &str) {
    if let Ok(mut w) = WARNED.lock()
        && !w.contains(&var)
    {
        w.push(var);
        crate::say!(
            "llctop: ${var} {why}: ignored (the XDG base directory spec asks for an absolute directory)",
        );
    }
}

/// `$XDG_<VAR>` if set to an absolute path that is not something other than a directory
/// (it may not exist yet), else `$HOME/<fallback>`. A relative value or one naming a
/// file is ignored with a warning on stderr, as the XDG spec says.
fn xdg(var: &'static str, fallback: &str) -> Option<PathBuf> {
    let given = std::env::var_os(var)
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .filter(|p| {
            if !p.is_absolute() {
                warn_once(
                    var,
                    &format!(
                        "is relative ({})",
                        crate::text::escape(&p.display().to_string())
                    ),
                );
                return false;
            }
            match std::fs::metadata(p) {
                Ok(m) if !m.is_dir() => {
                    warn_once(
                        var,
                        &format!(
                            "is not a directory ({})",
                            crate::text::escape(&p.display().to_string())
                        ),
                    );
                    false
                }
                _ => true,
            }
        });
    given.or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(fallback)))
}

/// `$XDG_CONFIG_HOME/llctop/<sub>` (or `~/.config/llctop/<sub>`).
pub fn config_dir(sub: &str) -> Option<PathBuf> {
    xdg("XDG_CONFIG_HOME", ".config").map(|c| c.join("llctop").join(sub))
}

/// `$XDG_STATE_HOME/llctop` (or `~/.local/state/llctop`).
pub fn state_dir() -> Option<PathBuf> {
    xdg("XDG_STATE_HOME", ".local/state").map(|s| s.join("llctop"))
}

/// What a parser is told about one file: its name (the file stem, or the shipped name)
/// and where it came from (`shipped` or the path).
pub struct Source<'a> {
    pub name: &'a str,
    pub origin: &'a str,
    pub text: &'a str,
}

/// The shipped items, then the `*.toml` files of `dir` in path order; an item whose name
/// (`name_of`) is already there replaces it in place. Files that cannot be read or
/// parsed are returned as errors (`origin: message`) beside what did load.
pub fn load_named<T>(
    shipped: &[(&str, &str)],
    dir: Option<&Path>,
    parse: impl Fn(Source) -> Result<T, String>,
    name_of: impl Fn(&T) -> &str,
) -> (Vec<T>, Vec<String>) {
    let mut out: Vec<T> = Vec::new();
    let mut errors = Vec::new();
    let add =
        |item: T, out: &mut Vec<T>| match out.iter().position(|o| name_of(o) == name_of(&item)) {
            Some(i) => out[i] = item,
            None => out.push(item),
        };
    for (name, text) in shipped {
        match parse(Source {
            name,
            origin: "shipped",
            text,
        }) {
            Ok(t) => add(t, &mut out),
            Err(e) => errors.push(format!("shipped {name}: {e}")),
        }
    }
    let Some(rd) = dir.and_then(|d| std::fs::read_dir(d).ok()) else {
        return (out, errors);
    };
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for p in files {
        let Some(name) = p.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let origin = p.display().to_string();
        let parsed = read_capped(&p, MAX_FILE)
            .map_err(|e| e.to_string())
            .and_then(|text| {
                parse(Source {
                    name,
                    origin: &origin,
                    text: &text,
                })
            });
        match parsed {
            Ok(t) => add(t, &mut out),
            Err(e) => errors.push(format!("{origin}: {e}")),
        }
    }
    (out, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_capped_and_only_of_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("a.toml");
        std::fs::write(&small, "x = 1\n").unwrap();
        assert_eq!(read_capped(&small, 16).unwrap(), "x = 1\n");
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b'#'; 17]).unwrap();
        assert!(
            read_capped(&big, 16)
                .unwrap_err()
                .to_string()
                .contains("larger")
        );
        // A symlink to a device is followed, and refused as not a regular file.
        let zero = dir.path().join("zero.toml");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = read_capped(&zero, MAX_FILE).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        // A FIFO with no writer: refused at once, not waited on.
        let fifo = dir.path().join("fifo.toml");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(read_capped(&fifo, MAX_FILE).is_err());
        assert!(read_capped(dir.path(), MAX_FILE).is_err(), "a directory");
        // A symlink to a regular file is read.
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&small, &link).unwrap();
        assert_eq!(read_capped(&link, 16).unwrap(), "x = 1\n");
    }

    #[test]
    fn user_files_replace_shipped_ones_by_name_and_errors_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.toml"), "B2").unwrap();
        std::fs::write(dir.path().join("c.toml"), "C").unwrap();
        std::fs::write(dir.path().join("bad.toml"), "").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let parse = |s: Source| {
            if s.text.is_empty() {
                Err("empty".to_string())
            } else {
                Ok((s.name.to_string(), s.text.to_string(), s.origin.to_string()))
            }
        };
        let shipped = [("a", "A"), ("b", "B")];
        let (all, errors) = load_named(&shipped, Some(dir.path()), parse, |t| t.0.as_str());
        let got: Vec<(&str, &str)> = all.iter().map(|t| (t.0.as_str(), t.1.as_str())).collect();
        assert_eq!(got, [("a", "A"), ("b", "B2"), ("c", "C")]);
        assert_eq!(all[0].2, "shipped");
        assert!(all[1].2.ends_with("b.toml"));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].ends_with("bad.toml: empty"), "{errors:?}");
        let (none, _) = load_named(&shipped, Some(&dir.path().join("absent")), parse, |t| {
            t.0.as_str()
        });
        assert_eq!(none.len(), 2);
    }
}

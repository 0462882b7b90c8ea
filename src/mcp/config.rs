//! `llctop mcp`'s part of the config file (`[mcp]`): what the operator lets a client do
//! beyond reading, and the server's bounds. A client never names a program: the `ab`
//! tool's `command` is the *name* of an entry of `[mcp.commands]` — a program path and fixed
//! arguments, never a shell — run as `[mcp] user` (never root), stopped past `timeout`,
//! its output bounded. As root these are taken only from a config file root owns and no
//! one else may write (and only for programs alike): a file another user can change
//! would hand them root's choice of program.
//!
//! ```toml
//! [mcp]
//! user = "nobody"                      # who runs the commands (never root)
//! timeout = "10m"                      # each run of a command, at most
//! token_file = "/etc/llctop/mcp.token" # HTTP: a bearer token (0600, root's), required with --allow-writes
//! allowed_origins = []                 # HTTP: browser origins allowed (none: requests with Origin are refused)
//! recordings = ["/srv/llctop"]         # directories report/diff/compare may read, besides the server's own
//! max_sessions = 64                    # HTTP sessions at once (per client: a quarter)
//! max_dir_bytes = "1GiB"               # the server's directory of recordings and traces, oldest removed past it
//!
//! [mcp.commands]
//! stream = ["/usr/bin/stress-ng", "--stream", "2", "--timeout", "10"]
//! ```

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::parse::parse_size;

use serde::Deserialize;

use crate::child::RunAs;

/// The `[mcp]` table as the file has it.
#[derive(Debug, Default, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_origins: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recordings: Option<Vec<PathBuf>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_sessions: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_dir_bytes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commands: Option<BTreeMap<String, Vec<String>>>,
}

/// One allow-listed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    pub program: PathBuf,
    pub args: Vec<String>,
}

/// The `[mcp]` settings, checked.
#[derive(Debug, Clone)]
pub struct Config {
    pub commands: BTreeMap<String, Allowed>,
    /// Who runs them (resolved when there are commands).
    pub user: Option<RunAs>,
    pub timeout: Duration,
    pub token_file: Option<PathBuf>,
    pub allowed_origins: Vec<String>,
    pub recordings: Vec<PathBuf>,
    pub max_sessions: usize,
    pub max_dir_bytes: u64,
}

/// A command run at most this long unless `[mcp] timeout` says otherwise.
pub const TIMEOUT: Duration = Duration::from_secs(600);
pub const MAX_SESSIONS: usize = 64;
pub const MAX_DIR_BYTES: u64 = 1 << 30;
/// Programs that are shells: the allow-list names the program itself.
const SHELLS: [&str; 10] = [
    "sh", "bash", "dash", "zsh", "fish", "ksh", "csh", "tcsh", "busybox", "env",
];

impl Default for Config {
    fn default() -> Self {
        Config {
            commands: BTreeMap::new(),
            user: None,
            timeout: TIMEOUT,
            token_file: None,
            allowed_origins: Vec::new(),
            recordings: Vec::new(),
            max_sessions: MAX_SESSIONS,
            max_dir_bytes: MAX_DIR_BYTES,
        }
    }
}

/// Whether `m` (a file's metadata) can only be changed by root — or, when llctop does not
/// run as root, by its own user.
fn owned_safely(m: &std::fs::Metadata, euid: u32) -> bool {
    m.uid() == euid && m.mode() & 0o022 == 0
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

impl Section {
    /// Check the section read from `file` (None: no config file). Errors name the key.
    pub fn check(&self, file: Option<&Path>) -> Result<Config, String> {
        let mut c = Config::default();
        if let Some(t) = &self.timeout {
            c.timeout =
                crate::parse::parse_duration(t).map_err(|e| format!("[mcp] timeout: {e}"))?;
        }
        if let Some(n) = self.max_sessions {
            if n == 0 || n > 4096 {
                return Err(format!("[mcp] max_sessions: 1–4096, not {n}"));
            }
            c.max_sessions = n;
        }
        if let Some(s) = &self.max_dir_bytes {
            c.max_dir_bytes = parse_size(s).map_err(|e| format!("[mcp] max_dir_bytes: {e}"))?;
        }
        c.token_file.clone_from(&self.token_file);
        c.allowed_origins = self.allowed_origins.clone().unwrap_or_default();
        c.recordings = self.recordings.clone().unwrap_or_default();
        let Some(cmds) = self.commands.as_ref().filter(|m| !m.is_empty()) else {
            return Ok(c);
        };
        // Commands run programs: only from a file no one but the operator can change.
        let euid = euid();
        let Some(file) = file else {
            return Err("[mcp.commands]: only from a config file".into());
        };
        let trusted = std::fs::symlink_metadata(file)
            .is_ok_and(|m| m.file_type().is_file() && owned_safely(&m, euid))
            && file
                .parent()
                .and_then(|d| std::fs::metadata(d).ok())
                .is_some_and(|m| owned_safely(&m, euid) || m.mode() & 0o1000 != 0);
        if !trusted {
            return Err(format!(
                "[mcp.commands]: {} must be a file of uid {euid}'s that no one else may write (chown, chmod go-w), in a directory alike: its commands would run on another user's say",
                file.display()
            ));
        }
        let user = self.user.as_deref().ok_or(
            "[mcp.commands] needs [mcp] user = \"NAME\": the unprivileged user that runs them (never root)",
        )?;
        c.user = Some(RunAs::lookup(user).map_err(|e| format!("[mcp] user: {e}"))?);
        for (name, argv) in cmds {
            if name.is_empty()
                || name.len() > 64
                || !name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch))
            {
                return Err(format!(
                    "[mcp.commands] {name:?}: a name of letters, digits, '-', '_', '.' (at most 64)"
                ));
            }
            let (prog, args) = argv
                .split_first()
                .ok_or_else(|| format!("[mcp.commands] {name}: an empty command"))?;
            let program = PathBuf::from(prog);
            if !program.is_absolute() {
                return Err(format!(
                    "[mcp.commands] {name}: {prog:?} is not an absolute path (name the program itself)"
                ));
            }
            let base = program
                .file_name()
                .map(|b| b.to_string_lossy().into_owned())
                .unwrap_or_default();
            if SHELLS.contains(&base.as_str()) {
                return Err(format!(
                    "[mcp.commands] {name}: {prog} is a shell or a launcher: name the program and its arguments, never a shell"
                ));
            }
            let m = std::fs::metadata(&program)
                .map_err(|e| format!("[mcp.commands] {name}: {prog}: {e}"))?;
            if !m.is_file() || m.mode() & 0o111 == 0 {
                return Err(format!(
                    "[mcp.commands] {name}: {prog} is not an executable file"
                ));
            }
            if !(owned_safely(&m, euid) || m.uid() == 0 && m.mode() & 0o022 == 0) {
                return Err(format!(
                    "[mcp.commands] {name}: {prog} may be changed by another user (owner uid {}, mode {:o}): not run",
                    m.uid(),
                    m.mode() & 0o7777
                ));
            }
            c.commands.insert(
                name.clone(),
                Allowed {
                    program,
                    args: args.to_vec(),
                },
            );
        }
        Ok(c)
    }
}

/// The bearer token in `path`: a file of this user's that no one else may read or write,
/// of 16–4096 printable characters.
pub fn read_token(path: &Path) -> Result<String, String> {
    let name = path.display();
    let m = std::fs::symlink_metadata(path).map_err(|e| format!("token file {name}: {e}"))?;
    if !m.file_type().is_file() {
        return Err(format!("token file {name}: not a regular file"));
    }
    if m.uid() != euid() || m.mode() & 0o077 != 0 {
        return Err(format!(
            "token file {name}: must be uid {}'s with mode 0600 (chmod 600), not uid {} mode {:o}",
            euid(),
            m.uid(),
            m.mode() & 0o777
        ));
    }
    let text =
        crate::config::read_capped(path, 4096).map_err(|e| format!("token file {name}: {e}"))?;
    let t = text.trim();
    if t.len() < 16 || !t.chars().all(|c| c.is_ascii_graphic()) {
        return Err(format!(
            "token file {name}: 16 to 4096 printable characters without spaces (e.g. `head -c 32 /dev/urandom | base64 > {name}`)"
        ));
    }
    Ok(t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    fn file_with(mode: u32) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let f = dir.path().join("config.toml");
        std::fs::write(&f, "").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
        (dir, f)
    }

    fn section(cmds: &[(&str, &[&str])], user: Option<&str>) -> Section {
        Section {
            user: user.map(str::to_string),
            commands: Some(
                cmds.iter()
                    .map(|(n, a)| (n.to_string(), a.iter().map(|s| s.to_string()).collect()))
                    .collect(),
            ),
            ..Section::default()
        }
    }

    #[test]
    fn commands_are_programs_from_a_file_only_the_operator_writes() {
        let user = RunAs::lookup("nobody").ok().map(|_| "nobody");
        let Some(user) = user else {
            crate::say!("skipped: no user nobody here");
            return;
        };
        let (_d, good) = file_with(0o644);
        let ok = section(&[("t", &["/bin/true", "x"])], Some(user))
            .check(Some(&good))
            .unwrap();
        assert_eq!(ok.commands["t"].args, ["x"]);
        assert_ne!(ok.user.unwrap().uid, 0);
        // Another user may write the file: refused.
        let (_d2, loose) = file_with(0o666);
        let e = section(&[("t", &["/bin/true"])], Some(user))
            .check(Some(&loose))
            .unwrap_err();
        assert!(e.contains("no one else may write"), "{e}");
        for (argv, why) in [
            (&["/bin/sh", "-c", "id"][..], "never a shell"),
            (&["true"][..], "absolute path"),
            (&["/etc/passwd"][..], "not an executable"),
            (&[][..], "empty"),
        ] {
            let e = section(&[("t", argv)], Some(user))
                .check(Some(&good))
                .unwrap_err();
            assert!(e.contains(why), "{argv:?}: {e}");
        }
        let e = section(&[("t", &["/bin/true"])], None)
            .check(Some(&good))
            .unwrap_err();
        assert!(e.contains("needs [mcp] user"), "{e}");
        let e = section(&[("t", &["/bin/true"])], Some("root"))
            .check(Some(&good))
            .unwrap_err();
        assert!(e.contains("never run as root"), "{e}");
        let e = section(&[("a b", &["/bin/true"])], Some(user))
            .check(Some(&good))
            .unwrap_err();
        assert!(e.contains("a name of letters"), "{e}");
    }

    #[test]
    fn tokens_come_from_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("token");
        std::fs::write(&t, "0123456789abcdef0123\n").unwrap();
        std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read_token(&t).unwrap_err().contains("0600"));
        std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_token(&t).unwrap(), "0123456789abcdef0123");
        std::fs::write(&t, "short").unwrap();
        assert!(read_token(&t).unwrap_err().contains("16 to 4096"));
        let l = dir.path().join("link");
        std::os::unix::fs::symlink(&t, &l).unwrap();
        assert!(read_token(&l).unwrap_err().contains("not a regular file"));
    }
}

//! llctop's own files: where they live (the XDG base directories) and how named TOML
//! files are loaded — the shipped ones built in, the operator's in a directory, an
//! operator's file replacing a shipped one of the same name (profiles, themes).

use std::path::{Path, PathBuf};

/// `$XDG_<VAR>` if set and non-empty, else `$HOME/<fallback>`.
fn xdg(var: &str, fallback: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(fallback)))
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
        let parsed = std::fs::read_to_string(&p)
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

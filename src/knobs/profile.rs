//! Knob profiles: named bundles of settings in TOML, applied and reverted as one step.
//!
//! Shipped profiles live in `profiles/*.toml` (embedded in the binary); the operator's own
//! in `$XDG_CONFIG_HOME/llctop/profiles/` (or `~/.config/llctop/profiles/`) override a
//! shipped one of the same name. A profile file:
//!
//! ```toml
//! description = "what it is for"
//! reference = "the thread or commit"
//! [set]        # every entry must apply, or nothing is written
//! relax_domain_level = "llc"
//! [optional]   # applied where the knob exists and is writable, else reported
//! "feature.NI_RANDOM" = "on"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::registry::Registry;

const SHIPPED: &[(&str, &str)] = &[
    (
        "newidle-in-llc",
        include_str!("../../profiles/newidle-in-llc.toml"),
    ),
    (
        "work-conserving",
        include_str!("../../profiles/work-conserving.toml"),
    ),
    (
        "numa-balancing-off",
        include_str!("../../profiles/numa-balancing-off.toml"),
    ),
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    description: String,
    #[serde(default)]
    reference: Option<String>,
    #[serde(default)]
    set: BTreeMap<String, String>,
    #[serde(default)]
    optional: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Profile {
    pub name: String,
    pub description: String,
    pub reference: Option<String>,
    pub set: Vec<(String, String)>,
    pub optional: Vec<(String, String)>,
    /// `shipped`, or the file it came from.
    pub origin: String,
}

impl Profile {
    /// Parse profile `name` from `text`; `origin` (`shipped` or the file) is kept in the
    /// profile. Errors say what is wrong, not where (the loader adds the origin).
    pub fn parse(name: &str, text: &str, origin: &str) -> Result<Profile, String> {
        let f: ProfileFile = toml::from_str(text).map_err(|e| e.to_string())?;
        if f.set.is_empty() && f.optional.is_empty() {
            return Err(format!("profile {name} sets nothing"));
        }
        Ok(Profile {
            name: name.to_string(),
            description: f
                .description
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            reference: f.reference,
            set: f.set.into_iter().collect(),
            optional: f.optional.into_iter().collect(),
            origin: origin.to_string(),
        })
    }

    /// The settings to apply on this kernel, and the optional ones skipped (with why).
    pub fn plan(&self, reg: &mut Registry) -> (Vec<(String, String)>, Vec<String>) {
        let mut apply = self.set.clone();
        let mut skipped = Vec::new();
        for (id, v) in &self.optional {
            match reg.resolve(id) {
                Ok(k) if k.access.is_writable() => apply.push((id.clone(), v.clone())),
                Ok(k) => skipped.push(format!("{id}: {}", access_reason(&k.access))),
                Err(e) => skipped.push(e),
            }
        }
        (apply, skipped)
    }
}

fn access_reason(a: &super::Access) -> String {
    match a {
        super::Access::Writable => "writable".into(),
        super::Access::ReadOnly(r) => r.clone(),
    }
}

/// The operator's profile directory.
pub fn user_dir() -> Option<PathBuf> {
    crate::config::config_dir("profiles")
}

/// Shipped profiles plus those in `dir` (which win by name), sorted by name. Unreadable
/// or malformed user files are returned as errors next to the profiles that did load.
pub fn load_all(dir: Option<&Path>) -> (Vec<Profile>, Vec<String>) {
    let (mut all, errors) = crate::config::load_named(
        SHIPPED,
        dir,
        |s| Profile::parse(s.name, s.text, s.origin),
        |p| p.name.as_str(),
    );
    all.sort_by(|a, b| a.name.cmp(&b.name));
    (all, errors)
}

pub fn find(name: &str, dir: Option<&Path>) -> Result<Profile, String> {
    let (all, errors) = load_all(dir);
    let names: Vec<String> = all.iter().map(|p| p.name.clone()).collect();
    all.into_iter().find(|p| p.name == name).ok_or_else(|| {
        let mut m = format!(
            "no profile {name:?} (llctop knobs profiles){}",
            crate::suggest::did_you_mean(name, names.iter().map(String::as_str))
        );
        for e in errors {
            m.push_str(&format!("; {e}"));
        }
        m
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_profiles_parse_and_say_what_they_are_for() {
        let (all, errors) = load_all(None);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(all.len(), SHIPPED.len());
        for p in &all {
            assert!(p.description.len() > 80, "{}: describe it", p.name);
            assert!(!p.set.is_empty(), "{}", p.name);
        }
        let n = all.iter().find(|p| p.name == "newidle-in-llc").unwrap();
        assert_eq!(n.set, vec![("relax_domain_level".into(), "llc".into())]);
    }

    #[test]
    fn user_profiles_override_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("newidle-in-llc.toml"),
            "description = \"mine\"\n[set]\nrelax_domain_level = \"2\"\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("bad.toml"), "description = 1\n").unwrap();
        std::fs::write(
            dir.path().join("typo.toml"),
            "description = \"x\"\n[sett]\na = \"1\"\n",
        )
        .unwrap();
        let (all, errors) = load_all(Some(dir.path()));
        let n = all.iter().find(|p| p.name == "newidle-in-llc").unwrap();
        assert_eq!(n.description, "mine");
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors.iter().all(|e| e.contains(".toml")), "{errors:?}");
        assert!(find("nope", Some(dir.path())).is_err());
    }
}

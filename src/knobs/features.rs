//! Sched features: reading `/sys/kernel/debug/sched/features` (or the pre-5.13
//! `/sys/kernel/debug/sched_features`), and, when kernel lockdown refuses to open it
//! (EPERM even for reading, kernel-interfaces §0), decoding the same on/off states from the
//! readable `/sys/kernel/debug/sched/debug` (`.sysctl_sched_features : <decimal mask>`)
//! with the bit order taken from the `__SCHED_FEAT_<NAME>` enumerators in the kernel's BTF
//! (`/sys/kernel/btf/vmlinux`). Nothing here knows a feature name in advance.

use std::path::Path;

use crate::kroot::KernelRoot;

/// The features file of this kernel generation (v5.13+), and the older one.
pub const FEATURES: &str = "/sys/kernel/debug/sched/features";
pub const FEATURES_OLD: &str = "/sys/kernel/debug/sched_features";
pub const SCHED_DEBUG: &str = "/sys/kernel/debug/sched/debug";
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";
const BTF_PREFIX: &str = "__SCHED_FEAT_";

/// Every feature of a features-file line, in kernel order, with its state.
pub fn parse_list(text: &str) -> Vec<(String, bool)> {
    text.split_whitespace()
        .map(|tok| match tok.strip_prefix("NO_") {
            Some(name) => (name.to_string(), false),
            None => (tok.to_string(), true),
        })
        .collect()
}

/// The state of one feature in a features-file line (`None` if it is not listed).
pub fn state_in(text: &str, name: &str) -> Option<bool> {
    parse_list(text)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, on)| on)
}

/// `.sysctl_sched_features` from the text of `sched/debug`.
pub fn sysctl_features(debug_text: &str) -> Option<u64> {
    debug_text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == ".sysctl_sched_features")
            .then(|| v.trim().parse().ok())
            .flatten()
    })
}

/// Feature names in bit order, from the `__SCHED_FEAT_*` enumerators of a BTF file
/// (raw BTF as in /sys/kernel/btf/vmlinux, or an ELF with .BTF). `__SCHED_FEAT_NR` ends
/// the list and is not a feature.
pub fn btf_feature_names(path: &Path) -> Result<Vec<String>, String> {
    use libbpf_rs::btf::Btf;
    use libbpf_rs::btf::types::Enum;
    let btf = Btf::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut found: Vec<(i64, String)> = Vec::new();
    let mut nr: Option<i64> = None;
    for en in btf.type_by_kind::<Enum>() {
        for m in en.iter() {
            let Some(name) = m.name.and_then(|n| n.to_str()) else {
                continue;
            };
            let Some(feat) = name.strip_prefix(BTF_PREFIX) else {
                continue;
            };
            if feat == "NR" {
                nr = Some(m.value);
            } else {
                found.push((m.value, feat.to_string()));
            }
        }
    }
    if found.is_empty() {
        return Err(format!(
            "{}: no {BTF_PREFIX}* enumerators (kernel built without them in BTF)",
            path.display()
        ));
    }
    found.sort();
    // The enum must be dense 0..NR; anything else means we cannot trust the bit order.
    let dense = found.iter().enumerate().all(|(i, (v, _))| *v == i as i64);
    if !dense || nr.is_some_and(|n| n != found.len() as i64) {
        return Err(format!(
            "{}: {BTF_PREFIX}* enumerators are not a dense 0..NR sequence",
            path.display()
        ));
    }
    Ok(found.into_iter().map(|(_, n)| n).collect())
}

/// Decode a `sysctl_sched_features` mask with names in bit order. A mask with bits
/// beyond the names means the names do not belong to this kernel: no values then.
pub fn decode_mask(mask: u64, names: &[String]) -> Result<Vec<(String, bool)>, String> {
    if names.len() < 64 && mask >> names.len() != 0 {
        return Err(format!(
            "sysctl_sched_features {mask} has bits beyond the {} BTF feature names",
            names.len()
        ));
    }
    Ok(names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), mask & (1u64 << i) != 0))
        .collect())
}

/// How the feature list was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeatureRead {
    /// Read from the features file (writable when it could be opened for writing).
    File {
        path: &'static str,
        features: Vec<(String, bool)>,
    },
    /// Decoded from `sched/debug` + BTF because opening the features file failed with
    /// `refused` (e.g. "EPERM: kernel lockdown").
    Decoded {
        path: &'static str,
        features: Vec<(String, bool)>,
        refused: String,
    },
    /// No list at all, with the reason.
    Unavailable { reason: String },
}

/// Read the features the best way this kernel allows.
pub fn read(root: &KernelRoot) -> FeatureRead {
    let path = if root.exists(FEATURES) {
        FEATURES
    } else if root.exists(FEATURES_OLD) {
        FEATURES_OLD
    } else {
        return FeatureRead::Unavailable {
            reason: super::access::debugfs_absence(root, FEATURES),
        };
    };
    let refused = match root.read(path) {
        Ok(text) => {
            return FeatureRead::File {
                path,
                features: parse_list(&text),
            };
        }
        Err(e) => super::access::refusal(&e),
    };
    let mask = match root.read(SCHED_DEBUG) {
        Ok(t) => match sysctl_features(&t) {
            Some(m) => m,
            None => {
                return FeatureRead::Unavailable {
                    reason: format!("{refused}; {SCHED_DEBUG} has no .sysctl_sched_features"),
                };
            }
        },
        Err(e) => {
            return FeatureRead::Unavailable {
                reason: format!("{refused}; fallback {e}"),
            };
        }
    };
    let decoded = btf_feature_names(&root.path(VMLINUX_BTF)).and_then(|n| decode_mask(mask, &n));
    match decoded {
        Ok(features) => FeatureRead::Decoded {
            path,
            features,
            refused,
        },
        Err(e) => FeatureRead::Unavailable {
            reason: format!("{refused}; cannot decode sysctl_sched_features: {e}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_features_line() {
        let l = parse_list("PLACE_LAG NO_NEXT_BUDDY TTWU_QUEUE \n");
        assert_eq!(
            l,
            vec![
                ("PLACE_LAG".into(), true),
                ("NEXT_BUDDY".into(), false),
                ("TTWU_QUEUE".into(), true)
            ]
        );
        assert_eq!(state_in("A NO_B", "B"), Some(false));
        assert_eq!(state_in("A NO_B", "C"), None);
    }

    #[test]
    fn finds_the_sysctl_mask() {
        let t = "Sched Debug Version: v0.11, 6.18.44 #1\nsysctl_sched\n  .sysctl_sched_base_slice                 : 1.400000\n  .sysctl_sched_features                   : 99674079\n";
        assert_eq!(sysctl_features(t), Some(99674079));
        assert_eq!(sysctl_features("nothing"), None);
    }

    #[test]
    fn decodes_a_mask_and_refuses_foreign_bits() {
        let names: Vec<String> = ["A", "B", "C"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            decode_mask(0b101, &names).unwrap(),
            vec![("A".into(), true), ("B".into(), false), ("C".into(), true)]
        );
        assert!(decode_mask(0b1000, &names).is_err());
    }
}

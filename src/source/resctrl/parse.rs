//! resctrl's text, parsed (pure functions, tested on the kernel's own examples from
//! Documentation/filesystems/resctrl.rst): a counter file's value, the names of the
//! domain directories, `info/L3_MON`'s lists, and the CPU flags that say whether the
//! hardware monitors at all.

use crate::snapshot::Unread;

/// One read of a counter file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    Bytes(u64),
    /// What the kernel wrote instead of a number (`Unavailable`, `Unassigned`, `Error`),
    /// or a file that held neither.
    Not(Unread),
}

/// A counter file's text: a decimal byte count, or one of the kernel's words.
pub fn value(text: &[u8]) -> Value {
    let t = text.trim_ascii();
    match t {
        b"Unavailable" => Value::Not(Unread::Unavailable),
        b"Unassigned" => Value::Not(Unread::Unassigned),
        b"Error" => Value::Not(Unread::Error),
        _ => std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .map_or(Value::Not(Unread::Unreadable), Value::Bytes),
    }
}

/// The cache id of `mon_L3_XX` (two digits or more, a cache id, not a position).
pub fn l3_dir(name: &str) -> Option<u32> {
    name.strip_prefix("mon_L3_")?.parse().ok()
}

/// The node of `mon_sub_L3_YY` (sub-NUMA clustering).
pub fn sub_l3_dir(name: &str) -> Option<u32> {
    name.strip_prefix("mon_sub_L3_")?.parse().ok()
}

/// `info/L3_MON/num_mbm_cntrs` and `available_mbm_cntrs`: `0=32;1=32` (domain=count).
/// Entries that are not `N=M` are skipped.
pub fn domain_counts(text: &str) -> Vec<(u32, u32)> {
    text.trim()
        .split(';')
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.trim().parse().ok()?, v.trim().parse().ok()?))
        })
        .collect()
}

/// `info/L3_MON/mbm_assign_mode`: the mode in brackets is the enabled one
/// (`[mbm_event]\ndefault`).
pub fn assign_mode(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let l = l.trim();
        Some(l.strip_prefix('[')?.strip_suffix(']')?.to_string())
    })
}

/// The events `info/L3_MON/mon_features` lists (one per line).
pub fn features(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// The monitoring flags of /proc/cpuinfo's first `flags` line (Intel RDT and AMD QoS
/// use the same names): empty when the CPU monitors nothing.
pub fn monitoring_flags(cpuinfo: &str) -> Vec<&'static str> {
    const FLAGS: [&str; 4] = ["cqm_llc", "cqm_occup_llc", "cqm_mbm_total", "cqm_mbm_local"];
    let Some(line) = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags") && l.contains(':'))
    else {
        return Vec::new();
    };
    let have: Vec<&str> = line
        .split_once(':')
        .map_or("", |(_, v)| v)
        .split_whitespace()
        .collect();
    FLAGS.into_iter().filter(|f| have.contains(f)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_numbers_or_the_kernels_words() {
        assert_eq!(value(b"16234000\n"), Value::Bytes(16234000));
        assert_eq!(value(b"0"), Value::Bytes(0));
        assert_eq!(value(b"Unavailable\n"), Value::Not(Unread::Unavailable));
        assert_eq!(value(b"Unassigned\n"), Value::Not(Unread::Unassigned));
        assert_eq!(value(b"Error\n"), Value::Not(Unread::Error));
        for bad in [
            &b""[..],
            b"-5",
            b"12 34",
            b"0x10",
            b"\xff\xfe",
            b"99999999999999999999999",
        ] {
            assert_eq!(value(bad), Value::Not(Unread::Unreadable), "{bad:?}");
        }
        assert_eq!(
            value(b"18446744073709551615"),
            Value::Bytes(u64::MAX),
            "huge but a number: the delta rules judge it"
        );
    }

    #[test]
    fn domain_directories_are_named_by_cache_id_and_node() {
        assert_eq!(l3_dir("mon_L3_00"), Some(0));
        assert_eq!(l3_dir("mon_L3_56"), Some(56));
        assert_eq!(l3_dir("mon_L3_123"), Some(123));
        assert_eq!(l3_dir("mon_L3_x"), None);
        assert_eq!(l3_dir("mon_sub_L3_01"), None);
        assert_eq!(sub_l3_dir("mon_sub_L3_03"), Some(3));
        assert_eq!(sub_l3_dir("mon_L3_03"), None);
    }

    #[test]
    fn info_lists_as_the_documentation_shows_them() {
        assert_eq!(domain_counts("0=32;1=32\n"), vec![(0, 32), (1, 32)]);
        assert_eq!(domain_counts("0=30;1=32"), vec![(0, 30), (1, 32)]);
        assert_eq!(domain_counts("0=x;;3=4;="), vec![(3, 4)]);
        assert_eq!(
            assign_mode("[mbm_event]\ndefault\n").as_deref(),
            Some("mbm_event")
        );
        assert_eq!(
            assign_mode("mbm_event\n[default]\n").as_deref(),
            Some("default")
        );
        assert_eq!(assign_mode("default\n"), None);
        assert_eq!(
            features("llc_occupancy\nmbm_total_bytes\nmbm_total_bytes_config\nmbm_local_bytes\n"),
            vec![
                "llc_occupancy",
                "mbm_total_bytes",
                "mbm_total_bytes_config",
                "mbm_local_bytes"
            ]
        );
    }

    #[test]
    fn cpu_flags_say_whether_the_hardware_monitors() {
        let intel = "processor\t: 0\nflags\t\t: fpu vme cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local rdt_a\n";
        assert_eq!(monitoring_flags(intel).len(), 4);
        let vm = "processor\t: 0\nflags\t\t: fpu vme sse2 hypervisor\n";
        assert!(monitoring_flags(vm).is_empty());
        assert!(monitoring_flags("").is_empty());
    }
}

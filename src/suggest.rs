//! "Did you mean …?": the closest names to a mistyped one, for knob ids and profile names.
//! Similarity is strsim's normalised Damerau–Levenshtein over lower-cased names (a
//! transposition or a missing letter still matches), plus names that contain the typed
//! one whole (a short name for a long id).

/// Names this close (0–1) or closer are offered.
const MIN_SIMILARITY: f64 = 0.7;
/// At most this many names are offered.
const MAX_SUGGESTIONS: usize = 3;

/// The candidates closest to `typed`, best first, at most three.
pub fn closest<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let t = typed.to_lowercase();
    if t.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let l = c.to_lowercase();
            let s = strsim::normalized_damerau_levenshtein(&t, &l);
            let contains = t.len() >= 3 && l.contains(&t);
            (s >= MIN_SIMILARITY || contains).then_some((if contains { s.max(0.9) } else { s }, c))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, c)| c.to_string())
        .collect()
}

/// `; did you mean A, B or C?` for an error message, or nothing when no name is close.
pub fn did_you_mean<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let c = closest(typed, candidates);
    match c.as_slice() {
        [] => String::new(),
        [one] => format!("; did you mean {one}?"),
        [init @ .., last] => format!("; did you mean {} or {last}?", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDS: &[&str] = &[
        "feature.TTWU_QUEUE",
        "feature.WA_IDLE",
        "feature.WA_WEIGHT",
        "numa_balancing",
        "numa_balancing.scan_delay_ms",
        "relax_domain_level",
    ];

    #[test]
    fn a_typo_finds_the_knob() {
        assert_eq!(
            closest("feature.TTWU_QEUE", IDS.iter().copied()),
            vec!["feature.TTWU_QUEUE"]
        );
        assert_eq!(
            closest("relax_domain_levle", IDS.iter().copied()),
            vec!["relax_domain_level"]
        );
        assert_eq!(
            did_you_mean("numa_balancin", IDS.iter().copied()),
            "; did you mean numa_balancing or numa_balancing.scan_delay_ms?"
        );
    }

    #[test]
    fn a_short_name_finds_the_ids_that_hold_it() {
        let c = closest("wa_", IDS.iter().copied());
        assert_eq!(c, vec!["feature.WA_IDLE", "feature.WA_WEIGHT"]);
    }

    #[test]
    fn nothing_close_is_nothing_offered() {
        assert!(closest("xyzzy", IDS.iter().copied()).is_empty());
        assert_eq!(did_you_mean("", IDS.iter().copied()), "");
    }
}

//! The statistics of an A/B experiment, over one value per window and arm: the medians,
//! B relative to A with a bootstrap confidence interval, and a two-sided Wilcoxon
//! rank-sum test by permutation (exact when the splits are few, else a fixed number of
//! random splits; past [`LARGE`] windows per value, their large-sample forms). Every random draw comes from a generator seeded by the data's size, so
//! the same windows give the same verdict live, in `llctop report --compare` and in tests.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Significance level of the permutation test.
pub const ALPHA: f64 = 0.05;
/// Splits enumerated exactly up to this many; beyond, this many random ones.
pub const MAX_SPLITS: u64 = 20_000;
/// Bootstrap resamples for the interval.
pub const RESAMPLES: usize = 2_000;
/// Windows per value from which the large-sample forms replace resampling: the rank-sum
/// test's normal approximation (with tie and continuity corrections) and an interval from
/// the medians' McKean–Schrader standard errors. Both are standard well before 30 per
/// group, and they keep a verdict over many windows linear in their number.
pub const LARGE: usize = 30;
/// The 97.5 % point of the standard normal.
const Z975: f64 = 1.959_963_984_540_054;
const SEED: u64 = 0x11c7_0b5e;

/// The comparison of one metric.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Comparison {
    pub median_a: f64,
    pub median_b: f64,
    /// median(B) / median(A) − 1 (None when A's median is 0).
    pub change: Option<f64>,
    /// 95 % bootstrap percentile interval of `change`.
    pub ci: Option<(f64, f64)>,
    /// Two-sided rank-sum permutation p-value.
    pub p: f64,
    pub n_a: usize,
    pub n_b: usize,
}

impl Comparison {
    /// B differs from A: the permutation test at [`ALPHA`] and, where a relative change
    /// exists, its bootstrap interval excluding 0 — both must agree.
    pub fn significant(&self) -> bool {
        let ci_agrees = match (self.change, self.ci) {
            (Some(_), Some((lo, hi))) => lo > 0.0 || hi < 0.0,
            (Some(_), None) => false,
            (None, _) => true,
        };
        self.p < ALPHA && ci_agrees
    }
}

pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    Some(if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    })
}

fn rel(a: f64, b: f64) -> Option<f64> {
    (a != 0.0).then(|| b / a - 1.0)
}

/// n choose k, saturating.
pub fn choose(n: u64, k: u64) -> u64 {
    let k = k.min(n - k);
    let mut r: u64 = 1;
    for i in 0..k {
        r = r.saturating_mul(n - i) / (i + 1);
    }
    r
}

/// Visit every k-subset of 0..n (as a membership mask) in lexicographic order.
fn for_each_subset(n: usize, k: usize, mut f: impl FnMut(&[bool])) {
    let mut idx: Vec<usize> = (0..k).collect();
    let mut mask = vec![false; n];
    loop {
        mask.iter_mut().for_each(|m| *m = false);
        for &i in &idx {
            mask[i] = true;
        }
        f(&mask);
        // next combination
        let mut i = k;
        loop {
            if i == 0 {
                return;
            }
            i -= 1;
            if idx[i] != i + n - k {
                break;
            }
            if i == 0 && idx[0] == n - k {
                return;
            }
        }
        idx[i] += 1;
        for j in i + 1..k {
            idx[j] = idx[j - 1] + 1;
        }
    }
}

/// Ranks of `v` (1-based, ties get their average rank).
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = avg;
        }
        i = j + 1;
    }
    r
}

/// Two-sided p-value of the Wilcoxon rank-sum (Mann–Whitney) test, by permutation: the
/// share of the splits of the pooled windows into groups of these sizes whose rank sum
/// for B lies at least as far from its expectation as the observed one. Exact when the
/// splits are few, ties handled by average ranks.
pub fn permutation_p(a: &[f64], b: &[f64]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 1.0;
    }
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let (n, k) = (pooled.len(), b.len());
    let r = ranks(&pooled);
    let expected = k as f64 * (n as f64 + 1.0) / 2.0;
    let stat = |mask: &[bool]| -> f64 {
        let sum: f64 = r
            .iter()
            .zip(mask)
            .filter(|(_, m)| **m)
            .map(|(x, _)| x)
            .sum();
        (sum - expected).abs()
    };
    let observed = (r[a.len()..].iter().sum::<f64>() - expected).abs();
    let tol = 1e-9;
    let (mut extreme, mut total) = (0u64, 0u64);
    if choose(n as u64, k as u64) <= MAX_SPLITS {
        for_each_subset(n, k, |mask| {
            total += 1;
            if stat(mask) >= observed - tol {
                extreme += 1;
            }
        });
    } else {
        let mut rng = ChaCha8Rng::seed_from_u64(SEED ^ n as u64);
        let mut order: Vec<usize> = (0..n).collect();
        let mut mask = vec![false; n];
        // The observed split counts once (the estimate is never 0).
        extreme = 1;
        total = 1;
        for _ in 0..MAX_SPLITS {
            order.shuffle(&mut rng);
            mask.iter_mut().for_each(|m| *m = false);
            for &i in &order[..k] {
                mask[i] = true;
            }
            total += 1;
            if stat(&mask) >= observed - tol {
                extreme += 1;
            }
        }
    }
    extreme as f64 / total as f64
}

/// 95 % bootstrap percentile interval of median(B)/median(A) − 1.
pub fn bootstrap_ci(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(SEED ^ ((a.len() as u64) << 32 | b.len() as u64));
    let mut draws = Vec::with_capacity(RESAMPLES);
    let mut ra = vec![0.0; a.len()];
    let mut rb = vec![0.0; b.len()];
    for _ in 0..RESAMPLES {
        for x in ra.iter_mut() {
            *x = a[rng.gen_range(0..a.len())];
        }
        for x in rb.iter_mut() {
            *x = b[rng.gen_range(0..b.len())];
        }
        if let Some(r) = rel(median(&ra)?, median(&rb)?) {
            draws.push(r);
        }
    }
    if draws.len() < RESAMPLES / 2 {
        return None;
    }
    draws.sort_by(f64::total_cmp);
    let at = |q: f64| draws[((draws.len() - 1) as f64 * q).round() as usize];
    Some((at(0.025), at(0.975)))
}

/// Two-sided p-value of the rank-sum test from its normal approximation: the rank sum
/// of B against its mean, with the variance corrected for ties and a continuity
/// correction of ½.
pub fn normal_p(a: &[f64], b: &[f64]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 1.0;
    }
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let r = ranks(&pooled);
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    let n = n1 + n2;
    let w: f64 = r[a.len()..].iter().sum();
    let mean = n2 * (n + 1.0) / 2.0;
    let mut sorted = pooled;
    sorted.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let j = sorted[i..].partition_point(|x| *x == sorted[i]) + i;
        let t = (j - i) as f64;
        ties += t * t * t - t;
        i = j;
    }
    let var = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((w - mean).abs() - 0.5).max(0.0) / var.sqrt();
    libm::erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

/// The McKean–Schrader standard error of the median of `v` (sorted): the distance
/// between the order statistics that bound its distribution-free 95 % interval, over
/// 2 × 1.96.
fn median_se(sorted: &[f64]) -> f64 {
    let n = sorted.len() as f64;
    let c = ((n + 1.0) / 2.0 - Z975 * (n / 4.0).sqrt()).round().max(1.0) as usize;
    let lo = sorted[c - 1];
    let hi = sorted[sorted.len().saturating_sub(c)];
    (hi - lo).abs() / (2.0 * Z975)
}

/// 95 % interval of median(B)/median(A) − 1 from the medians' standard errors (delta
/// method on the ratio).
pub fn normal_ci(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    let sort = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s
    };
    let (sa, sb) = (sort(a), sort(b));
    let (ma, mb) = (median(&sa)?, median(&sb)?);
    let r = rel(ma, mb)? + 1.0;
    let (ea, eb) = (
        median_se(&sa) / ma.abs(),
        median_se(&sb) / mb.abs().max(f64::MIN_POSITIVE),
    );
    let se = r.abs() * (ea * ea + eb * eb).sqrt();
    Some((r - Z975 * se - 1.0, r + Z975 * se - 1.0))
}

/// Compare B's windows with A's; None when either has no value.
pub fn compare(a: &[f64], b: &[f64]) -> Option<Comparison> {
    let (median_a, median_b) = (median(a)?, median(b)?);
    let large = a.len() >= LARGE && b.len() >= LARGE;
    Some(Comparison {
        median_a,
        median_b,
        change: rel(median_a, median_b),
        ci: if large {
            normal_ci(a, b)
        } else {
            bootstrap_ci(a, b)
        },
        p: if large {
            normal_p(a, b)
        } else {
            permutation_p(a, b)
        },
        n_a: a.len(),
        n_b: b.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Normal noise from a seeded generator (Box–Muller).
    fn noise(rng: &mut ChaCha8Rng, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let (u1, u2): (f64, f64) = (rng.r#gen::<f64>().max(1e-12), rng.r#gen());
                mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
            })
            .collect()
    }

    #[test]
    fn medians_ranks_and_subsets() {
        assert_eq!(ranks(&[10.0, 30.0, 20.0, 20.0]), [1.0, 4.0, 2.5, 2.5]);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        let mut n = 0;
        for_each_subset(6, 3, |m| {
            assert_eq!(m.iter().filter(|x| **x).count(), 3);
            n += 1;
        });
        assert_eq!((n, choose(6, 3)), (20, 20));
        assert_eq!(choose(12, 6), 924);
    }

    #[test]
    fn a_clear_shift_is_found_with_its_size() {
        let a = [100.0, 102.0, 98.0, 101.0, 99.0, 100.0];
        let b = [80.0, 82.0, 79.0, 81.0, 78.0, 80.0];
        let c = compare(&a, &b).unwrap();
        assert!(c.significant(), "{c:?}");
        // All 924 splits enumerated: only the observed one and its mirror are as extreme.
        assert!((c.p - 2.0 / 924.0).abs() < 1e-9, "{}", c.p);
        let change = c.change.unwrap();
        assert!((change + 0.2).abs() < 0.01, "{change}");
        let (lo, hi) = c.ci.unwrap();
        assert!(lo <= change && change <= hi && hi < 0.0, "{lo}..{hi}");
    }

    #[test]
    fn an_effect_of_three_times_the_noise_is_found() {
        // 6 windows per arm (the default rounds), noise sd 1, effect 3.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut found = 0;
        for _ in 0..100 {
            let a = noise(&mut rng, 6, 50.0, 1.0);
            let b = noise(&mut rng, 6, 53.0, 1.0);
            if compare(&a, &b).unwrap().significant() {
                found += 1;
            }
        }
        assert!(found >= 90, "found in {found} of 100");
    }

    #[test]
    fn no_effect_is_reported_as_none_at_least_95_percent_of_the_time() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let trials = 1000;
        let false_alarms = (0..trials)
            .filter(|_| {
                let a = noise(&mut rng, 6, 50.0, 1.0);
                let b = noise(&mut rng, 6, 50.0, 1.0);
                compare(&a, &b).is_some_and(|c| c.significant())
            })
            .count();
        println!("false alarms: {false_alarms} of {trials}");
        assert!(
            false_alarms as f64 <= 0.05 * trials as f64,
            "{false_alarms} of {trials}"
        );
    }

    #[test]
    fn many_windows_use_random_splits_deterministically() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let a = noise(&mut rng, 12, 10.0, 1.0);
        let b = noise(&mut rng, 12, 14.0, 1.0);
        assert!(choose(24, 12) > MAX_SPLITS);
        let c = compare(&a, &b).unwrap();
        assert!(c.significant());
        assert_eq!(compare(&a, &b), Some(c), "same data, same verdict");
    }

    #[test]
    fn a_zero_baseline_has_no_relative_change() {
        let c = compare(&[0.0, 0.0], &[1.0, 2.0]).unwrap();
        assert_eq!((c.change, c.ci), (None, None));
        let same = compare(&[1.0, 1.0, 1.0], &[1.0, 1.0, 1.0]).unwrap();
        assert!(!same.significant() && same.p == 1.0);
    }

    #[test]
    fn the_large_sample_forms_agree_with_resampling_where_both_apply() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for shift in [0.0, 0.3, 0.6] {
            let a = noise(&mut rng, LARGE, 10.0, 1.0);
            let b = noise(&mut rng, LARGE, 10.0 + shift, 1.0);
            let (pn, pp) = (normal_p(&a, &b), permutation_p(&a, &b));
            assert!(
                (pn - pp).abs() < 0.02,
                "shift {shift}: normal {pn} permutation {pp}"
            );
            let (nlo, nhi) = normal_ci(&a, &b).unwrap();
            let (blo, bhi) = bootstrap_ci(&a, &b).unwrap();
            println!("shift {shift}: normal [{nlo:.3}, {nhi:.3}] bootstrap [{blo:.3}, {bhi:.3}]");
            let (wn, wb) = (nhi - nlo, bhi - blo);
            assert!(
                (nlo - blo).abs() < 0.05
                    && (nhi - bhi).abs() < 0.05
                    && wn < 1.5 * wb
                    && wb < 1.5 * wn,
                "shift {shift}: normal [{nlo}, {nhi}] bootstrap [{blo}, {bhi}]"
            );
        }
        // Ties: every value the same is no difference at all.
        assert_eq!(normal_p(&[1.0; 40], &[1.0; 40]), 1.0);
    }

    #[test]
    fn many_windows_keep_the_false_alarm_rate_and_find_small_effects() {
        let mut rng = ChaCha8Rng::seed_from_u64(13);
        let trials = 400;
        let (mut alarms, mut found, mut covered) = (0, 0, 0);
        for _ in 0..trials {
            let a = noise(&mut rng, 50, 50.0, 1.0);
            let same = noise(&mut rng, 50, 50.0, 1.0);
            if compare(&a, &same).unwrap().significant() {
                alarms += 1;
            }
            let b = noise(&mut rng, 50, 51.0, 1.0);
            let c = compare(&a, &b).unwrap();
            if c.significant() {
                found += 1;
            }
            let (lo, hi) = c.ci.unwrap();
            if lo <= 0.02 && 0.02 <= hi {
                covered += 1;
            }
        }
        println!(
            "50 per value: {alarms} false alarms, {found} found, {covered} covered of {trials}"
        );
        assert!(alarms as f64 <= 0.06 * trials as f64, "{alarms}");
        assert!(found as f64 >= 0.9 * trials as f64, "{found}");
        assert!(covered as f64 >= 0.9 * trials as f64, "{covered}");
    }
}

//! `/proc/schedstat` (versions 15, 16 and 17) → per-domain-level load-balance deltas.
//!
//! The per-idle-type blocks change order between versions (kernel-interfaces §7):
//! v15 is idle, busy, newidle; v16 and v17 are busy, idle, newidle; v17 has 11 fields per
//! block (four imbalance kinds) and the domain name before the cpumask. Parsing a v16
//! file as v15 would silently swap busy and idle, so the version decides the layout and an
//! unknown version is refused rather than guessed.

use std::collections::BTreeMap;

use crate::snapshot::{Balance, DomainBalance, LbStats};
use crate::topology::Topology;

/// One parsed `/proc/schedstat`.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedstatFile {
    pub version: u32,
    pub timestamp: u64,
    pub cpus: Vec<CpuLine>,
    pub domains: Vec<DomainLine>,
}

/// A `cpuN` line: `yld_count, (legacy 0), sched_count, sched_goidle, ttwu_count,
/// ttwu_local, rq_cpu_time, run_delay, pcount`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuLine {
    pub cpu: u32,
    pub fields: Vec<u64>,
}

impl CpuLine {
    /// Total run-queue wait of tasks on this CPU (ns), field 8.
    pub fn run_delay(&self) -> Option<u64> {
        self.fields.get(7).copied()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DomainLine {
    pub cpu: u32,
    pub level: u32,
    pub name: Option<String>,
    pub span: Vec<u32>,
    /// In the order busy, idle, newidle whatever the file's order.
    pub lb: [LbStats; 3],
    /// alb_count alb_failed alb_pushed sbe_cnt sbe_balanced sbe_pushed sbf_cnt
    /// sbf_balanced sbf_pushed ttwu_wake_remote ttwu_move_affine ttwu_move_balance
    pub tail: [u64; 12],
}

/// Idle-type block order in the file, as indexes into `[busy, idle, newidle]`.
fn block_order(version: u32) -> [usize; 3] {
    if version <= 15 { [1, 0, 2] } else { [0, 1, 2] }
}

fn block_len(version: u32) -> usize {
    if version >= 17 { 11 } else { 8 }
}

pub fn parse(text: &str) -> Result<SchedstatFile, String> {
    let mut version = None;
    let mut timestamp = 0;
    let mut cpus = Vec::new();
    let mut domains = Vec::new();
    let mut cur_cpu: Option<u32> = None;
    for (lineno, line) in text.lines().enumerate() {
        let n = lineno + 1;
        let mut tok = line.split_whitespace();
        let Some(head) = tok.next() else { continue };
        if head == "version" {
            let v: u32 = tok
                .next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("line {n}: bad version line {line:?}"))?;
            if !(15..=17).contains(&v) {
                return Err(format!(
                    "unsupported schedstat version {v} (llctop reads 15, 16 and 17)"
                ));
            }
            version = Some(v);
        } else if head == "timestamp" {
            timestamp = tok.next().and_then(|v| v.parse().ok()).unwrap_or(0);
        } else if let Some(id) = head.strip_prefix("cpu") {
            let cpu: u32 = id
                .parse()
                .map_err(|_| format!("line {n}: bad cpu id {head:?}"))?;
            let fields = tok
                .map(|t| t.parse::<u64>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("line {n}: {e}"))?;
            cpus.push(CpuLine { cpu, fields });
            cur_cpu = Some(cpu);
        } else if let Some(level) = head.strip_prefix("domain") {
            let v =
                version.ok_or_else(|| format!("line {n}: domain line before the version line"))?;
            let cpu =
                cur_cpu.ok_or_else(|| format!("line {n}: domain line before any cpu line"))?;
            let level: u32 = level
                .parse()
                .map_err(|_| format!("line {n}: bad domain {head:?}"))?;
            let rest: Vec<&str> = tok.collect();
            domains.push(parse_domain(v, cpu, level, &rest).map_err(|e| format!("line {n}: {e}"))?);
        }
    }
    let version = version.ok_or("no version line")?;
    Ok(SchedstatFile {
        version,
        timestamp,
        cpus,
        domains,
    })
}

fn parse_domain(version: u32, cpu: u32, level: u32, rest: &[&str]) -> Result<DomainLine, String> {
    let mut i = 0;
    // v17 names the domain before the mask; accept a name on older versions if present.
    let name = match rest.first() {
        Some(t) if version >= 17 || !is_hex_mask(t) => {
            i = 1;
            Some((*t).to_string())
        }
        _ => None,
    };
    let mask = rest.get(i).ok_or("missing cpumask")?;
    let span = parse_mask(mask)?;
    let nums = rest[i + 1..]
        .iter()
        .map(|t| t.parse::<u64>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("bad counter: {e}"))?;
    let blen = block_len(version);
    let want = 3 * blen + 12;
    if nums.len() != want {
        return Err(format!(
            "version {version} domain lines have {want} counters, found {}",
            nums.len()
        ));
    }
    let mut lb = [LbStats::default(); 3];
    for (b, &slot) in block_order(version).iter().enumerate() {
        let f = &nums[b * blen..(b + 1) * blen];
        lb[slot] = if blen == 8 {
            LbStats {
                count: f[0],
                balanced: f[1],
                failed: f[2],
                imbalance: f[3],
                gained: f[4],
                hot_gained: f[5],
                nobusyq: f[6],
                nobusyg: f[7],
                ..LbStats::default()
            }
        } else {
            LbStats {
                count: f[0],
                balanced: f[1],
                failed: f[2],
                imbalance: f[3] + f[4] + f[5] + f[6],
                imbalance_load: Some(f[3]),
                imbalance_util: Some(f[4]),
                imbalance_task: Some(f[5]),
                imbalance_misfit: Some(f[6]),
                gained: f[7],
                hot_gained: f[8],
                nobusyq: f[9],
                nobusyg: f[10],
            }
        };
    }
    let mut tail = [0u64; 12];
    tail.copy_from_slice(&nums[3 * blen..]);
    Ok(DomainLine {
        cpu,
        level,
        name,
        span,
        lb,
        tail,
    })
}

fn is_hex_mask(t: &str) -> bool {
    !t.is_empty() && t.chars().all(|c| c.is_ascii_hexdigit() || c == ',')
}

/// A kernel cpumask in hex, 32-bit groups separated by commas, most significant first.
pub fn parse_mask(s: &str) -> Result<Vec<u32>, String> {
    let mut cpus = Vec::new();
    let groups: Vec<&str> = s.split(',').collect();
    for (gi, g) in groups.iter().rev().enumerate() {
        let v = u32::from_str_radix(g, 16).map_err(|e| format!("bad cpumask {s:?}: {e}"))?;
        for bit in 0..32 {
            if v & (1 << bit) != 0 {
                cpus.push(gi as u32 * 32 + bit);
            }
        }
    }
    cpus.sort_unstable();
    Ok(cpus)
}

fn sub_lb(a: &LbStats, b: &LbStats) -> LbStats {
    let s = |x: u64, y: u64| x.saturating_sub(y);
    let so = |x: Option<u64>, y: Option<u64>| Some(x?.saturating_sub(y?));
    LbStats {
        count: s(a.count, b.count),
        balanced: s(a.balanced, b.balanced),
        failed: s(a.failed, b.failed),
        imbalance: s(a.imbalance, b.imbalance),
        imbalance_load: so(a.imbalance_load, b.imbalance_load),
        imbalance_util: so(a.imbalance_util, b.imbalance_util),
        imbalance_task: so(a.imbalance_task, b.imbalance_task),
        imbalance_misfit: so(a.imbalance_misfit, b.imbalance_misfit),
        gained: s(a.gained, b.gained),
        hot_gained: s(a.hot_gained, b.hot_gained),
        nobusyq: s(a.nobusyq, b.nobusyq),
        nobusyg: s(a.nobusyg, b.nobusyg),
    }
}

fn add_lb(acc: &mut LbStats, d: &LbStats) {
    let ao = |x: &mut Option<u64>, y: Option<u64>| {
        if let Some(y) = y {
            *x = Some(x.unwrap_or(0) + y);
        }
    };
    acc.count += d.count;
    acc.balanced += d.balanced;
    acc.failed += d.failed;
    acc.imbalance += d.imbalance;
    ao(&mut acc.imbalance_load, d.imbalance_load);
    ao(&mut acc.imbalance_util, d.imbalance_util);
    ao(&mut acc.imbalance_task, d.imbalance_task);
    ao(&mut acc.imbalance_misfit, d.imbalance_misfit);
    acc.gained += d.gained;
    acc.hot_gained += d.hot_gained;
    acc.nobusyq += d.nobusyq;
    acc.nobusyg += d.nobusyg;
}

/// The kernel's name of the package-wide domain: `DIE` until v6.7 renamed it `PKG`
/// (commit f577cd57bfaa); `PKG` when the version is unknown.
pub fn package_domain_name(version: Option<(u32, u32, u32)>) -> &'static str {
    match version {
        Some((maj, min, _)) if (maj, min) < (6, 7) => "DIE",
        _ => "PKG",
    }
}

/// Name a domain from its span when the file does not (v15/v16); `pkg` is this kernel's
/// name of the package domain ([`package_domain_name`]).
pub fn derive_name(span: &[u32], cpu: u32, topo: &Topology, pkg: &str) -> Option<String> {
    let c = topo.cpu(cpu)?;
    let same = |set: &[u32]| {
        let mut s = set.to_vec();
        s.sort_unstable();
        s == span
    };
    if same(&c.smt_siblings) && span.len() > 1 {
        return Some("SMT".into());
    }
    if let Some(l) = c.llc.and_then(|l| topo.llcs.get(l as usize))
        && same(&l.cpus)
    {
        return Some("MC".into());
    }
    let node = c
        .node
        .and_then(|n| topo.node_index(n))
        .map(|i| &topo.nodes[i]);
    let nodes_spanned = topo
        .nodes
        .iter()
        .filter(|n| n.cpus.iter().any(|x| span.binary_search(x).is_ok()))
        .count();
    if nodes_spanned > 1 {
        return Some("NUMA".into());
    }
    if let Some(package) = c.package {
        let pkg_cpus: Vec<u32> = topo
            .online_cpus()
            .filter(|x| x.package == Some(package))
            .map(|x| x.cpu)
            .collect();
        if same(&pkg_cpus) {
            return Some(pkg.into());
        }
    }
    if node.is_some_and(|n| same(&n.cpus)) {
        return Some("NODE".into());
    }
    None
}

/// Load-balance deltas between two reads, summed over CPUs per domain level.
/// Domains present in only one of the two files (a CPU went offline, domains were
/// rebuilt) are skipped.
pub fn delta(prev: &SchedstatFile, cur: &SchedstatFile, topo: &Topology, pkg: &str) -> Balance {
    let before: BTreeMap<(u32, u32), &DomainLine> =
        prev.domains.iter().map(|d| ((d.cpu, d.level), d)).collect();
    let mut levels: BTreeMap<u32, DomainBalance> = BTreeMap::new();
    for d in &cur.domains {
        let Some(p) = before.get(&(d.cpu, d.level)) else {
            continue;
        };
        if p.span != d.span {
            continue;
        }
        let e = levels.entry(d.level).or_insert_with(|| {
            let (name, derived) = match &d.name {
                Some(n) => (Some(n.clone()), false),
                None => (derive_name(&d.span, d.cpu, topo, pkg), true),
            };
            DomainBalance {
                level: d.level,
                derived_name: derived && name.is_some(),
                name,
                ..DomainBalance::default()
            }
        });
        e.cpus += 1;
        for i in 0..3 {
            let dl = sub_lb(&d.lb[i], &p.lb[i]);
            let acc = match i {
                0 => &mut e.busy,
                1 => &mut e.idle,
                _ => &mut e.newidle,
            };
            add_lb(acc, &dl);
        }
        let t = |k: usize| d.tail[k].saturating_sub(p.tail[k]);
        e.alb_count += t(0);
        e.alb_failed += t(1);
        e.alb_pushed += t(2);
        e.ttwu_wake_remote += t(9);
        e.ttwu_move_affine += t(10);
        e.ttwu_move_balance += t(11);
    }
    Balance {
        version: cur.version,
        domains: levels.into_values().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpumask_groups() {
        assert_eq!(parse_mask("00000003").unwrap(), vec![0, 1]);
        assert_eq!(parse_mask("00000001,00000000").unwrap(), vec![32]);
        assert_eq!(parse_mask("f").unwrap(), vec![0, 1, 2, 3]);
        assert!(parse_mask("xyz").is_err());
    }

    fn v15_line(block: [u64; 3]) -> String {
        // per block: lb_count = block value, everything else 0
        let mut nums = Vec::new();
        for b in block {
            nums.push(b);
            nums.extend([0u64; 7]);
        }
        nums.extend([0u64; 12]);
        nums.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn v15_and_v16_orders_differ() {
        let body = v15_line([1, 2, 3]);
        let f15 = parse(&format!(
            "version 15\ntimestamp 1\ncpu0 0 0 0 0 0 0 0 0 0\ndomain0 3 {body}\n"
        ))
        .unwrap();
        let f16 = parse(&format!(
            "version 16\ntimestamp 1\ncpu0 0 0 0 0 0 0 0 0 0\ndomain0 3 {body}\n"
        ))
        .unwrap();
        // v15 order idle,busy,newidle: first block is idle
        assert_eq!(
            (f15.domains[0].lb[0].count, f15.domains[0].lb[1].count),
            (2, 1)
        );
        // v16 order busy,idle,newidle
        assert_eq!(
            (f16.domains[0].lb[0].count, f16.domains[0].lb[1].count),
            (1, 2)
        );
        assert_eq!(f15.domains[0].lb[2].count, 3);
    }

    #[test]
    fn refuses_unknown_versions_and_bad_lengths() {
        assert!(parse("version 14\n").unwrap_err().contains("unsupported"));
        assert!(parse("version 18\n").unwrap_err().contains("unsupported"));
        let e = parse("version 17\ncpu0 0 0 0 0 0 0 0 0 0\ndomain0 MC 3 1 2 3\n").unwrap_err();
        assert!(e.contains("45 counters"), "{e}");
        assert!(parse("cpu0 1 2\n").unwrap_err().contains("no version"));
    }
}

/// Tests on real files captured in QEMU (2 sockets × 2 cores, 2 nodes) from Debian's own
/// kernels: 6.1 (v15), 6.12 (v16) and 6.18 (v17).
#[cfg(test)]
mod real_samples {
    use super::*;

    const V15: &str =
        include_str!("../../../tests/fixtures/schedstat/v15-debian-6.1.0-56-2s2llc.txt");
    const V16: &str =
        include_str!("../../../tests/fixtures/schedstat/v16-debian-6.12.117-2s2llc.txt");
    const V17: &str =
        include_str!("../../../tests/fixtures/schedstat/v17-debian-6.18.15-2s2llc.txt");

    /// The lab machine's topology, from its generated sysfs fixture.
    fn lab_topology() -> Topology {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/topology/qemu-lab-2s2llc"
        );
        crate::topology::discover(&crate::kroot::KernelRoot::new(dir)).unwrap()
    }

    #[test]
    fn v15_from_linux_6_1() {
        let f = parse(V15).unwrap();
        assert_eq!((f.version, f.cpus.len(), f.domains.len()), (15, 4, 8));
        assert_eq!(f.cpus[0].run_delay(), Some(120077767));
        // cpu0 domain0: "3 15 15 0 0 0 0 0 15 0 0 0 0 0 0 0 0 3 2 0 1 1 0 0 2 ..."
        let d = &f.domains[0];
        assert_eq!(
            (d.level, d.name.as_deref(), d.span.as_slice()),
            (0, None, &[0, 1][..])
        );
        let [busy, idle, newidle] = d.lb;
        assert_eq!(
            (idle.count, idle.balanced, idle.nobusyg),
            (15, 15, 15),
            "first block is CPU_IDLE in v15"
        );
        assert_eq!(busy.count, 0);
        assert_eq!(
            (
                newidle.count,
                newidle.balanced,
                newidle.imbalance,
                newidle.gained
            ),
            (3, 2, 1, 1)
        );
        assert_eq!(f.domains[1].span, vec![0, 1, 2, 3]);
        assert_eq!(d.tail[9], 2, "ttwu_wake_remote");
        assert_eq!(f.domains[1].tail[9], 5, "ttwu_wake_remote");
        assert_eq!(
            derive_name(&d.span, 0, &lab_topology(), "PKG").as_deref(),
            Some("MC")
        );
        assert_eq!(
            derive_name(&f.domains[1].span, 0, &lab_topology(), "PKG").as_deref(),
            Some("NUMA")
        );
    }

    #[test]
    fn the_package_domain_is_die_before_6_7() {
        assert_eq!(package_domain_name(Some((6, 1, 158))), "DIE");
        assert_eq!(package_domain_name(Some((6, 7, 0))), "PKG");
        assert_eq!(package_domain_name(Some((7, 2, 13))), "PKG");
        assert_eq!(package_domain_name(None), "PKG");
    }

    #[test]
    fn v16_from_linux_6_12_puts_busy_first() {
        let f = parse(V16).unwrap();
        assert_eq!(f.version, 16);
        // cpu0 domain0: "3 1 1 0 0 0 0 0 1 38 38 0 0 0 0 0 38 2 1 0 1 1 0 0 1 ..."
        let [busy, idle, newidle] = f.domains[0].lb;
        assert_eq!((busy.count, idle.count, newidle.count), (1, 38, 2));
        assert_eq!(
            (newidle.balanced, newidle.imbalance, newidle.gained),
            (1, 1, 1)
        );
    }

    #[test]
    fn v17_from_linux_6_18_has_names_and_imbalance_kinds() {
        let f = parse(V17).unwrap();
        assert_eq!(f.version, 17);
        let names: Vec<_> = f.domains.iter().map(|d| d.name.as_deref()).collect();
        assert_eq!(names[..2], [Some("MC"), Some("NUMA")]);
        // cpu3 domain0 idle block: "17 14 2 0 0 3 0 1 0 0 14"
        let d = f
            .domains
            .iter()
            .find(|d| d.cpu == 3 && d.level == 0)
            .unwrap();
        let idle = d.lb[1];
        assert_eq!((idle.count, idle.balanced, idle.failed), (17, 14, 2));
        assert_eq!(idle.imbalance_task, Some(3));
        assert_eq!(idle.imbalance, 3);
        assert_eq!((idle.gained, idle.nobusyg), (1, 14));
        assert_eq!(d.span, vec![2, 3]);
    }

    #[test]
    fn delta_sums_per_level_and_keeps_names() {
        let topo = lab_topology();
        let a = parse(V17).unwrap();
        let mut b = a.clone();
        for d in &mut b.domains {
            d.lb[2].count += 10; // newidle
            d.lb[2].gained += 1;
            d.tail[0] += 2; // alb_count
        }
        let bal = delta(&a, &b, &topo, "PKG");
        assert_eq!(bal.version, 17);
        assert_eq!(bal.domains.len(), 2);
        let mc = &bal.domains[0];
        assert_eq!(
            (mc.name.as_deref(), mc.derived_name, mc.cpus),
            (Some("MC"), false, 4)
        );
        assert_eq!(
            (mc.newidle.count, mc.newidle.gained, mc.alb_count),
            (40, 4, 8)
        );
        assert_eq!(mc.busy.count, 0);
        // v15 has no names: derived from the span
        let a = parse(V15).unwrap();
        let bal = delta(&a, &a, &topo, "PKG");
        assert_eq!(bal.domains[0].name.as_deref(), Some("MC"));
        assert!(bal.domains[0].derived_name);
        assert_eq!(bal.domains[1].name.as_deref(), Some("NUMA"));
    }
}

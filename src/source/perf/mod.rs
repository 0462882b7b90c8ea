//! The perf source: hardware counters per online CPU, system-wide (`pid = -1`), one
//! counter group per CPU {cycles, instructions, cache-references, cache-misses,
//! LL/read/miss}, read every interval with TIME_ENABLED/TIME_RUNNING and scaled when the
//! PMU multiplexed them; plus the AMD L3 uncore PMU (`amd_l3`, one reader CPU per CCX from
//! its `cpumask`) for true L3 lookups and misses. Event encodings: kernel-interfaces §10.
//!
//! Every failure is kept with its reason and the rest keeps working: no PMU (ENOENT, common
//! in VMs), not permitted (EACCES/EPERM with perf_event_paranoid), offline CPU (ENODEV,
//! retried when the CPU comes back), fd limit (EMFILE). On AMD the generic cache events
//! count L2, not L3; the source says so.

use std::collections::BTreeMap;
use std::io;

use perf_event_open::config::sibling::Opts as SiblingOpts;
use perf_event_open::config::{Cpu, Opts, Proc};
use perf_event_open::count::Counter;
use perf_event_open::count::group::CounterGroup;
use perf_event_open::event::dp::DynamicPmu;
use perf_event_open::event::hw::{Hardware, Op, OpResult, Type};
use perf_event_open::event::sw::Software;

use crate::kroot::KernelRoot;
use crate::snapshot::{RawCounters, Snapshot, SourceStatus, UncoreL3};
use crate::topology::Topology;

use super::Source;

/// Which counter a group member feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Slot {
    Cycles,
    Instructions,
    CacheReferences,
    CacheMisses,
    LlcReadMisses,
}

impl Slot {
    pub const ALL: [Slot; 5] = [
        Slot::Cycles,
        Slot::Instructions,
        Slot::CacheReferences,
        Slot::CacheMisses,
        Slot::LlcReadMisses,
    ];

    /// Position in [`Slot::ALL`], the BPF program's counter slot (`NR_PC` of them).
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn label(self) -> &'static str {
        match self {
            Slot::Cycles => "cycles",
            Slot::Instructions => "instructions",
            Slot::CacheReferences => "cache-references",
            Slot::CacheMisses => "cache-misses",
            Slot::LlcReadMisses => "LLC-read-misses",
        }
    }
}

/// An event of a CPU group: hardware in the product; tests substitute software events
/// to run the same code path on machines without a PMU.
#[derive(Debug, Clone)]
pub enum Spec {
    Hardware(Hardware),
    Software(Software),
}

/// The events of one CPU group, the first being the leader.
pub type EventSet = Vec<(Slot, Spec)>;

/// The hardware events (kernel-interfaces §10): PERF_TYPE_HARDWARE cycles, instructions,
/// cache references/misses, and PERF_TYPE_HW_CACHE LL|READ|MISS (0x10002).
pub fn hardware_events() -> EventSet {
    vec![
        (Slot::Cycles, Spec::Hardware(Hardware::CpuCycle)),
        (Slot::Instructions, Spec::Hardware(Hardware::Instr)),
        (Slot::CacheReferences, Spec::Hardware(Hardware::CacheAccess)),
        (Slot::CacheMisses, Spec::Hardware(Hardware::CacheMiss)),
        (
            Slot::LlcReadMisses,
            Spec::Hardware(Hardware::Cache(Type::Ll, Op::Read, OpResult::Miss)),
        ),
    ]
}

fn open_counter(spec: &Spec, cpu: u32) -> io::Result<Counter> {
    let target = (Proc::ALL, Cpu(cpu));
    match spec {
        Spec::Hardware(h) => Counter::new(h.clone(), target, opts()),
        Spec::Software(s) => Counter::new(*s, target, opts()),
    }
}

fn add_counter(group: &mut CounterGroup, spec: &Spec) -> io::Result<()> {
    // Siblings start enabled: they count whenever their (disabled-at-creation) leader
    // does, so the group starts as one with the leader's enable.
    let o = SiblingOpts {
        enable: true,
        ..SiblingOpts::default()
    };
    match spec {
        Spec::Hardware(h) => group.add(h.clone(), &o).map(|_| ()),
        Spec::Software(s) => group.add(*s, &o).map(|_| ()),
    }
}

/// Why an open or read failed, in the operator's terms.
pub fn reason(e: &io::Error, paranoid: Option<i32>) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => {
            "unsupported: no hardware PMU for this event (common in VMs)".into()
        }
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "not permitted: needs root or CAP_PERFMON (perf_event_paranoid={})",
            paranoid.map_or("?".into(), |p| p.to_string())
        ),
        Some(libc::ENODEV) => "CPU offline (ENODEV)".into(),
        Some(libc::EMFILE) => {
            "fd limit reached (EMFILE): one fd per CPU and event; raise ulimit -n".into()
        }
        Some(libc::EBUSY) => "PMU busy (EBUSY): an exclusive user holds it".into(),
        Some(libc::EINVAL) => "invalid event for this PMU or CPU (EINVAL)".into(),
        _ => e.to_string(),
    }
}

struct CpuGroup {
    cpu: u32,
    group: CounterGroup,
    /// Slot of the leader, then of each sibling in the order added.
    slots: Vec<Slot>,
    prev: Option<Reading>,
}

/// One read of a counter group: raw values by slot and the group's enabled/running time.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    pub values: BTreeMap<Slot, u64>,
    pub enabled: u64,
    pub running: u64,
}

/// A second handle on one CPU's counter group, for another reader of the same counters
/// (the BPF source reads the slice still running at each interval). Reading a group
/// with PERF_FORMAT_GROUP returns `nr, time_enabled, time_running, value[nr]`.
pub struct GroupReader {
    pub cpu: u32,
    file: std::fs::File,
    slots: Vec<Slot>,
}

impl GroupReader {
    pub fn read(&self) -> io::Result<Reading> {
        use std::io::Read;
        let mut buf = vec![0u8; 8 * (3 + self.slots.len())];
        let n = (&self.file).read(&mut buf)?;
        parse_group(&buf[..n], &self.slots)
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "short group read"))
    }
}

fn parse_group(b: &[u8], slots: &[Slot]) -> Option<Reading> {
    let word = |i: usize| {
        b.get(i * 8..i * 8 + 8)
            .and_then(|w| w.try_into().ok())
            .map(u64::from_ne_bytes)
    };
    let nr = usize::try_from(word(0)?).ok()?;
    let mut values = BTreeMap::new();
    for (i, slot) in slots.iter().enumerate().take(nr) {
        values.insert(*slot, word(3 + i)?);
    }
    Some(Reading {
        values,
        enabled: word(1)?,
        running: word(2)?,
    })
}

/// One CPU's counters as the BPF per-process attribution needs them: each member's fd
/// (for the PERF_EVENT_ARRAY) and a reader for the group.
pub struct CpuCounterFds<'a> {
    pub cpu: u32,
    pub members: Vec<(Slot, std::os::fd::BorrowedFd<'a>)>,
    pub reader: io::Result<GroupReader>,
}

struct UncoreGroup {
    llc: u32,
    group: CounterGroup,
    prev: Option<(u64, u64, u64, u64)>,
}

pub struct PerfSource {
    events: EventSet,
    paranoid: Option<i32>,
    cpus: Vec<CpuGroup>,
    /// CPUs without a group and why (retried when the reason is "offline").
    failed: BTreeMap<u32, String>,
    /// Events that could not join the groups, with why.
    missing: BTreeMap<Slot, String>,
    uncore: Vec<UncoreGroup>,
    uncore_note: Option<String>,
    amd: bool,
}

fn opts() -> Opts {
    let mut o = Opts::default();
    o.stat_format.time_enabled = true;
    o.stat_format.time_running = true;
    o.stat_format.siblings = true;
    o
}

impl PerfSource {
    /// Open the hardware counters on every online CPU (never fails: what cannot be
    /// opened is reported in the source state).
    pub fn open(root: &KernelRoot, topo: &Topology) -> PerfSource {
        Self::open_events(root, topo, hardware_events())
    }

    /// Open `events` instead of the hardware set (the first is each group's leader).
    pub fn open_events(root: &KernelRoot, topo: &Topology, events: EventSet) -> PerfSource {
        let vendor = root
            .read("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| {
                    l.strip_prefix("vendor_id")
                        .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
                })
            })
            .unwrap_or_default();
        let mut s = PerfSource {
            events,
            paranoid: root.read_value("/proc/sys/kernel/perf_event_paranoid").ok(),
            cpus: Vec::new(),
            failed: BTreeMap::new(),
            missing: BTreeMap::new(),
            uncore: Vec::new(),
            uncore_note: None,
            amd: vendor == "AuthenticAMD" || vendor == "HygonGenuine",
        };
        // The AMD caveats are about hardware cache events; stand-in sets have none.
        let hardware = s.events.iter().any(|(_, e)| matches!(e, Spec::Hardware(_)));
        s.amd &= hardware;
        for c in topo.cpus.iter().filter(|c| c.online) {
            s.open_cpu(c.cpu);
        }
        if !s.cpus.is_empty() && hardware {
            s.open_amd_l3(root, topo);
        }
        s
    }

    /// Every open CPU group's member fds and a reader (for the BPF per-process
    /// attribution, which reads the same counters at each context switch).
    pub fn attribution(&self) -> Vec<CpuCounterFds<'_>> {
        use std::os::fd::AsFd;
        self.cpus
            .iter()
            .map(|g| {
                let counters = std::iter::once(g.group.leader())
                    .chain(g.group.siblings().iter().map(|c| c.as_ref()));
                CpuCounterFds {
                    cpu: g.cpu,
                    members: g
                        .slots
                        .iter()
                        .zip(counters)
                        .map(|(s, c)| (*s, c.file().as_fd()))
                        .collect(),
                    reader: g.group.leader().file().try_clone().map(|file| GroupReader {
                        cpu: g.cpu,
                        file,
                        slots: g.slots.clone(),
                    }),
                }
            })
            .collect()
    }

    fn open_cpu(&mut self, cpu: u32) {
        let events = self.events.clone();
        let mut it = events.iter();
        let Some((lead_slot, lead_spec)) = it.next() else {
            return;
        };
        let lead_slot = *lead_slot;
        let leader = match open_counter(lead_spec, cpu) {
            Ok(l) => l,
            Err(e) => {
                self.failed.insert(cpu, reason(&e, self.paranoid));
                return;
            }
        };
        let mut group = CounterGroup::from(leader);
        let mut slots = vec![lead_slot];
        for (slot, spec) in it {
            let slot = *slot;
            match add_counter(&mut group, spec) {
                Ok(()) => slots.push(slot),
                Err(e) => {
                    self.missing.insert(slot, reason(&e, self.paranoid));
                }
            }
        }
        if let Err(e) = group.enable() {
            self.failed.insert(cpu, reason(&e, self.paranoid));
            return;
        }
        self.failed.remove(&cpu);
        self.cpus.push(CpuGroup {
            cpu,
            group,
            slots,
            prev: None,
        });
        self.cpus.sort_by_key(|g| g.cpu);
    }

    /// AMD L3 uncore: one group {lookups, misses} per CCX on a CPU of `cpumask`.
    fn open_amd_l3(&mut self, root: &KernelRoot, topo: &Topology) {
        let dev = "/sys/bus/event_source/devices/amd_l3";
        let Ok(ty) = root.read_value::<u32>(format!("{dev}/type")) else {
            if self.amd {
                self.uncore_note = Some("no amd_l3 uncore PMU: true L3 misses unavailable".into());
            }
            return;
        };
        let readers = root
            .read_trimmed(format!("{dev}/cpumask"))
            .ok()
            .and_then(|m| crate::cpulist::parse(&m).ok())
            .unwrap_or_default();
        let mut errors = Vec::new();
        for cpu in readers {
            let Some(llc) = topo.llc_of(cpu) else {
                continue;
            };
            let pmu = |config| DynamicPmu {
                ty,
                config,
                config1: 0,
                config2: 0,
                config3: 0,
            };
            let opened = Counter::new(
                pmu(amd_l3_config(0x04, 0xff)),
                (Proc::ALL, Cpu(cpu)),
                opts(),
            )
            .and_then(|lead| {
                let mut g = CounterGroup::from(lead);
                g.add(
                    pmu(amd_l3_config(0x06, 0x01)),
                    SiblingOpts {
                        enable: true,
                        ..SiblingOpts::default()
                    },
                )?;
                g.enable()?;
                Ok(g)
            });
            match opened {
                Ok(group) => self.uncore.push(UncoreGroup {
                    llc,
                    group,
                    prev: None,
                }),
                Err(e) => errors.push(format!("cpu{cpu}: {}", reason(&e, self.paranoid))),
            }
        }
        if !errors.is_empty() {
            self.uncore_note = Some(format!("amd_l3: {}", errors.join("; ")));
        }
    }

    fn status(&self) -> SourceStatus {
        if self.cpus.is_empty() {
            let mut reasons: Vec<&String> = self.failed.values().collect();
            reasons.dedup();
            let r = match reasons.as_slice() {
                [] => "no online CPU".to_string(),
                [one] => one.to_string(),
                many => many
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
            };
            return SourceStatus::absent(
                crate::snapshot::SourceName::Perf,
                format!("hardware counters {r}"),
            );
        }
        let mut notes = Vec::new();
        for (slot, why) in &self.missing {
            notes.push(format!("{} {why}", slot.label()));
        }
        for (cpu, why) in &self.failed {
            notes.push(format!("cpu{cpu}: {why}"));
        }
        if self.amd {
            notes.push(
                "AMD: generic cache-references/misses count L2, not L3 (MPKI is L2 MPKI)".into(),
            );
        }
        if let Some(n) = &self.uncore_note {
            notes.push(n.clone());
        }
        if notes.is_empty() {
            SourceStatus::active(crate::snapshot::SourceName::Perf)
        } else {
            SourceStatus::degraded(crate::snapshot::SourceName::Perf, notes.join("; "))
        }
    }
}

/// `event | umask << 8` of the Zen 2/3 L3 PMU (format `event:0-7`, `umask:8-15`).
pub fn amd_l3_config(event: u64, umask: u64) -> u64 {
    event | (umask << 8)
}

fn read(g: &CpuGroup) -> io::Result<Reading> {
    let st = g.group.leader().stat()?;
    let mut values = BTreeMap::new();
    values.insert(g.slots[0], st.count);
    for (slot, sib) in g.slots.iter().skip(1).zip(&st.siblings) {
        values.insert(*slot, sib.count);
    }
    Ok(Reading {
        values,
        enabled: st.time_enabled.unwrap_or(0),
        running: st.time_running.unwrap_or(0),
    })
}

/// The interval's raw counters from two readings (`None` if a counter went backwards).
fn delta(prev: &Reading, cur: &Reading) -> RawCounters {
    let d = |s: Slot| match (prev.values.get(&s), cur.values.get(&s)) {
        (Some(a), Some(b)) if b >= a => Some(b - a),
        _ => None,
    };
    RawCounters {
        cycles: d(Slot::Cycles),
        instructions: d(Slot::Instructions),
        cache_references: d(Slot::CacheReferences),
        cache_misses: d(Slot::CacheMisses),
        llc_read_misses: d(Slot::LlcReadMisses),
        time_enabled_ns: cur.enabled.saturating_sub(prev.enabled),
        time_running_ns: cur.running.saturating_sub(prev.running),
    }
}

impl Source for PerfSource {
    fn name(&self) -> &'static str {
        crate::snapshot::SourceName::Perf.as_str()
    }

    fn sample(&mut self, topo: &Topology, snap: &mut Snapshot) {
        // CPUs that came online (or were offline when we opened) get a group.
        let retry: Vec<u32> = topo
            .cpus
            .iter()
            .filter(|c| c.online && !self.cpus.iter().any(|g| g.cpu == c.cpu))
            .map(|c| c.cpu)
            .filter(|c| self.failed.get(c).is_none_or(|r| r.contains("offline")))
            .collect();
        for cpu in retry {
            self.open_cpu(cpu);
        }
        let secs = snap.time.interval_secs();
        let mut gone = Vec::new();
        for g in &mut self.cpus {
            let cur = match read(g) {
                Ok(r) => r,
                Err(e) => {
                    gone.push((g.cpu, reason(&e, self.paranoid)));
                    continue;
                }
            };
            if let Some(prev) = &g.prev
                && let Some(cs) = snap.cpus.iter_mut().find(|c| c.cpu == g.cpu)
            {
                let raw = delta(prev, &cur);
                let mut c = crate::counters::scaled(&raw);
                crate::counters::derive(&mut c, secs);
                cs.counters = Some(Box::new(c));
                cs.counters_raw = Some(Box::new(raw));
            }
            g.prev = Some(cur);
        }
        for (cpu, why) in gone {
            // An offline CPU's counters stop reading; reopened when it is back.
            self.cpus.retain(|g| g.cpu != cpu);
            let offline = topo.cpus.iter().any(|c| c.cpu == cpu && !c.online);
            self.failed.insert(
                cpu,
                if offline {
                    "CPU offline (ENODEV)".into()
                } else {
                    why
                },
            );
        }
        for u in &mut self.uncore {
            let Ok(st) = u.group.leader().stat() else {
                continue;
            };
            let misses = st.siblings.first().map_or(0, |s| s.count);
            let cur = (
                st.count,
                misses,
                st.time_enabled.unwrap_or(0),
                st.time_running.unwrap_or(0),
            );
            if let Some(p) = u.prev {
                let (en, run) = (cur.2.saturating_sub(p.2), cur.3.saturating_sub(p.3));
                snap.uncore_l3.push(UncoreL3 {
                    llc: u.llc,
                    lookups: crate::counters::scale(cur.0.saturating_sub(p.0), en, run),
                    misses: crate::counters::scale(cur.1.saturating_sub(p.1), en, run),
                    scale: (run > 0).then(|| en as f64 / run as f64),
                });
            }
            u.prev = Some(cur);
        }
        snap.sources.push(self.status());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_for_each_refusal() {
        let e = |n| io::Error::from_raw_os_error(n);
        assert!(reason(&e(libc::ENOENT), None).contains("no hardware PMU"));
        assert!(reason(&e(libc::EACCES), Some(2)).contains("perf_event_paranoid=2"));
        assert!(reason(&e(libc::ENODEV), None).contains("offline"));
        assert!(reason(&e(libc::EMFILE), None).contains("ulimit"));
    }

    #[test]
    fn deltas_and_amd_encodings() {
        let r = |c: u64, i: u64, en: u64, run: u64| Reading {
            values: [(Slot::Cycles, c), (Slot::Instructions, i)]
                .into_iter()
                .collect(),
            enabled: en,
            running: run,
        };
        let d = delta(&r(100, 50, 1000, 500), &r(300, 40, 3000, 1500));
        assert_eq!(d.cycles, Some(200));
        assert_eq!(d.instructions, None, "went backwards");
        assert_eq!(d.cache_misses, None, "not in the group");
        assert_eq!((d.time_enabled_ns, d.time_running_ns), (2000, 1000));
        assert_eq!(amd_l3_config(0x04, 0xff), 0xff04);
        assert_eq!(amd_l3_config(0x06, 0x01), 0x0106);
    }

    #[test]
    fn group_read_format() {
        let words: Vec<u8> = [2u64, 1000, 900, 7, 9]
            .iter()
            .flat_map(|w| w.to_ne_bytes())
            .collect();
        let slots = [Slot::Cycles, Slot::CacheMisses];
        let r = parse_group(&words, &slots).expect("parses");
        assert_eq!((r.enabled, r.running), (1000, 900));
        assert_eq!(r.values.get(&Slot::Cycles), Some(&7));
        assert_eq!(r.values.get(&Slot::CacheMisses), Some(&9));
        assert!(
            parse_group(&words[..24], &slots).is_none(),
            "values missing"
        );
        assert_eq!(Slot::LlcReadMisses.index(), 4);
    }
}

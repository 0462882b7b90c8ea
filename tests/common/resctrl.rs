//! resctrl trees laid out as the kernel's Documentation/filesystems/resctrl.rst
//! describes them ("Info directory", "Resource alloc and monitor groups", "Notes on
//! Sub-NUMA Cluster mode", `mbm_assign_mode` / `num_mbm_cntrs` / `available_mbm_cntrs`),
//! on a copy of a topology fixture, with /proc/self/mountinfo saying resctrl is mounted
//! at /sys/fs/resctrl — and written to between intervals the way the kernel's counters
//! move (a "scripted kernel"). Values are rewritten in place, as a kernel file keeps its
//! inode: numbers as 20 zero-padded digits in one `pwrite` at offset 0, so that a reader
//! running meanwhile (llctop in another process) never sees a half-written file.

use std::fs;
use std::path::{Path, PathBuf};

use llctop::kroot::KernelRoot;
use llctop::topology::Topology;

pub const EVENTS: [&str; 3] = ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"];

/// A machine's monitoring hardware.
#[derive(Clone)]
pub struct Spec {
    pub topology: &'static str,
    /// L3 cache ids and, with sub-NUMA clustering, the nodes under each.
    pub domains: Vec<(u32, Vec<u32>)>,
    pub features: Vec<&'static str>,
    pub num_rmids: u32,
    /// `mbm_event` mode with this many counters per domain.
    pub counters: Option<u32>,
}

impl Spec {
    /// 2× Xeon Gold 6430 in SNC2: L3 ids 0 and 32 (the fixture's ids), nodes 0, 1 | 2, 3.
    pub fn intel_snc2() -> Spec {
        Spec {
            topology: "xeon-6430-2s-snc2",
            domains: vec![(0, vec![0, 1]), (32, vec![2, 3])],
            features: EVENTS.to_vec(),
            num_rmids: 224,
            counters: None,
        }
    }

    /// AMD EPYC 9654: 12 CCDs (L3 ids 0, 8 … 88), assignable counters.
    pub fn amd_genoa() -> Spec {
        Spec {
            topology: "epyc-9654",
            domains: (0..12).map(|i| (i * 8, vec![])).collect(),
            features: vec![
                "llc_occupancy",
                "mbm_total_bytes",
                "mbm_total_bytes_config",
                "mbm_local_bytes",
                "mbm_local_bytes_config",
            ],
            num_rmids: 256,
            counters: Some(32),
        }
    }
}

pub struct Tree {
    pub dir: tempfile::TempDir,
    pub root: KernelRoot,
    pub topo: Topology,
    pub spec: Spec,
}

impl Tree {
    pub fn new(spec: Spec) -> Tree {
        let (dir, root, topo) = super::writable_root(spec.topology);
        let t = Tree {
            dir,
            root,
            topo,
            spec,
        };
        let p = t.dir.path();
        super::put(
            p,
            "proc/self/mountinfo",
            "22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n\
             61 22 0:40 / /sys/fs/resctrl rw,relatime - resctrl resctrl rw\n",
        );
        super::put(
            p,
            "proc/cpuinfo",
            "processor\t: 0\nflags\t\t: fpu sse2 cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local rdt_a\n",
        );
        super::put(p, "proc/filesystems", "nodev\tsysfs\nnodev\tresctrl\n");
        let info = "sys/fs/resctrl/info/L3_MON";
        super::put(
            p,
            &format!("{info}/num_rmids"),
            &format!("{}\n", t.spec.num_rmids),
        );
        super::put(
            p,
            &format!("{info}/mon_features"),
            &(t.spec.features.join("\n") + "\n"),
        );
        super::put(p, &format!("{info}/max_threshold_occupancy"), "270336\n");
        super::put(p, "sys/fs/resctrl/info/last_cmd_status", "ok\n");
        if let Some(n) = t.spec.counters {
            super::put(
                p,
                &format!("{info}/mbm_assign_mode"),
                "[mbm_event]\ndefault\n",
            );
            let per = |v: u32| {
                t.spec
                    .domains
                    .iter()
                    .map(|(d, _)| format!("{d}={v}"))
                    .collect::<Vec<_>>()
                    .join(";")
            };
            super::put(p, &format!("{info}/num_mbm_cntrs"), &(per(n) + "\n"));
            super::put(p, &format!("{info}/available_mbm_cntrs"), &(per(n) + "\n"));
        }
        t.group("");
        t
    }

    /// Where the mount is in the tree (a host path).
    pub fn mount(&self) -> PathBuf {
        self.dir.path().join("sys/fs/resctrl")
    }

    /// Each group's counter directories under `mon_data`.
    pub fn leaves(&self) -> Vec<String> {
        let mut v = Vec::new();
        for (d, subs) in &self.spec.domains {
            if subs.is_empty() {
                v.push(format!("mon_L3_{d:02}"));
            }
            for s in subs {
                v.push(format!("mon_L3_{d:02}/mon_sub_L3_{s:02}"));
            }
        }
        v
    }

    /// Make a group as the kernel's mkdir does: `""` (the root), `p1` (CTRL_MON),
    /// `mon_groups/m1` or `p1/mon_groups/m1` (MON); every counter 0.
    pub fn group(&self, path: &str) {
        let g = self.mount().join(path);
        fs::create_dir_all(&g).unwrap();
        // A group llctop made already has the tasks it wrote.
        if !g.join("tasks").exists() {
            fs::write(g.join("tasks"), "").unwrap();
        }
        fs::write(g.join("cpus_list"), "").unwrap();
        if !path.contains("mon_groups") {
            fs::create_dir_all(g.join("mon_groups")).unwrap();
        }
        for (d, subs) in &self.spec.domains {
            let top = g.join(format!("mon_data/mon_L3_{d:02}"));
            fs::create_dir_all(&top).unwrap();
            for e in &self.spec.features {
                if EVENTS.contains(e) {
                    fs::write(top.join(e), padded(0)).unwrap();
                }
            }
            for s in subs {
                let sub = top.join(format!("mon_sub_L3_{s:02}"));
                fs::create_dir_all(&sub).unwrap();
                for e in &self.spec.features {
                    if EVENTS.contains(e) {
                        fs::write(sub.join(e), padded(0)).unwrap();
                    }
                }
            }
        }
    }

    /// A group's counter file (a host path).
    pub fn counter(&self, group: &str, leaf: &str, event: &str) -> PathBuf {
        self.mount()
            .join(group)
            .join("mon_data")
            .join(leaf)
            .join(event)
    }

    /// Write a counter file's text in place.
    pub fn set(&self, group: &str, leaf: &str, event: &str, text: &str) {
        let f = self.counter(group, leaf, event);
        assert!(f.exists(), "{} not in the tree", f.display());
        fs::write(f, format!("{text}\n")).unwrap();
    }

    /// Write a value, and with sub-NUMA clustering the L3's own file as the sum of its
    /// nodes' files (what the kernel shows there).
    pub fn set_value(&self, group: &str, leaf: &str, event: &str, v: u64) {
        write_in_place(&self.counter(group, leaf, event), v);
        if let Some((top, _)) = leaf.split_once('/') {
            let dir = self.mount().join(group).join("mon_data").join(top);
            let mut sum = 0u64;
            for e in fs::read_dir(&dir).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    let t = fs::read_to_string(e.path().join(event)).unwrap();
                    sum += t.trim().parse::<u64>().unwrap_or(0);
                }
            }
            write_in_place(&dir.join(event), sum);
        }
    }

    pub fn write(&self, rel: &str, text: &str) {
        super::put(self.dir.path(), rel, text);
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A counter's text: 20 digits (u64's most), zero-padded, as the kernel's number parses.
fn padded(v: u64) -> String {
    format!("{v:020}\n")
}

/// Rewrite a counter file in one `pwrite` at offset 0, without truncating it first.
fn write_in_place(f: &Path, v: u64) {
    use std::os::unix::fs::FileExt as _;
    let file = fs::OpenOptions::new()
        .write(true)
        .open(f)
        .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    let text = padded(v);
    file.write_all_at(text.as_bytes(), 0).unwrap();
    file.set_len(text.len() as u64).unwrap();
}

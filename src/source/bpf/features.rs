//! What the running kernel offers llctop's BPF program, probed before it loads (libbpf's
//! own probes, and one small program the verifier takes or refuses), so that the program
//! is loaded with the parts this kernel cannot take switched off — rather than failing
//! whole on, say, Debian 11's 5.10 — and the source state names what each missing part
//! costs. Kernel generations (what each adds): BTF and tp_btf 5.5; ring buffer 5.8;
//! task-local storage 5.11; atomics that fetch (exchange) 5.12; bpf_loop 5.17; the
//! open-coded task iterator 6.7 (src/source/bpf/settle.rs checks that one).
//!
//! Tests force a feature off with `LLCTOP_BPF_WITHOUT=btf,task_storage,bpf_loop,fetch_atomics`
//! (a test-only switch), so every fallback path runs on a new kernel too.

use libbpf_rs::libbpf_sys;

/// The test-only switch that forces features off.
pub const WITHOUT_ENV: &str = "LLCTOP_BPF_WITHOUT";

/// The kernel's BTF: CO-RE relocations and tp_btf need it.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// What the kernel offers (true: available).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// The kernel's BTF (/sys/kernel/btf/vmlinux, 5.5 with CONFIG_DEBUG_INFO_BTF): field
    /// offsets (CO-RE) and tp_btf. Without it nothing loads.
    pub btf: bool,
    /// BPF_MAP_TYPE_TASK_STORAGE (5.11): waits stamped per task without a hash, and the
    /// per-task settle of runtime and waits.
    pub task_storage: bool,
    /// The bpf_loop helper (5.17): the placement's idle scan over every CPU.
    pub bpf_loop: bool,
    /// Atomic exchange and fetch operations (5.12): the per-task settle.
    pub fetch_atomics: bool,
}

impl Features {
    /// Everything (a kernel from 5.17 on).
    pub const ALL: Features = Features {
        btf: true,
        task_storage: true,
        bpf_loop: true,
        fetch_atomics: true,
    };

    /// Probe the running kernel, then switch off what `LLCTOP_BPF_WITHOUT` names.
    pub fn probe() -> Features {
        let mut f = Features {
            btf: std::path::Path::new(VMLINUX_BTF).exists(),
            task_storage: probe_map(libbpf_sys::BPF_MAP_TYPE_TASK_STORAGE),
            bpf_loop: probe_helper(libbpf_sys::BPF_FUNC_loop),
            fetch_atomics: probe_fetch_atomics(),
        };
        if let Ok(without) = std::env::var(WITHOUT_ENV) {
            f = f.without(&without);
        }
        f
    }

    /// These features with the comma-separated ones named switched off.
    pub fn without(mut self, names: &str) -> Features {
        for n in names.split(',').map(str::trim) {
            match n {
                "btf" => self.btf = false,
                "task_storage" => self.task_storage = false,
                "bpf_loop" => self.bpf_loop = false,
                "fetch_atomics" => self.fetch_atomics = false,
                _ => {}
            }
        }
        self
    }

    /// The per-task settle (runtime and waits from each task's own counters) is possible.
    pub fn settle(self) -> bool {
        self.task_storage && self.fetch_atomics
    }

    /// What each missing feature costs, in the source state's words (empty: nothing).
    pub fn degradations(self, nr_cpu_ids: usize, sched_info: bool) -> Vec<String> {
        let mut out = Vec::new();
        if !self.bpf_loop {
            out.push(if nr_cpu_ids > SCAN_BOUNDED_CPUS {
                format!(
                    "placements without idle-CPU counts: scanning {nr_cpu_ids} CPUs needs bpf_loop (5.17)"
                )
            } else {
                "placements' idle CPUs scanned in a bounded loop (no bpf_loop: 5.17)".to_string()
            });
        }
        if !self.settle() {
            out.push(format!(
                "per-process runtime and waits summed at context switches, not settled from each task's own counters ({})",
                match (self.task_storage, self.fetch_atomics) {
                    (false, false) => "no task-local storage: 5.11; no atomic exchange: 5.12",
                    (false, true) => "no task-local storage: 5.11",
                    _ => "no atomic exchange: 5.12",
                }
            ));
        }
        if !self.task_storage && !sched_info {
            out.push("waits stamped in a hash by pid (no task-local storage: 5.11)".into());
        }
        out
    }
}

/// The most CPU ids the bounded idle scan covers (bpf/llctop.h `SCAN_BOUNDED_CPUS`).
pub const SCAN_BOUNDED_CPUS: usize = super::layout::SCAN_BOUNDED_CPUS;

fn probe_map(t: libbpf_sys::bpf_map_type) -> bool {
    // SAFETY: libbpf's probe creates and closes a map of that type; no pointers but the
    // (null) options.
    unsafe { libbpf_sys::libbpf_probe_bpf_map_type(t, std::ptr::null()) == 1 }
}

fn probe_helper(helper: libbpf_sys::bpf_func_id) -> bool {
    // SAFETY: libbpf's probe loads a two-instruction program calling `helper`.
    unsafe {
        libbpf_sys::libbpf_probe_bpf_helper(
            libbpf_sys::BPF_PROG_TYPE_RAW_TRACEPOINT,
            helper,
            std::ptr::null(),
        ) == 1
    }
}

/// Whether the verifier takes an atomic exchange (BPF_XCHG, 5.12): a five-instruction
/// socket filter, as libbpf's own probes are made (r0 = 0; *(u64 *)(r10 - 8) = r0;
/// r1 = 1; r1 = xchg(r10 - 8, r1); exit).
fn probe_fetch_atomics() -> bool {
    const BPF_STX: u8 = 0x03;
    const BPF_DW: u8 = 0x18;
    const BPF_MEM: u8 = 0x60;
    const BPF_ATOMIC: u8 = 0xc0;
    const BPF_ALU64_MOV_K: u8 = 0x07 | 0xb0;
    const BPF_EXIT: u8 = 0x05 | 0x90;
    const BPF_XCHG: i32 = 0xe0 | 0x01;
    let insn = |code: u8, dst: u8, src: u8, off: i16, imm: i32| {
        let mut i = libbpf_sys::bpf_insn {
            code,
            off,
            imm,
            ..Default::default()
        };
        i.set_dst_reg(dst);
        i.set_src_reg(src);
        i
    };
    let prog = [
        insn(BPF_ALU64_MOV_K, 0, 0, 0, 0),
        insn(BPF_STX | BPF_DW | BPF_MEM, 10, 0, -8, 0),
        insn(BPF_ALU64_MOV_K, 1, 0, 0, 1),
        insn(BPF_STX | BPF_DW | BPF_ATOMIC, 10, 1, -8, BPF_XCHG),
        insn(BPF_EXIT, 0, 0, 0, 0),
    ];
    let license = c"GPL";
    // SAFETY: a valid array of instructions and its length, a NUL-terminated license,
    // no options; the fd returned (if any) is closed at once.
    let fd = unsafe {
        libbpf_sys::bpf_prog_load(
            libbpf_sys::BPF_PROG_TYPE_SOCKET_FILTER,
            std::ptr::null(),
            license.as_ptr(),
            prog.as_ptr(),
            prog.len() as _,
            std::ptr::null_mut(),
        )
    };
    if fd >= 0 {
        // SAFETY: the fd bpf_prog_load just returned, closed once.
        unsafe { libc::close(fd) };
        true
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_switch_turns_features_off_by_name() {
        let f = Features::ALL.without("bpf_loop, task_storage,unknown");
        assert_eq!(
            f,
            Features {
                btf: true,
                task_storage: false,
                bpf_loop: false,
                fetch_atomics: true
            }
        );
        assert!(!f.settle());
        assert!(Features::ALL.settle());
        assert!(Features::ALL.degradations(8, true).is_empty());
    }

    #[test]
    fn each_missing_feature_is_named_with_its_kernel() {
        let old = Features {
            btf: true,
            task_storage: false,
            bpf_loop: false,
            fetch_atomics: false,
        };
        let d = old.degradations(8, false).join("; ");
        assert!(d.contains("bounded loop (no bpf_loop: 5.17)"), "{d}");
        assert!(
            d.contains("task-local storage: 5.11; no atomic exchange: 5.12"),
            "{d}"
        );
        assert!(d.contains("waits stamped in a hash"), "{d}");
        let big = old.degradations(256, true).join("; ");
        assert!(
            big.contains("without idle-CPU counts: scanning 256 CPUs"),
            "{big}"
        );
        assert!(
            !big.contains("stamped"),
            "sched_info gives the waits: {big}"
        );
    }
}

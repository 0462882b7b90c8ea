//! The processes and threads alive when a trace starts, from `/proc` through the kernel
//! root: each process's parent and command line, each thread's name — the trace's first
//! process tree (threads forked later come from the trace's own fork records).

use super::perfetto::{Proc, Thread};
use crate::kroot::KernelRoot;

/// The most threads listed (a bound on the scan and the packet).
const MAX_THREADS: usize = 200_000;

/// `(ppid, comm)` from the text of `/proc/PID/stat` (the name may hold spaces and
/// parentheses: it runs to the last `)`).
pub fn stat_parent(stat: &str) -> Option<(u32, String)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let mut rest = stat.get(close + 1..)?.split_whitespace();
    let _state = rest.next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((ppid, comm))
}

/// Every process and thread under `root`'s `/proc` (those that vanish meanwhile are
/// skipped).
pub fn scan(root: &KernelRoot) -> (Vec<Proc>, Vec<Thread>) {
    let mut procs = Vec::new();
    let mut threads = Vec::new();
    let Ok(pids) = root.numbered_entries("/proc", "") else {
        return (procs, threads);
    };
    for pid in pids {
        let Some((ppid, comm)) = root
            .read(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| stat_parent(&s))
        else {
            continue;
        };
        let cmdline: Vec<String> = root
            .read(format!("/proc/{pid}/cmdline"))
            .map(|c| {
                c.split('\0')
                    .filter(|a| !a.is_empty())
                    .take(64)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        procs.push(Proc {
            pid,
            ppid,
            cmdline: if cmdline.is_empty() {
                vec![comm.clone()]
            } else {
                cmdline
            },
        });
        let tids = root
            .numbered_entries(format!("/proc/{pid}/task"), "")
            .unwrap_or_default();
        for tid in tids {
            if threads.len() >= MAX_THREADS {
                break;
            }
            let name = root
                .read_trimmed(format!("/proc/{pid}/task/{tid}/comm"))
                .unwrap_or_else(|_| comm.clone());
            threads.push(Thread {
                tid,
                tgid: pid,
                name,
            });
        }
    }
    (procs, threads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_spaces_and_parentheses_keep_the_parent() {
        assert_eq!(
            stat_parent("4242 (my (odd) name) S 17 4242 4242 0 -1"),
            Some((17, "my (odd) name".to_string()))
        );
        assert_eq!(stat_parent("1 (init) S 0 1"), Some((0, "init".into())));
        assert_eq!(stat_parent("garbage"), None);
    }
}

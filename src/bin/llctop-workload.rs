//! `llctop-workload`: small, deterministic scheduler workloads for llctop's tests and the
//! kernel lab (it is copied into the lab guest). Not part of the product.
//!
//! - `hop A B N`: a single-threaded process pins itself to CPU A, prints `ready`, waits
//!   for a line on stdin, then alternates its affinity between B and A N times — exactly
//!   N migrations of this process, each verified with sched_getcpu — and prints `done N
//!   migrations M switches V I`: the kernel's own count of its migrations
//!   (`se.nr_migrations`, `?` without /proc/PID/sched) and of its voluntary and involuntary
//!   context switches (getrusage).
//! - `pinned-threads CPUS T SECS`: moves to the first of CPUS, allows all of CPUS (e.g.
//!   `0,2,4,6`), starts T threads (inheriting that) each spinning for SECS seconds, and
//!   prints the parent's CPU and, per thread in creation order, `thread I TID CPU MOVES`:
//!   the CPU it saw first and its migrations by then (`se.nr_migrations`; 0: still where
//!   it was placed) — the stream placement case (shared/seeds/001) in miniature; then
//!   `threads_run_delay_ns N` and `threads_runtime_ns N`, its threads' time waiting on a
//!   run queue and running as the kernel counts them (what a pile-up cost), and the
//!   per-CPU lines of /proc/stat before the threads start and after they end, each
//!   prefixed `stat0 ` and `stat1 ` (how idle each CPU stayed meanwhile).
//! - `spin CPU SECS [QUIET_MS]`: a hog pinned to CPU; prints `ready` once it runs there
//!   and, at the end, `run_delay_ns N` and `runtime_ns N`: its time waiting on a run queue
//!   and its CPU time as the kernel counts them (/proc/thread-self/schedstat). With
//!   QUIET_MS it sleeps that long between its spin and that read (a sleep is no wait), so
//!   that a hog sharing its CPU and started a little later has stopped too: nothing then
//!   waits after the read (its print and exit), which an oracle for a recording's total
//!   needs.
//! - `numa FAR NEAR MB SECS`: MB of memory first-touched on CPU FAR's node, then written
//!   page by page from CPU NEAR (another node) for SECS seconds after a line on stdin;
//!   prints where its pages are before and after (move_pages(2)): what NUMA balancing
//!   migrates (shared/seeds/003).
//! - `churn SECS`: threads that sleep and wake in a ring, for context switches and
//!   wakeup migrations; prints the round trips and its threads' migrations as the kernel
//!   counts them (`se.nr_migrations` of /proc/thread-self/sched: a test's oracle).
//! - `share T SECS`: T threads that read and write one shared 64 KiB working set (far
//!   less than an LLC) for SECS seconds — what cache-aware scheduling gathers on one LLC
//!   (shared/seeds/000). Each thread asks sched_getcpu after every pass and, at the end,
//!   prints its passes per 100 ms slot and CPU (`slot_ms 100`, then `passes SLOT TID CPU
//!   N`, slots from `start_mono_ns`, CLOCK_MONOTONIC): the workload's own view of where
//!   it ran, an oracle that shares no code with llctop.
//! - `shm-pair MIB SECS`: a memfd of MIB MiB mapped shared, then a fork; parent and child
//!   both write a byte of every page of it for SECS seconds; prints `pair PARENT CHILD
//!   BYTES` first (what a sharing check compares with).
//! - `pipe-pair SECS`: a fork, then parent and child pass a byte back and forth through
//!   two pipes for SECS seconds, each blocking in read(2) until the other writes: prints
//!   `pair PARENT CHILD` first, and at the end `rounds N parent_nvcsw P child_nvcsw C` —
//!   the round trips and each side's voluntary context switches (getrusage: its sleeps,
//!   each ended by a wakeup): the bounds a wakeup count is checked against — then
//!   `parent_run_delay_ns D parent_runs R child_run_delay_ns D child_runs R`, each side's
//!   run-queue waits and runs as the kernel counts them (/proc/thread-self/schedstat).
//!   Each side reads it before its last writes and its exit.
//! - `thread-pair SECS`: the same between two threads of one process: prints `threads
//!   PID MAIN OTHER` first (the thread ids), and at the end `rounds N main_nvcsw P
//!   other_nvcsw C`, each thread's own voluntary switches (getrusage RUSAGE_THREAD).
//! - `tick MS SECS`: sleeps MS ms at a time (nanosleep: woken by a timer interrupt, never
//!   by a process) for SECS seconds; prints `ready` first and `ticks N` at the end.
//! - `bpf-stats`: the kernel's run count and run time of every loaded llctop BPF program
//!   (needs `kernel.bpf_stats_enabled=1`), for scripts/overhead.sh.
//! - `bpf-floor SECS PID`: loads the empty programs of bpf/floor.bpf.c (the floor), keeps
//!   them attached SECS seconds, then prints llctop's programs — only those process PID
//!   holds — against them: ns/event and ratios (needs `kernel.bpf_stats_enabled=1`).
//! - `bpf-floor-counters SECS`: the same for a copy of llctop's programs it loads itself
//!   with per-process counter attribution on (software events standing in for hardware
//!   ones), in a window of its own: a second copy running on the same events would make
//!   the other's memory colder and its ratio higher.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn set_affinity(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET stays within its size for cpu < CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c >= libc::CPU_SETSIZE as usize {
                return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
            }
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn current_cpu() -> i32 {
    // SAFETY: no arguments.
    unsafe { libc::sched_getcpu() }
}

/// Print `ready` and wait for a line on stdin (the scenario's go).
fn ready_then_wait_for_go() -> Result<(), String> {
    println!("ready");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    Ok(())
}

fn spin_for(d: Duration) {
    let end = Instant::now() + d;
    let mut x = 0u64;
    while Instant::now() < end {
        x = x.wrapping_add(1);
        std::hint::black_box(x);
    }
}

fn hop(a: usize, b: usize, n: u64) -> Result<(), String> {
    set_affinity(&[a]).map_err(|e| format!("pin to {a}: {e}"))?;
    spin_for(Duration::from_millis(5));
    if current_cpu() != a as i32 {
        return Err(format!("not on cpu {a} after pinning"));
    }
    ready_then_wait_for_go()?;
    for i in 0..n {
        let target = if i % 2 == 0 { b } else { a };
        set_affinity(&[target]).map_err(|e| format!("pin to {target}: {e}"))?;
        if current_cpu() != target as i32 {
            return Err(format!("hop {i}: not on cpu {target}"));
        }
        spin_for(Duration::from_micros(200));
    }
    // The kernel's own counts for this (single-threaded) process: its migrations
    // (`se.nr_migrations`, `?` without /proc/PID/sched) and its context switches
    // (getrusage: voluntary, involuntary) — oracles that share no code with llctop.
    // SAFETY: rusage is plain data that getrusage fills.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    println!(
        "done {n} migrations {} switches {} {}",
        own_migrations().map_or("?".into(), |m| m.to_string()),
        ru.ru_nvcsw,
        ru.ru_nivcsw
    );
    Ok(())
}

fn parse_cpus(s: &str) -> Result<Vec<usize>, String> {
    s.split(',')
        .map(|c| c.trim().parse::<usize>().map_err(|e| format!("{c}: {e}")))
        .collect()
}

/// The per-CPU lines of /proc/stat (`cpuN user nice system idle iowait …`); none when
/// it cannot be read.
fn cpu_times() -> Vec<String> {
    std::fs::read_to_string("/proc/stat")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .map(str::to_string)
        .collect()
}

fn pinned_threads(cpus: &[usize], threads: usize, secs: f64) -> Result<(), String> {
    // Start from the first CPU of the set (the parent's CPU decides where the kernel
    // looks first), then allow the whole set, which the threads inherit.
    let first_cpu = *cpus.first().ok_or("no CPUs")?;
    set_affinity(&[first_cpu]).map_err(|e| e.to_string())?;
    set_affinity(cpus).map_err(|e| e.to_string())?;
    let parent = current_cpu();
    let d = Duration::from_secs_f64(secs);
    // The CPUs' times (/proc/stat) over exactly the threads' life: how idle the CPUs
    // stayed while they ran and waited.
    let stat0 = cpu_times();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            std::thread::spawn(move || {
                let first = current_cpu();
                // Moves so far (counted before sched_getcpu returned, too): 0 means the
                // thread is still on the CPU it was placed on and first ran on.
                let moved = own_migrations();
                // SAFETY: no arguments.
                let tid = unsafe { libc::gettid() };
                spin_for(d);
                (tid, first, moved, own_schedstat())
            })
        })
        .collect();
    let done: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().unwrap_or((-1, -1, None, None)))
        .collect();
    // The kernel's own time waiting and running of all threads (the pile-up's cost).
    let (mut run, mut delay) = (0u64, 0u64);
    for (_, _, _, st) in &done {
        if let Some((r, d)) = st {
            run += r;
            delay += d;
        }
    }
    let stat1 = cpu_times();
    println!("threads_run_delay_ns {delay}");
    println!("threads_runtime_ns {run}");
    for (tag, lines) in [("stat0", &stat0), ("stat1", &stat1)] {
        for l in lines {
            println!("{tag} {l}");
        }
    }
    let firsts: Vec<(i32, i32, Option<u64>)> =
        done.into_iter().map(|(t, c, m, _)| (t, c, m)).collect();
    println!("parent-cpu {parent}");
    for (i, (tid, cpu, moved)) in firsts.iter().enumerate() {
        let moved = moved.map_or("?".to_string(), |m| m.to_string());
        println!("thread {i} {tid} {cpu} {moved}");
    }
    println!(
        "started-on {}",
        firsts
            .iter()
            .map(|c| c.1.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    Ok(())
}

/// The node of each page of `buf` (move_pages(2) in query mode): pages per node.
fn page_nodes(buf: &[u8]) -> Result<std::collections::BTreeMap<i32, usize>, String> {
    const PAGE: usize = 4096;
    let mut pages: Vec<*mut libc::c_void> = buf
        .chunks(PAGE)
        .map(|c| c.as_ptr() as *mut libc::c_void)
        .collect();
    let mut status = vec![-1i32; pages.len()];
    // SAFETY: `pages` and `status` have `pages.len()` entries; a NULL node list asks where
    // each page is without moving it.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0,
            pages.len(),
            pages.as_mut_ptr(),
            std::ptr::null::<i32>(),
            status.as_mut_ptr(),
            0,
        )
    };
    if rc != 0 {
        return Err(format!("move_pages: {}", std::io::Error::last_os_error()));
    }
    let mut per = std::collections::BTreeMap::new();
    for n in status {
        *per.entry(n).or_insert(0) += 1;
    }
    Ok(per)
}

fn print_nodes(when: &str, buf: &[u8]) -> Result<(), String> {
    let per = page_nodes(buf)?;
    let v: Vec<String> = per.iter().map(|(n, c)| format!("{n}:{c}")).collect();
    println!("pages-{when} {}", v.join(" "));
    Ok(())
}

/// `numa FAR NEAR MB SECS`: first-touches MB of memory on CPU FAR (so on its node),
/// prints `ready` and waits for a line on stdin, then runs on CPU NEAR (another node)
/// writing to every page for SECS seconds — what NUMA balancing moves towards the task.
/// Prints where its pages are before and after (`pages-before NODE:PAGES...`).
fn numa(far: usize, near: usize, mb: usize, secs: f64) -> Result<(), String> {
    const PAGE: usize = 4096;
    set_affinity(&[far]).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; mb << 20];
    for p in buf.chunks_mut(PAGE) {
        p[0] = 1;
    }
    print_nodes("before", &buf)?;
    ready_then_wait_for_go()?;
    set_affinity(&[near]).map_err(|e| e.to_string())?;
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut passes = 0u64;
    while Instant::now() < end {
        for p in buf.chunks_mut(PAGE) {
            p[0] = p[0].wrapping_add(1);
        }
        passes += 1;
    }
    std::hint::black_box(&buf);
    println!("passes {passes}");
    print_nodes("after", &buf)
}

/// `spin CPU SECS [QUIET_MS]`: one thread pinned to CPU, running flat out; prints `ready`
/// once there; `quiet`: the sleep between the spin and the read of its own schedstat.
fn spin(cpu: usize, secs: f64, quiet: Duration) -> Result<(), String> {
    set_affinity(&[cpu]).map_err(|e| e.to_string())?;
    if current_cpu() != cpu as i32 {
        return Err(format!("not on cpu {cpu} after pinning"));
    }
    println!("ready");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    spin_for(Duration::from_secs_f64(secs));
    std::thread::sleep(quiet);
    if let Some((r, d)) = own_schedstat() {
        println!("run_delay_ns {d}");
        println!("runtime_ns {r}");
    }
    Ok(())
}

/// `shm-pair MIB SECS`: a memfd of MIB MiB mapped shared, then a fork — parent and child
/// both write a byte of every page of it, flat out, for SECS; prints `pair PARENT CHILD
/// BYTES` first (the construction a sharing check compares with).
fn shm_pair(mib: usize, secs: f64) -> Result<(), String> {
    const PAGE: usize = 4096;
    let len = mib.checked_mul(1 << 20).ok_or("too large")?;
    // SAFETY: a NUL-terminated name; flags are valid.
    let fd = unsafe { libc::memfd_create(c"llctop-pair".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: fd is ours.
    if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
        return Err(format!("ftruncate: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: a fresh shared mapping of the memfd, len bytes.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(format!("mmap: {}", std::io::Error::last_os_error()));
    }
    let touch = || {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            for off in (0..len).step_by(PAGE) {
                // SAFETY: off < len, inside the mapping.
                unsafe {
                    let b = (p as *mut u8).add(off);
                    b.write_volatile(b.read_volatile().wrapping_add(1));
                }
            }
        }
    };
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    // SAFETY: this program is single-threaded here; the child only touches the mapping
    // and exits.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if child == 0 {
        touch();
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(0) };
    }
    println!("pair {} {child} {len}", std::process::id());
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    touch();
    let mut status = 0;
    // SAFETY: our own child.
    unsafe { libc::waitpid(child, &mut status, 0) };
    Ok(())
}

/// This process's voluntary context switches (getrusage: every thread's sleeps).
fn own_nvcsw() -> i64 {
    // SAFETY: a zeroed rusage for getrusage to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_nvcsw
}

/// Write all of `b` to `fd`, or fail.
fn write_all(fd: i32, b: &[u8]) -> Result<(), String> {
    // SAFETY: b is valid for b.len() bytes.
    match unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) } {
        n if n == b.len() as isize => Ok(()),
        _ => Err(format!("write: {}", std::io::Error::last_os_error())),
    }
}

/// Read exactly `b.len()` bytes from `fd` (a pipe hands over small writes whole), or fail.
fn read_exact(fd: i32, b: &mut [u8]) -> Result<(), String> {
    // SAFETY: b is valid for b.len() bytes.
    match unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) } {
        n if n == b.len() as isize => Ok(()),
        _ => Err(format!("read: {}", std::io::Error::last_os_error())),
    }
}

/// `pipe-pair SECS`: a parent and its child passing a byte back and forth through two
/// pipes for SECS seconds (the parent sends 1 to go on, 0 to stop; the child answers
/// each 1, and the 0 with its voluntary switches as 8 bytes, then exits).
fn pipe_pair(secs: f64) -> Result<(), String> {
    let mut to_child = [0i32; 2];
    let mut to_parent = [0i32; 2];
    // SAFETY: arrays of two fds for pipe(2) to fill.
    if unsafe { libc::pipe(to_child.as_mut_ptr()) } != 0
        || unsafe { libc::pipe(to_parent.as_mut_ptr()) } != 0
    {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    // SAFETY: single-threaded here; the child only reads, writes and exits.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if child == 0 {
        let mut b = [0u8; 1];
        while read_exact(to_child[0], &mut b).is_ok() && b[0] == 1 {
            if write_all(to_parent[1], &[1]).is_err() {
                break;
            }
        }
        let (delay, runs) = own_waits().unwrap_or((u64::MAX, u64::MAX));
        let mut end = [0u8; 24];
        end[..8].copy_from_slice(&own_nvcsw().to_ne_bytes());
        end[8..16].copy_from_slice(&delay.to_ne_bytes());
        end[16..].copy_from_slice(&runs.to_ne_bytes());
        let _ = write_all(to_parent[1], &end);
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(0) };
    }
    println!("pair {} {child}", std::process::id());
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut rounds = 0u64;
    let mut b = [0u8; 1];
    while Instant::now() < end {
        write_all(to_child[1], &[1])?;
        read_exact(to_parent[0], &mut b)?;
        rounds += 1;
    }
    write_all(to_child[1], &[0])?;
    let mut n = [0u8; 24];
    read_exact(to_parent[0], &mut n)?;
    let parent = own_nvcsw();
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&n[i * 8..(i + 1) * 8]);
        w
    };
    let (delay, runs) = own_waits().unwrap_or((u64::MAX, u64::MAX));
    println!(
        "rounds {rounds} parent_nvcsw {parent} child_nvcsw {} parent_run_delay_ns {delay} parent_runs {runs} child_run_delay_ns {} child_runs {}",
        i64::from_ne_bytes(word(0)),
        u64::from_ne_bytes(word(1)),
        u64::from_ne_bytes(word(2)),
    );
    let mut status = 0;
    // SAFETY: our own child.
    unsafe { libc::waitpid(child, &mut status, 0) };
    Ok(())
}

/// This thread's voluntary context switches (getrusage RUSAGE_THREAD).
fn thread_nvcsw() -> i64 {
    // SAFETY: a zeroed rusage for getrusage to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru.ru_nvcsw
}

/// `thread-pair SECS`: pipe_pair's ping-pong between two threads of this process.
fn thread_pair(secs: f64) -> Result<(), String> {
    let mut to_other = [0i32; 2];
    let mut to_main = [0i32; 2];
    // SAFETY: arrays of two fds for pipe(2) to fill.
    if unsafe { libc::pipe(to_other.as_mut_ptr()) } != 0
        || unsafe { libc::pipe(to_main.as_mut_ptr()) } != 0
    {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let other = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        let _ = tid_tx.send(unsafe { libc::gettid() });
        let mut b = [0u8; 1];
        while read_exact(to_other[0], &mut b).is_ok() && b[0] == 1 {
            if write_all(to_main[1], &[1]).is_err() {
                break;
            }
        }
        let _ = write_all(to_main[1], &thread_nvcsw().to_ne_bytes());
    });
    let tid = tid_rx.recv().map_err(|e| e.to_string())?;
    // SAFETY: gettid has no preconditions.
    let main = unsafe { libc::gettid() };
    println!("threads {} {main} {tid}", std::process::id());
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut rounds = 0u64;
    let mut b = [0u8; 1];
    while Instant::now() < end {
        write_all(to_other[1], &[1])?;
        read_exact(to_main[0], &mut b)?;
        rounds += 1;
    }
    write_all(to_other[1], &[0])?;
    let mut n = [0u8; 8];
    read_exact(to_main[0], &mut n)?;
    let mine = thread_nvcsw();
    println!(
        "rounds {rounds} main_nvcsw {mine} other_nvcsw {}",
        i64::from_ne_bytes(n)
    );
    other
        .join()
        .map_err(|_| "the other thread panicked".to_string())
}

/// `tick MS SECS`: sleep MS ms at a time for SECS seconds (a timer interrupt wakes it).
fn tick(ms: u64, secs: f64) -> Result<(), String> {
    println!("ready");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut ticks = 0u64;
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(ms));
        ticks += 1;
    }
    println!("ticks {ticks}");
    Ok(())
}

/// The kernel's own account of this thread's time running and waiting on a run queue
/// (/proc/thread-self/schedstat: runtime, run_delay), ns.
fn own_schedstat() -> Option<(u64, u64)> {
    let t = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let field = |i: usize| t.split_whitespace().nth(i)?.parse::<u64>().ok();
    Some((field(0)?, field(1)?))
}

/// The kernel's own account of this thread's run-queue waits: their total (ns) and its
/// runs, the switch-ins that ended them (/proc/thread-self/schedstat: run_delay, pcount).
fn own_waits() -> Option<(u64, u64)> {
    let t = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let field = |i: usize| t.split_whitespace().nth(i)?.parse::<u64>().ok();
    Some((field(1)?, field(2)?))
}

/// This thread's migrations as the kernel counts them (`None` without the file).
fn own_migrations() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
    text.lines()
        .find(|l| l.starts_with("se.nr_migrations"))?
        .split(':')
        .nth(1)?
        .trim()
        .parse()
        .ok()
}

fn churn(secs: f64) -> Result<(), String> {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    let (tx2, rx2) = std::sync::mpsc::channel::<u64>();
    let t = std::thread::spawn(move || {
        while let Ok(v) = rx.recv() {
            if tx2.send(v + 1).is_err() {
                break;
            }
        }
        own_migrations()
    });
    let mut v = 0;
    while Instant::now() < end {
        tx.send(v).map_err(|e| e.to_string())?;
        v = rx2.recv().map_err(|e| e.to_string())?;
    }
    drop(tx);
    let worker = t.join().map_err(|_| "worker panicked".to_string())?;
    let migrations = worker.zip(own_migrations()).map(|(a, b)| a + b);
    match migrations {
        Some(m) => println!("round-trips {v} migrations {m}"),
        None => println!("round-trips {v} migrations ?"),
    }
    Ok(())
}

fn share(threads: usize, secs: u64) -> Result<(), String> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    const WORDS: usize = 64 * 1024 / 8;
    let set: Arc<Vec<AtomicU64>> = Arc::new((0..WORDS).map(|_| AtomicU64::new(0)).collect());
    let start = Instant::now();
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    // Slots finer than a snapshot's interval, so that an oracle spreading a slot's
    // passes evenly over it errs by at most a tenth of a 1 s snapshot.
    const SLOT_MS: u128 = 100;
    println!(
        "start_mono_ns {}",
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    );
    println!("slot_ms {SLOT_MS}");
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let set = Arc::clone(&set);
            std::thread::spawn(move || {
                // SAFETY: gettid has no preconditions.
                let tid = unsafe { libc::gettid() };
                // passes[slot][cpu]
                let mut passes: Vec<Vec<u64>> = Vec::new();
                loop {
                    let elapsed = start.elapsed();
                    if elapsed.as_secs() >= secs {
                        break;
                    }
                    for w in set.iter().step_by(8) {
                        w.fetch_add(1, Ordering::Relaxed);
                    }
                    let slot = (elapsed.as_millis() / SLOT_MS) as usize;
                    let cpu = current_cpu().max(0) as usize;
                    if passes.len() <= slot {
                        passes.resize(slot + 1, Vec::new());
                    }
                    if passes[slot].len() <= cpu {
                        passes[slot].resize(cpu + 1, 0);
                    }
                    passes[slot][cpu] += 1;
                }
                (tid, passes)
            })
        })
        .collect();
    let mut out = String::new();
    for h in handles {
        let (tid, passes) = h.join().map_err(|_| "a thread panicked".to_string())?;
        for (slot, cpus) in passes.iter().enumerate() {
            for (cpu, n) in cpus.iter().enumerate().filter(|(_, n)| **n > 0) {
                out.push_str(&format!("passes {slot} {tid} {cpu} {n}\n"));
            }
        }
    }
    print!("{out}");
    Ok(())
}

fn bpf_stats() -> Result<(), String> {
    println!(
        "{:<16} {:>12} {:>14} {:>10}",
        "program", "run_cnt", "run_time_ns", "ns/event"
    );
    for p in libbpf_rs::query::ProgInfoIter::default() {
        let name = p.name.to_string_lossy();
        if !(name.starts_with("btf_") || name.starts_with("raw_")) {
            continue;
        }
        let avg = if p.run_cnt > 0 {
            p.run_time_ns as f64 / p.run_cnt as f64
        } else {
            0.0
        };
        println!(
            "{:<16} {:>12} {:>14} {:>10.1}",
            name, p.run_cnt, p.run_time_ns, avg
        );
    }
    Ok(())
}

/// The BPF program ids process `pid` holds (its prog and link fds' fdinfo).
fn prog_ids_of(pid: u32) -> Result<std::collections::BTreeSet<u32>, String> {
    let dir = format!("/proc/{pid}/fdinfo");
    let mut ids = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(&dir)
        .map_err(|e| format!("{dir}: {e}"))?
        .flatten()
    {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for l in text.lines() {
            if let Some(v) = l.strip_prefix("prog_id:")
                && let Ok(id) = v.trim().parse()
            {
                ids.insert(id);
            }
        }
    }
    Ok(ids)
}

/// A second copy of llctop's BPF source, in this process, with per-process counter
/// attribution on: software events stand in for the hardware ones (this VM has no PMU),
/// so the switch hook's cost with attribution is known before it runs on a PMU.
fn attributed_source() -> Result<(llctop::source::bpf::BpfSource, usize), String> {
    use llctop::source::perf::{PerfSource, Slot, Spec};
    use perf_event_open::event::sw::Software;
    let root = llctop::kroot::KernelRoot::default();
    let topo = llctop::topology::discover(&root).map_err(|e| e.to_string())?;
    let mut bpf = llctop::source::bpf::BpfSource::load(&topo, 100).map_err(|e| e.to_string())?;
    let perf = PerfSource::open_events(
        &root,
        &topo,
        vec![
            (Slot::Cycles, Spec::Software(Software::CpuClock)),
            (Slot::Instructions, Spec::Software(Software::TaskClock)),
            (Slot::CacheMisses, Spec::Software(Software::CtxSwitch)),
        ],
    );
    let cpus = bpf.attach_counters(&perf);
    if cpus == 0 {
        return Err("no CPU's counters could be attached".into());
    }
    Ok((bpf, cpus))
}

/// Compare the programs `held` by a process (by their ids) with the empty programs of
/// this process, after `secs` seconds of the floor attached.
fn floor_report(
    secs: u64,
    theirs: impl Fn() -> Result<std::collections::BTreeSet<u32>, String>,
) -> Result<String, String> {
    use llctop::source::bpf::floor::{self, ProgStats};
    let _floor = floor::load().map_err(|e| format!("loading the empty programs: {e}"))?;
    println!("floor attached for {secs} s");
    std::thread::sleep(Duration::from_secs(secs));
    let theirs = theirs()?;
    let own = prog_ids_of(std::process::id())?;
    let (mut measured, mut empty) = (Vec::new(), Vec::new());
    for p in libbpf_rs::query::ProgInfoIter::default() {
        let s = ProgStats {
            name: p.name.to_string_lossy().into_owned(),
            run_cnt: p.run_cnt,
            run_time_ns: p.run_time_ns,
        };
        if own.contains(&p.id) && s.name.starts_with("floor_") {
            empty.push(s);
        } else if theirs.contains(&p.id) {
            measured.push(s);
        }
    }
    if measured.is_empty() {
        return Err("no llctop BPF program to measure".into());
    }
    Ok(floor::compare(&measured, &empty).0)
}

fn bpf_floor(secs: u64, pid: u32) -> Result<(), String> {
    print!("{}", floor_report(secs, || prog_ids_of(pid))?);
    Ok(())
}

/// The floor beside a copy of llctop's programs with per-process counters on, loaded by
/// this process (its programs other than the floor's are that copy's).
fn bpf_floor_counters(secs: u64) -> Result<(), String> {
    let (_bpf, cpus) = attributed_source()?;
    println!(
        "per-process counters on ({cpus} CPUs; software stand-ins: cpu-clock, task-clock, context-switches)"
    );
    let own = || prog_ids_of(std::process::id());
    print!("{}", floor_report(secs, own)?);
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let res = match a.as_slice() {
        ["hop", x, y, n] => match (x.parse(), y.parse(), n.parse()) {
            (Ok(x), Ok(y), Ok(n)) => hop(x, y, n),
            _ => Err("hop A B N: numbers expected".into()),
        },
        ["pinned-threads", cpus, t, s] => match (parse_cpus(cpus), t.parse(), s.parse()) {
            (Ok(c), Ok(t), Ok(s)) => pinned_threads(&c, t, s),
            _ => Err("pinned-threads CPUS THREADS SECS".into()),
        },
        ["spin", c, s, quiet @ ..] if quiet.len() <= 1 => {
            let quiet = quiet.first().map_or(Ok(0), |q| q.parse());
            match (c.parse(), s.parse(), quiet) {
                (Ok(c), Ok(s), Ok(q)) => spin(c, s, Duration::from_millis(q)),
                _ => Err("spin CPU SECS [QUIET_MS]".into()),
            }
        }
        ["numa", far, near, mb, s] => match (far.parse(), near.parse(), mb.parse(), s.parse()) {
            (Ok(f), Ok(n), Ok(m), Ok(s)) => numa(f, n, m, s),
            _ => Err("numa FAR NEAR MB SECS".into()),
        },
        ["churn", s] => s
            .parse()
            .map_err(|_| "churn SECS".to_string())
            .and_then(churn),
        ["share", t, s] => match (t.parse(), s.parse()) {
            (Ok(t), Ok(s)) => share(t, s),
            _ => Err("share THREADS SECS".into()),
        },
        ["shm-pair", m, s] => match (m.parse(), s.parse()) {
            (Ok(m), Ok(s)) => shm_pair(m, s),
            _ => Err("shm-pair MIB SECS".into()),
        },
        ["pipe-pair", s] => s
            .parse()
            .map_err(|_| "pipe-pair SECS".to_string())
            .and_then(pipe_pair),
        ["thread-pair", s] => s
            .parse()
            .map_err(|_| "thread-pair SECS".to_string())
            .and_then(thread_pair),
        ["tick", ms, s] => match (ms.parse(), s.parse()) {
            (Ok(ms), Ok(s)) => tick(ms, s),
            _ => Err("tick MS SECS".into()),
        },
        ["bpf-stats"] => bpf_stats(),
        ["bpf-floor", s, pid] => match (s.parse(), pid.parse()) {
            (Ok(s), Ok(p)) => bpf_floor(s, p),
            _ => Err("bpf-floor SECS PID".into()),
        },
        ["bpf-floor-counters", s] => s
            .parse()
            .map_err(|_| "bpf-floor-counters SECS".to_string())
            .and_then(bpf_floor_counters),
        _ => Err(
            "usage: llctop-workload hop A B N | pinned-threads CPUS T SECS | spin CPU SECS [QUIET_MS] | numa FAR NEAR MB SECS | churn SECS | share T SECS | shm-pair MIB SECS | pipe-pair SECS | tick MS SECS | bpf-stats | bpf-floor SECS PID | bpf-floor-counters SECS"
                .into(),
        ),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("llctop-workload: {e}");
            ExitCode::FAILURE
        }
    }
}

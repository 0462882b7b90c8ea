//! Compiles bpf/llctop.bpf.c (and bpf/floor.bpf.c, the empty programs scripts/overhead.sh
//! measures against, and bpf/wakers.bpf.c, the wakeup pairs `--wakeups` loads) with clang
//! into BPF objects and generates their libbpf-rs skeletons (OUT_DIR/llctop.skel.rs,
//! OUT_DIR/floor.skel.rs, OUT_DIR/wakers.skel.rs). Needs clang; libbpf's headers come
//! with libbpf-sys.

use std::env;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

const SRCS: [(&str, &str); 3] = [
    ("bpf/llctop.bpf.c", "llctop.skel.rs"),
    ("bpf/floor.bpf.c", "floor.skel.rs"),
    ("bpf/wakers.bpf.c", "wakers.skel.rs"),
];

fn main() {
    let dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
    for (src, skel) in SRCS {
        if let Err(e) = SkeletonBuilder::new()
            .source(src)
            .clang_args(["-I", "bpf", "-Wall", "-Wno-unused-function", "-O2", "-g"])
            .build_and_generate(dir.join(skel))
        {
            panic!(
                "building {src} failed (is clang installed? scripts/deps.sh installs it): {e:#}"
            );
        }
        println!("cargo:rerun-if-changed={src}");
    }
    // The program's parts (llctop.h, *.bpf.h) and vmlinux.h: any file of bpf/.
    println!("cargo:rerun-if-changed=bpf");
}

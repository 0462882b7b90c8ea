//! Compiles bpf/llctop.bpf.c with clang into a BPF object and generates its libbpf-rs
//! skeleton (OUT_DIR/llctop.skel.rs). Needs clang; libbpf's headers come with libbpf-sys.

use std::env;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

const SRC: &str = "bpf/llctop.bpf.c";

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"))
        .join("llctop.skel.rs");
    if let Err(e) = SkeletonBuilder::new()
        .source(SRC)
        .clang_args(["-I", "bpf", "-Wall", "-Wno-unused-function", "-O2", "-g"])
        .build_and_generate(&out)
    {
        panic!("building {SRC} failed (is clang installed? scripts/deps.sh installs it): {e:#}");
    }
    println!("cargo:rerun-if-changed={SRC}");
    println!("cargo:rerun-if-changed=bpf/vmlinux.h");
}

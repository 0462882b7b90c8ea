//! Writes the README's pictures: every TUI view of the kernel lab's recording
//! (tests/fixtures/recordings/placement-7.2-bpf.jsonl: 8 vCPUs, 4 LLCs, 2 nodes, SMT,
//! kernel 7.2, the placement scenario's workload) replayed and drawn by the TUI itself
//! into SVG (llctop::tui::shot), to docs/screenshots/. Rerun when a view changes
//! (scripts/screenshots.sh); tests/host/screenshots.rs fails while a picture is stale.

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rec = llctop::record::reader::open(&root.join(llctop::tui::shot::RECORDING))?;
    let dir = root.join("docs/screenshots");
    std::fs::create_dir_all(&dir)?;
    for (name, svg) in llctop::tui::shot::every_view(rec, llctop::tui::shot::FILE_LABEL) {
        let p = dir.join(&name);
        std::fs::write(&p, &svg)?;
        println!("{} ({} KiB)", p.display(), svg.len().div_ceil(1024));
    }
    Ok(())
}

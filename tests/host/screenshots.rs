//! The README's pictures are current (issue "Pictures"): every view drawn now from the
//! lab's recording equals its picture in docs/screenshots/ (same size, same title, same
//! cells), each picture is under 200 KB, and the README shows the Overview and links the
//! rest. A view that changed without `scripts/screenshots.sh` fails here.

use std::path::Path;

#[test]
fn every_view_has_a_current_picture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rec = llctop::record::reader::open(&root.join(llctop::tui::shot::RECORDING)).unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let pictures = llctop::tui::shot::every_view(rec, llctop::tui::shot::FILE_LABEL);
    assert_eq!(pictures.len(), llctop::tui::app::ViewId::ALL.len());
    let mut stale = Vec::new();
    for (name, svg) in &pictures {
        let path = root.join("docs/screenshots").join(name);
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        if on_disk != *svg {
            stale.push(name.clone());
        }
        assert!(svg.len() < 200 * 1024, "{name}: {} bytes", svg.len());
        assert!(svg.contains("<title>llctop — "), "{name}");
        assert!(
            readme.contains(&format!("docs/screenshots/{name}")),
            "README does not show or link {name}"
        );
    }
    assert!(
        stale.is_empty(),
        "stale pictures (run scripts/screenshots.sh): {stale:?}"
    );
    // The README opens with the Overview: before its first section.
    let first_section = readme.find("\n## ").unwrap_or(readme.len());
    assert!(
        readme[..first_section].contains("![llctop's Overview](docs/screenshots/overview.svg)")
    );
}

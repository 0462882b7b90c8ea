//! Cgroup directories for knobs: walking a hierarchy for the directories that have a
//! given control file, and resolving an operator-given cgroup path so that it cannot leave
//! the cgroup mount (`..`, symlinks and absolute tricks are resolved first, then checked).

use std::path::{Component, Path, PathBuf};

use crate::kroot::KernelRoot;

/// Most directories a walk looks at (systemd hosts have hundreds of cgroups; knobs are
/// listed for the first ones, and any other can still be named with `@/path`).
pub const WALK_LIMIT: usize = 256;

/// Cgroup paths (relative to the mount, `/` for the root) below `mount` whose directory
/// holds `file`, breadth-first, at most [`WALK_LIMIT`] directories visited.
pub fn walk_with_file(root: &KernelRoot, mount: &Path, file: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut queue = vec![String::from("/")];
    let mut visited = 0;
    while let Some(cg) = (!queue.is_empty()).then(|| queue.remove(0)) {
        visited += 1;
        if visited > WALK_LIMIT {
            break;
        }
        let dir = join(mount, &cg);
        if root.exists(dir.join(file)) {
            out.push(cg.clone());
        }
        let Ok(entries) = std::fs::read_dir(root.path(&dir)) else {
            continue;
        };
        let mut children: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        children.sort();
        for c in children {
            queue.push(if cg == "/" {
                format!("/{c}")
            } else {
                format!("{cg}/{c}")
            });
        }
    }
    out
}

/// The kernel path of cgroup `cg` (e.g. `/db/web`) under `mount`.
pub fn join(mount: &Path, cg: &str) -> PathBuf {
    let rel = cg.trim_start_matches('/');
    if rel.is_empty() {
        mount.to_path_buf()
    } else {
        mount.join(rel)
    }
}

/// Resolve an operator-given cgroup path to the kernel path of its `file`, refusing
/// anything that ends up outside `mount` (after `..` and symlinks are resolved) or that is
/// not an existing directory holding `file`. Returns the normalised cgroup path and the
/// file's kernel path.
pub fn resolve(
    root: &KernelRoot,
    mount: &Path,
    cg: &str,
    file: &str,
) -> Result<(String, PathBuf), String> {
    if cg.contains('\0') {
        return Err(format!("{cg:?}: not a cgroup path"));
    }
    if Path::new(cg)
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        return Err(format!("{cg:?}: `..` is not allowed in a cgroup path"));
    }
    let mount_real = std::fs::canonicalize(root.path(mount))
        .map_err(|e| format!("{}: {e}", root.path(mount).display()))?;
    let wanted = root.path(join(mount, cg));
    let real = std::fs::canonicalize(&wanted)
        .map_err(|e| format!("cgroup {cg:?}: {}: {e}", wanted.display()))?;
    let Ok(rel) = real.strip_prefix(&mount_real) else {
        return Err(format!(
            "cgroup {cg:?} resolves to {} outside the cgroup mount {}",
            real.display(),
            mount.display()
        ));
    };
    if !real.is_dir() || !real.join(file).is_file() {
        return Err(format!("cgroup {cg:?} has no {file}"));
    }
    let rel = rel.to_string_lossy();
    let norm = if rel.is_empty() {
        "/".to_string()
    } else {
        format!("/{rel}")
    };
    let kpath = join(mount, &norm).join(file);
    Ok((norm, kpath))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("sys/fs/cgroup");
        std::fs::create_dir_all(m.join("a/b")).unwrap();
        std::fs::create_dir_all(m.join("c")).unwrap();
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        std::fs::write(dir.path().join("etc/cpu.x"), "1").unwrap();
        for d in ["", "a", "a/b"] {
            std::fs::write(m.join(d).join("cpu.x"), "0\n").unwrap();
        }
        std::os::unix::fs::symlink(dir.path().join("etc"), m.join("c/link")).unwrap();
        let root = KernelRoot::new(dir.path());
        let mount = Path::new("/sys/fs/cgroup");
        assert_eq!(
            walk_with_file(&root, mount, "cpu.x"),
            vec!["/", "/a", "/a/b"]
        );
        let (cg, p) = resolve(&root, mount, "a//b/", "cpu.x").unwrap();
        assert_eq!(cg, "/a/b");
        assert_eq!(p, PathBuf::from("/sys/fs/cgroup/a/b/cpu.x"));
        assert_eq!(resolve(&root, mount, "/", "cpu.x").unwrap().0, "/");
        assert!(
            resolve(&root, mount, "/../../../etc", "cpu.x")
                .unwrap_err()
                .contains("`..`")
        );
        assert!(
            resolve(&root, mount, "/c/link", "cpu.x")
                .unwrap_err()
                .contains("outside the cgroup mount")
        );
        assert!(
            resolve(&root, mount, "/c", "cpu.x")
                .unwrap_err()
                .contains("has no cpu.x")
        );
        assert!(resolve(&root, mount, "/nope", "cpu.x").is_err());
    }
}

//! resctrl's group directories as they are now (Documentation/filesystems/resctrl.rst):
//! the root group, each CTRL_MON group that monitors, and the MON groups of each —
//! listed by the resctrl source every interval and by the knobs session before it
//! unmounts (another's group keeps the mount).

use std::path::Path;

use crate::kroot::{KResult, KernelRoot};
use crate::snapshot::GroupKind;

/// One group directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDir {
    /// Under the mount: `""` for the root, `p1`, `mon_groups/m1`, `p1/mon_groups/m11`.
    pub path: String,
    pub kind: GroupKind,
}

/// Directories at the top of the mount that are not groups.
const NOT_GROUPS: [&str; 3] = ["info", "mon_data", "mon_groups"];

/// Every monitoring group now: the root, each CTRL_MON group that monitors (has
/// `mon_data`: a pseudo-locked one does not), and the MON groups of each.
pub fn groups(root: &KernelRoot, mount: &Path) -> KResult<Vec<GroupDir>> {
    let mut out = vec![GroupDir {
        path: String::new(),
        kind: GroupKind::Root,
    }];
    let mut parents = vec![String::new()];
    for name in root.list_subdirs(mount)? {
        if NOT_GROUPS.contains(&name.as_str()) || !root.is_dir(mount.join(&name).join("mon_data")) {
            continue;
        }
        out.push(GroupDir {
            path: name.clone(),
            kind: GroupKind::CtrlMon,
        });
        parents.push(name);
    }
    for p in parents {
        let dir = mount.join(&p).join("mon_groups");
        let names = match root.list_subdirs(&dir) {
            Ok(n) => n,
            // A CTRL_MON group removed since it was listed.
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e),
        };
        for name in names {
            let path = if p.is_empty() {
                format!("mon_groups/{name}")
            } else {
                format!("{p}/mon_groups/{name}")
            };
            out.push(GroupDir {
                path,
                kind: GroupKind::Mon,
            });
        }
    }
    out.sort_by(|a, b| {
        (a.kind != GroupKind::Root, &a.path).cmp(&(b.kind != GroupKind::Root, &b.path))
    });
    Ok(out)
}

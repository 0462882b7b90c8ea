#!/usr/bin/env python3
"""Generate the sysfs fixture trees under tests/fixtures/topology/.

Each fixture is a minimal /sys/devices/system/{cpu,node} tree with just the files
llctop's topology discovery reads, built from a machine description (numbers from
shared/reference/kernel-interfaces.md §9 and vendor cache geometry), plus an
`expected.json` with the scheduler LLCs and NUMA nodes *as the kernel would form them*,
computed here from the description — independently of llctop's code — so the Rust test
that compares them can fail.

Usage: python3 tests/gen_fixtures.py   (rewrites tests/fixtures/topology/)
"""
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "topology")


def cpulist(cpus):
    cpus = sorted(cpus)
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


class Machine:
    """cpus: dict cpu -> dict(package, die, core_id, cluster_id, node, smt=[...],
    cluster=[...], caches=[(level, type, size_kb, shared_cpus)]).
    sched_llc: list of CPU sets the scheduler treats as LLCs (the expected answer)."""

    def __init__(self, name, ncpus):
        self.name = name
        self.ncpus = ncpus
        self.cpus = {}
        self.offline = set()
        self.node_distance = {}
        self.nodes = {}
        self.with_caches = True

    def emit(self):
        root = os.path.join(OUT, self.name)
        shutil.rmtree(root, ignore_errors=True)
        cpu_dir = os.path.join(root, "sys/devices/system/cpu")
        node_dir = os.path.join(root, "sys/devices/system/node")
        online = sorted(c for c in self.cpus if c not in self.offline)
        write(os.path.join(cpu_dir, "online"), cpulist(online))
        write(os.path.join(cpu_dir, "offline"), cpulist(self.offline))
        write(os.path.join(cpu_dir, "present"), cpulist(self.cpus))
        write(os.path.join(cpu_dir, "possible"), cpulist(self.cpus))
        on = set(online)
        for c, d in sorted(self.cpus.items()):
            base = os.path.join(cpu_dir, f"cpu{c}")
            if c in self.offline:
                # Offline CPUs keep only their `online` file.
                write(os.path.join(base, "online"), "0")
                continue
            if c != 0:
                write(os.path.join(base, "online"), "1")
            t = os.path.join(base, "topology")
            write(os.path.join(t, "physical_package_id"), str(d["package"]))
            write(os.path.join(t, "die_id"), str(d.get("die", 0)))
            write(os.path.join(t, "core_id"), str(d["core_id"]))
            write(os.path.join(t, "cluster_id"), str(d.get("cluster_id", 65535)))
            smt = [x for x in d["smt"] if x in on]
            write(os.path.join(t, "thread_siblings_list"), cpulist(smt))
            cl = [x for x in d.get("cluster", d["smt"]) if x in on]
            write(os.path.join(t, "cluster_cpus_list"), cpulist(cl))
            pkg = [x for x, e in self.cpus.items() if e["package"] == d["package"] and x in on]
            write(os.path.join(t, "package_cpus_list"), cpulist(pkg))
            if not self.with_caches:
                continue
            for i, (level, kind, size_kb, shared) in enumerate(d["caches"]):
                ci = os.path.join(base, "cache", f"index{i}")
                write(os.path.join(ci, "level"), str(level))
                write(os.path.join(ci, "type"), kind)
                write(os.path.join(ci, "size"), f"{size_kb}K")
                sh = [x for x in shared if x in on]
                write(os.path.join(ci, "shared_cpu_list"), cpulist(sh))
                write(os.path.join(ci, "id"), str(min(shared)))
        for n, cpus in sorted(self.nodes.items()):
            nd = os.path.join(node_dir, f"node{n}")
            write(os.path.join(nd, "cpulist"), cpulist([c for c in cpus if c in on]))
            write(os.path.join(nd, "distance"), " ".join(str(self.node_distance[(n, m)]) for m in sorted(self.nodes)))
        if self.nodes:
            write(os.path.join(node_dir, "online"), cpulist(self.nodes))
        # The expected answer, from the description.
        llc_sets = {}
        for c in online:
            d = self.cpus[c]
            llc_sets.setdefault(tuple(sorted(x for x in d["sched_llc"] if x in on)), None)
        llcs = sorted((list(s) for s in llc_sets), key=lambda s: s[0])
        expected = {
            "online": online,
            "offline": sorted(self.offline),
            "llcs": llcs,
            "nodes": [sorted(c for c in cpus if c in on) for _, cpus in sorted(self.nodes.items())],
            "llc_size_kb": [self.cpus[s[0]]["llc_size_kb"] for s in llcs],
            # The id file of each LLC's cache (the highest unified level), as written above.
            "llc_cache_id": [self.cache_id(s[0]) for s in llcs],
        }
        with open(os.path.join(root, "expected.json"), "w") as f:
            json.dump(expected, f, indent=1)
            f.write("\n")


def _cache_id(self, cpu):
    if not self.with_caches:
        return None
    unified = [c for c in self.cpus[cpu]["caches"] if c[1] == "Unified"]
    if not unified:
        return None
    level, _, _, shared = max(unified, key=lambda c: c[0])
    return min(shared)


Machine.cache_id = _cache_id


def set_nodes(m, node_of, distance):
    for c in m.cpus:
        m.nodes.setdefault(node_of(c), []).append(c)
    for a in m.nodes:
        for b in m.nodes:
            m.node_distance[(a, b)] = distance(a, b)


def x86_smt(name, sockets, cores_per_socket, llc_cores, l1d, l1i, l2, l3, nodes_per_socket=1,
            snc_distance=None, cross_distance=32):
    """Linux x86 numbering: all cores of all sockets first, then their SMT siblings."""
    total_cores = sockets * cores_per_socket
    m = Machine(name, 2 * total_cores)
    for core in range(total_cores):
        pkg, cid = divmod(core, cores_per_socket)
        l3_first = pkg * cores_per_socket + (cid // llc_cores) * llc_cores
        l3_cores = range(l3_first, l3_first + llc_cores)
        l3_cpus = [c for k in l3_cores for c in (k, k + total_cores)]
        per_node = cores_per_socket // nodes_per_socket
        node = pkg * nodes_per_socket + cid // per_node
        node_cores = range(pkg * cores_per_socket + (cid // per_node) * per_node,
                           pkg * cores_per_socket + (cid // per_node + 1) * per_node)
        node_cpus = [c for k in node_cores for c in (k, k + total_cores)]
        for cpu in (core, core + total_cores):
            m.cpus[cpu] = dict(
                package=pkg, core_id=cid, node=node, smt=[core, core + total_cores],
                caches=[(1, "Data", l1d, [core, core + total_cores]),
                        (1, "Instruction", l1i, [core, core + total_cores]),
                        (2, "Unified", l2, [core, core + total_cores]),
                        (3, "Unified", l3, l3_cpus)],
                # The scheduler never lets an LLC span nodes (SNC): LLC ∩ node.
                sched_llc=sorted(set(l3_cpus) & set(node_cpus)),
                llc_size_kb=l3,
            )

    def dist(a, b):
        if a == b:
            return 10
        if a // nodes_per_socket == b // nodes_per_socket:
            return snc_distance
        return cross_distance

    set_nodes(m, lambda c: m.cpus[c]["node"], dist)
    return m


def devvm():
    # The development VM: 2 vCPUs, no SMT, private L2, one L3, one node.
    m = Machine("devvm-2cpu", 2)
    for c in (0, 1):
        m.cpus[c] = dict(package=0, core_id=c, node=0, smt=[c],
                         caches=[(1, "Data", 32, [c]), (1, "Instruction", 32, [c]),
                                 (2, "Unified", 1024, [c]), (3, "Unified", 32768, [0, 1])],
                         sched_llc=[0, 1], llc_size_kb=32768)
    set_nodes(m, lambda c: 0, lambda a, b: 10)
    return m


def lab_2s():
    # The kernel lab's QEMU machine: 2 sockets x 2 cores, no SMT, one L3 per socket,
    # one node per socket (tests/lab/lab.sh).
    m = Machine("qemu-lab-2s2llc", 4)
    for c in range(4):
        pkg = c // 2
        l3 = [2 * pkg, 2 * pkg + 1]
        m.cpus[c] = dict(package=pkg, core_id=c % 2, node=pkg, smt=[c],
                         caches=[(1, "Data", 32, [c]), (1, "Instruction", 32, [c]),
                                 (2, "Unified", 4096, [c]), (3, "Unified", 16384, l3)],
                         sched_llc=l3, llc_size_kb=16384)
    set_nodes(m, lambda c: m.cpus[c]["node"], lambda a, b: 10 if a == b else 20)
    return m


def alderlake():
    # Hybrid Intel i9-12900K: 8 P-cores with SMT (cpus 0-15, siblings adjacent), 8 E-cores
    # (cpus 16-23) in two clusters of 4 sharing an L2; one 30 MiB L3 for all.
    m = Machine("intel-adl-hybrid", 24)
    for c in range(24):
        if c < 16:
            core = c // 2
            smt = [2 * core, 2 * core + 1]
            l1d, l2, l2_sh, core_id, cluster = 48, 1280, smt, 4 * core, smt
        else:
            smt = [c]
            l1d, l2, core_id = 32, 2048, 32 + (c - 16)
            first = 16 + ((c - 16) // 4) * 4
            l2_sh = list(range(first, first + 4))
            cluster = l2_sh
        m.cpus[c] = dict(package=0, core_id=core_id, node=0, smt=smt, cluster=cluster,
                         caches=[(1, "Data", l1d, smt), (1, "Instruction", 32, smt),
                                 (2, "Unified", l2, l2_sh), (3, "Unified", 30720, list(range(24)))],
                         sched_llc=list(range(24)), llc_size_kb=30720)
    set_nodes(m, lambda c: 0, lambda a, b: 10)
    return m


def arm_no_l3():
    # An Arm server reporting no L3 (e.g. Ampere Altra: the SLC is not in sysfs):
    # 16 cores, private L1/L2, so the highest unified cache is the per-core L2.
    m = Machine("arm-no-l3", 16)
    for c in range(16):
        m.cpus[c] = dict(package=0, core_id=c, node=0, smt=[c],
                         caches=[(1, "Data", 64, [c]), (1, "Instruction", 64, [c]),
                                 (2, "Unified", 1024, [c])],
                         sched_llc=[c], llc_size_kb=1024)
    set_nodes(m, lambda c: 0, lambda a, b: 10)
    return m


def arm_no_cache_dirs():
    # Firmware without cache info (no cache/ directories): clusters of 4 cores stand in.
    m = Machine("arm-no-cache-clusters", 8)
    m.with_caches = False
    for c in range(8):
        first = (c // 4) * 4
        cl = list(range(first, first + 4))
        m.cpus[c] = dict(package=0, core_id=c, cluster_id=c // 4, node=0, smt=[c], cluster=cl,
                         caches=[], sched_llc=cl, llc_size_kb=None)
    set_nodes(m, lambda c: 0, lambda a, b: 10)
    return m


def offline_cpus():
    # 2 sockets × 8 cores × SMT2, CCX of 4 cores (Zen-like), with CPUs 3, 10 and 19
    # offline (19 is 3's SMT sibling).
    m = x86_smt("offline-2s-32cpu", sockets=2, cores_per_socket=8, llc_cores=4,
                l1d=32, l1i=32, l2=512, l3=16384)
    m.offline = {3, 10, 19}
    return m


def main():
    machines = [
        devvm(),
        # AMD EPYC 7702P: 1 socket, 64C/128T, 16 CCX of 4C/8T; cpu0's L3 = 0-3,64-67.
        x86_smt("epyc-7702p", 1, 64, 4, 32, 32, 512, 16384),
        # 2× AMD EPYC 7763: 2 nodes (NPS1), 8C/16T per CCX; cpu0 L3 = 0-7,128-135.
        x86_smt("epyc-7763-2s", 2, 64, 8, 32, 32, 512, 32768),
        # 2× Xeon 8480+: 56C/112T per socket, one 105 MiB L3 per socket; cpu0 L3 = 0-55,112-167.
        x86_smt("xeon-8480-2s", 2, 56, 56, 48, 32, 2048, 107520, cross_distance=21),
        # Same in SNC4: 8 nodes of 14 cores; sysfs L3 unchanged, scheduler LLC per node.
        x86_smt("xeon-8480-2s-snc4", 2, 56, 56, 48, 32, 2048, 107520, nodes_per_socket=4,
                snc_distance=12, cross_distance=21),
        # 2× Xeon Gold 6430 in SNC2: 32C/64T per socket, one 60 MiB L3 per socket split
        # between two nodes (resctrl: mon_L3_XX with a mon_sub_L3_YY per node).
        x86_smt("xeon-6430-2s-snc2", 2, 32, 32, 48, 32, 2048, 61440, nodes_per_socket=2,
                snc_distance=12, cross_distance=21),
        # AMD EPYC 9654 (Genoa): 1 socket, 96C/192T, 12 CCDs of 8C/16T with 32 MiB of L3
        # each.
        x86_smt("epyc-9654", 1, 96, 8, 32, 32, 1024, 32768),
        offline_cpus(),
        lab_2s(),
        alderlake(),
        arm_no_l3(),
        arm_no_cache_dirs(),
    ]
    for m in machines:
        m.emit()
        print(f"{m.name}: {len(m.cpus)} cpus")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The Parquet export's oracle: reads an llctop recording (JSON Lines, gzipped or not) with
Python's json module and the exported tables with pyarrow and DuckDB (PyPI) — no llctop
code — and compares every cell of every table to the recording's JSON figures, NULL where
the JSON has null or lacks a nullable figure.

    parquet_check.py RECORDING DIR     prints a JSON summary; exit 1 and the first
                                       differences on stderr when a cell differs
    parquet_check.py --windows DIR     the fleet_windows table against DuckDB's own sums
                                       over the intervals table: per run, windows of 5
                                       snapshots in seq order, the last shorter one left
                                       out; migrations by distance and cause per second of
                                       the window's summed intervals, busy as a percentage
"""
import gzip
import json
import sys

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

IDENTITY = ["host", "boot_id", "kernel", "run_id", "schema_version"]
# The schema this oracle knows (src/fleet/tables.rs' SCHEMA_VERSION, written by hand:
# a new version is a new look at what the oracle derives).
SCHEMA_VERSION = 6


def lines(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    return  # a recording cut mid-line: what was whole


def g(d, *path, default=None):
    for p in path:
        if d is None:
            return default
        if isinstance(p, int):
            d = d[p] if isinstance(d, list) and len(d) > p else None
        else:
            d = d.get(p)
    return default if d is None else d


COUNTERS = ["cycles", "instructions", "cache_references", "cache_misses", "llc_read_misses",
            "l3_lookups", "l3_misses", "ipc", "miss_ratio", "mpki", "l3_misses_per_sec"]
CACHE = ["occupancy_bytes", "mbm_total_bytes", "mbm_local_bytes"]
LB = ["count", "balanced", "failed", "imbalance", "imbalance_load", "imbalance_util",
      "imbalance_task", "imbalance_misfit", "gained", "hot_gained", "nobusyq", "nobusyg"]


def counters(c):
    return {k: g(c, k) for k in COUNTERS}


def cache(c):
    return {k: g(c, k) for k in CACHE}


def expected(path):
    """Every table's rows as the recording's JSON says, in the recording's order."""
    it = lines(path)
    h = next(it)
    host = h.get("host")
    ident = {
        "host": host,
        "boot_id": h.get("boot_id"),
        "kernel": h.get("kernel"),
        "run_id": f"{host if host is not None else 'unknown'}-{h['start_unix_ns']}",
        "schema_version": SCHEMA_VERSION,
    }
    topo = h["topology"]
    llc_of, node_of = {}, {}
    for l in topo.get("llcs", []):
        for c in l["cpus"]:
            llc_of[c] = l["id"]
    for n in topo.get("nodes", []):
        for c in n["cpus"]:
            node_of[c] = n["id"]
    llc_node = {l["id"]: l.get("node") for l in topo.get("llcs", [])}
    t = {k: [] for k in ["intervals", "cpus", "llcs", "nodes", "processes", "llc_migrations",
                         "process_pairs", "thread_pairs", "balance", "resctrl", "knob_values", "knob_changes", "markers",
                         "findings", "windows"]}

    def row(table, **cols):
        t[table].append({**ident, **cols})

    knobs = h.get("knobs") or {}
    for k in sorted(knobs):
        row("knob_values", time=h["start_unix_ns"], knob=k, value=knobs[k])
    experiment = None
    for x in it:
        ty = x.get("type")
        if ty == "snapshot":
            s = x
            at = {"seq": s["seq"], "time": s["time"]["unix_ns"]}
            sy, m = s.get("system") or {}, s.get("migrations")
            bd, bc = g(m, "by_distance"), g(m, "by_cause")
            procs, numa, scx = s.get("processes"), s.get("numa"), s.get("sched_ext")
            cas = s.get("cache_aware")
            row("intervals", **at, interval_ns=s["time"]["interval_ns"],
                mono_ns=s["time"]["mono_ns"], missed_ticks=s["time"].get("missed_ticks", 0),
                busy=sy.get("busy"), user=sy.get("user"), system=sy.get("system"),
                ctx_switches=sy.get("ctx_switches"), forks=sy.get("forks"),
                procs_running=sy.get("procs_running"), procs_blocked=sy.get("procs_blocked"),
                load1=g(sy, "load", 0), load5=g(sy, "load", 1), load15=g(sy, "load", 2),
                migrations_precision=g(m, "precision"),
                **{f"migrations_{k}": g(bd, k) for k in ["smt", "llc", "cross_llc", "cross_node"]},
                migrations_unclassified=None if m is None else m.get("unclassified", 0),
                **{f"cause_{k}": g(bc, k) for k in ["wakeup", "load_balance", "active_balance", "numa", "other"]},
                **{f"preferred_{w}": None if g(m, "preferred", w) is None else sum(g(m, "preferred", w).values())
                   for w in ["onto", "off"]},
                processes_total=g(procs, "total"),
                processes_dropped=None if procs is None else procs.get("dropped", 0),
                numa_balancing=g(numa, "balancing_mode"),
                sched_ext_state=g(scx, "state"), sched_ext_ops=g(scx, "ops"),
                cache_aware_enabled=g(cas, "enabled"),
                cache_aware_active=None if cas is None else (cas["enabled"] and cas["multi_llc"]))
            for c in s.get("cpus", []):
                row("cpus", **at, cpu=c["cpu"], llc=llc_of.get(c["cpu"]), node=node_of.get(c["cpu"]),
                    online=c["online"], busy=c.get("busy"), steal=c.get("steal"),
                    ctx_switches=c.get("ctx_switches"), migrations_in=c.get("migrations_in"),
                    migrations_out=c.get("migrations_out"), rq_wait_ns=c.get("rq_wait_ns"),
                    switches_unseen=c.get("switches_unseen", 0), runnable=c.get("runnable"),
                    cas_queued=c.get("cas_queued"), cas_queued_pref=c.get("cas_queued_pref"),
                    rq_wait_hist=c.get("rq_wait_hist"), **counters(c.get("counters")))
            for of in ["llcs", "nodes"]:
                for gr in s.get(of, []):
                    ids = {"llc": gr["id"], "node": llc_node.get(gr["id"])} if of == "llcs" else {"node": gr["id"]}
                    row(of, **at, **ids, cpus=gr["cpus"], busy=gr.get("busy"),
                        ctx_switches=gr.get("ctx_switches"), migrations_in=gr.get("migrations_in"),
                        migrations_out=gr.get("migrations_out"),
                        migrations_within=gr.get("migrations_within"), rq_wait_ns=gr.get("rq_wait_ns"),
                        runnable=gr.get("runnable"), cas_queued=gr.get("cas_queued"),
                        cas_queued_pref=gr.get("cas_queued_pref"), rq_wait_p50_ns=gr.get("rq_wait_p50_ns"),
                        rq_wait_p99_ns=gr.get("rq_wait_p99_ns"), **counters(gr.get("counters")),
                        **cache(gr.get("cache")))
            for p in g(procs, "rows", default=[]):
                md = p.get("migrations_by_distance")
                row("processes", **at, precision=procs["precision"], pid=p["pid"], comm=p["comm"],
                    threads=p["threads"], exited=p.get("exited", False), cpu_time_ns=p["cpu_time_ns"],
                    runtime_per_llc_ns=p["runtime_per_llc_ns"], preferred_llc=p.get("preferred_llc"),
                    preferred_kind=p["preferred_kind"], preferred_hit=p.get("preferred_hit"),
                    llc_spread=p["llc_spread"], migrations=p["migrations"],
                    cross_llc_migrations=p["cross_llc_migrations"],
                    **{f"migrations_{k}": g(md, k) for k in ["smt", "llc", "cross_llc", "cross_node"]},
                    rq_wait_ns=p["rq_wait_ns"], switches_unseen=p.get("switches_unseen", 0),
                    runs=p.get("runs"), moves_onto_preferred=p.get("moves_onto_preferred"),
                    moves_off_preferred=p.get("moves_off_preferred"),
                    cgroup=p.get("cgroup"), sched_ext=p.get("sched_ext"),
                    **counters(p.get("counters")), **cache(p.get("cache")))
            for i, r in enumerate(g(m, "llc_matrix", default=[])):
                for j, n in enumerate(r):
                    row("llc_migrations", **at, from_llc=i, to_llc=j, migrations=n)
            # Each pair of processes once, lower pid first: its shared memory (the newest
            # read) and its wakeups both ways (NULL where not counted).
            sh, wk = s.get("sharing"), s.get("wakeups")
            pairs = {}

            def pair(a, b):
                return pairs.setdefault((min(a, b), max(a, b)), {
                    "wakeups_a_to_b": None if wk is None else 0,
                    "wakeups_b_to_a": None if wk is None else 0,
                    "shared_bytes": None, "shared_objects": None, "shared_object": None})
            for p in g(sh, "pairs", default=[]):
                pair(p["a"], p["b"]).update(shared_bytes=p["bytes"], shared_objects=p["objects"],
                                            shared_object=p["object"])
            for p in g(wk, "pairs", default=[]):
                side = "wakeups_a_to_b" if p["waker"] < p["wakee"] else "wakeups_b_to_a"
                pair(p["waker"], p["wakee"])[side] += p["count"]
            for a, b in sorted(pairs):
                row("process_pairs", **at, pid_a=a, pid_b=b, **pairs[(a, b)], sharing_seq=g(sh, "seq"))
            # Each pair of threads of one process once, lower thread id first, both ways.
            threads = {}
            for p in g(wk, "threads", default=[]):
                k = (p["pid"], min(p["waker"], p["wakee"]), max(p["waker"], p["wakee"]))
                side = 0 if p["waker"] <= p["wakee"] else 1
                threads.setdefault(k, [0, 0])[side] += p["count"]
            for (pid, a, b), (ab, ba) in sorted(threads.items()):
                row("thread_pairs", **at, pid=pid, tid_a=a, tid_b=b, wakeups_a_to_b=ab, wakeups_b_to_a=ba)
            b = s.get("balance")
            for d in g(b, "domains", default=[]):
                lb = {f"{idle}_{k}": g(d, idle, k) for idle in ["busy", "idle", "newidle"] for k in LB}
                row("balance", **at, schedstat_version=b["version"], level=d["level"], name=d.get("name"),
                    derived_name=d.get("derived_name", False), cpus=d["cpus"], **lb,
                    **{k: d[k] for k in ["alb_count", "alb_failed", "alb_pushed", "ttwu_wake_remote",
                                         "ttwu_move_affine", "ttwu_move_balance"]})
            for gr in g(s, "resctrl", "groups", default=[]):
                for d in gr["domains"]:
                    row("resctrl", **at, group=gr["path"], kind=gr["kind"], pid=gr.get("pid"),
                        l3=d["l3"], llc=d.get("llc"), node=d.get("node"), **cache(d))
        elif ty == "knob":
            row("knob_changes", time=x["unix_ns"], mono_ns=x["mono_ns"], knob=x["id"], path=x["path"],
                action=x["action"], old=x["old"], new=x["new"], written=x["written"],
                read_back=x["read_back"], label=x.get("label"))
        elif ty == "marker":
            row("markers", time=x["unix_ns"], mono_ns=x["mono_ns"], after_seq=x.get("after_seq"),
                label=x["label"])
        elif ty == "finding":
            f = x["finding"]
            row("findings", state=x["state"], seq=x["seq"], kind=f["kind"], key=f["key"],
                severity=f["severity"], summary=f["summary"], first_seq=f["first_seq"],
                last_seq=f["last_seq"], cpus=f.get("cpus", []), llcs=f.get("llcs", []),
                pids=f.get("pids", []), facts=None)
        elif ty == "experiment":
            experiment = x
        elif ty == "window":
            row("windows", knob=g(experiment, "knob"), index=x["index"], arm=x["arm"], value=x["value"],
                first_seq=x["first_seq"], last_seq=x["last_seq"], command_secs=x.get("command_secs"),
                exit_code=x.get("exit_code"), command_pids=x.get("command_pids", []),
                not_counted=x.get("not_counted"))
        elif ty == "knob_values" and not knobs:
            knobs = {k: v for k, v in x.items() if k != "type"}
            for k in sorted(knobs):
                row("knob_values", time=h["start_unix_ns"], knob=k, value=knobs[k])
    return ident, t


def read(dir, table, run_id):
    """A table's rows as pyarrow reads its file (timestamps as integer ns)."""
    name = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in run_id)[:200]
    if not name or name.startswith("."):
        name = "_" + name
    f = pq.read_table(f"{dir}/{table}/{name}.parquet")
    cols = {}
    for n in f.column_names:
        c = f.column(n)
        if pa.types.is_timestamp(c.type):
            assert str(c.type.tz) == "UTC", f"{table}.{n}: {c.type}"
            c = c.cast(pa.int64())
        cols[n] = c.to_pylist()
    rows = [dict(zip(cols, vals)) for vals in zip(*cols.values())] if cols else []
    meta = pq.read_metadata(f"{dir}/{table}/{name}.parquet").metadata or {}
    return f.column_names, rows, meta


WINDOW = 5
RATES = {"migrations.smt": "migrations_smt", "migrations.llc": "migrations_llc",
         "migrations.xllc": "migrations_cross_llc", "migrations.xnode": "migrations_cross_node",
         "cause.wakeup": "cause_wakeup", "cause.load_balance": "cause_load_balance",
         "cause.active_balance": "cause_active_balance", "cause.numa": "cause_numa",
         "cause.other": "cause_other"}


def windows(dir):
    """fleet_windows against the intervals table, summed by DuckDB."""
    con = duckdb.connect()
    sums = ", ".join(f"sum({c}) as {c}, count({c}) as n_{c}" for c in RATES.values())
    want = {}
    q = f"""
        with i as (select *, row_number() over (partition by run_id order by seq) - 1 as n
                   from read_parquet('{dir}/intervals/*.parquet')),
        w as (select run_id, n // {WINDOW} as window_index, count(*) as k, min(seq) as first_seq,
                     max(seq) as last_seq, epoch_ns(max(time)) as time,
                     sum(interval_ns) / 1e9 as secs, avg(busy) as busy,
                     count(busy) as n_busy, {sums}
              from i group by run_id, n // {WINDOW})
        select * from w where k = {WINDOW}"""
    cur = con.execute(q)
    names = [d[0] for d in cur.description]
    for r in cur.fetchall():
        r = dict(zip(names, r))
        key = (r["run_id"], r["window_index"])
        m = {}
        for metric, c in RATES.items():
            if r[f"n_{c}"] == WINDOW:
                m[metric] = r[c] / r["secs"]
        if r["n_busy"] == WINDOW:
            m["busy"] = 100 * r["busy"]
        want[key] = (r["first_seq"], r["last_seq"], r["time"], r["secs"], m)
    got = con.execute(f"""select run_id, window_index, first_seq, last_seq, epoch_ns(time), seconds,
                                 metric, value
                          from read_parquet('{dir}/fleet_windows/*.parquet')""").fetchall()
    diffs, values, windows_seen = [], 0, set()
    for run_id, window, first, last, time, secs, metric, value in got:
        key = (run_id, window)
        windows_seen.add(key)
        if key not in want:
            diffs.append(f"{key}: a window the intervals table does not make")
            continue
        f, l, t, s, m = want[key]
        if (first, last, time) != (f, l, t) or abs(secs - s) > 1e-9 * s:
            diffs.append(f"{key}: seq {first}-{last} at {time} over {secs} s; the intervals: {f}-{l} at {t} over {s} s")
        if metric in m:
            if abs(value - m[metric]) > 1e-9 * max(1.0, abs(m[metric])):
                diffs.append(f"{key} {metric}: {value}, DuckDB's {m[metric]}")
            values += 1
        elif metric in RATES or metric == "busy":
            diffs.append(f"{key} {metric}: {value}, but not every snapshot of the window has it")
    for key, (_, _, _, _, m) in want.items():
        if key not in windows_seen and m:
            diffs.append(f"{key}: no rows in fleet_windows")
    print(json.dumps({"windows": len(want), "rows": len(got), "values": values}))
    if diffs:
        sys.stderr.write("\n".join(diffs[:40]) + "\n")
        sys.exit(1)


def main():
    if sys.argv[1] == "--windows":
        return windows(sys.argv[2])
    rec, dir = sys.argv[1], sys.argv[2]
    ident, want = expected(rec)
    diffs, summary = [], {}
    for table, rows in want.items():
        names, got, meta = read(dir, table, ident["run_id"])
        assert meta.get(b"llctop.schema_version") == str(SCHEMA_VERSION).encode(), meta
        assert meta.get(b"llctop.table") == table.encode(), meta
        if names[:5] != IDENTITY:
            diffs.append(f"{table}: columns start {names[:5]}")
        if len(got) != len(rows):
            diffs.append(f"{table}: {len(got)} rows, the recording has {len(rows)}")
        compared = 0
        for i, (w, gt) in enumerate(zip(rows, got)):
            for k, v in w.items():
                if k not in gt:
                    diffs.append(f"{table}: no column {k}")
                    continue
                if k == "facts" and table == "findings":
                    continue  # text made from several fields: checked by the test on its own
                if gt[k] != v:
                    diffs.append(f"{table} row {i} {k}: parquet {gt[k]!r}, recording {v!r}")
                compared += 1
            extra = set(gt) - set(w)
            if extra:
                diffs.append(f"{table}: columns the oracle does not know: {sorted(extra)}")
                break
        summary[table] = {"rows": len(got), "cells": compared}
    # DuckDB reads every table too, and NULLs are SQL NULLs.
    con = duckdb.connect()
    for table in want:
        n = con.execute(f"select count(*) from read_parquet('{dir}/{table}/*.parquet') where run_id = ?",
                        [ident["run_id"]]).fetchone()[0]
        if n != len(want[table]):
            diffs.append(f"duckdb {table}: {n} rows, the recording has {len(want[table])}")
        summary[table]["duckdb_rows"] = n
    nulls = con.execute(f"select count(*) from read_parquet('{dir}/cpus/*.parquet') "
                        "where run_id = ? and busy is null", [ident["run_id"]]).fetchone()[0]
    summary["cpus_busy_null"] = nulls
    summary["cpus_busy_null_in_recording"] = sum(1 for r in want["cpus"] if r["busy"] is None)
    if nulls != summary["cpus_busy_null_in_recording"]:
        diffs.append(f"duckdb: {nulls} NULL busy, the recording has {summary['cpus_busy_null_in_recording']}")
    print(json.dumps(summary))
    if diffs:
        sys.stderr.write("\n".join(diffs[:40]) + "\n")
        sys.exit(1)


if __name__ == "__main__":
    main()

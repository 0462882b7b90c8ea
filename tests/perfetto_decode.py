#!/usr/bin/env python3
"""Decode a Perfetto trace with Perfetto's own generated classes (PyPI `perfetto`, its
perfetto_trace_pb2, on `protobuf`) and print what the tests check as one JSON object.
Shares no code with llctop. A trace cut mid-packet decodes up to its last whole packet:
the `Trace` message's field 1 records are walked one by one (tag, length, bytes) and each
is parsed as a TracePacket; `cut` says how many bytes were left over.

Usage: perfetto_decode.py FILE.pftrace
"""
import json
import sys
from collections import Counter, defaultdict

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb


def varint(b, i):
    shift = value = 0
    while True:
        if i >= len(b):
            return None, i
        c = b[i]
        i += 1
        value |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return value, i


def packets(data):
    i = 0
    while i < len(data):
        start = i
        tag, i = varint(data, i)
        if tag is None:
            return start
        length, i = varint(data, i)
        if length is None or tag != (1 << 3 | 2) or i + length > len(data):
            return start
        p = pb.TracePacket()
        p.ParseFromString(data[i:i + length])
        i += length
        yield p
    return i


def main(path):
    data = open(path, "rb").read()
    out = {
        "bytes": len(data),
        "packets": 0,
        "kinds": Counter(),
        "tracks": {},
        "switches": Counter(),
        "wakings": Counter(),
        "switch_first": {},
        "switch_last": {},
        "switch_next_pids": Counter(),
        "instants": [],
        "slices": [],
        "counters": defaultdict(list),
        "threads": {},
        "processes": {},
        "clock": None,
        "system": None,
        "lost_end": None,
        "sequence_ids": Counter(),
    }
    gen = packets(data)
    end = 0
    while True:
        try:
            p = next(gen)
        except StopIteration as stop:
            end = stop.value
            break
        out["packets"] += 1
        kind = p.WhichOneof("data")
        out["kinds"][kind] += 1
        out["sequence_ids"][p.trusted_packet_sequence_id] += 1
        if kind == "track_descriptor":
            t = p.track_descriptor
            d = {"name": t.name, "parent": t.parent_uuid if t.HasField("parent_uuid") else None}
            if t.HasField("counter"):
                d["counter"] = t.counter.unit_name
            if t.HasField("thread"):
                d["thread"] = [t.thread.pid, t.thread.tid, t.thread.thread_name]
            if t.HasField("process"):
                d["process"] = [t.process.pid, t.process.process_name]
            out["tracks"][str(t.uuid)] = d
        elif kind == "ftrace_events":
            b = p.ftrace_events
            cs = b.compact_sched
            ts = 0
            for k, dt in enumerate(cs.switch_timestamp):
                ts += dt
                cpu = str(b.cpu)
                out["switches"][cpu] += 1
                out["switch_first"][cpu] = min(out["switch_first"].get(cpu, ts), ts)
                out["switch_last"][cpu] = max(out["switch_last"].get(cpu, ts), ts)
                out["switch_next_pids"][str(cs.switch_next_pid[k])] += 1
                name = cs.intern_table[cs.switch_next_comm_index[k]]
                pid = cs.switch_next_pid[k]
                if pid:
                    out["threads"].setdefault(str(pid), name)
            out["wakings"][str(b.cpu)] += len(cs.waking_timestamp)
        elif kind == "track_event":
            e = p.track_event
            args = {}
            for a in e.debug_annotations:
                v = a.WhichOneof("value")
                args[a.name] = getattr(a, v) if v else None
            ev = {
                "ts": p.timestamp,
                "track": e.track_uuid,
                "name": e.name,
                "categories": list(e.categories),
                "args": args,
                "flow_out": list(e.flow_ids),
                "flow_in": list(e.terminating_flow_ids),
            }
            if e.type == pb.TrackEvent.TYPE_INSTANT:
                out["instants"].append(ev)
            elif e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                ev["kind"] = "begin"
                out["slices"].append(ev)
            elif e.type == pb.TrackEvent.TYPE_SLICE_END:
                ev["kind"] = "end"
                out["slices"].append(ev)
            elif e.type == pb.TrackEvent.TYPE_COUNTER:
                out["counters"][str(e.track_uuid)].append([p.timestamp, e.double_counter_value])
        elif kind == "process_tree":
            for t in p.process_tree.threads:
                out["threads"][str(t.tid)] = t.name
            for pr in p.process_tree.processes:
                out["processes"][str(pr.pid)] = [pr.ppid, list(pr.cmdline)]
        elif kind == "clock_snapshot":
            out["clock"] = {str(c.clock_id): c.timestamp for c in p.clock_snapshot.clocks}
        elif kind == "system_info":
            out["system"] = p.system_info.utsname.release
        elif kind == "ftrace_stats":
            if p.ftrace_stats.phase == pb.FtraceStats.END_OF_TRACE:
                out["lost_end"] = [c.overrun for c in p.ftrace_stats.cpu_stats]
    out["cut"] = len(data) - end
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])

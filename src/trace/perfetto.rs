//! Writing a Perfetto trace: a stream of `TracePacket`s (the `Trace` message's field 1,
//! one length-delimited record each), built with Perfetto's own protos as the
//! `perfetto_protos` crate generates them and encoded by the `protobuf` crate — nothing
//! here encodes protobuf by hand. Each packet goes to the output as it is made, so a
//! trace cut anywhere (a signal, a full disk) decodes up to its last whole packet.
//!
//! What llctop writes: the system (`SystemInfo`, for how the sched events' task states
//! decode), a clock snapshot, track descriptors (plain, counter, process and thread
//! tracks, each with its parent), the process tree, per-CPU sched events in the compact
//! encoding ([`super::sched`]), track events (instants, slices, counter values, flows)
//! and the ftrace statistics where lost records are counted. Timestamps are the trace's
//! default clock (BOOTTIME) unless a caller says otherwise.

use std::io::{self, Write};

use perfetto_protos::clock_snapshot::ClockSnapshot;
use perfetto_protos::clock_snapshot::clock_snapshot::Clock;
use perfetto_protos::counter_descriptor::CounterDescriptor;
use perfetto_protos::debug_annotation::DebugAnnotation;
use perfetto_protos::debug_annotation::debug_annotation;
use perfetto_protos::ftrace_event_bundle::FtraceEventBundle;
use perfetto_protos::ftrace_event_bundle::ftrace_event_bundle::CompactSched;
use perfetto_protos::ftrace_stats::{FtraceCpuStats, FtraceStats, ftrace_stats};
use perfetto_protos::process_descriptor::ProcessDescriptor;
use perfetto_protos::process_tree::ProcessTree;
use perfetto_protos::process_tree::process_tree;
use perfetto_protos::system_info::{SystemInfo, Utsname};
use perfetto_protos::thread_descriptor::ThreadDescriptor;
use perfetto_protos::trace_packet::TracePacket;
use perfetto_protos::track_descriptor::TrackDescriptor;
use perfetto_protos::track_descriptor::track_descriptor;
use perfetto_protos::track_event::TrackEvent;
use perfetto_protos::track_event::track_event;
use protobuf::{EnumOrUnknown, MessageField};

/// The packet sequence of llctop's own track events (one writer, one sequence).
const SEQUENCE: u32 = 1;
/// `BUILTIN_CLOCK_BOOTTIME` and `BUILTIN_CLOCK_MONOTONIC` (perfetto's builtin_clock.proto).
pub const CLOCK_BOOTTIME: u32 = 6;
pub const CLOCK_MONOTONIC: u32 = 3;

/// A debug annotation's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
}

/// What a track descriptor describes.
#[derive(Debug, Clone)]
pub enum TrackKind {
    /// A named track for slices and instants.
    Plain,
    /// A counter track, its values in `unit` (shown beside the value).
    Counter { unit: String },
    /// A process's track (perfetto merges it with the process the sched events know).
    Process { pid: u32, name: String },
    /// A thread's track.
    Thread { pid: u32, tid: u32, name: String },
}

/// One track event.
#[derive(Debug, Clone, Default)]
pub struct Event {
    pub ts: u64,
    pub track: u64,
    pub name: String,
    pub categories: Vec<String>,
    pub args: Vec<(String, Arg)>,
    /// Flows this event starts (or continues) / ends.
    pub flow_out: Vec<u64>,
    pub flow_in: Vec<u64>,
}

/// A process as the process tree shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    pub cmdline: Vec<String>,
}

/// A thread as the process tree shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Thread {
    pub tid: u32,
    pub tgid: u32,
    pub name: String,
}

/// Packets gathered before they are written out together.
const FLUSH_AT: usize = 256 * 1024;

/// Writes packets to `out`, whole packets at a time: what reached `out` always ends at a
/// packet's end ([`Writer::committed`]), so a trace cut by a failed write is cut there.
pub struct Writer<W: Write> {
    out: W,
    buf: Vec<u8>,
    /// The sequence's first packet was written (it clears the incremental state).
    started: bool,
    bytes: u64,
    committed: u64,
    packets: u64,
}

fn annotation(name: &str, v: &Arg) -> DebugAnnotation {
    let mut a = DebugAnnotation::new();
    a.name_field = Some(debug_annotation::Name_field::Name(name.to_string()));
    a.value = Some(match v {
        Arg::Int(i) => debug_annotation::Value::IntValue(*i),
        Arg::Uint(u) => debug_annotation::Value::UintValue(*u),
        Arg::Float(f) => debug_annotation::Value::DoubleValue(*f),
        Arg::Str(s) => debug_annotation::Value::StringValue(s.clone()),
    });
    a
}

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> Writer<W> {
        Writer {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 64 * 1024),
            started: false,
            bytes: 0,
            committed: 0,
            packets: 0,
        }
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Bytes that reached the output: whole packets.
    pub fn committed(&self) -> u64 {
        self.committed
    }

    fn write_buf(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.out.write_all(&self.buf)?;
            self.committed += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }

    /// Write what is gathered and flush the output.
    pub fn flush(&mut self) -> io::Result<()> {
        self.write_buf()?;
        self.out.flush()
    }

    /// The output (what reached it ends at a packet's end).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// The output, flushed.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.flush()?;
        Ok(self.out)
    }

    /// One packet as field 1 of `Trace` (tag, length, bytes), encoded by `protobuf`.
    fn packet(&mut self, mut p: TracePacket) -> io::Result<()> {
        p.set_trusted_packet_sequence_id(SEQUENCE);
        if !self.started {
            self.started = true;
            p.first_packet_on_sequence = Some(true);
            p.sequence_flags = Some(1); // SEQ_INCREMENTAL_STATE_CLEARED
        }
        let before = self.buf.len();
        {
            let mut os = protobuf::CodedOutputStream::vec(&mut self.buf);
            os.write_message(1, &p).map_err(io::Error::other)?;
            os.flush().map_err(io::Error::other)?;
        }
        self.bytes += (self.buf.len() - before) as u64;
        self.packets += 1;
        if self.buf.len() >= FLUSH_AT {
            self.write_buf()?;
        }
        Ok(())
    }

    /// The kernel's name and release, so that the sched events' task states decode as
    /// this kernel encodes them.
    pub fn system_info(&mut self, release: &str, machine: &str) -> io::Result<()> {
        let mut u = Utsname::new();
        u.sysname = Some("Linux".into());
        u.release = Some(release.into());
        u.machine = Some(machine.into());
        let mut si = SystemInfo::new();
        si.utsname = MessageField::some(u);
        let mut p = TracePacket::new();
        p.set_system_info(si);
        self.packet(p)
    }

    /// BOOTTIME and MONOTONIC read together: the trace's clocks related.
    pub fn clock_snapshot(&mut self, boottime_ns: u64, monotonic_ns: u64) -> io::Result<()> {
        let clock = |id: u32, ts: u64| {
            let mut c = Clock::new();
            c.clock_id = Some(id);
            c.timestamp = Some(ts);
            c
        };
        let mut cs = ClockSnapshot::new();
        cs.clocks = vec![
            clock(CLOCK_BOOTTIME, boottime_ns),
            clock(CLOCK_MONOTONIC, monotonic_ns),
        ];
        let mut p = TracePacket::new();
        p.timestamp = Some(boottime_ns);
        p.set_clock_snapshot(cs);
        self.packet(p)
    }

    /// A track descriptor: `uuid`, under `parent`, named `name`.
    pub fn track(
        &mut self,
        uuid: u64,
        parent: Option<u64>,
        name: &str,
        kind: &TrackKind,
        rank: Option<i32>,
    ) -> io::Result<()> {
        let mut t = TrackDescriptor::new();
        t.uuid = Some(uuid);
        t.parent_uuid = parent;
        t.sibling_order_rank = rank;
        t.child_ordering = Some(EnumOrUnknown::new(
            track_descriptor::ChildTracksOrdering::EXPLICIT,
        ));
        t.static_or_dynamic_name = Some(track_descriptor::Static_or_dynamic_name::Name(
            name.to_string(),
        ));
        match kind {
            TrackKind::Plain => {}
            TrackKind::Counter { unit } => {
                let mut c = CounterDescriptor::new();
                c.unit_name = Some(unit.clone());
                t.counter = MessageField::some(c);
            }
            TrackKind::Process { pid, name } => {
                let mut d = ProcessDescriptor::new();
                d.pid = i32::try_from(*pid).ok();
                d.process_name = Some(name.clone());
                t.process = MessageField::some(d);
                t.static_or_dynamic_name = None;
            }
            TrackKind::Thread { pid, tid, name } => {
                let mut d = ThreadDescriptor::new();
                d.pid = i32::try_from(*pid).ok();
                d.tid = i32::try_from(*tid).ok();
                d.thread_name = Some(name.clone());
                t.thread = MessageField::some(d);
                t.static_or_dynamic_name = None;
            }
        }
        let mut p = TracePacket::new();
        p.set_track_descriptor(t);
        self.packet(p)
    }

    /// Processes and threads (at the start, and as they are forked).
    pub fn process_tree(&mut self, ts: u64, procs: &[Proc], threads: &[Thread]) -> io::Result<()> {
        let mut tree = ProcessTree::new();
        tree.processes = procs
            .iter()
            .map(|p| {
                let mut x = process_tree::Process::new();
                x.pid = i32::try_from(p.pid).ok();
                x.ppid = i32::try_from(p.ppid).ok();
                x.cmdline = p.cmdline.clone();
                x
            })
            .collect();
        tree.threads = threads
            .iter()
            .map(|t| {
                let mut x = process_tree::Thread::new();
                x.tid = i32::try_from(t.tid).ok();
                x.tgid = i32::try_from(t.tgid).ok();
                x.name = Some(t.name.clone());
                x
            })
            .collect();
        let mut p = TracePacket::new();
        p.timestamp = Some(ts);
        p.set_process_tree(tree);
        self.packet(p)
    }

    /// One CPU's sched events in the compact encoding.
    pub fn compact_sched(&mut self, cpu: u32, sched: CompactSched) -> io::Result<()> {
        let mut b = FtraceEventBundle::new();
        b.cpu = Some(cpu);
        b.compact_sched = MessageField::some(sched);
        let mut p = TracePacket::new();
        p.set_ftrace_events(b);
        self.packet(p)
    }

    fn track_event(&mut self, e: Event, kind: track_event::Type) -> io::Result<TrackEvent> {
        let mut t = TrackEvent::new();
        t.type_ = Some(EnumOrUnknown::new(kind));
        t.track_uuid = Some(e.track);
        if !e.name.is_empty() {
            t.name_field = Some(track_event::Name_field::Name(e.name));
        }
        t.categories = e.categories;
        t.debug_annotations = e.args.iter().map(|(k, v)| annotation(k, v)).collect();
        t.flow_ids = e.flow_out;
        t.terminating_flow_ids = e.flow_in;
        Ok(t)
    }

    fn emit(&mut self, ts: u64, t: TrackEvent) -> io::Result<()> {
        let mut p = TracePacket::new();
        p.timestamp = Some(ts);
        p.set_track_event(t);
        self.packet(p)
    }

    /// An instant.
    pub fn instant(&mut self, e: Event) -> io::Result<()> {
        let ts = e.ts;
        let t = self.track_event(e, track_event::Type::TYPE_INSTANT)?;
        self.emit(ts, t)
    }

    /// The start of a slice on `e.track` (ended by [`Writer::slice_end`] on that track).
    pub fn slice_begin(&mut self, e: Event) -> io::Result<()> {
        let ts = e.ts;
        let t = self.track_event(e, track_event::Type::TYPE_SLICE_BEGIN)?;
        self.emit(ts, t)
    }

    /// The end of the innermost open slice on `track`.
    pub fn slice_end(&mut self, ts: u64, track: u64) -> io::Result<()> {
        let e = Event {
            ts,
            track,
            ..Event::default()
        };
        let t = self.track_event(e, track_event::Type::TYPE_SLICE_END)?;
        self.emit(ts, t)
    }

    /// A counter's value from `ts` on.
    pub fn counter(&mut self, ts: u64, track: u64, value: f64) -> io::Result<()> {
        let mut t = TrackEvent::new();
        t.type_ = Some(EnumOrUnknown::new(track_event::Type::TYPE_COUNTER));
        t.track_uuid = Some(track);
        t.counter_value_field = Some(track_event::Counter_value_field::DoubleCounterValue(value));
        self.emit(ts, t)
    }

    /// Lost records per CPU as the ftrace statistics of `end` (or the start) of the
    /// trace: trace processors list them in their `stats` (`ftrace_cpu_overrun_*`).
    pub fn ftrace_stats(&mut self, ts: u64, end: bool, lost: &[u64]) -> io::Result<()> {
        let mut s = FtraceStats::new();
        s.phase = Some(EnumOrUnknown::new(if end {
            ftrace_stats::Phase::END_OF_TRACE
        } else {
            ftrace_stats::Phase::START_OF_TRACE
        }));
        s.cpu_stats = lost
            .iter()
            .enumerate()
            .map(|(cpu, &n)| {
                let mut c = FtraceCpuStats::new();
                c.cpu = Some(cpu as u64);
                c.overrun = Some(n);
                c.dropped_events = Some(n);
                c
            })
            .collect();
        let mut p = TracePacket::new();
        p.timestamp = Some(ts);
        p.set_ftrace_stats(s);
        self.packet(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfetto_protos::trace::Trace;
    use protobuf::Message;

    #[test]
    fn packets_decode_as_a_trace_in_order() {
        let mut w = Writer::new(Vec::new());
        w.system_info("7.2.0", "x86_64").unwrap();
        w.track(7, None, "node 0", &TrackKind::Plain, Some(0))
            .unwrap();
        w.track(
            8,
            Some(7),
            "busy",
            &TrackKind::Counter { unit: "%".into() },
            None,
        )
        .unwrap();
        w.counter(100, 8, 42.5).unwrap();
        w.instant(Event {
            ts: 150,
            track: 7,
            name: "cross_llc".into(),
            categories: vec!["migration".into()],
            args: vec![("from_cpu".into(), Arg::Uint(3))],
            flow_out: vec![9],
            ..Event::default()
        })
        .unwrap();
        let bytes = w.bytes();
        let out = w.into_inner().unwrap();
        assert_eq!(out.len() as u64, bytes);
        let t = Trace::parse_from_bytes(&out).unwrap();
        assert_eq!(t.packet.len(), 5);
        assert!(t.packet[0].has_system_info());
        assert_eq!(t.packet[0].first_packet_on_sequence, Some(true));
        assert_eq!(t.packet[2].track_descriptor().parent_uuid, Some(7));
        let c = t.packet[3].track_event();
        assert_eq!(c.track_uuid, Some(8));
        assert_eq!(
            c.counter_value_field,
            Some(track_event::Counter_value_field::DoubleCounterValue(42.5))
        );
        assert_eq!(t.packet[4].track_event().flow_ids, vec![9]);
        assert!(
            t.packet
                .iter()
                .all(|p| p.trusted_packet_sequence_id() == SEQUENCE)
        );
    }
}

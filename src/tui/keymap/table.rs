//! The key table: every binding of the TUI — keys, the context they work in, the action
//! and its help line — as data, in the help and README order.

use super::{Action, Binding, Context, Key};
use std::borrow::Cow;

const fn b(keys: &'static [Key], context: Context, action: Action, help: &'static str) -> Binding {
    Binding {
        keys: Cow::Borrowed(keys),
        context,
        action,
        help,
    }
}

use Action as A;
use Context as C;
use Key as K;

/// The table. Order is the help and README order.
pub static KEYMAP: &[Binding] = &[
    b(
        &[K::Char('q'), K::F(10)],
        C::Global,
        A::Quit,
        "quit (knob changes are restored unless --keep-changes)",
    ),
    b(
        &[K::Char('?'), K::F(1)],
        C::Global,
        A::Help,
        "help: this table (again, or Esc: back to the view it was opened from)",
    ),
    b(
        &[K::Char('i')],
        C::Global,
        A::Header,
        "header: every degraded source and knob limit with its reason / one summary line",
    ),
    b(&[K::Char('1')], C::Global, A::View(0), "Overview: LLC map"),
    b(&[K::Char('2')], C::Global, A::View(1), "Migrations"),
    b(&[K::Char('3')], C::Global, A::View(2), "Processes"),
    b(
        &[K::Char('4')],
        C::Global,
        A::View(3),
        "Cache (L3 occupancy, memory bandwidth, IPC, MPKI, L3 misses)",
    ),
    b(
        &[K::Char('5')],
        C::Global,
        A::View(4),
        "Balance (schedstat load balancing)",
    ),
    b(&[K::Char('6')], C::Global, A::View(5), "NUMA"),
    b(&[K::Char('7')], C::Global, A::View(6), "Knobs"),
    b(
        &[K::Char('8')],
        C::Global,
        A::View(7),
        "Findings: the advisor",
    ),
    b(&[K::Char('9')], C::Global, A::View(8), "Help"),
    b(&[K::Tab], C::Global, A::NextView, "next view"),
    b(&[K::BackTab], C::Global, A::PrevView, "previous view"),
    b(
        &[K::Char(' ')],
        C::Global,
        A::Pause,
        "pause / resume the display (live keeps collecting; replay stops playing)",
    ),
    b(
        &[K::Char('r')],
        C::Global,
        A::Record,
        "start / stop recording to llctop-<UTC time>.json.gz",
    ),
    b(
        &[K::Char('m')],
        C::Global,
        A::Marker,
        "drop a marker into the recording",
    ),
    b(
        &[K::Char('T')],
        C::Global,
        A::Trace,
        "start / stop a Perfetto trace (llctop trace, at most 60 s) to llctop-<UTC time>.pftrace",
    ),
    b(&[K::Char('t')], C::Global, A::Theme, "next theme"),
    b(
        &[K::Up, K::Char('k')],
        C::Global,
        A::Up,
        "move the selection up (Help: scroll)",
    ),
    b(
        &[K::Down, K::Char('j')],
        C::Global,
        A::Down,
        "move the selection down",
    ),
    b(&[K::PageUp], C::Global, A::PageUp, "page up"),
    b(&[K::PageDown], C::Global, A::PageDown, "page down"),
    b(
        &[K::Esc],
        C::Global,
        A::Back,
        "back: leave a drill-down, cancel input, clear the filter, leave Help",
    ),
    b(
        &[K::Left],
        C::Replay,
        A::SeekBack,
        "one snapshot back (pauses live view)",
    ),
    b(
        &[K::Right],
        C::Replay,
        A::SeekForward,
        "one snapshot forward",
    ),
    b(&[K::Home], C::Replay, A::SeekStart, "first snapshot"),
    b(
        &[K::End],
        C::Replay,
        A::SeekEnd,
        "latest snapshot (live: follow again)",
    ),
    b(&[K::Char('[')], C::Replay, A::Slower, "replay slower (÷2)"),
    b(&[K::Char(']')], C::Replay, A::Faster, "replay faster (×2)"),
    b(
        &[K::Char('n')],
        C::Replay,
        A::NextMarker,
        "to the next marker (the first snapshot after it)",
    ),
    b(
        &[K::Char('N')],
        C::Replay,
        A::PrevMarker,
        "to the previous marker",
    ),
    b(
        &[K::Char('/')],
        C::Global,
        A::Filter,
        "search the list shown: processes (name, pid, cgroup), knobs (id, description, value), findings (text, seed), help (key, action); Esc clears",
    ),
    b(
        &[K::Char('c')],
        C::Overview,
        A::MapColour,
        "colour the LLC map by L3 occupancy (resctrl) / by busy again",
    ),
    b(
        &[K::Char('s')],
        C::Processes,
        A::Sort,
        "next sort column (CPU, COMM, THR, xLLC/s, MIG/s, WAIT, HIT, MPKI, IPC, PID)",
    ),
    b(
        &[K::Char('S')],
        C::Processes,
        A::SortReverse,
        "reverse the sort",
    ),
    b(
        &[K::Enter],
        C::Processes,
        A::Drill,
        "drill into the process: runtime and counters per LLC, placements",
    ),
    b(
        &[K::Char('x')],
        C::Knobs,
        A::KnobToggle,
        "toggle a feature / bool knob",
    ),
    b(&[K::Enter], C::Knobs, A::KnobEdit, "edit the knob's value"),
    b(
        &[K::Char('u')],
        C::Knobs,
        A::KnobUndo,
        "undo the last change (a profile is one step)",
    ),
    b(
        &[K::Char('p')],
        C::Knobs,
        A::KnobProfile,
        "apply a profile: choose, Enter applies",
    ),
    b(
        &[K::Char('a')],
        C::Knobs,
        A::KnobAb,
        "A/B experiment: the value now against one typed (Enter); a again stops it",
    ),
    b(
        &[K::Enter, K::Char('a')],
        C::Findings,
        A::FindingTry,
        "try the selected finding's suggestion: its A/B experiment opens on the Knobs view, B filled in (nothing is written before Enter there)",
    ),
];

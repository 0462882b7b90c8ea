//! The app's update function driven by messages: live history, replay, keys and effects.

use super::*;
use ratatui::crossterm::event::{KeyCode, KeyModifiers};

fn snap(seq: u64) -> Snapshot {
    let mut s = Snapshot {
        seq,
        ..Snapshot::default()
    };
    s.time.interval_ns = 1_000_000_000;
    s.time.mono_ns = (seq + 1) * 1_000_000_000;
    s
}

fn key(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

#[test]
fn live_follows_pause_freezes_history_is_bounded() {
    let mut a = App::live(Topology::default(), Duration::from_secs(1), vec![]);
    a.handle(Msg::Tick(Box::new(crate::run::pipeline::Tick::of(snap(0)))));
    assert_eq!(a.pos, Some(0));
    a.handle(key(KeyCode::Char(' ')));
    a.handle(Msg::Tick(Box::new(crate::run::pipeline::Tick::of(snap(1)))));
    assert_eq!(a.current().map(|s| s.seq), Some(0), "paused");
    a.handle(key(KeyCode::Right));
    assert_eq!(a.current().map(|s| s.seq), Some(1));
    a.handle(key(KeyCode::Left));
    a.handle(key(KeyCode::End));
    assert!(!a.paused, "End follows again");
    for i in 2..1000 {
        a.handle(Msg::Tick(Box::new(crate::run::pipeline::Tick::of(snap(i)))));
    }
    // Small snapshots: the history is sized in memory, and all of these fit.
    assert_eq!(a.snaps.len(), 1000);
    assert!(a.snaps.bytes() < 2 << 20, "{}", a.snaps.bytes());
    assert_eq!(a.current().map(|s| s.seq), Some(999));
    assert_eq!(a.history(5).len(), 5);
    assert_eq!(a.history(usize::MAX).len(), history::MAX_SPAN);
    // Browsing far back parses the span there.
    a.handle(key(KeyCode::Home));
    a.handle(key(KeyCode::Right));
    a.handle(key(KeyCode::Right));
    assert_eq!(a.current().map(|s| s.seq), Some(2));
    let seqs: Vec<u64> = a.history(10).iter().map(|s| s.seq).collect();
    assert_eq!(seqs, vec![0, 1, 2]);
    a.handle(key(KeyCode::End));
    assert_eq!(a.current().map(|s| s.seq), Some(999));
}

#[test]
fn replay_plays_at_speed_and_stops_at_the_end() {
    let rec = Recording::of(
        crate::record::Header {
            format: crate::record::FORMAT.into(),
            version: 1,
            llctop_version: "t".into(),
            host: None,
            kernel: None,
            start_unix_ns: 0,
            interval_ns: 1_000_000_000,
            topology: Topology::default(),
            sources: vec![],
            command: vec![],
            knobs: Default::default(),
            boot_id: None,
        },
        (0..10).map(snap).collect(),
    );
    let mut a = App::replay(rec, "x", vec![]);
    a.handle(Msg::Elapsed(Duration::from_millis(2500)));
    assert_eq!(a.pos, Some(2));
    a.handle(key(KeyCode::Char(']')));
    a.handle(Msg::Elapsed(Duration::from_millis(1000)));
    assert_eq!(a.pos, Some(4), "×2");
    a.handle(key(KeyCode::Char(' ')));
    a.handle(Msg::Elapsed(Duration::from_secs(5)));
    assert_eq!(a.pos, Some(4), "paused");
    a.handle(key(KeyCode::Right));
    assert_eq!(a.pos, Some(5));
    a.handle(key(KeyCode::Char(' ')));
    a.handle(Msg::Elapsed(Duration::from_secs(60)));
    assert_eq!(a.pos, Some(9));
    assert!(
        a.replay.as_ref().is_some_and(|r| !r.playing),
        "stopped at the end"
    );
    a.handle(key(KeyCode::Char('r')));
    assert!(a.recording.is_none());
}

#[test]
fn a_replay_plays_while_it_loads_and_waits_for_the_rest_at_its_end() {
    use crate::record::Line;
    let header = crate::record::Header {
        interval_ns: 1_000_000_000,
        ..Default::default()
    };
    let mut a = App::replay_loading(&header, "x", vec![]);
    assert_eq!(a.pos, None);
    for i in 0..3 {
        a.handle(Msg::Replayed(Box::new(Line::Snapshot(snap(i)))));
    }
    assert_eq!(a.pos, Some(0), "the first snapshot is shown at once");
    a.handle(Msg::Elapsed(Duration::from_secs(10)));
    assert_eq!(a.pos, Some(2));
    assert!(
        a.replay.as_ref().is_some_and(|r| r.playing && r.loading),
        "at the end of what is loaded: still playing"
    );
    for i in 3..6 {
        a.handle(Msg::Replayed(Box::new(Line::Snapshot(snap(i)))));
    }
    a.handle(Msg::Elapsed(Duration::from_millis(1500)));
    assert_eq!(a.pos, Some(3), "goes on from where it waited, no jump");
    a.handle(Msg::ReplayLoaded { truncated: true });
    a.handle(Msg::Elapsed(Duration::from_secs(10)));
    assert_eq!(a.pos, Some(5));
    assert!(
        a.replay
            .as_ref()
            .is_some_and(|r| !r.playing && !r.loading && r.truncated),
        "loaded: stops at the end"
    );
    // The advisor judged each snapshot as it came, as over the whole recording.
    let all: Vec<Snapshot> = (0..a.snaps.len())
        .filter_map(|i| a.snaps.unpack(i).ok())
        .collect();
    assert_eq!(all.len(), 6);
    let whole = Advisor::over(&a.topo, &all);
    assert_eq!(a.advisor.episodes.len(), whole.episodes.len());
}

#[test]
fn keys_ask_for_effects_and_do_no_io() {
    let mut a = App::live(Topology::default(), Duration::from_secs(1), vec![]);
    assert_eq!(
        a.update(key(KeyCode::Char('r'))),
        vec![Effect::StartRecording]
    );
    assert!(a.recording.is_none(), "update itself creates no file");
    assert!(
        a.update(key(KeyCode::Char('m'))).is_empty(),
        "not recording"
    );
    assert!(
        a.status
            .as_ref()
            .is_some_and(|s| s.text.contains("not recording"))
    );
    a.view = ViewId::Knobs;
    assert!(a.update(key(KeyCode::Char('u'))).is_empty(), "no session");
    let fx = a.update(Msg::Tick(Box::new(crate::run::pipeline::Tick::of(snap(0)))));
    assert!(fx.is_empty(), "no recording, no session: nothing to do");
}

#[test]
fn keys_switch_views_and_quit() {
    let mut a = App::live(Topology::default(), Duration::from_secs(1), vec![]);
    a.handle(key(KeyCode::Char('3')));
    assert_eq!(a.view, ViewId::Processes);
    a.handle(key(KeyCode::Tab));
    assert_eq!(a.view, ViewId::Cache);
    a.handle(key(KeyCode::F(1)));
    assert_eq!(a.view, ViewId::Help);
    a.handle(key(KeyCode::Char('3')));
    a.handle(key(KeyCode::Char('/')));
    a.handle(key(KeyCode::Char('q')));
    assert!(!a.quit, "q is text while filtering");
    assert_eq!(a.filter(), "q");
    a.handle(key(KeyCode::Esc));
    assert!(a.filter().is_empty());
    a.handle(key(KeyCode::Char('q')));
    assert!(a.quit);
}

#[test]
fn a_scheduler_switch_is_said_before_the_screen_waits() {
    use super::knobs::wait_notice;
    use crate::knobs::session::{Change, Step};
    let set = |id: &str, value: &str| Effect::SetKnob {
        id: id.into(),
        value: value.into(),
    };
    let start = wait_notice(&[Effect::Marker, set("scheduler", "scx_bpfland")], &[]);
    assert!(
        start.as_deref().is_some_and(|t| t
            .starts_with("starting scx_bpfland: waiting for the kernel to attach it, at most")
            && t.ends_with(" s (keys wait)")),
        "{start:?}"
    );
    let stop = wait_notice(&[set("scheduler", "eevdf")], &[]);
    assert!(stop.is_some_and(|t| t.starts_with("stopping the sched_ext scheduler")));
    assert_eq!(
        wait_notice(&[set("numa_balancing", "0")], &[]),
        None,
        "a file write is quick"
    );
    // Undo: only when the step it undoes switched the scheduler (to its old value).
    let step = |id: &str, old: &str| Step {
        label: format!("{id}=x"),
        changes: vec![Change {
            id: id.into(),
            old: old.into(),
            new: "x".into(),
        }],
    };
    let undo = wait_notice(&[Effect::UndoKnob], &[step("scheduler", "eevdf")]);
    assert!(undo.is_some_and(|t| t.starts_with("undo: stopping")));
    assert_eq!(
        wait_notice(
            &[Effect::UndoKnob],
            &[step("scheduler", "eevdf"), step("numa_balancing", "1")]
        ),
        None,
        "the last step is not the scheduler's"
    );
    assert_eq!(
        wait_notice(&[Effect::UndoKnob], &[]),
        None,
        "nothing to undo"
    );
}

//! The keymap: every key binding as data. Input handling looks keys up here, the help
//! view is generated from it, and so is the README key table (`llctop keys --markdown`;
//! a test fails when the README differs). The config file's `[keys]` table rebinds an
//! action (`quit = ["q", "F10"]`): [`with_overrides`] checks the names and that no key
//! ends up bound twice where both would apply.

use std::borrow::Cow;
use std::collections::BTreeMap;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Where a binding applies. Lookups try the current view's context first, then
/// `Replay` (seeking works in live mode while paused too), then `Global`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Global,
    /// History and replay: seek and speed.
    Replay,
    Overview,
    Processes,
    Knobs,
    Findings,
}

impl Context {
    pub fn label(self) -> &'static str {
        match self {
            Context::Global => "everywhere",
            Context::Replay => "history / replay",
            Context::Overview => "Overview",
            Context::Processes => "Processes",
            Context::Knobs => "Knobs",
            Context::Findings => "Findings",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Help,
    /// Expand / fold the header's problem lines.
    Header,
    View(u8),
    NextView,
    PrevView,
    Pause,
    Filter,
    Sort,
    SortReverse,
    NextMarker,
    PrevMarker,
    Drill,
    Back,
    Up,
    Down,
    PageUp,
    PageDown,
    Record,
    Marker,
    Trace,
    Theme,
    SeekBack,
    SeekForward,
    SeekStart,
    SeekEnd,
    Slower,
    Faster,
    KnobToggle,
    KnobEdit,
    KnobUndo,
    KnobProfile,
    KnobAb,
    /// Open the selected finding's suggested experiment.
    FindingTry,
    /// Colour the LLC map by L3 occupancy instead of busy (and back).
    MapColour,
}

/// A key as written in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    F(u8),
    Tab,
    BackTab,
    Enter,
    Esc,
    Left,
    Right,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
}

impl Key {
    pub fn label(self) -> String {
        match self {
            Key::Char(' ') => "Space".into(),
            Key::Char(c) => c.to_string(),
            Key::F(n) => format!("F{n}"),
            Key::Tab => "Tab".into(),
            Key::BackTab => "Shift-Tab".into(),
            Key::Enter => "Enter".into(),
            Key::Esc => "Esc".into(),
            Key::Left => "←".into(),
            Key::Right => "→".into(),
            Key::Up => "↑".into(),
            Key::Down => "↓".into(),
            Key::PageUp => "PgUp".into(),
            Key::PageDown => "PgDn".into(),
            Key::Home => "Home".into(),
            Key::End => "End".into(),
        }
    }

    fn matches(self, ev: &KeyEvent) -> bool {
        match (self, ev.code) {
            (Key::Char(a), KeyCode::Char(b)) => {
                a == b
                    && !ev
                        .modifiers
                        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
            }
            (Key::F(a), KeyCode::F(b)) => a == b,
            (Key::Tab, KeyCode::Tab) => !ev.modifiers.contains(KeyModifiers::SHIFT),
            (Key::BackTab, KeyCode::BackTab) => true,
            (Key::Enter, KeyCode::Enter)
            | (Key::Esc, KeyCode::Esc)
            | (Key::Left, KeyCode::Left)
            | (Key::Right, KeyCode::Right)
            | (Key::Up, KeyCode::Up)
            | (Key::Down, KeyCode::Down)
            | (Key::PageUp, KeyCode::PageUp)
            | (Key::PageDown, KeyCode::PageDown)
            | (Key::Home, KeyCode::Home)
            | (Key::End, KeyCode::End) => true,
            _ => false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Binding {
    pub keys: Cow<'static, [Key]>,
    pub context: Context,
    pub action: Action,
    pub help: &'static str,
}

mod table;
pub use table::KEYMAP;

/// The action bound to `ev` in `ctx` (then Replay, then Global), in the built-in map.
pub fn lookup(ev: &KeyEvent, ctx: Context) -> Option<Action> {
    lookup_in(KEYMAP, ev, ctx)
}

/// The action bound to `ev` in `ctx` (then Replay, then Global), in `map`.
pub fn lookup_in(map: &[Binding], ev: &KeyEvent, ctx: Context) -> Option<Action> {
    let find = |c: Context| {
        map.iter()
            .filter(|bd| bd.context == c)
            .find(|bd| bd.keys.iter().any(|k| k.matches(ev)))
            .map(|bd| bd.action)
    };
    if ctx != Context::Global
        && let Some(a) = find(ctx)
    {
        return Some(a);
    }
    find(Context::Replay).or_else(|| find(Context::Global))
}

impl Action {
    /// The action's name in the config file's `[keys]` table.
    pub fn name(self) -> String {
        let s = match self {
            Action::Quit => "quit",
            Action::Help => "help",
            Action::Header => "header",
            Action::View(n) => return format!("view_{}", n + 1),
            Action::NextView => "next_view",
            Action::PrevView => "prev_view",
            Action::Pause => "pause",
            Action::Filter => "search",
            Action::Sort => "sort",
            Action::SortReverse => "sort_reverse",
            Action::NextMarker => "next_marker",
            Action::PrevMarker => "prev_marker",
            Action::Drill => "drill",
            Action::Back => "back",
            Action::Up => "up",
            Action::Down => "down",
            Action::PageUp => "page_up",
            Action::PageDown => "page_down",
            Action::Record => "record",
            Action::Marker => "marker",
            Action::Trace => "trace",
            Action::Theme => "theme",
            Action::SeekBack => "seek_back",
            Action::SeekForward => "seek_forward",
            Action::SeekStart => "seek_start",
            Action::SeekEnd => "seek_end",
            Action::Slower => "slower",
            Action::Faster => "faster",
            Action::KnobToggle => "knob_toggle",
            Action::KnobEdit => "knob_edit",
            Action::KnobUndo => "knob_undo",
            Action::KnobProfile => "knob_profile",
            Action::KnobAb => "knob_ab",
            Action::FindingTry => "finding_try",
            Action::MapColour => "map_colour",
        };
        s.to_string()
    }
}

impl Key {
    /// A key as the config file writes it: a character, `Space`, `F1`…`F12`, `Tab`,
    /// `Shift-Tab`, `Enter`, `Esc`, `Left`, `Right`, `Up`, `Down`, `PgUp`, `PgDn`,
    /// `Home`, `End` (or the arrows as the help shows them).
    pub fn parse(s: &str) -> Result<Key, String> {
        let k = match s {
            "Space" | " " => Key::Char(' '),
            "Tab" => Key::Tab,
            "Shift-Tab" | "BackTab" => Key::BackTab,
            "Enter" => Key::Enter,
            "Esc" => Key::Esc,
            "Left" | "←" => Key::Left,
            "Right" | "→" => Key::Right,
            "Up" | "↑" => Key::Up,
            "Down" | "↓" => Key::Down,
            "PgUp" | "PageUp" => Key::PageUp,
            "PgDn" | "PageDown" => Key::PageDown,
            "Home" => Key::Home,
            "End" => Key::End,
            _ => {
                let mut cs = s.chars();
                match (cs.next(), cs.next()) {
                    (Some(c), None) => Key::Char(c),
                    _ => match s.strip_prefix('F').and_then(|n| n.parse::<u8>().ok()) {
                        Some(n @ 1..=12) => Key::F(n),
                        _ => return Err(format!("unknown key {s:?}")),
                    },
                }
            }
        };
        Ok(k)
    }
}

/// The built-in map with the actions named in `overrides` bound to the keys given
/// instead. Unknown action or key names, and a key bound twice in one context, are
/// errors naming them.
pub fn with_overrides(overrides: &BTreeMap<String, Vec<String>>) -> Result<Vec<Binding>, String> {
    let mut map: Vec<Binding> = KEYMAP.to_vec();
    for (name, keys) in overrides {
        let keys: Vec<Key> = keys
            .iter()
            .map(|k| Key::parse(k).map_err(|e| format!("keys.{name}: {e}")))
            .collect::<Result<_, _>>()?;
        let mut found = false;
        for bd in map.iter_mut().filter(|bd| bd.action.name() == *name) {
            bd.keys = Cow::Owned(keys.clone());
            found = true;
        }
        if !found {
            let names: Vec<String> = KEYMAP.iter().map(|b| b.action.name()).collect();
            let hint = crate::suggest::did_you_mean(name, names.iter().map(String::as_str));
            return Err(format!("keys.{name}: no such action{hint}"));
        }
    }
    for (i, a) in map.iter().enumerate() {
        for bb in &map[i + 1..] {
            // A key in a view's context hides the same key everywhere else in that view,
            // which is how the built-in map uses it (Enter); two in one context collide.
            if a.context == bb.context
                && let Some(k) = a.keys.iter().find(|k| bb.keys.contains(k))
            {
                return Err(format!(
                    "keys: {} is bound to both {} and {}",
                    k.label(),
                    a.action.name(),
                    bb.action.name()
                ));
            }
        }
    }
    Ok(map)
}

/// `q / F10` style label of a binding's keys.
pub fn keys_label(bd: &Binding) -> String {
    bd.keys
        .iter()
        .map(|k| k.label())
        .collect::<Vec<_>>()
        .join(" / ")
}

/// The README key table (Markdown).
pub fn markdown_table() -> String {
    let mut s = String::from("| Key | Where | Action | `[keys]` name |\n|---|---|---|---|\n");
    for bd in KEYMAP {
        let keys = bd
            .keys
            .iter()
            .map(|k| match k.label().as_str() {
                "|" => "`\\|`".to_string(),
                l => format!("`{l}`"),
            })
            .collect::<Vec<_>>()
            .join(" ");
        s.push_str(&format!(
            "| {keys} | {} | {} | `{}` |\n",
            bd.context.label(),
            bd.help,
            bd.action.name()
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action as A;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn context_first_then_global() {
        assert_eq!(
            lookup(&key(KeyCode::Enter), Context::Processes),
            Some(A::Drill)
        );
        assert_eq!(
            lookup(&key(KeyCode::Enter), Context::Knobs),
            Some(A::KnobEdit)
        );
        assert_eq!(lookup(&key(KeyCode::Enter), Context::Global), None);
        assert_eq!(
            lookup(&key(KeyCode::Char('q')), Context::Knobs),
            Some(A::Quit)
        );
        assert_eq!(lookup(&key(KeyCode::F(10)), Context::Global), Some(A::Quit));
        assert_eq!(
            lookup(&key(KeyCode::Left), Context::Global),
            Some(A::SeekBack)
        );
        assert_eq!(lookup(&key(KeyCode::Char('x')), Context::Processes), None);
        let ctrl_c = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::CONTROL);
        assert_eq!(lookup(&ctrl_c, Context::Global), None);
    }

    #[test]
    fn overrides_rebind_an_action_and_refuse_collisions() {
        let mut o = BTreeMap::new();
        o.insert(
            "marker".to_string(),
            vec!["M".to_string(), "F5".to_string()],
        );
        let map = with_overrides(&o).unwrap();
        let ev = |c| KeyEvent::new(c, KeyModifiers::NONE);
        assert_eq!(
            lookup_in(&map, &ev(KeyCode::Char('M')), Context::Global),
            Some(A::Marker)
        );
        assert_eq!(
            lookup_in(&map, &ev(KeyCode::F(5)), Context::Global),
            Some(A::Marker)
        );
        assert_eq!(
            lookup_in(&map, &ev(KeyCode::Char('m')), Context::Global),
            None,
            "the old key is free"
        );
        o.insert("theme".to_string(), vec!["M".to_string()]);
        let e = with_overrides(&o).unwrap_err();
        assert!(e.contains("M is bound to both"), "{e}");
        let mut o = BTreeMap::new();
        o.insert("markr".to_string(), vec!["M".to_string()]);
        let e = with_overrides(&o).unwrap_err();
        assert!(e.contains("no such action; did you mean marker?"), "{e}");
        let mut o = BTreeMap::new();
        o.insert("quit".to_string(), vec!["Ctrl-Q".to_string()]);
        assert!(with_overrides(&o).unwrap_err().contains("unknown key"));
        // Every action has its own name.
        for a in KEYMAP {
            for b in KEYMAP {
                assert!(
                    a.action == b.action || a.action.name() != b.action.name(),
                    "{:?} {:?}",
                    a.action,
                    b.action
                );
            }
        }
    }

    #[test]
    fn no_key_is_bound_twice_in_one_context() {
        for (i, a) in KEYMAP.iter().enumerate() {
            for bb in &KEYMAP[i + 1..] {
                if a.context == bb.context {
                    for k in a.keys.iter() {
                        assert!(!bb.keys.contains(k), "{k:?} twice in {:?}", a.context);
                    }
                }
            }
        }
    }
}

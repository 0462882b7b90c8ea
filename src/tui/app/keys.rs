//! Keys: the keymap's action for a key in the current view, text input (filter, knob
//! value), the profile chooser, and selection movement. Pure state changes and effects.

use ratatui::crossterm::event::{
    KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

use super::{App, Effect, Input, InputKind, Level, ViewId};
use crate::tui::keymap::{self, Action, Context};

impl App {
    pub(super) fn context(&self) -> Context {
        self.view.context()
    }

    pub(super) fn key(&mut self, k: KeyEvent) {
        if k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL) {
            self.quit = true;
            return;
        }
        if self.input.is_some() {
            self.input_key(k);
            return;
        }
        if self.profile_pick.is_some() {
            self.pick_key(k);
            return;
        }
        let Some(action) = keymap::lookup_in(&self.keymap, &k, self.context()) else {
            return;
        };
        self.act(action);
    }

    /// A click on a tab shows its view; on a list row selects it, and on the selected row
    /// does what Enter does there; the wheel moves the selection (Help: scrolls).
    pub(super) fn mouse(&mut self, m: MouseEvent) {
        if self.input.is_some() || self.profile_pick.is_some() {
            return;
        }
        match m.kind {
            MouseEventKind::ScrollDown => self.move_sel(3),
            MouseEventKind::ScrollUp => self.move_sel(-3),
            MouseEventKind::Down(MouseButton::Left) => self.click(m.column, m.row),
            _ => {}
        }
    }

    fn click(&mut self, x: u16, y: u16) {
        if y == self.hits.tabs_y.get() {
            let mut start = 0u16;
            for (i, v) in ViewId::ALL.iter().enumerate() {
                let w = crate::tui::views::tab_label(i, *v).chars().count() as u16;
                if x >= start && x < start + w {
                    self.show(*v);
                    return;
                }
                start += w;
            }
            return;
        }
        let Some((top, rows, first)) = self.hits.list.get() else {
            return;
        };
        if y < top || y >= top + rows {
            return;
        }
        let i = first + (y - top) as usize;
        let (sel, n, enter) = match self.view {
            ViewId::Processes => (self.proc_sel, self.process_rows().len(), Action::Drill),
            ViewId::Knobs => (self.knob_sel, self.knob_rows().len(), Action::KnobEdit),
            ViewId::Findings => (
                self.finding_sel,
                self.finding_rows().len(),
                Action::FindingTry,
            ),
            _ => return,
        };
        if i >= n {
            return;
        }
        if i == sel {
            self.act(enter);
        } else {
            self.move_sel(i as i64 - sel as i64);
        }
    }

    fn input_key(&mut self, k: KeyEvent) {
        let Some(input) = self.input.as_mut() else {
            return;
        };
        match k.code {
            KeyCode::Esc => {
                let filter = input.kind == InputKind::Filter;
                self.input = None;
                if filter {
                    self.filter_mut().clear();
                    self.reset_sel();
                }
            }
            KeyCode::Enter => {
                let done = self.input.take();
                match done {
                    Some(Input {
                        kind: InputKind::Edit(id),
                        text,
                    }) => self.effect(Effect::SetKnob { id, value: text }),
                    Some(Input {
                        kind: InputKind::Ab(id),
                        text,
                    }) => self.start_ab(&id, &text),
                    _ => {}
                }
            }
            KeyCode::Backspace | KeyCode::Char(_) => {
                match k.code {
                    KeyCode::Char(c) if !k.modifiers.contains(KeyModifiers::CONTROL) => {
                        input.text.push(c)
                    }
                    KeyCode::Backspace => {
                        input.text.pop();
                    }
                    _ => return,
                }
                if input.kind == InputKind::Filter {
                    let text = input.text.clone();
                    *self.filter_mut() = text;
                    self.reset_sel();
                }
            }
            _ => {}
        }
    }

    fn pick_key(&mut self, k: KeyEvent) {
        let n = self.profiles.len();
        let Some(i) = self.profile_pick else {
            return;
        };
        match k.code {
            KeyCode::Esc => self.profile_pick = None,
            KeyCode::Up | KeyCode::Char('k') => self.profile_pick = Some(i.saturating_sub(1)),
            KeyCode::Down | KeyCode::Char('j') => {
                self.profile_pick = Some((i + 1).min(n.saturating_sub(1)))
            }
            KeyCode::Enter => {
                self.profile_pick = None;
                if let Some(p) = self.profiles.get(i).cloned() {
                    self.effect(Effect::ApplyProfile(p));
                }
            }
            _ => {}
        }
    }

    fn act(&mut self, a: Action) {
        match a {
            Action::Quit => self.quit = true,
            Action::Help => {
                if self.view == ViewId::Help {
                    self.view = self.prev_view;
                } else {
                    self.show(ViewId::Help);
                }
            }
            Action::View(n) => {
                if let Some(v) = ViewId::ALL.get(n as usize) {
                    self.show(*v);
                }
            }
            Action::NextView => {
                let n = ViewId::ALL.len();
                self.show(ViewId::ALL[(self.view.index() + 1) % n]);
            }
            Action::PrevView => {
                let n = ViewId::ALL.len();
                self.show(ViewId::ALL[(self.view.index() + n - 1) % n]);
            }
            Action::Header => self.header_expanded = !self.header_expanded,
            Action::Pause => self.toggle_pause(),
            Action::Filter => {
                if self.view.searchable() {
                    self.input = Some(Input {
                        kind: InputKind::Filter,
                        text: self.filter().to_string(),
                    })
                } else {
                    self.say(
                        Level::Info,
                        "/ searches the lists: Processes, Knobs, Findings, Help",
                    );
                }
            }
            Action::Sort | Action::SortReverse => {
                if a == Action::Sort {
                    self.sort = self.sort.next();
                } else {
                    self.sort_reverse = !self.sort_reverse;
                }
                self.proc_sel = 0;
                let way = if self.sort_reverse { " (reversed)" } else { "" };
                self.say(Level::Info, format!("sorted by {}{way}", self.sort.label()));
            }
            Action::NextMarker => self.seek_marker(true),
            Action::PrevMarker => self.seek_marker(false),
            Action::Drill => {
                let pid = self.process_rows().get(self.proc_sel).map(|r| r.pid);
                self.drill = pid;
            }
            Action::Back => {
                if self.drill.is_some() {
                    self.drill = None;
                } else if !self.filter().is_empty() {
                    self.filter_mut().clear();
                    self.reset_sel();
                } else if self.view == ViewId::Help {
                    self.view = self.prev_view;
                }
            }
            Action::Up => self.move_sel(-1),
            Action::Down => self.move_sel(1),
            Action::PageUp => self.move_sel(-20),
            Action::PageDown => self.move_sel(20),
            Action::Record => self.toggle_recording(),
            Action::Marker => self.marker(),
            Action::Trace => self.toggle_trace(),
            Action::MapColour => {
                self.map_occupancy = !self.map_occupancy;
                let has = self
                    .current()
                    .is_some_and(|s| s.llcs.iter().any(|g| g.cache.is_some()));
                match (self.map_occupancy, has) {
                    (true, true) => self.say(Level::Info, "LLC map: L3 occupancy".to_string()),
                    (true, false) => {
                        let why = crate::tui::views::source_reason(
                            self,
                            crate::snapshot::SourceName::Resctrl,
                        )
                        .unwrap_or_else(|| "no resctrl source".into());
                        self.say(Level::Warn, format!("L3 occupancy not available: {why}"));
                    }
                    (false, _) => self.say(Level::Info, "LLC map: busy".to_string()),
                }
            }
            Action::Theme => {
                self.theme = (self.theme + 1) % self.themes.len().max(1);
                let name = self.theme().name.clone();
                self.say(Level::Info, format!("theme {name}"));
            }
            Action::SeekBack => self.seek(-1),
            Action::SeekForward => self.seek(1),
            Action::SeekStart => self.seek(i64::MIN / 2),
            Action::SeekEnd => {
                self.seek(i64::MAX / 2);
                if self.replay.is_none() {
                    self.paused = false;
                }
            }
            Action::Slower | Action::Faster => self.speed(a == Action::Faster),
            Action::KnobToggle => self.knob_toggle(),
            Action::KnobEdit => self.knob_edit(),
            Action::KnobUndo => self.knob_undo(),
            Action::KnobAb => self.knob_ab(),
            Action::FindingTry => self.try_finding(),
            Action::KnobProfile => {
                if self.session.is_none() {
                    self.say(Level::Warn, "replay: knobs cannot be changed");
                } else if self.profiles.is_empty() {
                    self.say(Level::Warn, "no profiles found");
                } else {
                    self.profile_pick = Some(0);
                }
            }
        }
    }

    /// The selection of the view shown back at its first row (its list changed).
    fn reset_sel(&mut self) {
        match self.view {
            ViewId::Knobs => self.knob_sel = 0,
            ViewId::Findings => self.finding_sel = 0,
            ViewId::Help => self.help_scroll = 0,
            _ => self.proc_sel = 0,
        }
    }

    /// Switch to view `v`; Help remembers where it was opened from and starts at its top.
    fn show(&mut self, v: ViewId) {
        if v == ViewId::Help && self.view != ViewId::Help {
            self.prev_view = self.view;
            self.help_scroll = 0;
        }
        self.view = v;
    }

    fn move_sel(&mut self, by: i64) {
        let (sel, n) = match self.view {
            ViewId::Help => {
                let rows = crate::tui::views::help::rows();
                let n = self.help_last_start.get().min(rows.saturating_sub(1)) + 1;
                (&mut self.help_scroll, n)
            }
            ViewId::Knobs => {
                let n = self.knob_rows().len();
                (&mut self.knob_sel, n)
            }
            ViewId::Findings => {
                let n = self.finding_rows().len();
                (&mut self.finding_sel, n)
            }
            _ => {
                let n = self.process_rows().len();
                (&mut self.proc_sel, n)
            }
        };
        let v = (*sel as i64 + by).clamp(0, n.saturating_sub(1) as i64);
        *sel = v as usize;
    }
}

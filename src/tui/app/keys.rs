//! Keys: the keymap's action for a key in the current view, text input (filter, knob
//! value), the profile chooser, and selection movement. Pure state changes and effects.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

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
        let Some(action) = keymap::lookup(&k, self.context()) else {
            return;
        };
        self.act(action);
    }

    fn input_key(&mut self, k: KeyEvent) {
        let Some(input) = self.input.as_mut() else {
            return;
        };
        match k.code {
            KeyCode::Esc => {
                if input.kind == InputKind::Filter {
                    self.filter.clear();
                }
                self.input = None;
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
            KeyCode::Backspace => {
                input.text.pop();
                if input.kind == InputKind::Filter {
                    self.filter = input.text.clone();
                    self.proc_sel = 0;
                }
            }
            KeyCode::Char(c) if !k.modifiers.contains(KeyModifiers::CONTROL) => {
                input.text.push(c);
                if input.kind == InputKind::Filter {
                    self.filter = input.text.clone();
                    self.proc_sel = 0;
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
                self.input = Some(Input {
                    kind: InputKind::Filter,
                    text: self.filter.clone(),
                })
            }
            Action::Sort => {
                self.sort = self.sort.next();
                self.proc_sel = 0;
                self.say(Level::Info, format!("sorted by {}", self.sort.label()));
            }
            Action::Drill => {
                let pid = self.process_rows().get(self.proc_sel).map(|r| r.pid);
                self.drill = pid;
            }
            Action::Back => {
                if self.drill.is_some() {
                    self.drill = None;
                } else if !self.filter.is_empty() {
                    self.filter.clear();
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
                let n = self.knobs().len();
                (&mut self.knob_sel, n)
            }
            ViewId::Findings => {
                let n = self.findings().len();
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

//! Themes: a palette of named roles (background, text, dim, accent, good/warn/bad and a
//! heat scale), read from TOML. The shipped ones (themes/*.toml) are embedded; more can
//! be put in $XDG_CONFIG_HOME/llctop/themes/. With NO_COLOR set, a monochrome palette is
//! used and heat is shown with shading characters instead of colour.

use std::path::Path;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

const SHIPPED: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
    ("colorblind", include_str!("../../themes/colorblind.toml")),
];

#[derive(Debug, Deserialize)]
struct ThemeFile {
    name: String,
    background: String,
    text: String,
    dim: String,
    accent: String,
    good: String,
    warn: String,
    bad: String,
    heat: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    pub background: Color,
    pub text: Color,
    pub dim: Color,
    pub accent: Color,
    pub good: Color,
    pub warn: Color,
    pub bad: Color,
    /// Cold to hot; never empty.
    pub heat: Vec<Color>,
    /// NO_COLOR: no colours at all; heat as shading.
    pub mono: bool,
}

fn color(s: &str) -> Result<Color, String> {
    s.parse::<Color>()
        .map_err(|_| format!("unknown colour {s:?}"))
}

impl Theme {
    pub fn parse(text: &str) -> Result<Theme, String> {
        let f: ThemeFile = toml::from_str(text).map_err(|e| e.to_string())?;
        if f.heat.is_empty() {
            return Err(format!("theme {}: heat needs at least one colour", f.name));
        }
        Ok(Theme {
            background: color(&f.background)?,
            text: color(&f.text)?,
            dim: color(&f.dim)?,
            accent: color(&f.accent)?,
            good: color(&f.good)?,
            warn: color(&f.warn)?,
            bad: color(&f.bad)?,
            heat: f.heat.iter().map(|c| color(c)).collect::<Result<_, _>>()?,
            name: f.name,
            mono: false,
        })
    }

    /// The NO_COLOR palette.
    pub fn mono() -> Theme {
        Theme {
            name: "no-color".into(),
            background: Color::Reset,
            text: Color::Reset,
            dim: Color::Reset,
            accent: Color::Reset,
            good: Color::Reset,
            warn: Color::Reset,
            bad: Color::Reset,
            heat: vec![Color::Reset],
            mono: true,
        }
    }

    pub fn base(&self) -> Style {
        Style::default().fg(self.text).bg(self.background)
    }

    pub fn dim(&self) -> Style {
        if self.mono {
            Style::default().add_modifier(Modifier::DIM)
        } else {
            Style::default().fg(self.dim)
        }
    }

    pub fn accent(&self) -> Style {
        if self.mono {
            Style::default().add_modifier(Modifier::BOLD)
        } else {
            Style::default().fg(self.accent)
        }
    }

    pub fn good(&self) -> Style {
        Style::default().fg(self.good)
    }

    pub fn warn(&self) -> Style {
        if self.mono {
            Style::default().add_modifier(Modifier::BOLD)
        } else {
            Style::default().fg(self.warn)
        }
    }

    pub fn bad(&self) -> Style {
        if self.mono {
            Style::default().add_modifier(Modifier::BOLD | Modifier::REVERSED)
        } else {
            Style::default().fg(self.bad)
        }
    }

    /// Heat colour of `f` in 0..=1 (clamped).
    pub fn heat(&self, f: f64) -> Color {
        let n = self.heat.len();
        let i = ((f.clamp(0.0, 1.0) * (n - 1) as f64).round() as usize).min(n - 1);
        self.heat[i]
    }

    /// A cell background for `f`, with a readable foreground. Mono: reversed when hot.
    pub fn heat_cell(&self, f: f64) -> Style {
        if self.mono {
            return if f >= 0.5 {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
        }
        let bg = self.heat(f);
        let fg = match bg {
            Color::Rgb(r, g, b) if (r as u32 * 299 + g as u32 * 587 + b as u32 * 114) > 140_000 => {
                Color::Black
            }
            Color::Yellow
            | Color::LightYellow
            | Color::LightGreen
            | Color::LightCyan
            | Color::White => Color::Black,
            _ => Color::White,
        };
        Style::default().bg(bg).fg(fg)
    }

    /// Shading character for heat (used by mono themes and sparklines of cells).
    pub fn shade(f: f64) -> char {
        const S: [char; 5] = [' ', '░', '▒', '▓', '█'];
        S[((f.clamp(0.0, 1.0) * 4.0).round() as usize).min(4)]
    }
}

/// The shipped themes, then the user's (a user theme with a shipped name replaces it),
/// and the errors of user files that did not parse.
pub fn load_all(user_dir: Option<&Path>) -> (Vec<Theme>, Vec<String>) {
    crate::config::load_named(
        SHIPPED,
        user_dir,
        |s| Theme::parse(s.text),
        |t| t.name.as_str(),
    )
}

/// $XDG_CONFIG_HOME/llctop/themes (or ~/.config/llctop/themes).
pub fn user_dir() -> Option<std::path::PathBuf> {
    crate::config::config_dir("themes")
}

/// NO_COLOR is set to a non-empty value (no-color.org).
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_themes_parse_and_cover_the_roles() {
        let (all, errors) = load_all(None);
        assert!(errors.is_empty(), "{errors:?}");
        let names: Vec<&str> = all.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["dark", "light", "high-contrast", "colorblind"]);
        for t in &all {
            assert!(t.heat.len() >= 4, "{}", t.name);
            assert_ne!(t.heat(0.0), t.heat(1.0), "{}: heat scale is flat", t.name);
        }
    }

    #[test]
    fn bad_theme_is_an_error_and_user_themes_override() {
        assert!(Theme::parse("name='x'").is_err());
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("dark.toml"),
            SHIPPED[0].1.replace("#5fafff", "#123456"),
        )
        .expect("write");
        std::fs::write(dir.path().join("broken.toml"), "name = 1").expect("write");
        let (all, errors) = load_all(Some(dir.path()));
        assert_eq!(errors.len(), 1, "{errors:?}");
        let dark = all.iter().find(|t| t.name == "dark").expect("dark");
        assert_eq!(dark.accent, Color::Rgb(0x12, 0x34, 0x56));
        assert_eq!(all.len(), 4);
    }

    #[test]
    fn heat_is_clamped_and_mono_shades() {
        let (all, _) = load_all(None);
        let t = &all[0];
        assert_eq!(t.heat(-1.0), t.heat[0]);
        assert_eq!(t.heat(7.0), *t.heat.last().expect("non-empty"));
        assert_eq!(Theme::shade(0.0), ' ');
        assert_eq!(Theme::shade(1.0), '█');
        assert!(
            Theme::mono()
                .heat_cell(0.9)
                .add_modifier
                .contains(Modifier::REVERSED)
        );
    }
}

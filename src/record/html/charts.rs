//! The charts of `llctop report --html`, drawn by `plotters` into SVG strings: the
//! topology diagram, LLC × time heatmaps, time series (stacked or lines) and the A/B
//! dots. Over each time chart, llctop's own layer (written here, after plotters drew the
//! chart, in the chart's own pixel coordinates): the heatmap's row labels and node bands,
//! and one vertical line per annotation (knob change, marker, finding) whose text shows on
//! hover (`<title>`).

use plotters::prelude::*;

use super::esc;
use crate::topology::Topology;

/// The page's chart width and a time chart's height (px). The page shows charts at their
/// own size (its body is 1000 px wide), so these sizes are what a reader sees.
pub const WIDTH: u32 = 960;
const HEIGHT: u32 = 240;
/// Text sizes as plotters takes them (it writes 0.806 of the size asked for into the
/// SVG: 15 → 12.1 px): every label readable at a glance, at least 12 px rendered
/// (tests/html.rs measures the text in Chromium).
const CAPTION: u32 = 18;
const TICK: u32 = 15;
const DESC: u32 = 15;
/// The bottom band: tick labels, then the axis title under them (never over them).
const X_AREA: u32 = 48;

/// A vertical annotation: seconds from the recording's start, its kind (`knob`,
/// `marker`, `finding`) and the text shown on hover.
pub struct Annotation {
    pub at: f64,
    pub kind: &'static str,
    pub text: String,
}

/// One line of a series chart: its name and (seconds, value) points.
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

type Res<T> = Result<T, String>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("plotters: {e:?}")
}

/// The colour of class `i` of `n` (distinct hues, readable on white).
pub fn palette(i: usize) -> RGBColor {
    const P: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    P[i % P.len()]
}

/// Shades of a heatmap: a value is drawn at the nearest of these steps, and neighbouring
/// cells of one shade are one rectangle (a long recording's page stays small).
const HEAT_STEPS: f64 = 32.0;

/// A value's shade step (0..=HEAT_STEPS).
fn heat_step(v: f64) -> u32 {
    (v.clamp(0.0, 1.0) * HEAT_STEPS).round() as u32
}

/// 0 → pale, 1 → dark red (a shade step).
fn heat(step: u32) -> RGBColor {
    let v = f64::from(step) / HEAT_STEPS;
    let lerp = |a: f64, b: f64| (a + (b - a) * v).round() as u8;
    RGBColor(lerp(247.0, 165.0), lerp(251.0, 15.0), lerp(255.0, 21.0))
}

/// The layer llctop adds over a chart (SVG elements), put before the closing tag.
fn overlay(svg: String, layer: &str) -> String {
    match svg.rfind("</svg>") {
        Some(i) => format!("{}{layer}{}", &svg[..i], &svg[i..]),
        None => svg,
    }
}

/// Up to this many annotations a chart draws each on its own line; past it, those closer
/// than [`MERGE_PX`] pixels are drawn as one.
const OWN_LINES: usize = 200;
const MERGE_PX: i32 = 3;
/// Texts one merged line's title lists before "and N more".
const MERGED_TEXTS: usize = 5;

/// One drawn annotation line: where, its kind (the first's, or "many" when kinds mix),
/// how many events it stands for and the first few texts.
struct Drawn<'a> {
    px: i32,
    kind: &'a str,
    n: usize,
    texts: Vec<&'a str>,
}

/// The annotations as drawn lines: each its own up to [`OWN_LINES`]; past that, those
/// within [`MERGE_PX`] of each other merged, so a chart holds at most one line every few
/// pixels however many events a recording has (its title says how many it stands for).
fn merge<'a>(anns: &'a [Annotation], xs: &[i32]) -> Vec<Drawn<'a>> {
    let mut order: Vec<(i32, &Annotation)> = xs.iter().copied().zip(anns).collect();
    order.sort_by_key(|(px, _)| *px);
    let mut out: Vec<Drawn> = Vec::new();
    let merge_px = if anns.len() > OWN_LINES { MERGE_PX } else { -1 };
    for (px, a) in order {
        match out.last_mut() {
            Some(d) if px - d.px <= merge_px => {
                d.n += 1;
                if d.kind != a.kind {
                    d.kind = "many";
                }
                if d.texts.len() < MERGED_TEXTS {
                    d.texts.push(&a.text);
                }
            }
            _ => out.push(Drawn {
                px,
                kind: a.kind,
                n: 1,
                texts: vec![&a.text],
            }),
        }
    }
    out
}

/// Annotation lines at their pixel x over the plotting area's vertical span.
fn annotations(anns: &[Annotation], xs: &[i32], y: (i32, i32)) -> String {
    let mut out = String::from("<g class=\"annotations\">");
    for d in merge(anns, xs) {
        let colour = match d.kind {
            "knob" => "#1f77b4",
            "finding" => "#d62728",
            "many" => "#7f3fbf",
            _ => "#555",
        };
        let mut title = d.texts.join("\n");
        if d.n > d.texts.len() {
            title = format!(
                "{} events here:\n{title}\n… and {} more",
                d.n,
                d.n - d.texts.len()
            );
        }
        let px = d.px;
        out.push_str(&format!(
            "<g class=\"annotation\" data-kind=\"{}\" data-events=\"{}\"><line x1=\"{px}\" y1=\"{}\" x2=\"{px}\" y2=\"{}\" stroke=\"{colour}\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/><line x1=\"{px}\" y1=\"{}\" x2=\"{px}\" y2=\"{}\" stroke=\"transparent\" stroke-width=\"9\"><title>{}</title></line></g>",
            d.kind,
            d.n,
            y.0,
            y.1,
            y.0,
            y.1,
            esc(&title)
        ));
    }
    out.push_str("</g>");
    out
}

/// The machine as boxes: nodes → LLCs → CPUs (SMT siblings share a core's outline).
pub fn topology(topo: &Topology) -> Res<String> {
    let llcs = topo.llcs.len().max(1);
    let per_row = llcs.min(8);
    let rows = llcs.div_ceil(per_row);
    let h = 40 + rows as u32 * 80;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let cell_w = (WIDTH as i32 - 20) / per_row as i32;
        for (i, l) in topo.llcs.iter().enumerate() {
            let (col, row) = ((i % per_row) as i32, (i / per_row) as i32);
            let (x0, y0) = (10 + col * cell_w, 30 + row * 80);
            let node = l.node.map_or(0, |n| n as usize);
            let frame = palette(node);
            root.draw(&Rectangle::new(
                [(x0 + 2, y0), (x0 + cell_w - 4, y0 + 70)],
                frame.mix(0.12).filled(),
            ))
            .map_err(err)?;
            root.draw(&Rectangle::new(
                [(x0 + 2, y0), (x0 + cell_w - 4, y0 + 70)],
                frame.stroke_width(1),
            ))
            .map_err(err)?;
            let label = format!(
                "LLC {} · node {} · {} CPUs{}",
                l.id,
                l.node.map_or("-".into(), |n| n.to_string()),
                l.cpus.len(),
                l.size_kb
                    .map(|k| format!(" · {} MiB", k / 1024))
                    .unwrap_or_default()
            );
            root.draw(&Text::new(
                label,
                (x0 + 6, y0 + 4),
                ("sans-serif", TICK).into_font(),
            ))
            .map_err(err)?;
            let n = l.cpus.len().max(1) as i32;
            let w = ((cell_w - 14) / n).max(1);
            for (k, c) in l.cpus.iter().enumerate() {
                let cx = x0 + 6 + k as i32 * w;
                root.draw(&Rectangle::new(
                    [(cx, y0 + 22), (cx + w - 1, y0 + 62)],
                    frame.mix(0.5).filled(),
                ))
                .map_err(err)?;
                if w >= 18 {
                    root.draw(&Text::new(
                        c.to_string(),
                        (cx + 2, y0 + 36),
                        ("sans-serif", TICK).into_font(),
                    ))
                    .map_err(err)?;
                }
            }
        }
        root.draw(&Text::new(
            topo.summary(),
            (10, 8),
            ("sans-serif", CAPTION).into_font(),
        ))
        .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(overlay(
        buf,
        &format!(
            "<g class=\"topology\" data-nodes=\"{}\" data-llcs=\"{}\" data-cpus=\"{}\"></g>",
            topo.nodes.len(),
            topo.llcs.len(),
            topo.cpus.len()
        ),
    ))
}

/// An LLC × time heatmap: one row per LLC (first on top), a cell per column from
/// `from` to `to` seconds shaded by `value` (0–1 after dividing by `scale`); node bands
/// on the left; each row's mean in its hover text.
pub struct Heat<'a> {
    pub title: &'a str,
    pub unit: &'a str,
    pub scale: f64,
    /// What the darkest shade stands for, said at the end of the colour scale.
    pub full: &'a str,
    /// (from, to, value per LLC) per column.
    pub cells: Vec<(f64, f64, Vec<Option<f64>>)>,
    /// Per LLC: (label, node, mean over the recording).
    pub rows: Vec<(String, Option<u32>, Option<f64>)>,
    pub span: f64,
}

pub fn heatmap(h: &Heat, anns: &[Annotation]) -> Res<String> {
    let n = h.rows.len().max(1);
    let row_px = (160 / n as u32).clamp(6, 28);
    let height = 30 + X_AREA + row_px * n as u32;
    let mut buf = String::new();
    let (xs, plot, rows_px);
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(h.title, ("sans-serif", CAPTION))
            .margin(6)
            .x_label_area_size(X_AREA)
            .y_label_area_size(110)
            .build_cartesian_2d(0f64..h.span.max(1e-9), 0f64..n as f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .disable_y_axis()
            .x_desc("seconds from the start")
            .x_label_formatter(&|v| crate::units::sig3(*v))
            .label_style(("sans-serif", TICK))
            .axis_desc_style(("sans-serif", DESC))
            .draw()
            .map_err(err)?;
        let top = |i: usize| (n - i) as f64;
        // Per row, runs of one shade: (from, to, step).
        let mut runs: Vec<(usize, f64, f64, u32)> = Vec::new();
        for i in 0..n {
            let mut cur: Option<(f64, f64, u32)> = None;
            for (from, to, vals) in &h.cells {
                let step = vals
                    .get(i)
                    .copied()
                    .flatten()
                    .map(|v| heat_step(v / h.scale));
                cur = match (cur, step) {
                    (Some((f, _, s)), Some(st)) if s == st => Some((f, *to, s)),
                    (prev, step) => {
                        if let Some((f, t, s)) = prev {
                            runs.push((i, f, t, s));
                        }
                        step.map(|st| (*from, *to, st))
                    }
                };
            }
            if let Some((f, t, s)) = cur {
                runs.push((i, f, t, s));
            }
        }
        chart
            .draw_series(runs.iter().map(|&(i, from, to, step)| {
                Rectangle::new([(from, top(i)), (to, top(i) - 1.0)], heat(step).filled())
            }))
            .map_err(err)?;
        let (px, py) = chart.plotting_area().get_pixel_range();
        plot = (px, py);
        rows_px = (0..n)
            .map(|i| {
                let y0 = chart.backend_coord(&(0.0, top(i))).1;
                let y1 = chart.backend_coord(&(0.0, top(i) - 1.0)).1;
                (y0, y1)
            })
            .collect::<Vec<_>>();
        xs = anns
            .iter()
            .map(|a| chart.backend_coord(&(a.at, 0.0)).0)
            .collect::<Vec<_>>();
        root.present().map_err(err)?;
    }
    let (px, py) = plot;
    let mut layer = String::from("<g class=\"heat-rows\">");
    for (i, (label, node, mean)) in h.rows.iter().enumerate() {
        let (y0, y1) = rows_px[i];
        let band = palette(node.map_or(0, |n| n as usize));
        let mean_s = mean.map_or("not recorded".into(), |m| format!("{:.1}{}", m, h.unit));
        layer.push_str(&format!(
            "<rect x=\"{}\" y=\"{y0}\" width=\"6\" height=\"{}\" fill=\"rgb({},{},{})\"/><text x=\"{}\" y=\"{}\" font-size=\"12\" font-family=\"sans-serif\" text-anchor=\"end\">{}</text><rect class=\"heat-row\" data-row=\"{i}\" data-mean=\"{}\" x=\"{}\" y=\"{y0}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#ddd\"><title>{}: mean {}</title></rect>",
            px.start - 10,
            (y1 - y0).max(1),
            band.0,
            band.1,
            band.2,
            px.start - 14,
            (y0 + y1) / 2 + 4,
            esc(label),
            mean.map_or("".into(), |m| format!("{m:.4}")),
            px.start,
            (px.end - px.start).max(1),
            (y1 - y0).max(1),
            esc(label),
            esc(&mean_s),
        ));
    }
    layer.push_str("</g>");
    layer.push_str(&colour_scale(h.full));
    layer.push_str(&annotations(anns, &xs, (py.start, py.end)));
    Ok(overlay(buf, &layer))
}

/// A heatmap's colour scale, top right: its shades from 0 to `full`.
fn colour_scale(full: &str) -> String {
    const CELLS: u32 = 12;
    const CELL_W: u32 = 10;
    let x0 = WIDTH - 24 - CELLS * CELL_W - 8 * full.chars().count() as u32;
    let mut s = format!(
        "<g class=\"colour-scale\"><text x=\"{}\" y=\"17\" font-size=\"12\" font-family=\"sans-serif\" text-anchor=\"end\">0</text>",
        x0 - 4
    );
    for i in 0..CELLS {
        let step = (f64::from(i) / f64::from(CELLS - 1) * HEAT_STEPS).round() as u32;
        let c = heat(step);
        s.push_str(&format!(
            "<rect x=\"{}\" y=\"7\" width=\"{CELL_W}\" height=\"12\" fill=\"rgb({},{},{})\" stroke=\"#ccc\" stroke-width=\"0.5\"/>",
            x0 + i * CELL_W,
            c.0,
            c.1,
            c.2
        ));
    }
    s.push_str(&format!(
        "<text x=\"{}\" y=\"17\" font-size=\"12\" font-family=\"sans-serif\">{}</text></g>",
        x0 + CELLS * CELL_W + 4,
        esc(full)
    ));
    s
}

/// A time in microseconds scaled for reading: the factor to divide by and its unit (the
/// largest value `max` decides: µs, ms or s).
fn time_unit(max_us: f64) -> (f64, &'static str) {
    if max_us >= 1e6 {
        (1e6, "s")
    } else if max_us >= 1e3 {
        (1e3, "ms")
    } else {
        (1.0, "µs")
    }
}

/// Series lines in a readable unit: times given in µs (`unit` "µs") divided to ms or s
/// when their largest value calls for it; the unit then shown.
fn scaled<'a>(lines: &[Line], unit: &'a str) -> (Vec<Line>, &'a str) {
    if unit != "µs" {
        return (
            lines
                .iter()
                .map(|l| Line {
                    name: l.name.clone(),
                    points: l.points.clone(),
                })
                .collect(),
            unit,
        );
    }
    let max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let (f, u) = time_unit(max);
    (
        lines
            .iter()
            .map(|l| Line {
                name: l.name.clone(),
                points: l.points.iter().map(|&(x, y)| (x, y / f)).collect(),
            })
            .collect(),
        u,
    )
}

/// Hover regions, one per time column: its time and every line's value there (the first
/// [`HOVER_LINES`]), in the title a browser shows over it.
fn hover(lines: &[Line], unit: &str, cols: &[(i32, i32, f64)], y: (i32, i32)) -> String {
    const HOVER_LINES: usize = 12;
    let mut out = String::from("<g class=\"hover\">");
    for &(x0, x1, t) in cols {
        let mut text = format!("{} s", crate::units::sig3(t));
        let mut n = 0;
        for l in lines {
            if let Some(&(_, v)) = l.points.iter().find(|p| p.0 == t) {
                if n < HOVER_LINES {
                    text.push_str(&format!("\n{}: {} {unit}", l.name, crate::units::sig3(v)));
                }
                n += 1;
            }
        }
        if n > HOVER_LINES {
            text.push_str(&format!("\n… and {} more", n - HOVER_LINES));
        }
        out.push_str(&format!(
            "<rect x=\"{x0}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"transparent\"><title>{}</title></rect>",
            y.0,
            (x1 - x0).max(1),
            (y.1 - y.0).max(1),
            esc(&text)
        ));
    }
    out.push_str("</g>");
    out
}

/// Lines over time (or stacked areas, each line on top of the ones before it), y from 0;
/// `unit` the values' (µs are scaled to ms or s as their size calls for). Hovering shows a
/// time column's values.
pub fn series(
    title: &str,
    unit: &str,
    lines: &[Line],
    span: f64,
    stacked: bool,
    anns: &[Annotation],
) -> Res<String> {
    let (lines, unit) = scaled(lines, unit);
    let lines = &lines[..];
    let y_desc = unit;
    let top = if stacked {
        let mut sum = std::collections::BTreeMap::<u64, f64>::new();
        for l in lines {
            for (x, y) in &l.points {
                *sum.entry(x.to_bits()).or_default() += y;
            }
        }
        sum.values().copied().fold(0.0, f64::max)
    } else {
        lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(0.0, f64::max)
    };
    let top = if top > 0.0 { top * 1.1 } else { 1.0 };
    let mut buf = String::new();
    let (xs, py, cols);
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", CAPTION))
            .margin(6)
            .x_label_area_size(X_AREA)
            .y_label_area_size(72)
            .build_cartesian_2d(0f64..span.max(1e-9), 0f64..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .light_line_style(WHITE.mix(0.0))
            .x_desc("seconds from the start")
            .y_desc(y_desc)
            .x_labels(10)
            .y_labels(6)
            .x_label_formatter(&|v| crate::units::sig3(*v))
            .y_label_formatter(&|v| crate::units::sig3(*v))
            .label_style(("sans-serif", TICK))
            .axis_desc_style(("sans-serif", DESC))
            .draw()
            .map_err(err)?;
        // Stacked: line k's area reaches the sum of lines 0..=k; the tallest is drawn
        // first so that each one below stays visible on top of it.
        let mut tops: Vec<Vec<(f64, f64)>> = Vec::new();
        if stacked {
            let mut below: Vec<f64> = Vec::new();
            for l in lines {
                below.resize(below.len().max(l.points.len()), 0.0);
                tops.push(
                    l.points
                        .iter()
                        .zip(below.iter_mut())
                        .map(|((x, y), b)| {
                            *b += y;
                            (*x, *b)
                        })
                        .collect(),
                );
            }
        }
        let order: Vec<usize> = if stacked {
            (0..lines.len()).rev().collect()
        } else {
            (0..lines.len()).collect()
        };
        for k in order {
            let l = &lines[k];
            let colour = palette(k);
            if stacked {
                let pts = std::mem::take(&mut tops[k]);
                chart
                    .draw_series(AreaSeries::new(pts, 0.0, colour.mix(0.35)).border_style(colour))
                    .map_err(err)?
                    .label(l.name.clone())
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 4), (x + 12, y + 4)], colour.filled())
                    });
            } else {
                chart
                    .draw_series(LineSeries::new(
                        l.points.iter().copied(),
                        colour.stroke_width(2),
                    ))
                    .map_err(err)?
                    .label(l.name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 12, y)], colour.stroke_width(2))
                    });
            }
        }
        if !lines.is_empty() {
            chart
                .configure_series_labels()
                .label_font(("sans-serif", TICK))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.3))
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(err)?;
        }
        py = chart.plotting_area().get_pixel_range().1;
        xs = anns
            .iter()
            .map(|a| chart.backend_coord(&(a.at, 0.0)).0)
            .collect::<Vec<_>>();
        // The time columns, as pixel spans between the midpoints of their neighbours.
        let mut times: Vec<f64> = lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .collect();
        times.sort_by(f64::total_cmp);
        times.dedup();
        let px = |t: f64| chart.backend_coord(&(t, 0.0)).0;
        cols = times
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let lo = if i == 0 { t } else { (times[i - 1] + t) / 2.0 };
                let hi = times.get(i + 1).map_or(t, |n| (t + n) / 2.0);
                (px(lo), px(hi).max(px(lo) + 1), t)
            })
            .collect::<Vec<_>>();
        root.present().map_err(err)?;
    }
    let mut layer = hover(lines, unit, &cols, (py.start, py.end));
    layer.push_str(&annotations(anns, &xs, (py.start, py.end)));
    Ok(overlay(buf, &layer))
}

/// An A/B metric: each window's value as a dot (A left, B right), each arm's median as a
/// bar across its dots.
pub fn ab_dots(title: &str, a: &[f64], b: &[f64]) -> Res<String> {
    let all = a.iter().chain(b).copied().filter(|v| v.is_finite());
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
        (l.min(v), h.max(v))
    });
    let (lo, hi) = if lo.is_finite() && hi > lo {
        let pad = (hi - lo) * 0.15;
        (lo - pad, hi + pad)
    } else if lo.is_finite() {
        (
            lo - 1.0_f64.max(lo.abs() * 0.1),
            hi + 1.0_f64.max(hi.abs() * 0.1),
        )
    } else {
        (0.0, 1.0)
    };
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (310, 190)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .margin_top(4)
            .x_label_area_size(24)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..1.5f64, lo..hi)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(2)
            .y_labels(5)
            .x_label_formatter(&|x| if *x < 0.5 { "A".into() } else { "B".into() })
            .y_label_formatter(&|v| crate::units::sig3(*v))
            .label_style(("sans-serif", TICK))
            .draw()
            .map_err(err)?;
        for (arm, vals) in [(0.0, a), (1.0, b)] {
            let colour = palette(arm as usize);
            let n = vals.len().max(1) as f64;
            chart
                .draw_series(vals.iter().enumerate().map(|(i, v)| {
                    let x = arm - 0.25 + 0.5 * (i as f64 + 0.5) / n;
                    Circle::new((x, *v), 3, colour.filled())
                }))
                .map_err(err)?;
            if let Some(m) = crate::experiment::stats::median(vals) {
                chart
                    .draw_series(LineSeries::new(
                        [(arm - 0.3, m), (arm + 0.3, m)],
                        colour.stroke_width(2),
                    ))
                    .map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}

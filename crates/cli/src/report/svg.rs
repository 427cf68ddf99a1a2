//! Hand-written SVG charts: horizontal bars, lines over x, labelled points
//! and a coloured grid. Self-contained markup (no fonts or scripts to
//! load), so a report opens anywhere and renders the same in a headless
//! browser.
//!
//! Every chart takes plain numbers and names and returns one `<svg>`
//! element as a string; the caller places it in a page.

use std::fmt::Write;

/// Colours for series, in order (Tableau 10 plus two).
pub const PALETTE: [&str; 12] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac", "#17becf", "#393b79",
];

/// `s` escaped for XML text and attributes.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// "Nice" tick values covering `lo..=hi` (about `n` of them).
fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let span = (hi - lo).max(1e-12);
    let raw = span / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() * step;
    (0..)
        .map(|i| first + i as f64 * step)
        .take_while(|v| *v <= hi + step * 1e-9)
        .collect()
}

/// A tick label: short, without trailing zeros.
pub fn num(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 1000.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn open(w: f64, h: f64, title: &str) -> String {
    format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' viewBox='0 0 {w} {h}' \
         font-family='sans-serif' font-size='11' role='img'><title>{}</title>\
         <text x='{}' y='14' font-size='13' font-weight='bold' text-anchor='middle'>{}</text>",
        esc(title),
        w / 2.0,
        esc(title)
    )
}

/// One bar of a [`ratio_bars`] chart.
pub struct Bar {
    /// Label left of the bar.
    pub label: String,
    /// Length.
    pub value: f64,
    /// Fill colour.
    pub colour: String,
    /// Text after the bar (e.g. `1.8x`).
    pub note: String,
}

/// Horizontal bars on a log₂ axis, each drawn from `reference` (e.g. a
/// speed-up of 1): values above it extend right, below it left, so 0.5x
/// and 2x are equally long and a 100x outlier does not flatten the rest.
pub fn ratio_bars(title: &str, axis: &str, items: &[Bar], reference: f64) -> String {
    let (left, right, row) = (150.0, 90.0, 16.0);
    let plot_w = 330.0;
    let h = 34.0 + row * items.len() as f64 + 30.0;
    let w = left + plot_w + right;
    let lg = |v: f64| v.max(1e-9).log2();
    let lo = items
        .iter()
        .map(|b| lg(b.value))
        .fold(lg(reference) - 1.0, f64::min)
        .floor();
    let hi = items
        .iter()
        .map(|b| lg(b.value))
        .fold(lg(reference) + 1.0, f64::max)
        .ceil();
    let x = |v: f64| left + plot_w * (lg(v) - lo) / (hi - lo);
    let mut s = open(w, h, title);
    let bottom = 26.0 + row * items.len() as f64;
    let step = ((hi - lo) / 6.0).ceil().max(1.0);
    let mut e = lo;
    while e <= hi {
        let v = 2f64.powf(e);
        let _ = write!(
            s,
            "<line x1='{0}' x2='{0}' y1='22' y2='{bottom}' stroke='#ddd'/>\
             <text x='{0}' y='{1}' text-anchor='middle'>{2}</text>",
            x(v),
            bottom + 12.0,
            num(v)
        );
        e += step;
    }
    for (i, b) in items.iter().enumerate() {
        let y = 26.0 + row * i as f64;
        let (a, z) = (x(reference).min(x(b.value)), x(reference).max(x(b.value)));
        let _ = write!(
            s,
            "<text x='{}' y='{}' text-anchor='end'>{}</text>\
             <rect x='{a}' y='{y}' width='{}' height='{}' fill='{}'/>\
             <text x='{}' y='{}'>{}</text>",
            left - 6.0,
            y + 11.0,
            esc(&b.label),
            (z - a).max(1.0),
            row - 4.0,
            b.colour,
            z + 4.0,
            y + 11.0,
            esc(&b.note)
        );
    }
    let _ = write!(
        s,
        "<line x1='{0}' x2='{0}' y1='22' y2='{bottom}' stroke='#333' stroke-dasharray='4 3'/>\
         <text x='{1}' y='{2}' text-anchor='middle'>{3}</text></svg>",
        x(reference),
        left + plot_w / 2.0,
        h - 2.0,
        esc(axis)
    );
    s
}

/// One line of a [`lines`] chart.
pub struct Series {
    /// Legend name.
    pub name: String,
    /// Colour.
    pub colour: String,
    /// Points (x, y), in x order.
    pub points: Vec<(f64, f64)>,
}

/// Lines (with point markers) over a shared x axis; `log_x` plots x on a
/// log scale (cache sizes). A legend lists the series on the right.
pub fn lines(title: &str, x_axis: &str, y_axis: &str, series: &[Series], log_x: bool) -> String {
    let (left, top, plot_w, plot_h, legend) = (60.0, 26.0, 330.0, 150.0, 130.0);
    let (w, h) = (left + plot_w + 20.0 + legend, top + plot_h + 44.0);
    let tx = |v: f64| if log_x { v.max(1e-300).log10() } else { v };
    let all = || series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = bounds(all().map(|p| tx(p.0)));
    let (_, y1) = bounds(all().map(|p| p.1));
    let (y0, y1) = (0.0, y1.max(1e-12));
    let x = |v: f64| left + plot_w * (tx(v) - x0) / (x1 - x0).max(1e-12);
    let y = |v: f64| top + plot_h * (1.0 - (v - y0) / (y1 - y0));
    let mut s = open(w, h, title);
    axes(&mut s, left, top, plot_w, plot_h);
    y_grid(&mut s, left, plot_w, ticks(y0, y1, 5), y);
    let xt: Vec<f64> = if log_x {
        ticks(x0.floor(), x1.ceil(), 6)
            .into_iter()
            .map(|e| 10f64.powf(e))
            .collect()
    } else {
        ticks(x0, x1, 6)
    };
    for t in xt
        .into_iter()
        .filter(|t| (x0..=x1 + 1e-9).contains(&tx(*t)))
    {
        let _ = write!(
            s,
            "<text x='{}' y='{}' text-anchor='middle'>{}</text>",
            x(t),
            top + plot_h + 14.0,
            num(t)
        );
    }
    for (i, ser) in series.iter().enumerate() {
        let pts: Vec<String> = ser
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.1)))
            .collect();
        let _ = write!(
            s,
            "<polyline fill='none' stroke='{}' stroke-width='1.8' points='{}'/>",
            ser.colour,
            pts.join(" ")
        );
        if ser.points.len() <= 40 {
            for p in &ser.points {
                let _ = write!(
                    s,
                    "<circle cx='{:.1}' cy='{:.1}' r='2.5' fill='{}'/>",
                    x(p.0),
                    y(p.1),
                    ser.colour
                );
            }
        }
        legend_entry(&mut s, left + plot_w + 20.0, top + 14.0 * i as f64, ser);
    }
    labels(&mut s, left, top, plot_w, plot_h, x_axis, y_axis);
    s.push_str("</svg>");
    s
}

/// One labelled point of a [`scatter`] chart.
pub struct Point {
    /// Label next to the point.
    pub label: String,
    /// Colour.
    pub colour: String,
    /// Position.
    pub x: f64,
    /// Position.
    pub y: f64,
}

/// Labelled points on linear axes from 0.
pub fn scatter(title: &str, x_axis: &str, y_axis: &str, points: &[Point]) -> String {
    let (left, top, plot_w, plot_h) = (60.0, 26.0, 330.0, 170.0);
    let (w, h) = (left + plot_w + 110.0, top + plot_h + 44.0);
    let (_, x1) = bounds(points.iter().map(|p| p.x));
    let (_, y1) = bounds(points.iter().map(|p| p.y));
    let (x1, y1) = (x1.max(1e-12) * 1.05, y1.max(1e-12) * 1.05);
    let x = |v: f64| left + plot_w * v / x1;
    let y = |v: f64| top + plot_h * (1.0 - v / y1);
    let mut s = open(w, h, title);
    axes(&mut s, left, top, plot_w, plot_h);
    for t in ticks(0.0, x1, 6) {
        let _ = write!(
            s,
            "<text x='{}' y='{}' text-anchor='middle'>{}</text>",
            x(t),
            top + plot_h + 14.0,
            num(t)
        );
    }
    y_grid(&mut s, left, plot_w, ticks(0.0, y1, 5), y);
    // Points within 3 px share one label, so coincident policies stay legible.
    let mut placed: Vec<(f64, f64, Vec<&str>)> = Vec::new();
    for p in points {
        let (px, py) = (x(p.x), y(p.y));
        let _ = write!(
            s,
            "<circle cx='{px:.1}' cy='{py:.1}' r='4' fill='{}' fill-opacity='0.8'/>",
            p.colour
        );
        match placed
            .iter_mut()
            .find(|(qx, qy, _)| (qx - px).abs() < 3.0 && (qy - py).abs() < 3.0)
        {
            Some((_, _, names)) => names.push(&p.label),
            None => placed.push((px, py, vec![&p.label])),
        }
    }
    for (px, py, names) in placed {
        let anchor = if px > left + plot_w * 0.7 {
            "end"
        } else {
            "start"
        };
        let dx = if anchor == "end" { -7.0 } else { 7.0 };
        let _ = write!(
            s,
            "<text x='{:.1}' y='{:.1}' text-anchor='{anchor}'>{}</text>",
            px + dx,
            py + 4.0,
            esc(&names.join(", "))
        );
    }
    labels(&mut s, left, top, plot_w, plot_h, x_axis, y_axis);
    s.push_str("</svg>");
    s
}

/// A grid of cells coloured by value around `pivot` (blue above: faster;
/// red below: slower), each showing its text. `cells[row][col]` is `None`
/// where there is no value.
pub fn grid(
    title: &str,
    rows: &[String],
    cols: &[String],
    cells: &[Vec<Option<(f64, String)>>],
    pivot: f64,
) -> String {
    let (left, top, cw, ch) = (170.0, 96.0, 62.0, 18.0);
    let (w, h) = (
        left + cw * cols.len() as f64 + 10.0,
        top + ch * rows.len() as f64 + 10.0,
    );
    let mut s = open(w, h, title);
    for (j, c) in cols.iter().enumerate() {
        let cx = left + cw * j as f64 + cw / 2.0;
        let _ = write!(
            s,
            "<text transform='translate({cx},{}) rotate(-40)'>{}</text>",
            top - 6.0,
            esc(c)
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + ch * i as f64;
        let _ = write!(
            s,
            "<text x='{}' y='{}' text-anchor='end'>{}</text>",
            left - 6.0,
            y + 13.0,
            esc(r)
        );
        for (j, cell) in cells[i].iter().enumerate() {
            let x = left + cw * j as f64;
            let (fill, text) = match cell {
                Some((v, t)) => (shade(*v, pivot), t.as_str()),
                None => ("#f4f4f4".to_string(), ""),
            };
            let _ = write!(
                s,
                "<rect x='{x}' y='{y}' width='{cw}' height='{ch}' fill='{fill}' stroke='#fff'/>\
                 <text x='{}' y='{}' text-anchor='middle'>{}</text>",
                x + cw / 2.0,
                y + 13.0,
                esc(text)
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// Blue for values above `pivot` (log scale, saturating at 8x), red below.
fn shade(v: f64, pivot: f64) -> String {
    let r = (v.max(1e-9) / pivot).log2().clamp(-3.0, 3.0) / 3.0;
    let mix = |a: f64, b: f64, t: f64| (a + (b - a) * t).round() as u8;
    let (cr, cg, cb) = if r >= 0.0 {
        (
            mix(255.0, 70.0, r),
            mix(255.0, 130.0, r),
            mix(255.0, 200.0, r),
        )
    } else {
        (
            mix(255.0, 225.0, -r),
            mix(255.0, 80.0, -r),
            mix(255.0, 80.0, -r),
        )
    };
    format!("#{cr:02x}{cg:02x}{cb:02x}")
}

fn bounds(vals: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = vals
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if lo > hi {
        (0.0, 1.0)
    } else if lo == hi {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    }
}

/// Horizontal grid lines with their labels at `ticks` (placed by `y`).
fn y_grid(s: &mut String, left: f64, plot_w: f64, ticks: Vec<f64>, y: impl Fn(f64) -> f64) {
    for t in ticks {
        let _ = write!(
            s,
            "<line x1='{left}' x2='{right}' y1='{yt}' y2='{yt}' stroke='#eee'/>\
             <text x='{lx}' y='{ty}' text-anchor='end'>{label}</text>",
            right = left + plot_w,
            yt = y(t),
            lx = left - 4.0,
            ty = y(t) + 4.0,
            label = num(t)
        );
    }
}

fn axes(s: &mut String, left: f64, top: f64, w: f64, h: f64) {
    let _ = write!(
        s,
        "<rect x='{left}' y='{top}' width='{w}' height='{h}' fill='none' stroke='#999'/>"
    );
}

fn labels(s: &mut String, left: f64, top: f64, w: f64, h: f64, x_axis: &str, y_axis: &str) {
    let _ = write!(
        s,
        "<text x='{}' y='{}' text-anchor='middle'>{}</text>\
         <text transform='translate(14,{}) rotate(-90)' text-anchor='middle'>{}</text>",
        left + w / 2.0,
        top + h + 32.0,
        esc(x_axis),
        top + h / 2.0,
        esc(y_axis)
    );
}

fn legend_entry(s: &mut String, x: f64, y: f64, ser: &Series) {
    let _ = write!(
        s,
        "<rect x='{x}' y='{y}' width='10' height='10' fill='{}'/>\
         <text x='{}' y='{}'>{}</text>",
        ser.colour,
        x + 14.0,
        y + 9.0,
        esc(&ser.name)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(
            ticks(0.0, 1.0, 5),
            vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
        assert_eq!(ticks(0.0, 9.0, 4), vec![0.0, 2.5, 5.0, 7.5]);
        assert_eq!(num(0.25), "0.25");
        assert_eq!(num(12.0), "12");
    }

    #[test]
    fn charts_are_well_formed_svg_with_escaped_text() {
        let b = ratio_bars(
            "a<b",
            "x",
            &[Bar {
                label: "p&q".into(),
                value: 2.0,
                colour: PALETTE[0].into(),
                note: "2x".into(),
            }],
            1.0,
        );
        assert!(b.starts_with("<svg") && b.ends_with("</svg>"));
        assert!(b.contains("a&lt;b") && b.contains("p&amp;q") && !b.contains("p&q"));
        let l = lines(
            "t",
            "x",
            "y",
            &[Series {
                name: "s".into(),
                colour: PALETTE[1].into(),
                points: vec![(1.0, 0.5), (100.0, 0.9)],
            }],
            true,
        );
        assert_eq!(l.matches("<circle").count(), 2);
        assert!(!l.contains("NaN"));
    }
}

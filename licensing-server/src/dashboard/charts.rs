//! Charts drawn on the server as SVG: no script, no library, nothing fetched. Colours come from
//! the stylesheet's classes (`.ok`, `.bad`, `.bar`), so the pages keep their strict
//! `Content-Security-Policy`. Each chart has a title for screen readers and a table of its
//! numbers beside it.

use crate::dashboard::words::{t, tm};
use maud::{Markup, html};

/// Width and height of a chart's drawing space (it scales to its box).
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 220.0;
/// Room for the axis labels.
const LEFT: f64 = 64.0;
const BOTTOM: f64 = 24.0;
const TOP: f64 = 10.0;

/// A round axis maximum at or above `max` (1, 2 or 5 times a power of ten).
fn nice_max(max: u64) -> u64 {
    if max == 0 {
        return 1;
    }
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            if step.saturating_mul(m) >= max {
                return step.saturating_mul(m);
            }
        }
        step = step.saturating_mul(10);
    }
}

/// Stacked columns: per entry, a label (shown every few columns) and the successful and failed
/// counts.
pub(crate) fn stacked_columns(title: &str, days: &[(String, u64, u64)]) -> Markup {
    let max = nice_max(days.iter().map(|(_, ok, bad)| ok + bad).max().unwrap_or(0));
    let plot_w = WIDTH - LEFT;
    let plot_h = HEIGHT - BOTTOM - TOP;
    let slot = plot_w / days.len().max(1) as f64;
    let bar = (slot * 0.7).max(1.0);
    let y = |v: u64| TOP + plot_h - (v as f64 / max as f64) * plot_h;
    let label_every = days.len().div_ceil(6).max(1);
    html! {
        svg.chart.wide viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) role="img" aria-label=(title) {
            title { (title) }
            @for fraction in [0.0, 0.5, 1.0] {
                @let value = (max as f64 * fraction).round() as u64;
                line.grid x1=(LEFT) x2=(WIDTH) y1=(y(value)) y2=(y(value)) {}
                // The base line needs no 0, which would crowd the first day's label.
                @if fraction > 0.0 {
                    text.axis x=(LEFT - 6.0) y=(y(value) + 4.0) text-anchor="end" { (value) }
                }
            }
            @for (i, (label, ok, bad)) in days.iter().enumerate() {
                @let x = LEFT + i as f64 * slot + (slot - bar) / 2.0;
                @if *ok > 0 {
                    rect.ok x=(x) y=(y(*ok)) width=(bar) height=(y(0) - y(*ok)) {
                        title { (tm("charts-label-ok-successful", &[("label", html! { (label) }), ("ok", html! { (ok) })])) }
                    }
                }
                @if *bad > 0 {
                    rect.bad x=(x) y=(y(ok + bad)) width=(bar) height=(y(*ok) - y(ok + bad)) {
                        title { (tm("charts-label-bad-refused", &[("label", html! { (label) }), ("bad", html! { (bad) })])) }
                    }
                }
                @if i + 1 == days.len() {
                    text.axis x=(x + bar) y=(HEIGHT - 6.0) text-anchor="end" { (label) }
                } @else if i % label_every == 0 && i + label_every < days.len() {
                    text.axis x=(x + bar / 2.0) y=(HEIGHT - 6.0) text-anchor="middle" { (label) }
                }
            }
        }
    }
}

/// Horizontal bars: a name and a value each, longest first as given.
pub(crate) fn bars(title: &str, items: &[(String, u64)]) -> Markup {
    let max = items.iter().map(|(_, v)| *v).max().unwrap_or(0).max(1);
    let row = 28.0;
    let height = (items.len().max(1) as f64) * row;
    // Narrower than the columns: these sit two to a row, and their text must stay legible.
    let width = 420.0;
    let label_w = 150.0;
    let plot_w = width - label_w - 50.0;
    html! {
        @if items.is_empty() {
            p.hint { (t("charts-nothing-yet")) }
        } @else {
            svg.chart viewBox=(format!("0 0 {width} {height}")) role="img" aria-label=(title) {
                title { (title) }
                @for (i, (name, value)) in items.iter().enumerate() {
                    @let top = i as f64 * row;
                    @let w = (*value as f64 / max as f64) * plot_w;
                    text.axis x=(label_w - 8.0) y=(top + 18.0) text-anchor="end" { (name) }
                    rect.bar x=(label_w) y=(top + 6.0) width=(w.max(1.0)) height=(row - 10.0) {}
                    text.axis x=(label_w + w + 6.0) y=(top + 18.0) { (value) }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(
            [0, 1, 3, 10, 11, 49, 120, 5001].map(nice_max),
            [1, 1, 5, 10, 20, 50, 200, 10_000]
        );
    }

    #[test]
    fn columns_scale_to_the_largest_day_and_name_themselves() {
        let days = vec![
            ("11-01".to_owned(), 40, 10),
            ("11-02".to_owned(), 0, 0),
            ("11-03".to_owned(), 100, 0),
        ];
        let svg = stacked_columns("Requests per day", &days).into_string();
        assert!(svg.contains("aria-label=\"Requests per day\""));
        // 100 is the axis maximum: the third column reaches the top of the plot.
        assert!(svg.contains(&format!(" y=\"{TOP}\" width")), "{svg}");
        assert!(svg.contains("11-01: 10 refused"));
        assert!(!svg.contains("11-02: 0"), "empty days draw nothing");
        assert!(!svg.contains("style="), "no inline styles under the CSP");
    }
}

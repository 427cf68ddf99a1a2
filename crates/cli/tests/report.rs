//! `compare`'s report: a table that fits 100 columns, a verdict per input,
//! and an HTML page with SVG charts, a legend and its provenance.

mod common;
use common::{outrider, stderr, stdout};

#[test]
fn compare_ends_with_verdicts_and_fits_100_columns_unless_wide() {
    let args = [
        "compare",
        "--policies",
        "none,obl,readahead,directed",
        "--workload",
        "reversed",
        "--cache",
        "64MiB,256MiB",
    ];
    let o = outrider(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
    let (_, verdicts) = out
        .split_once("verdicts (")
        .expect("a verdicts block at the end");
    assert!(verdicts.contains("reversed @64MiB:") && verdicts.contains("reversed @256MiB:"));
    // reversed reading defeats forward-only obl; the oracle is marked and
    // kept out of the ranking.
    assert!(out.contains("directed*"), "{out}");
    assert!(out.contains("oracle, not ranked: directed"), "{out}");
    assert!(!out.contains("best directed"), "{out}");
    assert!(!out.contains("lead_ms"));
    let wide = outrider(&[&args[..], &["--wide"]].concat());
    assert!(stdout(&wide).contains("lead_ms") && stdout(&wide).contains("Mreq/s"));
}

#[test]
fn html_report_has_svg_charts_curves_a_legend_and_its_command() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html").display().to_string();
    let o = outrider(&[
        "compare",
        "--policies",
        "none,readahead,flashy",
        "--workload",
        "slowthink",
        "--cache",
        "16MiB,64MiB",
        "--html",
        &page,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    // Grid + 2 curves + per size (bars, scatter, 2 series charts).
    assert!(
        html.matches("<svg").count() >= 11,
        "{}",
        html.matches("<svg").count()
    );
    for needle in [
        "Speed-up over none",
        "over cache size",
        "Coverage vs cost",
        "aggressiveness over time",
        "<h2>Legend</h2>",
        "<dt>vs_none</dt>",
        "<dt>coverage</dt>",
        "compare --policies none,readahead,flashy",
        "outrider 0.",
    ] {
        assert!(html.contains(needle), "no {needle}");
    }
    assert!(!html.contains("NaN"));
}

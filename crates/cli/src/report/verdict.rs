//! Speed-ups over `none` and the verdict per input: which policy saved the
//! most time, which cost time, and which were oracles.

use super::Row;

/// Speed-ups within this of 1 count as a tie with `none` (0.5%: the
/// printed `1.00x`), neither a win nor a slowdown.
pub const TIE: f64 = 0.005;

/// Is a speed-up a slowdown beyond a tie?
pub fn is_slower(speedup: Option<f64>) -> bool {
    speedup.is_some_and(|s| s < 1.0 - TIE)
}

/// A policy's standing in one run of one input.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked {
    /// The policy specification.
    pub policy: String,
    /// Its modelled elapsed time, s.
    pub elapsed_s: f64,
    /// `none`'s elapsed time over this one (> 1: faster than `none`).
    pub speedup: Option<f64>,
}

/// The verdict for one run of one input.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Run number (from 1).
    pub run: u32,
    /// Was `none` among the policies (the baseline of every speed-up)?
    pub has_baseline: bool,
    /// The fastest policy that is not an oracle (`none` itself when no
    /// policy beats it); `None` without any non-oracle row.
    pub best: Option<Ranked>,
    /// Non-oracle policies slower than `none`, slowest first.
    pub slower: Vec<Ranked>,
    /// Oracle policies (handed the trace's future), not ranked.
    pub oracles: Vec<Ranked>,
}

/// `none`'s elapsed time in `run`, if `none` ran.
fn baseline(rows: &[Row], run: u32) -> Option<f64> {
    rows.iter()
        .find(|r| r.report.run == run && r.report.policy == "none")
        .map(|r| r.report.elapsed_s)
}

/// The speed-up of `row` over `none` in the same run (`none`'s elapsed time
/// over the row's); `None` without a `none` row or with a zero time.
pub fn speedup(rows: &[Row], row: &Row) -> Option<f64> {
    let base = baseline(rows, row.report.run)?;
    (row.report.elapsed_s > 0.0).then(|| base / row.report.elapsed_s)
}

/// One verdict per run present in `rows`, in run order.
pub fn verdicts(rows: &[Row]) -> Vec<Verdict> {
    let mut runs: Vec<u32> = rows.iter().map(|r| r.report.run).collect();
    runs.sort_unstable();
    runs.dedup();
    runs.into_iter().map(|run| verdict(rows, run)).collect()
}

fn verdict(rows: &[Row], run: u32) -> Verdict {
    let ranked = |r: &Row| Ranked {
        policy: r.report.policy.clone(),
        elapsed_s: r.report.elapsed_s,
        speedup: speedup(rows, r),
    };
    let in_run: Vec<&Row> = rows.iter().filter(|r| r.report.run == run).collect();
    let best = in_run
        .iter()
        .filter(|r| !r.oracle)
        .min_by(|a, b| a.report.elapsed_s.total_cmp(&b.report.elapsed_s))
        .map(|r| ranked(r));
    let mut slower: Vec<Ranked> = in_run
        .iter()
        .filter(|r| !r.oracle)
        .map(|r| ranked(r))
        .filter(|r| is_slower(r.speedup))
        .collect();
    slower.sort_by(|a, b| a.elapsed_s.total_cmp(&b.elapsed_s).reverse());
    Verdict {
        run,
        has_baseline: baseline(rows, run).is_some(),
        best,
        slower,
        oracles: in_run
            .iter()
            .filter(|r| r.oracle)
            .map(|r| ranked(r))
            .collect(),
    }
}

/// `2.31x`, or `-` without a baseline.
pub fn times(s: Option<f64>) -> String {
    s.map_or_else(|| "-".into(), |s| format!("{s:.2}x"))
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "verdict")?;
        if self.run > 1 {
            write!(f, " (run {})", self.run)?;
        }
        match &self.best {
            None => write!(f, ": only oracle policies ran")?,
            Some(b) if !self.has_baseline => write!(
                f,
                ": fastest {} ({:.3} s); no speed-ups: add none to the policies",
                b.policy, b.elapsed_s
            )?,
            Some(b) if b.policy == "none" || b.speedup.is_some_and(|s| s < 1.0 + TIE) => {
                write!(f, ": no policy is faster than none by 0.5% or more")?
            }
            Some(b) => write!(
                f,
                ": best {}, {} faster than none",
                b.policy,
                times(b.speedup)
            )?,
        }
        if !self.slower.is_empty() {
            let list: Vec<String> = self
                .slower
                .iter()
                .map(|r| format!("{} {}", r.policy, times(r.speedup)))
                .collect();
            write!(f, "; SLOWER than none: {}", list.join(", "))?;
        }
        if !self.oracles.is_empty() {
            let list: Vec<String> = self
                .oracles
                .iter()
                .map(|r| format!("{} {}", r.policy, times(r.speedup)))
                .collect();
            write!(f, "; oracle, not ranked: {}", list.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outrider_core::metrics::Report;

    fn row(policy: &str, elapsed_s: f64, oracle: bool) -> Row {
        Row {
            report: Report {
                policy: policy.into(),
                run: 1,
                elapsed_s,
                ..Report::default()
            },
            series: Vec::new(),
            oracle,
        }
    }

    #[test]
    fn best_excludes_oracles_and_slower_policies_are_flagged() {
        let rows = [
            row("none", 10.0, false),
            row("obl", 12.5, false),
            row("diskseen", 4.0, false),
            row("directed", 2.0, true),
        ];
        let v = &verdicts(&rows)[0];
        assert_eq!(v.best.as_ref().unwrap().policy, "diskseen");
        assert_eq!(v.best.as_ref().unwrap().speedup, Some(2.5));
        assert_eq!(v.slower.len(), 1);
        assert_eq!(v.slower[0].speedup, Some(0.8));
        let text = v.to_string();
        assert!(
            text.contains("best diskseen, 2.50x faster than none"),
            "{text}"
        );
        assert!(text.contains("SLOWER than none: obl 0.80x"), "{text}");
        assert!(text.contains("oracle, not ranked: directed 5.00x"));
    }

    #[test]
    fn without_none_there_is_no_speed_up_and_the_verdict_says_so() {
        let rows = [row("obl", 3.0, false), row("readahead", 2.0, false)];
        let v = &verdicts(&rows)[0];
        assert_eq!(v.best.as_ref().unwrap().speedup, None);
        assert!(v.to_string().contains("add none"), "{v}");
        let rows = [row("none", 2.0, false), row("obl", 3.0, false)];
        assert!(verdicts(&rows)[0]
            .to_string()
            .contains("no policy is faster"));
        // 0.2% slower is a tie, not a slowdown.
        let rows = [row("none", 1.0, false), row("obl", 1.002, false)];
        assert!(verdicts(&rows)[0].slower.is_empty());
    }
}

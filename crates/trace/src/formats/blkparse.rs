//! `blkparse`: the default text output of blkparse (blktrace's decoder),
//! format `"%D %2c %8s %5T.%9t %5p %2a %3d "` followed by the action's
//! payload (blkparse(1), "Default output"):
//!
//! ```text
//!   8,0    1       11     0.000123456  4321  Q   R 2048 + 8 [grep]
//!   dev    cpu     seq    seconds      pid   act RWBS sector + count [process]
//! ```
//!
//! - Only events of one action become requests: **`Q` (queued) by
//!   default**, the requests as the application's I/O submitted them, before
//!   the block layer merged or split them and before the scheduler
//!   reordered them, which is what a prefetcher sees and predicts.
//!   `ReadOptions::blkparse_action` selects another (`D` = issued to the
//!   driver, `C` = completed). Events of other actions (G, I, D, C, M, P,
//!   U, A, X, m, …) are well-formed and skipped without counting.
//! - RWBS: containing `R` → read, containing `W` → write (`RA`, `WS`, `FWS`,
//!   `WM`, …). Discards (`D`), secure erases (`E`), pure flushes (`F`, `FN`)
//!   and `N`, and any read/write with 0 sectors (an empty pre-flush), are
//!   not reads or writes: counted in `ReadReport::ignored`, not errors.
//! - `sector` and `count` are 512-byte sectors. `seconds` (decimal) is made
//!   relative to the earliest request. `pid` goes to `Record::pid`, and the
//!   bracketed process name to `TraceMeta::processes` (first name per pid;
//!   not for `C`, whose brackets hold an error code).
//! - Devices (`maj,min`) are numbered 0, 1, … in order of first request.
//! - Lines blkparse prints besides events are recognised and skipped: blank
//!   lines, the per-CPU and per-device summaries (`CPU0 (8,0):`,
//!   `Total (8,0):`, indented `Reads Queued: …` fields), `Throughput …`,
//!   `Events …`, `Skips …`. Anything else is a bad record.

use super::text::{self, decimal_ns, mul, show, size32, uint, Ctx, Line};
use crate::{Record, Trace, TraceError, TraceMeta};
use rustc_hash::FxHashMap;

/// The layout, for messages.
pub(crate) const LAYOUT: &str = "maj,min cpu seq seconds pid action RWBS sector + count [process]";

/// Default time unit: seconds.
const TIME_UNIT_NS: u64 = 1_000_000_000;

/// `maj,min`, if `s` is one.
pub(crate) fn dev_pair(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(',')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Is `line` one of the summary lines blkparse prints after the events?
pub(crate) fn is_summary(line: &str) -> bool {
    let t = line.trim_start();
    ["CPU", "Total", "Throughput", "Events", "Skips"]
        .iter()
        .any(|p| t.starts_with(p))
        || (line.starts_with(char::is_whitespace) && t.contains(':'))
}

/// Every action letter blkparse prints (blkparse(1), "Trace actions");
/// the action column holds one or two of them (`UT`: unplug on timer).
const ACTIONS: &str = "ABCDFGIMPQRSTUXm";

/// The optional `sector + count` after RWBS: `None` when the line ends or
/// the process name follows; otherwise both must be there and numeric.
fn sector_range<'a>(
    tok: &mut std::str::SplitWhitespace<'a>,
    line: &str,
) -> Result<Option<(u64, u64)>, String> {
    let sector = match tok.next() {
        None => return Ok(None),
        Some(t) if t.starts_with('[') => return Ok(None),
        Some(t) => uint(t, "sector")?,
    };
    let plus = tok.next().ok_or_else(|| {
        format!(
            "expected `+` after the sector in `{LAYOUT}`, found the end of the line: {}",
            show(line)
        )
    })?;
    if plus != "+" {
        return Err(format!(
            "expected `+` between sector and count, found {}",
            show(plus)
        ));
    }
    let count = tok.next().ok_or_else(|| {
        format!(
            "expected count (sectors) in `{LAYOUT}`, found the end of the line: {}",
            show(line)
        )
    })?;
    Ok(Some((sector, uint(count, "count (sectors)")?)))
}

/// A parsed event of the selected action.
pub(crate) struct Event<'a> {
    /// `(major, minor)`.
    pub dev: (u32, u32),
    /// The request, `dev` left 0; `None` if not a read or write.
    pub record: Option<Record>,
    /// The bracketed name, if any.
    pub process: Option<&'a str>,
}

/// What one line is: an event of `action`, a line to skip, or an error.
pub(crate) fn parse_line<'a>(
    line: &'a str,
    action: &str,
    unit_ns: u64,
) -> Result<Option<Event<'a>>, String> {
    let mut tok = line.split_whitespace();
    let first = tok.next().unwrap_or("");
    let Some(dev) = dev_pair(first) else {
        if is_summary(line) {
            return Ok(None);
        }
        return Err(format!(
            "expected a blkparse event `{LAYOUT}` or summary line, found {}",
            show(line)
        ));
    };
    let next = |tok: &mut std::str::SplitWhitespace<'a>, what: &str| {
        tok.next().ok_or_else(|| {
            format!(
                "expected {what} in `{LAYOUT}`, found the end of the line: {}",
                show(line)
            )
        })
    };
    uint(next(&mut tok, "cpu")?, "cpu")?;
    uint(next(&mut tok, "seq")?, "seq")?;
    let time_ns = decimal_ns(next(&mut tok, "seconds")?, unit_ns, "seconds")?;
    let pid = next(&mut tok, "pid")?;
    let pid = u32::try_from(uint(pid, "pid")?)
        .map_err(|_| format!("expected pid below 2^32, found {pid}"))?;
    let act = next(&mut tok, "action")?;
    if act.is_empty() || act.len() > 2 || !act.chars().all(|c| ACTIONS.contains(c)) {
        return Err(format!(
            "expected a blkparse action ({ACTIONS}), found {}",
            show(act)
        ));
    }
    let rwbs = next(&mut tok, "RWBS")?;
    if !rwbs.chars().all(|c| "RWDEFNASMBU".contains(c)) {
        return Err(format!(
            "expected RWBS flags (R, W, D, F, N, A, S, M…), found {}",
            show(rwbs)
        ));
    }
    if act != action {
        // Other actions' payloads differ (plugs, messages, remaps); the
        // common fields above are checked, the rest is theirs.
        return Ok(None);
    }
    let process = match (line.find('['), line.rfind(']')) {
        (Some(a), Some(b)) if a < b && act != "C" => Some(&line[a + 1..b]),
        _ => None,
    };
    let range = sector_range(&mut tok, line)?;
    let write = if rwbs.contains('D') || rwbs.contains('E') {
        None
    } else if rwbs.contains('W') {
        Some(true)
    } else if rwbs.contains('R') {
        Some(false)
    } else {
        None
    };
    let not_a_request = Event {
        dev,
        record: None,
        process,
    };
    let Some(write) = write else {
        return Ok(Some(not_a_request));
    };
    let Some((sector, count)) = range else {
        // A flush carries no sector range (`Q FWS [kworker]`).
        if rwbs.contains('F') {
            return Ok(Some(not_a_request));
        }
        return Err(format!(
            "expected `sector + count` after RWBS {rwbs}, found none: {}",
            show(line)
        ));
    };
    if count == 0 {
        return Ok(Some(not_a_request));
    }
    let offset = mul(sector, 512, "sector")?;
    let size = size32(mul(count, 512, "count")?, "count")?;
    let record = Record::block(time_ns, 0, offset, size, write, pid);
    Ok(Some(Event {
        dev,
        record: Some(record),
        process,
    }))
}

/// Read a whole blkparse text file, taking `action` events.
pub(crate) fn read(
    ctx: &mut Ctx<'_>,
    unit_ns: Option<u64>,
    action: char,
) -> Result<Trace, TraceError> {
    let unit = unit_ns.unwrap_or(TIME_UNIT_NS);
    let action = action.to_string();
    let mut devs: Vec<(u32, u32)> = Vec::new();
    let mut names: FxHashMap<u32, String> = FxHashMap::default();
    let mut records = text::read_lines(ctx, |_, line| {
        let Some(ev) = parse_line(line, &action, unit)? else {
            return Ok(Line::Skip);
        };
        let Some(mut r) = ev.record else {
            return Ok(Line::Ignored);
        };
        let dev = match devs.iter().position(|&d| d == ev.dev) {
            Some(i) => i,
            None => {
                devs.push(ev.dev);
                devs.len() - 1
            }
        };
        r.dev = u16::try_from(dev)
            .map_err(|_| "expected at most 65536 devices, found more".to_string())?;
        if let Some(p) = ev.process {
            names.entry(r.pid).or_insert_with(|| p.to_string());
        }
        Ok(Line::Record(r))
    })?;
    text::relative_times(&mut records);
    let mut processes: Vec<(u32, String)> = names.into_iter().collect();
    processes.sort();
    let meta = TraceMeta {
        processes,
        ..TraceMeta::default()
    };
    Ok(Trace::new(meta, records))
}

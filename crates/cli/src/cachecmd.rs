//! `outrider stat|warm|evict [--json] [-v] [-F] [-I PAT] [-i PAT]
//! [--no-wait] PATH...`: vmtouch-like page-cache inspection and control
//! (outrider-live's `cachetool`). Directories are walked recursively.
//!
//! Under sudo, directories are listed and files opened as the invoking
//! user (`--as-root` to act as root); residency is asked as root.
//!
//! Exit codes: 0 when every file was examined and its residency known; 1
//! when an entry could not be examined or the kernel would not tell a
//! file's residency (each named on stderr with the reason — never
//! reported as a number); 2 for a path given that does not exist or is
//! neither a file nor a directory.

use crate::usage;
use outrider_live::cachetool::{walk, Action, FileReport, Totals, Visit, WalkOptions};
use std::path::PathBuf;

/// Arguments shared by stat, warm and evict.
#[derive(clap::Args, Debug)]
pub struct CacheArgs {
    /// Accepted for compatibility: directories are always walked
    /// recursively, like vmtouch.
    #[arg(short = 'r', long)]
    pub recursive: bool,
    /// One line (or JSON object) per file, not only the totals.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// JSON lines: one object per file with -v, then one with the totals.
    #[arg(long)]
    pub json: bool,
    /// Stay on the file system of each PATH (do not enter mount points).
    #[arg(short = 'F', long)]
    pub one_file_system: bool,
    /// Only files whose name matches PATTERN (shell glob; repeatable).
    #[arg(short = 'I', long, value_name = "PATTERN")]
    pub include: Vec<String>,
    /// Leave out files and directories whose name matches PATTERN (shell
    /// glob; repeatable).
    #[arg(short = 'i', long, value_name = "PATTERN")]
    pub exclude: Vec<String>,
    /// warm: return once the reads are issued instead of once the data
    /// is in memory.
    #[arg(long)]
    pub no_wait: bool,
    /// Under sudo, list directories and open files as root instead of
    /// as the invoking user (SUDO_UID/SUDO_GID).
    #[arg(long)]
    pub as_root: bool,
    /// Files or directories.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// `bytes` for people: 1023 B, 4.0 KiB, 1.5 GiB.
pub fn human(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

fn pages_bytes(pages: u64) -> String {
    human(pages.saturating_mul(outrider_sys::PAGE_SIZE))
}

fn file_line(r: &FileReport, json: bool) -> String {
    if json {
        let mut v = serde_json::json!({
            "path": r.path.display().to_string(),
            "size_bytes": r.size_bytes,
            "pages": r.pages,
        });
        match &r.residency {
            Ok(c) => {
                v["resident_pages"] = c.cache.into();
                v["dirty_pages"] = c.dirty.into();
                v["writeback_pages"] = c.writeback.into();
                v["evicted_pages"] = c.evicted.into();
                v["recently_evicted_pages"] = c.recently_evicted.into();
            }
            Err(why) => {
                v["resident_pages"] = serde_json::Value::Null;
                v["unknown"] = why.clone().into();
            }
        }
        v.to_string()
    } else {
        match &r.residency {
            Ok(c) => format!(
                "{}  {}/{}  {:.1}%",
                r.path.display(),
                pages_bytes(c.cache),
                human(r.size_bytes),
                pct(c.cache, r.pages)
            ),
            Err(why) => format!("{}  {}  {why}", r.path.display(), human(r.size_bytes)),
        }
    }
}

fn action_name(action: Action) -> &'static str {
    match action {
        Action::Stat => "stat",
        Action::Warm => "warm",
        Action::Evict => "evict",
    }
}

fn totals_json(action: Action, t: &Totals, elapsed_s: f64) -> String {
    serde_json::json!({
        "action": action_name(action),
        "files": t.files,
        "dirs": t.dirs,
        "links_skipped": t.links_skipped,
        "excluded": t.excluded,
        "other_fs_dirs": t.other_fs,
        "size_bytes": t.size_bytes,
        "pages": t.pages,
        "known_pages": t.known_pages,
        "resident_pages": t.resident_pages,
        "resident_pct": (t.known_pages > 0 || t.unknown_files == 0)
            .then(|| pct(t.resident_pages, t.known_pages)),
        "dirty_pages": t.dirty_pages,
        "writeback_pages": t.writeback_pages,
        "evicted_pages": t.evicted_pages,
        "recently_evicted_pages": t.recently_evicted_pages,
        "unknown_files": t.unknown_files,
        "advised_bytes": t.advised_bytes,
        "errors": t.errors,
        "elapsed_s": elapsed_s,
    })
    .to_string()
}

fn totals_text(action: Action, t: &Totals, elapsed_s: f64) -> String {
    let verb = match action {
        Action::Stat => "Resident",
        _ => "Resident before",
    };
    let mut s = format!("Files: {}", t.files);
    if t.links_skipped > 0 {
        s += &format!(" ({} more hard links counted once)", t.links_skipped);
    }
    s += &format!("\nDirectories: {}\n", t.dirs);
    if t.known_pages == 0 && t.unknown_files > 0 {
        s += &format!("{verb}: unknown\n");
    } else {
        s += &format!(
            "{verb}: {}/{} ({:.1}%; {}/{} pages)\n",
            pages_bytes(t.resident_pages),
            pages_bytes(t.known_pages),
            pct(t.resident_pages, t.known_pages),
            t.resident_pages,
            t.known_pages
        );
    }
    s += &format!(
        "Dirty: {}  Writeback: {}  Evicted: {} ({} recently)\n",
        pages_bytes(t.dirty_pages),
        pages_bytes(t.writeback_pages),
        pages_bytes(t.evicted_pages),
        pages_bytes(t.recently_evicted_pages)
    );
    if t.unknown_files > 0 {
        s += &format!(
            "Unknown: {} files ({}) whose residency the kernel would not tell\n",
            t.unknown_files,
            pages_bytes(t.pages - t.known_pages)
        );
    }
    if action != Action::Stat {
        s += &format!("Advised: {}\n", human(t.advised_bytes));
    }
    if t.excluded + t.other_fs > 0 {
        s += &format!(
            "Left out: {} by pattern, {} directories on other file systems\n",
            t.excluded, t.other_fs
        );
    }
    if t.errors > 0 {
        s += &format!("Errors: {} entries could not be examined\n", t.errors);
    }
    s += &format!("Elapsed: {elapsed_s:.3} s");
    s
}

/// Run one of the three commands.
pub fn run(action: Action, a: CacheArgs) -> anyhow::Result<()> {
    outrider_sys::launch::keep_root(a.as_root);
    let opts = WalkOptions {
        as_user: outrider_sys::launch::program_credentials().map_err(usage)?,
        wait: !a.no_wait,
        one_file_system: a.one_file_system,
        include: a.include,
        exclude: a.exclude,
        ..WalkOptions::default()
    };
    let start = std::time::Instant::now();
    let roots_are_files = a.paths.iter().all(|p| p.is_file());
    let show = a.verbose || (roots_are_files && !a.json);
    let t = walk(&a.paths, action, &opts, |v| match v {
        Visit::File(r) => {
            if show {
                println!("{}", file_line(r, a.json));
            } else if let Err(why) = &r.residency {
                eprintln!("outrider: {}: residency {why}", r.path.display());
            }
        }
        Visit::Error(path, e) => eprintln!("outrider: {}: {e}", path.display()),
    })
    .map_err(|e| usage(e.to_string()))?;
    let elapsed_s = start.elapsed().as_secs_f64();
    if a.json {
        println!("{}", totals_json(action, &t, elapsed_s));
    } else {
        println!("{}", totals_text(action, &t, elapsed_s));
    }
    if t.errors > 0 || t.unknown_files > 0 {
        anyhow::bail!(
            "{} entries could not be examined, the residency of {} files is unknown",
            t.errors,
            t.unknown_files
        );
    }
    Ok(())
}

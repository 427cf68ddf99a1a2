//! `outrider stat|warm|evict [--json] [-r] [-v] PATH...`: vmtouch-like
//! page-cache inspection and control (outrider-live's `cachetool`).

use crate::usage;
use outrider_live::cachetool::{walk, Action, FileReport, Totals, WalkError, WalkOptions};
use std::path::PathBuf;

/// Arguments shared by stat, warm and evict.
#[derive(clap::Args, Debug)]
pub struct CacheArgs {
    /// Walk directories recursively (without it a directory is an error).
    #[arg(short = 'r', long)]
    pub recursive: bool,
    /// One line (or JSON object) per file, not only the totals.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// JSON lines: one object per file with -v, then one with the totals.
    #[arg(long)]
    pub json: bool,
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

fn file_line(r: &FileReport, json: bool) -> String {
    if json {
        serde_json::json!({
            "path": r.path.display().to_string(),
            "size_bytes": r.size_bytes,
            "pages": r.pages,
            "resident_pages": r.resident_pages,
        })
        .to_string()
    } else {
        format!(
            "{}  {}/{} pages  {:.1}%",
            r.path.display(),
            r.resident_pages,
            r.pages,
            pct(r.resident_pages, r.pages)
        )
    }
}

fn totals_line(action: Action, t: &Totals, json: bool, elapsed_s: f64) -> String {
    let name = match action {
        Action::Stat => "stat",
        Action::Warm => "warm",
        Action::Evict => "evict",
    };
    if json {
        serde_json::json!({
            "action": name,
            "files": t.files,
            "dirs": t.dirs,
            "size_bytes": t.size_bytes,
            "pages": t.pages,
            "resident_pages": t.resident_pages,
            "resident_pct": pct(t.resident_pages, t.pages),
            "advised_bytes": t.advised_bytes,
            "errors": t.errors,
            "elapsed_s": elapsed_s,
        })
        .to_string()
    } else {
        let verb = match action {
            Action::Stat => "Resident",
            _ => "Resident before",
        };
        let mut s = format!(
            "Files: {}\nDirectories: {}\n{verb}: {}/{} pages ({:.1}%) of {} bytes\n",
            t.files,
            t.dirs,
            t.resident_pages,
            t.pages,
            pct(t.resident_pages, t.pages),
            t.size_bytes
        );
        if action != Action::Stat {
            s += &format!("Advised: {} bytes\n", t.advised_bytes);
        }
        if t.errors > 0 {
            s += &format!("Errors: {} entries could not be examined\n", t.errors);
        }
        s += &format!("Elapsed: {elapsed_s:.3} s");
        s
    }
}

/// Run one of the three commands.
pub fn run(action: Action, a: CacheArgs) -> anyhow::Result<()> {
    let opts = WalkOptions {
        recursive: a.recursive,
        ..WalkOptions::default()
    };
    let start = std::time::Instant::now();
    let roots_are_files = a.paths.iter().all(|p| p.is_file());
    let show = a.verbose || (roots_are_files && !a.json);
    let t = walk(&a.paths, action, &opts, |r| {
        if show {
            println!("{}", file_line(r, a.json));
        }
    })
    .map_err(|e| match e {
        WalkError::IsDirectory(_) | WalkError::Io { .. } => usage(e.to_string()),
    })?;
    println!(
        "{}",
        totals_line(action, &t, a.json, start.elapsed().as_secs_f64())
    );
    Ok(())
}

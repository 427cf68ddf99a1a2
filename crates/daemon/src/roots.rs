//! Which of a launch set's files belong to the paths its launch was
//! given on its command line.
//!
//! An application's key names its arguments' paths by their role
//! (`grep -r <file>`, [`crate::launchset::app_name`]), so `grep -r x
//! arch/arm64` and `grep -r x arch/powerpc` are one application with one
//! set. The set the first left is all `arm64`'s files, and one launch
//! tells the streaks nothing ([`crate::streaks`]): replayed whole for the
//! second, it asked for 21.5 MiB of files that launch never read and
//! walked 73 directories it never opened, beside its own reads from the
//! same disk. `grep -r` ran 0.92x of its time with no daemon, `tar` of
//! the tree to a pipe 0.82x, `rg` 0.75x; with the roots, 1.01x, 0.92x
//! and 0.96x, 2-6 MiB asked for (medians of 8, alternated, caches
//! dropped: `bench/results/daemon-switch.md`, whose `first` arm puts
//! tar's 0.92x on watching a launch at all).
//!
//! So each saved set keeps its launch's *roots*: the words of its
//! command line that are not options, each taken as a path from the
//! launch's working directory (lexically: nothing is looked up). At the
//! next launch, a recorded root is *foreign* when it and every root of
//! the new launch lie apart (neither holds the other: `arm64` against
//! `powerpc`, not `~` against `~/src`). A file of the set under a
//! foreign root and under none of the new launch's roots is not
//! replayed, nor is a recorded directory so placed walked; mapped files
//! (the program and its libraries) always are. A word that is no path
//! (a pattern) names a root no file lies under. A launch given the same
//! paths as the one before drops nothing.
//!
//! A launch's working directory is one more root when its data is
//! likely to lie there: not `/`, and not its user's home directory or
//! above it (where a user's programs keep their own files: `~/.local`,
//! `~/.pyenv`, which a `python3` run from elsewhere reads too). `git
//! status`, `make`, `du` or `rg` given no path work on their working
//! directory, and one run in another repository or tree than the set's
//! launch would replay that launch's files and walk its directories
//! (`rg` and `du -s` run in `arch/powerpc` after `arch/arm64`: 0.77-0.80x
//! and 0.87-0.89x of their time with no daemon, replayed whole; with the
//! working directory a root, `rg`'s 1 970 files of `arm64` left out,
//! 1.02x and 1.01x in one sitting, 0.89x (0.82-1.06x) and 0.94x in
//! another, medians of 8, alternated: `bench/results/daemon-switch-cwd.md`). A
//! recorded working directory is foreign when it lies apart from the new
//! launch's working directory (a root too) and from each of its command
//! line's roots; a launch whose working directory is no root (run from
//! its home directory) leaves nothing out for it.
//!
//! Paths under a symbolic link the launch was given are not recognised
//! (the set's paths are the kernel's, links resolved): those files are
//! replayed as before.

use outrider_store::AppHistory;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Roots kept per launch at most (the first words that are not options).
pub const ROOTS_MAX: usize = 16;

/// The roots of one launch, absolute and normalised: its command line's
/// and its working directory, when that is one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Roots {
    args: Vec<PathBuf>,
    cwd: Option<PathBuf>,
}

impl Roots {
    /// The roots of command line `argv` (its program name first) run in
    /// `cwd` by a user whose home directory is `home`.
    pub fn of_command(argv: &[&[u8]], cwd: &Path, home: Option<&Path>) -> Roots {
        let words = argv
            .iter()
            .skip(1)
            .filter(|w| !w.is_empty() && w[0] != b'-');
        let cwd = normalised(cwd);
        let no_root = cwd == Path::new("/") || home.is_some_and(|h| under(h, &cwd));
        Roots {
            args: (words.take(ROOTS_MAX))
                .map(|w| cwd.join(std::ffi::OsStr::from_bytes(w)))
                .map(|p| normalised(&p))
                .collect(),
            cwd: (!no_root).then_some(cwd),
        }
    }

    /// The roots of process `pid`, whose command line is `argv`, in its
    /// working directory (`/proc/PID/cwd`), its user's home directory
    /// `home`; none when that cannot be read.
    pub fn of_process(pid: u32, argv: &[&[u8]], home: Option<&Path>) -> Roots {
        match std::fs::read_link(format!("/proc/{pid}/cwd")) {
            Ok(cwd) => Self::of_command(argv, &cwd, home),
            Err(_) => Roots::default(),
        }
    }

    /// The stored form of the command line's roots
    /// ([`outrider_live::metawalk::encode_dirs`]'s).
    pub fn encode(&self) -> Vec<u8> {
        outrider_live::metawalk::encode_dirs(&self.args)
    }

    /// The stored form of the working directory (empty when it is no root).
    pub fn encode_cwd(&self) -> Vec<u8> {
        (self.cwd.as_deref()).map_or_else(Vec::new, |c| c.as_os_str().as_bytes().to_vec())
    }

    /// The roots of an [`Roots::encode`] blob and an [`Roots::encode_cwd`]
    /// one.
    pub fn decode(blob: &[u8], cwd: &[u8]) -> Roots {
        let mut args = outrider_live::metawalk::decode_dirs(blob);
        args.truncate(ROOTS_MAX);
        let cwd = PathBuf::from(std::ffi::OsStr::from_bytes(cwd));
        Roots {
            args,
            cwd: (cwd.is_absolute()).then_some(cwd),
        }
    }

    /// Bytes held (for the cache of sets in memory).
    pub fn bytes(&self) -> usize {
        (self.args.iter().chain(&self.cwd))
            .map(|r| r.as_os_str().len() + 24)
            .sum()
    }

    /// Those of these (a recorded launch's) roots that lie apart from
    /// every root of `now`: a command line's from `now`'s command line's,
    /// a working directory from `now`'s and its command line's (none
    /// when `now` has no working directory root).
    fn foreign(&self, now: &Roots) -> Vec<&Path> {
        let apart = |r: &Path, n: &Path| !under(n, r) && !under(r, n);
        let args = (self.args.iter()).filter(|r| now.args.iter().all(|n| apart(r, n)));
        let cwd = (self.cwd.iter())
            .filter(|c| now.cwd.as_deref().is_some_and(|n| apart(c, n)))
            .filter(|c| now.args.iter().all(|n| apart(c, n)));
        args.chain(cwd).map(PathBuf::as_path).collect()
    }

    /// Is `path` to be left out at a launch with roots `now`, with `foreign`
    /// these roots' foreign ones?
    fn left_out(foreign: &[&Path], now: &Roots, path: &Path) -> bool {
        foreign.iter().any(|r| under(path, r)) && !now.args.iter().any(|n| under(path, n))
    }

    /// `set` (recorded by a launch with these roots) without its files
    /// that belong to this launch's foreign roots, for a launch with roots
    /// `now`, and `dirs` likewise; `None` when nothing is left out.
    pub fn left_for(
        &self,
        now: &Roots,
        set: &AppHistory,
        dirs: &[PathBuf],
    ) -> Option<(AppHistory, Vec<PathBuf>)> {
        let foreign = self.foreign(now);
        if foreign.is_empty() {
            return None;
        }
        let out = |p: &Path| Self::left_out(&foreign, now, p);
        let gone: rustc_hash::FxHashSet<u32> = (set.files.iter())
            .filter(|f| !f.mapped && out(Path::new(&f.path)))
            .map(|f| f.id)
            .collect();
        let kept_dirs: Vec<PathBuf> = dirs.iter().filter(|d| !out(d)).cloned().collect();
        if gone.is_empty() && kept_dirs.len() == dirs.len() {
            return None;
        }
        let mut left = set.clone();
        left.files.retain(|f| !gone.contains(&f.id));
        left.accesses.retain(|a| !gone.contains(&a.file));
        Some((left, kept_dirs))
    }
}

/// Is `path` `root` or under it (whole components)?
fn under(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

/// `p` with `.` and `..` resolved by its words alone.
fn normalised(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::Normal(w) => out.push(w),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use outrider_store::{AccessRecord, FileRecord};

    fn roots(words: &[&str], cwd: &str) -> Roots {
        let argv: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        Roots::of_command(&argv, Path::new(cwd), Some(Path::new("/home/u")))
    }

    fn file(id: u32, path: &str, mapped: bool) -> FileRecord {
        FileRecord {
            id,
            dev: 1,
            ino: u64::from(id),
            path: path.into(),
            mapped,
            ..FileRecord::default()
        }
    }

    fn set() -> AppHistory {
        let files = vec![
            file(0, "/usr/bin/grep", true),
            file(1, "/usr/lib/libc.so.6", true),
            file(2, "/src/arch/arm64/a.c", false),
            file(3, "/src/arch/arm64/b/c.h", false),
            file(4, "/etc/grep.conf", false),
        ];
        let accesses = (0..5)
            .map(|file| AccessRecord {
                file,
                page: 0,
                pages: 1,
            })
            .collect();
        AppHistory {
            files,
            accesses,
            runs: 1,
            ..AppHistory::default()
        }
    }

    #[test]
    fn words_not_options_are_paths_from_the_working_directory() {
        let r = roots(
            &["grep", "-r", "-F", "x", "arch/./arm64/", "../up", "/abs"],
            "/src/k",
        );
        assert_eq!(
            r.args,
            ["/src/k/x", "/src/k/arch/arm64", "/src/up", "/abs"].map(PathBuf::from)
        );
        assert_eq!(r.cwd, Some(PathBuf::from("/src/k")));
        assert_eq!(Roots::decode(&r.encode(), &r.encode_cwd()), r);
        let many: Vec<String> = (0..40).map(|i| format!("f{i}")).collect();
        let mut argv = vec!["cat"];
        argv.extend(many.iter().map(String::as_str));
        assert_eq!(roots(&argv, "/").args.len(), ROOTS_MAX);
    }

    #[test]
    fn a_sibling_tree_leaves_out_the_recorded_trees_files_not_the_programs() {
        let recorded = roots(&["grep", "-r", "x", "arch/arm64"], "/src");
        let now = roots(&["grep", "-r", "x", "arch/powerpc"], "/src");
        let dirs = ["/src/arch/arm64", "/src/arch/arm64/b", "/etc"].map(PathBuf::from);
        let (left, kept) = recorded
            .left_for(&now, &set(), &dirs)
            .expect("some left out");
        let ids: Vec<u32> = left.files.iter().map(|f| f.id).collect();
        assert_eq!(ids, [0, 1, 4], "the program, its library and /etc stay");
        assert_eq!(left.accesses.len(), 3);
        assert_eq!(kept, [PathBuf::from("/etc")]);
    }

    #[test]
    fn the_same_a_wider_or_a_narrower_root_leaves_nothing_out() {
        let recorded = roots(&["grep", "-r", "x", "arch/arm64"], "/src");
        for now in [
            roots(&["grep", "-r", "x", "/src/arch/arm64"], "/"),
            roots(&["grep", "-r", "x", "."], "/src"),
            roots(&["grep", "-r", "x", "arm64/b"], "/src/arch"),
        ] {
            assert_eq!(recorded.left_for(&now, &set(), &[]), None, "{now:?}");
        }
        // No roots recorded (a set saved before roots were): nothing.
        assert_eq!(Roots::default().left_for(&now_of("/y"), &set(), &[]), None);
    }

    /// `git status`, `make`: no path given, their working directory's.
    fn cwd_set() -> AppHistory {
        let mut h = set();
        h.files[2].path = "/src/a/.git/index".into();
        h.files[3].path = "/src/a/b/c.h".into();
        h
    }

    #[test]
    fn another_working_directory_leaves_out_the_recorded_ones_files() {
        let recorded = roots(&["git", "status"], "/src/a");
        let dirs = ["/src/a", "/src/a/b", "/etc"].map(PathBuf::from);
        let now = roots(&["git", "status"], "/src/b");
        let (left, kept) = recorded.left_for(&now, &cwd_set(), &dirs).unwrap();
        let ids: Vec<u32> = left.files.iter().map(|f| f.id).collect();
        assert_eq!(ids, [0, 1, 4]);
        assert_eq!(kept, [PathBuf::from("/etc")]);
        // The same directory, one under it or above it, or one given.
        for now in [
            roots(&["git", "status"], "/src/a"),
            roots(&["git", "status"], "/src/a/b"),
            roots(&["git", "status"], "/src"),
            roots(&["git", "-C", "/src/a", "status"], "/src/b"),
        ] {
            assert_eq!(recorded.left_for(&now, &cwd_set(), &dirs), None, "{now:?}");
        }
    }

    #[test]
    fn the_root_and_the_home_directory_are_no_working_directory_roots() {
        for cwd in ["/", "/home", "/home/u"] {
            assert_eq!(roots(&["python3"], cwd).cwd, None, "{cwd}");
            assert_eq!(roots(&["python3"], cwd).encode_cwd(), b"");
        }
        assert!(roots(&["python3"], "/home/u/src").cwd.is_some());
        // Recorded in the home directory (its ~/.local read), now in a
        // project: nothing left out; nor the other way round.
        let home = roots(&["python3", "-c", "x"], "/home/u");
        let project = roots(&["python3", "-c", "x"], "/home/u/src/p");
        let mut h = set();
        h.files[4].path = "/home/u/.local/lib/m.py".into();
        assert_eq!(home.left_for(&project, &h, &[]), None);
        h.files[4].path = "/home/u/src/p/data.txt".into();
        assert_eq!(project.left_for(&home, &h, &[]), None);
    }

    fn now_of(dir: &str) -> Roots {
        roots(&["grep", "-r", "x", dir], "/")
    }

    #[test]
    fn a_file_under_a_root_of_the_new_launch_stays() {
        // Recorded over arm64 and /etc; now over powerpc and /etc/grep.conf.
        let recorded = roots(&["grep", "x", "/src/arch/arm64", "/etc"], "/");
        let now = roots(&["grep", "x", "/src/arch/powerpc", "/etc/grep.conf"], "/");
        let (left, _) = recorded.left_for(&now, &set(), &[]).unwrap();
        let ids: Vec<u32> = left.files.iter().map(|f| f.id).collect();
        assert_eq!(ids, [0, 1, 4]);
    }
}

//! The daemon's TOML configuration (`/etc/outrider/daemon.toml`; the
//! commented example is `dist/daemon.toml`). Every key is optional:
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `watch` | `[]` | executables (absolute paths) whose launches are recorded and replayed; empty: every program |
//! | `exclude` | `[]` | executables never watched (absolute paths), even when `watch` names them |
//! | `memory_budget_mib` | `256` | bytes one replay (launch or boot) may ask the kernel to read, at most |
//! | `pressure_max_pct` | `10` | memory pressure (PSI `some`, percent of the time some task waited on memory) above which no replay starts and a running one stops |
//! | `state_dir` | `/var/lib/outrider` | where the history store (`history.db`) lives |
//! | `history_max_apps` | `512` | launch sets kept; beyond it the least recently launched are forgotten |
//! | `launch_key_args` | `2` | command-line words in an application's name besides its executable: `argv[0]`'s name, then arguments, paths (a `/`, or a name with an extension: told from the word, nothing looked up) written `<file>`, options naming a path before a command word left out (`git -C DIR log` is `git log`), and an option taking the program (`-c`, `-e`, ...) followed by the program's own first words, shaped the same way (`sh -c 'tar -cf - src'` is `sh -c tar -cf`) ([`crate::launchset::app_name`]); `0`: the executable alone |
//! | `launch_window_s` | `5` | seconds after an exec whose reads form the launch set; a launch whose process tree has all exited ends 0.1 s after, its set saved then ([`Daemon`](crate::Daemon)) |
//! | `launch_cap_mib` | `256` | bytes one launch set holds at most |
//! | `judge_from_memory_mib` | `64` | a launch with no set of its own is followed until its tree read this much; if at most one page in 32 of it missed the cache, it reads from memory and is let go, unrecorded (its next cold launch is recorded); [`Config::judge_pages`] says what the bound trades |
//! | `launch_files_max` | `32768` | files one launch set (and the boot set) holds at most: the daemon's work goes by files as much as by bytes (each is opened, stamped and named when recorded, verified, mapped and opened again when replayed, and the whole set handled at each launch). `rg` over a tree of 31 479 small files, in the day in miniature (`FILES_MAX=N bash bench/daemon/launch.sh`, one sitting each): the day took 80% of its headroom at 32 768 (its set whole), 52% at 16 384, 48% at 8 192, the daemon resident at 66, 47 and 29 MiB after it, before it gave its free heap back once idle ([`Daemon`](crate::Daemon), `trim_if_idle`); 59% (1.35x) at 32 768 in `bench/results/daemon.md` of 2026-12-05. What set it at 8 192 before: each launch of `rg` from memory cost the daemon 78 ms of CPU (19 ms at 8 192) until the replay stopped once its launch is judged to read from memory, and an `rg` never seen over the tree in memory, following `rg`'s set as shared history, ran at 0.92-0.93x of its speed with no daemon (the set's probes found a page or two missing, this VM's page cache losing pages in the background, and the replay went over 31 491 files, 40-60 ms of the daemon's CPU) (at 32 768, 0.96x within noise in the sitting above) until a launch reading from memory had no shared set replayed ([`crate::shared`]): that `rg` then ran 0.99x, and `rg` over the tree in memory 0.99x (`bench/results/daemon.md` of 2026-12-05, 15 alternations each) |
//! | `argument_roots` | `true` | a launch replays none of its set's files (its mapped files apart) that lie under a path the set's launch was given on its command line and it was not, where the two lie apart (`grep -r x arch/arm64`, then `grep -r x arch/powerpc`), or under the set's launch's working directory when this launch's lies apart from it and neither is `/` or the user's home directory or above it (`git status` in one repository, then in another), nor walks such directories ([`crate::roots`], with what it cost); `false`: the set replays whole, as FAST and IORap replay an application's set |
//! | `confirm_data_files` | `true` | a replay asks for the pages of the set's data files (read through `read(2)`, 1 MiB or more of the set each) only once the launch is seen to read the first recorded page of one of them, waiting up to 2 s after the rest: the set may hold another run's data, named nowhere on the command line (a script given its file on standard input ran 0.46x of its stock time with the other run's pages asked for, `wc -l` of a 6 MiB file on standard input 0.70-0.79x; [`crate::launchset::data_files`]); `false`: at once, as FAST and IORap replay a set |
//! | `read_around` | `false` | a replay asks for each mapped file (an executable, a library) no larger than half its disk's readahead window whole, at its first access, as the kernel reads it at the first page fault in it ([`crate::launchset`], module `around`, with what it cost); `false`: only the pages the launch touched |
//! | `metadata_walk` | `true` | record the directories each launch's process tree opens on the root file system (fanotify, one event per directory opened there by any process, and 25-60 ns more per read of any file there, `outrider_sys::dirwatch`) and, at the next launch of one that opened at least 4 ([`crate::launchset::WALK_DIRS_MIN`]), list them and look the set's files up in them beside the replay, until the launcher exits ([`crate::launchset`]): a tree walker waits on directory blocks and inodes, which no launch set of file pages holds; a launch seen opening them only in part (the watch is marked once a launch is seen to read from storage) keeps its set's too, when run with the same roots |
//! | `max_recording` | `64` | launches recorded at once at most (more are not recorded) |
//! | `save_interval_s` | `2` | finished launch sets are saved at most this long after they end |
//! | `boot_prefetch` | `false` | record the boot set (the first `boot_window_s` after start) and replay it at the next start |
//! | `boot_window_s` | `30` | seconds after the daemon starts that form the boot set |
//! | `boot_cap_mib` | `256` | bytes the boot set holds at most |
//! | `socket` | `/run/outrider/daemon.sock` | the Unix socket through which `outrider run` by a user who is not root is served ([`crate::clients`]); `""`: none |
//! | `max_clients` | `16` | runs served at once at most (more run unprefetched) |
//! | `max_clients_per_user` | `4` | runs of one user served at once at most |
//! | `max_followed` | `4` | programs followed at once, at most, with `follow_policy` after their launch window, while they still run ([`crate::helper::follow`]); `0`: none |
//! | `follow_policy` | `"auto"` | the policy spec a followed program runs under, as `outrider run --policy` takes it (`"auto+diskseen"`: also DiskSeen's block table, which every program of the user's store shares, §3.1/§3.4); checked against the policy registry, and refused if it cannot run live |
//! | `follow_min_read_mib` | `16` | a launch is followed after its window only if its process tree read at least this much in it (cache hits included): a shell or a server waiting for requests is not |
//! | `repeat_window_s` | `2` | a launch of an application this soon after its last one is neither recorded nor replayed (its pages are still cached; a loop of short programs would pay the daemon's work at every exec); such an exec, or one of an executable not watched, quiets the file name it was given until the window ends: the eBPF source drops that name's execs in the kernel, with no wake-up (so another application of the same executable is no launch until then either); `0`: every launch is |
//! | `successor_prefetch` | `true` | predict the next launches (up to 3) from the order launches came in (EPCM over launches, [`crate::successors`]) and replay their sets right after the current launch's own, before their execs |
//! | `successor_threshold` | `0.6` | the least likelihood of a predicted launch for its set to be replayed (EPCM's prefetch threshold, §2.3; above 0.5 one launch is predicted per step) |
//! | `cpu_max_pct` | `5` | the daemon's own CPU (all its threads), percent of one core over the last 10 s, above which, while the machine is busy (`cpu_busy_pct`), new launches are neither recorded nor replayed until it is under again (the systemd unit also caps it with `CPUQuota=20%`) |
//! | `cpu_busy_pct` | `25` | the machine is busy while some task waited for a CPU (PSI `cpu` `some`) more than this percent of the same 10 s; only then does `cpu_max_pct` hold, as the daemon's work then takes a CPU from a program (the day in miniature, one program after another on 2 cores, waited 3-17% of each second, 35-38% under `rg`'s threads; three busy loops on 2 cores 50-54%); `0`: it always holds, as when the machine cannot tell (no PSI) |
//! | `delay_accounting` | `true` | turn the kernel's delay accounting on (`kernel.task_delayacct`, put back at exit) and report each launch's wait for block I/O, and per application the stall time its replays saved |
//! | `detach_idle_reads` | `true` | detach the eBPF program of page-cache reads while no thread is followed, attaching it again at the next exec read (`outrider_live::ebpf`, module `reads`, with what it cost attached); `false`: it runs at every read of every task while the daemon runs |
//! | `detach_idle_faults` | `true` | the same for the programs of page faults and fault-around maps of mapped files: a launch's faults before the daemon reads its exec are then seen only where they brought pages in from storage (its cache insertions); `false`: they run at every fault of every task, as `ld.so` makes ~40 for a `/bin/true` |
//! | `event_source` | `"auto"` | `"ebpf"`: programs on the tracepoints follow each program from its exec and filter in the kernel ([`outrider_live::ebpf::Scope::Execs`]); `"tracefs"`: a tracing instance records every task and the daemon drops what it does not follow; `"auto"`: eBPF, else tracefs |
//!
//! A bad file is refused with a message naming the file, the key and what
//! was expected ([`ConfigError`]); `outrider daemon --check-config` prints
//! it and exits 2.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Where the daemon looks for its configuration by default.
pub const DEFAULT_CONFIG: &str = "/etc/outrider/daemon.toml";

/// The daemon's settings (see the module documentation for each key).
#[derive(Clone, Debug, Deserialize, PartialEq, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Executables watched; empty: all.
    pub watch: Vec<PathBuf>,
    /// Executables never watched.
    pub exclude: Vec<PathBuf>,
    /// Bytes one replay may request, MiB.
    pub memory_budget_mib: u64,
    /// Memory pressure that stops replays, percent.
    pub pressure_max_pct: f64,
    /// Directory of the history store.
    pub state_dir: PathBuf,
    /// Launch sets kept at most.
    pub history_max_apps: u64,
    /// Command-line words in an application's name.
    pub launch_key_args: usize,
    /// Launch window, seconds.
    pub launch_window_s: f64,
    /// Launch-set cap, MiB.
    pub launch_cap_mib: u64,
    /// Read before a launch with no set is judged, MiB.
    pub judge_from_memory_mib: u64,
    /// Files one set holds at most.
    pub launch_files_max: usize,
    /// Files under the last launch's foreign command-line paths left out.
    pub argument_roots: bool,
    /// The set's data files wait until the launch reads one of them.
    pub confirm_data_files: bool,
    /// Small mapped files replayed whole.
    pub read_around: bool,
    /// Directories recorded and walked at replays.
    pub metadata_walk: bool,
    /// Launches recorded at once at most.
    pub max_recording: usize,
    /// Save delay bound, seconds.
    pub save_interval_s: f64,
    /// Boot prefetch on/off.
    pub boot_prefetch: bool,
    /// Boot window, seconds.
    pub boot_window_s: f64,
    /// Boot-set cap, MiB.
    pub boot_cap_mib: u64,
    /// The clients' socket; empty: none.
    pub socket: PathBuf,
    /// Clients served at once at most.
    pub max_clients: usize,
    /// Clients of one user served at once at most.
    pub max_clients_per_user: usize,
    /// Programs followed after their launch at once, at most.
    pub max_followed: usize,
    /// The policy spec a followed program runs under.
    pub follow_policy: String,
    /// Reads in the window that make a launch worth following, MiB.
    pub follow_min_read_mib: u64,
    /// Repeated launches left alone within, seconds.
    pub repeat_window_s: f64,
    /// Next launches predicted and their sets replayed.
    pub successor_prefetch: bool,
    /// Least likelihood of a predicted launch.
    pub successor_threshold: f64,
    /// CPU cap, percent of one core.
    pub cpu_max_pct: f64,
    /// CPU pressure above which the cap holds, percent.
    pub cpu_busy_pct: f64,
    /// Delay accounting on, for the stall time saved.
    pub delay_accounting: bool,
    /// Page reads' program detached while nothing is followed.
    pub detach_idle_reads: bool,
    /// Faults' and maps' programs detached while nothing is followed.
    pub detach_idle_faults: bool,
    /// `auto`, `ebpf` or `tracefs`.
    pub event_source: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            watch: Vec::new(),
            exclude: Vec::new(),
            memory_budget_mib: 256,
            pressure_max_pct: 10.0,
            state_dir: PathBuf::from("/var/lib/outrider"),
            history_max_apps: 512,
            launch_key_args: 2,
            launch_window_s: 5.0,
            launch_cap_mib: 256,
            judge_from_memory_mib: 64,
            launch_files_max: 32768,
            argument_roots: true,
            confirm_data_files: true,
            read_around: false,
            metadata_walk: true,
            max_recording: 64,
            save_interval_s: 2.0,
            boot_prefetch: false,
            boot_window_s: 30.0,
            boot_cap_mib: 256,
            socket: PathBuf::from("/run/outrider/daemon.sock"),
            max_clients: 16,
            max_clients_per_user: 4,
            max_followed: 4,
            follow_policy: "auto".into(),
            follow_min_read_mib: 16,
            repeat_window_s: 2.0,
            successor_prefetch: true,
            successor_threshold: 0.6,
            cpu_max_pct: 5.0,
            cpu_busy_pct: 25.0,
            delay_accounting: true,
            detach_idle_reads: true,
            detach_idle_faults: true,
            event_source: "auto".into(),
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: cannot read the configuration: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Not TOML, an unknown key, or a value of the wrong type.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (it names the line, the key and what was expected).
        message: String,
    },
    /// `follow_policy` names no policy that can run live.
    #[error("{path}: key `follow_policy`: {why}")]
    Policy {
        /// The file.
        path: PathBuf,
        /// What is wrong with the spec (the registry's or the live
        /// runtime's message).
        why: String,
    },
    /// A value of the right type outside its range.
    #[error("{path}: key `{key}`: expected {expected}")]
    Value {
        /// The file.
        path: PathBuf,
        /// The key.
        key: &'static str,
        /// What was expected.
        expected: &'static str,
    },
}

impl Config {
    /// Read and check `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::parse(&text, path)
    }

    /// Parse and check `text` (read from `path`, named in messages).
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let c: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().replace('\n', "\n  "),
        })?;
        c.check(path)?;
        Ok(c)
    }

    fn check(&self, path: &Path) -> Result<(), ConfigError> {
        let bad = |key, expected| {
            Err(ConfigError::Value {
                path: path.to_path_buf(),
                key,
                expected,
            })
        };
        let positive = |s: f64| s.is_finite() && s > 0.0 && s <= 3600.0;
        if self.watch.iter().any(|p| !p.is_absolute()) {
            return bad("watch", "absolute executable paths");
        }
        if self.exclude.iter().any(|p| !p.is_absolute()) {
            return bad("exclude", "absolute executable paths");
        }
        if !self.state_dir.is_absolute() {
            return bad("state_dir", "an absolute directory path");
        }
        if !(self.pressure_max_pct.is_finite()
            && self.pressure_max_pct > 0.0
            && self.pressure_max_pct <= 100.0)
        {
            return bad(
                "pressure_max_pct",
                "a percentage, more than 0 and at most 100",
            );
        }
        if self.memory_budget_mib == 0 {
            return bad("memory_budget_mib", "a positive number of MiB");
        }
        if self.launch_cap_mib == 0 || self.boot_cap_mib == 0 {
            let key = if self.launch_cap_mib == 0 {
                "launch_cap_mib"
            } else {
                "boot_cap_mib"
            };
            return bad(key, "a positive number of MiB");
        }
        if self.history_max_apps == 0 {
            return bad("history_max_apps", "a positive number of applications");
        }
        if !(self.socket.as_os_str().is_empty() || self.socket.is_absolute()) {
            return bad("socket", "an absolute path, or \"\" for no socket");
        }
        if self.max_clients == 0 || self.max_clients_per_user == 0 {
            let key = if self.max_clients == 0 {
                "max_clients"
            } else {
                "max_clients_per_user"
            };
            return bad(key, "a positive number of runs");
        }
        if self.judge_from_memory_mib == 0 || self.judge_from_memory_mib > 1 << 20 {
            return bad("judge_from_memory_mib", "a number of MiB from 1 to 1048576");
        }
        if self.launch_files_max == 0 || self.launch_files_max > 1 << 20 {
            return bad("launch_files_max", "a number of files from 1 to 1048576");
        }
        if self.launch_key_args > 16 {
            return bad("launch_key_args", "a number of words from 0 to 16");
        }
        if !(self.repeat_window_s.is_finite() && (0.0..=86400.0).contains(&self.repeat_window_s)) {
            return bad("repeat_window_s", "seconds, from 0 to 86400");
        }
        if !(self.successor_threshold > 0.0 && self.successor_threshold <= 1.0) {
            return bad(
                "successor_threshold",
                "a likelihood, more than 0 and at most 1",
            );
        }
        if !(self.cpu_max_pct.is_finite() && self.cpu_max_pct > 0.0 && self.cpu_max_pct <= 100.0) {
            return bad(
                "cpu_max_pct",
                "a percentage of one core, more than 0 and at most 100",
            );
        }
        if !(0.0..=100.0).contains(&self.cpu_busy_pct) {
            return bad("cpu_busy_pct", "a percentage of the time, from 0 to 100");
        }
        if self.source().is_err() {
            return bad("event_source", "\"auto\", \"ebpf\" or \"tracefs\"");
        }
        if self.max_recording == 0 {
            return bad("max_recording", "a positive number of launches");
        }
        if let Err(why) = check_policy(&self.follow_policy) {
            return Err(ConfigError::Policy {
                path: path.to_path_buf(),
                why,
            });
        }
        for (key, v) in [
            ("launch_window_s", self.launch_window_s),
            ("save_interval_s", self.save_interval_s),
            ("boot_window_s", self.boot_window_s),
        ] {
            if !positive(v) {
                return bad(key, "seconds, more than 0 and at most 3600");
            }
        }
        Ok(())
    }

    /// `judge_from_memory_mib` in pages: what a launch with no set to
    /// replay reads before the daemon judges whether it read it from
    /// memory (at most one page in
    /// [`MISS_SHARE`](crate::launchset::MISS_SHARE) missed: a few directory blocks or files evicted since leave it so);
    /// a launch that did is no longer recorded. Recording is not free for
    /// the program: each new file was opened, stamped and closed by the
    /// daemon while the program ran, on the cores it needs (now after it,
    /// where the file can be opened by inode then:
    /// [`Recorder::record_later`](crate::launchset::Recorder::record_later)),
    /// and each of its reads is sent and filed. `rg` over a
    /// source tree in memory, recorded as a first launch, took 0.71x of its
    /// time with no daemon (medians of 5, alternated, the same wait before
    /// each run); stopped at its first 8 MiB, 0.96x and 1.00x in two
    /// sittings of 7. But 8 MiB judged too soon: `rustc -O` right after
    /// `rustc --version` reads its first 8 MiB from memory and most of its
    /// 104 MiB from the disk; judged at 8 MiB it was not recorded, and on
    /// the second day in miniature it ran slower than on the first (0.51 s
    /// against 0.43 s, 0.52 against 0.40; one day pair each); judged at
    /// 64 MiB, 0.36 against 0.37 and 0.19 against 0.40. Judged at 16 MiB
    /// (through the `rustup` proxy, caches dropped, `rustc --version`,
    /// then `rustc -O`), its first 16 MiB had 51 226 pages missed in its
    /// tree: recorded. But a fresh copy of `rg` over the tree in memory
    /// took 0.977x of its time with no daemon judged at 16 MiB and 0.977x
    /// at 64 (its CPU time 0.980x both; medians of 10 alternations of 5
    /// runs): no gain seen, so 64 stays. What a launch from memory reads
    /// is no set to replay: its next cold launch is recorded.
    /// The eBPF programs judge the same way, in the launch's own context
    /// (`outrider_live::ebpf::EbpfSource::let_go_from_memory`): this thread,
    /// at nice 19, came to it late beside a launch that kept both cores busy.
    pub fn judge_pages(&self) -> u64 {
        (self.judge_from_memory_mib << 20) / crate::launchset::PAGE
    }

    /// Is `exe` watched (named by `watch`, or `watch` empty, and not excluded)?
    pub fn watches(&self, exe: &Path) -> bool {
        (self.watch.is_empty() || self.watch.iter().any(|w| w == exe))
            && !self.exclude.iter().any(|x| x == exe)
    }

    /// The event source chosen.
    pub fn source(&self) -> Result<outrider_live::source::SourceChoice, String> {
        self.event_source.parse()
    }

    /// The history store's file.
    pub fn store_path(&self) -> PathBuf {
        self.state_dir.join("history.db")
    }
}

/// Does `spec` build a policy (outrider_core's registry) that can run live?
fn check_policy(spec: &str) -> Result<(), String> {
    let p = outrider_core::build_policy(spec).map_err(|e| match e {
        outrider_core::PolicyError::Help(_) => {
            format!("\"{spec}\" asks for help; expected a policy spec such as \"auto\"")
        }
        e => e.to_string(),
    })?;
    outrider_live::controller::check_live(p.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<Config, String> {
        Config::parse(t, Path::new("/etc/d.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn an_empty_file_is_the_defaults() {
        assert_eq!(parse("").unwrap(), Config::default());
    }

    #[test]
    fn the_example_file_parses() {
        let text = include_str!("../../../dist/daemon.toml");
        let c = parse(text).unwrap();
        assert_eq!(c, Config::default(), "the example shows the defaults");
    }

    #[test]
    fn errors_name_the_file_the_key_and_what_was_expected() {
        let e = parse("launch_cap_mib = \"big\"").unwrap_err();
        assert!(
            e.starts_with("/etc/d.toml:") && e.contains("launch_cap_mib"),
            "{e}"
        );
        let e = parse("lunch_window_s = 3").unwrap_err();
        assert!(
            e.contains("lunch_window_s") && e.contains("launch_window_s"),
            "{e}"
        );
        let e = parse("launch_window_s = 0").unwrap_err();
        assert_eq!(
            e,
            "/etc/d.toml: key `launch_window_s`: expected seconds, more than 0 and at most 3600"
        );
        let e = parse("launch_files_max = 0").unwrap_err();
        assert_eq!(
            e,
            "/etc/d.toml: key `launch_files_max`: expected a number of files from 1 to 1048576"
        );
        let e = parse("judge_from_memory_mib = 0").unwrap_err();
        assert_eq!(
            e,
            "/etc/d.toml: key `judge_from_memory_mib`: expected a number of MiB from 1 to 1048576"
        );
        assert_eq!(
            parse("judge_from_memory_mib = 64").unwrap().judge_pages(),
            16384
        );
        let e = parse("cpu_busy_pct = 101").unwrap_err();
        assert_eq!(
            e,
            "/etc/d.toml: key `cpu_busy_pct`: expected a percentage of the time, from 0 to 100"
        );
        let e = parse("watch = [\"python3\"]").unwrap_err();
        assert!(e.contains("`watch`") && e.contains("absolute"), "{e}");
    }

    /// A followed program can run any policy `outrider run` can (e.g.
    /// `auto+diskseen`, to share DiskSeen's block table); a spec the
    /// registry refuses, or one that cannot run live, is a clear error.
    #[test]
    fn follow_policy_is_a_policy_spec_checked_at_load() {
        assert_eq!(parse("").unwrap().follow_policy, "auto");
        let c = parse("follow_policy = \"auto+diskseen:t=512\"").unwrap();
        assert_eq!(c.follow_policy, "auto+diskseen:t=512");
        let e = parse("follow_policy = \"autoo\"").unwrap_err();
        assert!(
            e.starts_with("/etc/d.toml: key `follow_policy`:") && e.contains("autoo"),
            "{e}"
        );
        let e = parse("follow_policy = \"diskseen:k=x\"").unwrap_err();
        assert!(e.contains("`follow_policy`") && e.contains('k'), "{e}");
        let e = parse("follow_policy = \"directed\"").unwrap_err();
        assert!(e.contains("`follow_policy`") && e.contains("oracle"), "{e}");
        let e = parse("follow_policy = \"auto:help\"").unwrap_err();
        assert!(e.contains("`follow_policy`") && e.contains("help"), "{e}");
        let e = parse("follow_policy = 3").unwrap_err();
        assert!(e.contains("follow_policy"), "{e}");
    }

    #[test]
    fn watch_and_exclude_select_executables() {
        let c =
            parse("watch = [\"/usr/bin/a\", \"/usr/bin/b\"]\nexclude = [\"/usr/bin/b\"]").unwrap();
        assert!(c.watches(Path::new("/usr/bin/a")));
        assert!(!c.watches(Path::new("/usr/bin/b")));
        assert!(!c.watches(Path::new("/usr/bin/c")));
        assert!(parse("").unwrap().watches(Path::new("/usr/bin/c")));
    }
}

//! outrider-daemon: `outrider daemon`, always on, machine-wide app-launch
//! and boot prefetching.
//!
//! The one design decision a reader must know: **one event source for the
//! whole machine.** The daemon loads one set of eBPF programs on the
//! tracepoints the live runtime decodes (the filemap events, process
//! forks and exits) plus `sched_process_exec`
//! ([`outrider_live::ebpf::Scope::Execs`]): every exec is reported at once
//! (the daemon is woken for it, so a launch's replay starts within a
//! scheduling delay rather than a polling period), the exec'd process and
//! the tasks it forks are followed in the kernel, and the daemon stops
//! following them when the exec is not a launch ([`config::Config::watch`])
//! or the launch's window ended. A program the daemon is not recording
//! costs one hash lookup per event in the kernel and nothing in the
//! daemon; a launch's tree sends each page it reads about once, however
//! often it reads it (`outrider_live::ebpf`'s table of pages sent: a
//! shell loop running a quiet `true` 100 times sent 3 993 records, now
//! 139, `crates/live/tests/ebpf_real.rs`). Where eBPF is unavailable (or `event_source = "tracefs"`), one
//! private tracefs instance records every task and the daemon drops what
//! it does not follow. The daemon's own threads (its replays, its store)
//! are in no tree and are left out of the boot set.
//!
//! # The launch set
//!
//! * **What it holds**: the page ranges (file, first page, pages) the
//!   process tree of one launch read in its first
//!   [`config::Config::launch_window_s`] seconds (default 5 s) — reads
//!   and page faults, cache hits included, so shared libraries, mapped
//!   files and data files alike, each page once, in first-touch order,
//!   the reads of the launches its tree spawned included (`gcc`'s set
//!   holds what `cc1`, `as` and `ld` read, so its replay asks for them at
//!   `gcc`'s exec; FAST and IORap likewise trace a start with the
//!   processes it spawns) —
//!   plus each file's identity (dev, inode, `name_to_handle_at` handle,
//!   path, size, mtime). It is an [`outrider_store::AppHistory`] saved
//!   under `exe:APP` — the executable and the shape of its command line
//!   ([`launchset::app_name`], [`config::Config::launch_key_args`]:
//!   `/usr/bin/python3.11 [python3 -c pass]`) — in the one history store of the daemon
//!   (`<state_dir>/history.db`). This follows the Windows Prefetcher
//!   (the first 10 s of a launch, traced per executable, replayed at the
//!   next launch of the same executable) and Android's IORap (the file
//!   reads of an app's start-up, compiled into a per-app set capped at
//!   100 MB) — both record the page-cache misses and mapped pages of the
//!   start, the set a cold start must read; FAST (FAST'11) likewise
//!   replays the blocks one launch read, with no kernel change.
//! * **How it is aged**: the set of the most recent launch replaces the
//!   previous one (as the Windows Prefetcher rewrites a `.pf` file after
//!   each launch). A page the program stopped reading therefore leaves
//!   the set after one launch; a file that changed (size, mtime, inode)
//!   is dropped at replay ([`outrider_live::history::restore`]). Each
//!   file carries a streak, the launches in a row that read it, and once
//!   two launches are behind a set only files read by two in a row are
//!   replayed ([`streaks`]): the file `cat <file>` was given last time
//!   is not replayed for a `cat` given another. One launch tells the
//!   streaks nothing, so each set also keeps the paths its launch was
//!   given on its command line ([`roots`]): a launch given paths apart
//!   from those replays none of the set's files under them (`grep -r`
//!   over another tree). The store
//!   keeps at most [`config::Config::history_max_apps`] sets; beyond it the
//!   least recently saved (launched) applications are forgotten.
//! * **How the cap is chosen**: 256 MiB per launch by default
//!   ([`config::Config::launch_cap_mib`]), the memory budget of one replay
//!   ([`config::Config::memory_budget_mib`]), which bounds it anyway.
//!   IORap caps an app at 100 MB, and this cap was 64 MiB; but a cold
//!   `rustc -O` of a one-line program reads 104 MiB (26 700 pages) in its
//!   first seconds, nearly all of it code and data of its own shared
//!   library, and with the set cut at 64 MiB its second launch took 10-14%
//!   of the cold-to-hot headroom; at 256 MiB, 55% (1.95x; medians of 5,
//!   alternated, `bench/daemon/launch.sh`). The set holds pages the launch
//!   touched, not the kernel's readahead around them, nor the pages a
//!   read asked for past the end of its file. It also holds at most
//!   [`config::Config::launch_files_max`] files (32 768; the key's
//!   documentation says what each bound measured): the daemon's work
//!   goes by files (each opened and stamped when recorded, after its
//!   program exited where it can be opened by inode then, named when
//!   saved, verified, mapped and opened again when replayed, and the
//!   whole set handled at each launch). `rg`'s set of 31 479 files whole (a bound
//!   of 32 768) took its day 2 in the day in miniature from 0.86-0.89 of
//!   its day-1 time to 0.48-0.57, but cost the daemon 78 ms of CPU at each
//!   of its launches from memory (19 ms at 8 192) and 84 MiB of memory
//!   (27 MiB); `rg` over the tree in memory then ran at 0.92x of its
//!   speed with no daemon. A set that reaches
//!   either cap records nothing more, and its process tree is no longer
//!   followed in the kernel (`rg` over a source tree went on sending ten
//!   times its set's events, and resolving their files was most of the
//!   daemon's CPU over the day in miniature).
//!
//! At the next exec of the application the set is replayed on a thread of
//! its own ([`launchset::replay`]), until the launching process exits (the
//! rest could only compete with the programs after it): files verified unchanged, the set taken
//! in first-touch order one reorder buffer at a time (1 MiB, doubling to
//! 16 MiB; libprefetch §3.5, as `auto` replays), each buffer's ranges
//! merged and sorted by their physical address (FIEMAP; FAST and the
//! Windows Prefetcher fetch in disk order) and asked for with
//! `POSIX_FADV_WILLNEED`, before the program asks, with at most 16 MiB
//! asked for and not yet arrived (so the program's own reads never queue
//! behind more, [`launchset::replay`]). One sweep of the whole
//! set in disk order put the pages a launch needs first behind the rest:
//! with 256 MiB sets `g++ -O2` of a 3-line program was 0.90x of stock
//! (slower in 3 of 5 launches); in reorder buffers 1.06x (faster in all
//! 5), `rustc -O` 1.93x -> 2.02x, `gcc -O2` 1.13x -> 1.22x (medians of 5,
//! `bench/daemon/launch.sh`, two runs).
//!
//! Beside the set, each launch records the directories its process tree
//! opened on the root file system (one fanotify watch,
//! [`config::Config::metadata_walk`]), saved with the set; at the next
//! launch, threads of their own list them and look the set's files up in
//! them while the replay runs, until the launcher exits (the metadata
//! walk of `outrider run`, [`outrider_live::metawalk`]). A tree walker
//! waits on directory blocks and inodes, which no set of file pages
//! holds: `find -name` over the suite's kernel tree went from 1.00x of
//! stock to 2.0-2.4x with its 5 103 directories walked, `git status`
//! from 1.31x to 1.34-1.72x (cold, alternated, 5 each, `/tmp` A/B).
//!
//! # The boot set
//!
//! With `boot_prefetch = true` the daemon records every read on the
//! machine (its own excepted) in its first
//! [`config::Config::boot_window_s`] seconds, saves it under
//! [`store::BOOT_KEY`] and replays it, in physical order, at its next
//! start (ureadahead's scheme). A changed file is dropped at replay; after
//! a package upgrade (dpkg's, rpm's or pacman's database changed) the
//! whole set is discarded. `outrider daemon --replay-boot` replays it now.
//!
//! # When a launch is not recorded
//!
//! * **It reads from memory.** A launch with no set of its own whose
//!   first 64 MiB read (`judge_from_memory_mib`) came from the cache (at
//!   most one page in 32 missed), or whose replay found its set in
//!   memory (below), is no longer followed and its recording is
//!   dropped: recording costs the program the daemon's work on the cores
//!   it runs on (`rg` over a source tree in memory took 0.71x of its time
//!   recorded), and what a launch from memory reads is no set to replay. Its set, if it had
//!   one, stays as it was; its next cold launch is recorded.
//!
//! # When a replay is not made
//!
//! * **Its set is in memory.** A replay whose first reorder buffer came
//!   from memory (at most one page in 8 read from storage), whose
//!   launch's own first 1 MiB did too (one page in 32 missed at most),
//!   and beside which no replay read from storage for 0.5 s, reads up to
//!   8 pages of each of 16 accesses spread over the rest without waiting
//!   (`RWF_NOWAIT`) and, when they are there, asks for nothing more and
//!   ends its metadata walk ([`launchset::RESIDENT_PROBES`] says what
//!   each guard prevented). A walk is not stopped by what it finds
//!   itself: stopped after 32 directories that read nothing from
//!   storage, it stopped `find`'s walk when `find` had listed them first.
//! * **Another application's set, to a launch reading from memory.** A
//!   launch with no set of its own that reads files of another's in
//!   its order ([`shared`]) has that set replayed only once its reads
//!   are seen to come from storage (at least 64 of its pages missed,
//!   and more than one in 32 of those it read): loading, verifying and
//!   probing a set of 8 192 files
//!   cost the daemon 2.5 ms of CPU at each launch of an `rg` over a
//!   tree in memory.
//! * **Memory pressure** (PSI, [`launchset::Backoff`]): no replay starts
//!   while tasks waited on memory more than
//!   [`config::Config::pressure_max_pct`] of the last 10 s, and a running
//!   one stops at once when they waited that share of its own time.
//! * **Replays that did not pay** (the benefit gate of `outrider run`,
//!   `outrider_driver::benefit`, saved with each launch set): at the end
//!   of a launch's window, the pages of the replayed set the launch read
//!   count as used and the rest as wasted (for a launch that filled its
//!   own set, which may read them past its cap, as unknown). A harmed verdict (the waste
//!   cost more than the used pages saved, and more than 4 MiB) steps
//!   the level down — a quarter of the budget, then no
//!   replay but every 4th launch, which probes; a paid replay restores
//!   the full budget. macOS BootCache and the Windows Prefetcher likewise
//!   drop a set that measured no benefit. `outrider status` shows each
//!   application's gate and last verdict.
//!
//! # Who a replay acts for
//!
//! A launch set is shared by every user who runs the executable, so it
//! may hold another user's files (`vim notes.txt`). A launch by a user
//! other than root is replayed with that process's own file-system
//! identity (`/proc/PID/status`: fs uid, fs gid, groups), each file
//! checked by a thread holding it ([`outrider_sys::access`]); what that
//! user cannot open is dropped.
//!
//! # Clients
//!
//! `outrider run` by a user who is not root is served through the
//! daemon's socket by a helper process per run, which traces the
//! program the client starts and prefetches with the client's rights
//! ([`clients`]).
//!
//! # Saving
//!
//! A launch set is saved when its window ends, batched at most
//! [`config::Config::save_interval_s`] later, one transaction each: a
//! `kill -9` loses the launches in their window and those not yet saved —
//! at most `launch_window_s + save_interval_s` seconds of launches.
//! SIGTERM (systemd's stop), SIGINT and SIGHUP save everything first.
//!
//! # Status
//!
//! `<state_dir>/status.json` ([`daemon::Status`]) is rewritten every second
//! and after every change: per launch, whether a set was known and
//! replayed, the pages its tree read and the pages it brought into the
//! cache itself (its misses).
#![deny(missing_docs)]

pub mod clients;
pub mod config;
pub mod daemon;
pub mod helper;
pub mod launchset;
pub mod query;
pub mod roots;
pub mod sets;
pub mod shared;
pub mod store;
pub mod streaks;
pub mod successors;

pub use config::{Config, ConfigError, DEFAULT_CONFIG};
pub use daemon::{replay_boot, Daemon};

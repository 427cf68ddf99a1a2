//! outrider-daemon: `outrider daemon`, always on, machine-wide app-launch
//! and boot prefetching.
//!
//! The one design decision a reader must know: **one event source for the
//! whole machine.** The daemon opens one private tracefs instance without
//! a pid filter (the filemap events the live runtime decodes, process
//! forks, and `sched_process_exec`); a launch is an exec of a watched
//! executable ([`config::Config::watch`]), and its process tree is followed
//! through the fork events in user space. The daemon's own threads (its
//! replays, its store) are in no tree and are left out of the boot set.
//!
//! # The launch set
//!
//! * **What it holds**: the page ranges (file, first page, pages) the
//!   process tree of one launch read in its first
//!   [`config::Config::launch_window_s`] seconds (default 5 s) — reads
//!   and page faults, cache hits included, so shared libraries, mapped
//!   files and data files alike, each page once, in first-touch order —
//!   plus each file's identity (dev, inode, `name_to_handle_at` handle,
//!   path, size, mtime). It is an [`outrider_store::AppHistory`] saved
//!   under `exe:PATH` in the one history store of the daemon
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
//!   is dropped at replay ([`outrider_live::history::restore`]). The store
//!   keeps at most [`config::Config::history_max_apps`] sets; beyond it the
//!   least recently saved (launched) applications are forgotten.
//! * **How the cap is chosen**: 64 MiB per launch by default
//!   ([`config::Config::launch_cap_mib`]), below IORap's 100 MB: a cold
//!   start that reads more is dominated by its own data, not by its
//!   launch; a replay is further bounded by the memory budget
//!   ([`config::Config::memory_budget_mib`]).
//!
//! At the next exec of the executable the set is replayed on a thread of
//! its own ([`launchset::replay`]): files verified unchanged, each file's
//! ranges merged and sorted by their physical address (FIEMAP), each asked
//! for with `POSIX_FADV_WILLNEED` (FAST and the Windows Prefetcher both
//! fetch in disk order), before the program asks.
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

pub mod config;
pub mod daemon;
pub mod launchset;
pub mod query;
pub mod store;

pub use config::{Config, ConfigError, DEFAULT_CONFIG};
pub use daemon::{replay_boot, Daemon};

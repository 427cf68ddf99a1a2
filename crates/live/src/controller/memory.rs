//! Memory safety of the controller: following the
//! program into its memory cgroup, recharging what was prefetched before
//! the move, and writing off prefetched pages the kernel evicted before
//! use.

use super::*;

/// For this long after the start (25 ms) the policy is told a budget of at
/// most [`SETTLE_BUDGET_BYTES`]: a wrapper that moves the program into a
/// memory cgroup (cgexec, a shell writing `cgroup.procs`, `systemd-run
/// --scope`) does so in its first milliseconds, and what a history replay
/// fetched before that is charged outside the program's limit and has to
/// be dropped at the join (SQLite in the bench's 128 MiB cgroup: ~120 MiB
/// read, then dropped, with the program's first reads queued behind it).
pub(super) const CGROUP_SETTLE_NS: u64 = 25_000_000;
/// The budget while the program's cgroup settles (8 MiB: `auto` then
/// replays at most 4 MiB ahead).
pub(super) const SETTLE_BUDGET_BYTES: u64 = 8 << 20;

impl Live {
    /// Follow the memory cgroup of `pid`: when it differs from the one
    /// last seen (and, on the first look, from ours), move outrider into it
    /// and cap the budget at `cgroup_fraction` of the room it leaves to the
    /// page cache.
    /// Returns whether outrider moved into another cgroup.
    pub(super) fn follow_cgroup(&mut self, pid: u32) -> bool {
        let Some(t) = outrider_sys::cgroup_memory(Some(pid)).ok().flatten() else {
            return false;
        };
        // Not into the root: it has no limit to respect, and an exiting
        // task is moved there before it is a zombie (cgroup_exit runs
        // before exit_notify), so a program that just ended looked like
        // one that moved, and joining the root cost 18 ms (measured,
        // `run -- true` under strace) while the program's exit waited.
        if t.is_root {
            return false;
        }
        let mut cur = self.cgroup_target.path.lock().expect("not poisoned");
        let known = cur.as_ref().map(|(_, d)| d.clone());
        if known.as_ref() == Some(&t.dir) {
            return false;
        }
        if known.is_none() {
            // First look: nothing to do while the program shares our cgroup.
            let ours = outrider_sys::cgroup_memory(None).ok().flatten();
            if ours.is_some_and(|o| o.dir == t.dir) {
                *cur = Some((t.version, t.dir));
                return false;
            }
        }
        if let Some(room) = t.cache_room_bytes() {
            let cap = (room as f64 * self.opts.cgroup_fraction) as u64;
            self.opts.budget_bytes = self.opts.budget_bytes.min(cap.max(BLOCK_SIZE * 64));
        }
        let procs = t.dir.join("cgroup.procs");
        let joined = std::fs::write(&procs, std::process::id().to_string()).is_ok();
        if joined {
            self.cgroup_target.joins.fetch_add(1, Ordering::Relaxed);
        }
        *cur = Some((t.version, t.dir));
        joined
    }

    /// Outrider just moved into the program's cgroup: what it prefetched
    /// before was charged to its old cgroup, outside the program's limit
    /// (the kernel charges a page cache page once, when it is added, and
    /// a later hit by the program does not move the charge). Drop what is
    /// still waiting or unused — DONTNEED drops only clean, unmapped
    /// cache pages, never data — once now and once more after
    /// [`RECHARGE_SETTLE_NS`]; then the policy hears the new budget and
    /// asks again for what the program has not read yet (`auto` replays
    /// from the program's position), fetched under the program's cgroup.
    pub(super) fn begin_recharge(&mut self, now_rel_ns: u64) {
        for (id, o, len, tracker) in std::mem::take(&mut self.backlog) {
            for q in o / BLOCK_SIZE..(o + len) / BLOCK_SIZE {
                if self.unused.remove(&(id, q)).is_some() {
                    self.stats.prefetched_pages -= 1;
                }
            }
            if let Some(t) = tracker {
                chunk_done(&t, &self.done);
            }
        }
        // The calls in flight add their pages while they run.
        let _ = self.pool.wait();
        self.apply_worker_skips();
        let ranges = page_ranges(self.unused.keys().copied().collect());
        let n = self.unused.len() as u64;
        self.unused.clear();
        self.stats.recharged_pages += n;
        self.stats.wasted_pages += n;
        self.drop_ranges(&ranges);
        self.recharge = Some((ranges, now_rel_ns + RECHARGE_SETTLE_NS));
    }

    /// DONTNEED each (file, first page, pages) range.
    pub(super) fn drop_ranges(&mut self, ranges: &[PageRange]) {
        for &(id, page, n) in ranges {
            if let Some(f) = self.files.open_known(id) {
                let _ = outrider_sys::advise(
                    f.fd.as_fd(),
                    page * BLOCK_SIZE,
                    n * BLOCK_SIZE,
                    outrider_sys::Advice::DontNeed,
                );
            }
        }
    }

    /// At the start: tell the policy the budget, at most
    /// [`SETTLE_BUDGET_BYTES`] until [`CGROUP_SETTLE_NS`] has passed.
    pub(super) fn begin_settling(&mut self) {
        self.settling = self.opts.budget_bytes > SETTLE_BUDGET_BYTES;
        self.tell_budget(self.opts.budget_bytes.min(SETTLE_BUDGET_BYTES), false);
    }

    /// Once [`CGROUP_SETTLE_NS`] has passed: the whole budget.
    pub(super) fn end_settling(&mut self, now_rel_ns: u64) {
        if self.settling && now_rel_ns >= CGROUP_SETTLE_NS {
            self.settling = false;
            self.tell_budget(self.opts.budget_bytes, true);
        }
    }

    /// The second drop of a recharge, once due; then the policy hears the
    /// budget.
    pub(super) fn finish_recharge(&mut self, now_rel_ns: u64) {
        let Some((_, due)) = &self.recharge else {
            return;
        };
        if now_rel_ns < *due {
            return;
        }
        let (ranges, _) = self.recharge.take().expect("checked");
        let _ = self.pool.wait();
        self.drop_ranges(&ranges);
        self.settling = false;
        self.tell_budget(self.opts.budget_bytes, true);
    }

    /// The program may move itself to another cgroup (cgexec, systemd-run
    /// --scope): look again when the last look is `interval_ns` old, and
    /// follow it when `/proc/PID/cgroup` changed.
    pub(super) fn recheck_cgroup(&mut self, now_rel_ns: u64, interval_ns: u64) {
        if self.root_pid == 0 || now_rel_ns < self.last_cgroup_check_ns.saturating_add(interval_ns)
        {
            return;
        }
        self.last_cgroup_check_ns = now_rel_ns;
        let Ok(text) = std::fs::read_to_string(format!("/proc/{}/cgroup", self.root_pid)) else {
            return;
        };
        // An exiting task is moved to the root cgroups (cgroup_exit): a
        // zombie's change is not a move to follow.
        if text != self.last_proc_cgroup && !exited(self.root_pid) {
            self.last_proc_cgroup = text;
            if self.follow_cgroup(self.root_pid) {
                if self.stats.prefetched_pages > 0 {
                    self.begin_recharge(now_rel_ns);
                } else {
                    self.settling = false;
                    self.tell_budget(self.opts.budget_bytes, true);
                }
            }
        }
    }

    /// When unused pages hold more than half the budget, look which of
    /// them the kernel already evicted (cachestat; a memory cgroup under
    /// pressure reclaims them before the program comes): they are waste,
    /// and left in the unused set they would hold the budget until their
    /// TTL and every further request would be dropped.
    pub(super) fn sweep_evicted(&mut self) -> u64 {
        let budget_pages = self.opts.budget_bytes / BLOCK_SIZE;
        if (self.unused.len() as u64) * 2 <= budget_pages {
            return 0;
        }
        let ranges = page_ranges(
            self.unused
                .iter()
                .filter(|(_, t)| **t & SUBMITTED != 0)
                .map(|(k, _)| *k)
                .collect(),
        );
        let mut gone: Vec<PageRange> = Vec::new();
        for (id, first, n) in ranges {
            let Some(f) = self.files.get(id) else {
                continue;
            };
            let fd = Arc::clone(&f.fd);
            let cached = |o: u64, len: u64| {
                outrider_sys::cachestat(fd.as_fd(), o * BLOCK_SIZE, len * BLOCK_SIZE)
                    .map(|cs| cs.cache)
                    .ok()
            };
            match cached(first, n) {
                Some(0) => gone.push((id, first, n)),
                Some(c) if c < n && n <= SWEEP_PAGE_BY_PAGE => {
                    for q in first..first + n {
                        if cached(q, 1) == Some(0) {
                            gone.push((id, q, 1));
                        }
                    }
                }
                _ => {}
            }
        }
        let mut swept = 0;
        for (id, first, n) in gone {
            for q in first..first + n {
                if self.unused.remove(&(id, q)).is_some() {
                    self.stats.wasted_pages += 1;
                    self.stats.evicted_unused_pages += 1;
                    swept += 1;
                }
            }
        }
        swept
    }
}

/// Has `pid` exited or begun to (a zombie, gone, or `PF_EXITING` set)?
/// From `/proc/PID/stat`'s state and flags. An exiting task leaves its
/// cgroups (cgroup_exit) before it becomes a zombie.
fn exited(pid: u32) -> bool {
    const PF_EXITING: u64 = 0x4;
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return true;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first().and_then(|s| s.chars().next());
    let flags: u64 = fields.get(6).and_then(|f| f.parse().ok()).unwrap_or(0);
    matches!(state, Some('Z' | 'X') | None) || flags & PF_EXITING != 0
}

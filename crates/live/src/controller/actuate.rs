//! Actuation, the live [`Kernel::fetch`]: the requests the driver admitted
//! become page ranges of files (block requests through the extent maps),
//! are ordered by physical address, screened, taken from the memory
//! budget, wait in the bounded backlog, and go to the I/O workers in jobs
//! of a few chunks; what the workers submitted or skipped comes back
//! here, and finished windows go back to the policy through the driver's
//! notes.

use super::*;
use outrider_driver::{Admitted, Budget, Notes};

impl Live {
    /// Flag the pages of chunks the workers submitted.
    pub(super) fn apply_submitted(&mut self) {
        let done = std::mem::take(&mut *self.submitted.lock().expect("not poisoned"));
        for (id, o, len) in done {
            for q in o / BLOCK_SIZE..(o + len) / BLOCK_SIZE {
                if let Some(t) = self.unused.get_mut(&(id, q)) {
                    *t |= SUBMITTED;
                }
            }
        }
    }

    /// Chunks the workers found resident or could not open were not
    /// prefetched after all.
    pub(super) fn apply_worker_skips(&mut self) {
        let skips = std::mem::take(&mut *self.worker_skips.lock().expect("not poisoned"));
        for (id, o, len, resident) in skips {
            let mut n = 0;
            for q in o / BLOCK_SIZE..(o + len) / BLOCK_SIZE {
                if self.unused.remove(&(id, q)).is_some() {
                    n += 1;
                }
            }
            self.stats.prefetched_pages -= n;
            if resident {
                self.stats.skipped_cached_pages += n;
            } else {
                self.stats.untranslated_requests += 1;
            }
        }
    }

    /// Note for the policy which block prefetches finished submitting
    /// (`PrefetchDone`: flashy paces its chunks by it, DiskSeen clears its
    /// busy marks).
    pub(super) fn collect_done(&mut self, notes: &mut Notes, now_rel_ns: u64) {
        let done = std::mem::take(&mut *self.done.lock().expect("not poisoned"));
        for (window, dev, lbn, blocks, issue_ns) in done {
            note_done(notes, (window, dev, lbn, blocks, issue_ns), now_rel_ns);
        }
    }

    /// Translate a request to (file, first page, pages).
    pub(super) fn translate(&mut self, r: &PrefetchRequest) -> Option<(FileId, u64, u64)> {
        match r.target {
            Target::File { file, page } => Some((file, page, u64::from(r.blocks))),
            Target::Block { dev, lbn } => {
                let (id, page, room) = self.file_of_block(dev, lbn)?;
                Some((id, page, u64::from(r.blocks).min(room)))
            }
        }
    }

    pub(super) fn actuate(
        &mut self,
        admitted: &[Admitted],
        budget: &mut Budget,
        now_rel_ns: u64,
        notes: &mut Notes,
    ) {
        if admitted.is_empty() || self.disabled.is_some() {
            return;
        }
        if self.recharge.is_some() {
            // Dropped: the policy asks again once the recharge is over.
            for a in admitted {
                let r = &a.req;
                self.stats.dropped_budget_pages += u64::from(r.blocks);
                if let Target::Block { dev, lbn } = r.target {
                    note_done(
                        notes,
                        (r.window, dev, lbn, r.blocks, now_rel_ns),
                        now_rel_ns,
                    );
                }
            }
            return;
        }
        let reqs: Vec<PrefetchRequest> = admitted.iter().map(|a| a.req).collect();
        // Translate, then order by physical address within the batch.
        let mut batch: Vec<(u64, FileId, u64, u64, usize)> = Vec::with_capacity(reqs.len());
        for (ri, r) in reqs.iter().enumerate() {
            match self.translate(r) {
                Some((id, page, n)) if self.files.is_known(id) => {
                    // Physical position: the extent map if known without
                    // opening the file, else computed for an open file.
                    let ex = match self.files.known_extents(id) {
                        Some(ex) => Some(ex),
                        None => self.files.extents(id),
                    };
                    let phys = ex
                        .and_then(|ex| physical_of(&ex, page * BLOCK_SIZE))
                        .unwrap_or(u64::MAX);
                    batch.push((phys, id, page, n, ri));
                }
                _ => self.stats.untranslated_requests += 1,
            }
        }
        batch.sort_unstable_by_key(|b| (b.0, b.1, b.2));
        if !batch.is_empty() {
            // Charge this batch to the program's cgroup.
            // In the program's first second (when wrappers move it into
            // its cgroup) before every batch, so little is fetched in the
            // wrong cgroup and dropped again at the join; then before the
            // first fetch, and every CGROUP_RECHECK_NS.
            let interval = if now_rel_ns < EARLY_CGROUP_NS {
                0
            } else if self.stats.prefetched_pages == 0 {
                FIRST_FETCH_CGROUP_NS
            } else {
                CGROUP_RECHECK_NS
            };
            self.recheck_cgroup(now_rel_ns, interval);
        }
        // Pages submitted per request (for the device stream and dones).
        let mut sent = vec![0u64; reqs.len()];
        for (_, id, page, n, ri) in batch {
            // An open file is checked here; one known only by its handle
            // is opened, checked (cachestat) and read by an I/O worker.
            let (size, fd) = match self.files.get(id) {
                Some(f) => (f.size, Some(Arc::clone(&f.fd))),
                None => match self.files.info(id) {
                    Some(i) if i.handle.is_some() => (i.size, None),
                    _ => match self.files.open_known(id) {
                        Some(f) => (f.size, Some(Arc::clone(&f.fd))),
                        None => continue,
                    },
                },
            };
            let size_pages = size.div_ceil(BLOCK_SIZE);
            let end = (page + n).min(size_pages);
            if page >= end {
                continue;
            }
            // Pages not yet prefetched, as one covering range.
            let mut first = None;
            let mut last = 0;
            let mut fresh = 0u64;
            for q in page..end {
                if !self.unused.contains_key(&(id, q)) {
                    first.get_or_insert(q);
                    last = q;
                    fresh += 1;
                }
            }
            self.stats.skipped_cached_pages += (end - page) - fresh;
            let Some(first) = first else { continue };
            let len_pages = last + 1 - first;
            if let (true, Some(fd)) = (self.opts.skip_cached, &fd) {
                if let Ok(cs) =
                    outrider_sys::cachestat(fd.as_fd(), first * BLOCK_SIZE, len_pages * BLOCK_SIZE)
                {
                    if cs.cache >= len_pages {
                        self.stats.skipped_cached_pages += len_pages;
                        continue;
                    }
                }
            }
            // Unused prefetched pages stay within the budget (DESIGN.md
            // principle 3; the driver checks it).
            if !budget.take(len_pages) {
                continue;
            }
            let cap = if self.opts.chunk_bytes > 0 {
                self.opts.chunk_bytes
            } else {
                // Looked up once per device (two sysfs reads).
                let dev = self.files.key_of(id).map_or(0, |k| k.0);
                *self.ra_caps.entry(dev).or_insert_with(|| {
                    outrider_sys::ra_cap_for_dev(libc::major(dev), libc::minor(dev))
                })
            };
            let mut todo: Vec<(u64, u64)> = Vec::new();
            for (o, len) in outrider_sys::chunks(first * BLOCK_SIZE, len_pages * BLOCK_SIZE, cap) {
                if self.backlog.len() + todo.len() >= self.opts.backlog_bound {
                    self.stats.dropped_queue_pages += len / BLOCK_SIZE;
                    continue;
                }
                todo.push((o, len));
            }
            // A block request is done once its last chunk was submitted.
            let tracker = match reqs[ri].target {
                Target::Block { dev, lbn } if !todo.is_empty() => Some(Arc::new((
                    AtomicUsize::new(todo.len()),
                    (reqs[ri].window, dev, lbn, reqs[ri].blocks, now_rel_ns),
                ))),
                _ => None,
            };
            for (o, len) in todo {
                self.last_issue_ns = now_rel_ns;
                self.backlog.push_back((id, o, len, tracker.clone()));
                self.stats.peak_backlog_chunks = self
                    .stats
                    .peak_backlog_chunks
                    .max(self.backlog.len() as u64);
                // A page already pending (inside the covering range) is
                // read again but counted once.
                for q in o / BLOCK_SIZE..(o + len) / BLOCK_SIZE {
                    if self.unused.insert((id, q), now_rel_ns).is_none() {
                        self.stats.prefetched_pages += 1;
                    }
                }
                sent[ri] += len / BLOCK_SIZE;
            }
            self.stats.peak_unused_bytes = self
                .stats
                .peak_unused_bytes
                .max(self.unused.len() as u64 * BLOCK_SIZE);
        }
        // Block requests: our own reads on the device stream (for a policy
        // that reads it), and an immediate done for those that submitted
        // nothing (resident, over budget, queue full, throttled,
        // untranslated) so a policy pacing by completions is not stalled.
        for (r, pages) in reqs.iter().zip(&sent) {
            let Target::Block { dev, lbn } = r.target else {
                continue;
            };
            if notes.wants().device_requests {
                notes.device.push(DeviceRequest {
                    time_ns: now_rel_ns,
                    pid: 0,
                    dev,
                    lbn,
                    blocks: (*pages).min(u64::from(u32::MAX)) as u32,
                    origin: Origin::OurPrefetch,
                    window: Some(r.window),
                });
            }
            if *pages == 0 {
                note_done(
                    notes,
                    (r.window, dev, lbn, r.blocks, now_rel_ns),
                    now_rel_ns,
                );
            }
        }
        self.drain_backlog();
    }

    /// Submit queued chunks, in order, while the I/O queue has room. One
    /// job carries consecutive chunks up to [`JOB_PAGES`] pages or
    /// [`JOB_CHUNKS`] chunks, so many small ranges (a replayed history)
    /// cost one worker hand-off per group, not per range.
    pub(super) fn drain_backlog(&mut self) {
        while !self.backlog.is_empty()
            && self.jobs_in_flight.load(Ordering::Acquire) < self.opts.queue_bound
        {
            type Job = Vec<(Src, u64, u64, Option<Tracker>)>;
            let mut job: Job = Vec::new();
            let mut pages = 0;
            while let Some((_, _, len, _)) = self.backlog.front() {
                if !job.is_empty()
                    && (pages + len / BLOCK_SIZE > JOB_PAGES || job.len() >= JOB_CHUNKS)
                {
                    break;
                }
                let (id, o, len, tracker) = self.backlog.pop_front().expect("non-empty");
                let src = match self.files.get(id) {
                    Some(f) => Some(Src::Open(id, Arc::clone(&f.fd))),
                    None => match self.files.open_spec(id) {
                        Some(spec) => Some(Src::Spec(id, spec)),
                        None => self
                            .files
                            .open_known(id)
                            .map(|f| Src::Open(id, Arc::clone(&f.fd))),
                    },
                };
                match src {
                    Some(src) => {
                        job.push((src, o, len, tracker));
                        pages += len / BLOCK_SIZE;
                    }
                    None => {
                        self.stats.untranslated_requests += 1;
                        if let Some(t) = tracker {
                            chunk_done(&t, &self.done);
                        }
                    }
                }
            }
            if job.is_empty() {
                continue;
            }
            self.jobs_in_flight.fetch_add(1, Ordering::AcqRel);
            let inflight = Arc::clone(&self.jobs_in_flight);
            let done = Arc::clone(&self.done);
            let skips = Arc::clone(&self.worker_skips);
            let submitted = Arc::clone(&self.submitted);
            self.pool.submit(move || {
                let mut r = Ok(());
                // The file a worker opened for the previous chunk(s).
                let mut opened: Option<(FileId, Option<std::fs::File>)> = None;
                for (src, o, len, tracker) in job {
                    let fd = match &src {
                        Src::Open(_, fd) => Some(fd.as_fd()),
                        Src::Spec(id, spec) => {
                            if opened.as_ref().map(|x| x.0) != Some(*id) {
                                opened = Some((*id, spec.open()));
                            }
                            opened
                                .as_ref()
                                .and_then(|x| x.1.as_ref())
                                .map(|f| f.as_fd())
                        }
                    };
                    match (fd, &src) {
                        (None, Src::Spec(id, _)) => {
                            skips
                                .lock()
                                .expect("not poisoned")
                                .push((*id, o, len, false));
                        }
                        (Some(fd), Src::Spec(id, _))
                            if outrider_sys::cachestat(fd, o, len)
                                .is_ok_and(|cs| cs.cache >= len / BLOCK_SIZE) =>
                        {
                            skips
                                .lock()
                                .expect("not poisoned")
                                .push((*id, o, len, true));
                        }
                        (Some(fd), Src::Open(id, _) | Src::Spec(id, _)) => {
                            let x = outrider_sys::fetch_chunks(fd, o, len, len, Fetch::WillNeed);
                            if r.is_ok() {
                                r = x;
                            }
                            submitted.lock().expect("not poisoned").push((*id, o, len));
                        }
                        (None, Src::Open(..)) => unreachable!("an open file has a descriptor"),
                    }
                    if let Some(t) = tracker {
                        chunk_done(&t, &done);
                    }
                }
                inflight.fetch_sub(1, Ordering::AcqRel);
                r
            });
        }
    }
}

/// Note a finished block prefetch for the policy, if it listens.
fn note_done(notes: &mut Notes, (window, dev, lbn, blocks, issue_ns): PendingDone, now_ns: u64) {
    if notes.wants().prefetch_done {
        notes.done.push_back(PrefetchDone {
            window,
            dev,
            lbn,
            blocks,
            issue_ns,
            done_ns: now_ns,
        });
    }
}

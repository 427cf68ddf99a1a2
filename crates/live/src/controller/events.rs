//! From events to the policy: a read or fault of the traced tree becomes
//! an access with its outcome (hits, misses, prefetched pages used), the
//! pages a task brought in become misses or the kernel's readahead, and
//! reads that reached the device go to a policy that follows the device
//! stream (see the module documentation of the controller).

use super::*;
use crate::tracefs::folio_pages;
use outrider_core::policies::readahead::kernel::get_init_ra_size;

/// Pages of one fault-around event taken at most (the kernel maps
/// `fault_around_bytes`, 64 KiB by default, at a time).
const MAX_MAPPED_PAGES: u64 = 1024;

impl Live {
    pub(super) fn rel(&self, ts_ns: u64) -> u64 {
        ts_ns.saturating_sub(self.t0_ns)
    }

    /// Enter the extents of `id` (on device `dev`) in the block → file
    /// map, once per file.
    pub(super) fn map_extents(&mut self, id: FileId, dev: u32, ex: &[outrider_sys::Extent]) {
        if !self.mapped.insert(id) {
            return;
        }
        for x in ex {
            self.phys_map
                .insert((dev, x.physical), (id, x.logical, x.length));
        }
    }

    /// The file page at block `lbn` of device `dev`, and how many blocks
    /// of its extent follow it (from the extents of the files the program
    /// touched: every one, on the device the request names).
    pub(super) fn file_of_block(&self, dev: u32, lbn: u64) -> Option<(FileId, u64, u64)> {
        let phys = lbn * BLOCK_SIZE;
        let (&(d, start), &(id, logical, len)) = self.phys_map.range(..=(dev, phys)).next_back()?;
        if d != dev || phys >= start + len {
            return None;
        }
        let room = (start + len - phys) / BLOCK_SIZE;
        Some((id, (logical + phys - start) / BLOCK_SIZE, room.max(1)))
    }

    pub(super) fn file_id(&mut self, dev: u64, ino: u64) -> Option<FileId> {
        let id = self.files.id_of(dev, ino)?;
        if self.seen_files.insert(id) {
            self.stats.files += 1;
        }
        Some(id)
    }

    /// Deliver one demand access of `pages` pages from `index`.
    pub(super) fn access(
        &mut self,
        d: &mut LiveDriver,
        e: &LiveEvent,
        (dev, ino): (u64, u64),
        index: u64,
        pages: u64,
    ) {
        let Some(id) = self.file_id(dev, ino) else {
            return;
        };
        let positions = d.interests().positions;
        let mut known = self.known_end(id);
        if known.is_none() && (positions == Positions::Physical || !self.files.lazy_ok(dev)) {
            // Opened now: a block-level policy needs every file's extents,
            // and a file that cannot be opened by inode number later must
            // be found among the program's descriptors while it has it.
            self.files.resolve(id, e.pid);
            known = self.known_end(id);
        }
        let adds = self.adds.remove(&e.pid).unwrap_or_default();
        let pages = pages.clamp(1, u64::from(u32::MAX));
        let end = known.or_else(|| self.learn_eof(id, dev, index, pages, &adds));
        let pages = match end {
            Some(end) if end > index => pages.min(end - index),
            _ => pages,
        };
        let missed = self.misses(id, index..index + pages, adds);
        let miss = (missed.len() as u64).min(pages);
        let used = self.use_prefetched(id, index..index + pages, self.rel(e.ts_ns));
        self.stats.accesses += 1;
        self.stats.demand_pages += pages;
        self.stats.miss_pages += miss;
        let lbn = self.position(id, dev, index, positions);
        let access = self.access_of(e, Origin::Demand, (id, dev, lbn), index, pages);
        let outcome = Outcome {
            hit_blocks: (pages - miss) as u32,
            prefetched_hit_blocks: used.min(pages - miss) as u32,
            inflight_blocks: 0,
            miss_blocks: miss as u32,
        };
        // A file seen for the first time was opened above or can be
        // opened by inode number ([`FileTable::lazy_ok`]), so the policy's
        // requests for it can be acted on.
        self.tell_missed(d, id, dev, &missed);
        d.on_access(self, &access, &outcome);
        if d.interests().access_done {
            // mm_filemap_get_pages fires once the read holds its pages, so
            // the access is complete in memory: DiskSeen §3.1 records its
            // timestamps here, as the simulator does at completion.
            d.on_feedback(self, &Feedback::AccessDone(&access));
        }
    }

    /// Fault-around mapped `pages` resident pages from `index` around a
    /// fault: pages the program uses without a fault of its own. The
    /// policy hears them as an access of [`Origin::Mapped`] that hit, so a
    /// history can hold them:
    /// a history of the faults alone replays only the pages that missed,
    /// and on the next run every page the program then touches among the
    /// rest faults alone and brings in a whole mmap read-around
    /// (`read_ahead_kb`, 8 MiB on the virtio disk here). Measured on `rustc
    /// -O` of a one-line program, cold: 2 051 faults brought in 100 k pages
    /// (391 MiB) on run 1 and again on run 2, whose replay of the faulted
    /// pages (8.3 MiB) was all used and saved nothing; with the mapped
    /// pages in the history, run 2 0.58 s against stock 0.88 s (medians of
    /// 3). They are not demand: fault-around maps pages the program may
    /// never touch, and maps a page again in every process that maps it
    /// (a Python start: 3 400 windows, 160 MiB). Prefetched pages among
    /// them count as used.
    fn mapped(
        &mut self,
        d: &mut LiveDriver,
        e: &LiveEvent,
        (dev, ino): (u64, u64),
        index: u64,
        pages: u64,
    ) {
        let Some(id) = self.file_id(dev, ino) else {
            return;
        };
        for q in index..index + pages {
            if self.unused.remove(&(id, q)).is_some() {
                self.stats.used_pages += 1;
            }
        }
        let positions = d.interests().positions;
        if self.known_end(id).is_none()
            && (positions == Positions::Physical || !self.files.lazy_ok(dev))
        {
            self.files.resolve(id, e.pid);
        }
        let lbn = self.position(id, dev, index, positions);
        let access = self.access_of(e, Origin::Mapped, (id, dev, lbn), index, pages);
        let outcome = Outcome {
            hit_blocks: pages as u32,
            prefetched_hit_blocks: 0,
            inflight_blocks: 0,
            miss_blocks: 0,
        };
        d.on_access(self, &access, &outcome);
    }

    /// The next access (a read of `origin`) to `pages` pages of `id` from
    /// `index` (at block `lbn` of `dev`), by the task and at the time of `e`.
    fn access_of(
        &mut self,
        e: &LiveEvent,
        origin: Origin,
        (id, dev, lbn): (FileId, u64, u64),
        index: u64,
        pages: u64,
    ) -> Access {
        self.seq += 1;
        Access {
            seq: self.seq,
            time_ns: self.rel(e.ts_ns),
            pid: e.pid,
            dev: dev as u32,
            lbn,
            file: id,
            page: index,
            blocks: pages as u32,
            op: outrider_core::Op::Read,
            origin,
        }
    }

    /// The end of `id` in pages when its size is known: an open file's, or
    /// one known from history (or opened before and since closed: not
    /// reopened for this, opening it again for every read of a replayed
    /// history of small files cost more than the replay). A read is cut
    /// there: mm_filemap_get_pages reports the read's requested range, not
    /// clipped to the file (a 2 KiB file read with a 96 KiB buffer, grep,
    /// would count 24 demand pages). A file left unopened
    /// ([`FileTable::lazy_ok`]) has its end learned from the kernel's own
    /// readahead instead ([`Live::learn_eof`]); until then (a file cached
    /// before the run) the request is taken as asked.
    fn known_end(&mut self, id: FileId) -> Option<u64> {
        let size = match self.files.get(id) {
            Some(f) => f.size,
            None => self.files.info(id)?.size,
        };
        Some(size.div_ceil(BLOCK_SIZE))
    }

    /// The end of unopened file `id` as the kernel's readahead showed it
    /// to a read of `pages` from `index` (`adds`: what the reader brought
    /// in), or as learned before (moved on when the file grew). A read
    /// that missed at `index` has the kernel add pages from `index` up to
    /// the end of a window or of the file (`do_page_cache_ra` stops at the
    /// end; cached pages are skipped, not stopped at:
    /// `page_cache_ra_unbounded`, mm/readahead.c). With `pages` at most
    /// the device's window (`ra_pages`), the window is at least the
    /// request, and at page 0 `get_init_ra_size(pages)`. So the file ends
    /// where the pages added end when that is short of the request, or at
    /// page 0 short of the initial window. A wrong guess (a file advised
    /// `POSIX_FADV_RANDOM` or a congested cgroup reads just the request,
    /// or one page) costs nothing lasting: the rest of a read comes as
    /// further events past the guessed end, taken as asked, and pages
    /// added past it move it on.
    fn learn_eof(
        &mut self,
        id: FileId,
        dev: u64,
        index: u64,
        pages: u64,
        adds: &[(FileId, u64, u32)],
    ) -> Option<u64> {
        let mut covers = false;
        let mut end = 0;
        for &(f, p, n) in adds {
            if f == id {
                covers |= p <= index && index < p + u64::from(n);
                end = end.max(p + u64::from(n));
            }
        }
        if let Some(e) = self.eof_pages.get_mut(&id) {
            *e = (*e).max(end);
            return Some(*e);
        }
        let (major, minor) = (
            libc::major(dev as libc::dev_t),
            libc::minor(dev as libc::dev_t),
        );
        let window = *(self.ra_window)
            .entry(dev)
            .or_insert_with(|| outrider_sys::ra_window_pages(major, minor));
        let max = window.filter(|&w| covers && pages <= w)?;
        let short = end < index + pages;
        let first = index == 0 && end < get_init_ra_size(pages, max);
        (short || first).then(|| {
            self.eof_pages.insert(id, end);
            end
        })
    }

    /// [`Access::lbn`] of page `index` of `id` as `positions` asks: the
    /// physical block from the extent map (looked up for
    /// [`Positions::Physical`]: an open file's, or the one a history
    /// registered with the file, the same block in both runs as a
    /// block-level policy's history needs), the file page, or
    /// [`outrider_core::NO_LBN`].
    fn position(&mut self, id: FileId, dev: u64, index: u64, positions: Positions) -> u64 {
        let ex = match positions {
            Positions::FilePage => return index,
            Positions::WhenKnown => self.files.known_extents(id),
            Positions::Physical => self.extents_of(id),
        };
        if let Some(ex) = &ex {
            self.map_extents(id, dev as u32, ex);
        }
        match ex.and_then(|ex| physical_of(&ex, index * BLOCK_SIZE)) {
            Some(b) => b / BLOCK_SIZE,
            None if positions == Positions::WhenKnown => NO_LBN,
            None => index,
        }
    }

    /// The pages of `range` the reading task brought in itself since its
    /// last read (`adds` inside the range; beyond it: the kernel's
    /// readahead). A page of our unused set among them was read by a
    /// worker and evicted before use (waste), or still queued (late).
    fn misses(
        &mut self,
        id: FileId,
        range: std::ops::Range<u64>,
        adds: Vec<(FileId, u64, u32)>,
    ) -> Vec<u64> {
        let mut missed = Vec::new();
        for (f, p, n) in adds {
            if f != id {
                continue;
            }
            for q in p..p + u64::from(n) {
                if range.contains(&q) {
                    missed.push(q);
                } else {
                    self.stats.kernel_readahead_pages += 1;
                }
                match self.unused.remove(&(id, q)) {
                    Some(t) if t & SUBMITTED != 0 => self.stats.wasted_pages += 1,
                    Some(_) => {
                        self.stats.prefetched_pages -= 1;
                        self.stats.late_pages += 1;
                    }
                    None => {}
                }
            }
        }
        missed
    }

    /// Pages of `range` outrider prefetched: used now, with their lead
    /// time. Returns how many.
    fn use_prefetched(&mut self, id: FileId, range: std::ops::Range<u64>, now: u64) -> u64 {
        let mut used = 0u64;
        if !self.unused.is_empty() {
            for q in range {
                if let Some(t) = self.unused.remove(&(id, q)) {
                    used += 1;
                    self.stats.lead_time_sum_ns += now.saturating_sub(t & !SUBMITTED);
                }
            }
        }
        self.stats.used_pages += used;
        self.stats.served_pages += used;
        used
    }

    /// A page the program had to bring in was not resident: tell a
    /// block-level policy that keeps its own residency model (DiskSeen's
    /// block table, §3.1) that the block left memory, as the simulator
    /// does at eviction. Without it, blocks read once stay "resident" in
    /// the model forever and a second pass (DiskSeen's history, §3.4)
    /// finds nothing to prefetch.
    fn tell_missed(&mut self, d: &mut LiveDriver, id: FileId, dev: u64, missed: &[u64]) {
        if missed.is_empty() || !d.interests().evictions {
            return;
        }
        let Some(ex) = self.extents_of(id) else {
            return;
        };
        for &q in missed {
            if let Some(b) = physical_of(&ex, q * BLOCK_SIZE) {
                let e = Eviction {
                    dev: dev as u32,
                    lbn: b / BLOCK_SIZE,
                    prefetched: false,
                    used: false,
                    window: None,
                };
                d.on_feedback(self, &Feedback::Evicted(&e));
            }
        }
    }

    /// The extent map of `id`: computed for an open file, else the one
    /// known without opening it (registered from history).
    pub(super) fn extents_of(&mut self, id: FileId) -> Option<Arc<Vec<outrider_sys::Extent>>> {
        self.files
            .extents(id)
            .or_else(|| self.files.known_extents(id))
    }

    /// The policy is to hear its memory budget: at the start (`changed`
    /// false) with everything else it is told then, later when it changed
    /// (told by the controller after the current step).
    pub(super) fn tell_budget(&mut self, bytes: u64, changed: bool) {
        let changed = changed || self.pending_budget.is_some_and(|(_, c)| c);
        self.pending_budget = Some((bytes, changed));
    }

    pub(super) fn on_event(&mut self, d: &mut LiveDriver, e: &LiveEvent) {
        match e.kind {
            EventKind::GetPages {
                dev,
                ino,
                index,
                last_index,
            } => self.access(
                d,
                e,
                (dev, ino),
                index,
                last_index.saturating_sub(index) + 1,
            ),
            EventKind::Fault { dev, ino, index } => self.access(d, e, (dev, ino), index, 1),
            EventKind::AddToCache {
                dev,
                ino,
                index,
                order,
            } => {
                if let Some(id) = self.file_id(dev, ino) {
                    let list = self.adds.entry(e.pid).or_default();
                    if list.len() < MAX_PENDING_ADDS {
                        list.push((id, index, folio_pages(order)));
                    }
                }
            }
            EventKind::MapPages {
                dev,
                ino,
                index,
                last_index,
            } => {
                let pages = last_index.saturating_sub(index).min(MAX_MAPPED_PAGES - 1) + 1;
                self.mapped(d, e, (dev, ino), index, pages);
            }
            EventKind::BlockIssue {
                dev,
                sector,
                nr_sector,
                write: false,
            } if d.interests().device_requests && nr_sector > 0 => {
                self.device_read(d, e, dev, sector, nr_sector)
            }
            _ => {}
        }
    }

    /// A read the traced tree sent to the device (`block_rq_issue` in one
    /// of its tasks): flashy's second stream (§IV-A, "every I/O request
    /// that actually reaches the disk"). Demand misses and the kernel's
    /// readahead for the program both arrive here, as they reach blktrace
    /// in the paper; outrider's own reads never do: its I/O workers are
    /// not in the traced set (the kernel filters on `set_event_pid`, and
    /// `in_tree` again), so they are told apart by pid as prefetchd does
    /// (§V-A) and reported by the controller itself as
    /// [`Origin::OurPrefetch`] when it submits them. Sectors are 512 bytes
    /// from the start of the device the event names; the policy's blocks
    /// are 4 KiB blocks of the file system's device (the same here when the
    /// file system sits on the whole disk; a partition's offset is not
    /// subtracted).
    pub(super) fn device_read(
        &mut self,
        d: &mut LiveDriver,
        e: &LiveEvent,
        dev: u64,
        sector: u64,
        nr_sector: u32,
    ) {
        let first = sector / 8;
        let end = (sector + u64::from(nr_sector)).div_ceil(8);
        let blocks = (end - first).min(u64::from(u32::MAX)) as u32;
        self.stats.device_reads += 1;
        self.stats.device_read_blocks += u64::from(blocks);
        let r = DeviceRequest {
            time_ns: self.rel(e.ts_ns),
            pid: e.pid,
            dev: dev as u32,
            lbn: first,
            blocks,
            origin: Origin::Demand,
            window: None,
        };
        d.on_feedback(self, &Feedback::DeviceRequest(&r));
    }
}

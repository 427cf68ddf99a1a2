use super::memory::{CGROUP_SETTLE_NS, SETTLE_BUDGET_BYTES};
use super::*;
use outrider_core::{Interests, Policy, Sink};

/// What a recording policy saw.
#[derive(Default)]
struct Seen {
    dev: Vec<DeviceRequest>,
    info: Vec<DeviceInfo>,
    ticks: Vec<u64>,
    done: Vec<PrefetchDone>,
    cache_blocks: Vec<u64>,
    budgets: Vec<u64>,
}

/// Reads the device stream, ticks every 500 ms and asks for one block
/// prefetch per tick (no file holds it: it cannot be translated).
#[derive(Clone)]
struct Rec(Arc<Mutex<Seen>>);

impl Policy for Rec {
    fn name(&self) -> &str {
        "rec"
    }
    fn on_access(&mut self, _a: &Access, _o: &Outcome, _s: &mut Sink<'_>) {}
    fn interests(&self) -> Interests {
        Interests {
            device_requests: true,
            tick_interval_ns: Some(500_000_000),
            ..Interests::default()
        }
    }
    fn on_start(&mut self, info: &RunInfo<'_>) {
        let mut seen = self.0.lock().unwrap();
        if !info.budget_changed {
            seen.info.extend_from_slice(info.devices);
            seen.cache_blocks.push(info.cache_blocks);
        }
        seen.budgets.extend(info.memory_budget_bytes);
    }
    fn on_feedback(&mut self, f: &Feedback<'_>, sink: &mut Sink<'_>) {
        match *f {
            Feedback::DeviceRequest(r) => self.0.lock().unwrap().dev.push(*r),
            Feedback::PrefetchDone(d) => self.0.lock().unwrap().done.push(*d),
            Feedback::Tick(now_ns) => {
                self.0.lock().unwrap().ticks.push(now_ns);
                let w = sink.new_window();
                sink.prefetch(Target::Block { dev: 7, lbn: 1000 }, 16, w);
            }
            Feedback::AccessDone(_) | Feedback::Evicted(_) => {}
        }
    }
    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}

const T0: u64 = 1_000_000_000;

fn controller() -> (Controller, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let opts = ControllerOptions {
        device_max_read: vec![(7, 500_000_000)],
        cache_bytes: 512 << 20,
        ..ControllerOptions::default()
    };
    let mut c = Controller::new(Box::new(Rec(Arc::clone(&seen))), opts);
    c.on_start(42, T0);
    (c, seen)
}

fn issue(ts: u64, pid: u32, sector: u64, nr_sector: u32, write: bool) -> LiveEvent {
    LiveEvent {
        ts_ns: T0 + ts,
        pid,
        kind: EventKind::BlockIssue {
            dev: 7,
            sector,
            nr_sector,
            write,
        },
    }
}

#[test]
fn the_calibrated_throughput_is_told_at_start() {
    let (_c, seen) = controller();
    let s = seen.lock().unwrap();
    assert_eq!(
        s.info,
        vec![DeviceInfo {
            dev: Some(7),
            max_read_bytes_per_s: Some(500_000_000),
        }]
    );
}

#[test]
fn the_buffer_memory_is_told_once_at_start_in_blocks() {
    // 512 MiB = 131072 blocks of 4 KiB (DiskSeen's T: 2048).
    let (mut c, seen) = controller();
    c.on_events(&[issue(5, 42, 80, 16, false)], &[true]);
    assert_eq!(seen.lock().unwrap().cache_blocks, vec![131072]);
    // Unset, it is what the program can use: at least 64 blocks.
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut c = Controller::new(
        Box::new(Rec(Arc::clone(&seen))),
        ControllerOptions::default(),
    );
    c.on_start(std::process::id(), T0);
    let got = seen.lock().unwrap().cache_blocks.clone();
    assert_eq!(got.len(), 1);
    assert!(got[0] >= 64, "{got:?}");
}

/// A controller with `budget` bytes, started for this process.
fn started_with_budget(budget: u64) -> (Controller, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let opts = ControllerOptions {
        budget_bytes: budget,
        ..ControllerOptions::default()
    };
    let mut c = Controller::new(Box::new(Rec(Arc::clone(&seen))), opts);
    c.on_start(std::process::id(), T0);
    (c, seen)
}

#[test]
fn the_budget_is_capped_while_the_programs_cgroup_settles() {
    let (mut c, seen) = started_with_budget(1 << 30);
    assert_eq!(seen.lock().unwrap().budgets, vec![SETTLE_BUDGET_BYTES]);
    c.on_poll(T0 + CGROUP_SETTLE_NS / 2);
    assert_eq!(seen.lock().unwrap().budgets.len(), 1, "still settling");
    c.on_poll(T0 + CGROUP_SETTLE_NS);
    c.on_poll(T0 + 2 * CGROUP_SETTLE_NS);
    assert_eq!(
        seen.lock().unwrap().budgets,
        vec![SETTLE_BUDGET_BYTES, 1 << 30],
        "the whole budget once settled, told once"
    );
    // A budget under the cap is told as it is, once.
    let (mut c, seen) = started_with_budget(4 << 20);
    c.on_poll(T0 + 2 * CGROUP_SETTLE_NS);
    assert_eq!(seen.lock().unwrap().budgets, vec![4 << 20]);
}

#[test]
fn device_reads_of_the_tree_feed_the_device_stream() {
    let (mut c, seen) = controller();
    // A 16-sector read at sector 80 (blocks 10..12), a write, and a
    // read by a task outside the tree (outrider's own worker).
    let ev = [
        issue(5, 42, 80, 16, false),
        issue(6, 42, 800, 8, true),
        issue(7, 99, 160, 8, false),
        issue(8, 42, 84, 8, false),
    ];
    c.on_events(&ev, &[true, true, false, true]);
    let s = seen.lock().unwrap();
    let got: Vec<(u64, u64, u32, u32, Origin)> = s
        .dev
        .iter()
        .map(|r| (r.time_ns, r.lbn, r.blocks, r.pid, r.origin))
        .collect();
    // Sector 84 + 8 = blocks 10..12 (partial 4 KiB blocks round out).
    assert_eq!(
        got,
        vec![
            (5, 10, 2, 42, Origin::Demand),
            (8, 10, 2, 42, Origin::Demand)
        ]
    );
    assert_eq!(
        (c.k.stats.device_reads, c.k.stats.device_read_blocks),
        (2, 4)
    );
}

#[test]
fn ticks_follow_wall_clock_and_a_request_that_submits_nothing_completes() {
    let (mut c, seen) = controller();
    c.on_poll(T0 + 100_000_000);
    assert!(seen.lock().unwrap().ticks.is_empty());
    c.on_poll(T0 + 600_000_000);
    {
        let s = seen.lock().unwrap();
        assert_eq!(s.ticks, vec![600_000_000]);
        // Our own read on the device stream: nothing was submitted (no
        // file holds block 1000), so zero blocks.
        let ours: Vec<_> = s
            .dev
            .iter()
            .map(|r| (r.origin, r.lbn, r.blocks, r.window))
            .collect();
        assert_eq!(
            ours,
            vec![(Origin::OurPrefetch, 1000, 0, Some(WindowId(1)))]
        );
        assert!(s.done.is_empty());
    }
    assert_eq!(c.k.stats.untranslated_requests, 1);
    // The next poll tells the policy it is done, so a policy pacing by
    // completions (flashy `depth`) is never stalled.
    c.on_poll(T0 + 601_000_000);
    let s = seen.lock().unwrap();
    assert_eq!(s.done.len(), 1);
    assert_eq!(
        (s.done[0].window, s.done[0].lbn, s.done[0].blocks),
        (WindowId(1), 1000, 16)
    );
    assert_eq!(s.ticks, vec![600_000_000]);
}

/// A page the program brought in itself while it was in our unused
/// set is waste only if a worker had made its WILLNEED call (the
/// kernel evicted it before use); if the call was still queued, the
/// prefetch was late: neither prefetched nor waste for quality control.
#[test]
fn pages_the_program_read_first_are_late_not_waste() {
    let (mut c, _seen) = controller();
    let id = c.k.file_id(7, 1234).unwrap();
    c.k.unused.insert((id, 5), 10);
    c.k.unused.insert((id, 6), 10);
    c.k.stats.prefetched_pages = 2;
    c.k.submitted
        .lock()
        .unwrap()
        .push((id, 6 * BLOCK_SIZE, BLOCK_SIZE));
    let add = |ts, index| LiveEvent {
        ts_ns: T0 + ts,
        pid: 42,
        kind: EventKind::AddToCache {
            dev: 7,
            ino: 1234,
            index,
            order: 0,
        },
    };
    let read = LiveEvent {
        ts_ns: T0 + 30,
        pid: 42,
        kind: EventKind::GetPages {
            dev: 7,
            ino: 1234,
            index: 5,
            last_index: 6,
        },
    };
    c.on_events(&[add(20, 5), add(21, 6), read], &[true, true, true]);
    assert_eq!(c.k.stats.late_pages, 1);
    assert_eq!(c.k.stats.wasted_pages, 1);
    assert_eq!(c.k.stats.prefetched_pages, 1);
    assert_eq!(c.k.stats.miss_pages, 2);

    assert!(c.k.unused.is_empty());
}

/// With unused pages holding more than half the budget, the sweep
/// finds those the kernel evicted (here: dropped with DONTNEED) and
/// writes them off, so they stop holding the budget; resident ones
/// stay. Pages 0..8 of a file were "prefetched" (submitted), pages
/// 4..8 then evicted.
#[test]
fn evicted_unused_pages_are_swept_when_they_fill_the_budget() {
    use std::io::Write;
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let path = dir.path().join("f");
    let mut w = std::fs::File::create(&path).unwrap();
    w.write_all(&vec![1u8; 8 * 4096]).unwrap();
    w.sync_all().unwrap(); // clean pages: DONTNEED drops them
    let (mut c, _seen) = controller();
    c.k.opts.budget_bytes = 12 * BLOCK_SIZE;
    let id =
        c.k.files
            .insert_file(std::fs::File::open(&path).unwrap(), path.clone())
            .unwrap();
    let f = std::fs::File::open(&path).unwrap();
    // All evicted, then pages 0..4 read back without readahead.
    outrider_sys::advise(f.as_fd(), 0, 0, outrider_sys::Advice::DontNeed).unwrap();
    outrider_sys::advise(f.as_fd(), 0, 0, outrider_sys::Advice::Random).unwrap();
    let mut buf = vec![0u8; 4 * 4096];
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut buf, 0).unwrap();
    let cs = |o: u64, n: u64| {
        outrider_sys::cachestat(f.as_fd(), o * BLOCK_SIZE, n * BLOCK_SIZE)
            .unwrap()
            .cache
    };
    assert_eq!(
        (cs(0, 4), cs(4, 4)),
        (4, 0),
        "set-up: 0..4 resident, 4..8 not"
    );
    for q in 0..8 {
        c.k.unused.insert((id, q), 5 | SUBMITTED);
    }
    c.k.stats.prefetched_pages = 8;
    c.k.sweep_evicted();
    assert_eq!(c.k.stats.evicted_unused_pages, 4);
    assert_eq!(c.k.stats.wasted_pages, 4);
    let mut left: Vec<u64> = c.k.unused.keys().map(|k| k.1).collect();
    left.sort_unstable();
    assert_eq!(left, vec![0, 1, 2, 3]);
    // Under half the budget now: no sweep (nothing changes).
    c.k.unused.insert((id, 6), 5 | SUBMITTED);
    c.k.sweep_evicted();
    assert_eq!(c.k.stats.evicted_unused_pages, 4);
}

/// Block → file translation covers every extent of every file the
/// program touched, on the device the request names only: a block inside
/// an extent maps to its file page with the rest of the extent as room; a
/// block in a hole, past an extent's end or on another device maps to
/// nothing.
#[test]
fn blocks_translate_through_every_touched_files_extents() {
    let (mut c, _seen) = controller();
    let a = c.k.file_id(7, 100).unwrap();
    let b = c.k.file_id(7, 200).unwrap();
    let x = |logical: u64, physical: u64, length: u64| outrider_sys::Extent {
        logical,
        physical,
        length,
        flags: 0,
    };
    // a: pages 0..4 at block 1000, pages 4..6 at block 5000; b: pages 0..8
    // at block 2000.
    c.k.map_extents(
        a,
        7,
        &[
            x(0, 1000 * BLOCK_SIZE, 4 * BLOCK_SIZE),
            x(4 * BLOCK_SIZE, 5000 * BLOCK_SIZE, 2 * BLOCK_SIZE),
        ],
    );
    c.k.map_extents(b, 7, &[x(0, 2000 * BLOCK_SIZE, 8 * BLOCK_SIZE)]);
    assert_eq!(c.k.file_of_block(7, 1000), Some((a, 0, 4)));
    assert_eq!(c.k.file_of_block(7, 1003), Some((a, 3, 1)));
    assert_eq!(c.k.file_of_block(7, 5001), Some((a, 5, 1)));
    assert_eq!(c.k.file_of_block(7, 2005), Some((b, 5, 3)));
    assert_eq!(c.k.file_of_block(7, 1004), None, "past an extent");
    assert_eq!(c.k.file_of_block(7, 10), None, "below every extent");
    assert_eq!(c.k.file_of_block(8, 1000), None, "another device");
    // A file's extents are entered once.
    c.k.map_extents(a, 7, &[x(0, 9000 * BLOCK_SIZE, BLOCK_SIZE)]);
    assert_eq!(c.k.file_of_block(7, 9000), None);
}

/// A file whose size is not known has its end learned from the pages the
/// kernel's readahead added (mm/readahead.c: a window of at least the
/// request, `get_init_ra_size` at page 0, stopped at the end of the file),
/// and later reads are cut there; a window that ends exactly where it
/// would anyway, or a request larger than the device's window, teaches
/// nothing.
#[test]
fn the_end_of_an_unopened_file_is_learned_from_the_kernels_readahead() {
    let (mut c, _seen) = controller();
    c.k.ra_window.insert(7, Some(32)); // read_ahead_kb = 128
    let add = |ino, index| LiveEvent {
        ts_ns: T0 + 10,
        pid: 42,
        kind: EventKind::AddToCache {
            dev: 7,
            ino,
            index,
            order: 0,
        },
    };
    let read = |ino, index, last_index| LiveEvent {
        ts_ns: T0 + 20,
        pid: 42,
        kind: EventKind::GetPages {
            dev: 7,
            ino,
            index,
            last_index,
        },
    };
    let demand = |c: &mut Controller, evs: &[LiveEvent]| {
        let before = c.k.stats.demand_pages;
        c.on_events(evs, &vec![true; evs.len()]);
        c.k.stats.demand_pages - before
    };
    // 16 pages asked, 4 added: the file has 4.
    let a: Vec<_> = (0..4).map(|i| add(1, i)).chain([read(1, 0, 15)]).collect();
    assert_eq!(demand(&mut c, &a), 4);
    // 1 page asked at page 0, 2 added (short of the initial window of
    // 4): the file has 2, and a later 16-page read is cut there.
    assert_eq!(demand(&mut c, &[add(2, 0), add(2, 1), read(2, 0, 0)]), 1);
    assert_eq!(demand(&mut c, &[read(2, 0, 15)]), 2);
    // 4 added for 1 asked: the whole initial window; nothing learned.
    let w: Vec<_> = (0..4).map(|i| add(3, i)).chain([read(3, 0, 0)]).collect();
    assert_eq!(demand(&mut c, &w), 1);
    assert_eq!(demand(&mut c, &[read(3, 0, 15)]), 16);
    // 64 pages asked, beyond the device's window of 32: nothing learned.
    let big: Vec<_> = (0..32).map(|i| add(4, i)).chain([read(4, 0, 63)]).collect();
    assert_eq!(demand(&mut c, &big), 64);
    // Pages added past a learned end move it on (the file grew).
    assert_eq!(demand(&mut c, &[add(2, 2), read(2, 2, 2)]), 1);
    assert_eq!(demand(&mut c, &[read(2, 0, 15)]), 3);
}

/// One access a policy heard: its outcome, file, page and pages.
type HeardAccess = (Origin, u64, u32, u32);

/// Counts the accesses a policy hears, by outcome.
#[derive(Clone, Default)]
struct Heard(Arc<Mutex<Vec<HeardAccess>>>);

impl Policy for Heard {
    fn name(&self) -> &str {
        "heard"
    }
    fn on_access(&mut self, a: &Access, o: &Outcome, _s: &mut Sink<'_>) {
        (self.0.lock().unwrap()).push((a.origin, a.page, a.blocks, o.miss_blocks));
    }
    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}

#[test]
fn pages_fault_around_mapped_reach_the_policy_as_mapped_hits_not_demand() {
    let heard = Heard::default();
    let mut c = Controller::new(Box::new(heard.clone()), ControllerOptions::default());
    c.on_start(42, T0);
    let ev = |ts, kind| LiveEvent {
        ts_ns: T0 + ts,
        pid: 42,
        kind,
    };
    let add = |index| EventKind::AddToCache {
        dev: 7,
        ino: 5,
        index,
        order: 0,
    };
    // The task brought in pages 0..4, fault-around mapped 16 resident
    // pages elsewhere in the file, then the task read pages 0..4.
    let mut evs: Vec<_> = (0..4).map(|i| ev(10, add(i))).collect();
    let mapped = EventKind::MapPages {
        dev: 7,
        ino: 5,
        index: 32,
        last_index: 47,
    };
    let read = EventKind::GetPages {
        dev: 7,
        ino: 5,
        index: 0,
        last_index: 3,
    };
    evs.extend([ev(20, mapped), ev(30, read)]);
    c.on_events(&evs, &vec![true; evs.len()]);
    assert_eq!(
        *heard.0.lock().unwrap(),
        vec![(Origin::Mapped, 32, 16, 0), (Origin::Demand, 0, 4, 4)]
    );
    // Demand is the read alone, and its misses are the pages brought in.
    let s = c.stats();
    assert_eq!((s.accesses, s.demand_pages, s.miss_pages), (1, 4, 4));
}

//! The library against real files (ext4 temp dir, Linux 6.5+ cachestat).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use outrider_directed::{Client, Entry, Event, Mode, Reason};
use outrider_sys::{advise, cachestat, Advice};

const PAGE: u64 = 4096;

fn temp_file(pages: u64) -> (PathBuf, File) {
    static N: AtomicU32 = AtomicU32::new(0);
    let path = std::env::temp_dir().join(format!(
        "outrider-directed-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .unwrap();
    let page = vec![7u8; PAGE as usize];
    for _ in 0..pages {
        f.write_all(&page).unwrap();
    }
    f.sync_all().unwrap();
    advise(f.as_fd(), 0, 0, Advice::DontNeed).unwrap();
    // No kernel readahead, so residency reflects our prefetching only.
    advise(f.as_fd(), 0, 0, Advice::Random).unwrap();
    (path, f)
}

fn entries(fd: i32, pages: &[u64], marked_every: u64) -> Vec<Entry> {
    pages
        .iter()
        .enumerate()
        .map(|(i, &p)| Entry {
            fd,
            offset: p * PAGE,
            marked: marked_every > 0 && (i as u64).is_multiple_of(marked_every),
        })
        .collect()
}

type Log = Arc<Mutex<Vec<Event>>>;

fn client(params: &str, log: &Log) -> Client {
    let mut c = Client::from_params(params).unwrap();
    let log = Arc::clone(log);
    c.set_callback(move |_c, ev| log.lock().unwrap().push(*ev));
    c
}

fn read_page(c: &mut Client, f: &File, page: u64) {
    let mut buf = [0u8; PAGE as usize];
    assert_eq!(
        c.pread(f.as_fd(), &mut buf, page * PAGE).unwrap(),
        PAGE as usize
    );
}

fn resident(f: &File, page: u64) -> bool {
    cachestat(f.as_fd(), page * PAGE, PAGE).unwrap().cache == 1
}

#[test]
fn callback_fires_once_when_the_list_runs_low() {
    let (path, f) = temp_file(128);
    let log: Log = Arc::default();
    let mut c = client("low=10,buffer=16KiB", &log);
    c.register_region(f.as_fd(), 0, 128 * PAGE).unwrap();
    let pages: Vec<u64> = (0..100).collect();
    assert_eq!(
        c.request_prefetching(&entries(f.as_raw_fd(), &pages, 0), Mode::Replace),
        100
    );
    for p in 0..95 {
        read_page(&mut c, &f, p);
    }
    let ev = log.lock().unwrap().clone();
    assert_eq!(ev.len(), 1, "{ev:?}");
    // After reading page 90, 9 entries remain: fewer than 10.
    assert_eq!(ev[0].reason, Reason::Low);
    assert_eq!(ev[0].current, (f.as_raw_fd(), 90 * PAGE));
    assert_eq!(c.stats().low_callbacks, 1);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn straying_calls_back_with_the_last_marked_access_and_ignore_suppresses_it() {
    let (path, f) = temp_file(64);
    let fd = f.as_raw_fd();
    let log: Log = Arc::default();
    let mut c = client("low=0,buffer=16KiB", &log);
    c.register_region(f.as_fd(), 10 * PAGE, 54 * PAGE).unwrap();
    // Marked every 4th: pages 10 (marked), 11, 12, 13, 14 (marked), ...
    let pages: Vec<u64> = (10..30).collect();
    c.request_prefetching(&entries(fd, &pages, 4), Mode::Replace);
    for p in [10, 11, 12, 13, 15] {
        read_page(&mut c, &f, p); // 14 skipped (the program had it cached)
    }
    assert!(log.lock().unwrap().is_empty());
    // Reads while ignoring are not tracked at all.
    c.ignore_accesses();
    read_page(&mut c, &f, 40);
    c.unignore_accesses();
    assert!(log.lock().unwrap().is_empty());
    // Outside the registered region: not tracked.
    read_page(&mut c, &f, 5);
    assert!(log.lock().unwrap().is_empty());
    // A registered page not on the list ahead: strayed.
    read_page(&mut c, &f, 40);
    let ev = log.lock().unwrap().clone();
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0].reason, Reason::Strayed);
    assert_eq!(ev[0].current, (fd, 40 * PAGE));
    assert_eq!(ev[0].last_marked, Some((fd, 14 * PAGE)));
    assert_eq!(c.stats().stray_callbacks, 1);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_round_prefetches_the_list_and_the_next_drops_leftovers() {
    let (path, f) = temp_file(256);
    let fd = f.as_raw_fd();
    let log: Log = Arc::default();
    // Buffer of 8 pages, no infill: rounds of 8 unique pages.
    let mut c = client("buffer=32KiB,infill=0,low=0", &log);
    c.register_region(f.as_fd(), 0, 256 * PAGE).unwrap();
    let pages = [200u64, 3, 150, 77, 9, 120, 31, 64, 5, 250, 100, 42];
    c.request_prefetching(&entries(fd, &pages, 0), Mode::Replace);
    read_page(&mut c, &f, 200);
    // Round 1 = the first 8 entries, all fetched; the rest not.
    for &p in &pages[..8] {
        assert!(resident(&f, p), "page {p}");
    }
    for &p in &pages[8..] {
        assert!(!resident(&f, p), "page {p}");
    }
    for &p in &pages[1..9] {
        read_page(&mut c, &f, p);
    }
    // Entry 9 (page 5) started round 2: round 1's pages were dropped.
    assert_eq!(c.stats().rounds, 2);
    for &p in &pages[..8] {
        assert!(!resident(&f, p), "page {p} should have been dropped");
    }
    for &p in &pages[8..] {
        assert!(resident(&f, p), "page {p}");
    }
    assert_eq!(c.stats().dropped_pages, 8);
    std::fs::remove_file(path).unwrap();
}

// §4.5/§4.6: a listed page of the current round found missing is a
// premature eviction: a new round at half the buffer.
#[test]
fn premature_eviction_halves_the_buffer_and_refetches() {
    let (path, f) = temp_file(64);
    let fd = f.as_raw_fd();
    let log: Log = Arc::default();
    // 1000 pages of memory → AIMD cap 900, step 100.
    // DONTNEED leaves no shadow entry: shadow=off (the paper's test)
    // counts the dropped page as evicted.
    let mut c = client("memory=4096000,infill=0,low=0,shadow=off", &log);
    c.register_region(f.as_fd(), 0, 64 * PAGE).unwrap();
    let pages: Vec<u64> = (0..40).rev().collect();
    c.request_prefetching(&entries(fd, &pages, 0), Mode::Replace);
    read_page(&mut c, &f, 39);
    assert_eq!(c.stats().buffer_pages, 900);
    advise(f.as_fd(), 20 * PAGE, PAGE, Advice::DontNeed).unwrap();
    assert!(!resident(&f, 20));
    for p in (20..39).rev() {
        read_page(&mut c, &f, p);
    }
    let s = c.stats();
    assert_eq!((s.rounds, s.premature_rounds, s.buffer_pages), (2, 1, 450));
    assert!(resident(&f, 10));
    std::fs::remove_file(path).unwrap();
}

// The done flag: no low-list callback once the whole list is handed over.
#[test]
fn done_flag_suppresses_low_list_callbacks() {
    let (path, f) = temp_file(64);
    let log: Log = Arc::default();
    let mut c = client("low=10,buffer=16KiB", &log);
    c.register_region(f.as_fd(), 0, 64 * PAGE).unwrap();
    let pages: Vec<u64> = (0..20).collect();
    c.request_prefetching(&entries(f.as_raw_fd(), &pages, 0), Mode::Replace);
    c.list_done();
    for p in 0..20 {
        read_page(&mut c, &f, p);
    }
    assert!(log.lock().unwrap().is_empty());
    assert_eq!(c.stats().low_callbacks, 0);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn bad_settings_are_clear_errors() {
    let e = Client::from_params("infil=3").err().unwrap().to_string();
    assert!(
        e.contains("no parameter 'infil'") && e.contains("infill"),
        "{e}"
    );
}

// infill: `auto` (the default), a size, or a clear error.
#[test]
fn infill_setting_is_auto_or_a_size() {
    use outrider_core::size::ByteSize;
    use outrider_core::Params;
    use outrider_directed::{Config, Infill};
    assert_eq!(Config::default().infill, Infill::Auto);
    let c = Config::parse("directed", "infill=8KiB").unwrap();
    assert_eq!(c.infill, Infill::Size(ByteSize(8 << 10)));
    let e = Client::from_params("infill=fast")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("infill") && e.contains("auto or a size"), "{e}");
    // A fixed limit is used as given.
    let (path, f) = temp_file(64);
    let log: Log = Arc::default();
    let mut c = client("infill=8KiB", &log);
    c.register_region(f.as_fd(), 0, 64 * PAGE).unwrap();
    assert_eq!(c.stats().infill_limit_pages, 2);
    // auto, a list read in file order: no gaps, no probe, no infill.
    let fd = f.as_raw_fd();
    let mut c = client("low=0", &log);
    c.register_region(f.as_fd(), 0, 64 * PAGE).unwrap();
    let seq: Vec<u64> = (0..16).collect();
    c.request_prefetching(&entries(fd, &seq, 0), Mode::Replace);
    read_page(&mut c, &f, 0);
    assert_eq!(c.stats().infill_limit_pages, 0);
    // auto, a round with gaps, on a region too small to probe (64 pages
    // < 16 MiB): the paper's 32 KiB.
    let mut c = client("low=0", &log);
    c.register_region(f.as_fd(), 0, 64 * PAGE).unwrap();
    let gaps: Vec<u64> = vec![0, 10, 20, 30];
    c.request_prefetching(&entries(fd, &gaps, 0), Mode::Replace);
    read_page(&mut c, &f, 0);
    assert_eq!(c.stats().infill_limit_pages, 8);
    std::fs::remove_file(path).unwrap();
}

// The probe needs a region of at least 16 MiB whose pages are not cached.
#[test]
fn probe_refuses_small_or_cached_regions() {
    use outrider_directed::probe::{probe, MIN_PROBE_PAGES};
    let (path, f) = temp_file(MIN_PROBE_PAGES + 16);
    assert_eq!(probe(f.as_fd(), 0, (MIN_PROBE_PAGES - 1) * PAGE), None);
    // Every page cached: nothing to measure.
    let mut buf = vec![0u8; PAGE as usize];
    for p in 0..MIN_PROBE_PAGES + 16 {
        outrider_sys_pread(&f, &mut buf, p);
    }
    assert_eq!(probe(f.as_fd(), 0, (MIN_PROBE_PAGES + 16) * PAGE), None);
    std::fs::remove_file(path).unwrap();
}

fn outrider_sys_pread(f: &File, buf: &mut [u8], page: u64) {
    use std::os::unix::fs::FileExt;
    f.read_exact_at(buf, page * PAGE).unwrap();
}

// A list read page after page in file order is what the kernel's
// readahead serves: with `readahead=on` (the default) the round fetches
// nothing; `readahead=off` (the paper) fetches it (`wait=on`: the test
// reads residency once the round is submitted). The test file has
// FADV_RANDOM, so nothing but the client's fetches makes pages resident.
#[test]
fn a_list_in_file_order_is_left_to_readahead() {
    let (path, f) = temp_file(256);
    let fd = f.as_raw_fd();
    let log: Log = Arc::default();
    let pages: Vec<u64> = (0..256).collect();
    for (params, fetched) in [("low=0", false), ("low=0,readahead=off,wait=on", true)] {
        advise(f.as_fd(), 0, 0, Advice::DontNeed).unwrap();
        let mut c = client(params, &log);
        c.register_region(f.as_fd(), 0, 256 * PAGE).unwrap();
        c.request_prefetching(&entries(fd, &pages, 0), Mode::Replace);
        read_page(&mut c, &f, 0);
        let s = c.stats();
        assert_eq!(s.rounds, 1, "{params}");
        assert_eq!(s.readahead_rounds, u64::from(!fetched), "{params}");
        assert_eq!(resident(&f, 200), fetched, "{params}");
    }
    // Shuffled, the same pages are fetched by the round.
    let mut shuffled = pages.clone();
    shuffled.swap(1, 200);
    advise(f.as_fd(), 0, 0, Advice::DontNeed).unwrap();
    let mut c = client("low=0", &log);
    c.register_region(f.as_fd(), 0, 256 * PAGE).unwrap();
    c.request_prefetching(&entries(fd, &shuffled, 0), Mode::Replace);
    read_page(&mut c, &f, 0);
    assert_eq!(c.stats().readahead_rounds, 0);
    assert!(resident(&f, 200));
    std::fs::remove_file(path).unwrap();
}

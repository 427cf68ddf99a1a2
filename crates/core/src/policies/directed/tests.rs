use super::list::{AccessList, ListEntry, Mode, Observed};
use super::plan::*;
use super::*;
use crate::mechanism::clook::expected_seek_pages;
use crate::policy::NoResidency;
use crate::policy::PolicyExt;
use crate::{FileId, Params, PrefetchRequest};

fn e(page: u64) -> ListEntry {
    ListEntry {
        file: 1,
        page,
        marked: false,
    }
}
fn m(page: u64) -> ListEntry {
    ListEntry {
        file: 1,
        page,
        marked: true,
    }
}
fn pages(l: &AccessList) -> Vec<u64> {
    l.upcoming().map(|e| e.page).collect()
}

#[test]
fn replace_append_and_accepted_count() {
    let mut l = AccessList::new(5);
    assert_eq!(l.request(&[e(1), e(2), e(3)], Mode::Replace), 3);
    // Buffer holds 5: only 2 of 4 fit (§4.2 "fewer than passed in").
    assert_eq!(l.request(&[e(4), e(5), e(6), e(7)], Mode::Append), 2);
    assert_eq!(pages(&l), vec![1, 2, 3, 4, 5]);
    // Passed entries are dropped to make room.
    assert!(matches!(
        l.observe(1, 2),
        Observed::OnList {
            index: 1,
            skipped: 1
        }
    ));
    // Entry 0 is dropped; entry 1 (just accessed) is kept.
    assert_eq!(l.request(&[e(6), e(7), e(8)], Mode::Append), 1);
    assert_eq!(pages(&l), vec![3, 4, 5, 6]);
    assert_eq!(l.len(), 5);
    assert_eq!(l.request(&[e(9)], Mode::Replace), 1);
    assert_eq!(pages(&l), vec![9]);
    assert_eq!(l.remaining(), 1);
}

#[test]
fn after_mark_replaces_only_what_follows_the_last_accessed_mark() {
    let mut l = AccessList::new(100);
    l.request(&[m(10), e(1), e(2), m(20), e(3), e(4)], Mode::Replace);
    l.observe(1, 10);
    l.observe(1, 1);
    l.observe(1, 20);
    l.observe(1, 3);
    assert_eq!(l.last_marked().map(|x| x.page), Some(20));
    // Everything after mark 20 (3, 4) is replaced by 30, 31; the program had
    // passed 3 already, so its position goes back to just after the mark.
    assert_eq!(l.request(&[e(30), e(31)], Mode::AfterMark), 2);
    assert_eq!(pages(&l), vec![30, 31]);
    assert!(matches!(
        l.observe(1, 31),
        Observed::OnList { skipped: 1, .. }
    ));
    // Without an accessed mark in the list, AfterMark replaces the unread part.
    let mut l = AccessList::new(100);
    l.request(&[e(1), e(2), e(3)], Mode::Replace);
    l.observe(1, 1);
    l.request(&[e(7)], Mode::AfterMark);
    assert_eq!(pages(&l), vec![7]);
}

// §4.1: a marked page the program found in its own cache (never read) still
// becomes the last marked access once a later page is read.
#[test]
fn skipped_cached_marked_entries_still_count_as_passed() {
    let mut l = AccessList::new(100);
    l.request(&[m(100), e(5), e(9), m(101), e(7), e(8)], Mode::Replace);
    // The program reads 5 (100 was cached), then 7 (101 and 9 cached).
    assert_eq!(
        l.observe(1, 5),
        Observed::OnList {
            index: 1,
            skipped: 1
        }
    );
    assert_eq!(l.last_marked().map(|x| x.page), Some(100));
    assert_eq!(
        l.observe(1, 7),
        Observed::OnList {
            index: 4,
            skipped: 2
        }
    );
    assert_eq!(l.last_marked().map(|x| x.page), Some(101));
    assert_eq!(l.observe(1, 7), Observed::Same);
    assert_eq!(l.pos(), 5);
    // A page not ahead on the list: strayed, position kept.
    assert_eq!(l.observe(1, 5), Observed::Strayed);
    assert_eq!(l.pos(), 5);
    assert_eq!(l.observe(2, 8), Observed::Strayed);
    assert_eq!(
        l.observe(1, 8),
        Observed::OnList {
            index: 5,
            skipped: 0
        }
    );
}

fn pg(file: u64, page: u64, phys: u64) -> Page {
    Page {
        file,
        page,
        dev: 0,
        phys,
    }
}

// C-LOOK from a known extent map: file 1 pages 0..4 at blocks 1000..1004,
// pages 4..8 at blocks 200..204; file 2 page 0 at block 600. Head at 500.
#[test]
fn clook_orders_by_physical_position_from_the_head() {
    let phys = |f: u64, p: u64| match (f, p) {
        (1, p) if p < 4 => 1000 + p,
        (1, p) => 200 + (p - 4),
        (2, p) => 600 + p,
        _ => unreachable!(),
    };
    let mut v: Vec<Page> = [(1, 0), (1, 5), (2, 0), (1, 3), (1, 4)]
        .iter()
        .map(|&(f, p)| pg(f, p, phys(f, p)))
        .collect();
    clook_order(&mut v, 0, 500);
    let order: Vec<(u64, u64)> = v.iter().map(|p| (p.file, p.page)).collect();
    assert_eq!(order, vec![(2, 0), (1, 0), (1, 3), (1, 4), (1, 5)]);
}

#[test]
fn infill_merges_exactly_the_gaps_at_or_under_the_limit() {
    // Gaps (pages): 0, 2, 3, 8 (logically consistent), then a page whose
    // logical gap differs from its physical one.
    let v = [
        pg(1, 0, 100),
        pg(1, 1, 101),
        pg(1, 4, 104),
        pg(1, 8, 108),
        pg(1, 17, 117),
        pg(1, 40, 119),
    ];
    let runs = merge_infill(&v, 3);
    let got: Vec<(u64, u64)> = runs.iter().map(|r| (r.phys, r.pages)).collect();
    assert_eq!(got, vec![(100, 9), (117, 1), (119, 1)]);
    // Limit 2: the gap of 3 is no longer merged.
    let got: Vec<(u64, u64)> = merge_infill(&v, 2)
        .iter()
        .map(|r| (r.phys, r.pages))
        .collect();
    assert_eq!(got, vec![(100, 5), (108, 1), (117, 1), (119, 1)]);
    // Limit 0: only adjacent pages; duplicates dropped.
    let mut d = v.to_vec();
    d.insert(1, pg(1, 0, 100));
    let got: Vec<(u64, u64)> = merge_infill(&d, 0)
        .iter()
        .map(|r| (r.phys, r.pages))
        .collect();
    assert_eq!(got, vec![(100, 2), (104, 1), (108, 1), (117, 1), (119, 1)]);
    assert_eq!(run_pages(&merge_infill(&v, 3)), 11);
}

#[test]
fn a_round_takes_k_unique_pages_and_covers_their_repeats() {
    let list: Vec<Page> = [5, 9, 5, 2, 9, 7, 2, 8]
        .iter()
        .map(|&p| pg(1, p, 1000 + p))
        .collect();
    let r = plan_round(list.iter().copied(), 3, 0, true, (0, 0));
    assert_eq!(
        r.pages.iter().map(|p| p.page).collect::<Vec<_>>(),
        vec![5, 9, 2]
    );
    // Entries 5 9 5 2 9 are covered; 7 is the fourth unique page.
    assert_eq!(r.entries, 5);
    assert_eq!(
        r.runs.iter().map(|r| r.page).collect::<Vec<_>>(),
        vec![2, 5, 9]
    );
    // Charged infill: 2..9 merged would read 8 pages > budget 3, so the
    // round shrinks to the prefix that fits.
    let r = plan_round(list.iter().copied(), 3, 4, true, (0, 0));
    assert_eq!(r.pages.len(), 1);
    assert_eq!(r.entries, 1);
    // Uncharged (the paper's kernel infill): 3 pages, one run of 8.
    let r = plan_round(list.iter().copied(), 3, 4, false, (0, 0));
    assert_eq!((r.pages.len(), run_pages(&r.runs)), (3, 8));
}

#[test]
fn aimd_starts_at_90_percent_adds_10_halves() {
    let mut a = Aimd::new(1000, 10, true);
    assert_eq!((a.pages, a.cap_pages, a.step_pages), (900, 900, 100));
    assert_eq!(a.round_done(true), 450);
    assert_eq!(a.round_done(true), 225);
    assert_eq!(a.round_done(false), 325);
    assert_eq!(a.round_done(false), 425);
    for _ in 0..10 {
        a.round_done(false);
    }
    assert_eq!(a.pages, 900);
    for _ in 0..20 {
        a.round_done(true);
    }
    assert_eq!(a.pages, 10);
    let mut off = Aimd::new(1000, 10, false);
    assert_eq!(off.round_done(true), 900);
    off.set_available(500);
    assert_eq!(off.pages, 450);
}

#[test]
fn expected_seek_formula() {
    // §3.5: N = 65536 pages, K = 2 → 2N/6.
    assert!((expected_seek_pages(65536.0, 2.0) - 65536.0 / 3.0).abs() < 1e-9);
}

fn read(pid: u32, page: u64) -> Access {
    Access {
        pid,
        lbn: page,
        page,
        file: FileId(0),
        blocks: 1,
        ..Access::default()
    }
}

// The sim policy: on the first access it plans the next K unique pages of
// the oracle, in C-LOOK order from the head, as block requests.
#[test]
fn sim_policy_issues_rounds_in_clook_order() {
    let mut p = Directed::new(DirectedParams::parse(NAME, "buffer=12KiB,infill=0").unwrap());
    let future: Vec<Access> = [50, 40, 10, 30, 20, 60, 70]
        .iter()
        .map(|&b| read(1, b))
        .collect();
    p.start_with_oracle(&future, 1000);
    let mut out: Vec<PrefetchRequest> = vec![];
    let mut w = 0;
    let issued = |out: &Vec<PrefetchRequest>| -> Vec<u64> {
        out.iter()
            .map(|r| match r.target {
                Target::Block { lbn, .. } => lbn,
                Target::File { page, .. } => page,
            })
            .collect()
    };
    {
        let mut sink = Sink::new(&mut out, &mut w, &NoResidency);
        p.on_access(&future[0], &Outcome::default(), &mut sink);
    }
    // Round 1 = entries 40, 10, 30 from head 51: C-LOOK wraps → 10, 30, 40.
    assert_eq!(issued(&out), vec![10, 30, 40]);
    out.clear();
    for a in &future[1..3] {
        let mut sink = Sink::new(&mut out, &mut w, &NoResidency);
        p.on_access(a, &Outcome::default(), &mut sink);
    }
    assert!(out.is_empty());
    let mut sink = Sink::new(&mut out, &mut w, &NoResidency);
    p.on_access(&future[3], &Outcome::default(), &mut sink);
    // Round 2 = 20, 60, 70 from head 31.
    assert_eq!(issued(&out), vec![60, 70, 20]);
    assert_eq!(p.stats().rounds, 2);
}

#[test]
fn a_round_read_page_after_page_is_in_file_order() {
    let round = |pages: &[(u64, u64)]| {
        let list: Vec<Page> = pages.iter().map(|&(f, p)| pg(f, p, 1000 + p)).collect();
        plan_round(list.iter().copied(), 64, 0, true, (0, 0))
    };
    // Two files, each read forwards from wherever it starts.
    assert!(round(&[(1, 4), (1, 5), (1, 6), (2, 0), (2, 1)]).in_file_order());
    // A repeat inside the round is not a new page: still in order.
    assert!(round(&[(1, 4), (1, 5), (1, 5), (1, 6)]).in_file_order());
    // Strided, backwards or shuffled: not what readahead serves.
    assert!(!round(&[(1, 0), (1, 2), (1, 4)]).in_file_order());
    assert!(!round(&[(1, 9), (1, 8), (1, 7)]).in_file_order());
    assert!(!round(&[(1, 1), (1, 2), (2, 0), (1, 9)]).in_file_order());
    // Two files read in turns, each forwards: readahead follows both.
    assert!(round(&[(1, 1), (1, 2), (2, 0), (1, 3), (2, 1)]).in_file_order());
}

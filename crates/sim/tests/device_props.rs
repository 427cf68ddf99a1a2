//! Properties every device model keeps, over random submission schedules:
//! completions come out in non-decreasing time order, never before their
//! submission, every request exactly once; `pending` counts what is
//! outstanding; a model is deterministic and `reset` restores it exactly.

use std::collections::HashMap;

use outrider_sim::device::{build_device, DevRequest, Device};
use proptest::prelude::*;

const SPECS: [&str; 7] = [
    "hdd",
    "ssd",
    "nvme",
    "raid0:4",
    "raid0:3",
    "raid0:3:ssd",
    "raid0:2:nvme",
];

#[derive(Clone, Debug)]
struct Op {
    gap_ns: u64,
    dev: u32,
    lbn: u64,
    blocks: u32,
    peek: bool,
}

fn op() -> impl Strategy<Value = Op> {
    (
        prop_oneof![3 => Just(0u64), 2 => 0u64..200_000, 1 => 0u64..30_000_000],
        prop_oneof![4 => Just(0u32), 1 => Just(8 << 20), 1 => Just(259 << 20)],
        prop_oneof![2 => 0u64..4_096, 2 => 0u64..200_000_000, 1 => Just((1 << 40) - 300)],
        prop_oneof![3 => Just(1u32), 2 => 1u32..300],
        any::<bool>(),
    )
        .prop_map(|(gap_ns, dev, lbn, blocks, peek)| Op {
            gap_ns,
            dev,
            lbn,
            blocks,
            peek,
        })
}

/// Take the completion announced for `expect` and check it.
fn take(
    d: &mut dyn Device,
    out: &mut Vec<(u64, u64)>,
    submitted_at: &mut HashMap<u64, u64>,
    expect: u64,
) {
    let (t, r) = d.complete_next().expect("a completion was announced");
    assert_eq!(t, expect, "complete_next disagrees with next_completion_ns");
    let at = submitted_at
        .remove(&r.id)
        .expect("completed twice or never submitted");
    assert!(
        t > at,
        "request {} completed at {t}, submitted at {at}",
        r.id
    );
    if let Some(&(prev, _)) = out.last() {
        assert!(t >= prev, "time went backwards: {t} after {prev}");
    }
    out.push((t, r.id));
    assert_eq!(d.pending(), submitted_at.len());
}

/// Drive `d` with `ops` as the simulation loop does and check the
/// invariants; returns the completions (time, id) in order.
fn drive(d: &mut dyn Device, ops: &[Op]) -> Vec<(u64, u64)> {
    let mut now = 0u64;
    let mut submitted_at: HashMap<u64, u64> = HashMap::new();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (id, op) in ops.iter().enumerate() {
        now += op.gap_ns;
        while let Some(t) = d.next_completion_ns() {
            if t > now {
                break;
            }
            take(d, &mut out, &mut submitted_at, t);
        }
        let req = DevRequest {
            id: id as u64,
            dev: op.dev,
            lbn: op.lbn,
            blocks: op.blocks,
            write: id % 3 == 0,
        };
        d.submit(now, req);
        submitted_at.insert(id as u64, now);
        assert_eq!(d.pending(), submitted_at.len());
        if op.peek {
            let t = d.next_completion_ns().expect("work is pending");
            assert!(t > out.last().map_or(0, |c| c.0) || t >= now);
        }
    }
    while let Some(t) = d.next_completion_ns() {
        take(d, &mut out, &mut submitted_at, t);
    }
    assert!(
        submitted_at.is_empty(),
        "never completed: {:?}",
        submitted_at.keys()
    );
    assert_eq!(d.pending(), 0);
    assert_eq!(d.complete_next(), None);
    assert_eq!(out.len(), ops.len());
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn completions_are_ordered_exactly_once_and_reproducible(
        ops in prop::collection::vec(op(), 1..250)
    ) {
        for spec in SPECS {
            let mut d = build_device(spec).unwrap();
            let first = drive(d.as_mut(), &ops);
            let busy = d.busy_ns();
            prop_assert!(busy > 0);
            d.reset();
            prop_assert_eq!(d.busy_ns(), 0);
            let again = drive(d.as_mut(), &ops);
            prop_assert_eq!(&first, &again, "{} after reset", spec);
            prop_assert_eq!(d.busy_ns(), busy);
            let mut fresh = build_device(spec).unwrap();
            prop_assert_eq!(&first, &drive(fresh.as_mut(), &ops), "{} fresh", spec);
        }
    }
}

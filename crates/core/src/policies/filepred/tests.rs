//! Exact tests from the paper's worked examples (Fig. 2, Fig. 4, §2.2
//! halving) and the policy's behaviour.

use super::model::{Model, ModelSnapshot};
use super::trie::{Ctx, Node, Partition, Prediction, Trie};
use super::*;
use crate::event::PrefetchRequest;
use crate::params::Params;
use crate::policy::{NoResidency, Residency};

const A: u64 = 1;
const B: u64 = 2;
const C: u64 = 3;

fn feed(t: &mut Trie, s: &[u64]) {
    for &x in s {
        t.observe(x);
    }
}

fn letters(s: &str) -> Vec<u64> {
    s.bytes().map(|b| u64::from(b - b'A' + 1)).collect()
}

fn count(t: &Trie, pattern: &str) -> Option<u32> {
    t.find(&letters(pattern)).map(|c| t.node(c).count)
}

#[test]
fn fig2_trie_for_cacbcaabca_order_2() {
    // EPCM Fig. 2 (Bell et al.): the sequence CACBCAABCA with order 2.
    let mut t = Trie::new(64, 2, false);
    feed(&mut t, &letters("CACBCAABCA"));
    // First-order nodes: A 4 times, B twice, C 4 times.
    assert_eq!(
        (count(&t, "A"), count(&t, "B"), count(&t, "C")),
        (Some(4), Some(2), Some(4))
    );
    // The circled node: CA seen 3 times, followed once by A and once by C.
    assert_eq!(count(&t, "CA"), Some(3));
    let ca = t.find(&letters("CA")).unwrap();
    let mut kids = t.children(ca);
    kids.sort_unstable();
    assert_eq!(kids, vec![(A, 1), (C, 1)]);
    // Second and third order patterns elsewhere in the figure.
    assert_eq!(count(&t, "BC"), Some(2));
    assert_eq!(count(&t, "BCA"), Some(2));
    assert_eq!(count(&t, "AAB"), Some(1));
    assert_eq!(count(&t, "CAAB"), None, "order 2 keeps patterns of 3");
    // CA is the live context: A and C are each predicted with likelihood 0.5.
    let mut out = vec![];
    t.predict_next(0.5, &mut out);
    out.sort_by_key(|p| p.file);
    assert_eq!(
        out,
        vec![
            Prediction {
                file: A,
                likelihood: 0.5
            },
            Prediction {
                file: C,
                likelihood: 0.5
            }
        ]
    );
    t.predict_next(0.51, &mut out);
    assert!(out.is_empty());
}

fn node(sym: u64, count: u32, depth: u16, parent: u16) -> Node {
    Node {
        sym,
        count,
        depth,
        parent,
        child: u16::MAX,
        sibling: u16::MAX,
    }
}

/// A partition from (parent, symbol, count) rows; row 0 is the root.
fn partition(rows: &[(u16, u64, u32)]) -> Partition {
    let mut p = Partition::default();
    for (i, &(parent, sym, c)) in rows.iter().enumerate() {
        if i == 0 {
            p.nodes.push(node(sym, c, 1, u16::MAX));
            continue;
        }
        let depth = p.nodes[parent as usize].depth + 1;
        let mut n = node(sym, c, depth, parent);
        n.sibling = p.nodes[parent as usize].child;
        p.nodes.push(n);
        p.nodes[parent as usize].child = i as u16;
    }
    p
}

#[test]
fn fig4_epcm_predicts_orm_at_34_of_37() {
    // EPCM Fig. 4: INF occurred 37 times, followed by O 35 times (twice by
    // something else, X); O was followed by R and then M 34 times.
    let [i, n, f, o, r, m, x] = [9, 14, 6, 15, 18, 13, 24];
    let p = partition(&[
        (0, i, 40),
        (0, n, 38),
        (1, f, 37),
        (2, o, 35),
        (2, x, 2),
        (3, r, 34),
        (5, m, 34),
    ]);
    let t = Trie::from_parts(64, 46, true, vec![p.clone()], vec![], vec![]).unwrap();
    let inf = t.find(&[i, n, f]).unwrap();
    assert_eq!(t.node(inf).count, 37);
    let mut out = vec![];
    t.chain_from(inf, 37.0, 0.9, 0, 64, &[], &mut out);
    let files: Vec<u64> = out.iter().map(|p| p.file).collect();
    assert_eq!(files, vec![o, r, m]);
    assert_eq!(out[0].likelihood, 35.0 / 37.0);
    assert_eq!(out[2].likelihood, 34.0 / 37.0);
    // Above 34/37 only O remains.
    let mut only = vec![];
    t.chain_from(inf, 37.0, 0.93, 0, 64, &[], &mut only);
    assert_eq!(only.iter().map(|p| p.file).collect::<Vec<_>>(), vec![o]);

    // The same partition as the live state right after a 38th INF: the
    // pending occurrence is not counted, so the prediction is the same.
    let mut p = p;
    p.nodes[0].count += 1;
    p.nodes[1].count += 1;
    p.nodes[2].count += 1;
    let t = Trie::from_parts(
        64,
        46,
        true,
        vec![p],
        vec![Ctx { part: 0, node: 2 }],
        vec![],
    )
    .unwrap();
    let mut seq = vec![];
    t.predict_sequence(0.9, 0, 64, &mut seq, &mut vec![]);
    assert_eq!(
        seq.iter().map(|p| p.file).collect::<Vec<_>>(),
        vec![o, r, m]
    );
    assert_eq!(seq[1].likelihood, 34.0 / 37.0);
}

#[test]
fn full_partition_halves_and_frees_zero_count_nodes() {
    // Order 1, three nodes per partition. A's partition: A, then B (3x).
    let mut t = Trie::new(3, 1, false);
    feed(&mut t, &[A, B, A, B, A, B, A, C]);
    let a = t.root(A).unwrap();
    assert_eq!(t.children(a).len(), 2, "B and C: the partition is full");
    assert_eq!(t.halvings, 0);
    // A needs D: every count halves (A 5→2, B 3→1, C 1→0), C is freed and
    // D takes its place.
    feed(&mut t, &[A, 4]);
    assert_eq!(t.halvings, 1);
    let mut kids = t.children(a);
    kids.sort_unstable();
    assert_eq!(kids, vec![(B, 1), (4, 1)]);
    assert_eq!(t.node(a).count, 2);
    assert_eq!(t.child(a, C), None);
    // C after A again: relearned (B and D halve to 0 and are freed).
    feed(&mut t, &[A, C, A]);
    assert_eq!(t.halvings, 2);
    assert_eq!(t.children(a), vec![(C, 1)]);
    let mut out = vec![];
    t.predict_next(1.0, &mut out);
    assert_eq!(out.iter().map(|p| p.file).collect::<Vec<_>>(), vec![C]);
    feed(&mut t, &[C, A]);
    assert_eq!(t.children(a), vec![(C, 2)]);
}

#[test]
fn no_room_after_halving_ignores_the_access() {
    // Two nodes per partition: A and B. Halving A 3→1, B 2→1 frees nothing,
    // so C after A is ignored.
    let mut t = Trie::new(2, 1, false);
    feed(&mut t, &[A, B, A, B, A, C]);
    let a = t.root(A).unwrap();
    assert_eq!((t.halvings, t.ignored), (1, 1));
    assert_eq!(t.children(a), vec![(B, 1)]);
    assert_eq!(t.node(a).count, 1);
}

#[test]
fn epcm_patterns_grow_one_node_per_occurrence() {
    // §2.3: "the patterns modeled grow in length by one node each time
    // they occur".
    let mut t = Trie::new(64, 45, true);
    let run: Vec<u64> = (1..=10).collect();
    for k in 1..=3u64 {
        feed(&mut t, &run);
        let grown: Vec<u64> = (1..=k + 1).collect();
        assert!(t.find(&grown).is_some(), "run {k}: {grown:?}");
        let longer: Vec<u64> = (1..=k + 2).collect();
        assert!(t.find(&longer).is_none(), "run {k}: {longer:?}");
    }
}

#[test]
fn pcm_keeps_every_pattern_up_to_its_order_at_once() {
    let mut t = Trie::new(64, 3, false);
    feed(&mut t, &(1..=10).collect::<Vec<u64>>());
    assert!(t.find(&[1, 2, 3, 4]).is_some());
    assert!(t.find(&[1, 2, 3, 4, 5]).is_none());
}

#[test]
fn epcm_predicts_the_learned_sequence_and_jumping_goes_past_the_partition() {
    // Partition 8, order 6: a chain is at most 6 files below a first-order
    // context; with jump=2 it continues in the partition of the last two.
    let run: Vec<u64> = (1..=30).collect();
    let mut t = Trie::new(8, 6, true);
    for _ in 0..60 {
        feed(&mut t, &run);
    }
    feed(&mut t, &[1, 2, 3]);
    let mut out = vec![];
    let mut scratch = vec![];
    t.predict_sequence(0.6, 0, 64, &mut out, &mut scratch);
    let files: Vec<u64> = out.iter().map(|p| p.file).collect();
    assert_eq!(files, vec![4, 5, 6, 7, 8, 9]);
    t.predict_sequence(0.6, 2, 20, &mut out, &mut scratch);
    let files: Vec<u64> = out.iter().map(|p| p.file).collect();
    assert_eq!(files, (4..=23).collect::<Vec<u64>>());
}

#[test]
fn last_successor_predicts_exactly_the_last_successor() {
    let mut p = FilePred::last_successor(LastSuccessorParams::default()).unwrap();
    assert!(p.file_event(A).is_empty());
    p.file_event(B);
    assert_eq!(p.file_event(A)[0].file, B);
    p.file_event(C); // A's successor is now C
    assert_eq!(p.file_event(A)[0].file, C);
    // Sequence so far A B A C A: C's successor is A; now C B replaces it.
    assert_eq!(p.file_event(C)[0].file, A);
    assert_eq!(p.file_event(B)[0].file, A, "B was followed by A");
    assert_eq!(p.file_event(C)[0].file, B, "C -> B replaced C -> A");
}

fn access(pid: u32, file: u64, page: u64) -> Access {
    Access {
        pid,
        file: FileId(file),
        page,
        blocks: 1,
        ..Access::default()
    }
}

struct Cached(Vec<u64>);
impl Residency for Cached {
    fn is_cached(&self, _: u32, _: u64) -> bool {
        false
    }
    fn is_page_cached(&self, f: FileId, _: u64) -> bool {
        self.0.contains(&f.0)
    }
}

fn run_policy(p: &mut FilePred, accesses: &[Access], res: &dyn Residency) -> Vec<Vec<(u64, u32)>> {
    let mut w = 0;
    accesses
        .iter()
        .map(|a| {
            let mut out: Vec<PrefetchRequest> = vec![];
            let mut sink = Sink::new(&mut out, &mut w, res);
            p.on_access(a, &Outcome::default(), &mut sink);
            out.iter()
                .map(|r| match r.target {
                    Target::File { file, page } => {
                        assert_eq!(page, 0);
                        (file.0, r.blocks)
                    }
                    Target::Block { .. } => panic!("file policies prefetch files"),
                })
                .collect()
        })
        .collect()
}

#[test]
fn policy_derives_file_events_and_prefetches_predicted_files_in_order() {
    let mut p = FilePred::epcm(EpcmParams {
        extent: "last".into(),
        ..EpcmParams::default()
    })
    .unwrap();
    // Files 1..=4, each read in two pages, by one process; three rounds.
    let round: Vec<Access> = (1..=4)
        .flat_map(|f| [access(7, f, 0), access(7, f, 1)])
        .collect();
    for _ in 0..3 {
        run_policy(&mut p, &round, &NoResidency);
    }
    // Second page reads are not events: 12 events so far.
    assert_eq!(p.stats().events, 12);
    let out = run_policy(&mut p, &round[..1], &NoResidency);
    // After file 1 (its 4th occurrence, its partition grown to 1-2-3-4):
    // 2 follows 3/3 times, 3 2/3, 4 1/3 (below 0.6), so EPCM predicts 2, 3
    // and asks for the part read before (2 pages).
    assert_eq!(out[0], vec![(2, 2), (3, 2)]);
    // Resident files are not asked for again.
    let mut q = p.clone();
    let out = run_policy(&mut q, &round[2..3], &Cached(vec![3]));
    assert_eq!(out[0], vec![(4, 2)]);
    let out = run_policy(&mut p, &round[2..3], &NoResidency);
    assert_eq!(out[0], vec![(3, 2), (4, 2)]);
    // Raw block accesses and writes are no file events.
    let before = p.stats().events;
    let mut w = access(7, 2, 0);
    w.op = Op::Write;
    run_policy(&mut p, &[access(7, 0, 5), w], &NoResidency);
    assert_eq!(p.stats().events, before);
}

#[test]
fn snapshot_restores_identical_predictions() {
    let seq: Vec<u64> = [1, 2, 3, 1, 4, 2, 3, 1, 2, 5, 3, 1, 2, 3]
        .iter()
        .copied()
        .cycle()
        .take(300)
        .collect();
    for spec in [
        "last-successor",
        "pcm:partition=6",
        "epcm:partition=8,order=6,jump=2",
    ] {
        let mut a = build(spec);
        for &f in &seq {
            a.file_event(f);
        }
        let snap = a.snapshot();
        let mut b = build(spec);
        b.restore(&snap).unwrap();
        assert_eq!(b.snapshot(), snap, "{spec}");
        for &f in seq.iter().take(50) {
            assert_eq!(a.file_event(f).to_vec(), b.file_event(f).to_vec(), "{spec}");
        }
        // Another kind or shape is refused, not mixed in.
        let mut other = build("epcm:partition=16,order=12");
        assert!(other.restore(&snap).is_err() || spec.starts_with("epcm:partition=16"));
    }
    assert!(matches!(
        build("last-successor").snapshot(),
        ModelSnapshot::LastSuccessor { .. }
    ));
    assert!(matches!(build("pcm").model(), Model::Trie(..)));
}

fn build(spec: &str) -> FilePred {
    let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
    match name {
        LS_NAME => FilePred::last_successor(LastSuccessorParams::parse(name, params).unwrap()),
        PCM_NAME => FilePred::pcm(PcmParams::parse(name, params).unwrap()),
        _ => FilePred::epcm(EpcmParams::parse(name, params).unwrap()),
    }
    .unwrap()
}

#[test]
fn bad_parameters_are_clear_errors() {
    let e = crate::build_policy("epcm:order=64")
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("order") && e.contains("less than the partition size"),
        "{e}"
    );
    let e = crate::build_policy("pcm:threshold=0")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("(0, 1]"), "{e}");
    let e = crate::build_policy("last-successor:extent=half")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("whole or last"), "{e}");
}

mod props {
    use super::super::codec;
    use super::super::trie::Trie;
    use super::*;
    use proptest::prelude::*;

    /// Structural invariants of a trie after any sequence.
    fn check(t: &Trie) {
        for (pi, p) in t.partitions.iter().enumerate() {
            let live = p.nodes.len() - p.free.len();
            assert!(live <= t.partition_size, "partition {pi}: {live} nodes");
            for (i, n) in p.nodes.iter().enumerate() {
                if n.depth == 0 {
                    continue;
                }
                assert!(n.depth <= t.max_depth);
                let mut c = n.child;
                while c != u16::MAX {
                    let k = &p.nodes[c as usize];
                    assert_eq!(usize::from(k.parent), i);
                    assert_eq!(k.depth, n.depth + 1);
                    // A halving between a context's occurrence and its
                    // successor can leave the child one above the parent
                    // (parent 3 -> 1, child 2 -> 1, then +1): never more.
                    assert!(k.count <= n.count + 1, "child count above its parent's + 1");
                    assert!(k.count > 0, "zero-count node left linked");
                    c = k.sibling;
                }
            }
        }
        for w in &t.walks {
            assert!(t.node(*w).depth > 0 && t.node(*w).depth < t.max_depth);
        }
    }

    proptest! {
        #[test]
        fn tries_stay_bounded_and_consistent(
            seq in prop::collection::vec(0u64..12, 0..400),
            size in 2usize..12,
            order in 1usize..8,
            lz in any::<bool>(),
        ) {
            let order = order.min(size - 1).max(1);
            let mut t = Trie::new(size, order, lz);
            for &s in &seq {
                t.observe(s);
            }
            check(&t);
            let mut out = vec![];
            let mut scratch = vec![];
            t.predict_sequence(0.5, 3, 40, &mut out, &mut scratch);
            prop_assert!(out.len() <= 40);
            t.predict_next(0.2, &mut out);
        }

        #[test]
        fn snapshots_round_trip_through_the_codec(seq in prop::collection::vec(0u64..20, 0..300)) {
            for spec in ["last-successor", "pcm:partition=6", "epcm:partition=8,order=6,jump=2"] {
                let mut a = build(spec);
                for &f in &seq {
                    a.file_event(f);
                }
                let blob = codec::encode(&a.snapshot());
                let mut b = build(spec);
                b.load_history(&blob).unwrap();
                prop_assert_eq!(b.snapshot(), a.snapshot());
            }
        }
    }
}

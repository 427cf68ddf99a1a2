//! Which application launches next: EPCM (epcm-usenix2001 §2.3) over
//! launches instead of files.
//!
//! A launch set is replayed at its program's exec, so a short program's
//! own first reads race its replay: `bench/results/daemon-ceiling.md`
//! measured that a prefetcher starting at the exec, even at no cost of
//! its own, captures at most 22-50% of the cold→hot headroom of `perl`,
//! `python3 -c pass`, `gcc` or `git status`, while the same set read
//! before the exec captures 57-95%. Before the exec means predicting it.
//! Scripts, builds and daily routines launch the same programs in the
//! same order, which is what a context model learns: each admitted
//! launch is one symbol of the model (the launch-set key, hashed), the
//! partitioned trie of [`outrider_core::policies::filepred::trie`] (the
//! one `epcm` runs over files) with the paper's parameters (§2.3, Fig.
//! 8: 64 nodes a partition, order 45, prefetch threshold 0.6 — above
//! 0.5 each level predicts one launch), going on past a pattern's end
//! by partition jumping (§6). At each launch the next [`LOOKAHEAD`]
//! predicted launches other than itself are its successors: their sets
//! are replayed, nearest first, right after the launch's own replay (not
//! beside it: the launch's own reads come first), as the launching user,
//! in the disk's idle time ([`crate::launchset::ReplayOptions::ahead`]);
//! a set asked for at an earlier launch is not asked for again until its
//! launch came.
//!
//! Launches the daemon does not see (repeated within the repeat window,
//! quieted in the kernel) are not symbols: a loop's `true` does not
//! break the sequence it runs in. Whether the prediction was right is
//! counted at the next launch the daemon sees.

use outrider_core::policies::filepred::codec;
use outrider_core::policies::filepred::model::{Model, TrieRule};
use outrider_core::policies::filepred::trie::{Prediction, Trie};
use rustc_hash::FxHashMap;

/// EPCM's partition size (§2.3, Fig. 8).
pub const PARTITION: usize = 64;
/// EPCM's model order (§2.3: 75-85% of the partition; Fig. 8: 45).
pub const ORDER: usize = 45;
/// Launches predicted at each launch at most, down EPCM's predicted
/// sequence (§2.3: the model predicts the next several symbols while
/// their likelihood stays above the threshold). A script puts short
/// programs of its own between the ones that read (`awk`, `rm`): with
/// the next launch alone, `perl`'s set in the day in miniature was asked
/// for only at the `rm` just before it, a millisecond ahead.
pub const LOOKAHEAD: usize = 3;
/// EPCM grows a pattern by one launch per occurrence (§2.3, Lempel-Ziv),
/// so after a routine seen once each context knows only the launch right
/// after it; partition jumping (§6, `epcm:jump=N` over files) goes on
/// from the context of the last two launches, known or predicted, and
/// predicts the routine's next [`LOOKAHEAD`] launches from one pass.
pub const JUMP: usize = 2;
/// Keys remembered by symbol at most (beyond it the table starts over
/// from the launches seen next).
const NAMES_MAX: usize = 4096;

/// Predictions and how they turned out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SuccessorStats {
    /// Launches predicted (a successor named at a launch).
    pub predicted: u64,
    /// The next launch seen was the one predicted.
    pub hits: u64,
    /// Another launch came next.
    pub misses: u64,
}

/// The model of launch order, the names of its symbols, the pending
/// prediction.
pub struct Successors {
    model: Model,
    names: FxHashMap<u64, String>,
    pending: Option<u64>,
    out: Vec<Prediction>,
    scratch: Vec<Prediction>,
    /// Learned something since [`Successors::snapshot`] was last taken.
    pub changed: bool,
    /// So far.
    pub stats: SuccessorStats,
}

/// The symbol of launch-set key `key`: FNV-1a (64 bits) of its bytes,
/// stable across restarts and versions, as the model saved in the store
/// needs (a hasher from a crate may change its output with its version,
/// and the saved model would name nothing until it learned again).
pub fn symbol(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Successors {
    /// An empty model predicting with likelihood `threshold` or more.
    pub fn new(threshold: f64) -> Successors {
        let rule = TrieRule {
            threshold,
            sequence: true,
            jump: JUMP,
            max_files: LOOKAHEAD + 1,
        };
        Successors {
            model: Model::Trie(Trie::new(PARTITION, ORDER, true), rule),
            names: FxHashMap::default(),
            pending: None,
            out: Vec::new(),
            scratch: Vec::new(),
            changed: false,
            stats: SuccessorStats::default(),
        }
    }

    /// Restore a model [`Successors::snapshot`] encoded; an error names
    /// what is wrong with the bytes.
    pub fn restore(&mut self, bytes: &[u8]) -> Result<(), String> {
        let snap = codec::decode(bytes)?;
        self.model.restore(&snap)
    }

    /// The model, encoded for the store.
    pub fn snapshot(&mut self) -> Vec<u8> {
        self.changed = false;
        codec::encode(&self.model.snapshot())
    }

    /// Key `key` names its symbol from now on (a stored set's key, so a
    /// model restored at start can name its predictions).
    pub fn name(&mut self, key: &str) {
        if self.names.len() >= NAMES_MAX {
            self.names.clear();
        }
        self.names.insert(symbol(key), key.to_string());
    }

    /// A launch of `key` started: score the pending prediction, learn
    /// the launch, and return the keys predicted to launch next, nearest
    /// first (at most [`LOOKAHEAD`], each once, not `key` itself); the
    /// first is the prediction scored at the next launch.
    pub fn launched(&mut self, key: &str) -> Vec<String> {
        let sym = symbol(key);
        match self.pending.take() {
            Some(p) if p == sym => self.stats.hits += 1,
            Some(_) => self.stats.misses += 1,
            None => {}
        }
        self.name(key);
        self.model.observe(sym);
        self.changed = true;
        self.model.predict(&mut self.out, &mut self.scratch);
        let mut next: Vec<u64> = Vec::with_capacity(LOOKAHEAD);
        for s in self.out.iter().map(|p| p.file) {
            if next.len() < LOOKAHEAD
                && s != sym
                && !next.contains(&s)
                && self.names.contains_key(&s)
            {
                next.push(s);
            }
        }
        self.pending = next.first().copied();
        self.stats.predicted += u64::from(self.pending.is_some());
        next.iter().map(|s| self.names[s].clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The symbols are FNV-1a's published values (the FNV test suite:
    /// "" and "a"), so a model saved by one version names the same
    /// launches in the next.
    #[test]
    fn symbols_are_fnv_1a_of_the_key() {
        assert_eq!(symbol(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(symbol("a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(symbol("gcc"), symbol("gxx"));
    }

    /// A routine run twice: on the second run each launch predicts the
    /// one after it (the last, the first: the routine started over after
    /// it), and every prediction is right.
    #[test]
    fn a_routine_seen_once_predicts_its_next_launch() {
        let mut s = Successors::new(0.6);
        let day = ["file", "perl", "python", "gcc"];
        for k in day {
            assert!(s.launched(k).is_empty(), "nothing is known to follow {k}");
        }
        assert_eq!(s.stats.predicted, 0);
        let got: Vec<Vec<String>> = day.iter().map(|k| s.launched(k)).collect();
        let want: [Vec<String>; 4] = [
            &["perl", "python", "gcc"][..],
            &["python", "gcc", "file"],
            &["gcc", "file", "perl"],
            &["file", "perl"],
        ]
        .map(|ks| ks.iter().map(|k| k.to_string()).collect::<Vec<_>>());
        // Nearest first. The last stops at `perl`: `file perl python`
        // was learned once in `file`'s two launches (Lempel-Ziv growth:
        // the first pass stored `file perl` alone), 1/2 < 0.6.
        assert_eq!(got, want, "the next launches, nearest first");
        assert_eq!((s.stats.predicted, s.stats.hits, s.stats.misses), (4, 3, 0));
        s.launched("vim");
        assert_eq!((s.stats.hits, s.stats.misses), (3, 1), "file was predicted");
    }

    /// Below the threshold nothing is predicted: after A, B and C each
    /// came once (1/3 < 0.6).
    #[test]
    fn an_unsure_context_predicts_nothing() {
        let mut s = Successors::new(0.6);
        for k in ["a", "b", "a", "c", "a", "d"] {
            s.launched(k);
        }
        assert!(s.launched("a").is_empty());
    }

    /// The model survives a restart: a fresh one restored from the
    /// snapshot, knowing the keys' names, predicts as the old one did.
    #[test]
    fn a_restored_model_predicts_as_before() {
        let mut s = Successors::new(0.6);
        for k in ["a", "b", "a", "b"] {
            s.launched(k);
        }
        let bytes = s.snapshot();
        assert!(!s.changed);
        let mut r = Successors::new(0.6);
        r.restore(&bytes).unwrap();
        assert!(
            r.launched("a").is_empty(),
            "names unknown: nothing to replay"
        );
        let mut r = Successors::new(0.6);
        r.restore(&bytes).unwrap();
        r.name("b");
        assert_eq!(r.launched("a"), ["b"]);
        assert!(r.restore(b"junk").is_err());
    }
}

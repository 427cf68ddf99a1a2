//! File-level predictive prefetching (Kroeger & Long, USENIX 2001, "Design
//! and Implementation of a Predictive File Prefetching Algorithm"):
//! `last-successor` (§2), `pcm` (§2.1–2.2) and `epcm` (§2.3), plus the
//! paper's §6 future work, *partition jumping* (`epcm:jump=N`).
//!
//! # File events
//!
//! The models learn the sequence of **whole-file access events** (the
//! paper's open/exec events, §3.1 "after each file access the model would
//! update its predictions"). The driver passes block/page accesses
//! ([`crate::Access`], which carries `file`); a file event is derived here,
//! with no change to the engine: **a read access of file F by process P is
//! a file event when P's previous read was of another file** (or P has read
//! nothing yet) — the first read after an open. See [`crate::event::FileEvent`].
//! Raw block accesses (`FileId::RAW`) and writes are not file events (a
//! file being written has nothing on disk to prefetch). Two opens of the
//! same file by one process with no other file read in between count once;
//! trace readers that see opens (`strace`) emit a first read per open, so
//! an interleaving of files is always seen.
//!
//! # Prefetching (the paper's "prefetch engine", §3)
//!
//! After each file event the model predicts files — last-successor the
//! successor, PCM the children of the highest-order context with
//! likelihood ≥ `threshold`, EPCM a sequence — and the policy asks, in the
//! predicted order, for each file not already resident or in flight (page 0
//! checked): its first `cap` bytes (`extent=whole`, the driver stops at the
//! file's end) or the pages read from it before (`extent=last`, falling
//! back to `cap` for a file never read). One [`crate::WindowId`] per file,
//! so `mis_prefetched_windows` counts wrongly predicted files.
//!
//! # Parameters
//!
//! The paper names partition size and model order (`ps/mo`: PCM 16/…, 32/…,
//! 64/…; EPCM 64/45 in Fig. 8, order ≈ 75–85 % of the partition size) and a
//! prefetch threshold (> 0.5 for EPCM so that each level predicts at most
//! one file); it gives no threshold values. Defaults here: PCM 64/2 at 0.1,
//! EPCM 64/45 at 0.6.

pub mod codec;
pub mod model;
pub mod trie;

#[cfg(test)]
mod tests;

use crate::event::{Access, FileId, Op, Outcome, Target};
use crate::policy::{BoxedPolicy, Interests, Policy, RunInfo, Sink};
use crate::size::ByteSize;
use crate::BLOCK_SIZE;
use model::{LastSuccessor, Model, ModelSnapshot, TrieRule};
use rustc_hash::FxHashMap;
use trie::{Prediction, Trie};

/// Registered name of the last-successor policy.
pub const LS_NAME: &str = "last-successor";
/// Registered name of PCM.
pub const PCM_NAME: &str = "pcm";
/// Registered name of EPCM.
pub const EPCM_NAME: &str = "epcm";
/// One-line description of last-successor.
pub const LS_SUMMARY: &str =
    "file prefetching: predict the file that followed the last access to this file (EPCM paper section 2)";
/// One-line description of PCM.
pub const PCM_SUMMARY: &str =
    "file prefetching with a partitioned context model (EPCM paper sections 2.1-2.2)";
/// One-line description of EPCM.
pub const EPCM_SUMMARY: &str =
    "file prefetching of predicted sequences, extended partitioned context model (EPCM paper section 2.3)";

/// Processes whose last file is remembered; beyond it the table is cleared
/// (a bound, not a cache: a forgotten process's next read counts as an event).
pub const MAX_TRACKED_PIDS: usize = 1 << 16;

crate::params! {
    /// `last-successor` parameters.
    pub struct LastSuccessorParams {
        /// what to prefetch of a predicted file: whole (up to cap) or last (the pages read from it before)
        extent: String = "whole".to_string(),
        /// most bytes prefetched per predicted file
        cap: ByteSize = ByteSize(1 << 20),
    }
}

crate::params! {
    /// `pcm` parameters.
    pub struct PcmParams {
        /// nodes per partition (section 2.2 static partition size; the paper tries 16, 32, 64)
        partition: usize = 64,
        /// model order m: longest context, in files (section 2.1)
        order: usize = 2,
        /// prefetch threshold: least likelihood (child count / context count) to prefetch (section 2.3)
        threshold: f64 = 0.1,
        /// what to prefetch of a predicted file: whole (up to cap) or last (the pages read from it before)
        extent: String = "whole".to_string(),
        /// most bytes prefetched per predicted file
        cap: ByteSize = ByteSize(1 << 20),
    }
}

crate::params! {
    /// `epcm` parameters.
    pub struct EpcmParams {
        /// nodes per partition (section 2.3, Fig. 8: 64)
        partition: usize = 64,
        /// model order, about 75-85% of the partition size (section 2.3, Fig. 8: 45)
        order: usize = 45,
        /// prefetch threshold, > 0.5 so each level predicts one file (section 2.3)
        threshold: f64 = 0.6,
        /// partition jumping: continue past a leaf from the context of the last N files (section 6 future work; 0 = off, the paper's EPCM)
        jump: usize = 0,
        /// most files one prediction may name (bounds chains and jumping)
        max_files: usize = 64,
        /// what to prefetch of a predicted file: whole (up to cap) or last (the pages read from it before)
        extent: String = "whole".to_string(),
        /// most bytes prefetched per predicted file
        cap: ByteSize = ByteSize(1 << 20),
    }
}

/// What to prefetch of a predicted file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
    /// From page 0, up to the cap (the driver stops at the file's end).
    Whole,
    /// The pages read from the file before (up to the cap).
    Last,
}

fn parse_extent(policy: &str, text: &str) -> Result<Extent, crate::ParamError> {
    match text {
        "whole" => Ok(Extent::Whole),
        "last" => Ok(Extent::Last),
        _ => Err(crate::ParamError::BadValue {
            policy: policy.into(),
            key: "extent".into(),
            value: text.into(),
            expected: "whole or last".into(),
        }),
    }
}

fn check_threshold(policy: &str, t: f64) -> Result<(), crate::ParamError> {
    if t > 0.0 && t <= 1.0 {
        Ok(())
    } else {
        Err(crate::ParamError::BadValue {
            policy: policy.into(),
            key: "threshold".into(),
            value: t.to_string(),
            expected: "a likelihood in (0, 1]".into(),
        })
    }
}

fn check_shape(policy: &str, partition: usize, order: usize) -> Result<(), crate::ParamError> {
    if !(2..=trie::MAX_PARTITION_SIZE).contains(&partition) {
        return Err(crate::ParamError::BadValue {
            policy: policy.into(),
            key: "partition".into(),
            value: partition.to_string(),
            expected: format!("2..={} nodes", trie::MAX_PARTITION_SIZE),
        });
    }
    if order == 0 || order >= partition {
        return Err(crate::ParamError::BadValue {
            policy: policy.into(),
            key: "order".into(),
            value: order.to_string(),
            expected: format!("1..{partition} (less than the partition size)"),
        });
    }
    Ok(())
}

/// Counts of next-access prediction, for accuracy reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PredictionStats {
    /// File events seen.
    pub events: u64,
    /// Events whose file was the model's most likely next file
    /// ([`Model::top`]) at the previous event.
    pub correct: u64,
}

impl PredictionStats {
    /// `correct / events` (0 when there were none).
    pub fn accuracy(&self) -> f64 {
        if self.events == 0 {
            0.0
        } else {
            self.correct as f64 / self.events as f64
        }
    }
}

/// A file-level predictive prefetcher around one [`Model`].
#[derive(Clone, Debug)]
pub struct FilePred {
    name: &'static str,
    model: Model,
    extent: Extent,
    cap_pages: u32,
    /// Last file read by each process.
    last_file: FxHashMap<u32, u64>,
    /// Pages read from each file (one past the highest page), for
    /// `extent=last`.
    pages_read: FxHashMap<u64, u32>,
    expected: Option<u64>,
    stats: PredictionStats,
    out: Vec<Prediction>,
    scratch: Vec<Prediction>,
}

impl FilePred {
    fn with(name: &'static str, model: Model, extent: Extent, cap: ByteSize) -> Self {
        FilePred {
            name,
            model,
            extent,
            cap_pages: cap.0.div_ceil(BLOCK_SIZE).clamp(1, u64::from(u32::MAX)) as u32,
            last_file: FxHashMap::default(),
            pages_read: FxHashMap::default(),
            expected: None,
            stats: PredictionStats::default(),
            out: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// `last-successor`.
    pub fn last_successor(p: LastSuccessorParams) -> Result<Self, crate::ParamError> {
        let extent = parse_extent(LS_NAME, &p.extent)?;
        Ok(Self::with(
            LS_NAME,
            Model::LastSuccessor(LastSuccessor::default()),
            extent,
            p.cap,
        ))
    }

    /// `pcm`.
    pub fn pcm(p: PcmParams) -> Result<Self, crate::ParamError> {
        let extent = parse_extent(PCM_NAME, &p.extent)?;
        check_threshold(PCM_NAME, p.threshold)?;
        check_shape(PCM_NAME, p.partition, p.order)?;
        let rule = TrieRule {
            threshold: p.threshold,
            sequence: false,
            jump: 0,
            max_files: usize::MAX,
        };
        Ok(Self::with(
            PCM_NAME,
            Model::Trie(Trie::new(p.partition, p.order, false), rule),
            extent,
            p.cap,
        ))
    }

    /// `epcm`.
    pub fn epcm(p: EpcmParams) -> Result<Self, crate::ParamError> {
        let extent = parse_extent(EPCM_NAME, &p.extent)?;
        check_threshold(EPCM_NAME, p.threshold)?;
        check_shape(EPCM_NAME, p.partition, p.order)?;
        if p.jump > trie::MAX_JUMP {
            return Err(crate::ParamError::BadValue {
                policy: EPCM_NAME.into(),
                key: "jump".into(),
                value: p.jump.to_string(),
                expected: format!("0..={} files", trie::MAX_JUMP),
            });
        }
        let rule = TrieRule {
            threshold: p.threshold,
            sequence: true,
            jump: p.jump,
            max_files: p.max_files.max(1),
        };
        Ok(Self::with(
            EPCM_NAME,
            Model::Trie(Trie::new(p.partition, p.order, true), rule),
            extent,
            p.cap,
        ))
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Next-access prediction counts so far.
    pub fn stats(&self) -> PredictionStats {
        self.stats
    }

    /// A plain-data copy of the learned model.
    pub fn snapshot(&self) -> ModelSnapshot {
        self.model.snapshot()
    }

    /// Replace the learned model by a saved one (same kind and shape).
    pub fn restore(&mut self, snap: &ModelSnapshot) -> Result<(), String> {
        self.model.restore(snap)
    }

    /// Feed one file event: score the previous prediction, learn, predict.
    /// Returns the files to prefetch, in order.
    pub fn file_event(&mut self, file: u64) -> &[Prediction] {
        self.stats.events += 1;
        if self.expected == Some(file) {
            self.stats.correct += 1;
        }
        self.model.observe(file);
        self.expected = self.model.top();
        self.model.predict(&mut self.out, &mut self.scratch);
        &self.out
    }

    /// Is this access a file event? (Updates the per-process last file.)
    fn is_file_event(&mut self, a: &Access) -> bool {
        if a.file == FileId::RAW || a.op != Op::Read {
            return false;
        }
        if self.last_file.len() >= MAX_TRACKED_PIDS && !self.last_file.contains_key(&a.pid) {
            self.last_file.clear();
        }
        self.last_file.insert(a.pid, a.file.0) != Some(a.file.0)
    }
}

impl Policy for FilePred {
    fn name(&self) -> &str {
        self.name
    }

    fn on_access(&mut self, a: &Access, _o: &Outcome, sink: &mut Sink<'_>) {
        if a.file != FileId::RAW && a.op == Op::Read {
            let end = u32::try_from(a.end_page()).unwrap_or(u32::MAX);
            let e = self.pages_read.entry(a.file.0).or_insert(0);
            *e = (*e).max(end);
        }
        if !self.is_file_event(a) {
            return;
        }
        self.file_event(a.file.0);
        for i in 0..self.out.len() {
            let f = self.out[i].file;
            if f == a.file.0 || sink.is_page_cached(FileId(f), 0) {
                continue;
            }
            let pages = match self.extent {
                Extent::Whole => self.cap_pages,
                Extent::Last => self
                    .pages_read
                    .get(&f)
                    .copied()
                    .unwrap_or(self.cap_pages)
                    .min(self.cap_pages),
            };
            let w = sink.new_window();
            sink.prefetch(
                Target::File {
                    file: FileId(f),
                    page: 0,
                },
                pages,
                w,
            );
        }
    }

    fn interests(&self) -> Interests {
        Interests::ACCESSES_ONLY
    }

    fn on_start(&mut self, info: &RunInfo<'_>) {
        // Learned history (model, pages read) is kept; which file each
        // process read last is per run.
        if !info.budget_changed {
            self.last_file.clear();
        }
    }

    fn save_history(&self) -> Option<Vec<u8>> {
        Some(codec::encode(&self.model.snapshot()))
    }

    fn load_history(&mut self, data: &[u8]) -> Result<(), String> {
        self.model.restore(&codec::decode(data)?)
    }

    fn memory_bytes(&self) -> usize {
        self.model.memory_bytes() + self.pages_read.capacity() * 16 + self.last_file.capacity() * 16
    }

    fn box_clone(&self) -> BoxedPolicy {
        Box::new(self.clone())
    }
}

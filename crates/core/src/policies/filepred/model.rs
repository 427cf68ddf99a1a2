//! The three file-access models behind one type, and their plain-data
//! snapshots (what `outrider-store` saves; core itself does no I/O).
//!
//! - [`LastSuccessor`] (EPCM §2): an access to A predicts the file that
//!   followed the last access to A. One entry per file, O(n).
//! - PCM (§2.2) and EPCM (§2.3): a [`Trie`]; EPCM grows patterns one node
//!   per occurrence and predicts a sequence.

use super::trie::{Ctx, Node, Partition, Prediction, Trie};
use rustc_hash::FxHashMap;

/// EPCM §2 last-successor model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LastSuccessor {
    /// File → the file that followed its last access.
    pub successor: FxHashMap<u64, u64>,
    /// The last file seen.
    pub last: Option<u64>,
}

impl LastSuccessor {
    /// Learn one event: it is the successor of the previous one.
    pub fn observe(&mut self, file: u64) {
        if let Some(prev) = self.last {
            self.successor.insert(prev, file);
        }
        self.last = Some(file);
    }

    /// The predicted next file.
    pub fn predict(&self) -> Option<u64> {
        self.last.and_then(|l| self.successor.get(&l).copied())
    }
}

/// Which prediction rule a trie model uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrieRule {
    /// Minimum likelihood to predict a file (§2.3 "prefetch threshold").
    pub threshold: f64,
    /// EPCM: predict a sequence down the descendants; PCM: the next file(s).
    pub sequence: bool,
    /// Partition jumping depth (0 = off, the paper's EPCM).
    pub jump: usize,
    /// Most files one prediction may name.
    pub max_files: usize,
}

/// One of the three models.
#[derive(Clone, Debug)]
pub enum Model {
    /// Last successor.
    LastSuccessor(LastSuccessor),
    /// PCM or EPCM.
    Trie(Trie, TrieRule),
}

impl Model {
    /// Learn one file event.
    pub fn observe(&mut self, file: u64) {
        match self {
            Model::LastSuccessor(m) => m.observe(file),
            Model::Trie(t, _) => t.observe(file),
        }
    }

    /// The files to prefetch now, in the order they are expected.
    pub fn predict(&self, out: &mut Vec<Prediction>, scratch: &mut Vec<Prediction>) {
        out.clear();
        match self {
            Model::LastSuccessor(m) => {
                if let Some(f) = m.predict() {
                    out.push(Prediction {
                        file: f,
                        likelihood: 1.0,
                    });
                }
            }
            Model::Trie(t, r) if r.sequence => {
                t.predict_sequence(r.threshold, r.jump, r.max_files, out, scratch)
            }
            Model::Trie(t, r) => {
                t.predict_next(r.threshold, out);
                out.truncate(r.max_files);
            }
        }
    }

    /// The single most likely next file (for next-access accuracy).
    pub fn top(&self) -> Option<u64> {
        match self {
            Model::LastSuccessor(m) => m.predict(),
            Model::Trie(t, _) => t.top(),
        }
    }

    /// Bytes of model state.
    pub fn memory_bytes(&self) -> usize {
        match self {
            Model::LastSuccessor(m) => m.successor.capacity() * 24,
            Model::Trie(t, _) => t.memory_bytes(),
        }
    }

    /// A plain-data copy of the learned state.
    pub fn snapshot(&self) -> ModelSnapshot {
        match self {
            Model::LastSuccessor(m) => {
                let mut pairs: Vec<(u64, u64)> =
                    m.successor.iter().map(|(&a, &b)| (a, b)).collect();
                pairs.sort_unstable();
                ModelSnapshot::LastSuccessor {
                    last: m.last,
                    successors: pairs,
                }
            }
            Model::Trie(t, _) => ModelSnapshot::Trie(TrieSnapshot {
                partition_size: t.partition_size as u32,
                max_depth: u32::from(t.max_depth),
                lz: t.lz,
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| PartitionSnapshot {
                        nodes: p
                            .nodes
                            .iter()
                            .map(|n| NodeSnapshot {
                                sym: n.sym,
                                count: n.count,
                                depth: n.depth,
                                parent: n.parent,
                                child: n.child,
                                sibling: n.sibling,
                            })
                            .collect(),
                        free: p.free.clone(),
                    })
                    .collect(),
                walks: t.walks.iter().map(|c| (c.part, c.node)).collect(),
                recent: t.recent.clone(),
            }),
        }
    }

    /// Replace the learned state with a snapshot. The snapshot must be of
    /// the same kind (and, for tries, the same partition size, order and
    /// growth rule) as this model; the prediction rule is kept.
    pub fn restore(&mut self, snap: &ModelSnapshot) -> Result<(), String> {
        match (self, snap) {
            (Model::LastSuccessor(m), ModelSnapshot::LastSuccessor { last, successors }) => {
                m.last = *last;
                m.successor = successors.iter().copied().collect();
                Ok(())
            }
            (Model::Trie(t, _), ModelSnapshot::Trie(s)) => {
                if s.partition_size as usize != t.partition_size
                    || s.max_depth != u32::from(t.max_depth)
                    || s.lz != t.lz
                {
                    return Err(format!(
                        "saved model has partition size {} / order {} ({}), this one {} / {} ({})",
                        s.partition_size,
                        s.max_depth.saturating_sub(1),
                        if s.lz { "EPCM" } else { "PCM" },
                        t.partition_size,
                        t.max_depth - 1,
                        if t.lz { "EPCM" } else { "PCM" }
                    ));
                }
                let parts = s
                    .partitions
                    .iter()
                    .map(|p| Partition {
                        nodes: p
                            .nodes
                            .iter()
                            .map(|n| Node {
                                sym: n.sym,
                                count: n.count,
                                depth: n.depth,
                                parent: n.parent,
                                child: n.child,
                                sibling: n.sibling,
                            })
                            .collect(),
                        free: p.free.clone(),
                    })
                    .collect();
                let walks = s
                    .walks
                    .iter()
                    .map(|&(part, node)| Ctx { part, node })
                    .collect();
                *t = Trie::from_parts(
                    t.partition_size,
                    t.max_depth,
                    t.lz,
                    parts,
                    walks,
                    s.recent.clone(),
                )?;
                Ok(())
            }
            _ => Err("saved model is of another kind".into()),
        }
    }
}

/// Plain-data state of a model, for persistence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelSnapshot {
    /// Last successor: the successor table and the last file.
    LastSuccessor {
        /// Last file seen.
        last: Option<u64>,
        /// (file, successor), sorted.
        successors: Vec<(u64, u64)>,
    },
    /// PCM or EPCM.
    Trie(TrieSnapshot),
}

/// Plain-data state of a trie.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrieSnapshot {
    /// Nodes per partition.
    pub partition_size: u32,
    /// Model order + 1.
    pub max_depth: u32,
    /// EPCM growth rule.
    pub lz: bool,
    /// Every partition's node slab.
    pub partitions: Vec<PartitionSnapshot>,
    /// Live contexts (partition, node), deepest first.
    pub walks: Vec<(u32, u16)>,
    /// Recent events (partition jumping), oldest first.
    pub recent: Vec<u64>,
}

/// One partition's slab.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionSnapshot {
    /// Nodes, index 0 the root; free slots have depth 0.
    pub nodes: Vec<NodeSnapshot>,
    /// Free slot indices.
    pub free: Vec<u16>,
}

/// One node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeSnapshot {
    /// File.
    pub sym: u64,
    /// Count.
    pub count: u32,
    /// Depth (0 = free slot).
    pub depth: u16,
    /// Parent index (65535 = none).
    pub parent: u16,
    /// First child index (65535 = none).
    pub child: u16,
    /// Next sibling index (65535 = none).
    pub sibling: u16,
}

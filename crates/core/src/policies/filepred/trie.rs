//! The partitioned context-model trie shared by PCM and EPCM (EPCM §2.1–2.3).
//!
//! A context model stores every pattern of file events up to length
//! `max_depth` (= model order m + 1: a context of m files and the file that
//! followed it) in a trie whose nodes count how often their pattern was seen
//! (§2.1, Fig. 2). PCM cuts the trie into **partitions**, one per file: the
//! first-order node of that file and all its descendants, at most
//! `partition_size` nodes each (§2.2, Fig. 3), so space is O(files).
//!
//! **Update.** Every event `s` continues the *walks* in progress (one per
//! recent event, each the node of a pattern ending at the previous event):
//! the walk's child `s` is incremented or created. A walk stops when its
//! node reaches `max_depth`. With `lz` (EPCM, §2.3) a walk also stops right
//! after it *created* a node: a pattern grows by one node per occurrence,
//! as Lempel–Ziv builds its dictionary. Then a new walk starts at the root
//! of `s`'s partition, whose count is incremented.
//!
//! **Full partition (§2.2).** When a node is needed in a full partition,
//! every count in it is halved (integer division) and nodes whose count
//! falls to zero are freed with their subtrees. If there is still no room
//! the access is ignored for that walk (the walk ends). Walks whose node was
//! freed end too. Departure: the partition's root is never freed (it names
//! the partition), it may sit at count 0 until its file is seen again.
//!
//! **Likelihood.** The walks are the *live contexts*: the patterns ending
//! at the last event. A live context's last occurrence has not been
//! followed yet, so a child's likelihood is `child.count / (context.count −
//! 1)` — which is how Fig. 2 gets 0.5 for `A` and `C` after `CA` (count 3).
//! EPCM predicts down the descendants with the likelihood of descendant `d`
//! being `d.count` over the same denominator (Fig. 4: `ORM` at 34/37).
//!
//! **Partition jumping** (the paper's §6 future work; `jump = n`, 0 = off):
//! when an EPCM chain reaches a node without children, the last `n`
//! predicted-or-seen files are looked up as an n-order context (the
//! partition of the oldest, down its children); if found, the chain
//! continues there with likelihoods multiplied (`so far × child / context`),
//! trying n−1, … 1 symbols when the longer context is unknown. Every chain is
//! bounded by `max_files`.

use rustc_hash::FxHashMap;

/// "No node" in the 16-bit links (partitions hold at most 65535 nodes).
const NIL: u16 = u16::MAX;

/// Marks a walk ended by a halving within the current event.
const DEAD: u32 = u32::MAX;

/// Largest partition size a trie accepts.
pub const MAX_PARTITION_SIZE: usize = 65_534;

/// Longest run of recent events remembered for partition jumping.
pub const MAX_JUMP: usize = 16;

/// One trie node: a file symbol, the count of its pattern, its links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    /// The file.
    pub sym: u64,
    /// Times the pattern root..this node was seen (0 on a free slot).
    pub count: u32,
    /// Depth: 1 for the partition root (a first-order node); 0 = free slot.
    pub depth: u16,
    /// Parent node (`NIL` for the root).
    pub parent: u16,
    /// First child.
    pub child: u16,
    /// Next sibling.
    pub sibling: u16,
}

const FREE: Node = Node {
    sym: 0,
    count: 0,
    depth: 0,
    parent: NIL,
    child: NIL,
    sibling: NIL,
};

/// One partition: the first-order node of one file (index 0) and its
/// descendants, in a slab of at most `partition_size` nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Partition {
    /// Node slab; index 0 is the root.
    pub nodes: Vec<Node>,
    /// Free slots in `nodes`.
    pub free: Vec<u16>,
}

impl Partition {
    fn live(&self) -> usize {
        self.nodes.len() - self.free.len()
    }
}

/// A live context: a node in a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ctx {
    /// Partition index.
    pub part: u32,
    /// Node index within the partition.
    pub node: u16,
}

/// The partitioned trie (PCM and EPCM).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trie {
    /// Nodes per partition (§2.2 "static partition size").
    pub partition_size: usize,
    /// Longest pattern kept: model order + 1.
    pub max_depth: u16,
    /// EPCM growth: one new node per pattern occurrence (§2.3).
    pub lz: bool,
    /// Partitions, in order of first appearance of their file.
    pub partitions: Vec<Partition>,
    /// File → partition.
    pub index: FxHashMap<u64, u32>,
    /// Live contexts, deepest (oldest walk) first.
    pub walks: Vec<Ctx>,
    /// The last few events, oldest first (at most [`MAX_JUMP`]), for
    /// partition jumping.
    pub recent: Vec<u64>,
    /// Halvings performed (for tests and reports).
    pub halvings: u64,
    /// Accesses ignored because a full partition had no room after halving.
    pub ignored: u64,
    spare: Vec<Ctx>,
}

/// A predicted file and its likelihood.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// The file.
    pub file: u64,
    /// Estimated likelihood that it is accessed (next, or in the predicted
    /// sequence).
    pub likelihood: f64,
}

impl Trie {
    /// An empty trie. `partition_size` is clamped to 2..=[`MAX_PARTITION_SIZE`],
    /// `order` to at least 1.
    pub fn new(partition_size: usize, order: usize, lz: bool) -> Self {
        Trie {
            partition_size: partition_size.clamp(2, MAX_PARTITION_SIZE),
            max_depth: (order.clamp(1, MAX_PARTITION_SIZE) + 1) as u16,
            lz,
            partitions: Vec::new(),
            index: FxHashMap::default(),
            walks: Vec::new(),
            recent: Vec::new(),
            halvings: 0,
            ignored: 0,
            spare: Vec::new(),
        }
    }

    /// The node at `c`.
    pub fn node(&self, c: Ctx) -> &Node {
        &self.partitions[c.part as usize].nodes[c.node as usize]
    }

    /// The root of `file`'s partition, if it has one.
    pub fn root(&self, file: u64) -> Option<Ctx> {
        self.index.get(&file).map(|&p| Ctx { part: p, node: 0 })
    }

    /// The child of `c` whose symbol is `sym`.
    pub fn child(&self, c: Ctx, sym: u64) -> Option<Ctx> {
        let p = &self.partitions[c.part as usize];
        let mut i = p.nodes[c.node as usize].child;
        while i != NIL {
            let n = &p.nodes[i as usize];
            if n.sym == sym {
                return Some(Ctx {
                    part: c.part,
                    node: i,
                });
            }
            i = n.sibling;
        }
        None
    }

    /// Children of `c` as (symbol, count), in link order.
    pub fn children(&self, c: Ctx) -> Vec<(u64, u32)> {
        let p = &self.partitions[c.part as usize];
        let mut out = Vec::new();
        let mut i = p.nodes[c.node as usize].child;
        while i != NIL {
            let n = &p.nodes[i as usize];
            out.push((n.sym, n.count));
            i = n.sibling;
        }
        out
    }

    /// The node of a whole pattern (first symbol = partition), if present.
    pub fn find(&self, pattern: &[u64]) -> Option<Ctx> {
        let (first, rest) = pattern.split_first()?;
        let mut c = self.root(*first)?;
        for &s in rest {
            c = self.child(c, s)?;
        }
        Some(c)
    }

    /// The child of `c` with the highest count (first in link order on ties).
    fn best_child(&self, c: Ctx) -> Option<(Ctx, u32)> {
        let p = &self.partitions[c.part as usize];
        let mut i = p.nodes[c.node as usize].child;
        let mut best: Option<(Ctx, u32)> = None;
        while i != NIL {
            let n = &p.nodes[i as usize];
            if best.is_none_or(|(_, b)| n.count > b) {
                best = Some((
                    Ctx {
                        part: c.part,
                        node: i,
                    },
                    n.count,
                ));
            }
            i = n.sibling;
        }
        best
    }

    fn partition_of(&mut self, sym: u64) -> u32 {
        if let Some(&p) = self.index.get(&sym) {
            return p;
        }
        let p = self.partitions.len() as u32;
        let mut part = Partition::default();
        part.nodes.push(Node {
            sym,
            count: 0,
            depth: 1,
            ..FREE
        });
        self.partitions.push(part);
        self.index.insert(sym, p);
        p
    }

    /// §2.2: halve every count of partition `part`; free zero-count nodes
    /// (and their subtrees) except the root.
    fn halve(&mut self, part: u32) {
        self.halvings += 1;
        let p = &mut self.partitions[part as usize];
        for n in p.nodes.iter_mut().filter(|n| n.depth > 0) {
            n.count /= 2;
        }
        // Unlink zero-count children from every live parent, then free
        // every node no longer reachable from the root.
        for i in 0..p.nodes.len() {
            if p.nodes[i].depth == 0 {
                continue;
            }
            let mut prev = NIL;
            let mut c = p.nodes[i].child;
            while c != NIL {
                let next = p.nodes[c as usize].sibling;
                if p.nodes[c as usize].count == 0 {
                    if prev == NIL {
                        p.nodes[i].child = next;
                    } else {
                        p.nodes[prev as usize].sibling = next;
                    }
                    p.nodes[c as usize].parent = NIL;
                } else {
                    prev = c;
                }
                c = next;
            }
        }
        let mut reachable = vec![false; p.nodes.len()];
        let mut stack = vec![0u16];
        while let Some(i) = stack.pop() {
            reachable[i as usize] = true;
            let mut c = p.nodes[i as usize].child;
            while c != NIL {
                stack.push(c);
                c = p.nodes[c as usize].sibling;
            }
        }
        for (i, r) in reachable.iter().enumerate() {
            if !r && p.nodes[i].depth > 0 {
                p.nodes[i] = FREE;
                p.free.push(i as u16);
            }
        }
        // Walks standing on a freed node end here, before the slot can be
        // reused for a node of this event: the event's old walks (marked
        // dead) and the ones already continued (dropped).
        let nodes = &p.nodes;
        let freed = |x: &Ctx| x.part == part && nodes[x.node as usize].depth == 0;
        for x in self.walks.iter_mut() {
            if freed(x) {
                x.part = DEAD;
            }
        }
        self.spare.retain(|x| !freed(x));
    }

    /// Create child `sym` of `c` with count 1. Halves a full partition
    /// first; `None` if there is still no room or `c` itself was freed.
    fn add_child(&mut self, c: Ctx, sym: u64) -> Option<Ctx> {
        if self.partitions[c.part as usize].live() >= self.partition_size {
            self.halve(c.part);
            let p = &self.partitions[c.part as usize];
            if p.nodes[c.node as usize].depth == 0 || p.live() >= self.partition_size {
                self.ignored += 1;
                return None;
            }
        }
        let p = &mut self.partitions[c.part as usize];
        let parent = p.nodes[c.node as usize];
        let node = Node {
            sym,
            count: 1,
            depth: parent.depth + 1,
            parent: c.node,
            child: NIL,
            sibling: parent.child,
        };
        let i = match p.free.pop() {
            Some(i) => {
                p.nodes[i as usize] = node;
                i
            }
            None => {
                p.nodes.push(node);
                (p.nodes.len() - 1) as u16
            }
        };
        p.nodes[c.node as usize].child = i;
        Some(Ctx {
            part: c.part,
            node: i,
        })
    }

    /// Learn one file event.
    pub fn observe(&mut self, sym: u64) {
        // `self.walks` holds this event's old walks, `self.spare` the
        // continued ones; a halving prunes both (see `halve`).
        self.spare.clear();
        let mut k = 0;
        while k < self.walks.len() {
            let w = self.walks[k];
            k += 1;
            if w.part == DEAD {
                continue;
            }
            let (c, created) = match self.child(w, sym) {
                Some(c) => {
                    let n = &mut self.partitions[c.part as usize].nodes[c.node as usize];
                    n.count = n.count.saturating_add(1);
                    (c, false)
                }
                None => match self.add_child(w, sym) {
                    Some(c) => (c, true),
                    None => continue,
                },
            };
            if self.node(c).depth < self.max_depth && !(created && self.lz) {
                self.spare.push(c);
            }
        }
        let part = self.partition_of(sym);
        let root = &mut self.partitions[part as usize].nodes[0];
        root.count = root.count.saturating_add(1);
        if self.max_depth > 1 {
            self.spare.push(Ctx { part, node: 0 });
        }
        std::mem::swap(&mut self.walks, &mut self.spare);
        if self.recent.len() == MAX_JUMP {
            self.recent.remove(0);
        }
        self.recent.push(sym);
    }

    /// Denominator of a live context's likelihoods: its count less the
    /// occurrence not yet followed (at least 1).
    fn live_denominator(&self, c: Ctx) -> f64 {
        f64::from(self.node(c).count.saturating_sub(1).max(1))
    }

    /// PCM (§2.2): the next files predicted by the highest-order live
    /// context that has children, with likelihood ≥ `threshold`, most
    /// likely first.
    pub fn predict_next(&self, threshold: f64, out: &mut Vec<Prediction>) {
        out.clear();
        let Some(&c) = self.walks.iter().find(|&&c| self.node(c).child != NIL) else {
            return;
        };
        let denom = self.live_denominator(c);
        let p = &self.partitions[c.part as usize];
        let mut i = p.nodes[c.node as usize].child;
        while i != NIL {
            let n = &p.nodes[i as usize];
            let l = f64::from(n.count) / denom;
            if l >= threshold {
                out.push(Prediction {
                    file: n.sym,
                    likelihood: l,
                });
            }
            i = n.sibling;
        }
        out.sort_by(|a, b| b.likelihood.total_cmp(&a.likelihood));
    }

    /// The single most likely next file: the highest-count child of the
    /// highest-order live context that has children (threshold ignored).
    pub fn top(&self) -> Option<u64> {
        let c = self.walks.iter().find(|&&c| self.node(c).child != NIL)?;
        self.best_child(*c).map(|(b, _)| self.node(b).sym)
    }

    /// EPCM (§2.3): from context `c` with likelihood denominator `denom`,
    /// follow the most likely descendant while `count / denom` stays at
    /// least `threshold`; with `jump > 0`, continue past leaves by partition
    /// jumping. `seen` are the events before the chain (oldest first).
    /// Appends at most `max_files` predictions.
    #[allow(clippy::too_many_arguments)]
    pub fn chain_from(
        &self,
        c: Ctx,
        denom: f64,
        threshold: f64,
        jump: usize,
        max_files: usize,
        seen: &[u64],
        out: &mut Vec<Prediction>,
    ) {
        let start = out.len();
        let mut cur = c;
        let mut denom = denom;
        let mut scale = 1.0;
        while out.len() - start < max_files {
            match self.best_child(cur) {
                Some((b, count)) => {
                    let l = scale * f64::from(count) / denom;
                    if l < threshold {
                        return;
                    }
                    out.push(Prediction {
                        file: self.node(b).sym,
                        likelihood: l,
                    });
                    cur = b;
                }
                None => {
                    if jump == 0 {
                        return;
                    }
                    // Partition jumping: the last n symbols of seen + chain.
                    let Some(j) = self.jump_context(seen, &out[start..], jump) else {
                        return;
                    };
                    scale = out[start..].last().map_or(1.0, |p| p.likelihood);
                    denom = f64::from(self.node(j).count.max(1));
                    cur = j;
                }
            }
        }
    }

    /// The longest known context among the last `n`..1 symbols of
    /// `seen ++ chain` that has children.
    fn jump_context(&self, seen: &[u64], chain: &[Prediction], n: usize) -> Option<Ctx> {
        let total = seen.len() + chain.len();
        let at = |i: usize| {
            if i < seen.len() {
                seen[i]
            } else {
                chain[i - seen.len()].file
            }
        };
        for k in (1..=n.min(total)).rev() {
            let first = total - k;
            let Some(mut c) = self.root(at(first)) else {
                continue;
            };
            let mut ok = true;
            for i in first + 1..total {
                match self.child(c, at(i)) {
                    Some(x) => c = x,
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok && self.node(c).child != NIL {
                return Some(c);
            }
        }
        None
    }

    /// EPCM (§2.3): the predicted sequence of upcoming files. Every live
    /// context is a candidate (shallowest first); the longest chain wins,
    /// ties going to the deeper (more specific) context. Chains are bounded
    /// by `max_files`.
    pub fn predict_sequence(
        &self,
        threshold: f64,
        jump: usize,
        max_files: usize,
        out: &mut Vec<Prediction>,
        scratch: &mut Vec<Prediction>,
    ) {
        out.clear();
        for &c in self.walks.iter().rev() {
            let depth = usize::from(self.node(c).depth);
            let potential = if jump == 0 {
                usize::from(self.max_depth) - depth
            } else {
                max_files
            };
            if potential < out.len().max(1) || out.len() >= max_files {
                break;
            }
            scratch.clear();
            let denom = self.live_denominator(c);
            self.chain_from(c, denom, threshold, jump, max_files, &self.recent, scratch);
            if !scratch.is_empty() && scratch.len() >= out.len() {
                std::mem::swap(out, scratch);
            }
        }
    }

    /// Bytes of model state (approximate: slabs and index).
    pub fn memory_bytes(&self) -> usize {
        self.partitions
            .iter()
            .map(|p| p.nodes.capacity() * std::mem::size_of::<Node>() + p.free.capacity() * 2)
            .sum::<usize>()
            + self.partitions.capacity() * std::mem::size_of::<Partition>()
            + self.index.capacity() * 16
    }

    /// Live nodes in all partitions.
    pub fn live_nodes(&self) -> usize {
        self.partitions.iter().map(|p| p.live()).sum()
    }

    /// Rebuild the private scratch state after loading (snapshots).
    pub fn from_parts(
        partition_size: usize,
        max_depth: u16,
        lz: bool,
        partitions: Vec<Partition>,
        walks: Vec<Ctx>,
        recent: Vec<u64>,
    ) -> Result<Self, String> {
        if !(2..=MAX_PARTITION_SIZE).contains(&partition_size) || max_depth < 2 {
            return Err(format!(
                "partition size {partition_size} / depth {max_depth} out of range"
            ));
        }
        let mut index = FxHashMap::default();
        for (i, p) in partitions.iter().enumerate() {
            let Some(root) = p.nodes.first() else {
                return Err(format!("partition {i} has no root"));
            };
            if root.depth != 1 || p.nodes.len() > MAX_PARTITION_SIZE {
                return Err(format!("partition {i}: bad root or size"));
            }
            for (j, n) in p.nodes.iter().enumerate() {
                let bad = |l: u16| l != NIL && usize::from(l) >= p.nodes.len();
                if bad(n.parent) || bad(n.child) || bad(n.sibling) || (j > 0 && n.depth == 1) {
                    return Err(format!("partition {i} node {j}: link out of range"));
                }
            }
            if p.free
                .iter()
                .any(|&f| usize::from(f) >= p.nodes.len() || f == 0)
            {
                return Err(format!("partition {i}: bad free list"));
            }
            if index.insert(root.sym, i as u32).is_some() {
                return Err(format!("partition {i}: file {} twice", root.sym));
            }
        }
        for w in &walks {
            let ok = partitions
                .get(w.part as usize)
                .and_then(|p| p.nodes.get(w.node as usize))
                .is_some_and(|n| n.depth > 0);
            if !ok {
                return Err("live context out of range".into());
            }
        }
        if recent.len() > MAX_JUMP {
            return Err("too many recent events".into());
        }
        Ok(Trie {
            partition_size,
            max_depth,
            lz,
            partitions,
            index,
            walks,
            recent,
            halvings: 0,
            ignored: 0,
            spare: Vec::new(),
        })
    }
}

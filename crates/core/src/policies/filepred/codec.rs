//! Binary encoding of [`ModelSnapshot`]s: what [`crate::Policy::save_history`]
//! returns for the file-prediction policies and `outrider-store` keeps in
//! its `models.data` blob (pure: core does no I/O).
//!
//! Little-endian, versioned, and decoded defensively: every length is
//! checked against the bytes that remain before anything is allocated, so a
//! corrupted blob is an error, never a panic or a huge allocation.
//!
//! ```text
//! "OMDL" u8 format (1) u8 kind (1 = last-successor, 2 = trie)
//! kind 1: u8 has_last, u64 last, u64 n, n × (u64 file, u64 successor)
//! kind 2: u32 partition_size, u32 max_depth, u8 lz,
//!         u64 partitions, per partition: u64 nodes,
//!             nodes × (u64 sym, u32 count, u16 depth, u16 parent, u16 child, u16 sibling),
//!             u64 free, free × u16
//!         u64 walks, walks × (u32 part, u16 node), u64 recent, recent × u64
//! ```

use super::model::{ModelSnapshot, NodeSnapshot, PartitionSnapshot, TrieSnapshot};

const MAGIC: &[u8; 4] = b"OMDL";
/// Blob format version.
pub const FORMAT: u8 = 1;

/// Encode a snapshot.
pub fn encode(s: &ModelSnapshot) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(MAGIC);
    b.push(FORMAT);
    match s {
        ModelSnapshot::LastSuccessor { last, successors } => {
            b.push(1);
            b.push(u8::from(last.is_some()));
            b.extend_from_slice(&last.unwrap_or(0).to_le_bytes());
            b.extend_from_slice(&(successors.len() as u64).to_le_bytes());
            for (f, s) in successors {
                b.extend_from_slice(&f.to_le_bytes());
                b.extend_from_slice(&s.to_le_bytes());
            }
        }
        ModelSnapshot::Trie(t) => {
            b.push(2);
            b.extend_from_slice(&t.partition_size.to_le_bytes());
            b.extend_from_slice(&t.max_depth.to_le_bytes());
            b.push(u8::from(t.lz));
            b.extend_from_slice(&(t.partitions.len() as u64).to_le_bytes());
            for p in &t.partitions {
                b.extend_from_slice(&(p.nodes.len() as u64).to_le_bytes());
                for n in &p.nodes {
                    b.extend_from_slice(&n.sym.to_le_bytes());
                    b.extend_from_slice(&n.count.to_le_bytes());
                    for x in [n.depth, n.parent, n.child, n.sibling] {
                        b.extend_from_slice(&x.to_le_bytes());
                    }
                }
                b.extend_from_slice(&(p.free.len() as u64).to_le_bytes());
                for f in &p.free {
                    b.extend_from_slice(&f.to_le_bytes());
                }
            }
            b.extend_from_slice(&(t.walks.len() as u64).to_le_bytes());
            for (p, n) in &t.walks {
                b.extend_from_slice(&p.to_le_bytes());
                b.extend_from_slice(&n.to_le_bytes());
            }
            b.extend_from_slice(&(t.recent.len() as u64).to_le_bytes());
            for r in &t.recent {
                b.extend_from_slice(&r.to_le_bytes());
            }
        }
    }
    b
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.b.len() - self.at < n {
            return Err(format!("truncated at byte {} (wanted {n} more)", self.at));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    /// A count of items of `item_bytes` each that must fit in what remains.
    fn count(&mut self, item_bytes: usize) -> Result<usize, String> {
        let n = self.u64()?;
        let left = (self.b.len() - self.at) as u64;
        if n.saturating_mul(item_bytes as u64) > left {
            return Err(format!(
                "count {n} at byte {} exceeds the blob",
                self.at - 8
            ));
        }
        Ok(n as usize)
    }
}

/// Decode a snapshot; any inconsistency is an error naming what was wrong.
pub fn decode(b: &[u8]) -> Result<ModelSnapshot, String> {
    let mut r = Reader { b, at: 0 };
    if r.take(4)? != MAGIC {
        return Err("not an outrider model blob (bad magic)".into());
    }
    let format = r.u8()?;
    if format != FORMAT {
        return Err(format!(
            "model blob format {format}, this build reads {FORMAT}"
        ));
    }
    let snap = match r.u8()? {
        1 => {
            let has = r.u8()? != 0;
            let last = r.u64()?;
            let n = r.count(16)?;
            let mut successors = Vec::with_capacity(n);
            for _ in 0..n {
                successors.push((r.u64()?, r.u64()?));
            }
            ModelSnapshot::LastSuccessor {
                last: has.then_some(last),
                successors,
            }
        }
        2 => {
            let partition_size = r.u32()?;
            let max_depth = r.u32()?;
            let lz = r.u8()? != 0;
            let np = r.count(16)?;
            let mut partitions = Vec::with_capacity(np);
            for _ in 0..np {
                let nn = r.count(20)?;
                let mut nodes = Vec::with_capacity(nn);
                for _ in 0..nn {
                    nodes.push(NodeSnapshot {
                        sym: r.u64()?,
                        count: r.u32()?,
                        depth: r.u16()?,
                        parent: r.u16()?,
                        child: r.u16()?,
                        sibling: r.u16()?,
                    });
                }
                let nf = r.count(2)?;
                let mut free = Vec::with_capacity(nf);
                for _ in 0..nf {
                    free.push(r.u16()?);
                }
                partitions.push(PartitionSnapshot { nodes, free });
            }
            let nw = r.count(6)?;
            let mut walks = Vec::with_capacity(nw);
            for _ in 0..nw {
                walks.push((r.u32()?, r.u16()?));
            }
            let nr = r.count(8)?;
            let mut recent = Vec::with_capacity(nr);
            for _ in 0..nr {
                recent.push(r.u64()?);
            }
            ModelSnapshot::Trie(TrieSnapshot {
                partition_size,
                max_depth,
                lz,
                partitions,
                walks,
                recent,
            })
        }
        k => return Err(format!("unknown model kind {k}")),
    };
    if r.at != b.len() {
        return Err(format!("{} trailing bytes", b.len() - r.at));
    }
    Ok(snap)
}

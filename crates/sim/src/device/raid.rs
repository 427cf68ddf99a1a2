//! RAID-0: N member devices striped in 64 KiB units.
//!
//! Linear block `g` (after [`DevRegions`] mapping) lies in stripe unit
//! `s = g / 16`, on member `s % N`, at member block `(s / N) * 16 + g % 16`.
//! A request is split into at most one contiguous part per member (the
//! units a contiguous range puts on one member are consecutive rows there),
//! each part queued at its member — for HDD members, its own C-LOOK queue
//! and arm — and the request completes when its last part does.
//!
//! Members dispatch lazily, like a single device. To answer
//! [`Device::next_completion_ns`] the array runs its members' part
//! completions forward in time until a whole request is done; each member
//! that finishes a part then chooses its next part at that instant. If the
//! loop does not advance to the answer but submits an earlier request, a
//! member may already have chosen its part in service without seeing that
//! request (at most one choice per member per call) — still a valid C-LOOK
//! schedule, just not the one an omniscient scheduler would pick.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::{DevRegions, DevRequest, Device, DeviceKind, DEV_REGION_SHIFT, MAX_PENDING_REQUESTS};

/// Stripe unit: 64 KiB, the Linux md default chunk size of the libprefetch
/// era (mdadm's default became 512 KiB only in 2009; 64 KiB is still the
/// common hardware-RAID default).
pub const RAID0_STRIPE_BYTES: u64 = 64 * 1024;

/// Stripe unit in 4 KiB blocks.
const STRIPE_BLOCKS: u64 = RAID0_STRIPE_BYTES / super::BLOCK_BYTES;

/// Most members an array may have (a bound on per-request split work,
/// which is O(members)).
pub const RAID0_MAX_MEMBERS: usize = 64;

#[derive(Clone, Copy, Debug)]
struct Slot {
    req: DevRequest,
    remaining: u32,
    seq: u64,
    group: u32,
}

/// Longest time slice one scheduling group holds the array once another
/// group is waiting (DiskSeen §3.7 coordination): 20 ms, a few HDD seeks'
/// worth, so a trail's prefetch window is served as a batch on every disk.
pub const RAID0_SLICE_NS: u64 = 20_000_000;

/// Bound on scheduling groups tracked at once; requests of further groups
/// join group 0 (the non-trail group).
pub const RAID0_MAX_GROUPS: usize = 4096;

/// One scheduling group's requests: held back while another group holds
/// the array, and in service.
#[derive(Clone, Debug, Default)]
struct Group {
    id: u32,
    held: VecDeque<DevRequest>,
    inflight: usize,
}

/// DiskSeen §3.7 coordinated scheduling: once a tagged request arrives,
/// the array serves one scheduling group (a trail, or group 0: requests
/// on no trail) at a time. The group being served keeps the array until
/// it has nothing queued or in service (a trail whose window is served
/// and whose next window is not issued yet: the paper's early end of a
/// slice) or its slice of [`RAID0_SLICE_NS`] is over while another group
/// waits. Simplification: slices are equal, not proportional to each
/// group's measured throughput.
#[derive(Clone, Debug, Default)]
struct Coord {
    active: bool,
    groups: Vec<Group>,
    cur: u32,
    slice_end_ns: u64,
    held: usize,
}

/// A RAID-0 array of identical members.
#[derive(Clone, Debug)]
pub struct Raid0<D> {
    members: Vec<D>,
    /// Each member's next part completion (`u64::MAX`: none), valid unless
    /// the member is flagged in `stale`.
    member_next_ns: Vec<u64>,
    /// Members touched (submitted to, completed) since their entry in
    /// `member_next_ns` was computed.
    stale: Vec<bool>,
    regions: DevRegions,
    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    /// Requests whose last part has completed: (end, seq, slot).
    ready: BinaryHeap<Reverse<(u64, u64, u32)>>,
    seq: u64,
    last_submit_ns: u64,
    coord: Coord,
}

impl<D: Device> Raid0<D> {
    /// An array over `members` (1..=[`RAID0_MAX_MEMBERS`]).
    pub fn new(members: Vec<D>) -> Self {
        assert!(
            (1..=RAID0_MAX_MEMBERS).contains(&members.len()),
            "raid0 needs 1..={RAID0_MAX_MEMBERS} members"
        );
        let n = members.len();
        Self {
            members,
            member_next_ns: vec![u64::MAX; n],
            stale: vec![false; n],
            regions: DevRegions::default(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            ready: BinaryHeap::new(),
            seq: 0,
            last_submit_ns: 0,
            coord: Coord::default(),
        }
    }

    fn group_ix(&self, id: u32) -> Option<usize> {
        self.coord.groups.iter().position(|g| g.id == id)
    }

    /// Dispatch held requests of the group being served; switch groups
    /// when it is drained or its slice is over and another group waits.
    fn pump(&mut self, now_ns: u64) {
        for _ in 0..=self.coord.groups.len() {
            let cur = self.group_ix(self.coord.cur);
            if let Some(ix) = cur {
                let in_slice = now_ns < self.coord.slice_end_ns;
                if in_slice || self.coord.held == self.coord.groups[ix].held.len() {
                    if !self.coord.groups[ix].held.is_empty() {
                        while let Some(req) = self.coord.groups[ix].held.pop_front() {
                            self.coord.held -= 1;
                            let g = self.coord.groups[ix].id;
                            self.dispatch(now_ns, req, g);
                        }
                        return;
                    }
                    if self.coord.groups[ix].inflight > 0 && in_slice {
                        return;
                    }
                }
            }
            // Forget groups with nothing left (trails that ended), then
            // round robin to the next group with requests waiting.
            let cur_id = self.coord.cur;
            self.coord
                .groups
                .retain(|g| g.id == 0 || !g.held.is_empty() || g.inflight > 0);
            let cur = self.group_ix(cur_id);
            let n = self.coord.groups.len();
            let start = cur.map_or(0, |i| i + 1);
            let Some(next) = (0..n)
                .map(|k| (start + k) % n)
                .find(|&j| !self.coord.groups[j].held.is_empty())
            else {
                return;
            };
            self.coord.cur = self.coord.groups[next].id;
            self.coord.slice_end_ns = now_ns + RAID0_SLICE_NS;
        }
    }

    fn dispatch(&mut self, now_ns: u64, req: DevRequest, group: u32) {
        if self.coord.active {
            if let Some(ix) = self.group_ix(group) {
                self.coord.groups[ix].inflight += 1;
            }
        }
        let n = self.members.len() as u64;
        let g0 = self.regions.linear_block(req.dev, req.lbn);
        let g1 = g0 + req.blocks as u64;
        let (s0, s1) = (g0 / STRIPE_BLOCKS, (g1 - 1) / STRIPE_BLOCKS);
        let stripes = s1 - s0 + 1;
        let parts = stripes.min(n);

        let slot = Slot {
            req,
            remaining: parts as u32,
            seq: self.seq,
            group,
        };
        self.seq += 1;
        let slot_ix = match self.free_slots.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };

        for j in 0..parts {
            let first = s0 + j;
            let last = first + (stripes - 1 - j) / n * n;
            let start = first / n * STRIPE_BLOCKS + if j == 0 { g0 % STRIPE_BLOCKS } else { 0 };
            let end = last / n * STRIPE_BLOCKS
                + if last == s1 {
                    (g1 - 1) % STRIPE_BLOCKS + 1
                } else {
                    STRIPE_BLOCKS
                };
            debug_assert!(end > start);
            let member = (first % n) as usize;
            self.stale[member] = true;
            let mask = (1u64 << DEV_REGION_SHIFT) - 1;
            self.members[member].submit(
                now_ns,
                DevRequest {
                    id: slot_ix as u64,
                    dev: (start >> DEV_REGION_SHIFT) as u32,
                    lbn: start & mask,
                    blocks: (end - start) as u32,
                    write: req.write,
                },
            );
        }
    }

    /// The member devices.
    pub fn members(&self) -> &[D] {
        &self.members
    }

    /// Process member part completions until a whole request is ready (or
    /// nothing is left); returns the earliest ready request's end.
    fn advance(&mut self) -> Option<u64> {
        loop {
            let mut best: Option<(u64, usize)> = None;
            for i in 0..self.members.len() {
                if self.stale[i] {
                    self.stale[i] = false;
                    self.member_next_ns[i] =
                        self.members[i].next_completion_ns().unwrap_or(u64::MAX);
                }
                let t = self.member_next_ns[i];
                if t != u64::MAX && best.is_none_or(|(bt, _)| t < bt) {
                    best = Some((t, i));
                }
            }
            let ready = self.ready.peek().map(|Reverse((t, _, _))| *t);
            match (ready, best) {
                (Some(r), Some((t, _))) if r <= t => return Some(r),
                (Some(r), None) => return Some(r),
                (_, None) => return None,
                (_, Some((_, i))) => {
                    let (t, part) = self.members[i]
                        .complete_next()
                        .expect("member had a completion");
                    self.stale[i] = true;
                    let slot_ix = part.id as u32;
                    let slot = &mut self.slots[slot_ix as usize];
                    slot.remaining -= 1;
                    if slot.remaining == 0 {
                        self.ready.push(Reverse((t, slot.seq, slot_ix)));
                    }
                }
            }
        }
    }
}

impl<D: Device> Device for Raid0<D> {
    fn submit(&mut self, now_ns: u64, req: DevRequest) {
        assert!(req.blocks >= 1, "empty request {req:?}");
        debug_assert!(
            now_ns >= self.last_submit_ns,
            "submission time went backwards"
        );
        assert!(
            self.pending() < MAX_PENDING_REQUESTS,
            "device queue overflow"
        );
        self.last_submit_ns = now_ns;
        if self.coord.active {
            self.submit_grouped(now_ns, req, 0);
        } else {
            self.dispatch(now_ns, req, 0);
        }
    }

    fn submit_grouped(&mut self, now_ns: u64, req: DevRequest, group: u32) {
        self.last_submit_ns = now_ns;
        if !self.coord.active {
            if group == 0 {
                self.dispatch(now_ns, req, 0);
                return;
            }
            // Coordination starts: what is in service so far is group 0's.
            self.coord.active = true;
            let inflight = self.pending();
            self.coord.groups.push(Group {
                id: 0,
                held: VecDeque::new(),
                inflight,
            });
            self.coord.cur = 0;
            self.coord.slice_end_ns = now_ns + RAID0_SLICE_NS;
        }
        let ix = match self.group_ix(group) {
            Some(ix) => ix,
            None if self.coord.groups.len() < RAID0_MAX_GROUPS => {
                self.coord.groups.push(Group {
                    id: group,
                    ..Group::default()
                });
                self.coord.groups.len() - 1
            }
            None => self.group_ix(0).expect("group 0 exists while coordinating"),
        };
        self.coord.groups[ix].held.push_back(req);
        self.coord.held += 1;
        self.pump(now_ns);
    }

    fn next_completion_ns(&mut self) -> Option<u64> {
        self.advance()
    }

    fn complete_next(&mut self) -> Option<(u64, DevRequest)> {
        self.advance()?;
        let Reverse((t, _, slot_ix)) = self.ready.pop().expect("advance found a ready request");
        self.free_slots.push(slot_ix);
        let slot = self.slots[slot_ix as usize];
        if self.coord.active {
            if let Some(ix) = self.group_ix(slot.group) {
                let g = &mut self.coord.groups[ix];
                g.inflight = g.inflight.saturating_sub(1);
                if g.inflight == 0 && g.held.is_empty() && g.id != 0 && g.id != self.coord.cur {
                    self.coord.groups.remove(ix);
                }
            }
            self.pump(t);
        }
        Some((t, slot.req))
    }

    fn pending(&self) -> usize {
        self.slots.len() - self.free_slots.len() + self.coord.held
    }

    fn busy_ns(&self) -> u64 {
        self.members.iter().map(|m| m.busy_ns()).sum()
    }

    fn reset(&mut self) {
        self.members.iter_mut().for_each(|m| m.reset());
        self.member_next_ns.fill(u64::MAX);
        self.stale.fill(false);
        self.regions.clear();
        self.slots.clear();
        self.free_slots.clear();
        self.ready.clear();
        self.seq = 0;
        self.last_submit_ns = 0;
        self.coord = Coord::default();
    }

    fn describe(&self) -> String {
        let member = match self.kind() {
            Some(DeviceKind::Hdd) | None => String::new(),
            Some(k) => format!(":{k}"),
        };
        format!(
            "raid0:{}{member}: {} KiB stripe unit over {} × [{}]",
            self.members.len(),
            RAID0_STRIPE_BYTES / 1024,
            self.members.len(),
            self.members[0].describe()
        )
    }

    fn max_throughput_bytes_per_s(&self) -> Option<u64> {
        self.members
            .iter()
            .map(|m| m.max_throughput_bytes_per_s())
            .sum()
    }

    fn kind(&self) -> Option<DeviceKind> {
        self.members[0].kind()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Hdd;

    fn req(id: u64, lbn: u64, blocks: u32) -> DevRequest {
        DevRequest {
            id,
            lbn,
            blocks,
            ..DevRequest::default()
        }
    }

    fn drain_ids(r: &mut Raid0<Hdd>) -> Vec<u64> {
        let mut ids = vec![];
        while let Some((_, q)) = r.complete_next() {
            ids.push(q.id);
        }
        ids
    }

    /// §3.7: two trails far apart on a 2-disk array, their requests
    /// arriving interleaved. Without tags C-LOOK serves each disk in LBN
    /// order; with tags the array serves trail 1's requests, then trail
    /// 2's (trail 1 keeps the array while it has requests in service).
    #[test]
    fn grouped_requests_are_served_one_group_at_a_time() {
        let far = 1 << 28;
        let reqs = [
            (1, 0, 1u32),
            (2, far, 2),
            (3, 16, 1),
            (4, far + 16, 2),
            (5, 32, 1),
            (6, far + 32, 2),
        ];
        let mut plain = Raid0::new((0..2).map(|_| Hdd::new()).collect());
        for &(id, lbn, _) in &reqs {
            plain.submit(0, req(id, lbn, 16));
        }
        let mut coord = Raid0::new((0..2).map(|_| Hdd::new()).collect());
        for &(id, lbn, g) in &reqs {
            coord.submit_grouped(0, req(id, lbn, 16), g);
        }
        assert_eq!(coord.pending(), 6);
        assert_eq!(drain_ids(&mut coord), vec![1, 3, 5, 2, 4, 6]);
        let order = drain_ids(&mut plain);
        assert_eq!(order.len(), 6);
        assert_ne!(order, vec![1, 3, 5, 2, 4, 6]);
        assert_eq!(coord.pending(), 0);
    }

    /// A 4-member array: 16-block units round-robin over members; a
    /// request over units 1..=5 puts units 1 and 5 (rows 0 and 1) on
    /// member 1 as one contiguous part.
    #[test]
    fn split_is_one_contiguous_part_per_member() {
        let mut r = Raid0::new((0..4).map(|_| Hdd::new()).collect());
        // Blocks 20..90: unit 1 (from block 4 in it) to unit 5 (to block 9).
        r.submit(0, req(7, 20, 70));
        assert_eq!(r.pending(), 1);
        let pending: Vec<usize> = r.members().iter().map(|m| m.pending()).collect();
        assert_eq!(pending, [1, 1, 1, 1]);
        // Drain members and collect their parts to check the mapping.
        let mut parts = Vec::new();
        for (i, m) in r.members.iter_mut().enumerate() {
            let (_, p) = m.complete_next().unwrap();
            parts.push((i, p.lbn, p.blocks));
        }
        // member 1: units 1 (row 0, from 4) and 5 (row 1, to 10) → 4..26
        // member 2: unit 2 → 0..16; member 3: unit 3 → 0..16;
        // member 0: unit 4 (row 1) → 16..32.
        assert_eq!(parts, [(0, 16, 16), (1, 4, 22), (2, 0, 16), (3, 0, 16)]);
        assert_eq!(parts.iter().map(|p| p.2).sum::<u32>(), 70);
    }
}

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

/// Time slice of a scheduling group whose throughput is the mean of the
/// groups' (DiskSeen §3.7 coordination): 20 ms, a few HDD seeks' worth, so
/// a trail's prefetch window is served as a batch on every disk. Slices
/// are proportional to each group's measured throughput, within
/// [`RAID0_MIN_SLICE_NS`]..=[`RAID0_MAX_SLICE_NS`].
pub const RAID0_SLICE_NS: u64 = 20_000_000;

/// Shortest slice a slow group gets: 5 ms.
pub const RAID0_MIN_SLICE_NS: u64 = RAID0_SLICE_NS / 4;

/// Longest slice a fast group gets: 80 ms.
pub const RAID0_MAX_SLICE_NS: u64 = RAID0_SLICE_NS * 4;

/// Weight of the newest slice in a group's throughput estimate
/// (exponential moving average).
const THROUGHPUT_WEIGHT: f64 = 0.5;

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

/// DiskSeen §3.7 coordinated scheduling. Once a tagged request arrives,
/// the array serves one scheduling group (a trail, or group 0: requests
/// on no trail) at a time, each for a time slice:
///
/// - **Slices proportional to throughput.** The array measures the
///   throughput (blocks completed per ns) of each slice; a group's slice
///   is [`RAID0_SLICE_NS`] × its throughput / the mean throughput of the
///   groups waiting, clamped to 5..80 ms. Group 0 keeps its own estimate;
///   trails, which come and go with DiskSeen's streams, share one (a new
///   trail starts from it).
/// - **Early end.** A trail's slice ends when its throughput so far falls
///   below the non-trail group's, checked whenever one of its requests
///   completes; a trail with nothing queued or in service (its window is
///   served and the next one not issued yet, the paper's example) ends
///   its slice at once.
/// - A slice that is over passes the array on only if another group
///   waits; groups with nothing left are forgotten.
#[derive(Clone, Debug, Default)]
struct Coord {
    active: bool,
    groups: Vec<Group>,
    cur: u32,
    slice_start_ns: u64,
    slice_end_ns: u64,
    /// Blocks of the current group's requests completed in its slice.
    slice_blocks: u64,
    /// When the first of them completed, and the blocks completed since
    /// (the slice's streaming rate, its first positioning excluded).
    first_done_ns: Option<u64>,
    blocks_after_first: u64,
    held: usize,
    /// Throughput estimates (blocks per ns; 0 = not measured yet): group
    /// 0's and the trails'.
    thr_other: f64,
    thr_trail: f64,
}

impl Coord {
    fn thr_of(&self, id: u32) -> f64 {
        if id == 0 {
            self.thr_other
        } else {
            self.thr_trail
        }
    }

    /// Close the current slice at `now_ns`: fold its throughput into the
    /// current group's estimate, if it ran at least
    /// [`RAID0_MIN_SLICE_NS`] (a shorter one, ended when its group ran
    /// dry, measures little more than one request's seek).
    fn close_slice(&mut self, now_ns: u64) {
        let elapsed = now_ns.saturating_sub(self.slice_start_ns);
        if elapsed < RAID0_MIN_SLICE_NS {
            return;
        }
        let thr = self.slice_blocks as f64 / elapsed as f64;
        let est = if self.cur == 0 {
            &mut self.thr_other
        } else {
            &mut self.thr_trail
        };
        *est = if *est == 0.0 {
            thr
        } else {
            THROUGHPUT_WEIGHT * thr + (1.0 - THROUGHPUT_WEIGHT) * *est
        };
    }

    /// Open a slice for group `id` at `now_ns`, its length proportional to
    /// its throughput among the groups present.
    fn open_slice(&mut self, id: u32, now_ns: u64) {
        self.cur = id;
        self.slice_start_ns = now_ns;
        self.slice_blocks = 0;
        self.first_done_ns = None;
        self.blocks_after_first = 0;
        self.slice_end_ns = now_ns + self.slice_len_ns(id);
    }

    fn slice_len_ns(&self, id: u32) -> u64 {
        let known: Vec<f64> = self
            .groups
            .iter()
            .map(|g| self.thr_of(g.id))
            .filter(|&t| t > 0.0)
            .collect();
        let own = self.thr_of(id);
        if known.is_empty() || own == 0.0 {
            return RAID0_SLICE_NS;
        }
        let mean = known.iter().sum::<f64>() / known.len() as f64;
        ((RAID0_SLICE_NS as f64 * own / mean) as u64).clamp(RAID0_MIN_SLICE_NS, RAID0_MAX_SLICE_NS)
    }

    /// Has the current trail's throughput in this slice fallen below the
    /// non-trail group's (§3.7's early end)? The trail's rate is taken
    /// from its first completion in the slice on (the seek to reach it
    /// says nothing about the trail), once the slice has run
    /// [`RAID0_MIN_SLICE_NS`].
    fn trail_slower_than_others(&self, now_ns: u64) -> bool {
        let elapsed = now_ns.saturating_sub(self.slice_start_ns);
        let Some(first) = self.first_done_ns else {
            return false;
        };
        let streaming = now_ns.saturating_sub(first);
        self.cur != 0
            && self.thr_other > 0.0
            && elapsed >= RAID0_MIN_SLICE_NS
            && streaming > 0
            && (self.blocks_after_first as f64 / streaming as f64) < self.thr_other
    }

    /// A request of `blocks` of the current group completed at `now_ns`.
    fn count_done(&mut self, now_ns: u64, blocks: u32) {
        self.slice_blocks += u64::from(blocks);
        if self.first_done_ns.is_some() {
            self.blocks_after_first += u64::from(blocks);
        } else {
            self.first_done_ns = Some(now_ns);
        }
    }
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
    /// when its slice ends (over, or ended early, see [`Coord`]) and
    /// another group waits, or when it has nothing left. `rate_check`: a
    /// request of the current group just completed, so its throughput is
    /// compared with the non-trail group's.
    fn pump(&mut self, now_ns: u64, rate_check: bool) {
        for _ in 0..=self.coord.groups.len() {
            if let Some(ix) = self.group_ix(self.coord.cur) {
                let others_wait = self.coord.held > self.coord.groups[ix].held.len();
                let g = &self.coord.groups[ix];
                let drained = g.held.is_empty() && g.inflight == 0;
                let over = now_ns >= self.coord.slice_end_ns
                    || (rate_check && self.coord.trail_slower_than_others(now_ns));
                let hand_over = drained || (over && others_wait);
                if !hand_over {
                    while let Some(req) = self.coord.groups[ix].held.pop_front() {
                        self.coord.held -= 1;
                        let id = self.coord.groups[ix].id;
                        self.dispatch(now_ns, req, id);
                    }
                    return;
                }
            }
            // Forget groups with nothing left (trails that ended), then
            // round robin to the next group with requests waiting.
            let cur_id = self.coord.cur;
            let cur = self.group_ix(cur_id);
            let n = self.coord.groups.len();
            let start = cur.map_or(0, |i| i + 1);
            let Some(next) = (0..n)
                .map(|k| (start + k) % n)
                .find(|&j| !self.coord.groups[j].held.is_empty())
            else {
                return;
            };
            let next_id = self.coord.groups[next].id;
            self.coord.close_slice(now_ns);
            self.coord
                .groups
                .retain(|g| g.id == 0 || !g.held.is_empty() || g.inflight > 0);
            self.coord.open_slice(next_id, now_ns);
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
            self.coord.open_slice(0, now_ns);
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
        self.pump(now_ns, false);
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
            let own = slot.group == self.coord.cur && t >= self.coord.slice_start_ns;
            if own {
                self.coord.count_done(t, slot.req.blocks);
            }
            if let Some(ix) = self.group_ix(slot.group) {
                let g = &mut self.coord.groups[ix];
                g.inflight = g.inflight.saturating_sub(1);
                if g.inflight == 0 && g.held.is_empty() && g.id != 0 && g.id != self.coord.cur {
                    self.coord.groups.remove(ix);
                }
            }
            self.pump(t, own);
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

    /// §3.7: slices proportional to throughput. Group 0 measured at 1
    /// block/ns, trails at 3: with both waiting (mean 2) group 0 gets
    /// 20 ms × 1/2 and a trail 20 ms × 3/2, within 5..80 ms; a group
    /// nothing is known about gets the base slice.
    #[test]
    fn slices_are_proportional_to_measured_throughput() {
        let mut c = Coord {
            groups: vec![
                Group {
                    id: 0,
                    ..Group::default()
                },
                Group {
                    id: 5,
                    ..Group::default()
                },
            ],
            ..Coord::default()
        };
        assert_eq!(c.slice_len_ns(5), RAID0_SLICE_NS, "nothing measured yet");
        c.thr_other = 1.0;
        c.thr_trail = 3.0;
        assert_eq!(c.slice_len_ns(0), 10_000_000);
        assert_eq!(c.slice_len_ns(5), 30_000_000);
        // Mean 500.5: the trail gets 20 ms × 1000 / 500.5, group 0 the
        // 5 ms minimum.
        c.thr_trail = 1000.0;
        assert_eq!(c.slice_len_ns(5), 39_960_039);
        assert_eq!(c.slice_len_ns(0), RAID0_MIN_SLICE_NS);
        // A slice's throughput folds into its group's estimate.
        // A slice's throughput folds into its group's estimate; one
        // shorter than the minimum is not counted.
        c.open_slice(0, 1_000);
        c.slice_blocks = 30;
        c.close_slice(1_000 + RAID0_MIN_SLICE_NS - 1);
        assert_eq!(c.thr_other, 1.0);
        c.open_slice(0, 1_000);
        c.slice_blocks = 3 * RAID0_MIN_SLICE_NS;
        c.close_slice(1_000 + RAID0_MIN_SLICE_NS);
        assert_eq!(c.thr_other, 0.5 * 3.0 + 0.5 * 1.0);
    }

    /// §3.7 early end: trail 1 has three requests on member 0 of a 2-disk
    /// array, two of them far apart (a seek each, ~10 ms); group 2's
    /// request on member 1 waits. Normally it waits until trail 1 has
    /// nothing in service; when trail 1's throughput at a completion past
    /// the 5 ms minimum is below the non-trail group's, its slice ends
    /// there and group 2 is served before trail 1's last request.
    #[test]
    fn a_trail_slower_than_the_non_trail_group_loses_its_slice() {
        let order = |thr_other: f64| {
            let mut r = Raid0::new((0..2).map(|_| Hdd::new()).collect());
            r.submit_grouped(0, req(1, 0, 1), 1);
            r.coord.thr_other = thr_other;
            r.submit_grouped(0, req(2, 1 << 24, 16), 1);
            r.submit_grouped(0, req(4, 1 << 28, 16), 1);
            r.submit_grouped(0, req(3, 16, 1), 2);
            drain_ids(&mut r)
        };
        assert_eq!(order(0.0), vec![1, 2, 4, 3]);
        assert_eq!(order(1.0), vec![1, 2, 3, 4]);
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

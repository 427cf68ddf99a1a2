//! How a request continues its stream: the classification under flashy's
//! pattern recognition (§IV-B) and the `stride` detector.
//!
//! A [`Stream`] remembers its previous request (first unit, length) and the
//! start-to-start jump before it. [`Stream::observe`] compares a new request
//! with them (flashy §IV-B):
//!
//! - starts where the previous one ended → [`Step::Consecutive`]
//!   (sequential forward);
//! - else ends where the previous one started → [`Step::Reverse`]
//!   (sequential backward);
//! - else the jump equals the previous jump "in both direction and size",
//!   non-zero → [`Step::Strided`] (forward or backward by its sign);
//! - otherwise (or the stream's first request) → [`Step::Other`].
//!
//! The observation also says whether the jump and the length repeat
//! ([`Observed::same_jump`], [`Observed::same_len`]): `stride` confirms a
//! pattern after `confirm` requests that repeat both, whatever their
//! class (plain sequential reads repeat the jump `len` too).

/// How a request continued its stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// First request, or none of the patterns.
    Other,
    /// Starts where the previous request ended.
    Consecutive,
    /// Ends where the previous request started.
    Reverse,
    /// Same non-zero start-to-start jump as between the previous two.
    Strided,
}

/// What [`Stream::observe`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observed {
    /// The request's class.
    pub step: Step,
    /// Start-to-start jump from the previous request (`None`: first).
    pub jump: Option<i64>,
    /// The jump is non-zero and equals the previous jump.
    pub same_jump: bool,
    /// The length equals the previous request's.
    pub same_len: bool,
}

/// One stream's memory: its previous request and the jump before it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stream {
    /// Previous request: (first unit, length).
    pub last: Option<(u64, u64)>,
    /// Start-to-start jump between the previous two requests.
    pub last_jump: Option<i64>,
}

impl Stream {
    /// Feed a request of `len` units at `start`; the stream moves to it.
    pub fn observe(&mut self, start: u64, len: u64) -> Observed {
        let Some((pstart, plen)) = self.last else {
            self.last = Some((start, len));
            return Observed {
                step: Step::Other,
                jump: None,
                same_jump: false,
                same_len: false,
            };
        };
        let jump = start as i64 - pstart as i64;
        let same_jump = jump != 0 && self.last_jump == Some(jump);
        let step = if start == pstart + plen {
            Step::Consecutive
        } else if start + len == pstart {
            Step::Reverse
        } else if same_jump {
            Step::Strided
        } else {
            Step::Other
        };
        self.last = Some((start, len));
        self.last_jump = Some(jump);
        Observed {
            step,
            jump: Some(jump),
            same_jump,
            same_len: len == plen,
        }
    }

    /// Would a request at `[start, end)` continue this stream (consecutive,
    /// reverse, or at the expected stride)?
    pub fn continues(&self, start: u64, end: u64) -> bool {
        match self.last {
            None => false,
            Some((pstart, plen)) => {
                start == pstart + plen
                    || end == pstart
                    || self
                        .last_jump
                        .is_some_and(|j| j != 0 && pstart as i64 + j == start as i64)
            }
        }
    }

    /// Does a request at `[start, end)` lie past this stream's previous
    /// request, forward or backward, with at most `gap` units between
    /// them (a scan that skipped over something it does not read)?
    pub fn is_near(&self, start: u64, end: u64, gap: u64) -> bool {
        match self.last {
            None => false,
            Some((pstart, plen)) => {
                let pend = pstart + plen;
                (start >= pend && start - pend <= gap) || (end <= pstart && pstart - end <= gap)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(reqs: &[(u64, u64)]) -> Vec<Step> {
        let mut s = Stream::default();
        reqs.iter().map(|&(a, n)| s.observe(a, n).step).collect()
    }

    #[test]
    fn sequential_forward_is_consecutive() {
        assert_eq!(
            steps(&[(0, 4), (4, 4), (8, 2)]),
            vec![Step::Other, Step::Consecutive, Step::Consecutive]
        );
    }

    #[test]
    fn sequential_backward_is_reverse() {
        assert_eq!(
            steps(&[(100, 4), (96, 4), (92, 4)]),
            vec![Step::Other, Step::Reverse, Step::Reverse]
        );
    }

    /// DiskSeen §4.3's *strided*: 4 KiB every 8 KiB. The second request
    /// sets the jump (2), the third repeats it.
    #[test]
    fn every_other_block_is_strided_from_the_third_request() {
        assert_eq!(
            steps(&[(0, 1), (2, 1), (4, 1), (6, 1)]),
            vec![Step::Other, Step::Other, Step::Strided, Step::Strided]
        );
        assert_eq!(
            steps(&[(60, 1), (50, 1), (40, 1)]),
            vec![Step::Other, Step::Other, Step::Strided]
        );
    }

    #[test]
    fn a_repeated_request_is_not_a_stride() {
        assert_eq!(
            steps(&[(5, 1), (5, 1), (5, 1)]),
            vec![Step::Other, Step::Other, Step::Other]
        );
    }

    /// Sequential reads repeat their jump (= their length): `stride` sees
    /// a repeated distance while the class says consecutive.
    #[test]
    fn same_jump_and_length_are_reported_for_every_class() {
        let mut s = Stream::default();
        s.observe(0, 4);
        let o = s.observe(4, 4);
        assert_eq!((o.jump, o.same_jump, o.same_len), (Some(4), false, true));
        let o = s.observe(8, 4);
        assert_eq!(o.step, Step::Consecutive);
        assert!(o.same_jump && o.same_len);
        let o = s.observe(20, 2);
        assert_eq!((o.jump, o.same_jump, o.same_len), (Some(12), false, false));
    }

    #[test]
    fn continues_accepts_next_previous_and_strided_positions() {
        let mut s = Stream::default();
        assert!(!s.continues(0, 1));
        s.observe(10, 2);
        s.observe(20, 2);
        assert!(s.continues(22, 23)); // consecutive
        assert!(s.continues(15, 20)); // ends where the last started
        assert!(s.continues(30, 32)); // next stride
        assert!(!s.continues(40, 42));
    }

    #[test]
    fn near_means_past_the_previous_request_within_the_gap() {
        let mut s = Stream::default();
        assert!(!s.is_near(0, 1, 100));
        s.observe(100, 10);
        assert!(s.is_near(110, 111, 0)); // consecutive
        assert!(s.is_near(150, 160, 40)); // 40 past the end
        assert!(!s.is_near(151, 160, 40));
        assert!(s.is_near(50, 60, 40)); // 40 below the start
        assert!(!s.is_near(50, 59, 40));
        assert!(!s.is_near(105, 108, 1000)); // inside: not past it
    }
}

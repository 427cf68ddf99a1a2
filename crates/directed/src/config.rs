//! Library settings, parsed from `k=v,...` text with the same parameter
//! machinery as the policies (`OUTRIDER_DIRECTED` in the C example, the
//! `params` argument of `outrider_configure`).

use outrider_core::size::ByteSize;

outrider_core::params! {
    /// Settings of a directed-prefetching client (libprefetch defaults).
    pub struct Config {
        /// fixed reorder-buffer size; 0 = set by the AIMD controller (libprefetch §3.2, §4.6)
        buffer: ByteSize = ByteSize(0),
        /// merge fetches whose physical gap is at most this: a size (the paper's §3.3 default is 32KiB), or auto = the gap a per-device probe says costs less to read through than one more request (capped at 32 KiB)
        infill: Infill = Infill::Auto,
        /// AIMD contention controller: 90% of the page-cache memory, +10%, halve on premature eviction (§4.6)
        aimd: bool = true,
        /// infill pages count against the reorder buffer (they occupy the page cache)
        charge: bool = true,
        /// smallest reorder buffer the AIMD controller shrinks to
        min: ByteSize = ByteSize(256 << 10),
        /// access-list buffer size in entries (§4.2: request_prefetching accepts at most this many)
        list: usize = 1 << 20,
        /// call back for more entries when fewer than this many remain ahead
        low: usize = 256,
        /// I/O worker threads issuing WILLNEED chunks
        threads: usize = 4,
        /// memory available to the page cache; 0 = discover (cgroup limit, MemAvailable)
        memory: ByteSize = ByteSize(0),
        /// count a missing page of the round as a premature eviction only if the kernel evicted it (cachestat shows a shadow entry); off = any missing page counts (the paper's fincore test, §4.5)
        shadow: bool = true,
        /// drop the previous round's pages not in the new round (DONTNEED, §4.5)
        drop: bool = true,
        /// wait for a round's submission before the read goes on: on (the paper, §4.5), off, or auto (on unless the round is read in the order it is fetched)
        wait: String = "auto".to_string(),
        /// leave a round read page after page in file order to the kernel's sequential readahead (no WILLNEED, no drops, no residency checks); off = the paper: every round is fetched (§4.5)
        readahead: bool = true,
    }
}

/// The infill setting: measured per device, or fixed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Infill {
    /// Decided by the device probe ([`crate::probe`]); the paper's 32 KiB
    /// where the device cannot be probed.
    Auto,
    /// A fixed limit (`infill=32KiB` is the paper's setting, §3.3).
    Size(ByteSize),
}

impl outrider_core::params::ParamValue for Infill {
    fn parse_param(text: &str) -> Result<Self, String> {
        if text.trim() == "auto" {
            return Ok(Infill::Auto);
        }
        text.parse::<ByteSize>()
            .map(Infill::Size)
            .map_err(|e| format!("auto or a size ({e})"))
    }
    fn show_param(&self) -> String {
        match self {
            Infill::Auto => "auto".into(),
            Infill::Size(s) => s.to_string(),
        }
    }
}

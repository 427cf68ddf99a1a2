//! outrider-directed (`outrider_directed`, C: `liboutrider_directed.so`): application-directed prefetching after
//! libprefetch (VanDeBogart, Frost & Kohler, USENIX ATC 2009), with no kernel
//! change.
//!
//! A program that knows what it will read hands the library an access list
//! (file, offset, marked) and reads through the library's `read`/`pread`/
//! `readv`. The library tracks the program's position in the list, calls the
//! program back when the list runs low or the program strays, and prefetches
//! the list one reorder buffer at a time in disk order. Where the paper
//! changed the kernel, outrider uses what stock Linux offers: FIEMAP for
//! physical order, `cachestat(2)` for residency (fincore), `posix_fadvise`
//! WILLNEED/DONTNEED for fetching and dropping, cgroup limits for memory.
//!
//! The one design decision a reader must know: **the algorithms are not
//! here.** Access-list modes, K-unique rounds, C-LOOK, infill and AIMD live
//! in `outrider_core::policies::directed` and are shared with the simulator
//! policy `directed`; this crate only binds them to system calls
//! ([`client`]) and to C ([`ffi`], `include/outrider.h`).
#![deny(missing_docs)]

pub mod client;
pub mod config;
pub mod ffi;
pub mod probe;

pub use client::{Client, Entry, Event, Reason, Stats};
pub use config::{Config, Infill};
pub use outrider_core::policies::directed::list::Mode;

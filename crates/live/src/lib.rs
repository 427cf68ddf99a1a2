//! outrider-live: the Linux live runtime. It watches a program's storage
//! accesses through kernel tracepoints, feeds them to the same policy
//! objects the simulator runs, and acts on their answers with real system
//! calls (DESIGN.md principle 1).
//!
//! The one design decision a reader must know: **events come from a private
//! tracefs instance read in binary form** ([`tracefs`]), not from eBPF or
//! perf. tracefs needs no compiler toolchain and no kernel patch, exists on
//! every kernel outrider targets, and its `filemap` events see page-cache
//! hits as well as misses — what a prefetcher needs to know what the program
//! reads next. The price is that filtering to the traced process tree is
//! done here, in user space.
#![deny(missing_docs)]
// The docs link the private modules that do the work (the eBPF programs,
// the controller's bounds) for readers of the source: `cargo doc
// --document-private-items` resolves them.
#![allow(rustdoc::private_intra_doc_links)]

pub mod cachetool;
pub mod controller;
pub mod ebpf;
pub mod files;
pub mod history;
pub mod lifecycle;
pub mod metawalk;
pub mod proctree;
pub mod record;
pub mod session;
pub mod source;
pub mod tracefs;

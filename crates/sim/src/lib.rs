//! outrider-sim: placeholder.
pub mod device;

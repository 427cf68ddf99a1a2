//! Built-in synthetic workloads. (Being filled in.)

use crate::Trace;

/// Generate a workload from `NAME[:k=v,...]`.
pub fn generate(spec: &str) -> Result<Trace, String> {
    Err(format!("unknown workload '{spec}'"))
}

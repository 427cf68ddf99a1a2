//! Our own errors, as every `outrider` command reports them: a message on
//! stderr; exit code 2 for bad input ([`Usage`]), 1 for anything else.

use std::process::ExitCode;

/// A user-input error: printed and turned into exit code 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Shorthand: a user-input error.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(msg.into()))
}

/// One of our own errors: its message on stderr, exit code 2 for bad input
/// ([`Usage`]), 1 for anything else.
pub fn error_exit(e: anyhow::Error) -> ExitCode {
    outrider_sys::warnln!("outrider: {e:#}");
    if e.downcast_ref::<Usage>().is_some() {
        ExitCode::from(2)
    } else {
        ExitCode::from(1)
    }
}

//! Device models: turn requests into service time.
//!
//! A device is a discrete-event server driven by the simulation loop:
//! requests are [`Device::submit`]ted at the current simulated time; the
//! loop asks [`Device::next_completion_ns`] for the earliest completion and,
//! when it advances time to it, takes it with [`Device::complete_next`].
//! Dispatch is lazy: an idle device chooses what to start only when asked
//! for its next completion, so a batch of requests submitted at one instant
//! is scheduled as a batch (C-LOOK can sort it).
//!
//! Invariants every model keeps: time never goes backwards (submissions
//! arrive at non-decreasing times, completions come out in non-decreasing
//! time order), every submitted request completes exactly once.

/// One request to the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevRequest {
    /// Caller's id, returned on completion.
    pub id: u64,
    /// Device number from the trace (models may treat devices as separate
    /// regions of one address space).
    pub dev: u32,
    /// First 4 KiB block.
    pub lbn: u64,
    /// Length in 4 KiB blocks (at least 1).
    pub blocks: u32,
    /// A write (models may charge writes like reads).
    pub write: bool,
}

/// A device model.
pub trait Device: Send {
    /// Queue `req`, arriving at `now_ns` (non-decreasing across calls).
    fn submit(&mut self, now_ns: u64, req: DevRequest);
    /// When the earliest queued or in-service request completes, if any.
    /// May dispatch queued requests onto idle servers (hence `&mut`).
    fn next_completion_ns(&mut self) -> Option<u64>;
    /// Remove and return the request completing at
    /// [`Device::next_completion_ns`], with its completion time.
    fn complete_next(&mut self) -> Option<(u64, DevRequest)>;
    /// Requests queued or in service.
    fn pending(&self) -> usize;
    /// Total busy time so far, summed over independent servers (ns).
    fn busy_ns(&self) -> u64;
    /// Forget everything (between runs): empty queues, head at block 0,
    /// clock at 0.
    fn reset(&mut self);
    /// A one-line description with the model's constants.
    fn describe(&self) -> String;
}

/// Build a device model from `hdd`, `ssd`, `nvme` or `raid0:N`.
pub fn build_device(spec: &str) -> Result<Box<dyn Device>, String> {
    Err(format!(
        "unknown device '{spec}'; expected hdd, ssd, nvme or raid0:N"
    ))
}

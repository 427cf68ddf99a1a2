//! `disksim`: the DiskSim ASCII trace layout as MQSim uses it
//! (CMU-SAFARI/MQSim `traces/wsrch-small.trace`, `traces/tpcc-small.trace`).
//!
//! ```text
//! time device lba_512B size_sectors flags
//! 11413000 0 657728 16 1
//! ```
//!
//! Five whitespace-separated fields: arrival time, device number, start
//! address in 512-byte sectors, size in 512-byte sectors, and flags whose
//! bit 0 is 1 for a read and 0 for a write (DiskSim's `READ` flag; other
//! bits are DiskSim request flags and do not change the operation).
//!
//! **Time unit: nanoseconds** by default. MQSim documents its arrival times
//! in ns, and the samples agree: every time is a multiple of 1,000 (µs
//! resolution written in ns); wsrch-small spans 11.4 ms … 60.07 s for
//! 24,783 requests (about 410 per second, a web-search server), tpcc-small
//! 0.94 s … 1.08 s for 6,999 requests (about 51k per second, an SSD under
//! TPC-C). Read as milliseconds they would span 1.9 years and 38 hours. The
//! *original* DiskSim traces use fractional milliseconds: read those with
//! `ReadOptions::time_unit_ns = Some(1_000_000)`. Times may be decimals.
//!
//! Sample notes: wsrch-small is 24,779 reads and 4 writes on 6 devices and
//! lacks a final newline (so `wc -l` says 24,782); tpcc-small is 4,381 reads
//! and 2,618 writes on 16 devices.

use super::text::{self, decimal_ns, dev16, mul, size32, split_ws, uint, Ctx, Line};
use crate::{Record, Trace, TraceError, TraceMeta};

/// The layout, for messages.
pub(crate) const LAYOUT: &str = "time device lba_512B size_sectors flags";

/// Default time unit: nanoseconds (MQSim).
const TIME_UNIT_NS: u64 = 1;

/// Parse one line.
pub(crate) fn parse_line(line: &str, unit_ns: u64) -> Result<Line, String> {
    let [time, dev, lba, size, flags] = split_ws::<5>(line, LAYOUT)?;
    let time_ns = decimal_ns(time, unit_ns, "time")?;
    let dev = dev16(uint(dev, "device")?, "device")?;
    let offset = mul(uint(lba, "lba (512-byte sectors)")?, 512, "lba")?;
    let size = mul(uint(size, "size (512-byte sectors)")?, 512, "size")?;
    let size = size32(size, "size")?;
    let flags = uint(flags, "flags (1 = read, 0 = write)")?;
    let write = flags & 1 == 0;
    Ok(Line::Record(Record::block(
        time_ns, dev, offset, size, write, 0,
    )))
}

/// Read a whole DiskSim/MQSim file.
pub(crate) fn read(ctx: &mut Ctx<'_>, unit_ns: Option<u64>) -> Result<Trace, TraceError> {
    let unit = unit_ns.unwrap_or(TIME_UNIT_NS);
    let mut records = text::read_lines(ctx, |_, line| parse_line(line, unit))?;
    text::relative_times(&mut records);
    Ok(Trace::new(TraceMeta::default(), records))
}

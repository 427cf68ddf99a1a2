//! `csv:MAPPING`: any delimited text trace, given which column holds what
//! (libCacheSim's `csv` reader takes the same idea as `time-col=…,
//! obj-id-col=…`).
//!
//! ```text
//! --format csv:time=1,op=3,lbn=5,size=4
//! --format 'csv:time=1:us,offset=2,size=3:sectors,op=4,write=1,sep=tab,header=1'
//! ```
//!
//! Keys (columns are 1-based; `:UNIT` is optional):
//!
//! | key | meaning | unit (default) |
//! |---|---|---|
//! | `offset=N[:U]` | start address | bytes per unit (`1`) |
//! | `lbn=N[:U]` | start address | bytes per unit (`512`, a sector) |
//! | `block=N[:U]` | start address | bytes per unit (`4096`) |
//! | `size=N[:U]` | request size; absent: one 4 KiB block | bytes per unit (`1`) |
//! | `time=N[:U]` | timestamp, decimal; absent: 0 | `s`, `ms`, `us`, `ns` (`s`) |
//! | `op=N` | operation: `r`/`read`/`R…` is a read, `w`/`write`/`W…` a write; absent: all reads | |
//! | `write=V` | with `op`: the value `V` is a write and any other value a read (numeric codes) | |
//! | `dev=N`, `pid=N` | device number, process id (integers) | |
//! | `sep=S` | field separator: `,` `;` `tab` `space` (runs of blanks) | `,` |
//! | `header=K` | lines to skip at the top; absent: the first line is skipped if its address field is not a number | |
//!
//! Exactly one of `offset`, `lbn`, `block` is required. A byte unit is a
//! size (`512`, `4KiB`) or `sectors` (512) / `blocks` (4096). Times are made
//! relative to the earliest request, as in every text format.

use super::text::{self, decimal_ns, dev16, mul, show, size32, uint, Ctx, Line};
use crate::{Record, Trace, TraceError, TraceMeta};
use outrider_core::BLOCK_SIZE;

/// Most columns a mapping may name (1-based column numbers up to this).
const MAX_COLUMN: usize = 255;

/// One mapped column: its 0-based index and unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Column {
    /// 0-based field index.
    pub index: u8,
    /// Bytes per unit (addresses, sizes) or nanoseconds per unit (time).
    pub unit: u64,
}

/// How to read a delimited trace: the parsed `csv:…` mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CsvSpec {
    /// Start address column (bytes per unit).
    pub offset: Column,
    /// Size column (bytes per unit); `None`: every request is one 4 KiB block.
    pub size: Option<Column>,
    /// Time column (ns per unit); `None`: every request at time 0.
    pub time: Option<Column>,
    /// Operation column.
    pub op: Option<u8>,
    /// With `op`: the value meaning "write" (at most 8 bytes); `None`:
    /// letters (`r…` read, `w…` write).
    pub write_value: Option<([u8; 8], u8)>,
    /// Device number column.
    pub dev: Option<u8>,
    /// Process id column.
    pub pid: Option<u8>,
    /// Field separator; `b' '` splits at runs of blanks.
    pub sep: u8,
    /// Lines to skip at the top; `None`: auto (see the module comment).
    pub header: Option<u8>,
}

impl CsvSpec {
    /// Parse the mapping after `csv:` (see the module comment).
    pub fn parse(mapping: &str) -> Result<CsvSpec, String> {
        let mut offset = None;
        let mut spec = CsvSpec {
            offset: Column { index: 0, unit: 1 },
            size: None,
            time: None,
            op: None,
            write_value: None,
            dev: None,
            pid: None,
            sep: b',',
            header: None,
        };
        for item in mapping.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("expected KEY=VALUE, found `{item}`"))?;
            let (col, unit) = value.split_once(':').unwrap_or((value, ""));
            let addr = |default: u64| -> Result<Option<Column>, String> {
                Ok(Some(column(key, col, byte_unit(key, unit, default)?)?))
            };
            match key.trim() {
                "offset" | "lbn" | "block" if offset.is_some() => {
                    return Err(format!(
                        "`{key}`: the address is already given; use one of offset, lbn, block"
                    ))
                }
                "offset" => offset = addr(1)?,
                "lbn" => offset = addr(512)?,
                "block" => offset = addr(BLOCK_SIZE)?,
                "size" => spec.size = addr(1)?,
                "time" => spec.time = Some(column(key, col, time_unit(unit)?)?),
                "op" => spec.op = Some(column(key, value, 1)?.index),
                "dev" => spec.dev = Some(column(key, value, 1)?.index),
                "pid" => spec.pid = Some(column(key, value, 1)?.index),
                "write" => spec.write_value = Some(short_value(value)?),
                "sep" => spec.sep = separator(value)?,
                "header" => {
                    spec.header = Some(value.parse().map_err(|_| {
                        format!("header: expected a number of lines (0-255), found `{value}`")
                    })?)
                }
                other => {
                    return Err(format!(
                        "unknown key `{other}`; expected offset|lbn|block, size, time, op, \
                         write, dev, pid, sep, header"
                    ))
                }
            }
        }
        spec.offset = offset.ok_or("expected an address column: offset=N, lbn=N or block=N")?;
        if spec.write_value.is_some() && spec.op.is_none() {
            return Err("write=V needs an op=N column".into());
        }
        Ok(spec)
    }

    /// Is `value` (an op field) a write?
    fn is_write(&self, value: &str) -> Result<bool, String> {
        if let Some((bytes, len)) = self.write_value {
            return Ok(value.as_bytes() == &bytes[..usize::from(len)]);
        }
        match value.as_bytes().first().map(u8::to_ascii_lowercase) {
            Some(b'r') => Ok(false),
            Some(b'w') => Ok(true),
            _ => Err(format!(
                "expected an operation starting with r (read) or w (write), found {} \
                 (numeric codes need write=V in the mapping)",
                show(value)
            )),
        }
    }

    /// The fields of `line`.
    fn fields<'a>(&self, line: &'a str) -> Vec<&'a str> {
        if self.sep == b' ' {
            line.split_whitespace().collect()
        } else {
            line.split(char::from(self.sep)).map(str::trim).collect()
        }
    }

    /// Parse one row.
    fn row(&self, line: &str) -> Result<Line, String> {
        let f = self.fields(line);
        let get = |i: u8, what: &str| {
            f.get(usize::from(i)).copied().ok_or_else(|| {
                format!(
                    "expected {what} in column {}, found {} fields: {}",
                    usize::from(i) + 1,
                    f.len(),
                    show(line)
                )
            })
        };
        let o = self.offset;
        let offset = mul(
            uint(get(o.index, "the address")?, "the address")?,
            o.unit,
            "address",
        )?;
        let size = match self.size {
            Some(c) => {
                let n = mul(uint(get(c.index, "the size")?, "the size")?, c.unit, "size")?;
                size32(n, "size")?
            }
            None => BLOCK_SIZE as u32,
        };
        let time_ns = match self.time {
            Some(c) => decimal_ns(get(c.index, "the time")?, c.unit, "the time")?,
            None => 0,
        };
        let write = match self.op {
            Some(i) => self.is_write(get(i, "the operation")?)?,
            None => false,
        };
        let dev = match self.dev {
            Some(i) => dev16(uint(get(i, "the device")?, "the device")?, "the device")?,
            None => 0,
        };
        let pid = match self.pid {
            Some(i) => {
                let v = uint(get(i, "the pid")?, "the pid")?;
                u32::try_from(v).map_err(|_| format!("expected a pid below 2^32, found {v}"))?
            }
            None => 0,
        };
        Ok(Line::Record(Record::block(
            time_ns, dev, offset, size, write, pid,
        )))
    }

    /// Is `line` a header under the auto rule (its address is not a number)?
    fn looks_like_header(&self, line: &str) -> bool {
        let f = self.fields(line);
        f.get(usize::from(self.offset.index))
            .is_none_or(|v| uint(v, "").is_err())
    }
}

/// `N` (1-based) as a column.
fn column(key: &str, n: &str, unit: u64) -> Result<Column, String> {
    match n.trim().parse::<usize>() {
        Ok(i @ 1..=MAX_COLUMN) => Ok(Column {
            index: (i - 1) as u8,
            unit,
        }),
        _ => Err(format!(
            "{key}: expected a column number 1-{MAX_COLUMN}, found `{n}`"
        )),
    }
}

/// A byte unit: empty (the default), `sectors`, `blocks`, or a size.
fn byte_unit(key: &str, unit: &str, default: u64) -> Result<u64, String> {
    let u = match unit.trim().to_ascii_lowercase().as_str() {
        "" => default,
        "sector" | "sectors" => 512,
        "block" | "blocks" => BLOCK_SIZE,
        other => outrider_core::size::parse_size(other).map_err(|e| format!("{key}: {e}"))?,
    };
    if u == 0 {
        return Err(format!("{key}: a unit of 0 bytes"));
    }
    Ok(u)
}

/// A time unit in nanoseconds: `s` (default), `ms`, `us`, `ns`.
fn time_unit(unit: &str) -> Result<u64, String> {
    match unit.trim() {
        "" | "s" => Ok(1_000_000_000),
        "ms" => Ok(1_000_000),
        "us" | "µs" => Ok(1_000),
        "ns" => Ok(1),
        other => Err(format!(
            "time: unknown unit `{other}`, expected s, ms, us or ns"
        )),
    }
}

/// A field separator.
fn separator(s: &str) -> Result<u8, String> {
    match s {
        "tab" | "\\t" => Ok(b'\t'),
        "space" | " " => Ok(b' '),
        ";" | "|" | ":" => Ok(s.as_bytes()[0]),
        "comma" => Ok(b','),
        other => Err(format!(
            "sep: expected comma, ;, |, :, tab or space, found `{other}` \
             (a comma cannot be written inside the mapping: it is the default)"
        )),
    }
}

/// A short literal (the write code).
fn short_value(v: &str) -> Result<([u8; 8], u8), String> {
    let v = v.trim();
    if v.is_empty() || v.len() > 8 {
        return Err(format!("write: expected 1 to 8 characters, found `{v}`"));
    }
    let mut b = [0u8; 8];
    b[..v.len()].copy_from_slice(v.as_bytes());
    Ok((b, v.len() as u8))
}

/// Read a delimited trace with mapping `spec`.
pub(crate) fn read(ctx: &mut Ctx<'_>, spec: &CsvSpec) -> Result<Trace, TraceError> {
    let mut line_index = 0u32;
    let mut records = text::read_lines(ctx, |_, line| {
        line_index += 1;
        let skip = match spec.header {
            Some(k) => line_index <= u32::from(k),
            None => line_index == 1 && spec.looks_like_header(line),
        };
        if skip {
            return Ok(Line::Skip);
        }
        spec.row(line)
    })?;
    text::relative_times(&mut records);
    Ok(Trace::new(TraceMeta::default(), records))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(spec: &str, line: &str) -> Result<Record, String> {
        match CsvSpec::parse(spec)?.row(line)? {
            Line::Record(r) => Ok(r),
            _ => Err("not a record".into()),
        }
    }

    #[test]
    fn mapping_with_units_gives_bytes_and_nanoseconds() {
        let r = rec("time=1:us,op=3,lbn=5,size=4", "12,x,W,8192,10").unwrap();
        assert_eq!(
            (r.time_ns, r.offset, r.size, r.is_write()),
            (12_000, 5120, 8192, true)
        );
        let r = rec("block=2,size=3:sectors,sep=tab", "a\t7\t2").unwrap();
        assert_eq!((r.offset, r.size, r.is_write()), (7 * 4096, 1024, false));
        let r = rec("offset=1,op=2,write=1,sep=space", "4096   0").unwrap();
        assert!(!r.is_write() && r.size == 4096);
        assert!(rec("offset=1,op=2,write=1", "4096,1").unwrap().is_write());
    }

    #[test]
    fn bad_mappings_and_rows_say_what_was_expected() {
        for (spec, needle) in [
            ("time=1", "address column"),
            ("lbn=1,offset=2", "already given"),
            ("lbn=0", "column number"),
            ("lbn=1,colour=2", "unknown key"),
            ("lbn=1,time=2:h", "unknown unit"),
            ("lbn=1,write=1", "needs an op"),
        ] {
            let e = CsvSpec::parse(spec).unwrap_err();
            assert!(e.contains(needle), "{spec}: {e}");
        }
        let e = rec("lbn=3", "1,2").unwrap_err();
        assert!(
            e.contains("column 3") && e.contains("found 2 fields"),
            "{e}"
        );
        let e = rec("lbn=1,op=2", "1,2").unwrap_err();
        assert!(e.contains("write=V"), "{e}");
    }
}

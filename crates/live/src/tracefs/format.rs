//! Parsers for tracefs' self-description: `events/header_page` (the layout
//! of a ring-buffer page) and `events/SYSTEM/EVENT/format` (an event's id and
//! the offset and size of each field).
//!
//! Field offsets are never hard-coded: they change between kernel versions
//! (`mm_filemap_add_to_page_cache` gained `pfn` before `i_ino`, for one), so
//! every decoder looks them up by name in the format file of the running
//! kernel.

use std::fmt;

/// One field of an event record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Field name (`i_ino`, `s_dev`, `common_pid`).
    pub name: String,
    /// Byte offset within the record.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// `signed:1`.
    pub signed: bool,
    /// A `__data_loc` field: a u32 holding (length << 16 | offset).
    pub data_loc: bool,
}

/// A parsed `format` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// Event name.
    pub name: String,
    /// Event id (`common_type` of its records).
    pub id: u16,
    /// Every field, common ones included.
    pub fields: Vec<Field>,
}

/// A format file did not say what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    /// The file (or event) being parsed.
    pub what: String,
    /// What was wrong.
    pub msg: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.msg)
    }
}

impl std::error::Error for FormatError {}

fn err(what: &str, msg: impl Into<String>) -> FormatError {
    FormatError {
        what: what.into(),
        msg: msg.into(),
    }
}

/// Parse one `field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;` line.
fn parse_field(line: &str, what: &str) -> Result<Field, FormatError> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';') {
        let part = part.trim();
        if let Some(d) = part.strip_prefix("field:") {
            decl = Some(d.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let decl = decl.ok_or_else(|| err(what, format!("no 'field:' in line '{line}'")))?;
    // The name is the last identifier of the declaration, without array
    // brackets: "char rwbs[10]" -> rwbs, "__data_loc char[] cmd" -> cmd.
    let last = decl.rsplit([' ', '\t']).next().unwrap_or(decl);
    let name = last.split('[').next().unwrap_or(last).to_string();
    if name.is_empty() {
        return Err(err(what, format!("no field name in '{decl}'")));
    }
    Ok(Field {
        name,
        offset: offset.ok_or_else(|| err(what, format!("no offset in line '{line}'")))?,
        size: size.ok_or_else(|| err(what, format!("no size in line '{line}'")))?,
        signed,
        data_loc: decl.starts_with("__data_loc"),
    })
}

/// Parse an event's `format` file.
pub fn parse_format(text: &str, what: &str) -> Result<EventFormat, FormatError> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = t.strip_prefix("ID:") {
            id = Some(
                v.trim()
                    .parse::<u16>()
                    .map_err(|_| err(what, format!("bad ID '{}'", v.trim())))?,
            );
        } else if t.starts_with("field:") {
            fields.push(parse_field(t, what)?);
        }
    }
    Ok(EventFormat {
        name: name.ok_or_else(|| err(what, "no 'name:' line"))?,
        id: id.ok_or_else(|| err(what, "no 'ID:' line"))?,
        fields,
    })
}

impl EventFormat {
    /// The field called `name`, or an error naming the event.
    pub fn field(&self, name: &str) -> Result<&Field, FormatError> {
        self.fields.iter().find(|f| f.name == name).ok_or_else(|| {
            err(
                &self.name,
                format!(
                    "no field '{name}' (fields: {})",
                    self.fields
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
    }
}

/// Layout of a ring-buffer page, from `events/header_page`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    /// Offset and size of the page's base timestamp.
    pub timestamp: (usize, usize),
    /// Offset and size of the commit word (data length plus flags).
    pub commit: (usize, usize),
    /// Offset of the first event.
    pub data_offset: usize,
    /// Bytes of event data a page can hold.
    pub data_size: usize,
}

/// Parse `events/header_page`.
pub fn parse_header_page(text: &str) -> Result<PageLayout, FormatError> {
    let what = "events/header_page";
    let mut ts = None;
    let mut commit = None;
    let mut data = None;
    for line in text.lines() {
        let t = line.trim();
        if !t.starts_with("field:") {
            continue;
        }
        let f = parse_field(t, what)?;
        match f.name.as_str() {
            "timestamp" => ts = Some((f.offset, f.size)),
            "commit" => commit = Some((f.offset, f.size)),
            "data" => data = Some((f.offset, f.size)),
            _ => {}
        }
    }
    let (data_offset, data_size) = data.ok_or_else(|| err(what, "no 'data' field"))?;
    Ok(PageLayout {
        timestamp: ts.ok_or_else(|| err(what, "no 'timestamp' field"))?,
        commit: commit.ok_or_else(|| err(what, "no 'commit' field"))?,
        data_offset,
        data_size,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Verbatim from this machine's kernel (6.18), so the parser is tested
    /// on the real syntax.
    pub(crate) const GET_PAGES: &str = "name: mm_filemap_get_pages
ID: 599
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned long i_ino;\toffset:8;\tsize:8;\tsigned:0;
\tfield:dev_t s_dev;\toffset:16;\tsize:4;\tsigned:0;
\tfield:unsigned long index;\toffset:24;\tsize:8;\tsigned:0;
\tfield:unsigned long last_index;\toffset:32;\tsize:8;\tsigned:0;

print fmt: \"dev=%d:%d ino=%lx\", REC->i_ino
";

    #[test]
    fn parses_real_format_file() {
        let f = parse_format(GET_PAGES, "get_pages").unwrap();
        assert_eq!(f.name, "mm_filemap_get_pages");
        assert_eq!(f.id, 599);
        assert_eq!(f.fields.len(), 8);
        let ino = f.field("i_ino").unwrap();
        assert_eq!((ino.offset, ino.size, ino.signed), (8, 8, false));
        let pid = f.field("common_pid").unwrap();
        assert_eq!((pid.offset, pid.size, pid.signed), (4, 4, true));
        assert_eq!(f.field("last_index").unwrap().offset, 32);
        let e = f.field("nope").unwrap_err().to_string();
        assert!(e.contains("no field 'nope'") && e.contains("s_dev"), "{e}");
    }

    #[test]
    fn array_and_data_loc_field_names() {
        let a = parse_field("field:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;", "t").unwrap();
        assert_eq!(
            (a.name.as_str(), a.offset, a.size, a.data_loc),
            ("rwbs", 34, 10, false)
        );
        let d = parse_field(
            "field:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;",
            "t",
        )
        .unwrap();
        assert_eq!((d.name.as_str(), d.offset, d.data_loc), ("cmd", 60, true));
    }

    #[test]
    fn parses_real_header_page() {
        let text = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;
";
        let l = parse_header_page(text).unwrap();
        assert_eq!(
            l,
            PageLayout {
                timestamp: (0, 8),
                commit: (8, 8),
                data_offset: 16,
                data_size: 4080
            }
        );
    }

    #[test]
    fn missing_id_is_a_clear_error() {
        let e = parse_format("name: x\nformat:\n", "events/x/format")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "events/x/format: no 'ID:' line");
    }
}

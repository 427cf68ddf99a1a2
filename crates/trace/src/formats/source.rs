//! Where a trace's bytes come from: a regular file, a compressed file, or a
//! pipe.
//!
//! Traces are published compressed (libCacheSim's `*.oracleGeneral.bin.zst`,
//! SNIA's MSR `*.csv.gz`) and users pass them through process substitution
//! (`<(zcat t.gz)`). Every reader therefore takes its bytes from a
//! [`Source`]:
//!
//! * **File** — a regular, uncompressed file: readers may reopen it, learn
//!   its length and map it (the native format replays a mapped file
//!   without copying).
//! * **Stream** — anything else: a file whose first bytes are the zstd
//!   magic `28 b5 2f fd` or the gzip magic `1f 8b` (decompressed on the
//!   fly, concatenated frames/members included), or a file that is not
//!   regular (a pipe, a FIFO, `/dev/stdin`). A stream is read exactly once:
//!   its first [`SNIFF_BYTES`] are kept for format detection and handed to
//!   the reader ahead of the rest, so detection consumes nothing (a pipe
//!   read twice would give 0 requests the second time).
//!
//! Compression is recognised by content, never by file name, so a `.zst`
//! holding an oracleGeneral trace and one holding a CSV are both detected
//! inside the decompressed stream.

use crate::TraceError;
use std::fs::File;
use std::io::{BufRead, BufReader, Chain, Cursor, Read};
use std::path::Path;

/// Bytes read for format detection.
pub(crate) const SNIFF_BYTES: usize = 64 * 1024;
/// Read buffer for streamed input.
const READ_BUFFER_BYTES: usize = 256 * 1024;

/// zstd frame magic (RFC 8878 §3.1.1).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// gzip member magic (RFC 1952 §2.3.1).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// How a file is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Zstandard (`.zst`).
    Zstd,
    /// gzip (`.gz`).
    Gzip,
}

impl Compression {
    /// The name used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Zstd => "zstd",
            Compression::Gzip => "gzip",
        }
    }

    fn of(head: &[u8]) -> Option<Compression> {
        if head.starts_with(&ZSTD_MAGIC) {
            Some(Compression::Zstd)
        } else if head.starts_with(&GZIP_MAGIC) {
            Some(Compression::Gzip)
        } else {
            None
        }
    }
}

type Boxed = Box<dyn Read + Send>;

/// An opened input.
pub(crate) enum Source {
    /// A regular, uncompressed file of `len` bytes.
    File {
        /// Its length in bytes.
        len: u64,
    },
    /// Decompressed or piped bytes: `head` (up to [`SNIFF_BYTES`]) first,
    /// then `rest`. `None` once a reader took it.
    Stream {
        /// The first bytes, already read.
        head: Vec<u8>,
        /// Everything after `head`.
        rest: Option<Boxed>,
        /// All bytes are in `head` (the stream ended within the sniff).
        complete: bool,
        /// How it was compressed, if it was.
        compression: Option<Compression>,
    },
}

impl Source {
    /// Open `path` and classify it (see the module comment).
    pub fn open(path: &Path) -> Result<Source, TraceError> {
        let io = |e| TraceError::io(path, e);
        let mut file = File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if meta.is_file() {
            let mut magic = [0u8; 4];
            let got = read_full(&mut (&file).take(4), &mut magic).map_err(io)?;
            match Compression::of(&magic[..got]) {
                None => return Ok(Source::File { len: meta.len() }),
                Some(c) => {
                    let file = File::open(path).map_err(io)?;
                    return Source::stream(path, decoder(c, Box::new(file), path)?, Some(c));
                }
            }
        }
        // Not a regular file: read it once, magic included.
        let mut magic = [0u8; 4];
        let got = read_full(&mut file, &mut magic).map_err(io)?;
        let whole: Boxed = Box::new(Cursor::new(magic[..got].to_vec()).chain(file));
        match Compression::of(&magic[..got]) {
            None => Source::stream(path, whole, None),
            Some(c) => Source::stream(path, decoder(c, whole, path)?, Some(c)),
        }
    }

    fn stream(
        path: &Path,
        mut rest: Boxed,
        compression: Option<Compression>,
    ) -> Result<Source, TraceError> {
        let mut head = vec![0u8; SNIFF_BYTES];
        let got = read_full(&mut rest, &mut head).map_err(|e| TraceError::io(path, e))?;
        head.truncate(got);
        Ok(Source::Stream {
            complete: got < SNIFF_BYTES,
            head,
            rest: Some(rest),
            compression,
        })
    }

    /// The first bytes and, when known, the total length (for detection).
    pub fn head(&self, path: &Path) -> Result<(Vec<u8>, Option<u64>), TraceError> {
        match self {
            Source::File { len } => {
                let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
                let mut head = Vec::new();
                file.take(SNIFF_BYTES as u64)
                    .read_to_end(&mut head)
                    .map_err(|e| TraceError::io(path, e))?;
                Ok((head, Some(*len)))
            }
            Source::Stream { head, complete, .. } => {
                Ok((head.clone(), complete.then_some(head.len() as u64)))
            }
        }
    }

    /// The length in bytes, if known before reading (regular files, and
    /// streams that ended within the sniffed head).
    pub fn len(&self) -> Option<u64> {
        match self {
            Source::File { len } => Some(*len),
            Source::Stream { head, complete, .. } => complete.then_some(head.len() as u64),
        }
    }

    /// How the input is compressed, if it is.
    pub fn compression(&self) -> Option<Compression> {
        match self {
            Source::File { .. } => None,
            Source::Stream { compression, .. } => *compression,
        }
    }

    /// A buffered reader over all the bytes, from the start. A stream can
    /// be taken once; a second call is an error.
    pub fn reader(&mut self, path: &Path) -> Result<Box<dyn BufRead + Send>, TraceError> {
        match self {
            Source::File { .. } => {
                let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
                Ok(Box::new(BufReader::with_capacity(READ_BUFFER_BYTES, file)))
            }
            Source::Stream { head, rest, .. } => {
                let rest = rest.take().ok_or_else(|| {
                    TraceError::io(path, std::io::Error::other("the stream was already read"))
                })?;
                let all: Chain<Cursor<Vec<u8>>, Boxed> =
                    Cursor::new(std::mem::take(head)).chain(rest);
                Ok(Box::new(BufReader::with_capacity(READ_BUFFER_BYTES, all)))
            }
        }
    }
}

/// A decompressor over `input`; its errors say which compression failed.
fn decoder(c: Compression, input: Boxed, path: &Path) -> Result<Boxed, TraceError> {
    let inner: Boxed = match c {
        Compression::Zstd => {
            Box::new(zstd::stream::read::Decoder::new(input).map_err(|e| TraceError::io(path, e))?)
        }
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::new(input))),
    };
    Ok(Box::new(Labelled { inner, what: c }))
}

/// Prefixes decompression errors with the compression's name.
struct Labelled {
    inner: Boxed,
    what: Compression,
}

impl Read for Labelled {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("expected {} data, found an error: {e}", self.what.name()),
            )
        })
    }
}

/// Fill `buf` as far as the input allows; the number of bytes read.
pub(crate) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

//! Byte sizes written the way people write them: `4096`, `64KiB`, `256MiB`,
//! `2GiB` (also `64K`, `64k`, `64KB`; all powers of 1024).

use std::fmt;

/// A size in bytes that parses from and prints as `64KiB`-style text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// The size in 4 KiB blocks, rounded up.
    pub fn blocks(self) -> u64 {
        self.0.div_ceil(crate::BLOCK_SIZE)
    }
}

/// Parse a size: a non-negative integer with an optional binary unit suffix
/// (`B`, `K`/`KB`/`KiB`, `M`/`MB`/`MiB`, `G`/`GB`/`GiB`, `T`/`TB`/`TiB`,
/// any case). Returns a message naming what was expected on failure.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err(format!(
            "'{text}' is not a size: expected a number with an optional unit, e.g. 4096, 64KiB, 256MiB, 2GiB"
        ));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is too large for a size"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(format!(
                "'{text}': unknown size unit '{other}', expected B, KiB, MiB, GiB or TiB"
            ))
        }
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("'{text}' is too large for a size"))
}

impl std::str::FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_size(s).map(ByteSize)
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if b >= (1 << shift) && b.is_multiple_of(1 << shift) {
                return write!(f, "{}{unit}", b >> shift);
            }
        }
        write!(f, "{b}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_design_md_promises() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("8k"), Ok(8192));
    }

    #[test]
    fn rejects_garbage_with_a_message() {
        assert!(parse_size("").unwrap_err().contains("expected a number"));
        assert!(parse_size("12XB")
            .unwrap_err()
            .contains("unknown size unit"));
        assert!(parse_size("99999999999999999999").is_err());
        assert!(parse_size("16777216TiB").unwrap_err().contains("too large"));
    }

    #[test]
    fn display_round_trips() {
        for s in ["4KiB", "64KiB", "256MiB", "2GiB", "1000"] {
            let b: ByteSize = s.parse().unwrap();
            assert_eq!(b.to_string(), s);
        }
    }
}

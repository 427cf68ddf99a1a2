//! Byte sizes and durations written the way people write them.
//!
//! Sizes: `4096`, `64KiB`, `256MiB`, `1.5GiB`. Binary (IEC) units are
//! powers of 1024: `KiB`, `MiB`, `GiB`, `TiB`, and the single letters `K`,
//! `M`, `G`, `T` as coreutils (`dd`, `sort -S`) reads them. Decimal (SI)
//! units are powers of 1000: `kB`, `MB`, `GB`, `TB`. Units are read in any
//! case. So `1MB` is
//! 1 000 000 bytes and `1MiB` (or `1M`) 1 048 576. A fraction is exact
//! and must come to whole bytes after the unit (`1.5KiB` = 1536; `0.3KiB`
//! is refused).
//!
//! Durations ([`parse_duration_ns`]): `0`, `250ns`, `20us` (`µs`),
//! `1.5ms`, `2s`. A non-zero number needs a unit: whether `5` meant
//! seconds or nanoseconds is a factor of 10^9 nobody should guess.

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

/// Why a decimal number scaled by a unit could not be taken.
enum Scaled {
    /// Not a non-negative decimal number.
    NotANumber,
    /// Above `u64::MAX` once scaled.
    TooLarge,
    /// Not a whole number of the base unit once scaled.
    Fraction,
}

/// `num` (digits with at most one `.`) times `mult`, exactly.
fn scale_decimal(num: &str, mult: u64) -> Result<u64, Scaled> {
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits_ok = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits_ok(int) || !digits_ok(frac) {
        return Err(Scaled::NotANumber);
    }
    let frac = frac.trim_end_matches('0');
    let int = int.trim_start_matches('0');
    // More than 20 integer digits is above u64::MAX whatever the unit; more
    // than 19 fraction digits cannot come to whole units (mult < 10^20).
    if int.len() > 20 {
        return Err(Scaled::TooLarge);
    }
    if frac.len() > 19 {
        return Err(Scaled::Fraction);
    }
    let whole: u128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| Scaled::NotANumber)?
    };
    let parts: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| Scaled::NotANumber)?
    };
    let denom = 10u128.pow(frac.len() as u32);
    let m = u128::from(mult);
    let frac_scaled = parts * m;
    if !frac_scaled.is_multiple_of(denom) {
        return Err(Scaled::Fraction);
    }
    let total = whole
        .checked_mul(m)
        .and_then(|w| w.checked_add(frac_scaled / denom))
        .ok_or(Scaled::TooLarge)?;
    u64::try_from(total).map_err(|_| Scaled::TooLarge)
}

/// Split `text` into its number and its unit (letters after the digits).
fn number_and_unit(text: &str) -> (&str, &str) {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    (num, unit.trim())
}

/// The multiplier of a size unit (any case), or `None` if it is not one.
fn size_unit(unit: &str) -> Option<u64> {
    const K: u64 = 1024;
    Some(match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" | "k" => K,
        "mib" | "m" => K * K,
        "gib" | "g" => K * K * K,
        "tib" | "t" => K * K * K * K,
        "kb" => 1000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return None,
    })
}

/// Parse a size: a non-negative decimal number with an optional unit
/// (binary `KiB`, `MiB`, `GiB`, `TiB` or `K`, `M`, `G`, `T`; decimal
/// `kB`, `MB`, `GB`, `TB`; see the module documentation). Returns a
/// message naming what was expected on failure.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let (num, unit) = number_and_unit(text);
    let expected = "expected a number with an optional unit, e.g. 4096, 64KiB, 1.5GiB, 100MB";
    if num.is_empty() {
        return Err(format!("'{text}' is not a size: {expected}"));
    }
    let mult = size_unit(unit).ok_or_else(|| {
        format!(
            "'{text}': unknown size unit '{unit}', expected B, KiB, MiB, GiB, TiB (powers of 1024; \
             also K, M, G, T) or kB, MB, GB, TB (powers of 1000)"
        )
    })?;
    scale_decimal(num, mult).map_err(|e| match e {
        Scaled::NotANumber => format!("'{text}' is not a size: {expected}"),
        Scaled::TooLarge => format!("'{text}' is too large for a size (at most 2^64-1 bytes)"),
        Scaled::Fraction => format!("'{text}' is not a whole number of bytes"),
    })
}

/// Parse a duration into nanoseconds: `0`, `250ns`, `20us` (or `20µs`),
/// `1.5ms`, `2s`. A non-zero number without a unit is refused. Returns a
/// message naming what was expected on failure.
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let (num, unit) = number_and_unit(text);
    let expected = "expected a duration such as 0, 250ns, 20us, 1.5ms or 2s";
    let mult = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "" => 1,
        _ => {
            return Err(format!(
                "'{text}': unknown time unit '{unit}', expected ns, us, ms or s"
            ))
        }
    };
    let ns = scale_decimal(num, mult).map_err(|e| match e {
        Scaled::NotANumber => format!("'{text}' is not a duration: {expected}"),
        Scaled::TooLarge => format!("'{text}' is too long (at most 2^64-1 ns, 584 years)"),
        Scaled::Fraction => format!("'{text}' is not a whole number of nanoseconds"),
    })?;
    if unit.is_empty() && ns != 0 {
        return Err(format!(
            "'{text}' has no unit: write {num}ns, {num}us, {num}ms or {num}s"
        ));
    }
    Ok(ns)
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
    fn si_units_are_powers_of_1000_and_iec_units_powers_of_1024() {
        assert_eq!(parse_size("1MB"), Ok(1_000_000));
        assert_eq!(parse_size("1kB"), Ok(1000));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("0.5KiB"), Ok(512));
        assert!(parse_size("0.3KiB").unwrap_err().contains("whole number"));
        assert!(parse_size("1.2.3MiB").is_err());
        assert_eq!(parse_size("64kib"), Ok(65536));
        assert!(parse_size("1Mbit")
            .unwrap_err()
            .contains("unknown size unit"));
    }

    #[test]
    fn durations_need_a_unit_unless_zero() {
        assert_eq!(parse_duration_ns("0"), Ok(0));
        assert_eq!(parse_duration_ns("20us"), Ok(20_000));
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration_ns("2s"), Ok(2_000_000_000));
        assert!(parse_duration_ns("5").unwrap_err().contains("no unit"));
        assert!(parse_duration_ns("5 parsecs").is_err());
        assert!(parse_duration_ns("0.5ns").unwrap_err().contains("whole"));
        // 18446744074 s is just above 2^64 ns.
        assert!(parse_duration_ns("18446744074s")
            .unwrap_err()
            .contains("too long"));
        assert_eq!(
            parse_duration_ns("18446744073s"),
            Ok(18_446_744_073_000_000_000)
        );
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

//! Arbitrary bytes never make a reader (or detection) panic: each answer is
//! a trace or an error. Also structured junk near the real layouts, which
//! reaches deeper into the parsers than uniform random bytes.

use outrider_trace::{detect_format, read_trace, Format, ReadOptions, NATIVE_MAGIC};
use proptest::prelude::*;

fn feed(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("fuzz");
    std::fs::write(&p, bytes).unwrap();
    let _ = detect_format(&p);
    let _ = read_trace(&p, &ReadOptions::default());
    for f in Format::ALL {
        for lenient in [false, true] {
            let _ = read_trace(&p, &ReadOptions::default().format(f).lenient(lenient));
        }
    }
}

/// Text built from the formats' own tokens.
fn near_text() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just("1".to_string()),
        Just("0".into()),
        Just("2a".into()),
        Just("28".into()),
        Just(",".into()),
        Just(" ".into()),
        Just("\n".into()),
        Just("+".into()),
        Just("8,0".into()),
        Just("Q".into()),
        Just("R".into()),
        Just("W".into()),
        Just("0.000123".into()),
        Just("[grep]".into()),
        Just("Read".into()),
        Just("18446744073709551615".into()),
        Just("99999999999999999999".into()),
        Just("#".into()),
        Just("1e99".into()),
        Just("CPU0".into()),
        Just("\r".into()),
        Just("version,time,op,size,lbn\n".into()),
        any::<u32>().prop_map(|n| n.to_string()),
    ];
    prop::collection::vec(token, 0..60).prop_map(|t| t.concat().into_bytes())
}

/// A native header followed by junk (exercises the header checks).
fn near_native() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<u64>(),
        0u64..200,
        0u64..400,
        any::<u64>(),
        prop::collection::vec(any::<u8>(), 0..400),
    )
        .prop_map(|(version, flags, count, meta_len, start, section, tail)| {
            let mut b = NATIVE_MAGIC.to_vec();
            b.extend_from_slice(&(version % 3).to_le_bytes());
            b.extend_from_slice(&(flags % 3).to_le_bytes());
            b.extend_from_slice(&(count % 20).to_le_bytes());
            b.extend_from_slice(&meta_len.to_le_bytes());
            b.extend_from_slice(&(start & !7).to_le_bytes());
            b.extend_from_slice(&(section % 800).to_le_bytes());
            b.extend_from_slice(&tail);
            b
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        feed(&bytes);
    }

    #[test]
    fn near_text_never_panics(bytes in near_text()) {
        feed(&bytes);
    }

    #[test]
    fn near_native_never_panics(bytes in near_native()) {
        feed(&bytes);
    }

    #[test]
    fn oracle_sized_junk_never_panics(recs in prop::collection::vec(any::<[u8; 24]>(), 0..20)) {
        feed(&recs.concat());
    }
}

//! The history store: a saved model predicts exactly as the one saved; bad
//! files give clear errors (and `load_or_warn` a warning and a fresh model),
//! never a panic.

use outrider_core::params::Params;
use outrider_core::policies::filepred::codec;
use outrider_core::policies::filepred::{EpcmParams, FilePred, LastSuccessorParams, PcmParams};
use outrider_store::{load_or_warn, Store, StoreError};
use proptest::prelude::*;

fn model(spec: &str) -> FilePred {
    let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
    match name {
        "last-successor" => {
            FilePred::last_successor(LastSuccessorParams::parse(name, params).unwrap())
        }
        "pcm" => FilePred::pcm(PcmParams::parse(name, params).unwrap()),
        _ => FilePred::epcm(EpcmParams::parse(name, params).unwrap()),
    }
    .unwrap()
}

fn sequence() -> Vec<u64> {
    // A build-like pattern with shared files, enough to fill small
    // partitions (halvings happen with partition=8).
    let mut v = Vec::new();
    for run in 0..6u64 {
        for unit in 0..12u64 {
            v.extend([
                1000,
                100 + unit,
                1 + unit % 4,
                5 + (unit * 7 + run) % 6,
                2000,
            ]);
        }
    }
    v
}

#[test]
fn saved_models_predict_exactly_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let seq = sequence();
    for spec in [
        "last-successor",
        "pcm",
        "pcm:partition=8",
        "epcm",
        "epcm:partition=8,order=6,jump=2",
    ] {
        let mut a = model(spec);
        for &f in &seq[..200] {
            a.file_event(f);
        }
        {
            let mut s = Store::open(&db).unwrap();
            assert!(s.save_policy("build", spec, &a).unwrap());
        }
        let s = Store::open(&db).unwrap();
        let mut b = model(spec);
        assert!(s.load_into("build", spec, &mut b).unwrap(), "{spec}");
        assert_eq!(a.snapshot(), b.snapshot(), "{spec}");
        for &f in &seq[200..] {
            assert_eq!(a.file_event(f).to_vec(), b.file_event(f).to_vec(), "{spec}");
            assert_eq!(a.model().top(), b.model().top(), "{spec}");
        }
        assert!(s.load_history("other-app", spec).unwrap().is_none());
    }
    // WAL mode and the schema version are recorded.
    let s = Store::open(&db).unwrap();
    let mode: String = s
        .connection()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let v: i64 = s
        .connection()
        .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, outrider_store::SCHEMA_VERSION);
}

#[test]
fn a_corrupted_file_is_a_warning_and_a_fresh_model() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("junk.db");
    std::fs::write(
        &db,
        b"this is not an SQLite database, just some junk bytes ....",
    )
    .unwrap();
    assert!(matches!(Store::open(&db), Err(StoreError::Sqlite { .. })));
    let mut m = model("epcm");
    let fresh = m.snapshot();
    let (store, loaded, warning) = load_or_warn(&db, "build", "epcm", &mut m);
    assert!(store.is_none() && !loaded);
    let w = warning.unwrap();
    assert!(w.contains("junk.db") && w.contains("fresh model"), "{w}");
    assert_eq!(m.snapshot(), fresh);
}

#[test]
fn a_foreign_database_or_newer_schema_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("other.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch("CREATE TABLE photos (id INTEGER)").unwrap();
    }
    let e = Store::open(&db).err().unwrap();
    assert!(matches!(e, StoreError::Foreign { .. }), "{e}");
    assert!(e.to_string().contains("photos"), "{e}");
    let db2 = dir.path().join("newer.db");
    drop(Store::open(&db2).unwrap());
    {
        let c = rusqlite::Connection::open(&db2).unwrap();
        c.execute("UPDATE schema_version SET version = 99", [])
            .unwrap();
    }
    let e = Store::open(&db2).err().unwrap();
    assert!(matches!(e, StoreError::Version { found: 99, .. }), "{e}");
}

#[test]
fn a_corrupted_or_mismatched_model_is_an_error_not_a_mix() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let mut s = Store::open(&db).unwrap();
    let mut a = model("epcm");
    for &f in &sequence()[..100] {
        a.file_event(f);
    }
    assert!(s.save_policy("k", "epcm", &a).unwrap());
    // Another shape refuses the saved model and stays fresh.
    let mut other = model("epcm:partition=16,order=12");
    let fresh = other.snapshot();
    let e = s.load_into("k", "epcm", &mut other).unwrap_err();
    assert!(e.to_string().contains("partition size 64"), "{e}");
    assert_eq!(other.snapshot(), fresh);
    // A damaged blob.
    s.connection()
        .execute("UPDATE models SET data = substr(data, 1, 40)", [])
        .unwrap();
    let e = s.load_into("k", "epcm", &mut model("epcm")).unwrap_err();
    assert!(
        matches!(e, StoreError::Corrupt { .. })
            && (e.to_string().contains("truncated") || e.to_string().contains("exceeds the blob")),
        "{e}"
    );
}

proptest! {
    #[test]
    fn damaged_blobs_never_panic(cut in 0usize..400, flip in 0usize..400, byte in any::<u8>()) {
        let mut a = model("epcm:partition=8,order=6");
        for &f in &sequence()[..80] {
            a.file_event(f);
        }
        let mut blob = codec::encode(&a.snapshot());
        let n = blob.len();
        blob[flip % n] ^= byte;
        blob.truncate(n - cut.min(n));
        if let Ok(snap) = codec::decode(&blob) {
            // Structurally decodable: restoring validates links or refuses.
            let mut b = model("epcm:partition=8,order=6");
            if b.restore(&snap).is_ok() {
                for &f in &sequence()[..50] {
                    b.file_event(f);
                }
            }
        }
    }
}

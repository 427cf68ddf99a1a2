//! `--history DB`: load a policy's learned history before a simulation and
//! save it after (EPCM §6/§7: the model persists), with the store's shared
//! history when the policy names one (DiskSeen's one block table, §3.1).
//! Never fatal: a store or model that cannot be used is one warning on
//! stderr and a fresh model.

use outrider_core::{BoxedPolicy, Policy};
use outrider_store::Store;
use std::path::Path;

/// Open `db` and load `spec`'s history of `key` into `policy`, then the
/// store's shared history. Returns the store to save into afterwards
/// (`None` if the store is unusable or the policy keeps no history).
pub fn load(db: &Path, key: &str, spec: &str, policy: &mut BoxedPolicy) -> Option<Store> {
    if policy.save_history().is_none() && policy.shared_history_name().is_none() {
        return None; // keeps nothing: nothing to load or save
    }
    let store = match Store::open(db) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("warning: {e}; starting with a fresh model, not saving");
            return None;
        }
    };
    match store.load_history(key, spec) {
        Ok(None) => {}
        Ok(Some(blob)) => {
            if let Err(why) = policy.load_history(&blob) {
                eprintln!(
                    "warning: {}: saved history of '{spec}' for '{key}' is unusable ({why}); \
                     starting with a fresh model",
                    db.display()
                );
            }
        }
        Err(e) => eprintln!("warning: {e}; starting with a fresh model"),
    }
    if let Err(e) = store.load_shared_into(policy.as_mut()) {
        eprintln!("warning: {e}; starting without shared history");
    }
    Some(store)
}

/// Save `policy`'s history as `spec` of `key`, and merge its shared
/// history; a failure is a warning.
pub fn save(store: &mut Store, key: &str, spec: &str, policy: &dyn Policy) {
    if let Some(blob) = policy.save_history() {
        if let Err(e) = store.save_history(key, spec, &blob) {
            eprintln!("warning: {e}; history not saved");
        }
    }
    if let Err(e) = store.merge_shared_from(policy) {
        eprintln!("warning: {e}; shared history not saved");
    }
}

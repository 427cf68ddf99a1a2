//! `--history DB`: load a policy's learned history before a simulation and
//! save it after (EPCM §6/§7: the model persists). Never fatal: a store or
//! model that cannot be used is one warning on stderr and a fresh model.

use outrider_core::{BoxedPolicy, Policy};
use outrider_store::Store;
use std::path::Path;

/// Open `db` and load `spec`'s history of `key` into `policy`. Returns the
/// store to save into afterwards (`None` if the store is unusable or the
/// policy keeps no history).
pub fn load(db: &Path, key: &str, spec: &str, policy: &mut BoxedPolicy) -> Option<Store> {
    policy.save_history()?; // keeps nothing: nothing to load or save
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
    Some(store)
}

/// Save `policy`'s history as `spec` of `key`; a failure is a warning.
pub fn save(store: &mut Store, key: &str, spec: &str, policy: &dyn Policy) {
    if let Some(blob) = policy.save_history() {
        if let Err(e) = store.save_history(key, spec, &blob) {
            eprintln!("warning: {e}; history not saved");
        }
    }
}

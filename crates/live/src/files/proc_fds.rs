//! Finding a file by (device, inode) among a process's descriptors and
//! mappings (`/proc/PID/fd`, `/proc/PID/map_files`).

use super::{FileTable, Key, MAX_MAP_NAMES, MAX_SNAPSHOTS};
use outrider_sys::{open_regular, Follow};
use rustc_hash::FxHashMap;
use std::fs::{self, File};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::Instant;

impl FileTable {
    /// Look (dev, ino) up in `pid`'s descriptors (`/proc/PID/fd`) and
    /// mappings (`/proc/PID/map_files`), listed at most once per
    /// [`FileTableOptions::snapshot_ttl`]; open the match read-only.
    pub(super) fn find_in_proc(&mut self, pid: u32, key: Key) -> Option<(File, PathBuf)> {
        let fresh = self
            .snapshots
            .get(&pid)
            .is_some_and(|(t, _)| t.elapsed() < self.opts.snapshot_ttl);
        if !fresh {
            if self.snapshots.len() >= MAX_SNAPSHOTS {
                self.snapshots.clear();
            }
            let listing = self.list_proc(pid);
            self.snapshots.insert(pid, (Instant::now(), listing));
        }
        let p = self.snapshots.get(&pid)?.1.get(&key)?.clone();
        let f = open_regular(&p, Follow::Magic).ok()?;
        // Check that the reopened file is the same one (the descriptor may
        // have been closed and its number reused since the listing).
        let m2 = f.metadata().ok()?;
        if (m2.dev(), m2.ino()) != (key.dev, key.ino) {
            return None;
        }
        // A descriptor of the program is not proof that its user may open
        // the file (a set-user-ID program in the tree, a descriptor passed
        // in): acting for a user, the file's path must open as that user.
        self.user_may_open(&f, key.dev, key.ino).then_some((f, p))
    }

    /// (dev, ino) → entry of every regular file `pid` has open or mapped.
    fn list_proc(&mut self, pid: u32) -> FxHashMap<Key, PathBuf> {
        self.scans += 1;
        let mut out = FxHashMap::default();
        if self.map_names.len() >= MAX_MAP_NAMES {
            self.map_names.clear();
        }
        for sub in ["map_files", "fd"] {
            let dir = PathBuf::from(format!("/proc/{pid}/{sub}"));
            let Ok(rd) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in rd.flatten().take(self.opts.max_scan) {
                let p = entry.path();
                let name = (pid, entry.file_name());
                let key = match (sub, self.map_names.get(&name)) {
                    ("map_files", Some(k)) => *k,
                    _ => {
                        // metadata() follows the magic link to the file.
                        let Ok(md) = fs::metadata(&p) else { continue };
                        if !md.is_file() {
                            continue;
                        }
                        let k = Key {
                            dev: md.dev(),
                            ino: md.ino(),
                        };
                        if sub == "map_files" {
                            self.map_names.insert(name, k);
                        }
                        k
                    }
                };
                // Descriptors (listed last) win over mappings.
                out.insert(key, p);
            }
        }
        out
    }
}

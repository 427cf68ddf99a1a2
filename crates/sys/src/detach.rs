//! Work left to a detached process: kernel waits (RCU grace periods
//! behind an rmdir in tracefs, a tracepoint's unregistering behind the
//! close of its last perf event) that would otherwise be added to a
//! program's wall time after it exited.

use std::ffi::CStr;

/// Run `work` in a grandchild that init adopts, so nobody waits for it;
/// true when it was started. The grandchild closes every descriptor but
/// those in `keep` first (a pipe it held open would keep a reader of our
/// output waiting), names itself `name` and moves to `home` ([`go_home`])
/// unless we are in that cgroup already; `work` must make only
/// async-signal-safe calls on memory prepared before.
///
/// Why not move regardless: a move takes the cgroups' thread-group lock
/// for writing, an RCU grace period even when the cgroup is the same. A
/// parked tracing source moving home that way served the next run 13 ms
/// late (back-to-back `outrider run -- true`: 6-28 ms instead of 4).
pub fn detached(name: &CStr, keep: &[i32], home: Option<&CStr>, work: impl FnOnce()) -> bool {
    let home = home.filter(|h| !in_cgroup(h));
    let mut keep: Vec<u32> = keep
        .iter()
        .filter(|&&f| f >= 0)
        .map(|&f| f as u32)
        .collect();
    keep.sort_unstable();
    keep.dedup();
    // SAFETY: after fork, the children only call async-signal-safe
    // functions (close_range, prctl, open, write, close, _exit, and
    // `work`'s, which promises the same) on memory prepared before it;
    // the parent reaps the intermediate child.
    unsafe {
        let child = libc::fork();
        if child < 0 {
            return false;
        }
        if child == 0 {
            if libc::fork() == 0 {
                close_all_but(&keep);
                libc::prctl(libc::PR_SET_NAME, name.as_ptr());
                go_home(home);
                work();
            }
            libc::_exit(0);
        }
        let mut status = 0;
        libc::waitpid(child, &mut status, 0);
    }
    true
}

/// Whether `procs` is the `cgroup.procs` file of the memory cgroup we are
/// in.
fn in_cgroup(procs: &CStr) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let procs = std::path::Path::new(std::ffi::OsStr::from_bytes(procs.to_bytes()));
    crate::memory::cgroup_memory_dir(None)
        .ok()
        .flatten()
        .is_some_and(|d| d.join("cgroup.procs") == procs)
}

/// Close every descriptor not in `keep` (sorted). Async-signal-safe.
fn close_all_but(keep: &[u32]) {
    let mut from = 0u32;
    for &k in keep {
        if k > from {
            // SAFETY: close_range takes a range and flags.
            unsafe { libc::syscall(libc::SYS_close_range, from, k - 1, 0u32) };
        }
        from = k + 1;
    }
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_close_range, from, u32::MAX, 0u32) };
}

/// Move the calling process into the cgroup whose `cgroup.procs` is
/// `home` (writing 0 names the writer). Async-signal-safe.
pub fn go_home(home: Option<&CStr>) {
    let Some(home) = home else {
        return;
    };
    // SAFETY: a valid NUL-terminated path and a 1-byte buffer; open,
    // write and close are async-signal-safe.
    unsafe {
        let fd = libc::open(home.as_ptr(), libc::O_WRONLY);
        if fd >= 0 {
            libc::write(fd, b"0".as_ptr().cast(), 1);
            libc::close(fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_in_its_own_memory_cgroup_and_no_other() {
        let Some(dir) = crate::memory::cgroup_memory_dir(None).unwrap() else {
            eprintln!("skipped: no memory cgroup controller mounted");
            return;
        };
        let own = std::ffi::CString::new(
            dir.join("cgroup.procs")
                .into_os_string()
                .into_encoded_bytes(),
        )
        .unwrap();
        assert!(in_cgroup(&own), "{}", dir.display());
        let other = std::ffi::CString::new(
            dir.join("elsewhere/cgroup.procs")
                .into_os_string()
                .into_encoded_bytes(),
        )
        .unwrap();
        assert!(!in_cgroup(&other));
    }
}

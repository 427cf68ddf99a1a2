//! Work left to a detached process: kernel waits (RCU grace periods
//! behind an rmdir in tracefs, a tracepoint's unregistering behind the
//! close of its last perf event) that would otherwise be added to a
//! program's wall time after it exited.

use std::ffi::CStr;

/// Run `work` in a grandchild that init adopts, so nobody waits for it;
/// true when it was started. The grandchild closes every descriptor but
/// those in `keep` first (a pipe it held open would keep a reader of our
/// output waiting), names itself `name` and moves to `home` ([`go_home`]);
/// `work` must make only async-signal-safe calls on memory prepared
/// before.
pub fn detached(name: &CStr, keep: &[i32], home: Option<&CStr>, work: impl FnOnce()) -> bool {
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

//! Starting the program outrider runs, as its user, tied to outrider's
//! life, with outrider's signals passed on.
//!
//! **Whose program.** `outrider run` and `record` need root for tracefs,
//! but the program need not run as root: under `sudo` (`SUDO_UID` and
//! `SUDO_GID` set, and we are root) it runs as the invoking user, with
//! that user's supplementary groups ([`program_credentials`]), so sudo
//! rights for outrider alone do not amount to running anything as root.
//! `--as-root` ([`keep_root`]) keeps root for the program. The environment
//! is left as sudo made it.
//!
//! **Tied to outrider.** The program gets `PR_SET_PDEATHSIG(SIGKILL)`: if
//! outrider dies (even `kill -9`), the kernel kills the program rather
//! than leave it running unattended with its exit code lost. The signal is
//! sent when the *thread* that spawned the program exits, so the spawn
//! must happen on a thread that lives as long as the run (the session's).
//! It is set after the change of user (a change of credentials clears it)
//! and, if outrider already died in between, the program ends at once.
//!
//! **Signals.** SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM and
//! SIGTERM are caught ([`install_signal_handlers`]) and passed on to the
//! program ([`forward_pending`]) — except those the kernel sent (a
//! terminal's Ctrl-C, Ctrl-\ or hangup already reached the whole
//! foreground process group, the program included) and those the program
//! sent itself. Caught dispositions revert to the default in the program
//! at `exec`.
//!
//! **Exit codes** of a program that cannot be started follow `env`,
//! `timeout` and `sudo`: 127 when it is not found, 126 when it is found
//! but cannot be executed ([`spawn_failure_code`]).

use std::ffi::OsStr;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::OnceLock;

/// The user and groups a program runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// User id.
    pub uid: libc::uid_t,
    /// Primary group id.
    pub gid: libc::gid_t,
    /// Supplementary groups (the primary one included).
    pub groups: Vec<libc::gid_t>,
}

impl Credentials {
    /// The file-system identity process `pid` has now: its fs uid and fs
    /// gid (what the kernel checks file access with) and its
    /// supplementary groups, from `/proc/PID/status`. `Ok(None)` when the
    /// process runs with root's fs uid.
    pub fn of_pid(pid: u32) -> io::Result<Option<Credentials>> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        Credentials::from_status(&text)
            .map(|c| (c.uid != 0).then_some(c))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("/proc/{pid}/status: no Uid, Gid or Groups line"),
                )
            })
    }

    /// Parse a `/proc/PID/status` text: the fourth (file-system) ids of
    /// `Uid:` and `Gid:`, and `Groups:`.
    pub fn from_status(text: &str) -> Option<Credentials> {
        let field = |name: &str| {
            text.lines().find_map(|l| l.strip_prefix(name)).map(|rest| {
                rest.split_whitespace()
                    .map(str::parse::<u32>)
                    .collect::<Result<Vec<_>, _>>()
            })
        };
        let uid = *field("Uid:")?.ok()?.get(3)?;
        let gid = *field("Gid:")?.ok()?.get(3)?;
        let mut groups = field("Groups:")?.ok()?;
        if !groups.contains(&gid) {
            groups.push(gid);
        }
        Some(Credentials { uid, gid, groups })
    }
}

static KEEP_ROOT: AtomicBool = AtomicBool::new(false);
/// The program's user when it is not the sudo user: a client of the
/// daemon ([`act_for`]).
static CLIENT: OnceLock<Credentials> = OnceLock::new();

/// Act for `creds` for the rest of this process: the daemon's helper for
/// one unprivileged client of `outrider run` calls it before anything
/// opens a file, so everything that asks [`program_credentials`] (the
/// file table's access checks, the metadata walk) acts as that user.
/// Root (uid 0) changes nothing. Returns false if another user was set.
pub fn act_for(creds: Credentials) -> bool {
    if creds.uid == 0 {
        return CLIENT.get().is_none();
    }
    let want = creds.clone();
    CLIENT.get_or_init(|| creds) == &want
}

/// `--as-root`: run the program as root even under `sudo`. Call before
/// the first [`program_credentials`].
pub fn keep_root(yes: bool) {
    KEEP_ROOT.store(yes, Ordering::SeqCst);
}

/// Who the program runs as: `Ok(None)` for outrider's own user (we are not
/// root, not under sudo, or [`keep_root`]); the sudo user's credentials
/// otherwise. A `SUDO_UID`/`SUDO_GID` that is not a number is an error
/// (never silently root).
pub fn program_credentials() -> Result<Option<Credentials>, String> {
    static CREDS: OnceLock<Result<Option<Credentials>, String>> = OnceLock::new();
    if let Some(c) = CLIENT.get() {
        return Ok(Some(c.clone()));
    }
    if KEEP_ROOT.load(Ordering::SeqCst) {
        return Ok(None);
    }
    CREDS
        .get_or_init(|| {
            // SAFETY: no preconditions.
            if unsafe { libc::geteuid() } != 0 {
                return Ok(None);
            }
            sudo_credentials(
                std::env::var_os("SUDO_UID").as_deref(),
                std::env::var_os("SUDO_GID").as_deref(),
            )
        })
        .clone()
}

/// The credentials `SUDO_UID`/`SUDO_GID` name (`None` when unset or 0).
pub fn sudo_credentials(
    uid: Option<&OsStr>,
    gid: Option<&OsStr>,
) -> Result<Option<Credentials>, String> {
    let Some(uid) = uid else { return Ok(None) };
    let num = |name: &str, v: &OsStr| {
        v.to_str()
            .and_then(|s| s.parse::<u32>().ok())
            .ok_or_else(|| {
                format!(
                    "{name}={} is not a user or group id; refusing to run the program as root \
                     (--as-root runs it as root on purpose)",
                    v.to_string_lossy()
                )
            })
    };
    let uid = num("SUDO_UID", uid)?;
    if uid == 0 {
        return Ok(None);
    }
    let (name, home_gid) = user_entry(uid).map(|u| (u.name, u.gid)).unzip();
    let gid = match gid {
        Some(g) => num("SUDO_GID", g)?,
        None => {
            home_gid.ok_or_else(|| format!("SUDO_UID={uid} names no user and SUDO_GID is unset"))?
        }
    };
    let groups = name.map_or_else(|| vec![gid], |n| group_list(&n, gid));
    Ok(Some(Credentials { uid, gid, groups }))
}

/// A user's entry in the user database.
#[derive(Debug)]
pub struct UserEntry {
    /// Login name.
    pub name: std::ffi::CString,
    /// Primary group.
    pub gid: libc::gid_t,
    /// Home directory, when it is an absolute path.
    pub home: Option<std::path::PathBuf>,
}

/// The entry of `uid` in the user database (`getpwuid_r`).
pub fn user_entry(uid: libc::uid_t) -> Option<UserEntry> {
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0 as libc::c_char; 1 << 14];
    // SAFETY: getpwuid_r fills `pw` with pointers into `buf`, both ours
    // and alive while they are read here; `pw_dir` is checked for null.
    unsafe {
        let mut pw: libc::passwd = std::mem::zeroed();
        let mut out: *mut libc::passwd = std::ptr::null_mut();
        let r = libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut out);
        if r != 0 || out.is_null() {
            return None;
        }
        let home = (!pw.pw_dir.is_null())
            .then(|| std::ffi::CStr::from_ptr(pw.pw_dir).to_bytes())
            .map(|d| std::path::PathBuf::from(std::ffi::OsStr::from_bytes(d)))
            .filter(|d| d.is_absolute());
        Some(UserEntry {
            name: std::ffi::CStr::from_ptr(pw.pw_name).to_owned(),
            gid: pw.pw_gid,
            home,
        })
    }
}

/// The groups `name` belongs to (`getgrouplist`), `gid` included.
fn group_list(name: &std::ffi::CStr, gid: libc::gid_t) -> Vec<libc::gid_t> {
    let mut n: libc::c_int = 64;
    loop {
        let mut groups = vec![0 as libc::gid_t; n as usize];
        let cap = n;
        // SAFETY: `groups` holds `n` entries; getgrouplist writes at most
        // that many and sets `n` to the number needed.
        let r = unsafe { libc::getgrouplist(name.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
        if r >= 0 {
            groups.truncate(n as usize);
            return groups;
        }
        if n <= cap {
            return vec![gid];
        }
    }
}

/// A [`Command`] for `prog args`, run as `creds` (or as we are) and killed
/// if outrider dies (see the module comment).
pub fn command(prog: &OsStr, args: &[std::ffi::OsString], creds: Option<&Credentials>) -> Command {
    let mut cmd = Command::new(prog);
    cmd.args(args);
    // SAFETY: no preconditions.
    let parent = unsafe { libc::getpid() };
    let creds = creds.cloned();
    // SAFETY: between fork and exec the closure only makes system calls
    // (setgroups, setgid, setuid, prctl, getppid, kill) on data allocated
    // before the fork; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(c) = &creds {
                if libc::setgroups(c.groups.len(), c.groups.as_ptr()) != 0
                    || libc::setgid(c.gid) != 0
                    || libc::setuid(c.uid) != 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                // outrider died before the death signal was armed.
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            Ok(())
        });
    }
    cmd
}

/// The exit code for a program that could not be started: 127 when it
/// was not found, 126 when it exists but cannot be executed.
pub fn spawn_failure_code(e: &io::Error) -> u8 {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENOTDIR) => 127,
        _ => 126,
    }
}

/// The signals caught and passed on to the program.
pub const FORWARDED: [libc::c_int; 7] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGTERM,
];

/// Signals waiting to be forwarded, one bit per signal number.
static PENDING: AtomicU64 = AtomicU64::new(0);
/// The last signal caught (0: none).
static LAST: AtomicI32 = AtomicI32::new(0);
/// The program's pid once started (0: not yet): its own signals are not
/// sent back to it.
static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    LAST.store(sig, Ordering::SeqCst);
    // SAFETY: the kernel passes a valid siginfo with SA_SIGINFO; only
    // plain reads and atomics follow (async-signal-safe).
    let (code, sender) = unsafe { ((*info).si_code, (*info).si_pid()) };
    let child = CHILD.load(Ordering::SeqCst);
    if code != libc::SI_KERNEL && (child == 0 || sender != child) {
        PENDING.fetch_or(1 << sig, Ordering::SeqCst);
    }
}

/// Catch the [`FORWARDED`] signals (recorded, not fatal), so outrider
/// always removes its tracing instance and passes them on to the program.
pub fn install_signal_handlers() {
    for sig in FORWARDED {
        // SAFETY: the handler only reads its siginfo and stores into
        // atomics; the sigaction struct is zeroed then filled.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESTART | libc::SA_SIGINFO;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The last signal caught since [`install_signal_handlers`], if any.
pub fn last_signal() -> Option<libc::c_int> {
    let sig = LAST.load(Ordering::SeqCst);
    (sig != 0).then_some(sig)
}

/// Send the signals caught since the last call to `pid` (the program);
/// also remembers `pid`, so signals it sends us are not echoed back.
pub fn forward_pending(pid: u32) {
    CHILD.store(pid as i32, Ordering::SeqCst);
    let bits = PENDING.swap(0, Ordering::SeqCst);
    for sig in FORWARDED {
        if bits & (1 << sig) != 0 {
            // SAFETY: kill on the program's pid (our child, not yet reaped).
            unsafe { libc::kill(pid as libc::pid_t, sig) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_entry_has_its_name_and_home() {
        let u = user_entry(0).expect("root in the user database");
        assert_eq!((u.name.to_bytes(), u.gid), (&b"root"[..], 0));
        assert_eq!(u.home.as_deref(), Some(std::path::Path::new("/root")));
    }

    #[test]
    fn sudo_ids_become_credentials_and_bad_ones_are_refused() {
        let none = sudo_credentials(None, None).unwrap();
        assert_eq!(none, None);
        let root = sudo_credentials(Some(OsStr::new("0")), Some(OsStr::new("0"))).unwrap();
        assert_eq!(root, None, "sudo from root stays root");
        let c = sudo_credentials(Some(OsStr::new("65534")), Some(OsStr::new("65534")))
            .unwrap()
            .unwrap();
        assert_eq!((c.uid, c.gid), (65534, 65534));
        assert!(c.groups.contains(&65534));
        let e = sudo_credentials(Some(OsStr::new("x1")), None).unwrap_err();
        assert!(e.contains("SUDO_UID=x1") && e.contains("--as-root"), "{e}");
    }

    #[test]
    fn a_process_status_gives_its_file_system_ids_and_groups() {
        let text =
            "Name:\tsh\nUid:\t1000\t1000\t1000\t1001\nGid:\t100\t100\t100\t101\nGroups:\t27 100 \n";
        let c = Credentials::from_status(text).unwrap();
        assert_eq!((c.uid, c.gid), (1001, 101), "the fs ids, the fourth column");
        assert_eq!(c.groups, vec![27, 100, 101], "the fs gid joins the groups");
        assert!(
            Credentials::from_status("Uid:\t1\t1\n").is_none(),
            "no fs id: no credentials"
        );
        let me = Credentials::of_pid(std::process::id()).unwrap();
        // SAFETY: no preconditions.
        let uid = unsafe { libc::geteuid() };
        assert_eq!(me.map(|c| c.uid), (uid != 0).then_some(uid));
    }

    #[test]
    fn not_found_is_127_and_not_executable_is_126() {
        let nf = io::Error::from_raw_os_error(libc::ENOENT);
        let na = io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(
            (spawn_failure_code(&nf), spawn_failure_code(&na)),
            (127, 126)
        );
    }
}

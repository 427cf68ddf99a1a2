//! Naming the application a launch belongs to: the key of its launch
//! set, from the executable and the shape of its command line.

/// The application a launch belongs to, the key of its launch set: the
/// executable, and with `args > 0` the shape of its first `args`
/// command-line words — the name it was started by (`argv[0]`, its last
/// path component), then the arguments, each that names a path
/// ([`names_a_path`]) written `<file>` and the rest cut at 32 bytes. One
/// executable serves many applications: a venv's `python` and
/// `python3 -c pass` are both `/usr/bin/python3.11`, `git status` and
/// `git log -p` are both `git`; with the executable alone (`args = 0`,
/// the Windows Prefetcher's key) a bare `python3` replayed the 100 MiB
/// set of a pandas import and took 0.154 s instead of 0.034 s
/// (`bench/daemon/launch.sh`, the day in miniature). Paths stand for
/// their role, so `cat a.txt` and `cat b.txt` share one set. An option
/// naming a path before the command word says where the program works,
/// not what it does, and is left out ([`where_it_works`]): `git -C DIR
/// log -p` and `git -C DIR grep` are `git log` and `git grep`, not both
/// `git -C` (`git log -p` of a packed clone reads its 23 MiB pack, `git
/// grep` a quarter of it). A shape that ends in an option taking a
/// program ([`INLINE_PROGRAM_OPTIONS`]) goes on with that program read as
/// a command line, its first `args` words shaped the same way: `sh -c
/// 'tar -cf - src | wc -c'` is `sh -c tar -cf` and `sh -c 'for i in
/// ...'` is `sh -c for i`, two applications, not one `sh -c` whose set
/// every `system(3)` and `popen(3)` on the machine would replay (in the
/// bench's programs that cannot be helped, the `sh -c` of a `tar` of a
/// tree held 7 778 of its files, checked at each exec of a loop of
/// `/bin/true`); and as many as a command line's shapes, not one per
/// script (a build's recipes, each naming its own files).
pub fn app_name(exe: &str, argv: &[String], args: usize) -> String {
    let skipped = where_it_works(argv.get(1..).unwrap_or_default());
    let argv: Vec<&str> = (argv.iter().take(1))
        .chain(argv.iter().skip(1 + skipped))
        .map(String::as_str)
        .collect();
    let Some((name, rest)) = argv.split_first().filter(|_| args > 0) else {
        return exe.to_string();
    };
    let rest = &rest[..rest.len().min(args - 1)];
    let mut words = vec![name.rsplit('/').next().unwrap_or(name).to_string()];
    words.extend(rest.iter().map(|w| word_shape(w)));
    let program = (rest.last()).filter(|w| INLINE_PROGRAM_OPTIONS.contains(w));
    if let (Some(_), Some(text)) = (program, argv.get(args)) {
        words.extend(text.split_whitespace().take(args).map(word_shape));
    }
    format!("{exe} [{}]", words.join(" "))
}

/// One command-line word in an application's name: `<file>` where it
/// names a path ([`names_a_path`]), else the word cut at 32 bytes.
fn word_shape(w: &str) -> String {
    if names_a_path(w) {
        return "<file>".to_string();
    }
    let mut end = w.len().min(32);
    while !w.is_char_boundary(end) {
        end -= 1;
    }
    w[..end].to_string()
}

/// Options whose argument is the program itself (a shell's `-c`, perl's,
/// ruby's and node's `-e`, perl's `-E`, node's `--eval`, `su`'s and
/// others' `--command`): the program's first words are part of the
/// application's name.
pub const INLINE_PROGRAM_OPTIONS: [&str; 5] = ["-c", "-e", "-E", "--eval", "--command"];

/// Options naming a path left out of an application's name at most.
pub const WHERE_OPTIONS_MAX: usize = 4;

/// How many of `args` (the words after `argv[0]`) are options naming a
/// path, each an option and its path (`-C DIR`, `--git-dir DIR`), that
/// come before a command word (neither an option nor a path): none when
/// no command word follows them (`du -s DIR`, `diff -r A B`).
fn where_it_works(args: &[String]) -> usize {
    let mut at = 0;
    while let [opt, path, ..] = &args[at..] {
        if !opt.starts_with('-') || !names_a_path(path) || at == 2 * WHERE_OPTIONS_MAX {
            break;
        }
        at += 2;
    }
    let command = args
        .get(at)
        .is_some_and(|w| !w.starts_with('-') && !names_a_path(w));
    if command {
        at
    } else {
        0
    }
}

/// Does command-line word `w` name a path: not an option, and a `/` in
/// it, or a name with an extension (a `.`, then 1-8 letters and digits,
/// a letter among them)? Told from the word alone, with no look in the
/// file system: a look on the exec's path (is `env` a file in the working
/// directory?) reads the directory from the disk after a cache drop,
/// while the program reads its own: `go env GOROOT`'s launch reached
/// the daemon's replay 7-14 ms after its exec in two of seven cold runs,
/// in a launch of 50 ms, and took 0.87x of its time with no daemon
/// (medians of 4, alternated). So `cat notes` is an application of its
/// own, `sleep 0.5` and `git status` are not files.
pub fn names_a_path(w: &str) -> bool {
    if w.starts_with('-') || w.contains(char::is_whitespace) {
        return false;
    }
    if w.contains('/') {
        return true;
    }
    let Some((stem, ext)) = w.rsplit_once('.') else {
        return false;
    };
    !stem.is_empty()
        && (1..=8).contains(&ext.len())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && ext.chars().any(|c| c.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_application_is_its_executable_and_the_shape_of_its_command() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let py = "/usr/bin/python3.11";
        assert_eq!(
            app_name(py, &v(&["/usr/bin/python3", "-c", "pass"]), 2),
            "/usr/bin/python3.11 [python3 -c pass]"
        );
        assert_eq!(
            app_name(py, &v(&["/venv/bin/python", "-c", "pass"]), 2),
            "/usr/bin/python3.11 [python -c pass]"
        );
        assert_eq!(
            app_name(py, &v(&["python3", "build.py"]), 2),
            "/usr/bin/python3.11 [python3 <file>]"
        );
        assert_eq!(
            app_name("/usr/bin/cat", &v(&["cat", "/etc/passwd"]), 2),
            "/usr/bin/cat [cat <file>]"
        );
        assert_eq!(
            app_name("/usr/bin/git", &v(&["git", "status", "-s"]), 2),
            "/usr/bin/git [git status]"
        );
        assert_eq!(
            app_name("/usr/bin/git", &v(&["git", "status"]), 0),
            "/usr/bin/git"
        );
        let git = "/usr/bin/git";
        assert_eq!(
            app_name(git, &v(&["git", "-C", "/r", "log", "-p"]), 2),
            "/usr/bin/git [git log]"
        );
        assert_eq!(
            app_name(
                git,
                &v(&["git", "-C", "/r", "--git-dir", "/r/.git", "grep"]),
                2
            ),
            "/usr/bin/git [git grep]"
        );
        // No command word after them: the options stay.
        assert_eq!(
            app_name("/usr/bin/du", &v(&["du", "-s", "/tree"]), 2),
            "/usr/bin/du [du -s]"
        );
        assert_eq!(
            app_name("/usr/bin/diff", &v(&["diff", "-r", "/a", "/b"]), 2),
            "/usr/bin/diff [diff -r]"
        );
        let long = "é".repeat(40);
        let n = app_name("/x", &v(&["x", &long]), 2);
        assert!(n.len() <= "/x [x ]".len() + 32, "{n}");
        assert_eq!(app_name("/x", &[], 2), "/x");
    }

    /// An inline program is part of the application, read as a command
    /// line: its first words, shaped as any.
    #[test]
    fn an_inline_program_is_part_of_its_application() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let sh = "/usr/bin/dash";
        let tar = app_name(sh, &v(&["sh", "-c", "tar -cf - \"$1\" | wc -c", "sh"]), 2);
        assert_eq!(tar, "/usr/bin/dash [sh -c tar -cf]");
        let storm = app_name(
            sh,
            &v(&["sh", "-c", "for i in $(seq 300); do true; done"]),
            2,
        );
        assert_eq!(storm, "/usr/bin/dash [sh -c for i]");
        // Shaped as a command line: its paths stand for their role.
        let build = |f: &str| app_name(sh, &v(&["sh", "-c", &format!("cd /b/{f} && cc {f}.c")]), 2);
        assert_eq!(build("x"), "/usr/bin/dash [sh -c cd <file>]");
        assert_eq!(build("x"), build("y"));
        let py = "/usr/bin/python3.11";
        assert_ne!(
            app_name(py, &v(&["python3", "-c", "pass"]), 2),
            app_name(py, &v(&["python3", "-c", "import numpy"]), 2)
        );
        assert_eq!(
            app_name("/usr/bin/node", &v(&["node", "-e", "require('zlib')"]), 2),
            "/usr/bin/node [node -e require('zlib')]"
        );
        assert_eq!(
            app_name(
                py,
                &v(&["python3", "-c", "import numpy as np; np.ones(3)"]),
                2
            ),
            "/usr/bin/python3.11 [python3 -c import numpy]"
        );
        assert_eq!(
            app_name("/usr/bin/perl", &v(&["perl", "-E", "say 1"]), 2),
            "/usr/bin/perl [perl -E say 1]"
        );
        // The option ends the shape, or no program follows it: as before.
        assert_eq!(
            app_name("/usr/bin/perl", &v(&["perl", "-MPOSIX", "-e", "1"]), 2),
            "/usr/bin/perl [perl -MPOSIX]"
        );
        assert_eq!(app_name(sh, &v(&["sh", "-c"]), 2), "/usr/bin/dash [sh -c]");
        assert_eq!(app_name(sh, &v(&["sh", "-c", "x"]), 0), sh);
        assert_eq!(
            app_name(sh, &v(&["sh", "-c", "x y z"]), 1),
            "/usr/bin/dash [sh]"
        );
        // Its options naming a path are still left out before a command.
        assert_eq!(
            app_name("/usr/bin/git", &v(&["git", "-C", "/r", "-c", "a=b"]), 2),
            "/usr/bin/git [git -C]"
        );
    }

    /// A word names a path by its shape alone: nothing is looked up.
    #[test]
    fn a_path_is_told_by_its_shape() {
        for w in [
            "a.txt",
            "./configure",
            "/etc",
            "src/",
            "x.tar.gz",
            "Cargo.toml",
        ] {
            assert!(names_a_path(w), "{w}");
        }
        for w in [
            "status",
            "0.5",
            "-o",
            "--out=a.txt",
            "v1.2",
            ".",
            "..",
            ".bashrc",
        ] {
            assert!(!names_a_path(w), "{w}");
        }
        for w in ["open('a').read()", "x.y z", "a.", "a.verylongext"] {
            assert!(!names_a_path(w), "{w}");
        }
    }
}

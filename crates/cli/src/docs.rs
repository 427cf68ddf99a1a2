//! What the command line says about itself: each subcommand's examples
//! (`--help`), the `policies` and `workloads` listings, man pages
//! (`clap_mangen`) and shell completions (`clap_complete`).

use crate::{usage, Cli};
use clap::CommandFactory;
use std::path::Path;

/// `sim --help` examples.
pub const SIM_EXAMPLES: &str = "\
Examples:
  outrider sim --policy readahead --workload seq
  outrider sim --policy obl:help                      # a policy's parameters and defaults
  outrider sim --policy auto --workload tree-scan --runs 2
  outrider sim --policy diskseen --trace t.csv --format lcs-csv --cache 10% --device raid0:4:ssd
  outrider sim --policy obl --trace t.trc --device none --think 20us --json

Devices (--device): hdd, ssd, nvme, none (instantaneous), raid0:N, raid0:N:MEMBER (MEMBER hdd, ssd or nvme).
Trace formats (--format): auto, native, lcs-csv, oracle, oracle-pages, disksim, spc, msr, blkparse, lines, strace.
Sizes: 64KiB, 256MiB, 1.5GiB (powers of 1024; also K, M, G), 100MB (powers of 1000). Durations: 0, 250ns, 20us, 1.5ms, 2s.
Metrics (table and --json): see docs/metrics.md.";

/// `compare --help` examples.
pub const COMPARE_EXAMPLES: &str = "\
Examples:
  outrider compare --workload paper-suite
  outrider compare --workload paper-suite --html report.html
  outrider compare --policies none,obl,readahead --trace t.csv --cache 10% --device ssd --json
  outrider compare --policies 'obl:k=2;readahead:ra_pages=64' --workload seq
  outrider compare --workload tree-scan --policies readahead,readahead+none

Devices (--device): hdd, ssd, nvme, none (instantaneous), raid0:N, raid0:N:MEMBER (MEMBER hdd, ssd or nvme).
Trace formats (--format): auto, native, lcs-csv, oracle, oracle-pages, disksim, spc, msr, blkparse, lines, strace.
Suites (--workload): paper-suite, paper-suite-large; `outrider workloads` lists the rest.
Metrics (table and --json): see docs/metrics.md.";

/// `daemon --help` examples.
pub const DAEMON_EXAMPLES: &str = "\
Examples:
  sudo outrider daemon --config /etc/outrider/daemon.toml
  outrider daemon --check-config --config dist/daemon.toml
  sudo outrider daemon --replay-boot
  sudo systemctl enable --now outrider   (dist/outrider.service; see the README)
  outrider status; outrider apps --json; sudo outrider forget /usr/bin/python3.11

Status: <state_dir>/status.json, rewritten every second.";

/// `record --help` examples.
pub const RECORD_EXAMPLES: &str = "\
Examples:
  sudo outrider record --out prog.otr -- ./my-program
  sudo outrider record --level block --zstd --out prog.otr -- sh -c 'cat big.db > /dev/null'
  outrider sim --policy stride --trace prog.otr";

/// `stat`/`warm`/`evict --help` examples.
pub const CACHE_EXAMPLES: &str = "\
Examples:
  outrider stat -r /usr/lib
  outrider stat -v --json big.db
  outrider warm big.db
  outrider evict -r build/";

/// `calibrate --help` examples.
pub const CALIBRATE_EXAMPLES: &str = "\
Examples:
  sudo outrider calibrate /dev/nvme0n1
  outrider calibrate --bytes 256MiB /var/tmp/big.file --json";

/// `outrider policies`: every policy's help, one after the other.
pub fn policies() -> anyhow::Result<()> {
    for e in outrider_core::policies::REGISTRY {
        print!(
            "{}",
            outrider_core::policy_help(e.name).expect("registered")
        );
        println!();
    }
    Ok(())
}

/// `outrider workloads`: every workload's help, then the suites.
pub fn workloads() -> anyhow::Result<()> {
    use outrider_trace::workloads::{workload_help, SUITE_NAMES, WORKLOAD_NAMES};
    for name in WORKLOAD_NAMES.iter().chain(SUITE_NAMES) {
        match workload_help(name) {
            Ok(h) => println!("{h}"),
            Err(e) => println!("{name}: {e}"),
        }
    }
    Ok(())
}

/// `outrider man DIR`: `outrider.1` and one page per subcommand.
pub fn man_pages(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| usage(format!("{}: {e}", dir.display())))?;
    clap_mangen::generate_to(Cli::command(), dir)
        .map_err(|e| usage(format!("{}: {e}", dir.display())))?;
    println!("wrote man pages to {}", dir.display());
    Ok(())
}

/// `outrider completions SHELL`: the completion script on stdout.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    clap_complete::generate(
        shell,
        &mut Cli::command(),
        "outrider",
        &mut std::io::stdout(),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_name_every_trace_format_and_device_kind() {
        for text in [SIM_EXAMPLES, COMPARE_EXAMPLES] {
            for f in outrider_trace::Format::ALL {
                assert!(text.contains(f.name()), "{} missing", f.name());
            }
            for d in ["hdd", "ssd", "nvme", "none", "raid0:N", "raid0:N:MEMBER"] {
                assert!(text.contains(d), "{d} missing");
                let spec = d.replace(":N", ":2").replace("MEMBER", "ssd");
                assert!(outrider_sim::device::build_device(&spec).is_ok(), "{spec}");
            }
        }
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}

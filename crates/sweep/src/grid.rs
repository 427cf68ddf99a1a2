//! The grid: what a sweep varies, and the cells it expands into.
//!
//! A grid is the cartesian product of its inputs (trace files and built-in
//! workloads, suites expanded), policies (each crossed with its parameter
//! values), cache sizes, devices and run counts. [`Settings`] hold what
//! every cell shares. A grid comes from a TOML file ([`Grid::from_toml`]),
//! from command-line flags, or from Python, and is checked as a whole
//! before any cell runs ([`Grid::cells`]), so a typo fails in a second, not
//! an hour into the sweep.

use crate::SweepError;
use outrider_core::{build_policy, PolicyError, BLOCK_SIZE};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A parameter value in a grid: a string, number or boolean.
pub use toml::Value as ParamValue;

/// What every cell of a grid shares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Trace format for every `traces` entry (`auto` detects). Default `auto`.
    pub format: String,
    /// Skip malformed trace records instead of failing. Default `false`.
    pub lenient: bool,
    /// Split requests into single 4 KiB-page accesses. Default `false`.
    pub split_pages: bool,
    /// Cache model, `lru` or `split`. Default `lru`.
    pub cache_model: String,
    /// Request timing, `think` or `replay`. Default `think`.
    pub timing: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            format: "auto".into(),
            lenient: false,
            split_pages: false,
            cache_model: "lru".into(),
            timing: "think".into(),
        }
    }
}

/// A sweep's grid. Every list must be non-empty except that one of
/// `traces` and `workloads` may be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Grid {
    /// Trace files. Default none.
    pub traces: Vec<String>,
    /// Built-in workloads `NAME[:k=v,...]` or suites. Default none.
    pub workloads: Vec<String>,
    /// Policy specifications `NAME[:k=v,...]`. Default: `none`.
    pub policies: Vec<String>,
    /// Parameter values per policy entry: `params["diskseen"]["k"] = [4, 8]`
    /// runs `diskseen:k=4` and `diskseen:k=8` in place of `diskseen`.
    pub params: BTreeMap<String, BTreeMap<String, Vec<toml::Value>>>,
    /// Cache sizes: `64MiB`, `2GiB`, or `10%` of an input's distinct
    /// blocks. Default `256MiB`.
    pub cache: Vec<String>,
    /// Device models (`hdd`, `ssd`, `nvme`, `raid0:N`, `none`). Default `hdd`.
    pub devices: Vec<String>,
    /// Run counts: a cell with `runs = N` replays its input N times and
    /// reports run N. Default `[1]`.
    pub runs: Vec<u32>,
    /// Shared settings.
    pub settings: Settings,
}

impl Default for Grid {
    fn default() -> Self {
        Grid {
            traces: Vec::new(),
            workloads: Vec::new(),
            policies: vec!["none".into()],
            params: BTreeMap::new(),
            cache: vec!["256MiB".into()],
            devices: vec!["hdd".into()],
            runs: vec![1],
            settings: Settings::default(),
        }
    }
}

/// Where a cell's input comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A trace file, by path.
    Trace(String),
    /// A built-in workload specification (never a suite).
    Workload(String),
}

impl Source {
    /// The input's name in results: the path or the workload spec.
    pub fn name(&self) -> &str {
        match self {
            Source::Trace(p) | Source::Workload(p) => p,
        }
    }
}

/// One point of the grid: one simulation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The input.
    pub source: Source,
    /// Policy specification, parameters applied.
    pub policy: String,
    /// Cache size as given (`64MiB`, `10%`).
    pub cache: String,
    /// Device model.
    pub device: String,
    /// Replays; the cell reports the last.
    pub runs: u32,
    /// Shared settings.
    pub settings: Settings,
}

impl Cell {
    /// The key that identifies the cell in an output (for resuming):
    /// every field that changes its result, `|`-separated.
    pub fn key(&self) -> String {
        let s = &self.settings;
        format!(
            "{}|{}|{}|{}|{}|{}|{}|{}",
            self.source.name(),
            self.policy,
            self.cache,
            self.device,
            self.runs,
            s.cache_model,
            s.timing,
            if s.split_pages { "pages" } else { "requests" }
        )
    }
}

impl Grid {
    /// Parse a grid from TOML text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Grid, SweepError> {
        toml::from_str(text).map_err(|e| SweepError::Grid(format!("{origin}: {e}")))
    }

    /// The policy specifications with their parameter values applied, in
    /// grid order.
    pub fn policy_specs(&self) -> Result<Vec<String>, SweepError> {
        for name in self.params.keys() {
            if !self.policies.contains(name) {
                return Err(SweepError::Grid(format!(
                    "params.{name}: no such entry in policies ({})",
                    self.policies.join(", ")
                )));
            }
        }
        let mut out = Vec::new();
        for p in &self.policies {
            match self.params.get(p) {
                None => out.push(p.clone()),
                Some(keys) => out.extend(with_params(p, keys)?),
            }
        }
        Ok(out)
    }

    /// Expand the grid into its cells, checking every policy, cache size,
    /// device and setting first.
    pub fn cells(&self) -> Result<Vec<Cell>, SweepError> {
        let sources = self.sources()?;
        let policies = self.policy_specs()?;
        self.check(&policies)?;
        let mut cells = Vec::new();
        for source in &sources {
            for policy in &policies {
                for cache in &self.cache {
                    for device in &self.devices {
                        for &runs in &self.runs {
                            cells.push(Cell {
                                source: source.clone(),
                                policy: policy.clone(),
                                cache: cache.clone(),
                                device: device.clone(),
                                runs,
                                settings: self.settings.clone(),
                            });
                        }
                    }
                }
            }
        }
        Ok(cells)
    }

    fn sources(&self) -> Result<Vec<Source>, SweepError> {
        let mut out: Vec<Source> = self.traces.iter().cloned().map(Source::Trace).collect();
        for w in &self.workloads {
            match outrider_trace::workloads::suite(w) {
                Some(members) => out.extend(members.into_iter().map(Source::Workload)),
                None => out.push(Source::Workload(w.clone())),
            }
        }
        if out.is_empty() {
            return Err(SweepError::Grid(
                "no inputs: give traces or workloads".into(),
            ));
        }
        Ok(out)
    }

    fn check(&self, policies: &[String]) -> Result<(), SweepError> {
        let empty = [
            ("policies", self.policies.is_empty()),
            ("cache", self.cache.is_empty()),
            ("devices", self.devices.is_empty()),
            ("runs", self.runs.is_empty()),
        ];
        if let Some((name, _)) = empty.iter().find(|(_, e)| *e) {
            return Err(SweepError::Grid(format!(
                "{name}: expected at least one value"
            )));
        }
        for p in policies {
            match build_policy(p) {
                Ok(_) => {}
                Err(PolicyError::Help(_)) => {
                    return Err(SweepError::Grid(format!(
                        "policy {p}: help is not a policy"
                    )))
                }
                Err(e) => return Err(SweepError::Grid(format!("policy {p}: {e}"))),
            }
        }
        for c in &self.cache {
            cache_blocks(c, || 1)?;
        }
        for d in &self.devices {
            outrider_sim::device::build_device(d)
                .map_err(|e| SweepError::Grid(format!("device {d}: {e}")))?;
        }
        if self.runs.contains(&0) {
            return Err(SweepError::Grid(
                "runs: every value must be at least 1".into(),
            ));
        }
        crate::run::sim_config(1, &self.devices[0], 1, &self.settings)?;
        Ok(())
    }
}

/// `policy` crossed with every combination of `keys`' values, e.g.
/// `diskseen` × {k: [4, 8]} → `diskseen:k=4`, `diskseen:k=8`.
fn with_params(
    policy: &str,
    keys: &BTreeMap<String, Vec<toml::Value>>,
) -> Result<Vec<String>, SweepError> {
    let mut specs = vec![policy.to_string()];
    for (key, values) in keys {
        if values.is_empty() {
            return Err(SweepError::Grid(format!(
                "params.{policy}.{key}: expected at least one value"
            )));
        }
        let mut next = Vec::new();
        for spec in &specs {
            for v in values {
                let v = match v {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Integer(i) => i.to_string(),
                    toml::Value::Float(f) => f.to_string(),
                    toml::Value::Boolean(b) => b.to_string(),
                    _ => {
                        return Err(SweepError::Grid(format!(
                            "params.{policy}.{key}: expected strings, numbers or booleans"
                        )))
                    }
                };
                let sep = if spec.contains(':') { ',' } else { ':' };
                next.push(format!("{spec}{sep}{key}={v}"));
            }
        }
        specs = next;
    }
    Ok(specs)
}

/// Cache size `spec` in blocks: bytes with a unit, or a percentage of
/// `distinct_blocks()` (called only for a percentage).
pub fn cache_blocks(spec: &str, distinct_blocks: impl FnOnce() -> u64) -> Result<u64, SweepError> {
    if let Some(pct) = spec.strip_suffix('%') {
        let f: f64 = pct
            .trim()
            .parse()
            .ok()
            .filter(|f: &f64| *f > 0.0 && *f <= 100.0)
            .ok_or_else(|| {
                SweepError::Grid(format!("cache '{spec}': expected a percentage in (0, 100]"))
            })?;
        return Ok(((distinct_blocks() as f64 * f / 100.0) as u64).max(1));
    }
    let bytes = outrider_core::size::parse_size(spec)
        .map_err(|e| SweepError::Grid(format!("cache '{spec}': {e}")))?;
    if bytes < BLOCK_SIZE {
        return Err(SweepError::Grid(format!(
            "cache '{spec}': must hold at least one 4 KiB block"
        )));
    }
    Ok(bytes / BLOCK_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(text: &str) -> Grid {
        Grid::from_toml(text, "test.toml").unwrap()
    }

    #[test]
    fn the_grid_is_the_product_of_its_lists_with_parameters_crossed() {
        let g = grid(
            r#"
            workloads = ["seq", "reversed"]
            policies = ["none", "diskseen"]
            cache = ["64MiB", "10%"]
            devices = ["hdd", "ssd"]
            runs = [1, 2]
            [params.diskseen]
            k = [4, 8]
            "#,
        );
        let cells = g.cells().unwrap();
        // 2 inputs × (none + 2 diskseen) × 2 caches × 2 devices × 2 runs.
        assert_eq!(cells.len(), 2 * 3 * 2 * 2 * 2);
        let policies: std::collections::BTreeSet<_> =
            cells.iter().map(|c| c.policy.as_str()).collect();
        assert_eq!(
            policies.into_iter().collect::<Vec<_>>(),
            vec!["diskseen:k=4", "diskseen:k=8", "none"]
        );
        let keys: std::collections::HashSet<_> = cells.iter().map(Cell::key).collect();
        assert_eq!(keys.len(), cells.len(), "every cell has its own key");
    }

    #[test]
    fn parameters_join_a_specification_that_already_has_some() {
        let mut keys = BTreeMap::new();
        keys.insert("k".to_string(), vec![toml::Value::Integer(4)]);
        assert_eq!(
            with_params("diskseen:t=100", &keys).unwrap(),
            vec!["diskseen:t=100,k=4"]
        );
    }

    #[test]
    fn suites_expand_into_their_members() {
        let g = grid(r#"workloads = ["paper-suite"]"#);
        let n = outrider_trace::workloads::suite("paper-suite")
            .unwrap()
            .len();
        assert_eq!(g.cells().unwrap().len(), n);
    }

    #[test]
    fn mistakes_are_caught_before_any_cell_runs() {
        let bad = [
            (
                r#"workloads = ["seq"]
                policies = ["no-such-policy"]"#,
                "no-such-policy",
            ),
            (
                r#"workloads = ["seq"]
                cache = ["12 parsecs"]"#,
                "12 parsecs",
            ),
            (
                r#"workloads = ["seq"]
                devices = ["floppy"]"#,
                "floppy",
            ),
            (
                r#"workloads = ["seq"]
                [params.diskseen]
                k = [4]"#,
                "params.diskseen",
            ),
            (r#"policies = ["none"]"#, "no inputs"),
            (
                r#"workloads = ["seq"]
                runs = [0]"#,
                "runs",
            ),
        ];
        for (text, needle) in bad {
            let e = grid(text).cells().unwrap_err().to_string();
            assert!(e.contains(needle), "{e:?} should name {needle:?}");
        }
        let e = Grid::from_toml("polices = []", "g.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("g.toml") && e.contains("polices"), "{e}");
    }
}

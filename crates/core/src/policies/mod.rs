//! Every policy outrider knows, and the registry that builds them from
//! `NAME[:k=v,...]` strings.
//!
//! To add a policy: write its module (overview comment citing the paper
//! section, a [`crate::params!`] struct with the paper's defaults, the
//! [`crate::Policy`] impl) and add one [`Entry`] to [`REGISTRY`].

pub mod auto;
pub mod directed;
pub mod diskseen;
pub mod filepred;
pub mod flashy;
pub mod none;
pub mod obl;
pub mod readahead;
pub mod stack;
pub mod stride;

use crate::params::{render_help, ParamError, ParamSpec, Params};
use crate::policy::BoxedPolicy;
use std::fmt;

/// Why a policy specification could not be built.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicyError {
    /// No policy of that name.
    UnknownPolicy {
        /// The name given.
        name: String,
    },
    /// A parameter was wrong.
    Param(ParamError),
    /// `NAME:help` was asked for: not an error, the help text to print.
    Help(String),
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::UnknownPolicy { name } => write!(
                f,
                "unknown policy '{name}'; known policies: {}",
                POLICY_NAMES.join(", ")
            ),
            PolicyError::Param(e) => e.fmt(f),
            PolicyError::Help(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for PolicyError {}

impl From<ParamError> for PolicyError {
    fn from(e: ParamError) -> Self {
        PolicyError::Param(e)
    }
}

/// One registered policy.
pub struct Entry {
    /// Name on the command line.
    pub name: &'static str,
    /// One line: what it is and where it comes from.
    pub summary: &'static str,
    /// Its parameters.
    pub specs: fn() -> Vec<ParamSpec>,
    /// Build it from the `k=v,...` text.
    pub build: fn(&str) -> Result<BoxedPolicy, ParamError>,
}

fn build_with<P: Params, T: crate::Policy + 'static>(
    name: &str,
    text: &str,
    make: fn(P) -> T,
) -> Result<BoxedPolicy, ParamError> {
    Ok(Box::new(make(P::parse(name, text)?)))
}

/// The registry, in the order `compare` lists them.
pub const REGISTRY: &[Entry] = &[
    Entry {
        name: none::NAME,
        summary: none::SUMMARY,
        specs: none::NoneParams::specs,
        build: |t| build_with(none::NAME, t, none::NoPrefetch::new),
    },
    Entry {
        name: obl::NAME,
        summary: obl::SUMMARY,
        specs: obl::OblParams::specs,
        build: |t| build_with(obl::NAME, t, obl::Obl::new),
    },
    Entry {
        name: readahead::NAME,
        summary: readahead::SUMMARY,
        specs: readahead::ReadaheadParams::specs,
        build: |t| build_with(readahead::NAME, t, readahead::Readahead::new),
    },
    Entry {
        name: diskseen::NAME,
        summary: diskseen::SUMMARY,
        specs: diskseen::DiskSeenParams::specs,
        build: |t| build_with(diskseen::NAME, t, diskseen::DiskSeen::new),
    },
    Entry {
        name: filepred::LS_NAME,
        summary: filepred::LS_SUMMARY,
        specs: filepred::LastSuccessorParams::specs,
        build: |t| {
            let p = filepred::LastSuccessorParams::parse(filepred::LS_NAME, t)?;
            Ok(Box::new(filepred::FilePred::last_successor(p)?))
        },
    },
    Entry {
        name: filepred::PCM_NAME,
        summary: filepred::PCM_SUMMARY,
        specs: filepred::PcmParams::specs,
        build: |t| {
            let p = filepred::PcmParams::parse(filepred::PCM_NAME, t)?;
            Ok(Box::new(filepred::FilePred::pcm(p)?))
        },
    },
    Entry {
        name: filepred::EPCM_NAME,
        summary: filepred::EPCM_SUMMARY,
        specs: filepred::EpcmParams::specs,
        build: |t| {
            let p = filepred::EpcmParams::parse(filepred::EPCM_NAME, t)?;
            Ok(Box::new(filepred::FilePred::epcm(p)?))
        },
    },
    Entry {
        name: flashy::NAME,
        summary: flashy::SUMMARY,
        specs: flashy::FlashyParams::specs,
        build: |t| Ok(Box::new(flashy::Flashy::new(flashy::parse_params(t)?))),
    },
    Entry {
        name: directed::NAME,
        summary: directed::SUMMARY,
        specs: directed::DirectedParams::specs,
        build: |t| build_with(directed::NAME, t, directed::Directed::new),
    },
    Entry {
        name: auto::NAME,
        summary: auto::SUMMARY,
        specs: auto::AutoParams::specs,
        build: |t| build_with(auto::NAME, t, auto::Auto::new),
    },
    Entry {
        name: stride::NAME,
        summary: stride::SUMMARY,
        specs: stride::StrideParams::specs,
        build: |t| build_with(stride::NAME, t, stride::Stride::new),
    },
];

/// Names of every registered policy, in registry order.
pub const POLICY_NAMES: [&str; REGISTRY.len()] = {
    let mut names = [""; REGISTRY.len()];
    let mut i = 0;
    while i < REGISTRY.len() {
        names[i] = REGISTRY[i].name;
        i += 1;
    }
    names
};

fn entry(name: &str) -> Result<&'static Entry, PolicyError> {
    REGISTRY
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| PolicyError::UnknownPolicy { name: name.into() })
}

/// The help text of one policy (what `--policy NAME:help` prints).
pub fn policy_help(name: &str) -> Result<String, PolicyError> {
    let e = entry(name)?;
    Ok(render_help(e.name, e.summary, &(e.specs)()))
}

/// Build a policy from `NAME[:k=v,...]`, or a stack of them joined by `+`
/// (`readahead+diskseen:k=8`; see [`stack`]). `NAME:help` returns
/// [`PolicyError::Help`] with the parameter table.
pub fn build_policy(spec: &str) -> Result<BoxedPolicy, PolicyError> {
    match spec.split_once('+') {
        Some((upper, rest)) => Ok(Box::new(stack::Stack::new(
            build_one(upper)?,
            build_policy(rest)?,
        ))),
        None => build_one(spec),
    }
}

fn build_one(spec: &str) -> Result<BoxedPolicy, PolicyError> {
    let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
    let name = name.trim();
    let e = entry(name)?;
    if params.trim() == "help" {
        return Err(PolicyError::Help(policy_help(name)?));
    }
    Ok((e.build)(params)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_name_builds_with_defaults() {
        assert_eq!(REGISTRY.len(), POLICY_NAMES.len());
        for name in POLICY_NAMES {
            let p = build_policy(name).unwrap();
            assert_eq!(p.name(), name);
        }
    }

    #[test]
    fn help_lists_parameters_with_defaults() {
        match build_policy("obl:help") {
            Err(PolicyError::Help(t)) => assert!(t.contains("k=4"), "{t}"),
            _ => panic!("obl:help must return the help text"),
        }
    }

    #[test]
    fn stacks_build_by_plus_and_report_errors_of_any_part() {
        let p = build_policy("readahead:ra_pages=64+obl:k=2+none").unwrap();
        assert_eq!(p.name(), "readahead+obl+none");
        let e = build_policy("readahead+nosuch").err().unwrap().to_string();
        assert!(e.contains("unknown policy 'nosuch'"), "{e}");
        match build_policy("readahead+obl:help") {
            Err(PolicyError::Help(t)) => assert!(t.contains("k=4"), "{t}"),
            _ => panic!("help of a stacked part must return its help text"),
        }
    }

    #[test]
    fn unknown_policy_and_key_are_clear_errors() {
        let e = build_policy("nosuch").err().unwrap().to_string();
        assert!(
            e.contains("unknown policy 'nosuch'") && e.contains("readahead"),
            "{e}"
        );
        let e = build_policy("obl:q=1").err().unwrap().to_string();
        assert!(
            e.contains("no parameter 'q'") && e.contains("k (default 4)"),
            "{e}"
        );
    }
}

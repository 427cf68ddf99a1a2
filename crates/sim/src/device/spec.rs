//! Device specifications as written on the command line:
//! `hdd`, `ssd`, `nvme`, `raid0:N`, `raid0:N:MEMBER`.

use std::fmt;
use std::str::FromStr;

use super::{Device, Flash, Hdd, Raid0, NVME_PARAMS, RAID0_MAX_MEMBERS, SSD_PARAMS};

/// The class of a single device (for an array, its members' class).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// Rotating disk ([`Hdd`]).
    Hdd,
    /// SATA flash ([`Flash`] with [`SSD_PARAMS`]).
    Ssd,
    /// NVMe flash ([`Flash`] with [`NVME_PARAMS`]).
    Nvme,
}

impl DeviceKind {
    /// Whether seeks matter (prefetchers that sort by LBN care).
    pub fn is_rotational(self) -> bool {
        self == DeviceKind::Hdd
    }

    fn build_one(self) -> Box<dyn Device> {
        match self {
            DeviceKind::Hdd => Box::new(Hdd::new()),
            DeviceKind::Ssd => Box::new(Flash::new(SSD_PARAMS)),
            DeviceKind::Nvme => Box::new(Flash::new(NVME_PARAMS)),
        }
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceKind::Hdd => "hdd",
            DeviceKind::Ssd => "ssd",
            DeviceKind::Nvme => "nvme",
        })
    }
}

impl FromStr for DeviceKind {
    type Err = DeviceSpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "hdd" => Ok(DeviceKind::Hdd),
            "ssd" => Ok(DeviceKind::Ssd),
            "nvme" => Ok(DeviceKind::Nvme),
            _ => Err(DeviceSpecError::Unknown(s.to_string())),
        }
    }
}

/// A parsed device specification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceSpec {
    /// One device.
    Single(DeviceKind),
    /// RAID-0 over `members` devices of class `member`.
    Raid0 {
        /// Number of member devices, 1..=[`RAID0_MAX_MEMBERS`].
        members: usize,
        /// Class of every member (default [`DeviceKind::Hdd`]).
        member: DeviceKind,
    },
}

impl DeviceSpec {
    /// Build the model.
    pub fn build(self) -> Box<dyn Device> {
        match self {
            DeviceSpec::Single(k) => k.build_one(),
            DeviceSpec::Raid0 { members, member } => match member {
                DeviceKind::Hdd => Box::new(Raid0::new((0..members).map(|_| Hdd::new()).collect())),
                DeviceKind::Ssd => Box::new(Raid0::new(
                    (0..members).map(|_| Flash::new(SSD_PARAMS)).collect(),
                )),
                DeviceKind::Nvme => Box::new(Raid0::new(
                    (0..members).map(|_| Flash::new(NVME_PARAMS)).collect(),
                )),
            },
        }
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Single(k) => write!(f, "{k}"),
            DeviceSpec::Raid0 {
                members,
                member: DeviceKind::Hdd,
            } => write!(f, "raid0:{members}"),
            DeviceSpec::Raid0 { members, member } => write!(f, "raid0:{members}:{member}"),
        }
    }
}

impl FromStr for DeviceSpec {
    type Err = DeviceSpecError;
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let mut parts = spec.split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(kind), None, _, _) => kind
                .parse()
                .map(DeviceSpec::Single)
                .map_err(|_| DeviceSpecError::Unknown(spec.to_string())),
            (Some("raid0"), Some(n), member, None) => {
                let members = match n.parse::<usize>() {
                    Ok(m) if (1..=RAID0_MAX_MEMBERS).contains(&m) => m,
                    _ => {
                        return Err(DeviceSpecError::RaidMembers {
                            spec: spec.to_string(),
                            members: n.to_string(),
                        })
                    }
                };
                let member = match member {
                    None => DeviceKind::Hdd,
                    Some(m) => m.parse().map_err(|_| DeviceSpecError::RaidMember {
                        spec: spec.to_string(),
                        member: m.to_string(),
                    })?,
                };
                Ok(DeviceSpec::Raid0 { members, member })
            }
            _ => Err(DeviceSpecError::Unknown(spec.to_string())),
        }
    }
}

/// Why a device specification was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSpecError {
    /// Not one of the valid forms.
    Unknown(String),
    /// `raid0:N` with N not a whole number in range.
    RaidMembers {
        /// The whole specification.
        spec: String,
        /// The member count as written.
        members: String,
    },
    /// `raid0:N:MEMBER` with an unknown member class.
    RaidMember {
        /// The whole specification.
        spec: String,
        /// The member class as written.
        member: String,
    },
}

const VALID_FORMS: &str = "hdd, ssd, nvme, none, raid0:N or raid0:N:MEMBER (N = 1..=64 members, \
                           MEMBER = hdd, ssd or nvme, default hdd)";

impl fmt::Display for DeviceSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpecError::Unknown(spec) => {
                write!(f, "unknown device '{spec}'; expected {VALID_FORMS}")
            }
            DeviceSpecError::RaidMembers { spec, members } => write!(
                f,
                "device '{spec}': member count '{members}' is not a number from 1 to \
                 {RAID0_MAX_MEMBERS}; expected {VALID_FORMS}"
            ),
            DeviceSpecError::RaidMember { spec, member } => write!(
                f,
                "device '{spec}': unknown member device '{member}'; expected {VALID_FORMS}"
            ),
        }
    }
}

impl std::error::Error for DeviceSpecError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::build_device;

    #[test]
    fn parses_and_round_trips_valid_forms() {
        for s in [
            "hdd",
            "ssd",
            "nvme",
            "raid0:4",
            "raid0:1",
            "raid0:64",
            "raid0:8:ssd",
            "raid0:2:nvme",
        ] {
            let spec: DeviceSpec = s.parse().unwrap();
            assert_eq!(spec.to_string(), s);
        }
        assert_eq!(
            "raid0:3:hdd".parse::<DeviceSpec>().unwrap().to_string(),
            "raid0:3"
        );
    }

    #[test]
    fn rejects_invalid_forms_naming_the_valid_ones() {
        for s in [
            "",
            "HDD",
            "tape",
            "raid0",
            "raid0:",
            "raid0:0",
            "raid0:x",
            "raid0:-1",
            "raid0:65",
            "raid0:2:tape",
            "raid0:2:ssd:x",
            "raid1:2",
            "hdd:1",
        ] {
            let e = build_device(s)
                .err()
                .unwrap_or_else(|| panic!("{s} accepted"));
            assert!(
                e.contains("raid0:N") && e.contains("hdd, ssd, nvme"),
                "{s}: {e}"
            );
            assert!(e.contains(&format!("'{s}'")), "{s}: {e}");
        }
        assert!(build_device("raid0:0")
            .err()
            .unwrap()
            .contains("member count '0'"));
        assert!(build_device("raid0:x")
            .err()
            .unwrap()
            .contains("member count 'x'"));
    }

    #[test]
    fn builds_every_form() {
        for (s, kind, tput) in [
            ("hdd", DeviceKind::Hdd, 100_000_000),
            ("ssd", DeviceKind::Ssd, 500_000_000),
            ("nvme", DeviceKind::Nvme, 3_200_000_000),
            ("raid0:4", DeviceKind::Hdd, 400_000_000),
            ("raid0:2:ssd", DeviceKind::Ssd, 1_000_000_000),
        ] {
            let d = build_device(s).unwrap();
            assert_eq!(d.kind(), Some(kind), "{s}");
            assert_eq!(d.max_throughput_bytes_per_s(), Some(tput), "{s}");
            assert!(
                d.describe().starts_with(&format!("{s}:")),
                "{}",
                d.describe()
            );
        }
    }
}

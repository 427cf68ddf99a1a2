//! Textual policy parameters: `name:k=v,k=v` into a typed struct with
//! documented defaults (the libCacheSim convention, STYLE.md).
//!
//! Each policy declares its parameters once with [`params!`]; that yields
//! the struct, its `Default`, the help table and the `k=v` setter. Unknown
//! keys are rejected with the list of valid keys and their defaults.

use std::fmt;

/// One parameter as shown by `--policy NAME:help`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamSpec {
    /// Key as written on the command line.
    pub key: &'static str,
    /// Default value, as text.
    pub default: String,
    /// What it means, with its source (paper section).
    pub doc: &'static str,
}

/// A parameter error, with a human message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamError {
    /// The key is not one of the policy's parameters.
    UnknownKey {
        /// Policy name.
        policy: String,
        /// The key given.
        key: String,
        /// The valid keys with their defaults.
        valid: Vec<ParamSpec>,
    },
    /// The value does not parse.
    BadValue {
        /// Policy name.
        policy: String,
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What was expected.
        expected: String,
    },
    /// A `k=v` item without `=`.
    Malformed {
        /// Policy name.
        policy: String,
        /// The item.
        item: String,
    },
    /// The same key given twice (`k=1,k=2`): which one was meant?
    Duplicate {
        /// Policy name.
        policy: String,
        /// The key.
        key: String,
    },
    /// Values that each parse but contradict each other (`min` above `max`).
    Conflict {
        /// Policy name.
        policy: String,
        /// What contradicts what.
        why: String,
    },
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::UnknownKey { policy, key, valid } => {
                write!(
                    f,
                    "policy '{policy}' has no parameter '{key}'; valid keys: "
                )?;
                let list: Vec<String> = valid
                    .iter()
                    .map(|p| format!("{} (default {})", p.key, p.default))
                    .collect();
                if list.is_empty() {
                    write!(f, "none (it takes no parameters)")
                } else {
                    write!(f, "{}", list.join(", "))
                }
            }
            ParamError::BadValue {
                policy,
                key,
                value,
                expected,
            } => write!(
                f,
                "policy '{policy}': parameter '{key}={value}': expected {expected}"
            ),
            ParamError::Malformed { policy, item } => write!(
                f,
                "policy '{policy}': '{item}' is not a parameter setting; expected key=value"
            ),
            ParamError::Duplicate { policy, key } => write!(
                f,
                "policy '{policy}': parameter '{key}' is given more than once"
            ),
            ParamError::Conflict { policy, why } => write!(f, "policy '{policy}': {why}"),
        }
    }
}

impl std::error::Error for ParamError {}

/// A value type a parameter can hold.
pub trait ParamValue: Sized {
    /// Parse from text; on failure return what was expected.
    fn parse_param(text: &str) -> Result<Self, String>;
    /// Show as text (for help and round trips).
    fn show_param(&self) -> String;
}

macro_rules! int_param {
    ($($t:ty),*) => {$(
        impl ParamValue for $t {
            fn parse_param(text: &str) -> Result<Self, String> {
                text.trim().parse().map_err(|_| format!("an integer ({})", stringify!($t)))
            }
            fn show_param(&self) -> String { self.to_string() }
        }
    )*};
}
int_param!(u8, u16, u32, u64, usize, i64);

impl ParamValue for f64 {
    fn parse_param(text: &str) -> Result<Self, String> {
        match text.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err("a finite number".into()),
        }
    }
    fn show_param(&self) -> String {
        self.to_string()
    }
}

impl ParamValue for bool {
    fn parse_param(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "on" | "true" | "yes" | "1" => Ok(true),
            "off" | "false" | "no" | "0" => Ok(false),
            _ => Err("on or off".into()),
        }
    }
    fn show_param(&self) -> String {
        if *self { "on" } else { "off" }.into()
    }
}

impl ParamValue for crate::size::ByteSize {
    fn parse_param(text: &str) -> Result<Self, String> {
        text.parse()
    }
    fn show_param(&self) -> String {
        self.to_string()
    }
}

impl ParamValue for String {
    fn parse_param(text: &str) -> Result<Self, String> {
        Ok(text.to_string())
    }
    fn show_param(&self) -> String {
        self.clone()
    }
}

/// A typed parameter struct (generated by [`params!`]).
pub trait Params: Default + Clone {
    /// Every parameter with its default and documentation.
    fn specs() -> Vec<ParamSpec>;
    /// Set one parameter from text.
    fn set(&mut self, policy: &str, key: &str, value: &str) -> Result<(), ParamError>;
    /// Check relations between parameters after all are set.
    fn validate(&self, _policy: &str) -> Result<(), ParamError> {
        Ok(())
    }

    /// Parse `k=v,k=v` (the part after `NAME:`) over the defaults.
    fn parse(policy: &str, text: &str) -> Result<Self, ParamError> {
        let mut p = Self::default();
        let mut seen: Vec<&str> = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item.split_once('=').ok_or_else(|| ParamError::Malformed {
                policy: policy.into(),
                item: item.into(),
            })?;
            let k = k.trim();
            p.set(policy, k, v.trim())?;
            if seen.contains(&k) {
                return Err(ParamError::Duplicate {
                    policy: policy.into(),
                    key: k.into(),
                });
            }
            seen.push(k);
        }
        p.validate(policy)?;
        Ok(p)
    }
}

/// Declare a parameter struct; an optional `validate = FN;` after the
/// struct names a `fn(&Self) -> Result<(), String>` that checks relations
/// between parameters (a `Err(why)` becomes [`ParamError::Conflict`]):
///
/// ```
/// outrider_core::params! {
///     /// OBL parameters.
///     pub struct Demo {
///         /// How many previous accesses must be sequential.
///         k: u32 = 4,
///     }
/// }
/// use outrider_core::Params;
/// assert_eq!(Demo::parse("demo", "k=8").unwrap().k, 8);
/// ```
#[macro_export]
macro_rules! params {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( #[doc = $doc:expr] $field:ident : $ty:ty = $default:expr , )*
        }
        $( validate = $check:path ; )?
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            $( #[doc = $doc] pub $field: $ty, )*
        }
        impl Default for $name {
            fn default() -> Self {
                $name { $( $field: $default, )* }
            }
        }
        impl $crate::params::Params for $name {
            fn specs() -> Vec<$crate::params::ParamSpec> {
                let d = Self::default();
                let _ = &d;
                vec![ $( $crate::params::ParamSpec {
                    key: stringify!($field),
                    default: $crate::params::ParamValue::show_param(&d.$field),
                    doc: $doc.trim(),
                }, )* ]
            }
            fn set(&mut self, policy: &str, key: &str, value: &str)
                -> Result<(), $crate::params::ParamError>
            {
                $(
                    if key == stringify!($field) {
                        self.$field = <$ty as $crate::params::ParamValue>::parse_param(value)
                            .map_err(|expected| $crate::params::ParamError::BadValue {
                                policy: policy.into(),
                                key: key.into(),
                                value: value.into(),
                                expected,
                            })?;
                        return Ok(());
                    }
                )*
                let _ = value;
                Err($crate::params::ParamError::UnknownKey {
                    policy: policy.into(),
                    key: key.into(),
                    valid: Self::specs(),
                })
            }
            $(
                fn validate(&self, policy: &str) -> Result<(), $crate::params::ParamError> {
                    $check(self).map_err(|why| $crate::params::ParamError::Conflict {
                        policy: policy.into(),
                        why,
                    })
                }
            )?
        }
    };
}

/// Render a help table for `--policy NAME:help`.
pub fn render_help(policy: &str, summary: &str, specs: &[ParamSpec]) -> String {
    let mut s = format!("{policy}: {summary}\n");
    if specs.is_empty() {
        s.push_str("  (no parameters)\n");
        return s;
    }
    let w = specs
        .iter()
        .map(|p| p.key.len() + p.default.len() + 1)
        .max()
        .unwrap_or(0);
    s.push_str("parameters (key=default):\n");
    for p in specs {
        let kd = format!("{}={}", p.key, p.default);
        s.push_str(&format!("  {kd:<w$}  {}\n", p.doc));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::params! {
        /// Test parameters.
        pub struct P {
            /// an integer
            k: u32 = 4,
            /// a switch
            on: bool = true,
            /// a size
            buf: crate::size::ByteSize = crate::size::ByteSize(65536),
        }
    }

    #[test]
    fn defaults_and_overrides() {
        let p = P::parse("t", "").unwrap();
        assert_eq!(p, P::default());
        let p = P::parse("t", "k=8, on=off,buf=1MiB").unwrap();
        assert_eq!((p.k, p.on, p.buf.0), (8, false, 1 << 20));
    }

    #[test]
    fn unknown_key_names_the_valid_keys() {
        let e = P::parse("t", "kk=3").unwrap_err().to_string();
        assert!(e.contains("no parameter 'kk'"), "{e}");
        assert!(
            e.contains("k (default 4)") && e.contains("buf (default 64KiB)"),
            "{e}"
        );
    }

    #[test]
    fn a_key_given_twice_is_an_error() {
        // obl:k=1,k=2 used to keep the last value silently.
        let e = P::parse("t", "k=1,k=2").unwrap_err().to_string();
        assert!(e.contains("'k' is given more than once"), "{e}");
    }

    #[test]
    fn bad_value_says_what_was_expected() {
        let e = P::parse("t", "k=x").unwrap_err().to_string();
        assert!(e.contains("expected an integer"), "{e}");
        let e = P::parse("t", "k").unwrap_err().to_string();
        assert!(e.contains("expected key=value"), "{e}");
    }
}

//! Normalizing client values, so that one account is one key: `Alice`,
//! ` alice `, the fullwidth `ａｌｉｃｅ` and the decomposed (NFD) spellings of
//! an accented name all reach the same account on most upstreams (which
//! trim, fold case or normalize before looking it up), so they must reach
//! the same limit. Unicode tables come from `unicode-normalization`.

use super::invisible::is_trimmed;
use super::spec::KeySpecError;
use std::fmt;
use std::str::FromStr;
use unicode_normalization::UnicodeNormalization;

/// One normalization step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NormalizeStep {
    /// Remove leading and trailing white space: every character that
    /// Python's `str.strip()`, Java's `String.trim()`, JavaScript's `trim()`,
    /// Go's `strings.TrimSpace` or .NET's `String.Trim()` removes (C0
    /// controls, Unicode white space, U+FEFF).
    Trim,
    /// Lower case (Rust's `str::to_lowercase`, full Unicode case mapping).
    Lowercase,
    /// Unicode compatibility composition (NFKC): fullwidth letters become
    /// ASCII, decomposed accents are composed.
    Nfkc,
}

impl NormalizeStep {
    /// The name in configuration: `trim`, `lowercase` or `nfkc`.
    pub fn as_str(self) -> &'static str {
        match self {
            NormalizeStep::Trim => "trim",
            NormalizeStep::Lowercase => "lowercase",
            NormalizeStep::Nfkc => "nfkc",
        }
    }
}

impl FromStr for NormalizeStep {
    type Err = KeySpecError;

    /// `trim`, `lowercase` or `nfkc`.
    fn from_str(s: &str) -> Result<NormalizeStep, KeySpecError> {
        match s {
            "trim" => Ok(NormalizeStep::Trim),
            "lowercase" => Ok(NormalizeStep::Lowercase),
            "nfkc" => Ok(NormalizeStep::Nfkc),
            _ => Err(KeySpecError(format!(
                "unknown normalization {s:?} (expected trim, lowercase or nfkc)"
            ))),
        }
    }
}

/// A set of steps, always applied in one order whatever order they are
/// named in: NFKC, then lower case, then trim (NFKC first, so that a
/// fullwidth capital lowers like an ASCII one and an ideographic space is
/// trimmed like any other).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Normalize {
    nfkc: bool,
    lowercase: bool,
    trim: bool,
}

impl Normalize {
    /// Values as the client sent them.
    pub const NONE: Normalize = Normalize {
        nfkc: false,
        lowercase: false,
        trim: false,
    };

    /// NFKC, lower case and trim: what a user limiting logins by account name
    /// or email expects (`Alice`, ` alice ` and `ａｌｉｃｅ` are one account).
    pub const ACCOUNT: Normalize = Normalize {
        nfkc: true,
        lowercase: true,
        trim: true,
    };

    /// The set of `steps` (repeats are harmless).
    pub fn from_steps(steps: impl IntoIterator<Item = NormalizeStep>) -> Normalize {
        let mut n = Normalize::NONE;
        for step in steps {
            match step {
                NormalizeStep::Trim => n.trim = true,
                NormalizeStep::Lowercase => n.lowercase = true,
                NormalizeStep::Nfkc => n.nfkc = true,
            }
        }
        n
    }

    /// The steps, in the order they apply.
    pub fn steps(self) -> Vec<NormalizeStep> {
        [
            (self.nfkc, NormalizeStep::Nfkc),
            (self.lowercase, NormalizeStep::Lowercase),
            (self.trim, NormalizeStep::Trim),
        ]
        .into_iter()
        .filter_map(|(on, step)| on.then_some(step))
        .collect()
    }

    /// `value`, normalized.
    pub fn apply(self, value: &str) -> String {
        let mut v = if self.nfkc {
            value.nfkc().collect()
        } else {
            value.to_string()
        };
        if self.lowercase {
            v = v.to_lowercase();
            if self.nfkc {
                // Lower case can leave a string that is not NFKC again (rarely).
                v = v.nfkc().collect();
            }
        }
        if self.trim {
            v = v.trim_matches(is_trimmed).to_string();
        }
        v
    }
}

impl fmt::Display for Normalize {
    /// `[nfkc, lowercase, trim]`, or `[]` for none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self
            .steps()
            .into_iter()
            .map(NormalizeStep::as_str)
            .collect();
        write!(f, "[{}]", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_normalization_makes_one_name_of_its_spellings() {
        for v in [
            "alice",
            "Alice",
            " alice ",
            "ＡＬＩＣＥ",
            "ａｌｉｃｅ",
            "\u{3000}ALICE\t",
        ] {
            assert_eq!(Normalize::ACCOUNT.apply(v), "alice", "{v:?}");
        }
        // NFD (e + combining acute) and NFC (é) are one name.
        assert_eq!(
            Normalize::ACCOUNT.apply("Jose\u{301}"),
            Normalize::ACCOUNT.apply("jos\u{e9}")
        );
        assert_eq!(Normalize::NONE.apply(" Key "), " Key ");
    }

    #[test]
    fn steps_apply_in_one_order_and_print() {
        use NormalizeStep::*;
        let n = Normalize::from_steps([Trim, Lowercase, Trim]);
        assert_eq!(n.apply(" ＡB "), "ａb");
        assert_eq!(n.to_string(), "[lowercase, trim]");
        assert_eq!(Normalize::ACCOUNT.to_string(), "[nfkc, lowercase, trim]");
        assert_eq!(Normalize::NONE.to_string(), "[]");
        assert!("upper".parse::<NormalizeStep>().is_err());
    }
}

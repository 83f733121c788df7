//! The characters upstreams do not agree on: those some trim from the ends
//! of a value and others keep, and those a user cannot see.
//!
//! `trim` removes the union of what the common runtimes' trims remove
//! (Python's `str.strip()`, Java's `String.trim()`, JavaScript's `trim()`,
//! Go's `strings.TrimSpace`, .NET's `String.Trim()`), so that every value an
//! upstream trims to `alice` is keyed `alice`. What is left inside a key
//! field that is a control character (C0, DEL, C1) or a default-ignorable
//! code point (zero-width space and joiners, soft hyphen, bidirectional
//! marks, variation selectors, ...) is refused: upstreams strip, keep or
//! fold such characters differently, so no one key is the upstream's.

/// Whether some common runtime's trim removes `c` from the ends of a value.
pub(crate) fn is_trimmed(c: char) -> bool {
    // Java's String.trim() removes every character up to U+0020 (C0 and
    // space); the others add Unicode white space, and JavaScript U+FEFF.
    c <= ' '
        || matches!(
            c,
            '\u{85}' | '\u{A0}' | '\u{1680}' | '\u{2000}'
                ..='\u{200A}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202F}'
                    | '\u{205F}'
                    | '\u{3000}'
                    | '\u{FEFF}'
        )
}

/// Whether `c` is refused in a key field: a control character or a
/// default-ignorable code point (Unicode's `Default_Ignorable_Code_Point`,
/// DerivedCoreProperties.txt).
pub(crate) fn is_refused(c: char) -> bool {
    c.is_control() || is_default_ignorable(c)
}

fn is_default_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{AD}'
            | '\u{34F}'
            | '\u{61C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// The first character of `value` refused in a key field, if any.
pub(crate) fn first_refused(value: &str) -> Option<char> {
    // Most values are printable ASCII: one pass over the bytes says so.
    if value.bytes().all(|b| (b' '..0x7F).contains(&b)) {
        return None;
    }
    value.chars().find(|&c| is_refused(c))
}

/// Why a key field's (normalized) value is refused, if it is: a refused
/// character, or white space some runtime trims at either end (left there
/// by a rule without `trim`: upstreams that trim read another value than
/// those that do not).
pub(crate) fn refusal(value: &str) -> Option<String> {
    if let Some(c) = first_refused(value) {
        return Some(format!(
            "it has U+{:04X}, a control or invisible character",
            c as u32
        ));
    }
    let end = value.chars().next().filter(|&c| is_trimmed(c));
    let end = end.or_else(|| value.chars().next_back().filter(|&c| is_trimmed(c)));
    end.map(|c| {
        format!(
            "it starts or ends with U+{:04X}, white space some upstreams trim",
            c as u32
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_invisible_characters_are_refused_and_letters_are_not() {
        for c in [
            '\0',
            '\u{1F}',
            '\u{7F}',
            '\u{80}',
            '\u{9F}',
            '\u{AD}',
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{2060}',
            '\u{FEFF}',
            '\u{180E}',
            '\u{E0001}',
            '\u{FE0F}',
        ] {
            assert!(is_refused(c), "U+{:04X}", c as u32);
        }
        for c in ['a', 'é', ' ', '\u{A0}', '\u{3000}', 'ａ', '\u{1F600}', '-'] {
            assert!(!is_refused(c), "U+{:04X}", c as u32);
        }
        assert_eq!(first_refused("alice"), None);
        assert_eq!(first_refused("al\u{200B}ice"), Some('\u{200B}'));
        assert_eq!(first_refused("zoë"), None);
        assert_eq!(refusal("a b"), None);
        assert!(refusal(" ab").unwrap().contains("U+0020"));
        assert!(refusal("ab\u{A0}").unwrap().contains("U+00A0"));
        assert!(refusal("a\u{200B}b").unwrap().contains("U+200B"));
    }
}

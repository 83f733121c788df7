//! A descriptor value with wildcards: each `*` stands for any run of
//! characters, empty included, anywhere in the value and as many as it
//! has (`foo*` a prefix, `*.example.com` a suffix, `svc*ep*rpc`), as the
//! reference matches them since its PR #1085.

/// A value with at least one `*`, kept as the literal pieces around them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Pattern {
    /// The text before the first `*`.
    first: String,
    /// The text between each two `*`, in order.
    middle: Vec<String>,
    /// The text after the last `*`.
    last: String,
}

impl Pattern {
    /// The pattern of `value`, when it has a `*`.
    pub fn of(value: &str) -> Option<Pattern> {
        let (first, rest) = value.split_once('*')?;
        let mut middle: Vec<String> = rest.split('*').map(str::to_string).collect();
        // `split` yields at least one piece: the text after the last `*`.
        let last = middle.pop()?;
        Some(Pattern {
            first: first.to_string(),
            middle,
            last,
        })
    }

    /// Whether `value` is the pattern with each `*` replaced by some text.
    ///
    /// The first piece must begin it and the last end it, without
    /// overlapping; each piece between is taken at its leftmost place after
    /// the one before, which leaves the most room for the rest, so a match
    /// is found if any exists (no backtracking, linear in the value).
    pub fn matches(&self, value: &str) -> bool {
        let (first, last) = (self.first.as_str(), self.last.as_str());
        if value.len() < first.len() + last.len()
            || !value.starts_with(first)
            || !value.ends_with(last)
        {
            return false;
        }
        let mut between = &value[first.len()..value.len() - last.len()];
        for piece in &self.middle {
            match between.find(piece.as_str()) {
                Some(at) => between = &between[at + piece.len()..],
                None => return false,
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, value: &str) -> bool {
        Pattern::of(pattern).unwrap().matches(value)
    }

    #[test]
    fn a_value_without_a_star_is_no_pattern() {
        assert_eq!(Pattern::of("foo"), None);
        assert_eq!(Pattern::of(""), None);
    }

    #[test]
    fn a_trailing_star_is_a_prefix_as_before() {
        assert!(matches("foo*", "foo"));
        assert!(matches("foo*", "foo1"));
        assert!(!matches("foo*", "fo"));
        assert!(!matches("foo*", "bar"));
        assert!(matches("*", ""));
        assert!(matches("*", "anything"));
    }

    #[test]
    fn stars_anywhere_and_several_match_as_a_glob() {
        // The reference's fixtures' cases.
        assert!(matches("bar*b", "barab"));
        assert!(matches("bar*b", "barb"));
        assert!(!matches("bar*b", "bara"));
        assert!(matches("/api*v1", "/api/users/v1"));
        assert!(!matches("/api*v1", "/api/users/v2"));
        assert!(matches("svc*ep*rpc", "svc-a.ep-1.rpc"));
        assert!(matches("svc*ep*rpc", "svceprpc"));
        assert!(!matches("svc*ep*rpc", "svc-a.rpc"));
        assert!(matches("*.example.com", "a.example.com"));
        assert!(!matches("*.example.com", "example.com"));
        assert!(matches("a**b", "ab"));
    }

    #[test]
    fn the_first_and_last_pieces_never_overlap() {
        // "aba" starts with "ab" and ends with "ba", but no split gives both.
        assert!(!matches("ab*ba", "aba"));
        assert!(matches("ab*ba", "abba"));
        assert!(!matches("a*a", "a"));
    }

    #[test]
    fn a_middle_piece_taken_leftmost_leaves_room_for_the_rest() {
        assert!(matches("*a*b*", "xaxaxb"));
        assert!(matches("x*ab*ab", "xababab"));
        assert!(!matches("x*ab*ab*c", "xabab"));
    }

    #[test]
    fn multibyte_values_are_split_on_char_boundaries() {
        assert!(matches("é*é", "éxé"));
        assert!(!matches("é*é", "é"));
        assert!(matches("*ü*", "aüb"));
    }

    /// The plain definition, by trying every split: slow, obviously right.
    fn by_definition(pattern: &[char], value: &[char]) -> bool {
        match pattern.split_first() {
            None => value.is_empty(),
            Some(('*', rest)) => (0..=value.len()).any(|i| by_definition(rest, &value[i..])),
            Some((c, rest)) => value.first() == Some(c) && by_definition(rest, &value[1..]),
        }
    }

    proptest::proptest! {
        #[test]
        fn matching_is_the_definition(
            pattern in "[ab*]{1,7}",
            value in "[ab]{0,9}",
        ) {
            if let Some(p) = Pattern::of(&pattern) {
                let chars = |s: &str| s.chars().collect::<Vec<_>>();
                proptest::prop_assert_eq!(
                    p.matches(&value),
                    by_definition(&chars(&pattern), &chars(&value)),
                    "{} on {}", pattern, value
                );
            }
        }
    }
}

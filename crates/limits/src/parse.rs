//! The one lexer behind every textual input of the core: rates and durations.
//!
//! Errors carry the offending token and its column, so that a message such as
//! `invalid rate "10/fortnight": unknown unit "fortnight" at column 4` points at
//! the exact place to fix.

use std::fmt;

/// An error from parsing a rate or a duration: what was wrong, and where.
///
/// ```
/// let err = "10/fortnight".parse::<limits::Rates>().unwrap_err();
/// assert_eq!(err.column(), 4);
/// assert_eq!(err.token(), "fortnight");
/// assert!(err.to_string().contains("unknown unit"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    what: &'static str,
    input: String,
    column: usize,
    token: String,
    problem: String,
}

impl ParseError {
    pub(crate) fn new(
        what: &'static str,
        input: &str,
        at: usize,
        token: &str,
        problem: impl Into<String>,
    ) -> Self {
        let column = input[..at.min(input.len())].chars().count() + 1;
        ParseError {
            what,
            input: input.to_string(),
            column,
            token: token.to_string(),
            problem: problem.into(),
        }
    }

    /// The 1-based column (in characters) where the problem starts.
    pub fn column(&self) -> usize {
        self.column
    }

    /// The offending token, empty when the input ended too early.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// What was wrong, without the location.
    pub fn problem(&self) -> &str {
        &self.problem
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {} {:?}: {}",
            self.what, self.input, self.problem
        )?;
        if self.token.is_empty() {
            write!(f, " at column {}", self.column)
        } else {
            write!(f, ": {:?} at column {}", self.token, self.column)
        }
    }
}

impl std::error::Error for ParseError {}

/// One token of rate or duration text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// Digits, possibly with one decimal point: `10`, `1.5`.
    Number,
    /// Letters: units and the word `per`.
    Word,
    /// `/`
    Slash,
    /// `;` or `,`
    Separator,
    /// Anything else.
    Other,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Token<'a> {
    pub kind: TokenKind,
    pub text: &'a str,
    /// Byte offset in the input.
    pub at: usize,
}

/// Splits `input` into tokens, skipping white space.
pub(crate) fn tokens(input: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut chars = input.char_indices().peekable();
    while let Some(&(at, c)) = chars.peek() {
        let kind = if c.is_whitespace() {
            chars.next();
            continue;
        } else if c.is_ascii_digit() || c == '.' {
            TokenKind::Number
        } else if c.is_alphabetic() {
            TokenKind::Word
        } else if c == '/' {
            TokenKind::Slash
        } else if c == ';' || c == ',' {
            TokenKind::Separator
        } else {
            TokenKind::Other
        };
        let mut end = at + c.len_utf8();
        chars.next();
        if matches!(kind, TokenKind::Number | TokenKind::Word) {
            while let Some(&(i, n)) = chars.peek() {
                let same = match kind {
                    TokenKind::Number => n.is_ascii_digit() || n == '.',
                    _ => n.is_alphabetic(),
                };
                if !same {
                    break;
                }
                end = i + n.len_utf8();
                chars.next();
            }
        }
        out.push(Token {
            kind,
            text: &input[at..end],
            at,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_numbers_words_and_punctuation() {
        let kinds: Vec<_> = tokens("10 per 1.5s; 3/h")
            .iter()
            .map(|t| (t.kind, t.text))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (TokenKind::Number, "10"),
                (TokenKind::Word, "per"),
                (TokenKind::Number, "1.5"),
                (TokenKind::Word, "s"),
                (TokenKind::Separator, ";"),
                (TokenKind::Number, "3"),
                (TokenKind::Slash, "/"),
                (TokenKind::Word, "h"),
            ]
        );
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let err = ParseError::new("rate", "µ/x", 3, "x", "bad");
        assert_eq!(err.column(), 3);
    }
}

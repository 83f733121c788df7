//! The one-pass checks of a normal path say what the string searches they
//! replaced said, for every path of up to 9 characters of `/`, `.`, `a`,
//! `;` and `%` (and a few longer ones).

use super::super::{is_normal, match_path};
use std::borrow::Cow;

/// What `is_normal` was: a search for `//` and a split.
fn is_normal_by_search(path: &str) -> bool {
    path.starts_with('/')
        && !path.contains("//")
        && path
            .split('/')
            .all(|segment| segment != "." && segment != "..")
}

/// Every string of up to `max` characters of `alphabet`.
fn strings(alphabet: &[char], max: usize) -> Vec<String> {
    let mut all = vec![String::new()];
    let mut last = vec![String::new()];
    for _ in 0..max {
        let next: Vec<String> = last
            .iter()
            .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
            .collect();
        all.extend(next.iter().cloned());
        last = next;
    }
    all
}

#[test]
fn is_normal_says_what_the_searches_said() {
    let mut checked = 0;
    for path in strings(&['/', '.', 'a'], 9) {
        assert_eq!(is_normal(&path), is_normal_by_search(&path), "{path:?}");
        checked += 1;
    }
    for path in ["/.well-known/x", "/a/...", "/a/..b/", "/é/./", "/é//", "/é"] {
        assert_eq!(is_normal(path), is_normal_by_search(path), "{path:?}");
    }
    assert_eq!(checked, (0..=9).map(|n| 3usize.pow(n)).sum::<usize>());
}

#[test]
fn match_path_cuts_what_it_cut() {
    for path in strings(&['/', 'a', ';', '%', '3', 'B'], 6) {
        let expected: Cow<'_, str> = if !path.contains(';') && !path.contains("%3B") {
            Cow::Borrowed(&path)
        } else {
            let cut: Vec<&str> = path
                .split('/')
                .map(|segment| {
                    let end = [segment.find(';'), segment.find("%3B")]
                        .into_iter()
                        .flatten()
                        .min()
                        .unwrap_or(segment.len());
                    &segment[..end]
                })
                .collect();
            Cow::Owned(cut.join("/"))
        };
        let got = match_path(&path);
        assert_eq!(got, expected, "{path:?}");
        assert_eq!(
            matches!(got, Cow::Borrowed(_)),
            matches!(expected, Cow::Borrowed(_))
        );
    }
}

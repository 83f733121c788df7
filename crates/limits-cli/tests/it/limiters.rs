//! `limits limiters`: every limiter with its promise, and where the
//! fixed-memory sketch and the limit on distinct values are asked for.

use crate::common;

#[test]
fn limiters_lists_each_limiter_and_the_sketch() {
    let (out, err, code) = common::limits(&["limiters"]);
    assert_eq!(code, 0, "{err}");
    for algorithm in limits::Algorithm::ALL {
        let line = format!("{:<16}{}", algorithm.name(), algorithm.describe());
        assert!(out.lines().any(|l| l == line), "{line:?} not in {out}");
    }
    assert!(
        out.contains("memory = \"16MB\"") && out.contains("--sketch 16MB"),
        "{out}"
    );
    assert!(
        out.contains("distinct = { of = \"form:username\"") && out.contains("--distinct 20/h"),
        "{out}"
    );
}

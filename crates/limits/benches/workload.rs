//! A fixed workload for instruction counts (scripts/bench-callgrind): one
//! side, one limiter, a key count and a number of checks, with the checks
//! alone in `measured` so that callgrind can count just them
//! (`--toggle-collect=*measured*`).
//!
//! `workload limits|governor ALGORITHM KEYS CHECKS [allowed|denied]`:
//! `limits` is `check` (the whole decision).

mod common;

use common::{Governor, KeyStream, Ours, Outcome, Scenario};
use limits::Algorithm;
use std::hint::black_box;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.into());
    let side = arg(0, "limits");
    let algorithm: Algorithm = arg(1, "token-bucket").parse().expect("an algorithm");
    let keys: usize = arg(2, "10000").parse().expect("a key count");
    let checks: usize = arg(3, "200000").parse().expect("a number of checks");
    let outcome = match arg(4, "allowed").as_str() {
        "denied" => Outcome::Denied,
        _ => Outcome::Allowed,
    };
    let s = Scenario::new(algorithm, keys, outcome);
    let ks = KeyStream::new(keys, checks, 0x5eed + keys as u64);
    let allowed = if side == "governor" {
        let gov = Governor::new(&s, &ks.keys);
        measured(&ks.stream, |k| gov.run(k))
    } else {
        let ours = Ours::new(&s, &ks.keys);
        measured(&ks.stream, |k| ours.run(k))
    };
    println!(
        "{side} {} {keys} keys: {checks} checks, {allowed} allowed",
        arg(1, "")
    );
}

/// The checks callgrind counts.
#[inline(never)]
fn measured(stream: &[u64], run: impl Fn(&[u64]) -> u64) -> u64 {
    black_box(run(black_box(stream)))
}

//! Reference models of the `limits` algorithms, and one conformance suite for
//! every [`Store`](limits::Store). Tests only: never published.
//!
//! The models are the plainest limiters that can be written (a Vec of every
//! timestamp, counts per window, exact rationals, the whole history kept), and
//! every field of a decision is derived from "would this pass at t?" by
//! definition, never by the real limiters' formulas. The core's tests compare
//! the pure rules with them ([`compare_with_model`]); any store, in memory or
//! over the network, is held to them by [`check`] / [`run_suite`], or by
//! [`store_conformance_tests!`] which writes one `#[test]` per algorithm and
//! property (as governor runs the same tests over two keyed stores):
//!
//! ```
//! use limits::{KeyedLimiter, ManualClock, Rule};
//! use std::future::{ready, Ready};
//!
//! fn memory(rule: Rule) -> Ready<KeyedLimiter<String, ManualClock>> {
//!     ready(KeyedLimiter::with_clock(rule, ManualClock::new(0)))
//! }
//! limits_conformance::store_conformance_tests!(memory);
//! # fn main() {}
//! ```

#![warn(missing_docs)]

mod distinct_model;
mod distinct_trace;
mod driver;
mod invariants;
mod large_costs;
mod model;
mod penalty_model;
mod rational;
mod rule_model;
mod suite;
mod trace;

pub use distinct_model::{DistinctAnswer, DistinctModel};
pub use distinct_trace::{DistinctStep, DistinctTrace};
pub use driver::{allowed_by_key, check_retry_is_exact, compare_with_model, config, limiter};
pub use invariants::{check_rate, within_burst_and_refill, worst_window};
pub use large_costs::{large_cost_cases, LARGE_COST_LIMIT, LARGE_COST_WINDOW};
pub use model::Model;
pub use penalty_model::PenaltyModel;
pub use rational::Q;
pub use rule_model::{first_after, RuleModel};
pub use suite::{
    assert_conforms, assert_penalizes, assert_settles, check, check_cases, check_penalty,
    check_settle, penalty_case, run_suite, settle_case, Config, Failure, Mismatch, PenaltyCase,
    Property, SettleCase, SettleTo, ALGORITHMS,
};
pub use trace::{case, edge_case, window, Case, Event};

#[doc(hidden)]
pub use limits as __limits;

/// Writes the whole suite as `#[test]`s: one module per algorithm
/// (`fixed_window`, `sliding_log`, `token_bucket`, `sliding_window`,
/// `leaky_bucket`, `smoothed_rate`), each with `matches_models`, `retry_after_is_exact` and
/// `invariants`. The first argument is the store factory, as [`check`]
/// takes it (named by a path or written inline); the optional second is a
/// [`Config`] expression.
#[macro_export]
macro_rules! store_conformance_tests {
    ($make:expr) => {
        $crate::store_conformance_tests!($make, $crate::Config::default());
    };
    ($make:expr, $config:expr) => {
        $crate::__algorithm_tests!($make, $config, fixed_window, FixedWindow);
        $crate::__algorithm_tests!($make, $config, sliding_log, SlidingLog);
        $crate::__algorithm_tests!($make, $config, token_bucket, TokenBucket);
        $crate::__algorithm_tests!($make, $config, sliding_window, SlidingWindow);
        $crate::__algorithm_tests!($make, $config, leaky_bucket, LeakyBucket);
        $crate::__algorithm_tests!($make, $config, smoothed_rate, SmoothedRate);
    };
}

/// One algorithm's module of [`store_conformance_tests!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __algorithm_tests {
    ($make:expr, $config:expr, $module:ident, $algorithm:ident) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;

            fn run(property: $crate::Property) {
                let algorithm = $crate::__limits::Algorithm::$algorithm;
                $crate::assert_conforms($make, algorithm, property, &$config);
            }

            #[test]
            fn matches_models() {
                run($crate::Property::MatchesModels);
            }

            #[test]
            fn retry_after_is_exact() {
                run($crate::Property::RetryAfterExact);
            }

            #[test]
            fn invariants() {
                run($crate::Property::Invariants);
            }

            #[test]
            fn counts_denied() {
                run($crate::Property::CountsDenied);
            }
        }
    };
}

/// Writes the settle suite as `#[test]`s: a module `settle` with one test
/// per algorithm ([`check_settle`]), for a store that can settle. The
/// arguments are those of [`store_conformance_tests!`].
#[macro_export]
macro_rules! store_settle_tests {
    ($make:expr) => {
        $crate::store_settle_tests!($make, $crate::Config::default());
    };
    ($make:expr, $config:expr) => {
        $crate::__tests_per_algorithm!(settle, $crate::assert_settles, $make, $config);
    };
}

/// Writes the penalty suite as `#[test]`s: a module `penalty` with one test
/// per algorithm ([`check_penalty`]), for a store that bans. `$make` makes a
/// store of a rule with a penalty (`Fn(Rule, Penalty) -> impl Future`); the
/// config as in [`store_conformance_tests!`].
#[macro_export]
macro_rules! store_penalty_tests {
    ($make:expr) => {
        $crate::store_penalty_tests!($make, $crate::Config::default());
    };
    ($make:expr, $config:expr) => {
        $crate::__tests_per_algorithm!(penalty, $crate::assert_penalizes, $make, $config);
    };
}

/// A module `$module` of one test per algorithm, each `$assert($make,
/// algorithm, &$config)`: what the suites' macros write.
#[doc(hidden)]
#[macro_export]
macro_rules! __tests_per_algorithm {
    ($module:ident, $assert:path, $make:expr, $config:expr) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;

            fn run(algorithm: $crate::__limits::Algorithm) {
                $assert($make, algorithm, &$config);
            }

            #[test]
            fn fixed_window() {
                run($crate::__limits::Algorithm::FixedWindow);
            }

            #[test]
            fn sliding_log() {
                run($crate::__limits::Algorithm::SlidingLog);
            }

            #[test]
            fn token_bucket() {
                run($crate::__limits::Algorithm::TokenBucket);
            }

            #[test]
            fn sliding_window() {
                run($crate::__limits::Algorithm::SlidingWindow);
            }

            #[test]
            fn leaky_bucket() {
                run($crate::__limits::Algorithm::LeakyBucket);
            }

            #[test]
            fn smoothed_rate() {
                run($crate::__limits::Algorithm::SmoothedRate);
            }
        }
    };
}

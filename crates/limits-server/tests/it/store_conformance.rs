//! The store the server gives each rule (`RuleStore`, as built from the
//! command line or a rules file) runs the whole conformance suite, so that
//! what `limits serve` decides is what the reference models decide.

use limits::Rule;
use limits_server::{RuleStore, StoreOptions};
use std::future::{ready, Ready};

/// The server's store for `rule`, as `limits serve` builds it.
fn served(rule: Rule) -> Ready<RuleStore> {
    ready(StoreOptions::default().store("default", rule).unwrap())
}

limits_conformance::store_conformance_tests!(served);
limits_conformance::store_settle_tests!(served);

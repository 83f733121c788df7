//! `limits rls`: the Envoy rate limit service protocol in front of our exact limiters.

pub mod config;

use super::*;
use crate::rls::proto::rate_limit_response::Code;
use limits::{Algorithm, KeyedLimiter, ManualClock, Options, Store};

const S: u64 = 1_000_000_000;

fn rule(algorithm: Algorithm, rates: &str) -> Rule {
    Rule::new(algorithm, rates.parse().unwrap())
}

fn store(rule: &Rule) -> KeyedLimiter<String, ManualClock> {
    KeyedLimiter::with_options(rule.clone(), ManualClock::new(0), Options::default())
}

async fn at(store: &KeyedLimiter<String, ManualClock>, now: u64, cost: u64) -> Verdict {
    store.decide_at("k", now, cost, Mode::Record).await.unwrap()
}

fn descriptor(hits: Option<u64>) -> RateLimitDescriptor {
    RateLimitDescriptor {
        hits_addend: hits,
        ..RateLimitDescriptor::default()
    }
}

fn reported() -> Reported {
    Reported {
        requests_per_unit: 3,
        unit: 2,
        name: "per-user".into(),
    }
}

#[test]
fn the_descriptors_hits_win_its_zero_peeks_and_the_requests_zero_is_one() {
    let cost = |hits, d: &RateLimitDescriptor| cost(hits, d, Mode::Record);
    assert_eq!(cost(0, &descriptor(None)), (1, Mode::Record));
    assert_eq!(cost(4, &descriptor(None)), (4, Mode::Record));
    assert_eq!(cost(4, &descriptor(Some(2))), (2, Mode::Record));
    assert_eq!(cost(4, &descriptor(Some(0))), (0, Mode::Peek));
    assert_eq!(
        cost(0, &descriptor(Some(u64::MAX))),
        (u64::MAX, Mode::Record)
    );
}

#[test]
fn counting_denied_hits_records_every_hit_but_a_descriptors_zero_still_peeks() {
    let always = Mode::RecordAlways;
    assert_eq!(cost(0, &descriptor(None), always), (1, always));
    assert_eq!(cost(4, &descriptor(Some(2)), always), (2, always));
    assert_eq!(cost(4, &descriptor(Some(0)), always), (0, Mode::Peek));
}

#[tokio::test]
async fn a_denial_reports_the_exact_wait_and_an_admission_the_time_to_full() {
    let r = rule(Algorithm::SlidingLog, "3/m");
    let s = store(&r);
    for t in [0, 10 * S, 20 * S] {
        let v = at(&s, t, 1).await;
        let st = status(&reported(), &r, &v, false);
        assert_eq!(st.code, Code::Ok as i32);
        // The log is full again a minute after its latest entry: now.
        assert_eq!(
            st.duration_until_reset,
            Some(whole_seconds(Duration::from_secs(60)))
        );
    }
    let v = at(&s, 30 * S, 1).await;
    assert!(!v.decision.allowed);
    let st = status(&reported(), &r, &v, true);
    assert_eq!(st.code, Code::OverLimit as i32);
    assert_eq!(st.limit_remaining, 0);
    // The first entry leaves the window at 60 s: 30 s from now, exactly.
    assert_eq!(
        st.duration_until_reset,
        Some(whole_seconds(Duration::from_secs(30)))
    );
    assert_eq!(until_reset(&v.decision), Duration::from_secs(30));
    let limit = st.current_limit.unwrap();
    assert_eq!(
        (limit.requests_per_unit, limit.unit, limit.name.as_str()),
        (3, 2, "per-user")
    );
}

#[tokio::test]
async fn a_cost_above_the_limit_never_passes_and_reports_the_time_to_full() {
    let r = rule(Algorithm::FixedWindow, "3/s");
    let v = at(&store(&r), S / 4, 4).await;
    assert_eq!(v.decision.retry_after, RetryAfter::Never);
    assert_eq!(until_reset(&v.decision), v.decision.reset_after);
}

#[tokio::test]
async fn remaining_is_the_least_over_the_rates_and_never_above_a_limit() {
    let r = rule(Algorithm::SlidingLog, "5/s; 7/m");
    let s = store(&r);
    let v = at(&s, 0, 3).await;
    assert_eq!(remaining(&r, &v), 2);
    let v = at(&s, 2 * S, 3).await;
    assert_eq!(remaining(&r, &v), 1, "the minute's 7 less 6");
    let leaky = Rule::build(Algorithm::LeakyBucket, "2/s".parse().unwrap(), Some(4));
    let v = at(&store(&leaky), 0, 1).await;
    assert!(
        v.decision.remaining > 2,
        "a burst admits more than the rate at once"
    );
    assert_eq!(remaining(&leaky, &v), 2);
}

#[tokio::test]
async fn near_limit_counts_the_admitted_hits_past_eighty_percent() {
    let r = rule(Algorithm::FixedWindow, "10/m");
    let s = store(&r);
    // 7 used: none past 8.
    assert_eq!(near_limit_hits(&r, &at(&s, 0, 7).await, 7), 0);
    // 7 -> 9: one of the two past 8.
    assert_eq!(near_limit_hits(&r, &at(&s, 1, 2).await, 2), 1);
    // 9 -> 10: all past 8.
    assert_eq!(near_limit_hits(&r, &at(&s, 2, 1).await, 1), 1);
}

/// A denied request of several hits counted all its hits as over; the
/// reference counts those past the limit as over and those between the
/// near-limit threshold (or what was used) and the limit as near.
#[tokio::test]
async fn a_denied_multi_hit_request_splits_its_hits_into_over_and_near() {
    let r = rule(Algorithm::FixedWindow, "10/m");
    let s = store(&r);
    // 2 used, 10 asked: 2 past the limit, the 2 from 8 to 10 near.
    at(&s, 0, 2).await;
    let v = at(&s, 1, 10).await;
    assert!(!v.decision.allowed);
    assert_eq!(denied_hits(&r, &v, 10), (2, 2));
    // 9 used, 3 asked: 2 past the limit, the 1 from 9 to 10 near.
    at(&s, 2, 7).await;
    let v = at(&s, 3, 3).await;
    assert_eq!(denied_hits(&r, &v, 3), (2, 1));
    // 10 used: every hit over.
    at(&s, 4, 1).await;
    let v = at(&s, 5, 4).await;
    assert_eq!(denied_hits(&r, &v, 4), (4, 0));
    // Two rates: counted on the one that puts the most past its limit.
    let two = rule(Algorithm::FixedWindow, "10/m; 4/s");
    let s = store(&two);
    at(&s, 0, 3).await;
    let v = at(&s, 1, 3).await;
    assert!(!v.decision.allowed);
    assert_eq!(denied_hits(&two, &v, 3), (2, 1), "the second's 3 + 3 - 4");
}

#[test]
fn member_names_are_valid_structured_field_strings() {
    assert_eq!(member_name("api.user_alice"), "api.user_alice");
    assert_eq!(member_name("a\"b\\c\u{e9}\n"), "a_b_c__");
}

#[tokio::test]
async fn header_fields_are_those_of_the_http_layer_with_retry_after_when_denied() {
    let r = rule(Algorithm::FixedWindow, "2/m; 5/h");
    let s = store(&r);
    at(&s, 0, 2).await;
    let v = at(&s, 15 * S, 1).await;
    assert!(!v.decision.allowed);
    let fields = header_fields(&[rule_status("api", &r, &v)], Some(v.decision.retry_after));
    let get = |name: &str| {
        fields
            .iter()
            .find(|h| h.key == name)
            .map(|h| h.value.clone())
            .unwrap_or_default()
    };
    assert_eq!(
        get("ratelimit-policy"),
        r#""api-1m";q=2;w=60, "api-1h";q=5;w=3600"#
    );
    assert_eq!(
        get("ratelimit"),
        r#""api-1m";r=0;t=45, "api-1h";r=3;t=3585"#
    );
    assert_eq!(get("retry-after"), "45");
    assert_eq!(fields.len(), 3);
    assert!(header_fields(&[], None).is_empty());
}

/// A request denied only by a blocked limit has no rate to describe and no
/// wait to tell: no field at all, never an empty one.
#[test]
fn a_denial_without_a_rate_or_a_wait_sends_no_empty_header_field() {
    assert_eq!(header_fields(&[], Some(RetryAfter::Never)), []);
}

#[test]
fn ok_statuses_carry_no_limit() {
    let none = ok(0);
    assert_eq!((none.code, none.limit_remaining), (Code::Ok as i32, 0));
    assert!(none.current_limit.is_none() && none.duration_until_reset.is_none());
    assert_eq!(ok(u32::MAX).limit_remaining, u32::MAX);
    let denied = over_without_time(&reported());
    assert_eq!(denied.code, Code::OverLimit as i32);
    assert_eq!(denied.current_limit.unwrap().requests_per_unit, 3);
}

/// Envoy reads the seconds only: 7.1 s must say 8, or a client retrying
/// after `X-RateLimit-Reset` seconds is early and refused again.
#[test]
fn durations_round_up_to_whole_seconds_as_envoy_reads_only_seconds() {
    let d = whole_seconds(Duration::new(7, 123_456_789));
    assert_eq!((d.seconds, d.nanos), (8, 0));
    let d = whole_seconds(Duration::from_secs(7));
    assert_eq!((d.seconds, d.nanos), (7, 0));
    let d = whole_seconds(Duration::from_nanos(1));
    assert_eq!(
        (d.seconds, d.nanos),
        (1, 0),
        "a wait is never reported as none"
    );
}

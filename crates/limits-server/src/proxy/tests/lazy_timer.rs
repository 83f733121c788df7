//! The connection's timer is made to go off no later than a request's
//! deadline, not set to it: left alone when it holds an earlier deadline
//! (an earlier request's), brought forward when it holds a later one, and,
//! when it goes off before the request's deadline, set to that deadline and
//! waited on again, so the request never times out early.

use crate::proxy::timer::{self, SharedTimer};
use std::future::poll_fn;
use std::time::Duration;
use tokio::time::Instant;

const WAIT: Duration = Duration::from_millis(200);

#[tokio::test]
async fn a_new_timer_is_set_to_the_deadline() {
    let timers = SharedTimer::default();
    let deadline = Instant::now() + WAIT;
    let timer = timers.take(deadline);
    assert_eq!(timer.deadline(), deadline);
}

#[tokio::test]
async fn an_earlier_deadline_is_left_and_a_later_one_brought_forward() {
    let timers = SharedTimer::default();
    let first = Instant::now() + WAIT;
    timers.give_back(timers.take(first));
    // The next request's deadline is later: the timer keeps the first one.
    let later = first + WAIT;
    let timer = timers.take(later);
    assert_eq!(timer.deadline(), first);
    timers.give_back(timer);
    // A deadline earlier than the one it holds: the timer must go off by it.
    let earlier = first - WAIT / 2;
    let timer = timers.take(earlier);
    assert_eq!(timer.deadline(), earlier);
}

#[tokio::test]
async fn a_timer_gone_off_early_waits_for_the_requests_own_deadline() {
    let timers = SharedTimer::default();
    // An earlier request's deadline, passed already.
    let started = Instant::now();
    timers.give_back(timers.take(started));
    let deadline = started + WAIT;
    let mut timer = timers.take(deadline);
    assert_eq!(timer.deadline(), started, "left as it was");
    poll_fn(|cx| timer::poll_expired(timer.as_mut(), deadline, cx)).await;
    let now = Instant::now();
    assert!(
        now >= deadline,
        "expired {:?} before the deadline",
        deadline - now
    );
    assert_eq!(timer.deadline(), deadline, "set to the request's deadline");
    // Past it, it is ready at once, and stays set.
    poll_fn(|cx| timer::poll_expired(timer.as_mut(), deadline, cx)).await;
    assert_eq!(timer.deadline(), deadline);
}

#[tokio::test]
async fn a_timer_holding_the_deadline_goes_off_at_it() {
    let timers = SharedTimer::default();
    let deadline = Instant::now() + WAIT;
    let mut timer = timers.take(deadline);
    poll_fn(|cx| timer::poll_expired(timer.as_mut(), deadline, cx)).await;
    assert!(Instant::now() >= deadline);
    assert_eq!(timer.deadline(), deadline);
}

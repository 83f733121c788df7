//! How the layer responds, whoever answers: the response body type (the
//! inner service's body, or one of ours), and the RateLimit headers of the
//! rules a request passed, added to the inner service's response or written
//! into ours.

use crate::headers::{self, MadeOnce};
use crate::in_flight::{Holding, Slots};
use crate::in_force::InForce;
use crate::members::{Counted, members};
use bytes::Bytes;
use http::Response;
use http_body_util::{Either, Full};
use limits::Store;

/// The response body: the inner service's (holding the slots of the rules
/// that cap requests in flight until it ends), or one of ours (429, 413,
/// 503).
pub type LimitedBody<B> = Either<Holding<B>, Full<Bytes>>;

/// One of our responses, in the layer's body type.
pub(crate) fn ours<B>(r: Response<Full<Bytes>>) -> Response<LimitedBody<B>> {
    r.map(Either::Right)
}

/// The inner service's response, with no rule's headers and no slot held.
pub(crate) fn untouched<B>(response: Response<B>) -> Response<LimitedBody<B>> {
    response.map(|body| Either::Left(Holding::new(body, Slots::default())))
}

/// The inner service's `response` with the RateLimit headers of the rules
/// it passed (`statuses`), and without the headers rules read real costs
/// from ([`CostFrom`](crate::CostFrom)); its body holds `slots`.
pub(crate) fn add_headers<S: Store, K, B>(
    in_force: &InForce<S, K>,
    statuses: &[Counted],
    legacy: bool,
    response: Response<B>,
    slots: Slots,
) -> Response<LimitedBody<B>> {
    let mut response = response.map(|body| Either::Left(Holding::new(body, slots)));
    for name in &in_force.cost_headers {
        response.headers_mut().remove(name);
    }
    // No rule decided (its store could not): no field to send.
    if statuses.is_empty() {
        return response;
    }
    let members = members(&in_force.policy, statuses);
    let made = made_once(in_force, statuses);
    headers::write_members(response.headers_mut(), members, legacy, None, made);
    response
}

/// What the policy in force made once of the RateLimit values of
/// `statuses`: the RateLimit-Policy value of their one rule, and whether
/// every rule's name is visible ASCII (its own RateLimit-Policy value is a
/// value).
pub(crate) fn made_once<'a, S: Store, K>(
    in_force: &'a InForce<S, K>,
    statuses: &'a [Counted],
) -> MadeOnce<'a> {
    match statuses {
        [one] => {
            // The rule's values, read once (a `OnceLock` read each).
            let (policy, ratelimit) = in_force.rule_values(one.rule);
            MadeOnce {
                policy,
                visible_names: policy.is_some(),
                one: ratelimit.zip(one.per_rate.first()),
            }
        }
        _ => MadeOnce {
            policy: None,
            visible_names: statuses
                .iter()
                .all(|c| in_force.policy_value(c.rule).is_some()),
            one: None,
        },
    }
}

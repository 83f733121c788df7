//! The answers the layer gives itself, instead of the inner service's:
//! 429 with Retry-After, and the problems (RFC 9457) for requests it cannot
//! decide on (a path or method it refuses, a body it cannot read, a key
//! field upstreams read differently, a store that cannot answer).

use crate::body::BodyError;
use crate::decide::{Limited, Refusal};
use crate::grpc;
use crate::headers;
use crate::in_force::InForce;
use crate::members::{Counted, members};
use crate::problem::{PROBLEM_JSON, problem_members};
use crate::respond::made_once;
use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::Full;
use limits::{RetryAfter, Store};
use std::time::Duration;

/// Our answer to a request the decision step refused; a 429 carries the
/// RateLimit headers of the rules that decided, and with `legacy` the
/// X-RateLimit ones. `headers` is the refused request's header map: a 429
/// (the answer given most) writes its headers into it, emptied, instead of
/// allocating a map while the request's is freed (hyper hands the next
/// request of the connection the map of this response).
pub(crate) fn refusal<S: Store, K>(
    in_force: &InForce<S, K>,
    refusal: Refusal,
    legacy: bool,
    headers: HeaderMap,
) -> Response<Full<Bytes>> {
    // What a gRPC client is told instead, read before the refusal is spent.
    let grpc = grpc::is_grpc(&headers).then(|| grpc_status(in_force, &refusal));
    let response = match refusal {
        Refusal::Path(e) => problem_members(StatusCode::BAD_REQUEST, e, NO_MEMBERS),
        Refusal::Method(e) => problem_members(StatusCode::BAD_REQUEST, e, NO_MEMBERS),
        Refusal::Body(e) => body_refused(e),
        Refusal::Key { rule, error } => problem_members(
            error.reason.status(),
            &error,
            [("rule", rule.as_str()), ("field", error.field.as_str())],
        ),
        Refusal::StoreDown => unavailable(STORE_DOWN),
        Refusal::Denied(rule) => denied(in_force, rule),
        Refusal::Limited(limited) => too_many(in_force, &limited, legacy, headers),
    };
    match grpc {
        Some((message, retry)) => grpc::answer(response, &message, retry),
        None => response,
    }
}

/// The `grpc-message` of a refusal and the wait it asks for (a RetryInfo).
fn grpc_status<S: Store, K>(
    in_force: &InForce<S, K>,
    refusal: &Refusal,
) -> (String, Option<Duration>) {
    let name = |rule: usize| in_force.policy.rules.get(rule).map(|r| r.name.as_str());
    match refusal {
        Refusal::Path(e) => (e.to_string(), None),
        Refusal::Method(e) => (e.to_string(), None),
        Refusal::Key { error, .. } => (error.to_string(), None),
        Refusal::Body(e) => (body_detail(e), None),
        Refusal::StoreDown => (STORE_DOWN.to_string(), Some(UNAVAILABLE_FOR)),
        Refusal::Denied(rule) => (denied_detail(rule.and_then(name)), None),
        Refusal::Limited(limited) => {
            let message = in_force.exceeded(limited.rule()).to_string();
            match limited.retry_after() {
                RetryAfter::After(wait) => (message, Some(wait)),
                RetryAfter::Never => (message, None),
            }
        }
    }
}

/// 429 with Retry-After, the RateLimit headers so far, and a problem body.
fn too_many<S: Store, K>(
    in_force: &InForce<S, K>,
    limited: &Limited,
    legacy: bool,
    mut map: HeaderMap,
) -> Response<Full<Bytes>> {
    let (rule, statuses, wait) = (limited.rule(), limited.statuses(), limited.retry_after());
    if let Some(ban) = limited.ban() {
        let banning = &in_force.policy.rules[rule];
        let mut r = crate::penalty::banned(&banning.name, banning.store.penalty(), ban, wait);
        write_ratelimit(in_force, statuses, legacy, wait, r.headers_mut());
        return r;
    }
    let status = StatusCode::TOO_MANY_REQUESTS;
    let secs = match wait {
        RetryAfter::After(d) => headers::ceil_secs(d),
        RetryAfter::Never => {
            let name = in_force.policy.rules[rule].name.as_str();
            let mut r = problem_members(
                status,
                format_args!("this request costs more than rule {name:?} can ever allow"),
                [("rule", name)],
            );
            write_ratelimit(in_force, statuses, legacy, wait, r.headers_mut());
            return r;
        }
    };
    // One response, built where it is returned: built in a `match` arm, it
    // would be copied out of it.
    let body = in_force.too_many_body(rule, secs);
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    // In order, as on a new map: a map's order is its insertion order.
    map.clear();
    *r.headers_mut() = map;
    let problem = HeaderValue::from_static(PROBLEM_JSON);
    r.headers_mut().insert(CONTENT_TYPE, problem);
    write_ratelimit(in_force, statuses, legacy, wait, r.headers_mut());
    r
}

/// A 429's RateLimit headers (and Retry-After, when it says to wait).
fn write_ratelimit<S: Store, K>(
    in_force: &InForce<S, K>,
    statuses: &[Counted],
    legacy: bool,
    wait: RetryAfter,
    map: &mut HeaderMap,
) {
    let members = members(&in_force.policy, statuses);
    let made = made_once(in_force, statuses);
    headers::write_members(map, members, legacy, Some(wait), made);
}

/// 403 for a request on a deny list: the layer's, or the rule's named.
fn denied<S, K>(in_force: &InForce<S, K>, rule: Option<usize>) -> Response<Full<Bytes>> {
    let status = StatusCode::FORBIDDEN;
    let name = rule
        .and_then(|i| in_force.policy.rules.get(i))
        .map(|r| r.name.as_str());
    let detail = denied_detail(name);
    match name {
        Some(name) => problem_members(status, detail, [("rule", name)]),
        None => problem_members(status, detail, NO_MEMBERS),
    }
}

/// What a 403 of a deny list says: whose list refused the request.
fn denied_detail(rule: Option<&str>) -> String {
    match rule {
        Some(name) => format!("refused by the deny list of rule {name:?}"),
        None => "refused by the deny list".to_string(),
    }
}

const STORE_DOWN: &str = "the rate limit store is unavailable";

/// How long a 503 asks the client to wait.
const UNAVAILABLE_FOR: Duration = Duration::from_secs(1);

/// 503 with Retry-After: 1, for a moment of overload or a store outage.
fn unavailable(detail: &str) -> Response<Full<Bytes>> {
    let mut r = problem_members(StatusCode::SERVICE_UNAVAILABLE, detail, NO_MEMBERS);
    headers::write(
        r.headers_mut(),
        &[],
        false,
        Some(RetryAfter::After(UNAVAILABLE_FOR)),
    );
    r
}

/// The answer to a body that could not be read for its key.
fn body_refused(e: BodyError) -> Response<Full<Bytes>> {
    let detail = body_detail(&e);
    let status = match e {
        BodyError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
        BodyError::TimedOut(_) => StatusCode::REQUEST_TIMEOUT,
        BodyError::Malformed(_) => StatusCode::BAD_REQUEST,
        BodyError::OverBudget => return unavailable(&detail),
    };
    problem_members(status, detail, NO_MEMBERS)
}

/// What the answer to a body that could not be read says.
fn body_detail(e: &BodyError) -> String {
    match e {
        BodyError::TooLarge(max) => format!("the request body is larger than {max} bytes"),
        BodyError::TimedOut(after) => {
            format!("the request body did not arrive within {after:?}")
        }
        BodyError::Malformed(why) => format!("the request body is malformed: {why}"),
        BodyError::OverBudget => {
            "too many request bodies are being read at once; retry shortly".to_string()
        }
    }
}

/// No extension members.
const NO_MEMBERS: [(&str, &str); 0] = [];

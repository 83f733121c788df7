//! A key only the application knows: the subject of a signed bearer token,
//! verified before it is trusted, with the client address as the key of
//! anonymous requests.
//!
//! The token here is a stand-in for a JWT, `SUBJECT.SIGNATURE` with the
//! signature the SHA-256 of a server secret and the subject; a real app
//! would verify its JWTs the same way, in [`KeyExtractor::key`], with its
//! JWT library (which compares signatures in constant time; this stand-in
//! does not).
//!
//! `cargo run -p limits-http --example custom_key` sends requests as two
//! users, as nobody, and with a forged token, through a real connection on
//! 127.0.0.1, prints the statuses and exits. tests/it/examples.rs runs [`run`].

use axum::Router;
use axum::routing::get;
use http::request::Parts;
use http::{Request, header::AUTHORIZATION};
use http_body_util::Empty;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use limits::{Algorithm, KeyedLimiter, Rule};
use limits_http::{HttpRule, Key, KeyError, KeyErrorReason, KeyExtractor, KeySpec, RateLimitLayer};
use sha2::{Digest, Sha256};
use std::net::{IpAddr, SocketAddr};
use tower_layer::Layer;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Keys a request by the subject of its verified bearer token; by address
/// when it has none. A token that does not verify is refused (400): it must
/// not become a fresh key per forgery.
pub struct Subject {
    secret: &'static str,
}

impl Subject {
    /// The token for `subject`, as a login would issue it.
    pub fn token(&self, subject: &str) -> String {
        format!("{subject}.{}", self.signature(subject))
    }

    fn signature(&self, subject: &str) -> String {
        let digest = Sha256::digest(format!("{}:{subject}", self.secret));
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl KeyExtractor for Subject {
    /// Anonymous requests are keyed by address: without one (a server that
    /// gives the layer no peer), the layer must refuse rather than put every
    /// anonymous client in one bucket.
    fn uses_client_address(&self) -> bool {
        true
    }

    fn key(
        &self,
        parts: &Parts,
        client: Option<IpAddr>,
        body: Option<&[u8]>,
    ) -> Result<Key, KeyError> {
        let Some(value) = parts.headers.get(AUTHORIZATION) else {
            // Anonymous: the built-in address key (`ip=…`), which no
            // subject's key (`custom:sub=…`) can ever equal.
            return KeySpec::ip().key(parts, client, body);
        };
        let invalid = |why: &str| KeyError {
            field: "header:authorization".into(),
            reason: KeyErrorReason::Invalid(why.into()),
        };
        let token = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer "));
        let token = token.ok_or_else(|| invalid("not a bearer token"))?;
        let (subject, signature) = token
            .rsplit_once('.')
            .ok_or_else(|| invalid("no signature"))?;
        if subject.is_empty() || signature != self.signature(subject) {
            return Err(invalid("the signature does not verify"));
        }
        Ok(Key::custom("sub", subject))
    }
}

/// The app: two requests a minute per user (or anonymous address).
pub fn app(subject: Subject) -> Router {
    let rule = Rule::new(Algorithm::FixedWindow, "2/m".parse().expect("a rate"));
    let layer = RateLimitLayer::builder()
        .rule(HttpRule::new(
            "per-user",
            KeyedLimiter::<String>::new(rule),
            subject,
        ))
        .build();
    let routes = Router::new().route("/", get(|| async { "hello\n" }));
    Router::new().fallback_service(layer.layer(routes))
}

/// Serves [`app`] on 127.0.0.1; the statuses of three requests as each of
/// alice, bob, nobody, and one with a forged token for alice.
pub async fn run() -> Result<Vec<(String, Vec<u16>)>, BoxError> {
    let subject = Subject { secret: "s3cret" };
    let tokens = [
        ("alice", Some(subject.token("alice"))),
        ("bob", Some(subject.token("bob"))),
        ("anonymous", None),
        ("forged", Some(format!("alice.{}", "0".repeat(64)))),
    ];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let service = app(subject).into_make_service_with_connect_info::<SocketAddr>();
    let server = tokio::spawn(async move { axum::serve(listener, service).await });
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<bytes::Bytes>>();
    let mut seen = Vec::new();
    for (who, token) in tokens {
        let mut statuses = Vec::new();
        for _ in 0..3 {
            let mut req = Request::get(format!("http://{addr}/"));
            if let Some(token) = &token {
                req = req.header(AUTHORIZATION, format!("Bearer {token}"));
            }
            let response = client.request(req.body(Empty::new())?).await?;
            statuses.push(response.status().as_u16());
        }
        seen.push((who.to_string(), statuses));
    }
    server.abort();
    Ok(seen)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    for (who, statuses) in run().await? {
        println!("{who}: {statuses:?}");
    }
    Ok(())
}

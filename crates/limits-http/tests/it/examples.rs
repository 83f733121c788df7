//! The examples, run: each serves on 127.0.0.1 and sends real requests
//! through the layer, so they cannot rot (clippy checks them as examples too).

#[path = "../../examples/axum_app.rs"]
#[allow(dead_code)]
mod axum_app;
#[path = "../../examples/bare_layer.rs"]
#[allow(dead_code)]
mod bare_layer;
#[path = "../../examples/custom_key.rs"]
#[allow(dead_code)]
mod custom_key;
#[path = "../../examples/grpc_health.rs"]
#[allow(dead_code)]
pub(crate) mod grpc_health;

#[tokio::test]
async fn the_axum_example_limits_the_third_request() {
    assert_eq!(axum_app::run(3).await.unwrap(), [200, 200, 429]);
}

/// The README's first library example is the axum example's lines between
/// its README markers, so that the README shows code that builds and runs.
/// It is marked `rs`: GitHub shows it as Rust, and rustdoc, which runs the
/// README's `rust` blocks as the core crate's doctests, leaves it to this
/// test (the core has no axum to build it with).
#[test]
fn the_readme_shows_the_axum_example_as_it_is() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let shown = readme
        .split_once("\n```rs\n")
        .and_then(|(_, rest)| rest.split_once("\n```\n"))
        .map(|(block, _)| block)
        .expect("the README has an `rs` block");
    let example = include_str!("../../examples/axum_app.rs");
    let region = example
        .split_once("// README begins\n")
        .and_then(|(_, rest)| rest.split_once("\n// README ends"))
        .map(|(region, _)| region)
        .expect("the example marks the README's lines");
    assert_eq!(shown, region, "README.md's first library example");
}

#[tokio::test]
async fn the_custom_key_example_limits_each_user_and_refuses_forgeries() {
    let seen = custom_key::run().await.unwrap();
    let seen: Vec<_> = seen
        .iter()
        .map(|(w, s)| (w.as_str(), s.as_slice()))
        .collect();
    assert_eq!(
        seen,
        [
            ("alice", &[200, 200, 429][..]),
            // bob's budget is his own, and the address's apart from both.
            ("bob", &[200, 200, 429][..]),
            ("anonymous", &[200, 200, 429][..]),
            ("forged", &[400, 400, 400][..]),
        ]
    );
}

#[tokio::test]
async fn the_grpc_example_answers_resource_exhausted_past_the_limit() {
    let seen = grpc_health::run(3).await.unwrap();
    assert_eq!(
        seen,
        [
            "Serving",
            "Serving",
            "ResourceExhausted: rate limit \"grpc\" exceeded"
        ]
    );
}

/// The benchmark's server: the demo's bytes under `allow`, 429 after the
/// first request under `deny`, each on a real connection.
#[tokio::test]
async fn the_bare_layer_answers_the_demo_bytes_and_its_deny_rule_limits() {
    use http_body_util::{BodyExt, Empty};
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;

    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<bytes::Bytes>>();
    for (which, expected) in [("allow", [200, 200, 200]), ("deny", [200, 429, 429])] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(bare_layer::serve(
            listener,
            bare_layer::rule(which).unwrap(),
        ));
        let mut statuses = Vec::new();
        for _ in 0..3 {
            let r = client
                .get(format!("http://{addr}/").parse().unwrap())
                .await
                .unwrap();
            statuses.push(r.status().as_u16());
            let body = r.into_body().collect().await.unwrap().to_bytes();
            if statuses.last() == Some(&200) {
                assert!(body.starts_with(b"{\"endpoints\""), "{body:?}");
            }
        }
        server.abort();
        assert_eq!(statuses, expected, "{which}");
    }
    assert!(
        bare_layer::rule("maybe")
            .unwrap_err()
            .contains("allow or deny")
    );
}

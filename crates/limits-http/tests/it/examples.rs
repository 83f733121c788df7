//! The examples, run: each serves on 127.0.0.1 and sends real requests
//! through the layer, so they cannot rot (clippy checks them as examples too).

#[path = "../../examples/axum_app.rs"]
#[allow(dead_code)]
mod axum_app;
#[path = "../../examples/custom_key.rs"]
#[allow(dead_code)]
mod custom_key;
#[path = "../../examples/grpc_health.rs"]
#[allow(dead_code)]
mod grpc_health;

#[tokio::test]
async fn the_axum_example_limits_the_third_request() {
    assert_eq!(axum_app::run(3).await.unwrap(), [200, 200, 429]);
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
        ["Serving", "Serving", "ResourceExhausted: Too Many Requests"]
    );
}

//! An embedder's view: the server started around an app of its own (not the
//! demo API), on a free port, stopped by its own shutdown future.

use limits::{Algorithm, Rule};
use limits_http::KeySpec;
use limits_server::{RulesSource, Server, ServerConfig};
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The embedder's own app: two routes the demo API does not have.
fn app() -> axum::Router {
    use axum::routing::get;
    axum::Router::new()
        .route("/hello", get(|| async { "hello from the app\n" }))
        .route("/tenants/{id}", get(|| async { "a tenant\n" }))
}

/// Serves `config` around `app()` on 127.0.0.1:0; the sender stops it.
async fn start(
    config: ServerConfig,
) -> (
    SocketAddr,
    oneshot::Sender<()>,
    JoinHandle<Result<(), String>>,
) {
    let mut config = config;
    config.reload_on_hangup = false;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = Server::new(config).expect("valid config");
    let task = tokio::spawn(server.serve_on(listener, app(), async {
        let _ = stopped.await;
    }));
    (addr, stop, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_limits_an_app_of_its_own_with_the_standard_headers() {
    let rule = Rule::new(Algorithm::SlidingLog, "2/min".parse().unwrap());
    let config = ServerConfig::new(RulesSource::One {
        rule,
        key: KeySpec::ip(),
        cost: 1,
    });
    let (addr, stop, task) = start(config).await;
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/hello");
    for remaining in ["1", "0"] {
        let ok = client.get(&url).send().await.unwrap();
        assert_eq!(ok.status(), 200);
        let header = ok.headers()["ratelimit"].to_str().unwrap().to_string();
        assert!(header.contains(&format!("r={remaining}")), "{header}");
        assert_eq!(ok.text().await.unwrap(), "hello from the app\n");
    }
    let limited = client.get(&url).send().await.unwrap();
    assert_eq!(limited.status(), 429);
    let headers = limited.headers();
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "retry-after {retry}");
    let policy = headers["ratelimit-policy"].to_str().unwrap();
    assert!(
        policy.contains("\"default\"") && policy.contains("q=2") && policy.contains("w=60"),
        "{policy}"
    );
    assert_eq!(headers["content-type"], "application/problem+json");

    stop.send(()).unwrap();
    task.await.unwrap().expect("stopped cleanly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_from_a_file_and_their_state_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("limits.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"tenants\"\npath = \"/tenants\"\nrates = \"1/hour\"\n\n\
         [[rule]]\nname = \"hello\"\npath = \"/hello\"\nlimiter = \"token-bucket\"\nrates = \"5/hour\"\n",
    )
    .unwrap();
    let state = dir.path().join("state.json");
    let config = || {
        let mut c = ServerConfig::new(RulesSource::File(rules.clone()));
        c.state = Some(state.clone());
        c
    };

    let (addr, stop, task) = start(config()).await;
    let tenants = format!("http://{addr}/tenants/7");
    assert_eq!(reqwest::get(&tenants).await.unwrap().status(), 200);
    assert_eq!(reqwest::get(&tenants).await.unwrap().status(), 429);
    let hello = reqwest::get(format!("http://{addr}/hello")).await.unwrap();
    assert_eq!(hello.status(), 200, "another rule, another budget");
    stop.send(()).unwrap();
    task.await.unwrap().expect("state saved");
    let saved = std::fs::read_to_string(&state).unwrap();
    assert!(
        saved.contains("\"tenants\"") && saved.contains("\"hello\""),
        "{saved}"
    );

    let (addr, stop, task) = start(config()).await;
    let again = reqwest::get(format!("http://{addr}/tenants/7"))
        .await
        .unwrap();
    assert_eq!(again.status(), 429, "the restart kept the client's state");
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[test]
fn a_bad_rules_file_is_refused_before_serving() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("bad.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"x\"\nrates = \"10/s\"\ncost = 11\n",
    )
    .unwrap();
    let err = Server::new(ServerConfig::new(RulesSource::File(rules.clone())))
        .err()
        .unwrap();
    assert_eq!(
        err,
        format!("{}:4: cost 11 is above what the rule can ever pass (limit 10): lower cost or raise the limit", rules.display())
    );
}

/// An embedded server printed its startup and reload lines on its owner's
/// stdout; it reports them as events instead, and the addresses in them are
/// the ones bound (port 0 asked), so the owner can print or use them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_server_reports_its_addresses_and_stop_as_events_not_on_stdout() {
    use limits_server::ServerEvent;
    use std::sync::{Arc, Mutex};

    let rule = Rule::new(Algorithm::SlidingLog, "5/s".parse().unwrap());
    let mut config = ServerConfig::new(RulesSource::One {
        rule,
        key: KeySpec::ip(),
        cost: 1,
    });
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.admin = Some("127.0.0.1:0".parse().unwrap());
    config.reload_on_hangup = false;
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let (bound, mut listening) = tokio::sync::mpsc::unbounded_channel();
    let server = Server::new(config)
        .expect("valid config")
        .on_event(move |event| {
            seen.lock().unwrap().push(event.clone());
            if let ServerEvent::Listening { local, .. } = event {
                let _ = bound.send(*local);
            }
        });
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server.serve(app(), async {
        let _ = stopped.await;
    }));
    let local = listening.recv().await.expect("a Listening event");
    assert_ne!(local.port(), 0, "the port bound, not the one asked");
    let hello = reqwest::get(format!("http://{local}/hello")).await.unwrap();
    assert_eq!(hello.status(), 200);
    let admin = events.lock().unwrap().iter().find_map(|e| match e {
        ServerEvent::Admin { local } => Some(*local),
        _ => None,
    });
    let admin = admin.expect("an Admin event before Listening");
    let metrics = reqwest::get(format!("http://{admin}/metrics"))
        .await
        .unwrap();
    assert_eq!(metrics.status(), 200);

    stop.send(()).unwrap();
    task.await.unwrap().expect("stopped cleanly");
    let events = events.lock().unwrap().clone();
    assert_eq!(
        events,
        vec![
            ServerEvent::Admin { local: admin },
            ServerEvent::Listening {
                local,
                backend: "the app".to_string()
            },
            ServerEvent::Stopped,
        ]
    );
}

//! A server started on a port the system chooses (`Server::serve` binds
//! it, per core a socket per thread), its address learned from its
//! `Listening` event, stopped by a channel.

use limits::{Algorithm, Rule};
use limits_http::KeySpec;
use limits_server::{Backend, RulesSource, Server, ServerConfig, ServerEvent};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A server serving `backend` with `config` on 127.0.0.1, any port.
pub(crate) struct Serving {
    pub(crate) addr: SocketAddr,
    /// Sent (or dropped), the server drains and returns.
    pub(crate) stop: oneshot::Sender<()>,
    pub(crate) task: JoinHandle<Result<(), String>>,
}

impl Serving {
    pub(crate) async fn start(mut config: ServerConfig, backend: impl Into<Backend>) -> Serving {
        config.listen = "127.0.0.1:0".parse().unwrap();
        let (listening, listens) = oneshot::channel();
        let listening = Mutex::new(Some(listening));
        let server = Server::new(config).unwrap().on_event(move |event| {
            if let ServerEvent::Listening { local, .. } = event {
                if let Some(tell) = listening.lock().unwrap().take() {
                    let _ = tell.send(*local);
                }
            }
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let backend = backend.into();
        let task = tokio::spawn(server.serve(backend, async {
            let _ = stopped.await;
        }));
        let addr = tokio::time::timeout(Duration::from_secs(60), listens)
            .await
            .expect("the server listens")
            .expect("the server tells where");
        Serving { addr, stop, task }
    }
}

/// The name of the thread running this: the worker's, per core.
pub(crate) fn thread_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .to_string()
}

/// One token-bucket rule at `rate` over every path, keyed by the client's
/// address; no reload on SIGHUP (a test owns no process's signals).
pub(crate) fn one_rule(rate: &str) -> ServerConfig {
    let rule = Rule::new(Algorithm::TokenBucket, rate.parse().unwrap());
    let mut config = ServerConfig::new(RulesSource::One {
        rule,
        key: KeySpec::ip(),
        cost: 1,
    });
    config.reload_on_hangup = false;
    config
}

//! The running server: the rules in force behind the HTTP layer, around a
//! service it is given, on a listener with bounds; with its admin endpoint,
//! sweeper, reload on SIGHUP, and state saved on the way out.
//!
//! It writes nothing to stdout: it logs through `tracing`, and tells its
//! owner where it listens, how reloads went and when it stopped through
//! [`Server::on_event`] (the `limits` command prints a line for each).

use crate::events::{Events, ServerEvent};
use crate::listener::connection_caps::ConnectionCaps;
use crate::listener::per_core::Listening;
use crate::listener::Bounds;
use crate::metrics::Metrics;
use crate::proxy::Proxy;
use crate::rules;
use crate::server_config::ServerConfig;
use crate::shared::{self, load_rules, policy, Shared};
use crate::state;
use crate::store::RuleStore;
use crate::tasks;
use axum::extract::Request;
use axum::Router;
use bytes::Bytes;
use limits_http::{PeerAddr, RateLimitLayer};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use tokio::net::TcpListener;
use tower::{Layer, Service, ServiceExt};

/// What the server puts behind its limits, named in the startup line: a
/// router, any cloneable tower service, or the reverse proxy (its errors go
/// to `/metrics`).
pub struct Backend {
    serves: Serves,
    name: String,
}

enum Serves {
    /// A router; `peer_addr`: each request carries the client's address as
    /// a [`PeerAddr`](limits_http::PeerAddr) extension.
    Router { router: Router, peer_addr: bool },
    /// Any service: the listener's loop over it, monomorphized when the
    /// backend was made, so that its type is erased once (here) and not
    /// per request (a boxed service would box every future).
    Service(Run),
    /// The proxy, made per connection with the client's address.
    Proxy(Proxy),
}

/// The listener serving one service behind the layer until its shutdown
/// future completes.
type Run = Box<
    dyn FnOnce(
            Listening,
            RateLimitLayer<RuleStore>,
            Bounds,
            Arc<ConnectionCaps>,
            Pin<Box<dyn Future<Output = ()> + Send>>,
        ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
        + Send,
>;

impl Backend {
    /// `router`, called `name` in the startup line ("in front of NAME").
    /// Each request reaches it with the client's address as a
    /// [`PeerAddr`](limits_http::PeerAddr) extension.
    pub fn new(name: impl Into<String>, router: Router) -> Backend {
        Backend {
            serves: Serves::Router {
                router,
                peer_addr: true,
            },
            name: name.into(),
        }
    }

    /// This backend without the [`PeerAddr`](limits_http::PeerAddr)
    /// extension in each request, for a router that does not read it: the
    /// extension costs three allocations per request (the limits still key
    /// on the client's address, which the server gives them per
    /// connection).
    ///
    /// ```
    /// use limits_server::Backend;
    ///
    /// let router = axum::Router::new().route("/", axum::routing::get(|| async { "hello\n" }));
    /// let backend = Backend::new("hello", router).without_peer_addr();
    /// # let _ = backend;
    /// ```
    pub fn without_peer_addr(mut self) -> Backend {
        if let Serves::Router { peer_addr, .. } = &mut self.serves {
            *peer_addr = false;
        }
        self
    }

    /// Any cloneable tower `service`, called `name`, served as it is: one
    /// clone per connection inside the limits, its futures and response
    /// bodies neither boxed nor routed by the server (a [`Router`] costs
    /// allocations per request that a service matching a few paths itself
    /// need not). Requests carry no [`PeerAddr`](limits_http::PeerAddr)
    /// extension (the limits still key on the client's address).
    ///
    /// ```
    /// use limits_server::Backend;
    ///
    /// let hello = tower::service_fn(|_req: axum::extract::Request| async {
    ///     Ok::<_, std::convert::Infallible>(http::Response::new(String::from("hello\n")))
    /// });
    /// let backend = Backend::service("hello", hello);
    /// # let _ = backend;
    /// ```
    pub fn service<S, B>(name: impl Into<String>, service: S) -> Backend
    where
        S: Service<Request, Response = http::Response<B>, Error = Infallible>
            + Clone
            + Send
            + 'static,
        S::Future: Send + 'static,
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let run: Run = Box::new(move |listening, layer, bounds, caps, shutdown| {
            let per_thread = move || {
                let (layer, service) = (layer.clone(), service.clone());
                move |peer: SocketAddr| layer.layer(service.clone()).with_peer(peer)
            };
            Box::pin(listening.serve(per_thread, bounds, caps, shutdown))
        });
        Backend {
            serves: Serves::Service(run),
            name: name.into(),
        }
    }

    /// The reverse proxy `proxy`, called `name` (its upstream URL).
    pub fn proxy(proxy: Proxy, name: impl Into<String>) -> Backend {
        Backend {
            serves: Serves::Proxy(proxy),
            name: name.into(),
        }
    }
}

impl From<Router> for Backend {
    /// `router`, called "the app".
    fn from(router: Router) -> Backend {
        Backend::new("the app", router)
    }
}

/// A server ready to run: its rules built (and their state loaded), not yet
/// listening.
///
/// ```no_run
/// use limits::{Algorithm, Rule};
/// use limits_http::KeySpec;
/// use limits_server::{RulesSource, Server, ServerConfig};
///
/// # async fn run() -> Result<(), String> {
/// let rule = Rule::new(Algorithm::SlidingLog, "10/s".parse().unwrap());
/// let config = ServerConfig::new(RulesSource::One { rule, key: KeySpec::ip(), cost: 1 });
/// let app = axum::Router::new().route("/", axum::routing::get(|| async { "hello\n" }));
/// Server::new(config)?.serve(app, limits_server::shutdown_signal()).await
/// # }
/// ```
pub struct Server {
    shared: Arc<Shared>,
    layer: RateLimitLayer<RuleStore>,
}

impl Server {
    /// Builds the rules of `config` (reading its rules file), checks that
    /// the state file can be written and loads it. Errors say what is wrong
    /// and name the flag or file line it came from.
    pub fn new(config: ServerConfig) -> Result<Server, String> {
        let file = load_rules(&config)?;
        if let Some(path) = &config.state {
            state::check_writable(path)?;
            let n = state::load(path, rules::state_entries(&file.rules))?;
            tracing::info!(keys = n, file = %path.display(), "state loaded");
        }
        let metrics = Arc::new(Metrics::new());
        let layer = RateLimitLayer::new(policy(file, &config, &metrics));
        let shared = Arc::new(Shared {
            handle: layer.handle(),
            config,
            metrics,
            events: Events::default(),
            rules_error: Default::default(),
        });
        Ok(Server { shared, layer })
    }

    /// Calls `handler` with each [`ServerEvent`]: the addresses bound (the
    /// port chosen for port 0), each reload's outcome, the stop. The server
    /// prints nothing itself; this is how its owner learns, say, the
    /// address to print.
    ///
    /// ```no_run
    /// use limits_server::{RulesSource, Server, ServerConfig, ServerEvent};
    ///
    /// # async fn run(config: ServerConfig, app: axum::Router) -> Result<(), String> {
    /// let server = Server::new(config)?.on_event(|event| {
    ///     if let ServerEvent::Listening { local, .. } = event {
    ///         eprintln!("listening on {local}");
    ///     }
    /// });
    /// server.serve(app, limits_server::shutdown_signal()).await
    /// # }
    /// ```
    pub fn on_event(self, handler: impl Fn(&ServerEvent) + Send + Sync + 'static) -> Server {
        self.shared.events.set(std::sync::Arc::new(handler));
        self
    }

    /// The layer with the server's rules, for an embedder who serves it
    /// themselves (reloads still reach it).
    pub fn layer(&self) -> &RateLimitLayer<RuleStore> {
        &self.layer
    }

    /// Listens on the configured address and serves `backend` behind the
    /// limits until `shutdown` completes; see [`serve_on`](Self::serve_on).
    pub async fn serve(
        self,
        backend: impl Into<Backend>,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), String> {
        let addr = self.shared.config.listen;
        let listening = Listening::bind(addr, self.shared.config.runtimes)
            .await
            .map_err(|e| format!("--listen {addr}: {e}"))?;
        self.serve_listening(listening, backend, shutdown).await
    }

    /// Serves `backend` behind the limits on `listener` until `shutdown`
    /// completes, then drains in-flight requests and saves the state.
    /// Meanwhile: the admin endpoint if configured, a sweep of idle keys
    /// every second, and reloads on SIGHUP if asked for; all stop with it.
    /// With [`Runtimes::PerCore`](crate::Runtimes::PerCore), every thread
    /// accepts from `listener`.
    pub async fn serve_on(
        self,
        listener: TcpListener,
        backend: impl Into<Backend>,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), String> {
        let listening = Listening::on(listener, self.shared.config.runtimes)
            .map_err(|e| format!("cannot serve on the listener given: {e}"))?;
        self.serve_listening(listening, backend, shutdown).await
    }

    /// Serves as [`serve_on`](Self::serve_on) says, on `listening`.
    async fn serve_listening(
        self,
        listening: Listening,
        backend: impl Into<Backend>,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), String> {
        let backend = backend.into();
        let shared = self.shared;
        let proxy = match &backend.serves {
            Serves::Proxy(proxy) => Some(proxy.clone()),
            Serves::Router { .. } | Serves::Service(_) => None,
        };
        let local = listening.local_addr().map_err(|e| e.to_string())?;
        let bounds = shared.config.bounds;
        let caps = shared.metrics.connections.caps(
            "main",
            bounds.max_connections,
            bounds.max_connections_per_client,
            shared.config.layer.client_ip.clone(),
        );
        let mut background = Vec::new();
        if let Some(addr) = shared.config.admin {
            background.push(tasks::start_admin(addr, shared.clone(), proxy, bounds).await?);
        }
        let swept = shared.clone();
        background.push(tasks::sweep_every_second(move || {
            rules::sweep(&swept.handle.current().rules);
        }));
        background.extend(tasks::measure_clock_offsets(&shared.config.stores));
        if shared.config.reload_on_hangup {
            let reloaded = shared.clone();
            background.extend(tasks::on_hangup(move || shared::reload(&reloaded)));
        }
        let upstream = backend.name;
        tracing::info!(%local, upstream, "listening");
        shared.events.emit(ServerEvent::Listening {
            local,
            backend: upstream,
        });

        // The layer goes around the whole router (or the proxy), so that
        // routing (and the proxy) see the path the layer normalized and
        // matched its rules on; the listener serves it as it is, one service
        // per connection that knows the client's address.
        let layer = self.layer;
        let served = match backend.serves {
            Serves::Router { router, peer_addr } => {
                let per_thread = move || {
                    let (router, layer) = (router.clone(), layer.clone());
                    move |peer: SocketAddr| {
                        let router = router.clone().map_request(move |mut req: Request| {
                            if peer_addr {
                                req.extensions_mut().insert(PeerAddr(peer));
                            }
                            req
                        });
                        layer.layer(router).with_peer(peer)
                    }
                };
                listening.serve(per_thread, bounds, caps, shutdown).await
            }
            Serves::Service(run) => {
                // The loop's type does not name `shutdown`'s (which need not
                // be `Send`): a channel carries its completion.
                let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
                let stopped = Box::pin(async move {
                    let _ = stopped.await;
                });
                let signal = async move {
                    shutdown.await;
                    let _ = stop.send(());
                };
                tokio::join!(run(listening, layer, bounds, caps, stopped), signal).0
            }
            Serves::Proxy(proxy) => {
                // A pool per thread: its connections taken and given back,
                // and their tasks run, on the thread serving the client.
                let per_thread = move || {
                    let (proxy, layer) = (proxy.with_own_pool(), layer.clone());
                    move |peer: SocketAddr| {
                        layer
                            .layer(proxy.for_client(Some(peer.ip())))
                            .with_peer(peer)
                    }
                };
                listening.serve(per_thread, bounds, caps, shutdown).await
            }
        };
        for task in background {
            task.abort();
        }

        let saved = match &shared.config.state {
            Some(path) => state::save(path, rules::state_entries(&shared.handle.current().rules))
                .map(|n| {
                    tracing::info!(keys = n, file = %path.display(), "state saved");
                }),
            None => Ok(()),
        };
        tracing::info!("stopped");
        shared.events.emit(ServerEvent::Stopped);
        served?;
        saved.map_err(|e| format!("state not saved: {e}"))
    }
}

//! A real `limits rls` server on 127.0.0.1 with a YAML config written to a
//! temporary directory, and a tonic client talking to it over TCP.

#![allow(dead_code)]

use limits_server::rls::proto::rate_limit_descriptor::Entry;
use limits_server::rls::proto::rate_limit_response::{Code, DescriptorStatus};
use limits_server::rls::proto::rate_limit_service_client::RateLimitServiceClient;
use limits_server::rls::proto::{RateLimitDescriptor, RateLimitRequest, RateLimitResponse};
use limits_server::rls::{RlsReloader, RlsServer, RlsServerConfig};
use limits_server::StoreOptions;
use std::path::PathBuf;
use tokio::net::TcpListener;
use tonic::transport::Channel;

pub const OK: i32 = Code::Ok as i32;
pub const OVER: i32 = Code::OverLimit as i32;

pub struct Rls {
    pub client: RateLimitServiceClient<Channel>,
    pub reloader: RlsReloader,
    pub admin: Option<String>,
    /// The gRPC listener's address.
    pub addr: std::net::SocketAddr,
    pub dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), String>>>,
}

/// The file the config is written to in the server's directory.
pub fn config_file(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("config.yaml")
}

impl Rls {
    /// A server of `yaml` in memory.
    pub async fn start(yaml: &str) -> Rls {
        Rls::start_with(yaml, |_| {}).await
    }

    /// A server of `yaml` with its config adjusted by `adjust`.
    pub async fn start_with(yaml: &str, adjust: impl FnOnce(&mut RlsServerConfig)) -> Rls {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(config_file(&dir), yaml).unwrap();
        let mut config = RlsServerConfig::new(dir.path().to_path_buf());
        config.reload_on_hangup = false;
        config.stores = StoreOptions::default();
        adjust(&mut config);
        let admin = match config.admin {
            Some(_) => {
                let port = crate::server_port::free_port();
                let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
                config.admin = Some(addr);
                Some(format!("http://{addr}"))
            }
            None => None,
        };
        let server = RlsServer::new(config).unwrap();
        let reloader = server.reloader();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(server.serve_on(listener, async move {
            let _ = stopped.await;
        }));
        let client = RateLimitServiceClient::new(
            Channel::from_shared(format!("http://{addr}"))
                .unwrap()
                .connect()
                .await
                .unwrap(),
        );
        Rls {
            client,
            reloader,
            admin,
            addr,
            dir,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Calls ShouldRateLimit.
    pub async fn call(
        &self,
        request: RateLimitRequest,
    ) -> Result<RateLimitResponse, tonic::Status> {
        self.client
            .clone()
            .should_rate_limit(request)
            .await
            .map(tonic::Response::into_inner)
    }

    /// Calls with one descriptor and the request's hits; the response.
    pub async fn one(
        &self,
        domain: &str,
        entries: &[(&str, &str)],
        hits: u32,
    ) -> RateLimitResponse {
        self.call(request(domain, vec![descriptor(entries)], hits))
            .await
            .unwrap()
    }

    /// The overall codes of `n` calls of one descriptor.
    pub async fn codes(&self, domain: &str, entries: &[(&str, &str)], n: usize) -> Vec<i32> {
        let mut codes = Vec::new();
        for _ in 0..n {
            codes.push(self.one(domain, entries, 0).await.overall_code);
        }
        codes
    }

    /// `GET /metrics` of the admin endpoint.
    pub async fn metrics(&self) -> String {
        let url = format!("{}/metrics", self.admin.as_ref().expect("an admin port"));
        reqwest::get(url).await.unwrap().text().await.unwrap()
    }

    /// Stops the server and waits until it has.
    pub async fn stop(mut self) -> Result<(), String> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.take().unwrap().await.unwrap()
    }
}

/// The value of the metric line starting with `prefix` (name and labels).
pub fn metric(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

pub fn descriptor(entries: &[(&str, &str)]) -> RateLimitDescriptor {
    RateLimitDescriptor {
        entries: entries
            .iter()
            .map(|(k, v)| Entry {
                key: k.to_string(),
                value: v.to_string(),
            })
            .collect(),
        ..RateLimitDescriptor::default()
    }
}

pub fn request(domain: &str, descriptors: Vec<RateLimitDescriptor>, hits: u32) -> RateLimitRequest {
    RateLimitRequest {
        domain: domain.into(),
        descriptors,
        hits_addend: hits,
    }
}

/// Stores on the Redis at `url`, each call given `timeout`.
pub async fn on_redis(url: &str, timeout: std::time::Duration) -> StoreOptions {
    let options = limits_server::RedisOptions {
        timeout,
        ..limits_server::RedisOptions::default()
    };
    let conn = limits_server::RedisConnection::connect(url, options);
    StoreOptions {
        redis: Some(conn.await.unwrap()),
        ..StoreOptions::default()
    }
}

/// Turns on the draft `RateLimit-Policy`/`RateLimit` fields, off by
/// default as the reference sends none.
pub fn draft_headers(config: &mut RlsServerConfig) {
    config.response_headers.draft = true;
}

/// The value of header `name` among those to add.
pub fn header(response: &RateLimitResponse, name: &str) -> Option<String> {
    response
        .response_headers_to_add
        .iter()
        .find(|h| h.key == name)
        .map(|h| h.value.clone())
}

/// A status's duration_until_reset, in nanoseconds.
pub fn reset_nanos(status: &DescriptorStatus) -> u128 {
    let d = status.duration_until_reset.expect("a duration");
    u128::try_from(d.seconds).unwrap() * 1_000_000_000 + u128::try_from(d.nanos).unwrap()
}

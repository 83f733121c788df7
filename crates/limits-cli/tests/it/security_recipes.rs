//! SECURITY.md's recommended deployments, started as written: each `sh`
//! block of that section is run (ports, the upstream and file paths
//! substituted), and keys clients as its text says. Two recipes had no
//! `--listen` and served on 127.0.0.1 only; the nginx recipe's trust of
//! 127.0.0.1/32 lets any local process pick its key, which the section now
//! says and narrows. A recipe that drifts from the binary fails here.

use crate::common;

use common::docs::{fenced_blocks, read, serve_arguments};
use common::server::Server;
use common::statuses_from;
use common::upstream::RecordingUpstream;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

/// The section of SECURITY.md the recipes are in.
fn section() -> String {
    let text = read("SECURITY.md");
    let start = text
        .find("\n## Recommended deployments")
        .expect("SECURITY.md has its deployments section");
    let rest = &text[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    rest[..end].to_string()
}

/// The value of `--flag` in `args`.
fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1).map(String::as_str)
}

/// A recipe's arguments with what only this machine can give substituted:
/// a free port for `--listen` (its address kept) or `127.0.0.1:0` where
/// the recipe keeps the default, the test's upstream, rules file, state
/// file, and admin port.
fn substituted(args: &[String], upstream: &str, rules: &Path, state: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let value = match word.as_str() {
            "--listen" | "--upstream" | "--config" | "--admin" | "--state" => {
                words.next().expect("a value after a flag").clone()
            }
            _ => {
                out.push(word.clone());
                continue;
            }
        };
        let value = match word.as_str() {
            "--listen" => {
                let (host, _port) = value.rsplit_once(':').expect("HOST:PORT");
                format!("{host}:0")
            }
            "--upstream" => upstream.to_string(),
            "--config" => rules.display().to_string(),
            "--admin" => "127.0.0.1:0".to_string(),
            _ => state.display().to_string(),
        };
        out.extend([word.clone(), value]);
    }
    if flag(args, "--listen").is_none() {
        out.extend(["--listen".to_string(), "127.0.0.1:0".to_string()]);
    }
    out
}

/// A started recipe: the server and the URL a local client reaches it at.
struct Running {
    server: Server,
    url: String,
    _dir: tempfile::TempDir,
}

fn start(args: &[String], upstream: &RecordingUpstream) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let rules = common::write(
        dir.path(),
        "rules.toml",
        "[[rule]]\nname = \"all\"\nrates = \"2/hour\"\n",
    );
    let state: PathBuf = dir.path().join("state.json");
    let args = substituted(args, &upstream.url, &rules, &state);
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::try_start_as_given("serve", &words)
        .unwrap_or_else(|e| panic!("limits serve {args:?}: {e}"));
    let url = server.url.replace("0.0.0.0", "127.0.0.1");
    Running {
        server,
        url,
        _dir: dir,
    }
}

const LOCAL: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const NGINX: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
/// Three clients as a proxy would name them.
const CLIENTS: [&str; 3] = ["198.51.100.1", "198.51.100.2", "198.51.100.3"];

/// The recipes: (trusted network if any, arguments).
fn recipes() -> Vec<(Option<String>, Vec<String>)> {
    let section = section();
    let commands: Vec<Vec<String>> = fenced_blocks(&section, "SECURITY.md")
        .into_iter()
        .filter(|(lang, _)| lang == "sh")
        .map(|(_, text)| serve_arguments(text.trim()))
        .collect();
    assert_eq!(commands.len(), 4, "SECURITY.md's recipes: {commands:?}");
    commands
        .into_iter()
        .map(|args| (flag(&args, "--trust-proxy").map(str::to_string), args))
        .collect()
}

#[test]
fn the_directly_exposed_and_load_balancer_recipes_listen_beyond_the_loopback() {
    let mut checked = 0;
    for (trusted, args) in recipes() {
        let loopback_proxy = trusted.as_deref().is_some_and(|t| t.starts_with("127."));
        let listen = flag(&args, "--listen");
        if loopback_proxy {
            // nginx on this host reaches the default address.
            assert_eq!(listen, None, "{args:?}");
            continue;
        }
        let listen = listen.unwrap_or_else(|| panic!("no --listen: loopback only: {args:?}"));
        let (host, _) = listen.rsplit_once(':').unwrap();
        let host: IpAddr = host.trim_matches(['[', ']']).parse().unwrap();
        assert!(
            !host.is_loopback(),
            "{listen}: reachable from this host only"
        );
        checked += 1;
    }
    assert_eq!(checked, 2, "the directly exposed and load balancer recipes");
}

#[test]
fn the_nginx_recipes_match_serves_default_address_and_the_bound_address_trusted() {
    let section = section();
    let blocks = fenced_blocks(&section, "SECURITY.md");
    let nginx = &blocks
        .iter()
        .find(|(lang, _)| lang == "nginx")
        .expect("an nginx block")
        .1;
    let (help, _, _) = common::limits(&["serve", "--help"]);
    let default = "[default: 127.0.0.1:8080]";
    assert!(help.contains(default), "serve listens elsewhere by default");
    assert!(
        nginx.contains("proxy_pass http://127.0.0.1:8080;"),
        "{nginx}"
    );
    let bind = nginx
        .lines()
        .find_map(|l| l.trim().strip_prefix("proxy_bind "))
        .expect("proxy_bind")
        .trim_end_matches(';');
    let trusted: Vec<String> = recipes().into_iter().filter_map(|(t, _)| t).collect();
    assert!(
        trusted.contains(&format!("{bind}/32")),
        "no recipe trusts nginx's bound address {bind}: {trusted:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_recipe_starts_as_written_and_keys_clients_as_it_says() {
    let upstream = RecordingUpstream::start();
    for (trusted, args) in recipes() {
        let running = start(&args, &upstream);
        let said = &running.server.listening;
        match trusted.as_deref() {
            // The peer is the client: a forwarding header changes nothing.
            None | Some("10.0.0.0/16") => {
                assert!(said.contains("http://0.0.0.0:"), "{said}");
                let got = statuses_from(&running.url, LOCAL, &CLIENTS).await;
                assert_eq!(got, [200, 200, 429], "{args:?}");
            }
            // What the section warns of: any local process names its
            // own client, and so its own key.
            Some("127.0.0.1/32") => {
                let got = statuses_from(&running.url, LOCAL, &CLIENTS).await;
                assert_eq!(got, [200, 200, 200], "{args:?}");
            }
            // The narrower recipe: only nginx's bound address is believed.
            Some("127.0.0.2/32") => {
                let got = statuses_from(&running.url, LOCAL, &CLIENTS).await;
                assert_eq!(got, [200, 200, 429], "a local process picked its key");
                let got = statuses_from(&running.url, NGINX, &CLIENTS).await;
                assert_eq!(got, [200, 200, 200], "nginx's clients are each their own");
            }
            Some(other) => panic!("a recipe this test does not know: {other}"),
        }
    }
}

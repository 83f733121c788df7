//! SECURITY.md's narrower nginx recipe behind a real nginx: its `location`
//! block (read out of SECURITY.md, nginx's `proxy_bind` included) in front
//! of `serve` started with the recipe's flags. A client that sends its own
//! `X-Forwarded-For` through nginx is still keyed by its address, and so is
//! a local process that connects to `serve` directly. nginx is installed by
//! scripts/test (nginx-light).

use crate::common;
use crate::redis_server::free_port;

use common::docs::{fenced_blocks, read, serve_arguments};
use common::server::Server;
use common::statuses_from;
use common::upstream::RecordingUpstream;
use std::net::IpAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// SECURITY.md's `nginx` block and the `serve` command that trusts the
/// address it binds.
fn recipe() -> (String, Vec<String>) {
    let blocks = fenced_blocks(&read("SECURITY.md"), "SECURITY.md");
    let nginx = blocks
        .iter()
        .find(|(lang, _)| lang == "nginx")
        .expect("an nginx block in SECURITY.md")
        .1
        .clone();
    let bind = nginx
        .lines()
        .find_map(|l| l.trim().strip_prefix("proxy_bind "))
        .expect("proxy_bind")
        .trim_end_matches(';')
        .to_string();
    let serve = blocks
        .iter()
        .filter(|(lang, _)| lang == "sh")
        .map(|(_, text)| text.trim())
        .find(|text| {
            text.replace("\\\n", " ")
                .contains(&format!("--trust-proxy {bind}/32"))
        })
        .expect("a serve recipe trusting nginx's proxy_bind address");
    (nginx, serve_arguments(serve))
}

/// nginx in the foreground with `location` in a server on 127.0.0.1:`port`;
/// killed on drop.
struct Nginx {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Nginx {
    fn start(location: &str, port: u16) -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let conf = format!(
            "pid {d}/nginx.pid;\nerror_log {d}/error.log;\nevents {{}}\nhttp {{\n\
             access_log off;\nclient_body_temp_path {d}/body;\nproxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fastcgi;\nuwsgi_temp_path {d}/uwsgi;\nscgi_temp_path {d}/scgi;\n\
             server {{\nlisten 127.0.0.1:{port};\n{location}}}\n}}\n"
        );
        let path = common::write(dir.path(), "nginx.conf", &conf);
        let child = Command::new("nginx")
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&path)
            .args(["-g", "daemon off;"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("nginx: {e} (scripts/test installs it: apt-get install nginx-light)")
            });
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nginx did not listen within 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Nginx { child, _dir: dir }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_real_nginx_the_narrow_recipe_keys_clients_by_address_not_by_their_header() {
    let (location, args) = recipe();
    let upstream = RecordingUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let rules = common::write(
        dir.path(),
        "rules.toml",
        "[[rule]]\nname = \"all\"\nrates = \"2/hour\"\n",
    );
    let port = free_port();
    let mut given = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        given.push(word.clone());
        match word.as_str() {
            "--upstream" => given.push(upstream.url.clone()),
            "--config" => given.push(rules.display().to_string()),
            _ => continue,
        }
        words.next();
    }
    given.extend(["--listen".to_string(), format!("127.0.0.1:{port}")]);
    let given: Vec<&str> = given.iter().map(String::as_str).collect();
    let serve = Server::try_start_as_given("serve", &given).expect("the recipe starts");
    let nginx_port = free_port();
    let location = location.replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"));
    let _nginx = Nginx::start(&location, nginx_port);
    let front = format!("http://127.0.0.1:{nginx_port}");

    // Through nginx, a client naming other clients is still itself...
    let spoofed = ["198.51.100.1", "198.51.100.2", "198.51.100.3"];
    let got = statuses_from(&front, IpAddr::from([127, 0, 0, 3]), &spoofed).await;
    assert_eq!(got, [200, 200, 429]);
    // ... and another client is another key: serve believes nginx's
    // header, which names the address nginx saw.
    assert_eq!(
        statuses_from(&front, IpAddr::from([127, 0, 0, 4]), &spoofed[..1]).await,
        [200]
    );
    // nginx appended the client it saw; serve, the peer it saw: nginx's
    // bound address.
    let forwarded: Vec<String> = upstream
        .requests()
        .iter()
        .filter_map(|r| {
            r.lines().find_map(|l| {
                let l = l.to_ascii_lowercase();
                l.strip_prefix("x-forwarded-for: ").map(str::to_string)
            })
        })
        .collect();
    assert_eq!(
        forwarded[0], "198.51.100.1, 127.0.0.3, 127.0.0.2",
        "{forwarded:?}"
    );
    // Directly, a local process is keyed by its address, whatever it names.
    let got = statuses_from(&serve.url, IpAddr::from([127, 0, 0, 1]), &spoofed).await;
    assert_eq!(got, [200, 200, 429]);
}

//! The README's commands, run as written: a block of shown output is what
//! the command above it prints, the demo session answers as shown, and
//! every server command starts with the flags and files the README gives.
//! A README that drifts from the binary fails here.

use crate::common;

use common::docs::{arguments, fenced_blocks, read, root};
use common::server::Server;
use std::path::Path;
use std::time::Duration;

/// The first line of each `sh` block that runs the `limits` command.
fn commands(blocks: &[(String, String)]) -> Vec<String> {
    blocks
        .iter()
        .filter(|(lang, _)| lang == "sh")
        .filter_map(|(_, text)| {
            let command: String = text
                .split_inclusive('\n')
                .take_while(|l| !l.starts_with('#'))
                .scan(true, |go_on, l| {
                    let keep = *go_on;
                    *go_on = l.trim_end().ends_with('\\');
                    keep.then_some(l)
                })
                .collect();
            let start = command.trim_start();
            (start.starts_with("cargo run --release -- ") || start.starts_with("limits "))
                .then(|| command.trim().to_string())
        })
        .collect()
}

#[test]
fn readme_outputs_are_what_their_commands_print() {
    let blocks = blocks();
    let mut checked = 0;
    for pair in blocks.windows(2) {
        let [(lang, command), (next, shown)] = pair else {
            unreachable!()
        };
        if lang != "sh" || next != "text" || !command.starts_with("cargo run --release -- ") {
            continue;
        }
        let out = run_as_written(command.trim(), arguments(command.trim(), &[]));
        let printed = String::from_utf8_lossy(&out.stdout);
        // A last line "..." shows only the start of what is printed.
        let shown: Vec<&str> = shown.lines().map(str::trim_end).collect();
        let (shown, whole) = match shown.split_last() {
            Some((&"...", start)) => (start, false),
            _ => (&shown[..], true),
        };
        let mut printed: Vec<&str> = printed.lines().map(str::trim_end).collect();
        if !whole {
            printed.truncate(shown.len());
        }
        assert_eq!(
            printed.join("\n"),
            shown.join("\n"),
            "README.md: `{}`",
            command.trim()
        );
        checked += 1;
    }
    // simulate (edge, then the smoothed rate's steady and burst) and
    // replay: if a block stops matching the pattern, say so.
    assert_eq!(checked, 4, "the README's command-and-output pairs");
}

#[tokio::test]
async fn readme_demo_session_answers_as_shown() {
    let blocks = blocks();
    let commands = commands(&blocks);
    let serve = commands
        .iter()
        .find(|c| c.contains(" serve ") && !c.contains("--upstream"))
        .expect("the demo's serve command");
    let args = arguments(serve, &["--listen"]);
    assert_eq!(args[0], "serve");
    let args: Vec<&str> = args[1..].iter().map(String::as_str).collect();
    let server = Server::start(&args, false);
    // "# 200 200 200 200 200 429 429" under the curl loop.
    let (curl, expected) = blocks
        .iter()
        .find_map(|(_, text)| {
            let loop_line = text.lines().find(|l| l.contains("seq 7"))?;
            let statuses = text.lines().find_map(|l| l.strip_prefix("# "))?;
            Some((loop_line.to_string(), statuses.to_string()))
        })
        .expect("the demo's curl loop");
    assert!(curl.contains("/api/items"), "{curl}");
    let client = common::client();
    let url = format!("{}/api/items", server.url);
    let mut statuses = Vec::new();
    for _ in 0..7 {
        statuses.push(
            client
                .get(&url)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
                .to_string(),
        );
    }
    assert_eq!(statuses.join(" "), expected);
    // The 429 shown below it: its status line, each header shown, the body.
    let shown = blocks
        .iter()
        .find(|(lang, text)| lang == "text" && text.starts_with("HTTP/1.1 429"))
        .map(|(_, text)| text.clone())
        .expect("the demo's 429");
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 429);
    let (head, body) = shown.split_once("\n\n").unwrap();
    for line in head.lines().skip(1) {
        let (name, value) = line.split_once(": ").unwrap();
        assert_eq!(common::header(&response, name), value, "README's {name}");
    }
    assert_eq!(response.text().await.unwrap(), body.trim_end());
}

#[test]
fn readme_server_commands_start_as_written() {
    let blocks = blocks();
    let dir = tempfile::tempdir().unwrap();
    // The files the commands name: the rules file and the rls config are
    // the README's own blocks.
    let toml = blocks.iter().find(|(lang, _)| lang == "toml").unwrap();
    let rules = common::write(dir.path(), "limits.toml", &toml.1);
    let yaml = blocks
        .iter()
        .find(|(lang, text)| lang == "yaml" && text.contains("domain:"))
        .unwrap();
    let rls_dir = dir.path().join("ratelimit");
    std::fs::create_dir(&rls_dir).unwrap();
    common::write(&rls_dir, "config.yaml", &yaml.1);
    let state = dir.path().join("limits.state");
    let mut started = 0;
    for command in commands(&blocks) {
        if !command.contains("--upstream") && !command.contains(" rls ") {
            continue;
        }
        // Listen and admin addresses become free ports on 127.0.0.1.
        let args: Vec<String> = arguments(&command, &["--listen", "--admin"])
            .into_iter()
            .map(|a| match a.as_str() {
                "limits.toml" => rules.display().to_string(),
                "/etc/ratelimit/config" => rls_dir.display().to_string(),
                "limits.state" => state.display().to_string(),
                _ => a,
            })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let server = Server::try_start_command(args[0], &args[1..], command.contains("--admin"));
        assert!(
            server.is_ok(),
            "README.md: `{command}`: {}",
            server.err().unwrap()
        );
        started += 1;
    }
    assert!(started >= 3, "{started} server commands in the README");
}

#[test]
fn readme_rules_files_pass_check_config() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (lang, text) in blocks() {
        if lang != "toml" {
            continue;
        }
        let rules = common::write(dir.path(), "limits.toml", &text);
        let (stdout, stderr, code) =
            common::limits(&["serve", "--check-config", rules.to_str().unwrap()]);
        assert_eq!(code, 0, "README.md block:\n{text}\n{stderr}");
        assert!(stdout.contains(": ok ("), "{stdout}");
        checked += 1;
    }
    assert!(checked >= 3, "{checked} rules files in the README");
}

#[test]
fn readme_report_command_writes_the_page() {
    let blocks = blocks();
    let command = commands(&blocks)
        .into_iter()
        .find(|c| c.contains("--report"))
        .expect("the README's --report command");
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let args: Vec<String> = arguments(&command, &[])
        .into_iter()
        .map(|a| match a.as_str() {
            "report.html" => page.display().to_string(),
            _ => a,
        })
        .collect();
    run_as_written(&command, args);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<svg") && html.ends_with("</html>\n"),
        "{html}"
    );
    // The README's picture of it, as Chromium shows the page (kept in
    // target/tmp; docs/replay-report.png is a copy).
    let url = format!("file://{}", page.display());
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("replay-report.png");
    let (_, console) =
        crate::common::browser::browse(&url, Duration::from_millis(500), Some(&shot));
    assert!(console.is_empty(), "{console:?}");
    let png = std::fs::read(&shot).expect("the screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    assert!(root().join("docs/replay-report.png").exists());
}

/// Runs the README's `command` (its `args`) from the repository's root,
/// as a reader would: it must succeed.
fn run_as_written(command: &str, args: Vec<String>) -> std::process::Output {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_limits"))
        .args(&args)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "README.md: `{command}`: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The README's fenced blocks, in order: (language, text).
fn blocks() -> Vec<(String, String)> {
    fenced_blocks(&read("README.md"), "README.md")
}

/// The README's module block: the package it builds is the workspace's,
/// and its `redis-server --loadmodule` line starts a Redis that lists the
/// module (the library as the tests build it, of the same file name: a
/// release build would cost the suite minutes).
#[test]
fn readme_module_block_builds_and_loads_the_module() {
    let blocks = blocks();
    let (_, block) = blocks
        .iter()
        .find(|(lang, text)| lang == "sh" && text.contains("--loadmodule"))
        .expect("the README's module block");
    let package = block
        .split_whitespace()
        .skip_while(|w| *w != "-p")
        .nth(1)
        .expect("cargo build -p PACKAGE");
    assert!(
        root()
            .join("crates")
            .join(package)
            .join("Cargo.toml")
            .exists(),
        "{package}"
    );
    let line = block
        .lines()
        .find(|l| l.starts_with("redis-server --loadmodule "))
        .expect("the redis-server line");
    let named = Path::new(line.split_whitespace().nth(2).unwrap());
    let built = crate::redis_server::module_path();
    assert_eq!(
        named.file_name(),
        Path::new(&built).file_name(),
        "the library cargo builds for {package}"
    );
    let server = crate::redis_server::RedisServer::start_with_module(&[]);
    let modules = server.command(&["MODULE", "LIST"]).unwrap();
    assert!(modules.contains("limits"), "{modules}");
}

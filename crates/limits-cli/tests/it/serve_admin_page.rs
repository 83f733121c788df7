//! The admin listener's live page in a real browser: Debian's Chromium,
//! headless, against a running `limits serve` with traffic. The page
//! loads without a console message, its chart moves when traffic flows,
//! its table names the key flooding, and its screenshot is kept as a test
//! artifact (`target/tmp/admin-page.png`, the README's picture).

use crate::common;

use common::browser::browse;
use common::client;
use common::server::Server;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The value of attribute `name` on the element that has `marker`.
fn attribute<'a>(dom: &'a str, marker: &str, name: &str) -> Option<&'a str> {
    let at = dom.find(marker)?;
    let start = dom[..at].rfind('<')?;
    let tag = &dom[start..start + dom[start..].find('>')?];
    let value = tag.split(&format!("{name}=\"")).nth(1)?;
    value.split('"').next()
}

#[tokio::test(flavor = "multi_thread")]
async fn admin_page_in_a_browser_shows_the_flood_as_it_happens() {
    let server = Server::start(&["--limit", "5", "--key", "header:X-Api-Key"], true);
    let page = format!("{}/", server.admin.clone().expect("--admin"));
    let second = Duration::from_millis(2500);

    let (quiet, console) = tokio::task::spawn_blocking({
        let page = page.clone();
        move || browse(&page, second, None)
    })
    .await
    .unwrap();
    assert!(console.is_empty(), "the console: {console:?}");
    assert!(
        quiet.contains("default: sliding-log 5/s, any method /, by header:x-api-key, in memory"),
        "{quiet}"
    );
    assert_eq!(
        attribute(&quiet, "data-rule=\"default\"", "data-last-limited"),
        Some("0")
    );
    assert!(
        quiet.contains("No key was limited in the last minute."),
        "{quiet}"
    );

    // A scraper at a hundred requests a second, a client at two.
    let flowing = Arc::new(AtomicBool::new(true));
    let traffic = {
        let (http, url, flowing) = (client(), server.url.clone(), flowing.clone());
        tokio::spawn(async move {
            let mut n = 0u64;
            while flowing.load(Ordering::Relaxed) {
                let key = if n % 50 == 0 { "client-1" } else { "scraper-7" };
                let _ = http
                    .get(format!("{url}/api/items"))
                    .header("x-api-key", key)
                    .send()
                    .await;
                n += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let (busy, console) = tokio::task::spawn_blocking({
        let page = page.clone();
        move || browse(&page, second, None)
    })
    .await
    .unwrap();
    assert!(console.is_empty(), "the console: {console:?}");
    let limited: u64 = attribute(&busy, "data-rule=\"default\"", "data-last-limited")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no rule card: {busy}"));
    assert!(
        limited > 5,
        "the chart's last second: {limited} limited\n{busy}"
    );
    let peak: u64 = attribute(&busy, "data-peak=", "data-peak")
        .unwrap()
        .parse()
        .unwrap();
    assert!(peak > 5, "the chart's peak: {peak}");
    let first_key = busy
        .find("<td class=\"key\">")
        .map(|at| &busy[at..])
        .unwrap_or_else(|| panic!("{busy}"));
    assert!(
        first_key.starts_with("<td class=\"key\">header:x-api-key=scraper-7</td>"),
        "{first_key}"
    );

    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("admin-page.png");
    let _ = std::fs::remove_file(&shot);
    tokio::task::spawn_blocking({
        let shot = shot.clone();
        move || browse(&page, second, Some(&shot))
    })
    .await
    .unwrap();
    flowing.store(false, Ordering::Relaxed);
    traffic.await.unwrap();
    let png = std::fs::read(&shot).expect("the screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
}

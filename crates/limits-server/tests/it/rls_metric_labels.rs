//! `limits rls` metrics from client values (`detailed_metric`): a scrape
//! after values holding `"`, `\` and a line feed, and 100,000 distinct
//! values in one call, parses with a real OpenMetrics parser, reads every
//! kept value back as it was sent, forges nothing, and holds at most the
//! cap + 1 series per family.

use crate::rls_common::{descriptor, request, Rls};
use openmetrics_parser::openmetrics::parse_openmetrics;
use std::collections::{HashMap, HashSet};

const USERS: &str = "
domain: users
descriptors:
  - key: user
    detailed_metric: true
    rate_limit:
      unit: second
      requests_per_unit: 1000000000
  - key: path
    rate_limit:
      unit: second
      requests_per_unit: 1000000000
";

/// Each family's series, as (label name, value) sets read back by the
/// parser: the text must parse, or the test fails with the parser's reason.
fn families(text: &str) -> HashMap<String, Vec<HashMap<String, String>>> {
    let exposition = parse_openmetrics(text)
        .unwrap_or_else(|e| panic!("the scrape does not parse: {e:?}\n{}", head(text)));
    exposition
        .families
        .iter()
        .map(|(name, family)| {
            let series = family
                .iter_samples()
                .map(|s| {
                    let labels = s.get_labelset().expect("a sample's labels");
                    labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
                })
                .collect();
            (name.clone(), series)
        })
        .collect()
}

fn head(text: &str) -> String {
    text.lines().take(40).collect::<Vec<_>>().join("\n")
}

/// The descriptor label values of family `name`.
fn descriptors(
    families: &HashMap<String, Vec<HashMap<String, String>>>,
    name: &str,
) -> HashSet<String> {
    families
        .get(name)
        .unwrap_or_else(|| panic!("no family {name}"))
        .iter()
        .filter_map(|labels| labels.get("descriptor").cloned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_values_with_quotes_backslashes_and_line_feeds_parse_back_as_sent() {
    let rls = Rls::start_with(USERS, |c| c.admin = Some("127.0.0.1:0".parse().unwrap())).await;
    let values = [
        r#"a"quote"#,
        r"back\slash",
        "line\nfeed",
        "x\"} 1\nlimits_rls_total_hits_total{descriptor=\"forged\"} 999\n# EOF\n",
        r#"trailing\"#,
        "comma,equals=brace}",
    ];
    for value in values {
        rls.one("users", &[("user", value)], 0).await;
    }
    let text = rls.metrics().await;
    let families = families(&text);
    let seen = descriptors(&families, "limits_rls_total_hits");
    for value in values {
        let name = format!("users.user_{value}");
        assert!(seen.contains(&name), "{name:?} not read back: {seen:?}");
    }
    assert!(!seen.contains("forged"), "a forged series: {seen:?}");
    assert_eq!(seen.len(), values.len());
    rls.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_values_make_at_most_the_cap_and_one_other_series_per_family() {
    const CAP: usize = 50;
    let rls = Rls::start_with(USERS, |c| {
        c.admin = Some("127.0.0.1:0".parse().unwrap());
        c.max_metric_series = CAP;
    })
    .await;
    // A limit without detailed_metric first: its own series, whatever follows.
    rls.one("users", &[("path", "/login")], 0).await;
    let specials = ["q\"", "b\\", "n\n"];
    for value in specials {
        rls.one("users", &[("user", value)], 0).await;
    }
    // In calls of 25,000 descriptors: the answer to each stays within the
    // client's 4 MiB message limit.
    for chunk in 0..4 {
        let flood: Vec<_> = (chunk * 25_000..(chunk + 1) * 25_000)
            .map(|i| descriptor(&[("user", &format!("rnd{i}"))]))
            .collect();
        rls.call(request("users", flood, 0)).await.unwrap();
    }
    // Seen again after the flood: still its own series.
    rls.one("users", &[("user", "q\"")], 0).await;

    let text = rls.metrics().await;
    assert!(text.len() < 256 * 1024, "a scrape of {} bytes", text.len());
    let families = families(&text);
    for family in [
        "limits_rls_total_hits",
        "limits_rls_over_limit",
        "limits_rls_near_limit",
        "limits_rls_within_limit",
        "limits_rls_shadow_mode",
    ] {
        let seen = descriptors(&families, family);
        let from_clients: Vec<_> = seen
            .iter()
            .filter(|d| d.starts_with("users.user_"))
            .collect();
        assert_eq!(from_clients.len(), CAP, "{family}");
        assert!(seen.contains("other"), "{family}: no other series");
        assert!(
            seen.contains("users.path"),
            "{family}: the plain limit lost its series"
        );
        assert_eq!(
            seen.len(),
            CAP + 2,
            "{family}: the cap, other, and users.path"
        );
        for value in specials {
            assert!(
                seen.contains(&format!("users.user_{value}")),
                "{family}: {value:?}"
            );
        }
    }
    let total = |descriptor: &str| {
        crate::rls_common::metric(
            &text,
            &format!("limits_rls_total_hits_total{{descriptor=\"{descriptor}\"}}"),
        )
    };
    let folded = 100_000 + specials.len() - CAP;
    assert_eq!(total("other"), Some(folded as f64));
    assert_eq!(
        crate::rls_common::metric(&text, "limits_rls_metric_values_folded_total"),
        Some(folded as f64)
    );
    assert_eq!(total("users.user_q\\\""), Some(2.0), "{}", head(&text));
    rls.stop().await.unwrap();
}

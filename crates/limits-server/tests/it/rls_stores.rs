//! `limits rls` on a real Redis (`--store redis://...`): the limits shared
//! by two servers, and the three answers to a store that fails; a full
//! Redis (OOM) answered by its own policy; and reload keeping the counts of
//! unchanged limits.

use crate::rls_common;

use crate::redis_server;

use limits_server::rls::OnStoreError;
use redis_server::RedisServer;
use rls_common::*;
use std::time::Duration;

const CONFIG: &str = "
domain: shop
descriptors:
  - key: user
    rate_limit: {algorithm: sliding-log, unit: hour, requests_per_unit: 3}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_redis_share_the_limit_and_each_store_error_answer_holds() {
    let mut redis = RedisServer::start();
    let stores = on_redis(&redis.url(), Duration::from_millis(50)).await;
    let mut servers = Vec::new();
    for policy in [
        OnStoreError::Unavailable,
        OnStoreError::Allow,
        OnStoreError::Deny,
    ] {
        let stores = stores.clone();
        servers.push(
            Rls::start_with(CONFIG, move |c| {
                c.stores = stores;
                c.on_store_error = policy;
            })
            .await,
        );
    }
    let user = [("user", "ann")];
    // Three servers, one Redis: 3 per hour between them, exactly.
    let mut codes = Vec::new();
    for i in 0..5 {
        codes.push(servers[i % 3].one("shop", &user, 0).await.overall_code);
    }
    assert_eq!(codes, [OK, OK, OK, OVER, OVER]);

    redis.stop();
    // Another user: ann's denial is answered exactly without Redis (the deny cache).
    let user = [("user", "bob")];
    let err = servers[0]
        .call(request("shop", vec![descriptor(&user)], 0))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable, "{err:?}");
    assert!(err.message().contains("shop.user"), "{}", err.message());
    let allowed = servers[1].one("shop", &user, 0).await;
    assert_eq!((allowed.overall_code, allowed.statuses[0].code), (OK, OK));
    assert!(allowed.statuses[0].current_limit.is_none());
    let denied = servers[2].one("shop", &user, 0).await;
    assert_eq!((denied.overall_code, denied.statuses[0].code), (OVER, OVER));
    assert_eq!(
        denied.statuses[0]
            .current_limit
            .clone()
            .unwrap()
            .requests_per_unit,
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_redis_is_over_limit_by_default_whatever_the_outage_policy() {
    let redis =
        RedisServer::start_with(&["--maxmemory", "3mb", "--maxmemory-policy", "noeviction"]);
    let stores = on_redis(&redis.url(), Duration::from_millis(50)).await;
    let mut servers = Vec::new();
    for full in [None, Some(OnStoreError::Allow)] {
        let stores = stores.clone();
        servers.push(
            Rls::start_with(CONFIG, move |c| {
                c.stores = stores;
                // Allowing an outage must not allow a full Redis.
                c.on_store_error = OnStoreError::Allow;
                if let Some(full) = full {
                    c.on_store_full = full;
                }
            })
            .await,
        );
    }
    redis.fill_until_oom();
    let user = [("user", "fresh")];
    let denied = servers[0].one("shop", &user, 0).await;
    assert_eq!((denied.overall_code, denied.statuses[0].code), (OVER, OVER));
    let allowed = servers[1].one("shop", &user, 0).await;
    assert_eq!((allowed.overall_code, allowed.statuses[0].code), (OK, OK));
    let connection = stores.redis.as_ref().unwrap();
    assert_eq!(connection.full_answers(), 2);
    assert!(connection.is_healthy(), "not an outage");
}

#[tokio::test]
async fn reload_keeps_the_counts_of_unchanged_limits_and_restarts_changed_ones() {
    let yaml = "
domain: shop
descriptors:
  - key: user
    rate_limit: {unit: day, requests_per_unit: 3}
  - key: cart
    rate_limit: {unit: day, requests_per_unit: 2}
";
    let rls = Rls::start(yaml).await;
    assert_eq!(rls.codes("shop", &[("user", "a")], 2).await, [OK, OK]);
    assert_eq!(rls.codes("shop", &[("cart", "a")], 3).await, [OK, OK, OVER]);
    let changed = yaml.replace("requests_per_unit: 2", "requests_per_unit: 1")
        + "  - key: new\n    rate_limit: {unit: day, requests_per_unit: 1}\n";
    std::fs::write(config_file(&rls.dir), changed).unwrap();
    assert_eq!(rls.reloader.reload(), Ok((3, 1)), "user kept its store");
    // user: 1 left of its 3; cart starts afresh at its new 1.
    assert_eq!(rls.codes("shop", &[("user", "a")], 2).await, [OK, OVER]);
    assert_eq!(rls.codes("shop", &[("cart", "a")], 2).await, [OK, OVER]);
    assert_eq!(rls.codes("shop", &[("new", "a")], 2).await, [OK, OVER]);
    // A bad file keeps the limits in force and says where it is wrong.
    std::fs::write(config_file(&rls.dir), "domain: shop\ndescriptors:\n  - key: user\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n").unwrap();
    let err = rls.reloader.reload().unwrap_err();
    assert!(err.contains("config.yaml:4"), "{err}");
    assert_eq!(rls.codes("shop", &[("new", "b")], 2).await, [OK, OVER]);
}

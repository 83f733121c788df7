//! The store on a Redis with the limits module loaded: the conformance
//! suite passes (one node and a cluster), the module and the Lua scripts
//! answer alike and write the same bytes, a key moves between them without
//! losing a count, the module's writes reach a replica that a failover
//! promotes, and a Redis without it (or that loses it) is decided by the
//! scripts.

use crate::redis_server::{module_path, RedisCluster, RedisServer};

use limits::{Algorithm, Mode, Rule, Store};
use limits_conformance::{check_penalty, check_settle, run_suite, Config};
use limits_redis::{BatchDecision, RedisConnection, RedisModule, RedisOptions, RedisStore};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn options(prefix: &str, module: RedisModule) -> RedisOptions {
    RedisOptions {
        prefix: prefix.to_owned(),
        timeout: Duration::from_secs(5),
        deny_cache: 0,
        new_keys_per_client: None,
        module,
        ..RedisOptions::default()
    }
}

async fn connect(url: &str, prefix: &str, module: RedisModule) -> RedisConnection {
    RedisConnection::connect(url, options(prefix, module))
        .await
        .unwrap()
}

/// A store factory on `url` (a Redis with the module), each store under a
/// prefix of its own, each checked to decide with the module.
fn stores_on(url: String) -> impl Fn(Rule) -> Pin<Box<dyn Future<Output = RedisStore>>> {
    let counter = Arc::new(AtomicU64::new(0));
    move |rule| {
        let url = url.clone();
        let n = counter.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            let connection = connect(&url, &format!("m{n}:"), RedisModule::Auto).await;
            assert!(connection.decides_in_module(), "MODULE LIST names limits");
            RedisStore::new(&connection, rule, "r").expect("the suite's rules fit Redis")
        })
    }
}

#[test]
fn the_conformance_suite_passes_with_the_module() {
    let server = RedisServer::start_with_module(&[]);
    if let Err(failure) = run_suite(stores_on(server.url()), &crate::conformance::config()) {
        panic!("the store does not conform with the module: {failure}");
    }
}

#[test]
fn settling_with_the_module_matches_the_models_for_every_limiter() {
    let server = RedisServer::start_with_module(&[]);
    let make = stores_on(server.url());
    for algorithm in MODULE_DECIDES {
        if let Err(failure) = check_settle(&make, algorithm, &crate::conformance::config()) {
            panic!("the store does not settle as the models do with the module: {failure}");
        }
    }
    assert!(
        calls_of(&server, "limits.settle") > 1000,
        "settled by LIMITS.SETTLE"
    );
    assert_eq!(
        calls_of(&server, "evalsha"),
        0,
        "no script decided or settled"
    );
}

#[test]
fn penalties_with_the_module_ban_as_the_models_do() {
    let server = RedisServer::start_with_module(&[]);
    let make = stores_on(server.url());
    let banning = |rule, penalty| {
        let store = make(rule);
        async move {
            let store = store.await;
            store
                .with_penalty(penalty)
                .expect("the suite's penalties fit Redis")
        }
    };
    for algorithm in MODULE_DECIDES {
        if let Err(failure) = check_penalty(banning, algorithm, &crate::conformance::config()) {
            panic!("the store does not ban as the models do with the module: {failure}");
        }
    }
    assert!(
        calls_of(&server, "limits.penalized") > 1000,
        "decided by LIMITS.PENALIZED"
    );
    assert_eq!(calls_of(&server, "evalsha"), 0, "no script decided");
}

/// A key's standing moves between the module and the scripts: denials
/// counted by one start a ban the other keeps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ban_counted_by_the_module_is_kept_by_the_scripts_and_back() {
    let server = RedisServer::start_with_module(&[]);
    let penalty =
        limits::Penalty::new(2, Duration::from_secs(3600), Duration::from_secs(600), None).unwrap();
    let store = |connection: &RedisConnection| {
        let rule = Rule::new(Algorithm::TokenBucket, "1/h".parse().unwrap());
        let store = RedisStore::new(connection, rule, "login").unwrap();
        store.with_penalty(penalty).unwrap()
    };
    let module = store(&connect(&server.url(), "b:", RedisModule::On).await);
    let scripts = store(&connect(&server.url(), "b:", RedisModule::Off).await);
    assert!(
        module
            .decide("mallory", 1, Mode::Record)
            .await
            .unwrap()
            .decision
            .allowed
    );
    let first = scripts.decide("mallory", 1, Mode::Record).await.unwrap();
    assert!(
        !first.decision.allowed && first.ban.is_none(),
        "one denial: no ban yet"
    );
    let second = module.decide("mallory", 1, Mode::Record).await.unwrap();
    let ban = second
        .ban
        .expect("the second denial within the hour starts a ban");
    assert_eq!(ban.length, Duration::from_secs(600));
    let kept = scripts.decide("mallory", 1, Mode::Record).await.unwrap();
    assert_eq!(
        kept.ban.map(|b| b.until),
        Some(ban.until),
        "the scripts read the module's ban"
    );
    let again = module.decide("mallory", 1, Mode::Record).await.unwrap();
    assert_eq!(again.ban.map(|b| b.until), Some(ban.until));
}

#[test]
fn the_conformance_suite_passes_on_a_cluster_with_the_module() {
    let module = module_path();
    let cluster = RedisCluster::start_with(&["--loadmodule", &module]);
    let config = Config {
        cases: 24,
        ..crate::conformance::config()
    };
    if let Err(failure) = run_suite(stores_on(cluster.url()), &config) {
        panic!("the store does not conform on a cluster with the module: {failure}");
    }
    let make = stores_on(cluster.url());
    for algorithm in MODULE_DECIDES {
        if let Err(failure) = check_settle(&make, algorithm, &config) {
            panic!("the store does not settle as the models do on a cluster with the module: {failure}");
        }
    }
}

/// Whether `store` admits a request of cost 1 for `key` (recorded).
async fn allowed(store: &RedisStore, key: &str) -> bool {
    store
        .decide(key, 1, Mode::Record)
        .await
        .unwrap()
        .decision
        .allowed
}

/// A small deterministic generator (xorshift64*), so that a failure
/// names its seed and replays.
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// The limiters the module decides, and a random rule of each, of one to
/// three rates with windows in whole microseconds (some not whole
/// milliseconds) and limits that often leave W / L fractional.
fn random_rule(random: &mut Random, algorithm: Algorithm) -> Rule {
    let rates: Vec<String> = (0..1 + random.below(3))
        .map(|_| {
            let limit = 1 + random.below(12);
            let window_us = [1_000, 7_000, 250_000, 1_000_000, 3_300_007][random.below(5) as usize];
            format!("{limit}/{window_us}us")
        })
        .collect();
    let rule = Rule::new(algorithm, rates.join("; ").parse().unwrap());
    match (algorithm, random.below(2)) {
        (Algorithm::LeakyBucket, 1) => rule.with_burst(random.below(5)),
        _ => rule,
    }
}

use limits_redis_module::DECIDED as MODULE_DECIDES;

fn random_mode(random: &mut Random) -> Mode {
    [Mode::Record, Mode::Record, Mode::Peek, Mode::RecordAlways][random.below(4) as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_module_answers_what_the_scripts_answer_and_writes_the_same_bytes() {
    let server = RedisServer::start_with_module(&[]);
    let url = server.url();
    let scripts = connect(&url, "s:", RedisModule::Off).await;
    let module = connect(&url, "m:", RedisModule::On).await;
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut raw = client.get_multiplexed_async_connection().await.unwrap();
    for seed in 1..=50u64 {
        let mut random = Random(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let algorithm = MODULE_DECIDES[(seed % 5) as usize];
        let rule = random_rule(&mut random, algorithm);
        let by_script = RedisStore::new(&scripts, rule.clone(), "r").unwrap();
        let by_module = RedisStore::new(&module, rule.clone(), "r").unwrap();
        let mut now_us = 1_700_000_000_000_000 + random.below(10_000_000);
        for step in 0..60 {
            now_us += [0, 1, 999, 1_000, 120_000, 1_000_000][random.below(6) as usize];
            let cost = random.below(rule.max_cost() + 2);
            let mode = random_mode(&mut random);
            let key = format!("k{}", random.below(2));
            let expected = by_script.decide_at(&key, now_us * 1000, cost, mode).await;
            let answered = by_module.decide_at(&key, now_us * 1000, cost, mode).await;
            let context = format!(
                "seed {seed}, step {step}, {algorithm} {}, cost {cost}, {mode:?}",
                rule.rates()
            );
            assert_eq!(answered.unwrap(), expected.unwrap(), "{context}");
            let script_values = values(&mut raw, &by_script.redis_keys(&key)).await;
            let module_values = values(&mut raw, &by_module.redis_keys(&key)).await;
            if algorithm == Algorithm::SlidingLog {
                // The rings hold the same entries; the scripts' keep the
                // bytes of expired entries and where the ring wrapped.
                let entries = |values: &[Option<Vec<u8>>]| {
                    let stored: Vec<Option<&[u8]>> = values.iter().map(Option::as_deref).collect();
                    rule.encode_state(&limits_redis_module::layout::read(&rule, &stored))
                };
                assert_eq!(
                    entries(&module_values),
                    entries(&script_values),
                    "the state after {context}"
                );
            } else {
                assert_eq!(module_values, script_values, "the state after {context}");
            }
        }
    }
    let stats = server.command(&["INFO", "commandstats"]).unwrap();
    assert!(
        stats.contains("cmdstat_limits.decide:calls=3000"),
        "{stats}"
    );
}

/// The values of `keys` (`None`: no such key).
async fn values(
    conn: &mut redis::aio::MultiplexedConnection,
    keys: &[String],
) -> Vec<Option<Vec<u8>>> {
    let mut values = Vec::new();
    for key in keys {
        values.push(redis::cmd("GET").arg(key).query_async(conn).await.unwrap());
    }
    values
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_moves_between_the_scripts_and_the_module_keeping_its_count() {
    let server = RedisServer::start_with_module(&[]);
    let scripts = connect(&server.url(), "p:", RedisModule::Off).await;
    let module = connect(&server.url(), "p:", RedisModule::On).await;
    for seed in 1..=24u64 {
        let mut random = Random(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) + 7);
        let algorithm = MODULE_DECIDES[(seed % 5) as usize];
        let rule = random_rule(&mut random, algorithm);
        let name = format!("r{seed}");
        let stores = [
            RedisStore::new(&scripts, rule.clone(), &name).unwrap(),
            RedisStore::new(&module, rule.clone(), &name).unwrap(),
        ];
        let mut state = rule.new_state();
        let mut now_us = 1_700_000_000_000_000 + random.below(10_000_000);
        for step in 0..80 {
            now_us += [0, 1, 999, 120_000, 1_000_000][random.below(5) as usize];
            let cost = random.below(rule.max_cost() + 2);
            let mode = random_mode(&mut random);
            let store = &stores[random.below(2) as usize];
            let verdict = store
                .decide_at("k", now_us * 1000, cost, mode)
                .await
                .unwrap();
            let core = rule.decide(&mut state, now_us * 1000, cost, mode, |_| {});
            assert_eq!(
                verdict.decision,
                core,
                "seed {seed}, step {step}: {algorithm} {}, cost {cost}, {mode:?}",
                rule.rates()
            );
        }
    }
}

/// `INFO replication`'s `name:value`.
fn info_field(server: &RedisServer, name: &str) -> Option<String> {
    let info = server.command(&["INFO", "replication"]).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .map(|v| v.trim().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_module_s_writes_reach_a_replica_that_a_failover_promotes() {
    let mut master = RedisServer::start_with_module(&[]);
    let primary = master.port.to_string();
    let replica = RedisServer::start_with_module(&["--replicaof", "127.0.0.1", &primary]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while info_field(&replica, "master_link_status").as_deref() != Some("up") {
        assert!(Instant::now() < deadline, "the replica never synced");
        std::thread::sleep(Duration::from_millis(50));
    }
    let rule = || Rule::new(Algorithm::TokenBucket, "5/h".parse().unwrap());
    let connection = connect(&master.url(), "f:", RedisModule::Auto).await;
    assert!(connection.decides_in_module());
    let store = RedisStore::new(&connection, rule(), "login").unwrap();
    for _ in 0..4 {
        assert!(allowed(&store, "alice").await);
    }
    let key = store.redis_keys("alice").remove(0);
    // (WAIT from this test's own connection would wait for its writes
    // only, of which there are none: the replica is polled instead.)
    let on_master = master.command(&["GET", &key]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while replica.command(&["GET", &key]).unwrap() != on_master {
        assert!(Instant::now() < deadline, "the replica never got {key}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        replica.integer(&["PTTL", &key]) > 0,
        "the key expires on the replica too"
    );

    // The failover: the master is gone, the replica promoted.
    master.stop();
    let promoted = replica.command(&["REPLICAOF", "NO", "ONE"]).unwrap();
    assert!(promoted.starts_with("+OK"), "{promoted}");
    let connection = connect(&replica.url(), "f:", RedisModule::Auto).await;
    assert!(connection.decides_in_module());
    let store = RedisStore::new(&connection, rule(), "login").unwrap();
    assert!(
        allowed(&store, "alice").await,
        "four of five were used before the failover"
    );
    let sixth = store.decide("alice", 1, Mode::Record).await.unwrap();
    assert!(
        !sixth.decision.allowed,
        "the promoted replica holds every count"
    );
    let wait = sixth.decision.retry_after.duration().unwrap();
    assert!(
        wait > Duration::from_secs(700) && wait <= Duration::from_secs(720),
        "{wait:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_without_the_module_is_decided_by_the_scripts_unless_the_module_is_required() {
    let server = RedisServer::start();
    let rule = || Rule::new(Algorithm::FixedWindow, "2/h".parse().unwrap());
    let auto = connect(&server.url(), "a:", RedisModule::Auto).await;
    assert!(!auto.decides_in_module());
    let store = RedisStore::new(&auto, rule(), "r").unwrap();
    assert!(allowed(&store, "k").await);

    let required = connect(&server.url(), "a:", RedisModule::On).await;
    let store = RedisStore::new(&required, rule(), "r").unwrap();
    let err = store.decide("k", 1, Mode::Record).await.unwrap_err();
    assert!(err.to_string().contains("LIMITS.DECIDE"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_unloaded_under_the_store_hands_its_keys_to_the_scripts() {
    let server = RedisServer::start_with_module(&["--enable-module-command", "yes"]);
    let connection = connect(&server.url(), "u:", RedisModule::Auto).await;
    assert!(connection.decides_in_module());
    let rule = Rule::new(Algorithm::SlidingWindow, "3/h".parse().unwrap());
    let store = RedisStore::new(&connection, rule, "r").unwrap();
    for _ in 0..2 {
        assert!(allowed(&store, "k").await);
    }
    let unloaded = server.command(&["MODULE", "UNLOAD", "limits"]).unwrap();
    assert!(unloaded.starts_with("+OK"), "{unloaded}");
    assert!(
        allowed(&store, "k").await,
        "answered by the script, not an error"
    );
    assert!(!connection.decides_in_module());
    assert!(
        !allowed(&store, "k").await,
        "the module's two counts are the script's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_decided_by_the_module_and_after_an_unload_by_the_scripts() {
    let server = RedisServer::start_with_module(&["--enable-module-command", "yes"]);
    let connection = connect(&server.url(), "b:", RedisModule::Auto).await;
    let stores: Vec<RedisStore> = MODULE_DECIDES
        .iter()
        .map(|&algorithm| {
            let rule = Rule::new(algorithm, "2/h; 3/d".parse().unwrap());
            RedisStore::new(&connection, rule, algorithm.name()).unwrap()
        })
        .collect();
    let keys = ["ann", "bob", "cy"];
    let batch = || {
        let asks = keys.iter().flat_map(|key| asks(&stores, key, Mode::Record));
        asks.collect::<Vec<_>>()
    };
    let allowed = |answers: Vec<Result<limits::Verdict, limits::StoreError>>| {
        answers
            .into_iter()
            .map(|a| a.unwrap().decision.allowed)
            .collect::<Vec<_>>()
    };
    let every = stores.len() * keys.len();
    assert_eq!(
        allowed(RedisStore::decide_batch(&batch()).await),
        vec![true; every]
    );
    assert_eq!(
        calls_of(&server, "limits.decide"),
        every as u64,
        "each decision one LIMITS.DECIDE"
    );
    let unloaded = server.command(&["MODULE", "UNLOAD", "limits"]).unwrap();
    assert!(unloaded.starts_with("+OK"), "{unloaded}");
    // Answered by the scripts, on the counts the module kept.
    assert_eq!(
        allowed(RedisStore::decide_batch(&batch()).await),
        vec![true; every]
    );
    assert!(!connection.decides_in_module());
    // A third within the hour: the leaky bucket queues it (its burst is
    // the limit), the others deny it.
    let leaky = stores
        .iter()
        .map(|store| store.rule().algorithm() == Algorithm::LeakyBucket);
    let third: Vec<bool> = keys.iter().flat_map(|_| leaky.clone()).collect();
    assert_eq!(allowed(RedisStore::decide_batch(&batch()).await), third);
}

/// `calls=N` of `command` in `INFO commandstats` (0: none yet).
fn calls_of(server: &RedisServer, command: &str) -> u64 {
    let stats = server.command(&["INFO", "commandstats"]).unwrap();
    stats
        .lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:calls=")))
        .and_then(|rest| rest.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

/// Each store of `stores` asked for `key` at a cost of 1 in `mode`.
fn asks<'a>(stores: &'a [RedisStore], key: &'a str, mode: Mode) -> Vec<BatchDecision<'a>> {
    stores
        .iter()
        .map(|store| BatchDecision {
            store,
            client: None,
            key,
            cost: 1,
            value: None,
            mode,
        })
        .collect()
}

/// A request's rules in one call: the module's `LIMITS.REQUEST` answers
/// what the script answers, in order up to the first denial and all or
/// nothing, each call one command; the scripts' are another store's keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_s_rules_in_one_call_are_decided_by_the_module_as_by_the_scripts() {
    let server = RedisServer::start_with_module(&[]);
    let url = server.url();
    let scripts = connect(&url, "s:", RedisModule::Off).await;
    let module = connect(&url, "m:", RedisModule::On).await;
    let rules = [
        (Algorithm::SlidingLog, "3/h; 5/d"),
        (Algorithm::TokenBucket, "2/h"),
        (Algorithm::FixedWindow, "4/h"),
    ];
    let stores = |connection: &RedisConnection| -> Vec<RedisStore> {
        rules
            .iter()
            .map(|(algorithm, rates)| {
                let rule = Rule::new(*algorithm, rates.parse().unwrap());
                RedisStore::new(connection, rule, algorithm.name()).unwrap()
            })
            .collect()
    };
    let (by_script, by_module) = (stores(&scripts), stores(&module));
    let timeless = |answers: Vec<Result<limits::Verdict, limits::StoreError>>| {
        let answers = answers.into_iter().map(|a| {
            let verdict = a.unwrap();
            let per_rate = verdict
                .per_rate
                .iter()
                .map(|d| (d.allowed, d.remaining, d.retry_after.is_never()));
            per_rate.collect::<Vec<_>>()
        });
        answers.collect::<Vec<_>>()
    };
    let evalsha = calls_of(&server, "evalsha");
    for round in 0..4 {
        let modes = [Mode::Record, Mode::RecordAlways, Mode::Peek];
        for mode in modes {
            let until = limits::Until::Denied;
            let expected = RedisStore::decide_in_order(&asks(&by_script, "k", mode), until).await;
            let answered = RedisStore::decide_in_order(&asks(&by_module, "k", mode), until).await;
            assert_eq!(
                timeless(answered),
                timeless(expected),
                "in order, round {round}, {mode:?}"
            );
            let expected =
                RedisStore::decide_all_or_nothing(&asks(&by_script, "k", mode), false).await;
            let answered =
                RedisStore::decide_all_or_nothing(&asks(&by_module, "k", mode), false).await;
            assert_eq!(
                timeless(answered),
                timeless(expected),
                "all or nothing, round {round}, {mode:?}"
            );
        }
    }
    assert_eq!(
        calls_of(&server, "limits.request"),
        24,
        "one call a request"
    );
    // The scripts' store's; once more for the script Redis did not have yet.
    let by_scripts = calls_of(&server, "evalsha") - evalsha;
    assert!((24..=25).contains(&by_scripts), "{by_scripts}");
}

/// A Redis full under `maxmemory` refuses the module's writes as it
/// refuses a script's: the store's own kind of failure, not an outage;
/// a decision that writes nothing (a denial) is still answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_redis_refuses_the_module_s_writes_as_a_script_s_and_still_denies() {
    let server =
        RedisServer::start_with_module(&["--maxmemory", "3mb", "--maxmemory-policy", "noeviction"]);
    let connection = connect(&server.url(), "o:", RedisModule::On).await;
    let rule = Rule::new(Algorithm::TokenBucket, "3/min".parse().unwrap());
    let store = RedisStore::new(&connection, rule, "full").unwrap();
    for _ in 0..3 {
        assert!(allowed(&store, "used").await);
    }
    assert!(
        server.fill_until_oom() > 0,
        "some values fit before it is full"
    );
    assert!(
        !allowed(&store, "used").await,
        "a denial writes nothing: answered"
    );
    let err = store.decide("fresh", 1, Mode::Record).await.unwrap_err();
    assert_eq!(err.kind, limits::StoreErrorKind::Full, "{err}");
    assert!(
        connection.is_healthy(),
        "Redis answered: the circuit stays closed"
    );
    server.command(&["FLUSHALL"]).unwrap();
    assert!(allowed(&store, "fresh").await);
    assert_eq!(calls_of(&server, "evalsha"), 0);
}

/// A sliding log whose limit lets its ring grow past a few hundred
/// entries is left to its script, which reads a few of them where the
/// module reads them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_sliding_log_is_left_to_its_script() {
    let server = RedisServer::start_with_module(&[]);
    let connection = connect(&server.url(), "l:", RedisModule::On).await;
    let log = |rates: &str| {
        let rule = Rule::new(Algorithm::SlidingLog, rates.parse().unwrap());
        RedisStore::new(&connection, rule, rates).unwrap()
    };
    let (short, long) = (log("512/h"), log("10/s; 1000/h"));
    for _ in 0..3 {
        assert!(allowed(&short, "k").await);
        assert!(allowed(&long, "k").await);
    }
    assert_eq!(calls_of(&server, "limits.decide"), 3);
    assert!(calls_of(&server, "evalsha") >= 3);
}

#[test]
fn the_module_names_a_bad_argument() {
    let server = RedisServer::start_with_module(&[]);
    let cases = [
        (
            "k smoothed-rate '' 1 1 0 1 5 1000000 0",
            "not smoothed-rate",
        ),
        (
            "k sliding-log '' 1 1 0 2 5 1000000 0 9 9000000 0",
            "keeps 2 keys; 1 given",
        ),
        ("k token-bucket '' 1 3 0 1 5 1000000 0", "the mode is 0"),
        (
            "k token-bucket '' x 1 0 1 5 1000000 0",
            "the cost is a whole number",
        ),
        (
            "k token-bucket '' 1 1 0 2 5 1000000 0",
            "limit of rate 2 is missing",
        ),
        ("k token-bucket '' 1 1 0 1 0 1000000 0", "rate 1"),
    ];
    for (args, expected) in cases {
        let mut command = vec!["LIMITS.DECIDE"];
        command.extend(args.split(' ').map(|a| if a == "''" { "" } else { a }));
        let reply = server.command(&command).unwrap();
        assert!(
            reply.starts_with('-') && reply.contains(expected),
            "{args}: {reply}"
        );
    }
}

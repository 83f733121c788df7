//! Sentinel: `redis+sentinel://HOST:PORT/MASTER` finds the master through
//! a real `redis-server --sentinel`, and follows it when the master is
//! replaced under a load of decisions: made to fail over
//! (`SENTINEL FAILOVER`), or killed.
//!
//! What a failover may admit beyond the limit: Redis replicates
//! asynchronously, and a forced failover promotes the replica while the old
//! master still answers as a master, until the sentinels name the new one
//! (and the store, watching them, moves within a probe interval). A
//! request admitted on the old master in that gap is not counted on the
//! new one: it may be admitted again there. A killed master loses only the
//! writes it had not yet sent to the replica; while no master answers, the
//! outage policy answers (here [`Fallback::Error`]: the caller's, which
//! admits nothing). A key whose count reached the replica before the switch
//! admits nothing more, during or after it.
//!
//! The same over TLS (`rediss+sentinel://`): sentinels, master and replica
//! all on TLS ports (`tls-replication yes`), the store reaching each with
//! the test's CA. And sentinels with a password of their own, apart from
//! the master's.

use crate::redis_server;
use crate::tls_pki::{make_pki, tls_args, tls_server_on, Pki};

use limits::{Algorithm, Mode, Rule, Store};
use limits_redis::{Fallback, RedisConnection, RedisOptions, RedisStore, TlsFiles};
use redis_server::{free_port, RedisServer};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MASTER: &str = "mymaster";

fn options() -> RedisOptions {
    RedisOptions {
        timeout: Duration::from_millis(200),
        probe_interval: Duration::from_millis(100),
        // Every decision goes to Redis: a locally remembered denial would
        // hide what the switch does.
        deny_cache: 0,
        on_error: Fallback::Error,
        ..RedisOptions::default()
    }
}

/// Whether `store` admits (and records) one more request on the key "k".
async fn records(store: &RedisStore) -> bool {
    let verdict = store.decide("k", 1, Mode::Record).await;
    verdict.unwrap().decision.allowed
}

/// A store at `url` admits one request and denies the next, its key in
/// `master`'s database `db`.
async fn limits_in(url: &str, master: &RedisServer, db: u32) {
    let conn = RedisConnection::connect(url, options()).await.unwrap();
    let rule = Rule::new(Algorithm::SlidingLog, "1/h".parse().unwrap());
    let store = RedisStore::new(&conn, rule, "sentinel").unwrap();
    assert!(records(&store).await);
    assert!(!records(&store).await);
    let keyspace = master.command(&["INFO", "keyspace"]).unwrap();
    assert!(keyspace.contains(&format!("db{db}:keys=1")), "{keyspace}");
}

/// Polls `check` every 50 ms until it holds, for at most `limit`.
fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A master, its replica (in sync) and a sentinel that knows both; over
/// TLS with `pki`'s certificates, each on a TLS port beside its plain one
/// (the test's own commands), replicating and watched over TLS.
struct Topology {
    master: RedisServer,
    replica: RedisServer,
    sentinel: RedisServer,
    /// The ports the store reaches them on (TLS ones, with `pki`).
    master_port: u16,
    replica_port: u16,
    /// The store's URL and options.
    url: String,
    options: RedisOptions,
}

fn topology(pki: Option<&Pki>) -> Topology {
    let tls_port = || pki.map(|_| free_port());
    let node = |port: Option<u16>, extra: &[&str]| match (pki, port) {
        (Some(pki), Some(port)) => {
            let mut args = vec!["--tls-replication", "yes"];
            args.extend_from_slice(extra);
            tls_server_on(pki, port, &args)
        }
        _ => RedisServer::start_with(extra),
    };
    let master_tls = tls_port();
    let master = node(master_tls, &[]);
    let master_port = master_tls.unwrap_or(master.port);
    let replica_tls = tls_port();
    let replica = node(
        replica_tls,
        &["--replicaof", "127.0.0.1", &master_port.to_string()],
    );
    let replica_port = replica_tls.unwrap_or(replica.port);
    wait_for("the replica in sync", Duration::from_secs(10), || {
        replica
            .command(&["INFO", "replication"])
            .is_ok_and(|info| info.contains("master_link_status:up"))
    });
    let (sentinel, sentinel_port) = match pki {
        Some(pki) => {
            let port = free_port();
            let mut args = tls_args(pki, port);
            args.extend(["--tls-replication".to_owned(), "yes".to_owned()]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let sentinel = RedisServer::start_sentinel_with(MASTER, master_port, 1000, &args);
            (sentinel, port)
        }
        None => {
            let sentinel = RedisServer::start_sentinel(MASTER, master_port, 1000);
            let port = sentinel.port;
            (sentinel, port)
        }
    };
    let replica_named = replica_port.to_string();
    wait_for(
        "the sentinel to know the replica",
        Duration::from_secs(20),
        || {
            sentinel
                .command(&["SENTINEL", "REPLICAS", MASTER])
                .is_ok_and(|r| r.contains(&replica_named) && !r.contains("disconnected"))
        },
    );
    let scheme = if pki.is_some() { "rediss" } else { "redis" };
    Topology {
        master,
        replica,
        sentinel,
        master_port,
        replica_port,
        url: format!("{scheme}+sentinel://127.0.0.1:{sentinel_port}/{MASTER}"),
        options: RedisOptions {
            tls: TlsFiles {
                ca_file: pki.map(|pki| pki.ca.clone()),
                ..TlsFiles::default()
            },
            ..options()
        },
    }
}

/// The port the sentinel names as the master's.
fn master_port(sentinel: &RedisServer) -> Option<u16> {
    let reply = sentinel
        .command(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER])
        .ok()?;
    reply.lines().rev().find_map(|l| l.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_finds_the_master_through_the_sentinel_with_its_password() {
    let master = RedisServer::start_with(&["--requirepass", "s3cret"]);
    let sentinel = {
        // The sentinel itself needs the master's password to watch it.
        let sentinel = RedisServer::start_sentinel(MASTER, master.port, 1000);
        let set = sentinel
            .command(&["SENTINEL", "SET", MASTER, "auth-pass", "s3cret"])
            .unwrap();
        assert!(set.starts_with("+OK"), "{set}");
        sentinel
    };
    let url = format!(
        "redis+sentinel://:s3cret@127.0.0.1:{}/{MASTER}/4",
        sentinel.port
    );
    limits_in(&url, &master, 4).await;

    let wrong = format!(
        "redis+sentinel://:nope@127.0.0.1:{}/{MASTER}",
        sentinel.port
    );
    let err = RedisConnection::connect(&wrong, options())
        .await
        .unwrap_err()
        .to_string();
    assert!(!err.contains("nope"), "{err}");
    assert!(err.contains("redis+sentinel://:***@"), "{err}");

    let unknown = format!(
        "redis+sentinel://127.0.0.1:{}/no-such-master",
        sentinel.port
    );
    assert!(RedisConnection::connect(&unknown, options()).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinels_with_a_password_of_their_own_take_it_from_the_url_apart_from_the_masters() {
    let master = RedisServer::start_with(&["--requirepass", "m4ster"]);
    let sentinel =
        RedisServer::start_sentinel_with(MASTER, master.port, 1000, &["--requirepass", "s3ntinel"]);
    let set = sentinel
        .command(&["SENTINEL", "SET", MASTER, "auth-pass", "m4ster"])
        .unwrap();
    assert!(set.starts_with("+OK"), "{set}");
    let at = format!("127.0.0.1:{}/{MASTER}", sentinel.port);

    let url = format!("redis+sentinel://:m4ster@{at}/2?sentinel_password=s3ntinel");
    limits_in(&url, &master, 2).await;
    // An ACL user of the sentinels: the default one, named.
    let url =
        format!("redis+sentinel://:m4ster@{at}?sentinel_user=default&sentinel_password=s3ntinel");
    assert!(RedisConnection::connect(&url, options()).await.is_ok());

    // The sentinels refuse a URL without their password, or with the
    // master's; neither password is ever shown.
    for url in [
        format!("redis+sentinel://:m4ster@{at}"),
        format!("redis+sentinel://:m4ster@{at}?sentinel_password=m4ster"),
        format!("redis+sentinel://:m4ster@{at}?sentinel_password=n0pe"),
    ] {
        let err = RedisConnection::connect(&url, options())
            .await
            .unwrap_err()
            .to_string();
        assert!(!err.contains("m4ster") && !err.contains("n0pe"), "{err}");
        assert!(err.contains("redis+sentinel://:***@"), "{err}");
        assert!(err.contains("authentication failed"), "{err}");
    }
    let err =
        RedisConnection::connect(&format!("redis+sentinel://{at}?sentinel_pass=x"), options())
            .await
            .unwrap_err()
            .to_string();
    assert!(err.contains("unknown parameter \"sentinel_pass\""), "{err}");
}

/// The scripts the store ran on `server` itself (a replica receives a
/// script's effects, not the script).
fn scripts_run(server: &RedisServer) -> u64 {
    let stats = server.command(&["INFO", "commandstats"]).unwrap();
    stats
        .lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .filter_map(|l| {
            l.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// What the load saw.
#[derive(Default)]
struct Seen {
    /// Requests admitted on the key that was full before the switch.
    full_admitted: AtomicU64,
    /// Requests admitted on the key with room to spare.
    busy_admitted: AtomicU64,
    /// Of those, the ones admitted after the failover was asked for.
    busy_admitted_in_switch: AtomicU64,
    errors: AtomicU64,
    decided: AtomicU64,
    /// When a call last failed.
    last_error: Mutex<Option<Instant>>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_failover_under_load_admits_nothing_past_a_full_limit_and_recovers_within_seconds()
{
    // The old master stays up and keeps answering as a master until the
    // sentinel demotes it: only watching the sentinel moves the store.
    failover_under_load(false, topology(None)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_master_under_load_admits_nothing_past_a_full_limit_and_recovers_within_seconds()
{
    // Calls fail until the sentinel judges the master down and promotes
    // the replica: the outage policy answers them meanwhile.
    failover_under_load(true, topology(None)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_a_forced_failover_under_load_admits_nothing_past_a_full_limit_and_recovers_within_seconds(
) {
    // The sentinel and both data nodes speak TLS only to the store; the
    // store finds the new master's TLS port through the sentinel.
    let pki = make_pki("sentinel", &["127.0.0.1"]);
    failover_under_load(false, topology(Some(&pki))).await;
}

/// A load of decisions on two keys while the master is replaced: made to
/// fail over by the sentinel, or killed (`crash`).
async fn failover_under_load(crash: bool, topology: Topology) {
    let Topology {
        mut master,
        replica,
        sentinel,
        master_port: old_master_port,
        replica_port,
        url,
        options,
    } = topology;
    assert_eq!(master_port(&sentinel), Some(old_master_port));
    let conn = RedisConnection::connect(&url, options).await.unwrap();
    let limit = 50;
    let full = Arc::new(
        RedisStore::new(
            &conn,
            Rule::new(Algorithm::SlidingLog, format!("{limit}/d").parse().unwrap()),
            "full",
        )
        .unwrap(),
    );
    let busy_limit = 1_000_000;
    let busy = Arc::new(
        RedisStore::new(
            &conn,
            Rule::new(
                Algorithm::SlidingLog,
                format!("{busy_limit}/d").parse().unwrap(),
            ),
            "busy",
        )
        .unwrap(),
    );
    for _ in 0..limit {
        assert!(records(&full).await);
    }
    assert!(!records(&full).await);
    // The full count on the replica before the switch.
    let acked = master.integer(&["WAIT", "1", "5000"]);
    assert_eq!(acked, 1, "the replica acknowledged the writes");

    let seen = Arc::new(Seen::default());
    let switching = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let mut load = Vec::new();
    for _ in 0..4 {
        let (full, busy, seen) = (full.clone(), busy.clone(), seen.clone());
        let (switching, stop) = (switching.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                for (store, is_full) in [(&full, true), (&busy, false)] {
                    seen.decided.fetch_add(1, Ordering::Relaxed);
                    match store.decide("k", 1, Mode::Record).await {
                        Ok(v) if v.decision.allowed && is_full => {
                            seen.full_admitted.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(v) if v.decision.allowed => {
                            seen.busy_admitted.fetch_add(1, Ordering::Relaxed);
                            if switching.load(Ordering::Relaxed) {
                                seen.busy_admitted_in_switch.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Ok(_) => {}
                        Err(_) => {
                            seen.errors.fetch_add(1, Ordering::Relaxed);
                            *seen.last_error.lock().unwrap() = Some(Instant::now());
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    switching.store(true, Ordering::Relaxed);
    let asked = Instant::now();
    let sentinel = if crash {
        master.stop();
        sentinel
    } else {
        tokio::task::spawn_blocking(move || {
            wait_for(
                "SENTINEL FAILOVER accepted",
                Duration::from_secs(15),
                || {
                    sentinel
                        .command(&["SENTINEL", "FAILOVER", MASTER])
                        .is_ok_and(|r| r.starts_with("+OK"))
                },
            );
            sentinel
        })
        .await
        .unwrap()
    };
    let _sentinel = tokio::task::spawn_blocking(move || {
        wait_for(
            "the sentinel names the replica",
            Duration::from_secs(30),
            || master_port(&sentinel) == Some(replica_port),
        );
        sentinel
    })
    .await
    .unwrap();
    let switched = asked.elapsed();

    // Service is back when the store decides on the new master and no
    // call has failed for a second.
    let mut moved = None;
    let back = loop {
        if moved.is_none() && scripts_run(&replica) > 0 {
            moved = Some(asked.elapsed());
        }
        let last = *seen.last_error.lock().unwrap();
        let quiet_since = last.unwrap_or(asked);
        if let Some(moved) = moved {
            if quiet_since.elapsed() > Duration::from_secs(1) {
                break moved.max(quiet_since.duration_since(asked));
            }
        }
        assert!(
            asked.elapsed() < Duration::from_secs(30),
            "calls still failing 30 s after the failover"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    stop.store(true, Ordering::Relaxed);
    for task in load {
        task.await.unwrap();
    }

    let role = replica.command(&["ROLE"]).unwrap();
    assert!(role.contains("master"), "the replica was promoted: {role}");
    assert!(
        scripts_run(&replica) > 0,
        "the store runs its scripts on the new master"
    );
    let decided_before = seen.decided.load(Ordering::Relaxed);
    let verdict = busy.decide("k", 1, Mode::Record).await.unwrap();
    assert!(verdict.decision.allowed);
    assert!(
        replica.integer(&["DBSIZE"]) >= 2,
        "the store writes to the promoted replica"
    );
    let counted = busy_limit
        - busy
            .decide("k", 1, Mode::Peek)
            .await
            .unwrap()
            .decision
            .remaining;
    // Admitted by the load and by the check just above.
    let admitted = seen.busy_admitted.load(Ordering::Relaxed) + 1;
    let lost = admitted.saturating_sub(counted);
    let in_switch = seen.busy_admitted_in_switch.load(Ordering::Relaxed);
    eprintln!(
        "failover (crash: {crash}): sentinel switched after {switched:?}, the store on the new master after {moved:?}, calls answered again {back:?} after the failover was asked; {} decisions, {} failed; {admitted} admitted on the busy key, {counted} counted on the new master ({lost} lost, {in_switch} admitted after the failover was asked)",
        decided_before,
        seen.errors.load(Ordering::Relaxed),
    );

    assert_eq!(
        seen.full_admitted.load(Ordering::Relaxed),
        0,
        "a limit reached before the switch admits nothing during or after it"
    );
    assert!(!records(&full).await);
    assert!(
        back < Duration::from_secs(5),
        "calls answered again {back:?} after the failover was asked"
    );
    assert!(
        lost <= in_switch,
        "only requests admitted during the switch may be lost ({lost} lost, {in_switch} admitted in the switch)"
    );
    drop(master);
}

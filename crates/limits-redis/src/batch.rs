//! Many decisions in one round trip: every decision of a batch that Redis
//! must make is sent in one pipeline (one write, one read for Redis), or on
//! a Redis Cluster one pipeline per node, the nodes in parallel.
//!
//! A batch is what a caller with several independent decisions to make at
//! once has (a rate limit call of several descriptors): sent one by one,
//! they would cost one round trip each. Redis runs the scripts of a
//! pipeline one after the other, each as it would alone, so every decision
//! is the one [`Store::decide_from`](limits::Store::decide_from) would
//! have made, recorded the same way; only the waiting is shared. The
//! multiplexed connection may also join commands issued together into one
//! write, but only when its writer runs after all of them are queued, which
//! nothing guarantees on a multi-threaded runtime: the pipeline does.
//!
//! A batch can also be all or nothing
//! ([`RedisStore::decide_all_or_nothing`]): a request whose decisions
//! record only if every one admits, in one script call that decides them
//! all (`all_or_nothing.lua`, every limiter's script as a function). The
//! same call decides a request's decisions one after the other, up to the
//! first denied ([`Store::decide_in_order`](limits::Store::decide_in_order)):
//! an HTTP request's rules, which stop at the first that denies.

use crate::connection::RedisConnection;
use crate::link::Conn;
use crate::module;
use crate::scripts::{Lua, ALL_OR_NOTHING};
use crate::slots::{key_slot, SlotMap};
use crate::store::RedisStore;
use crate::store::{module_or_script, DecisionCommand};
use limits::{Asked, Mode, Store, StoreError, Until, Verdict};
use redis::aio::ConnectionLike;
use redis::cluster_routing::{Route, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, ErrorKind, RedisError, RedisResult, ServerErrorKind, Value};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// One decision of a batch ([`RedisStore::decide_batch`]): what
/// [`Store::decide_from`](limits::Store::decide_from) takes, and the store
/// that decides it.
pub type BatchDecision<'a> = Asked<'a, RedisStore>;

/// A decision Redis must make: its place in the batch, its command and
/// its key's cluster slot.
struct Pending {
    index: usize,
    decision: DecisionCommand,
    slot: u16,
}

impl RedisStore {
    /// Decides each of `decisions` exactly as
    /// [`Store::decide_from`](limits::Store::decide_from) would, in the
    /// same order of answers, in one round trip per connection (one per
    /// node of a cluster, in parallel) instead of one per decision: what
    /// the store answers at once (the deny cache, the local fallback while
    /// Redis is down, the cap on new keys, a rule of `none`) is answered
    /// without Redis; the rest is sent together. Stores on different
    /// connections are asked one connection after the other.
    ///
    /// A batch fails as a whole when Redis cannot be reached (each
    /// decision is then answered by its store's fallback, or the error);
    /// a decision Redis refuses (full, a script error) fails alone.
    pub async fn decide_batch(decisions: &[BatchDecision<'_>]) -> Vec<Result<Verdict, StoreError>> {
        let mut answers: Vec<Option<Result<Verdict, StoreError>>> = Vec::new();
        let mut pending = Vec::new();
        for (index, d) in decisions.iter().enumerate() {
            let at_once = d
                .store
                .answered_at_once(d.client, d.key, d.cost, d.mode, true);
            let answer = match at_once {
                Some(verdict) => Some(Ok(verdict)),
                None => match d.store.command(d.key, None, d.cost, d.mode) {
                    Some(decision) => {
                        pending.push(Pending {
                            index,
                            decision,
                            slot: d.store.slot(d.key).unwrap_or(0),
                        });
                        None
                    }
                    None => Some(Ok(d.store.stateless(d.cost, d.mode))),
                },
            };
            answers.push(answer);
        }
        while let Some(first) = pending.first() {
            let connection = &decisions[first.index].store;
            let (group, rest): (Vec<Pending>, Vec<Pending>) = pending
                .into_iter()
                .partition(|p| decisions[p.index].store.same_connection(connection));
            pending = rest;
            let sent = Instant::now();
            let replies = connection.connection().pipelined(&group).await;
            for (p, reply) in group.iter().zip(replies) {
                let d = &decisions[p.index];
                let answer = reply.and_then(|packed| d.store.answer(&packed, d.mode));
                answers[p.index] = Some(d.store.answered(answer, sent, d.key, d.cost, d.mode));
            }
        }
        answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| Err(StoreError::new("a batched decision was not made"))))
            .collect()
    }
}

impl RedisStore {
    /// Decides `decisions` (a request's) all or nothing: when every one
    /// admits, each records as [`decide_batch`](Self::decide_batch) would
    /// record it; when any is denied, none of the admitted ones records
    /// (each answers what a peek answers), and a denied one records what
    /// its own mode records of a denial ([`Mode::RecordAlways`]: counted).
    ///
    /// Whether each admits is asked of the state the request found, each
    /// decision on its own (two decisions of one key are each looked at
    /// without the other's hits, then recorded in turn). On one Redis (or
    /// Sentinel's master), or a cluster when every key is in one slot, the
    /// whole request is one script call, one atomic step of Redis. A
    /// denial answered without Redis (the deny cache, the cap on new keys)
    /// makes the rest only look. Otherwise (keys in several slots of a
    /// cluster, or stores on several connections), it takes two batches,
    /// one to look and one to record, and is not atomic: a call between
    /// them may change what the second finds, which then decides exactly
    /// as [`decide_batch`](Self::decide_batch) does.
    ///
    /// `refused`: the request is refused already (by a decision made
    /// elsewhere): nothing admitted records.
    pub async fn decide_all_or_nothing(
        decisions: &[BatchDecision<'_>],
        refused: bool,
    ) -> Vec<Result<Verdict, StoreError>> {
        let mut answers: Vec<Option<Result<Verdict, StoreError>>> = Vec::new();
        let mut refused_at_once = false;
        for d in decisions {
            let at_once = d
                .store
                .answered_at_once(d.client, d.key, d.cost, d.mode, true);
            refused_at_once |= at_once.as_ref().is_some_and(|v| !v.decision.allowed);
            answers.push(at_once.map(Ok));
        }
        let places: Vec<usize> = (0..decisions.len())
            .filter(|&i| answers[i].is_none())
            .collect();
        let rest: Vec<BatchDecision<'_>> = places.iter().map(|&i| decisions[i]).collect();
        let decided = if refused || refused_at_once {
            in_two_batches(&rest, true).await
        } else if rest.len() == 1 {
            // One decision alone is its own all or nothing.
            RedisStore::decide_batch(&rest).await
        } else {
            match in_one_call(&rest, Driver::AllOrNothing).await {
                Some(decided) => decided,
                None => in_two_batches(&rest, false).await,
            }
        };
        for (i, answer) in places.into_iter().zip(decided) {
            answers[i] = Some(answer);
        }
        let mut answers: Vec<Result<Verdict, StoreError>> = answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| Err(StoreError::new("a batched decision was not made"))))
            .collect();
        if refused || !answers.iter().all(admitted) {
            // The admitted ones answered a look: they recorded nothing to settle.
            for verdict in answers.iter_mut().flatten() {
                verdict.decided_at = None;
            }
        }
        answers
    }
}

impl RedisStore {
    /// [`Store::decide_in_order`](limits::Store::decide_in_order) on Redis
    /// stores: the first decision as
    /// [`decide_from`](limits::Store::decide_from) makes it, with the ones
    /// after it that Redis alone decides
    /// ([`asks_only_redis`](RedisStore::asks_only_redis)) on its connection,
    /// in its slot on a cluster, in one script call.
    pub(crate) async fn decide_together(
        decisions: &[BatchDecision<'_>],
        until: Until,
    ) -> Vec<Result<Verdict, StoreError>> {
        let Some(first) = decisions.first() else {
            return Vec::new();
        };
        let (store, key, cost, mode) = (first.store, first.key, first.cost, first.mode);
        if let Some(value) = first.value {
            return vec![Store::decide_value(store, first.client, key, value, mode).await];
        }
        if let Some(verdict) = store.answered_at_once(first.client, key, cost, mode, true) {
            return vec![Ok(verdict)];
        }
        let joining = decisions[1..].iter().take_while(|d| {
            d.store.same_connection(store)
                && d.value.is_none()
                && d.store.asks_only_redis(d.client, d.key, d.cost, d.mode)
        });
        let together = in_one_slot(&decisions[..1 + joining.count()]);
        if together.len() > 1 {
            if let Some(answers) = in_one_call(together, Driver::InOrder(until)).await {
                return answers;
            }
        }
        vec![store.ask_redis(key, cost, mode).await]
    }
}

/// The first of `decisions` whose keys are in the first one's cluster slot
/// (all of them on one Redis): a cluster refuses a script's keys in
/// several slots.
fn in_one_slot<'d, 'a>(decisions: &'d [BatchDecision<'a>]) -> &'d [BatchDecision<'a>] {
    let Some(first) = decisions.first() else {
        return decisions;
    };
    if !matches!(first.store.connection().conn.get(), Some(Conn::Cluster(_))) {
        return decisions;
    }
    let mut slot = None;
    let same = decisions.iter().take_while(|d| match d.store.slot(d.key) {
        // `none` keeps no state: it goes with any slot.
        None => true,
        Some(s) => *slot.get_or_insert(s) == s,
    });
    let n = same.count();
    &decisions[..n.max(1)]
}

/// How `all_or_nothing.lua` decides a request's decisions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Driver {
    /// Every one looks; all record only if all admit.
    AllOrNothing,
    /// One after the other, up to the first one `Until` stops at.
    InOrder(Until),
}

impl Driver {
    /// The script's first argument.
    fn arg(self) -> &'static str {
        match self {
            Driver::AllOrNothing => "all-or-nothing",
            Driver::InOrder(Until::Denied) => "until-denied",
            Driver::InOrder(Until::Failed) => "until-failed",
        }
    }
}

/// Whether a decision admitted.
fn admitted(answer: &Result<Verdict, StoreError>) -> bool {
    matches!(answer, Ok(verdict) if verdict.decision.allowed)
}

/// `decisions` in one script call, as `driver` decides them, when they can
/// be: all on one connection, and on a cluster all in one slot; `None`
/// (nothing sent) when they cannot. The answers of those decided, in order,
/// each remembered or answered by its store's fallback as when it decides
/// alone.
async fn in_one_call(
    decisions: &[BatchDecision<'_>],
    driver: Driver,
) -> Option<Vec<Result<Verdict, StoreError>>> {
    let first = decisions.first()?.store;
    if !decisions.iter().all(|d| d.store.same_connection(first)) {
        return None;
    }
    let mut calls = Vec::with_capacity(decisions.len());
    for d in decisions {
        match d.store.script_call(d.key, None, d.cost, d.mode) {
            Some(call) => calls.push(Some(call)),
            // `none` needs no Redis and always admits.
            None => calls.push(None),
        }
    }
    let connection = first.connection();
    let mut slots = calls
        .iter()
        .flatten()
        .flat_map(|c| &c.keys)
        .map(|k| key_slot(k.as_bytes()));
    let one_slot = match slots.next() {
        Some(slot) => slots.all(|s| s == slot),
        None => true,
    };
    if matches!(connection.conn.get(), Some(Conn::Cluster(_))) && !one_slot {
        return None;
    }
    let mut command = redis::cmd("EVALSHA");
    let keys: Vec<&String> = calls.iter().flatten().flat_map(|c| &c.keys).collect();
    let sending = calls.iter().flatten().count();
    if sending == 0 {
        let stateless = decisions
            .iter()
            .map(|d| Ok(d.store.stateless(d.cost, d.mode)));
        return Some(driver.answered(stateless));
    }
    command
        .arg(ALL_OR_NOTHING.script.get_hash())
        .arg(keys.len())
        .arg(keys)
        .arg(driver.arg())
        .arg(sending);
    for call in calls.iter().flatten() {
        let args: Vec<&[u8]> = call.argv().collect();
        command
            .arg(call.script.script.get_hash())
            .arg(call.keys.len())
            .arg(args.len())
            .arg(args);
    }
    // The module decides them all, or the script does.
    let in_module = decisions
        .iter()
        .zip(&calls)
        .all(|(d, call)| call.is_none() || d.store.in_module());
    let module_request = in_module.then(|| {
        let asked: Vec<module::Asked<'_>> = decisions
            .iter()
            .zip(&calls)
            .filter_map(|(d, call)| Some(call.as_ref()?.in_module(d.store)))
            .collect();
        module::request(&asked, driver.arg())
    });
    // `calls` counts decisions sent; `run` counts the call as one.
    let (calls_sent, more) = (&connection.health.calls, decisions.len().saturating_sub(1));
    let sent = Instant::now();
    let request = DecisionCommand {
        script: &ALL_OR_NOTHING,
        script_command: command,
        module_command: module_request,
    };
    let replies: Result<Vec<Value>, StoreError> = connection
        .run(|conn| {
            calls_sent.fetch_add(more as u64, Ordering::Relaxed);
            module_or_script(conn, connection, request)
        })
        .await;
    // All or nothing answers every decision sent; in order, at least one.
    let whole = match driver {
        Driver::AllOrNothing => sending..=sending,
        Driver::InOrder(_) => 1..=sending,
    };
    let mut replies = match replies {
        Ok(replies) if whole.contains(&replies.len()) => replies.into_iter(),
        Ok(_) => {
            let e = StoreError::new(
                "Redis's answers to a request's decisions are not one per decision",
            );
            return Some(driver.answered(decisions.iter().map(|_| Err(e.clone()))));
        }
        Err(e) => {
            let failed = decisions.iter().map(|d| {
                d.store
                    .answered(Err(e.clone()), sent, d.key, d.cost, d.mode)
            });
            return Some(driver.answered(failed));
        }
    };
    // A decision after the last one answered was not decided: in order, the
    // script stops at a failure (its error is the last answer) or a denial.
    let answered = decisions
        .iter()
        .zip(&calls)
        .map_while(|(d, call)| match call {
            Some(_) => {
                let answer = connection.decision_answer(failed_in_script(replies.next()?));
                let answer = answer.and_then(|packed| d.store.answer(&packed, d.mode));
                Some(d.store.answered(answer, sent, d.key, d.cost, d.mode))
            }
            None => Some(Ok(d.store.stateless(d.cost, d.mode))),
        });
    Some(driver.answered(answered))
}

impl Driver {
    /// `answers` (made as they are taken) up to the first one the driver
    /// stops at: none before the end all or nothing.
    fn answered(
        self,
        answers: impl Iterator<Item = Result<Verdict, StoreError>>,
    ) -> Vec<Result<Verdict, StoreError>> {
        let mut taken = Vec::new();
        for answer in answers {
            let stops = matches!(self, Driver::InOrder(until) if until.stops_after(&answer));
            taken.push(answer);
            if stops {
                break;
            }
        }
        taken
    }
}

/// `decisions` all or nothing in two batches: one that looks, then one that
/// records what the looks say records (nothing admitted if `refused`).
async fn in_two_batches(
    decisions: &[BatchDecision<'_>],
    refused: bool,
) -> Vec<Result<Verdict, StoreError>> {
    let looks: Vec<BatchDecision<'_>> = decisions
        .iter()
        .map(|d| BatchDecision {
            mode: Mode::Peek,
            ..*d
        })
        .collect();
    let looked = RedisStore::decide_batch(&looks).await;
    let every_one = !refused && looked.iter().all(admitted);
    let again: Vec<usize> = (0..decisions.len())
        .filter(|&i| {
            decisions[i]
                .mode
                .decides_after_looks(every_one, admitted(&looked[i]))
        })
        .collect();
    let asks: Vec<BatchDecision<'_>> = again.iter().map(|&i| decisions[i]).collect();
    let mut answers = looked;
    for (i, answer) in again.into_iter().zip(RedisStore::decide_batch(&asks).await) {
        answers[i] = answer;
    }
    answers
}

impl RedisConnection {
    /// Sends `batch` in one pipeline (one per node of a cluster) through the
    /// circuit and the timeout: each command's answer, or why it has none.
    async fn pipelined(&self, batch: &[Pending]) -> Vec<Result<Vec<u8>, StoreError>> {
        // `calls` counts decisions sent, however they are grouped: `run`
        // counts the batch as one, when it sends it.
        let more = batch.len().saturating_sub(1) as u64;
        let (slots, calls) = (&self.slots, &self.health.calls);
        let replies = self
            .run(|conn| async move {
                calls.fetch_add(more, Ordering::Relaxed);
                let replies = match &conn {
                    Conn::Single(_) | Conn::Sentinel(_) => send_single(&conn, batch).await?,
                    Conn::Cluster(cluster) => {
                        let map = match slots.get() {
                            Some(map) => map,
                            None => slots.set(slot_map(cluster.clone()).await?),
                        };
                        send_per_node(cluster, batch, &map).await?
                    }
                };
                again(conn, batch, replies, self).await
            })
            .await;
        let replies = match replies {
            Ok(replies) => replies,
            Err(e) => return batch.iter().map(|_| Err(e.clone())).collect(),
        };
        let accepted = replies.iter().any(Result::is_ok);
        let answers = replies
            .into_iter()
            .map(|reply| self.decision_answer(reply))
            .collect();
        if accepted {
            self.writes_accepted();
        }
        answers
    }

    /// Redis's answer to one decision of several sent together: the
    /// script's packed answer, or the error Redis answered it with (counted
    /// as [`refused`](Self::refused) counts it).
    fn decision_answer(&self, reply: RedisResult<Value>) -> Result<Vec<u8>, StoreError> {
        match reply {
            Ok(value) => redis::from_redis_value::<Vec<u8>>(value)
                .map_err(|e| StoreError::new(format!("Redis answered a decision with {e}"))),
            Err(e) => Err(self.refused(&e).unwrap_or_else(|| {
                self.health.errors.fetch_add(1, Ordering::Relaxed);
                StoreError::new(format!("Redis: {e}"))
            })),
        }
    }
}

/// The batch in one pipeline to one Redis.
async fn send_single(conn: &Conn, batch: &[Pending]) -> RedisResult<Vec<RedisResult<Value>>> {
    let mut pipeline = redis::pipe();
    for p in batch {
        pipeline.add_command(p.decision.sent().clone());
    }
    let values = conn
        .clone()
        .req_packed_commands(&pipeline, 0, batch.len())
        .await?;
    Ok(values.into_iter().map(reply).collect())
}

/// The batch in one pipeline per node of the cluster, sent in parallel.
/// A node that cannot be reached fails the batch.
async fn send_per_node(
    cluster: &redis::cluster_async::ClusterConnection,
    batch: &[Pending],
    map: &SlotMap,
) -> RedisResult<Vec<RedisResult<Value>>> {
    // (node, the first command's slot, the commands' places in the batch)
    let mut groups: Vec<(Option<usize>, u16, Vec<usize>)> = Vec::new();
    for (i, p) in batch.iter().enumerate() {
        let slot = p.slot;
        let node = map.node_of(slot);
        match groups.iter_mut().find(|g| node.is_some() && g.0 == node) {
            Some(group) => group.2.push(i),
            None => groups.push((node, slot, vec![i])),
        }
    }
    let mut sends = tokio::task::JoinSet::new();
    for (g, (_, slot, members)) in groups.iter().enumerate() {
        let mut pipeline = redis::pipe();
        for &i in members {
            pipeline.add_command(batch[i].decision.sent().clone());
        }
        let mut cluster = cluster.clone();
        // Routed by the first command's slot: redis-rs's own view of the
        // cluster picks the node, and a command of a slot that node does
        // not hold is redirected and sent again (`again`).
        let route = SingleNodeRoutingInfo::SpecificNode(Route::new(*slot, SlotAddr::Master));
        let count = members.len();
        sends.spawn(async move { (g, cluster.route_pipeline(pipeline, 0, count, route).await) });
    }
    let mut replies: Vec<Option<RedisResult<Value>>> = batch.iter().map(|_| None).collect();
    while let Some(sent) = sends.join_next().await {
        let (g, values) = sent.map_err(|e| {
            RedisError::from(std::io::Error::other(format!(
                "a cluster pipeline's task: {e}"
            )))
        })?;
        for (&i, value) in groups[g].2.iter().zip(values?) {
            replies[i] = Some(reply(value));
        }
    }
    Ok(replies
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(RedisError::from((
                    ErrorKind::Parse,
                    "no answer in the pipeline",
                )))
            })
        })
        .collect())
}

/// Which node holds which slot, asked of the cluster.
async fn slot_map(mut cluster: redis::cluster_async::ClusterConnection) -> RedisResult<SlotMap> {
    let answer: Value = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut cluster)
        .await?;
    // A map that cannot be read groups nothing: each command goes alone,
    // routed by redis-rs, as without a batch.
    Ok(SlotMap::parse(&answer).unwrap_or_default())
}

/// A pipeline's answer to one command: its value, or the error Redis
/// answered.
fn reply(value: Value) -> RedisResult<Value> {
    match value {
        Value::ServerError(e) => Err(e.into()),
        value => Ok(value),
    }
}

/// A decision's answer in `all_or_nothing.lua`'s reply: its packed
/// answer, or (a table of one text) the error it failed with, as Redis
/// would have answered it alone.
fn failed_in_script(value: Value) -> RedisResult<Value> {
    let Value::Array(error) = value else {
        return Ok(value);
    };
    let text = match error.first() {
        Some(Value::BulkString(text)) => String::from_utf8_lossy(text).replace(['\r', '\n'], " "),
        _ => String::from("an error without text"),
    };
    redis::parse_redis_value(format!("-{text}\r\n").as_bytes()).and_then(reply)
}

/// The commands Redis could not run where they were sent, sent again: a
/// script Redis has forgotten (a restart, `SCRIPT FLUSH`) loaded first, in
/// the same pipeline as the commands that need it on one Redis (each
/// command alone on a cluster, where a load goes to every primary), a
/// slot the cluster moved followed, the slot map read again by the next
/// batch, and the module's command that Redis does not know sent as the
/// script's.
async fn again(
    mut conn: Conn,
    batch: &[Pending],
    mut replies: Vec<RedisResult<Value>>,
    connection: &RedisConnection,
) -> RedisResult<Vec<RedisResult<Value>>> {
    let mut missing: Vec<&'static Lua> = Vec::new();
    let mut resend: Vec<(usize, &Cmd)> = Vec::new();
    for (i, (p, reply)) in batch.iter().zip(&replies).enumerate() {
        let Err(e) = reply else { continue };
        let decision = &p.decision;
        match e.kind() {
            ErrorKind::Server(ServerErrorKind::NoScript) => {
                if !missing.iter().any(|s| std::ptr::eq(*s, decision.script)) {
                    missing.push(decision.script);
                }
            }
            ErrorKind::Server(
                ServerErrorKind::Moved
                | ServerErrorKind::Ask
                | ServerErrorKind::TryAgain
                | ServerErrorKind::ClusterDown
                | ServerErrorKind::CrossSlot,
            ) => connection.slots.forget(),
            _ => match decision.instead_of_module(e, connection) {
                Some(script) => {
                    // Its script may not be loaded either: loaded first.
                    if !missing.iter().any(|s| std::ptr::eq(*s, decision.script)) {
                        missing.push(decision.script);
                    }
                    resend.push((i, script));
                    continue;
                }
                None => continue,
            },
        }
        resend.push((i, decision.sent()));
    }
    if resend.is_empty() {
        return Ok(replies);
    }
    if let Conn::Single(_) | Conn::Sentinel(_) = conn {
        let mut pipeline = redis::pipe();
        for script in &missing {
            pipeline.add_command(script.load_command());
        }
        for (_, command) in &resend {
            pipeline.add_command((*command).clone());
        }
        let values = conn
            .req_packed_commands(&pipeline, 0, pipeline.len())
            .await?;
        for ((i, _), value) in resend.iter().zip(values.into_iter().skip(missing.len())) {
            replies[*i] = reply(value);
        }
        return Ok(replies);
    }
    for script in missing {
        script.script.load_async(&mut conn).await?;
    }
    for (i, command) in resend {
        replies[i] = command.query_async::<Value>(&mut conn).await;
    }
    Ok(replies)
}

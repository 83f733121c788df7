//! The one way a store changes an item: read it with its CAS token, decide
//! what to write, write only if no one wrote it meanwhile, and read again
//! while someone did, up to a bound.

use crate::client::MemcachedClient;
use crate::meta::{Item, Write, Written};
use limits::StoreError;

/// What a read-modify-write writes: the new value and its TTL.
pub(crate) struct Change {
    pub value: Vec<u8>,
    pub ttl: u64,
}

/// Reads the item `item_key` (of the caller's `key`, for messages) with its
/// CAS token, asks `change` for the answer and what to write (nothing, or a
/// new value), and writes it only if no one wrote the item meanwhile (a
/// new key: only if there is still none); while another writer comes
/// between, reads and asks again, up to
/// [`max_attempts`](crate::MemcachedOptions::max_attempts). The outer
/// error: memcached did not answer (or said it is full); the inner one: it
/// answered, and the change still failed (other writers every time, an
/// item that is no state of the store's).
pub(crate) async fn read_modify_write<T>(
    client: &MemcachedClient,
    item_key: &str,
    key: &str,
    mut change: impl FnMut(Option<Item>) -> Result<(T, Option<Change>), StoreError>,
) -> Result<Result<T, StoreError>, StoreError> {
    let server = client.server_of(item_key);
    let attempts = client.options().max_attempts.max(1);
    client
        .exchange(server, async |lease| {
            for _ in 0..attempts {
                let connection = lease.connection();
                let found = connection.get(item_key).await?;
                let how = found.as_ref().map_or(Write::Add, |item| Write::Cas(item.cas));
                let (answer, write) = match change(found) {
                    Ok(changed) => changed,
                    Err(e) => return Ok(Err(e)),
                };
                let Some(Change { value, ttl }) = write else {
                    return Ok(Ok(answer));
                };
                match connection.set(item_key, &value, ttl, how).await? {
                    Written::Stored => return Ok(Ok(answer)),
                    Written::Conflict => client.count_retry(),
                }
            }
            client.count_gave_up();
            Ok(Err(StoreError::new(format!(
                "memcached {}: the item of key {key:?} changed under {attempts} attempts in a row (other writers); nothing was recorded",
                server.addr()
            ))))
        })
        .await
}

//! The read cache: the rendered JSON of recently read databases and dashboards, so that a `GET`
//! by id of a record read before answers without a storage read, decoding or rendering.
//!
//! It is only correct for a service that is the **only writer** of its storage (one process on
//! a redb file, the memory store): every write goes through this service, which invalidates
//! what it touched once the write has returned, before the writer is answered. Nodes sharing a
//! PostgreSQL store see each other's writes only through the store, so they run without it.
//!
//! A read that raced a write must not put what it read back after the write's invalidation. The
//! cache has a generation that every invalidation advances; a read takes a [`Ticket`] (the
//! generation) before it asks the storage, and its answer is kept only if no invalidation came
//! in between. Both happen under one lock, so no reader can see a stale entry after the
//! invalidation that ends a write.

use std::future::Future;
use std::sync::{Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use lru::LruCache;

use super::conditional::{IfNoneMatch, etag, not_modified_response};
use super::error::ApiError;
use super::params::Params;
use super::response::{ResponseBody, json_bytes_response};
use crate::model::Timestamp;
use crate::storage::StorageError;

/// A record as a `GET` answers it: its JSON and its `ETag`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Rendered {
    pub(crate) body: Bytes,
    pub(crate) etag: HeaderValue,
}

impl Rendered {
    fn size(&self) -> usize {
        self.body.len() + self.etag.len()
    }
}

/// What an entry is the rendering of: a record's kind and id, owned (`String`, what a write
/// invalidates) or borrowed (`&str`, what a read looks up, without an allocation).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum CacheKey<S = String> {
    /// A database by id.
    Database(S),
    /// A dashboard by id.
    Dashboard(S),
}

impl<S: AsRef<str>> CacheKey<S> {
    fn id(&self) -> &str {
        match self {
            Self::Database(id) | Self::Dashboard(id) => id.as_ref(),
        }
    }

    /// Its entry's key: a letter for the kind, then the id.
    fn text(&self) -> String {
        let mut text = String::with_capacity(1 + self.id().len());
        text.push(self.tag());
        text.push_str(self.id());
        text
    }

    fn tag(&self) -> char {
        match self {
            Self::Database(_) => 'd',
            Self::Dashboard(_) => 'b',
        }
    }

    /// `f` of its entry's key, put together on the stack when the id is short (ids are).
    fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        let id = self.id();
        let mut buffer = [0u8; 64];
        let Some(rest) = buffer.get_mut(1..=id.len()) else {
            return f(&self.text());
        };
        rest.copy_from_slice(id.as_bytes());
        buffer[0] = self.tag() as u8;
        // An ASCII letter, then a whole `str`: text, always (the other arm is never taken).
        match std::str::from_utf8(&buffer[..=id.len()]) {
            Ok(text) => f(text),
            Err(_) => f(&self.text()),
        }
    }
}

impl CacheKey {
    /// What an endpoint that `writes` may have changed, once it has returned, given its path
    /// parameters: `None` for nothing cached, `Some(None)` for records not known by id (setup
    /// and removal by `api_id`).
    pub(crate) fn written(writes: Writes, params: &Params<'_>) -> Option<Option<Self>> {
        match writes {
            Writes::Nothing => None,
            Writes::Database => Some(Some(Self::Database(params.get("id").to_owned()))),
            Writes::Dashboard => Some(Some(Self::Dashboard(params.get("id").to_owned()))),
            Writes::SomeDatabase => Some(None),
        }
    }
}

/// What an endpoint may change in the read cache (and in the query pools), once answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Writes {
    /// Nothing that is cached: reads, creates (a new id), sub-resources (not part of a
    /// record's rendering).
    Nothing,
    /// The database of its `{id}`.
    Database,
    /// The dashboard of its `{id}`.
    Dashboard,
    /// Databases not known by id (setup and removal by `api_id`).
    SomeDatabase,
}

/// Bytes an entry is counted for beyond its body and id: the key, the list links, the `Bytes`.
const ENTRY_OVERHEAD: usize = 96;

/// A bounded cache of rendered records, evicting the least recently used beyond its budget.
#[derive(Debug)]
pub(crate) struct ReadCache {
    budget: usize,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    generation: u64,
    bytes: usize,
    /// By [`CacheKey::text`].
    entries: LruCache<String, Rendered>,
}

/// Taken before a storage read; the read's answer is cached only if nothing was invalidated
/// since.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ticket(u64);

impl ReadCache {
    /// A cache holding at most `budget` bytes of entries (`None` for 0: no cache).
    pub(crate) fn new(budget: usize) -> Option<Self> {
        (budget > 0).then(|| Self {
            budget,
            state: Mutex::new(State {
                generation: 0,
                bytes: 0,
                entries: LruCache::unbounded(),
            }),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The state is consistent after every statement that holds the lock: a panic elsewhere
        // cannot leave it half-changed.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cached rendering of `key`, if any.
    pub(crate) fn get<S: AsRef<str>>(&self, key: &CacheKey<S>) -> Option<Rendered> {
        key.with_text(|text| self.state().entries.get(text).cloned())
    }

    /// The ticket of a read about to start.
    pub(crate) fn ticket(&self) -> Ticket {
        Ticket(self.state().generation)
    }

    /// Keeps `body` as the rendering of `key`, read under `ticket`, unless something was
    /// invalidated since the ticket was taken (the read may have seen the record before a write
    /// that has been answered since) or it alone exceeds the budget.
    pub(crate) fn insert<S: AsRef<str>>(&self, ticket: Ticket, key: &CacheKey<S>, body: Rendered) {
        let key = key.text();
        let size = entry_size(&key, &body);
        if size > self.budget {
            return;
        }
        let mut state = self.state();
        if state.generation != ticket.0 {
            return;
        }
        if let Some(old) = state.entries.put(key.clone(), body) {
            state.bytes -= entry_size(&key, &old);
        }
        state.bytes += size;
        while state.bytes > self.budget {
            let Some((key, body)) = state.entries.pop_lru() else {
                break;
            };
            state.bytes -= entry_size(&key, &body);
        }
    }

    /// Forgets `key` (or everything, for `None`: a write whose record is not known by id), and
    /// refuses the answers of reads started before. Called once a write has returned, whether
    /// it succeeded or not, and before its caller is answered.
    pub(crate) fn invalidate(&self, key: Option<&CacheKey>) {
        let mut state = self.state();
        state.generation += 1;
        match key {
            Some(key) => {
                let key = key.text();
                if let Some(body) = state.entries.pop(&key) {
                    state.bytes -= entry_size(&key, &body);
                }
            }
            None => {
                state.entries.clear();
                state.bytes = 0;
            }
        }
    }

    /// How many bytes the entries are counted for (at most the budget).
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.state().bytes
    }
}

/// `GET` of one record: the cached rendering, or the record `read` from the storage (404
/// when it is missing) rendered as JSON by `render` with the `ETag` of its `version`, kept
/// for the next `GET`. 304 when the request's `If-None-Match` names that `ETag` (400 when
/// it is not entity tags).
pub(crate) async fn read_through<T, R>(
    cache: Option<&ReadCache>,
    key: CacheKey<&str>,
    headers: &HeaderMap,
    read: impl FnOnce() -> R,
    render: impl FnOnce(&T) -> serde_json::Result<Bytes>,
    version: impl FnOnce(&T) -> Timestamp,
) -> Result<Response<ResponseBody>, ApiError>
where
    // Made only on a miss: a storage's read may allocate its future at once.
    R: Future<Output = Result<Option<T>, StorageError>>,
{
    let if_none_match = IfNoneMatch::of(headers)?;
    let rendered = match cache.and_then(|cache| cache.get(&key)) {
        Some(rendered) => rendered,
        None => {
            let ticket = cache.map(ReadCache::ticket);
            let record = read().await?.ok_or(ApiError::NotFound)?;
            let body = render(&record).map_err(|error| {
                tracing::error!(%error, "response did not serialize");
                ApiError::Internal
            })?;
            let rendered = Rendered {
                body,
                etag: etag(version(&record)),
            };
            if let (Some(cache), Some(ticket)) = (cache, ticket) {
                cache.insert(ticket, &key, rendered.clone());
            }
            rendered
        }
    };
    if if_none_match.is_some_and(|condition| condition.matches(&rendered.etag)) {
        return Ok(not_modified_response(rendered.etag));
    }
    let mut response = json_bytes_response(StatusCode::OK, rendered.body);
    response.headers_mut().insert(header::ETAG, rendered.etag);
    Ok(response)
}

fn entry_size(key: &str, rendered: &Rendered) -> usize {
    key.len() + rendered.size() + ENTRY_OVERHEAD
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(id: &str) -> CacheKey {
        CacheKey::Database(id.to_owned())
    }

    /// A rendering of these bytes.
    fn json(body: impl Into<Bytes>) -> Rendered {
        Rendered {
            body: body.into(),
            etag: HeaderValue::from_static("\"1\""),
        }
    }

    #[test]
    fn keeps_what_was_read_and_forgets_what_was_written() {
        let cache = ReadCache::new(1 << 20).unwrap();
        let ticket = cache.ticket();
        cache.insert(ticket, &db("a"), json(&b"{\"a\":1}"[..]));
        cache.insert(ticket, &CacheKey::Dashboard("a"), json(&b"{}"[..]));
        assert_eq!(cache.get(&db("a")).unwrap().body, &b"{\"a\":1}"[..]);
        cache.invalidate(Some(&db("a")));
        assert!(cache.get(&db("a")).is_none());
        assert!(cache.get(&CacheKey::Dashboard("a")).is_some());
        cache.invalidate(None);
        assert!(cache.get(&CacheKey::Dashboard("a")).is_none());
        assert_eq!(cache.bytes(), 0);
    }

    #[test]
    fn a_borrowed_key_finds_what_its_owned_key_names_short_or_long() {
        let cache = ReadCache::new(1 << 20).unwrap();
        for id in ["db_01", &"x".repeat(200)] {
            cache.insert(cache.ticket(), &CacheKey::Database(id), json(&b"{}"[..]));
            assert!(cache.get(&CacheKey::Database(id)).is_some(), "{id}");
            assert!(cache.get(&CacheKey::Database(id.to_owned())).is_some());
            assert!(cache.get(&CacheKey::Dashboard(id)).is_none(), "kinds apart");
            cache.invalidate(Some(&CacheKey::Database(id.to_owned())));
            assert!(cache.get(&CacheKey::Database(id)).is_none(), "{id}");
        }
    }

    #[test]
    fn a_read_that_raced_a_write_is_not_kept() {
        let cache = ReadCache::new(1 << 20).unwrap();
        let before_write = cache.ticket();
        // The write returns and invalidates while the read is in flight…
        cache.invalidate(Some(&db("a")));
        // …so what the read saw (possibly the record before the write) is dropped.
        cache.insert(before_write, &db("a"), json(&b"old"[..]));
        assert!(cache.get(&db("a")).is_none());
        // A read started after the write is kept.
        cache.insert(cache.ticket(), &db("a"), json(&b"new"[..]));
        assert_eq!(cache.get(&db("a")).unwrap().body, &b"new"[..]);
    }

    #[test]
    fn stays_within_its_budget_evicting_the_least_recently_used() {
        let body = json(vec![b'x'; 1000]);
        let one = entry_size(&db("0").text(), &body);
        let cache = ReadCache::new(3 * one).unwrap();
        for id in ["0", "1", "2"] {
            cache.insert(cache.ticket(), &db(id), body.clone());
        }
        assert!(cache.get(&db("0")).is_some()); // now the most recently used
        cache.insert(cache.ticket(), &db("3"), body.clone());
        assert!(
            cache.get(&db("1")).is_none(),
            "the least recently used goes"
        );
        for id in ["0", "2", "3"] {
            assert!(cache.get(&db(id)).is_some(), "{id} stays");
        }
        assert_eq!(cache.bytes(), 3 * one);
        // An entry larger than the whole budget is not kept, and evicts nothing.
        cache.insert(cache.ticket(), &db("big"), json(vec![b'x'; 4 * one]));
        assert!(cache.get(&db("big")).is_none());
        assert_eq!(cache.bytes(), 3 * one);
        assert!(ReadCache::new(0).is_none());
    }
}

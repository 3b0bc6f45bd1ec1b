//! Rate limits (protocol.md section 3): at most `limit` requests per key in any window of one
//! minute, checked and counted atomically, never failing open, in bounded memory.
//!
//! Why not a GCRA crate such as `governor`: GCRA with a burst of 30 and one cell every 2 s lets
//! 59 requests through in the first minute, while the protocol promises "30 a minute" (the 31st
//! within any minute is refused), and its keyed store grows with every distinct key until it is
//! purged. This is a sliding log: each key keeps the times of its admitted requests in the last
//! window (at most `limit` of them), so the answer is exact.
//!
//! Memory: at most [`MAX_KEYS`] keys, spread over shards. When a shard is full, keys whose
//! requests have all left the window are dropped; if none has, a request from a new key is
//! refused (never admitted uncounted) until one leaves. A flood of distinct addresses therefore
//! costs bounded memory, and IPv6 clients are keyed by their /64, the block one subscriber holds.

use std::collections::VecDeque;
use std::collections::hash_map::{Entry, HashMap};
use std::hash::{BuildHasher, Hash, RandomState};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use licensing_core::store::StoreError;
use warp::http::{HeaderMap, HeaderValue};

use crate::store::shared::{SharedCounters, Window};

/// Keys a limiter tracks at most.
pub const MAX_KEYS: usize = 100_000;
/// Shards (independent locks) per limiter.
const SHARDS: usize = 16;
/// The window.
pub const WINDOW: Duration = Duration::from_secs(60);

/// The limiter's answer for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateStatus {
    /// Requests allowed per window.
    pub limit: u32,
    /// Requests left in the current window, after this one.
    pub remaining: u32,
    /// Seconds until every counted request has left the window (`remaining` back to `limit`).
    pub reset_secs: u64,
    /// Set when the request is refused: seconds until one more request is allowed.
    pub retry_after_secs: Option<u64>,
}

impl RateStatus {
    /// Whether the request may proceed.
    pub fn allowed(&self) -> bool {
        self.retry_after_secs.is_none()
    }

    /// The 429 of a refused check: "Too many {what}: at most N a minute{per}; retry in S s",
    /// with when to retry and where the caller stands in the window.
    pub fn refusal(&self, what: &str, per: &str) -> licensing_core::ApiError {
        let retry = self.retry_after_secs.unwrap_or(1);
        licensing_core::ApiError::new(
            licensing_core::api::ResultCode::RateLimit,
            format!(
                "Too many {what}: at most {} a minute{per}; retry in {retry} s",
                self.limit,
            ),
        )
        .retry_after_secs(retry)
        .in_window(self.window())
    }

    /// Where the caller stands in the window, as an error carries it.
    pub fn window(&self) -> licensing_core::RateWindow {
        licensing_core::RateWindow {
            limit: self.limit,
            remaining: self.remaining,
            reset_secs: self.reset_secs,
        }
    }

    /// Sets the `X-RateLimit-*` headers, and `Retry-After` when refused.
    pub fn apply(&self, headers: &mut HeaderMap) {
        headers.insert("x-ratelimit-limit", HeaderValue::from(self.limit));
        headers.insert("x-ratelimit-remaining", HeaderValue::from(self.remaining));
        headers.insert("x-ratelimit-reset", HeaderValue::from(self.reset_secs));
        if let Some(secs) = self.retry_after_secs {
            headers.insert(warp::http::header::RETRY_AFTER, HeaderValue::from(secs));
        }
    }
}

struct Shard<K> {
    /// Per key, the admitted requests' times (ms since the limiter's epoch), oldest first.
    logs: HashMap<K, VecDeque<u64>>,
    /// While full and nothing can be purged: the time (ms) at which the first log empties.
    full_until: u64,
}

/// A sliding-window limiter over keys of type `K`.
pub struct RateLimiter<K> {
    /// Counters shared by every instance; `None`: this process's own.
    shared: Option<Shared>,
    limit: u32,
    window_ms: u64,
    cap_per_shard: usize,
    epoch: Instant,
    hasher: RandomState,
    shards: Box<[Mutex<Shard<K>>]>,
}

impl<K> std::fmt::Debug for RateLimiter<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("limit", &self.limit)
            .field("window_ms", &self.window_ms)
            .finish_non_exhaustive()
    }
}

fn ceil_secs(ms: u64) -> u64 {
    ms.div_ceil(1000)
}

impl<K: Hash + Eq + Clone> RateLimiter<K> {
    /// `limit` requests per [`WINDOW`] per key, or `None` for a limit of 0 (off).
    pub fn per_minute(limit: u32) -> Option<Self> {
        (limit > 0).then(|| Self::new(limit, WINDOW, MAX_KEYS))
    }

    /// A limiter with any window and key capacity (tests use small ones).
    pub fn new(limit: u32, window: Duration, max_keys: usize) -> Self {
        let shards = (0..SHARDS)
            .map(|_| {
                Mutex::new(Shard {
                    logs: HashMap::new(),
                    full_until: 0,
                })
            })
            .collect();
        Self {
            shared: None,
            limit: limit.max(1),
            window_ms: u64::try_from(window.as_millis()).unwrap_or(u64::MAX).max(1),
            cap_per_shard: max_keys.div_ceil(SHARDS).max(1),
            epoch: Instant::now(),
            hasher: RandomState::new(),
            shards,
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn shard(&self, key: &K) -> &Mutex<Shard<K>> {
        let index = (self.hasher.hash_one(key) as usize) % self.shards.len();
        &self.shards[index]
    }

    /// Checks a request of `key` and, when allowed, counts it (in this process).
    pub fn check_local(&self, key: &K) -> RateStatus {
        let now = self.now_ms();
        self.check_at(key, now)
    }

    /// The status of `key` without counting a request (in this process).
    pub fn peek_local(&self, key: &K) -> RateStatus {
        let now = self.now_ms();
        let Ok(mut shard) = self.shard(key).lock() else {
            return self.refusal(now + 1000, now);
        };
        match shard.logs.get_mut(key) {
            Some(log) => {
                self.expire(log, now);
                self.status(log, now, None)
            }
            None => RateStatus {
                limit: self.limit,
                remaining: self.limit,
                reset_secs: 0,
                retry_after_secs: None,
            },
        }
    }

    /// The refusal `key` would get now, without counting anything: `Some` while its window is
    /// full. A key the limiter does not know is not blocked.
    pub fn blocked_local(&self, key: &K) -> Option<RateStatus> {
        let now = self.now_ms();
        let Ok(mut shard) = self.shard(key).lock() else {
            return Some(self.refusal(now + 1000, now));
        };
        let log = shard.logs.get_mut(key)?;
        self.expire(log, now);
        if log.len() < self.limit as usize {
            return None;
        }
        let oldest = log.front().copied().unwrap_or(now);
        Some(self.status(log, now, Some(oldest + self.window_ms)))
    }

    fn check_at(&self, key: &K, now: u64) -> RateStatus {
        // A poisoned lock (a panic while holding it) refuses: never fail open.
        let Ok(mut guard) = self.shard(key).lock() else {
            return self.refusal(now + 1000, now);
        };
        let shard = &mut *guard;
        if !shard.logs.contains_key(key) && shard.logs.len() >= self.cap_per_shard {
            if now < shard.full_until {
                return self.refusal(shard.full_until, now);
            }
            let window = self.window_ms;
            shard
                .logs
                .retain(|_, log| log.back().is_some_and(|&last| last + window > now));
            if shard.logs.len() >= self.cap_per_shard {
                let first_free = shard
                    .logs
                    .values()
                    .filter_map(|log| log.back())
                    .map(|&last| last + window)
                    .min()
                    .unwrap_or(now + 1000);
                shard.full_until = first_free;
                return self.refusal(first_free, now);
            }
        }
        let log = match shard.logs.entry(key.clone()) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(VecDeque::new()),
        };
        self.expire(log, now);
        if log.len() >= self.limit as usize {
            let oldest = log.front().copied().unwrap_or(now);
            return self.status(log, now, Some(oldest + self.window_ms));
        }
        log.push_back(now);
        self.status(log, now, None)
    }

    fn expire(&self, log: &mut VecDeque<u64>, now: u64) {
        while log.front().is_some_and(|&t| t + self.window_ms <= now) {
            log.pop_front();
        }
    }

    fn status(&self, log: &VecDeque<u64>, now: u64, refused_until: Option<u64>) -> RateStatus {
        let used = u32::try_from(log.len()).unwrap_or(u32::MAX);
        let reset = log
            .back()
            .map(|&last| (last + self.window_ms).saturating_sub(now))
            .unwrap_or(0);
        RateStatus {
            limit: self.limit,
            remaining: self.limit.saturating_sub(used),
            reset_secs: ceil_secs(reset),
            retry_after_secs: refused_until.map(|at| ceil_secs(at.saturating_sub(now)).max(1)),
        }
    }

    fn refusal(&self, until: u64, now: u64) -> RateStatus {
        let secs = ceil_secs(until.saturating_sub(now)).max(1);
        RateStatus {
            limit: self.limit,
            remaining: 0,
            reset_secs: secs,
            retry_after_secs: Some(secs),
        }
    }

    /// Keys currently tracked (for tests and metrics).
    pub fn tracked_keys(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().map(|s| s.logs.len()).unwrap_or(0))
            .sum()
    }
}

/// What a limiter's key is stored as in a shared counter.
pub trait LimitKey {
    /// The key's bytes.
    fn limit_key(&self) -> Vec<u8>;
}

impl LimitKey for u128 {
    fn limit_key(&self) -> Vec<u8> {
        self.to_be_bytes().to_vec()
    }
}

impl LimitKey for licensing_core::TeamId {
    fn limit_key(&self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }
}

impl LimitKey for (licensing_core::TeamId, licensing_core::LicenseKey) {
    fn limit_key(&self) -> Vec<u8> {
        let mut out = self.0.as_bytes().to_vec();
        out.extend_from_slice(self.1.as_str().as_bytes());
        out
    }
}

impl LimitKey for [u8; 32] {
    fn limit_key(&self) -> Vec<u8> {
        self.to_vec()
    }
}

/// The window of a status when the shared counters cannot be read.
const NO_WINDOW: Window = Window {
    start: 0,
    length: 0,
    weight: 0.0,
};

/// A limit's counters where every instance counts (see [`SharedCounters`]).
///
/// Instances share one count per key, so a limit means the same whether one or several
/// instances serve. The window slides as an estimate from two fixed windows: the current one's
/// count plus the previous one's weighted by how much of it still lies in the sliding window,
/// rounded up, so a burst across a window boundary is never admitted past the limit. The check
/// and the count are one atomic step that admits only while the estimate stays within the
/// limit, so concurrent requests through several instances are exact.
#[derive(Clone)]
struct Shared {
    counters: Arc<dyn SharedCounters>,
    name: &'static str,
    /// The window whose older counters were last removed.
    swept: Arc<std::sync::atomic::AtomicI64>,
}

impl Shared {
    /// The fixed window now counting.
    fn window(window_ms: u64) -> Window {
        let length = i64::try_from(window_ms).unwrap_or(i64::MAX).max(1);
        let now = licensing_core::Timestamp::now().as_millis();
        let start = now - now.rem_euclid(length);
        let weight = 1.0 - (now - start) as f64 / length as f64;
        Window {
            start,
            length,
            weight,
        }
    }

    fn status(limit: u32, used: f64, window: Window, refused: bool) -> RateStatus {
        let now = licensing_core::Timestamp::now().as_millis();
        let reset_ms = u64::try_from((window.start + window.length - now).max(0)).unwrap_or(0);
        let used = used.ceil() as u64;
        RateStatus {
            limit,
            remaining: u32::try_from(u64::from(limit).saturating_sub(used)).unwrap_or(0),
            reset_secs: ceil_secs(reset_ms),
            retry_after_secs: refused.then(|| ceil_secs(reset_ms).max(1)),
        }
    }

    /// Removes counters of windows before the previous one, once per window per instance.
    fn sweep(&self, window: Window) {
        use std::sync::atomic::Ordering;
        if self.swept.swap(window.start, Ordering::Relaxed) == window.start {
            return;
        }
        let (counters, name) = (self.counters.clone(), self.name);
        tokio::spawn(async move {
            if let Err(e) = counters.sweep(name, window.start - window.length).await {
                tracing::warn!(error = %e, "removing old rate-limit counters failed");
            }
        });
    }

    async fn check(&self, limit: u32, window_ms: u64, key: &[u8]) -> RateStatus {
        let window = Self::window(window_ms);
        self.sweep(window);
        match self.counters.admit(self.name, key, window, limit).await {
            Ok(Some(used)) => Self::status(limit, used, window, false),
            Ok(None) => Self::status(limit, f64::from(limit), window, true),
            Err(e) => {
                // Never fail open.
                tracing::error!(error = %e, limit = self.name, "a shared rate-limit check failed");
                Self::status(limit, f64::from(limit), window, true)
            }
        }
    }

    /// The estimate for `key` now, without counting.
    async fn used(&self, window_ms: u64, key: &[u8]) -> Result<(f64, Window), StoreError> {
        let window = Self::window(window_ms);
        let used = self.counters.estimate(self.name, key, window).await?;
        Ok((used, window))
    }
}

impl<K: Hash + Eq + Clone + LimitKey> RateLimiter<K> {
    /// Keeps this limit's counters in `counters`, under `name`, shared with every instance.
    pub fn shared(mut self, counters: Arc<dyn SharedCounters>, name: &'static str) -> Self {
        self.shared = Some(Shared {
            counters,
            name,
            swept: Arc::default(),
        });
        self
    }

    /// Checks a request of `key` and, when allowed, counts it.
    pub async fn check(&self, key: &K) -> RateStatus {
        match &self.shared {
            None => self.check_local(key),
            Some(shared) => {
                shared
                    .check(self.limit, self.window_ms, &key.limit_key())
                    .await
            }
        }
    }

    /// The status of `key` without counting a request.
    pub async fn peek(&self, key: &K) -> RateStatus {
        match &self.shared {
            None => self.peek_local(key),
            Some(shared) => match shared.used(self.window_ms, &key.limit_key()).await {
                Ok((used, window)) => Shared::status(self.limit, used, window, false),
                Err(_) => Shared::status(self.limit, f64::from(self.limit), NO_WINDOW, false),
            },
        }
    }

    /// The refusal `key` would get now, without counting anything: `Some` while its window is
    /// full.
    pub async fn blocked(&self, key: &K) -> Option<RateStatus> {
        match &self.shared {
            None => self.blocked_local(key),
            Some(shared) => match shared.used(self.window_ms, &key.limit_key()).await {
                Ok((used, window)) => (used >= f64::from(self.limit))
                    .then(|| Shared::status(self.limit, used, window, true)),
                Err(e) => {
                    tracing::error!(error = %e, "a shared rate-limit check failed");
                    let window = Window {
                        length: 1000,
                        ..NO_WINDOW
                    };
                    Some(Shared::status(
                        self.limit,
                        f64::from(self.limit),
                        window,
                        true,
                    ))
                }
            },
        }
    }
}

/// The limiter key of a client address: IPv4 addresses (also IPv4-mapped IPv6) as themselves,
/// IPv6 addresses by their /64.
pub fn ip_key(ip: IpAddr) -> u128 {
    match ip.to_canonical() {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6) & !((1u128 << 64) - 1),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn the_31st_within_a_window_is_refused_and_counts_are_exact() {
        let limiter = RateLimiter::new(30, WINDOW, 1000);
        for i in 0..30u32 {
            let s = limiter.check_at(&1u32, 1_000 + u64::from(i) * 1_000);
            assert!(s.allowed(), "request {i}");
            assert_eq!(s.remaining, 29 - i);
        }
        // Spread over 30 s, the 31st is still within a minute of the first: refused.
        let s = limiter.check_at(&1u32, 45_000);
        assert!(!s.allowed());
        assert_eq!(s.remaining, 0);
        // The first request (at 1 s) leaves the window at 61 s: 16 s from 45 s.
        assert_eq!(s.retry_after_secs, Some(16));
        // Refusals are not counted: one slot opens exactly when the first request leaves.
        assert!(!limiter.check_at(&1u32, 60_999).allowed());
        let s = limiter.check_at(&1u32, 61_000);
        assert!(s.allowed());
        assert_eq!(s.remaining, 0);
        // Other keys are independent.
        assert!(limiter.check_at(&2u32, 61_000).allowed());
    }

    #[test]
    fn peek_does_not_count() {
        let limiter = RateLimiter::new(2, WINDOW, 1000);
        assert_eq!(limiter.peek_local(&7u8).remaining, 2);
        assert!(limiter.check_local(&7u8).allowed());
        assert_eq!(limiter.peek_local(&7u8).remaining, 1);
        assert_eq!(limiter.peek_local(&7u8).remaining, 1);
        assert!(limiter.check_local(&7u8).allowed());
        assert!(!limiter.check_local(&7u8).allowed());
        let peeked = limiter.peek_local(&7u8);
        assert_eq!(peeked.remaining, 0);
        assert!(peeked.allowed());
    }

    #[test]
    fn blocked_reports_a_full_window_without_counting() {
        let limiter = RateLimiter::new(2, WINDOW, 1000);
        assert_eq!(limiter.blocked_local(&7u8), None);
        assert!(limiter.check_local(&7u8).allowed());
        assert_eq!(limiter.blocked_local(&7u8), None);
        assert!(limiter.check_local(&7u8).allowed());
        let blocked = limiter.blocked_local(&7u8).expect("full");
        assert!(!blocked.allowed());
        assert!(blocked.retry_after_secs.unwrap() >= 59);
        assert_eq!(
            limiter.blocked_local(&8u8),
            None,
            "another key is not blocked"
        );
    }

    #[test]
    fn concurrent_checks_admit_exactly_the_limit() {
        let limiter = Arc::new(RateLimiter::new(30, WINDOW, 1000));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let limiter = limiter.clone();
                std::thread::spawn(move || {
                    (0..20)
                        .filter(|_| limiter.check_local(&"one-ip").allowed())
                        .count()
                })
            })
            .collect();
        let admitted: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(admitted, 30);
    }

    #[test]
    fn a_flood_of_keys_stays_bounded_and_fails_closed() {
        let limiter = RateLimiter::new(5, WINDOW, 64);
        let mut refused = 0;
        for key in 0..10_000u32 {
            if !limiter.check_at(&key, 1_000).allowed() {
                refused += 1;
            }
        }
        assert!(limiter.tracked_keys() <= 64);
        assert!(refused >= 10_000 - 64);
        // A new key is refused while the table is full of live keys, with a Retry-After until
        // the first of them leaves the window...
        let s = limiter.check_at(&1_000_000, 30_000);
        assert_eq!(s.retry_after_secs, Some(31));
        // ...and admitted once they have left.
        assert!(limiter.check_at(&1_000_000, 61_000).allowed());
        assert!(limiter.tracked_keys() <= 64);
    }

    #[test]
    fn ipv6_clients_are_keyed_by_their_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(ip_key(a), ip_key(b));
        assert_ne!(ip_key(a), ip_key(c));
        let v4: IpAddr = "203.0.113.7".parse().unwrap();
        let mapped: IpAddr = "::ffff:203.0.113.7".parse().unwrap();
        assert_eq!(ip_key(v4), ip_key(mapped));
        assert_ne!(ip_key(v4), ip_key("203.0.113.8".parse().unwrap()));
    }
}

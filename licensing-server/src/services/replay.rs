//! Single use of classloader session keys (protocol.md section 2): a session key seen in the
//! last 15 minutes is refused.
//!
//! Keys are remembered by a fingerprint of the decrypted secret's derived AES key, not of the
//! ciphertext: RSA-OAEP is randomized, so one secret encrypted twice gives two ciphertexts, and
//! hex may be sent in either case. Fingerprints live in one-minute buckets; a bucket is dropped
//! when it leaves the 15 minutes. At most [`MAX_REMEMBERED`] fingerprints are held; when that
//! many were seen within 15 minutes, new session keys are refused (answered as a rate limit)
//! rather than accepted unremembered.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use licensing_core::crypto::SessionKey;
use sha2::{Digest, Sha256};

/// How long a session key stays used.
pub const REPLAY_WINDOW: Duration = Duration::from_secs(15 * 60);
/// Fingerprints held at most (16 bytes each; about 40 MiB with the sets' overhead when full).
pub const MAX_REMEMBERED: usize = 1_000_000;
/// Bucket length.
const BUCKET: Duration = Duration::from_secs(60);

/// Why a session key is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// It was used within the window.
    Reused,
    /// Too many session keys within the window to remember another one.
    Full,
}

#[derive(Debug)]
struct Buckets {
    /// (bucket number, fingerprints first seen in it), oldest first.
    buckets: VecDeque<(u64, HashSet<[u8; 16]>)>,
    len: usize,
}

/// The set of recently used session keys.
#[derive(Debug)]
pub struct SessionKeyLog {
    epoch: Instant,
    window: Duration,
    capacity: usize,
    inner: Mutex<Buckets>,
}

impl Default for SessionKeyLog {
    fn default() -> Self {
        Self::new(REPLAY_WINDOW, MAX_REMEMBERED)
    }
}

fn fingerprint(key: &SessionKey) -> [u8; 16] {
    let digest = Sha256::new()
        .chain_update(b"licensing session key\n")
        .chain_update(key.as_bytes())
        .finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest[..16]);
    out
}

impl SessionKeyLog {
    /// A log with any window and capacity (tests use small ones).
    pub fn new(window: Duration, capacity: usize) -> Self {
        Self {
            epoch: Instant::now(),
            window,
            capacity,
            inner: Mutex::new(Buckets {
                buckets: VecDeque::new(),
                len: 0,
            }),
        }
    }

    /// Marks `key` used, or refuses it.
    pub fn use_once(&self, key: &SessionKey) -> Result<(), Refused> {
        self.use_at(key, self.epoch.elapsed())
    }

    fn use_at(&self, key: &SessionKey, elapsed: Duration) -> Result<(), Refused> {
        let print = fingerprint(key);
        let now = bucket_of(elapsed);
        // Buckets strictly older than the window (rounded up to whole buckets) are dropped, so a
        // key is remembered at least `window`.
        let keep = self.window.as_secs().div_ceil(BUCKET.as_secs()) + 1;
        let mut inner = self.inner.lock().map_err(|_| Refused::Full)?;
        while inner.buckets.front().is_some_and(|(n, _)| n + keep <= now) {
            if let Some((_, set)) = inner.buckets.pop_front() {
                inner.len -= set.len();
            }
        }
        if inner.buckets.iter().any(|(_, set)| set.contains(&print)) {
            return Err(Refused::Reused);
        }
        if inner.len >= self.capacity {
            return Err(Refused::Full);
        }
        if inner.buckets.back().is_none_or(|(n, _)| *n != now) {
            inner.buckets.push_back((now, HashSet::new()));
        }
        if let Some((_, set)) = inner.buckets.back_mut() {
            set.insert(print);
        }
        inner.len += 1;
        Ok(())
    }

    /// Fingerprints held.
    pub fn len(&self) -> usize {
        self.inner.lock().map(|i| i.len).unwrap_or(0)
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn bucket_of(elapsed: Duration) -> u64 {
    elapsed.as_secs() / BUCKET.as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> SessionKey {
        SessionKey::from_bytes([n; 32])
    }

    #[test]
    fn a_key_is_used_once_within_the_window_and_forgotten_after() {
        let log = SessionKeyLog::default();
        let min = |m: u64| Duration::from_secs(m * 60);
        assert_eq!(log.use_at(&key(1), min(0)), Ok(()));
        assert_eq!(log.use_at(&key(1), min(0)), Err(Refused::Reused));
        assert_eq!(log.use_at(&key(1), min(14)), Err(Refused::Reused));
        assert_eq!(log.use_at(&key(1), min(15)), Err(Refused::Reused));
        assert_eq!(log.use_at(&key(2), min(15)), Ok(()));
        // Well past 15 minutes the first key's bucket is gone.
        assert_eq!(log.use_at(&key(1), min(17)), Ok(()));
        assert_eq!(log.len(), 2);
    }

    #[test]
    fn a_full_log_refuses_instead_of_forgetting() {
        let log = SessionKeyLog::new(REPLAY_WINDOW, 3);
        for n in 0..3 {
            assert_eq!(log.use_at(&key(n), Duration::ZERO), Ok(()));
        }
        assert_eq!(log.use_at(&key(9), Duration::ZERO), Err(Refused::Full));
        assert_eq!(log.use_at(&key(0), Duration::ZERO), Err(Refused::Reused));
        assert_eq!(log.use_at(&key(9), Duration::from_secs(20 * 60)), Ok(()));
        assert_eq!(log.len(), 1);
    }
}

//! The client API's events that no write carries: a refusal for a limit, a blacklist hit, a
//! license first seen past its expiry. A refused request writes nothing, and must not start a
//! disk write of its own (a flood of refused requests would become a flood of writes), so these
//! events gather in memory and a background task queues them in the store in batches, every
//! [`FLUSH_EVERY`], at shutdown, and before the webhook worker's round. (The events of an
//! answered request, `device.activated` and `license.activated`, are written by the store with
//! its records instead: they are never lost.)
//!
//! The same event about the same subject (a license and device at its limit, say) is raised once
//! per [`REPEAT_WINDOW_MS`]: a client retrying every second raises one event, not thousands.
//! `license.expired` is raised once per license and expiration date, across restarts and
//! instances, by the store's mark. Memory is bounded: at most [`MAX_WAITING`] events wait
//! (more are dropped and counted in the log), and the record of recent subjects is pruned.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use licensing_core::api::ResultCode;
use licensing_core::model::{ClientEvent, ClientEvents, License};
use licensing_core::store::{RaisedEvent, StoreResult, WebhookStore};
use licensing_core::validate::{Country, HardwareId};
use licensing_core::verify::Denial;
use licensing_core::{TeamId, Timestamp};
use serde_json::{Value, json};

/// How often waiting events are queued in the store.
pub const FLUSH_EVERY: Duration = Duration::from_millis(500);

/// The same event about the same subject is raised at most once in this window.
pub const REPEAT_WINDOW_MS: i64 = 10 * 60_000;

/// Events waiting for the store, at most.
pub const MAX_WAITING: usize = 10_000;

/// Subjects remembered for [`REPEAT_WINDOW_MS`], at most (older ones are forgotten first).
const MAX_RECENT: usize = 100_000;

#[derive(Debug, Default)]
struct Queue {
    waiting: Vec<RaisedEvent>,
    /// Subject digest → when its event was last raised (ms).
    recent: HashMap<u64, i64>,
    /// Events dropped because too many were waiting, since the last report.
    dropped: u64,
}

/// The queue; clones share it.
#[derive(Clone, Debug, Default)]
pub struct ClientEventQueue {
    queue: Arc<Mutex<Queue>>,
    hasher: RandomState,
}

/// What a refused request was about, for its event.
#[derive(Clone, Copy, Debug)]
pub struct Refused<'a> {
    /// The team.
    pub team: TeamId,
    /// The license, when the key named one.
    pub license: Option<&'a License>,
    /// The device.
    pub hardware_id: Option<&'a HardwareId>,
    /// The client address.
    pub ip: IpAddr,
    /// Its country.
    pub country: Option<Country>,
}

impl Refused<'_> {
    /// The request as an event's `data` shows it.
    fn data(&self, denial: &Denial) -> serde_json::Map<String, Value> {
        let mut data = serde_json::Map::new();
        data.insert("code".into(), json!(denial.code));
        data.insert("details".into(), json!(denial.details));
        if let Some(license) = self.license {
            data.insert("licenseId".into(), json!(license.id));
            data.insert("licenseKey".into(), json!(license.license_key));
        }
        data.insert("hardwareIdentifier".into(), json!(self.hardware_id));
        data.insert("ipAddress".into(), json!(self.ip.to_canonical()));
        data.insert("country".into(), json!(self.country.map(|c| c.alpha2)));
        data
    }
}

impl ClientEventQueue {
    /// Raises the events of a refusal that the team's endpoints want: `license.expired`,
    /// `device.limit_reached`, `ip.limit_reached` or `verification.blacklisted`.
    pub fn refused(
        &self,
        wants: ClientEvents,
        refused: &Refused<'_>,
        denial: &Denial,
        now: Timestamp,
    ) {
        let team = refused.team;
        if let Some(entry) = denial.blacklist_hit {
            let event = ClientEvent::VerificationBlacklisted;
            if !wants.wants(event) {
                return;
            }
            let subject = (event, entry, refused.license.map(|l| l.id), refused.ip);
            self.raise(&subject, now, || {
                let mut data = refused.data(denial);
                data.insert("blacklistEntryId".into(), json!(entry));
                RaisedEvent {
                    // Tied to the license's products, or to none when no license was found:
                    // an endpoint restricted to some products hears of its own licenses only.
                    event: event
                        .event(team, "blacklist", entry, Value::Object(data), now)
                        .tied_to(refused.license.map_or(&[][..], |l| &l.product_ids)),
                    once: None,
                }
            });
            return;
        }
        let Some(license) = refused.license else {
            return;
        };
        match denial.code {
            ResultCode::LicenseExpired => {
                let event = ClientEvent::LicenseExpired;
                let Some(expired_at) = license.expiration_date else {
                    return;
                };
                if !wants.wants(event) {
                    return;
                }
                let mark = expired_at.as_millis();
                self.raise(&(event, license.id, mark), now, || RaisedEvent {
                    event: event
                        .event(
                            team,
                            "license",
                            license.id,
                            serde_json::to_value(license).unwrap_or(Value::Null),
                            now,
                        )
                        .tied_to(&license.product_ids),
                    once: Some((license.id, mark)),
                });
            }
            ResultCode::HwidLimitReached | ResultCode::IpLimitReached => {
                let (event, limit) = if denial.code == ResultCode::HwidLimitReached {
                    (ClientEvent::DeviceLimitReached, license.hwid_limit)
                } else {
                    (ClientEvent::IpLimitReached, license.ip_limit)
                };
                if !wants.wants(event) {
                    return;
                }
                let subject = (event, license.id, refused.hardware_id, refused.ip);
                self.raise(&subject, now, || {
                    let mut data = refused.data(denial);
                    data.insert("limit".into(), json!(limit));
                    RaisedEvent {
                        event: event
                            .event(team, "license", license.id, Value::Object(data), now)
                            .tied_to(&license.product_ids),
                        once: None,
                    }
                });
            }
            _ => {}
        }
    }

    /// Queues the event `build` makes (one no write carries, such as `release.downloaded`),
    /// unless one about `subject` was raised within the window.
    pub fn raise_once(
        &self,
        subject: &impl Hash,
        now: Timestamp,
        build: impl FnOnce() -> RaisedEvent,
    ) {
        self.raise(subject, now, build);
    }

    /// Queues the event `build` makes, unless one about `subject` was raised within the window.
    fn raise(&self, subject: &impl Hash, now: Timestamp, build: impl FnOnce() -> RaisedEvent) {
        let digest = self.hasher.hash_one(subject);
        let at = now.as_millis();
        let mut queue = self.lock();
        if queue
            .recent
            .get(&digest)
            .is_some_and(|last| at - last < REPEAT_WINDOW_MS)
        {
            return;
        }
        if queue.waiting.len() >= MAX_WAITING {
            queue.dropped += 1;
            return;
        }
        if queue.recent.len() >= MAX_RECENT {
            queue.recent.retain(|_, last| at - *last < REPEAT_WINDOW_MS);
            if queue.recent.len() >= MAX_RECENT {
                queue.recent.clear();
            }
        }
        queue.recent.insert(digest, at);
        queue.waiting.push(build());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // Nothing panics while holding the lock; if something did, keep going.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many events wait.
    pub fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }

    /// Queues every waiting event in the store; on failure they wait for the next try.
    pub async fn flush<S: WebhookStore>(&self, store: &S) -> StoreResult<usize> {
        let (taken, dropped) = {
            let mut queue = self.lock();
            (
                std::mem::take(&mut queue.waiting),
                std::mem::take(&mut queue.dropped),
            )
        };
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "client events were dropped: more than {MAX_WAITING} waited for the store"
            );
        }
        if taken.is_empty() {
            return Ok(0);
        }
        match store.raise_events(&taken).await {
            Ok(n) => Ok(n),
            Err(e) => {
                let mut queue = self.lock();
                let room = MAX_WAITING.saturating_sub(queue.waiting.len());
                let kept = taken.len().min(room);
                queue.dropped += (taken.len() - kept) as u64;
                let newer = std::mem::take(&mut queue.waiting);
                queue.waiting = taken.into_iter().take(kept).chain(newer).collect();
                Err(e)
            }
        }
    }

    /// Flushes every [`FLUSH_EVERY`] until `stop` turns true, then once more.
    pub async fn run<S: WebhookStore>(self, store: S, stop: tokio::sync::watch::Receiver<bool>) {
        let flush = || self.flush(&store);
        let what = "queueing client events";
        crate::runtime::periodic::flush_every(FLUSH_EVERY, stop, what, flush).await;
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use licensing_core::store::{MemoryStore, testing};

    use super::*;

    fn denial(code: ResultCode) -> Denial {
        Denial {
            code,
            details: Cow::Borrowed("refused"),
            blacklist_hit: None,
        }
    }

    /// A client retrying at its limit raises one event per window, and the queue stays bounded.
    #[tokio::test]
    async fn repeats_are_raised_once_per_window_and_the_queue_is_bounded() {
        let store = MemoryStore::default();
        let team = testing::team(&store, "events").await;
        let license = testing::license(team.id, Timestamp::from_millis(0));
        let queue = ClientEventQueue::default();
        let hwid = HardwareId::parse("device-0001").unwrap();
        let refused = Refused {
            team: team.id,
            license: Some(&license),
            hardware_id: Some(&hwid),
            ip: "198.51.100.1".parse().unwrap(),
            country: None,
        };
        let limit = denial(ResultCode::HwidLimitReached);
        let t = Timestamp::from_millis(1_000_000);
        for i in 0..100 {
            queue.refused(ClientEvents::ALL, &refused, &limit, t.plus_seconds(i));
        }
        assert_eq!(queue.waiting(), 1);
        queue.refused(ClientEvents::NONE, &refused, &limit, t.plus_minutes(11));
        assert_eq!(queue.waiting(), 1, "nobody wants it");
        queue.refused(ClientEvents::ALL, &refused, &limit, t.plus_minutes(11));
        assert_eq!(queue.waiting(), 2, "a new window");
        let ips: Vec<IpAddr> = (0..MAX_WAITING as u32 + 10)
            .map(|i| IpAddr::V4(i.into()))
            .collect();
        for ip in &ips {
            let other = Refused { ip: *ip, ..refused };
            queue.refused(ClientEvents::ALL, &other, &limit, t.plus_minutes(12));
        }
        assert_eq!(queue.waiting(), MAX_WAITING);
        assert!(queue.flush(&store).await.unwrap() > 0);
        assert_eq!(queue.waiting(), 0);
    }
}

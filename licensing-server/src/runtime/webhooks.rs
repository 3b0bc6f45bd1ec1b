//! Webhook delivery: a worker fans queued events out into deliveries and sends them, signed in
//! the Standard Webhooks scheme, retrying on a schedule with jitter; an endpoint failing for the
//! configured time is disabled.
//!
//! Destinations are guarded against server-side request forgery: unless the operator allows
//! private destinations, a URL whose host is, or resolves to, a loopback, private, link-local,
//! multicast or otherwise non-public address is refused. The check runs in the HTTP client's
//! resolver, and connections are never reused, so that every attempt resolves (and checks)
//! again: a name that changes its answer (DNS rebinding) cannot reach an inside address.
//! Redirects are not followed, the time-out covers the whole attempt, and at most 1 KiB of an
//! answer is read.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use licensing_core::Timestamp;
use licensing_core::crypto::webhook::{WebhookSecret, headers, signature_header};
use licensing_core::model::{DeliveryAttempt, DeliveryStatus, WebhookDelivery, WebhookEndpoint};
use licensing_core::store::WebhookStore;
use rand::Rng;
use tokio::sync::watch;

/// The retry delays after each failed attempt, in seconds: about three days in all.
pub const DEFAULT_RETRY_DELAYS: &str = "5,60,300,1800,3600,7200,14400,28800,43200,86400,86400";

/// Seconds an endpoint may fail every delivery before it is disabled: three days.
pub const DEFAULT_DISABLE_AFTER_SECS: u64 = 3 * 86_400;

/// Bytes of an answer kept in the delivery log.
const RESPONSE_SNIPPET: usize = 1024;

/// Deliveries sent per round, at once.
const BATCH: usize = 32;

/// Events fanned out per store call.
const FAN_OUT_BATCH: usize = 100;

/// How long a claimed batch stays this worker's beyond twice the send timeout: longer than a
/// batch's sends (at once, each bounded by the timeout) and their store writes can take, and
/// short, because a batch claimed by an instance that died is sent again only after it.
const LEASE_MARGIN: Duration = Duration::from_secs(30);

/// How long an idle connection to an endpoint is kept for the next delivery.
const POOL_IDLE: Duration = Duration::from_secs(30);

/// Time between rounds when nothing was due.
const POLL: Duration = Duration::from_millis(500);

/// Time between rounds that found less than a full batch: events arriving one by one (a new
/// device per verify, under load) are fanned out and sent in batches, not one store write each.
const GATHER: Duration = Duration::from_millis(100);

/// Finished deliveries are kept this long in the log.
const DELIVERY_RETENTION_MS: i64 = 30 * 86_400_000;

/// The operator's webhook settings.
#[derive(Clone, Debug)]
pub struct WebhookSettings {
    /// Plain `http://` endpoints are accepted.
    pub allow_http: bool,
    /// Private, loopback and link-local destinations are allowed.
    pub allow_private: bool,
    /// Delay after each failed attempt; the delivery fails after the last.
    pub retry_delays: Arc<[u64]>,
    /// An endpoint failing every delivery this long is disabled.
    pub disable_after: Duration,
    /// The time-out of one attempt.
    pub timeout: Duration,
    /// The server sends e-mail: an endpoint's alert address is told when it is disabled.
    pub alerts: bool,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            allow_http: false,
            allow_private: false,
            retry_delays: parse_delays(DEFAULT_RETRY_DELAYS)
                .unwrap_or_default()
                .into(),
            disable_after: Duration::from_secs(DEFAULT_DISABLE_AFTER_SECS),
            timeout: Duration::from_secs(10),
            alerts: false,
        }
    }
}

/// Parses a comma-separated list of seconds (at least one, each 1 to 604,800).
pub fn parse_delays(text: &str) -> Result<Vec<u64>, String> {
    let delays: Vec<u64> = text
        .split(',')
        .map(|part| {
            part.trim()
                .parse::<u64>()
                .ok()
                .filter(|s| (1..=604_800).contains(s))
                .ok_or_else(|| format!("{part:?} is not a number of seconds from 1 to 604800"))
        })
        .collect::<Result<_, _>>()?;
    if delays.is_empty() {
        return Err("give at least one delay".into());
    }
    Ok(delays)
}

/// Retry delays in seconds, as one setting (a comma-separated list on the command line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryDelays(pub Vec<u64>);

impl std::fmt::Display for RetryDelays {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u64::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

/// [`parse_delays`] for the command line: the list is one argument.
pub fn parse_delays_arg(text: &str) -> Result<RetryDelays, String> {
    parse_delays(text).map(RetryDelays)
}

/// Whether an address is one a webhook may not reach without `allow_private`: anything but a
/// public unicast address. An IPv6 address that carries an IPv4 address (IPv4-mapped,
/// IPv4-translated, 6to4, Teredo) is judged by the IPv4 addresses in it too, since a relay or
/// translator on the way delivers it there.
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
                || (s[0] == 0x64 && s[1] == 0xff9b) // NAT64, well-known and local (RFC 8215)
                || (s[0] == 0x100 && s[1..4] == [0; 3]) // discard-only (RFC 6666)
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x3fff && (s[1] & 0xf000) == 0) // documentation (RFC 9637)
                || (s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0) // benchmarking
                || (s[0] == 0x2001 && matches!(s[1] & 0xfff0, 0x0010 | 0x0020)) // ORCHID
                || s[..6] == [0; 6] // IPv4-compatible (deprecated)
                || embedded_v4(v6).iter().flatten().any(|v4| forbidden_v4(*v4))
        }
    }
}

/// The IPv4 addresses an IPv6 address carries, where its prefix says so.
fn embedded_v4(v6: Ipv6Addr) -> [Option<Ipv4Addr>; 2] {
    let s = v6.segments();
    let v4 = |high: u16, low: u16| Some(Ipv4Addr::from((u32::from(high) << 16) | u32::from(low)));
    match s {
        // IPv4-mapped (::ffff:a.b.c.d) and IPv4-translated (::ffff:0:a.b.c.d, RFC 2765).
        [0, 0, 0, 0, 0, 0xffff, high, low] | [0, 0, 0, 0, 0xffff, 0, high, low] => {
            [v4(high, low), None]
        }
        // 6to4 (2002:a.b.c.d::/48, RFC 3056): the relay's way out is that IPv4 address.
        [0x2002, high, low, ..] => [v4(high, low), None],
        // Teredo (2001:0::/32, RFC 4380): the server's address, then the client's, inverted.
        [
            0x2001,
            0,
            server_high,
            server_low,
            _,
            _,
            client_high,
            client_low,
        ] => [v4(server_high, server_low), v4(!client_high, !client_low)],
        _ => [None, None],
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_unspecified()
        || ip.is_documentation()
        || o[0] == 0
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // shared address space (carrier NAT)
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF protocol assignments
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking
        || o[0] >= 240 // reserved
}

/// Checks an endpoint URL as given: an absolute `https` URL (or `http` when allowed), with a
/// host, no user information, and, when the host is an address, a public one (unless allowed).
/// What is wrong, for a 400's details.
pub fn check_url(url: &str, settings: &WebhookSettings) -> Result<reqwest::Url, String> {
    if url.len() > 2048 {
        return Err("must be at most 2048 characters".into());
    }
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("is not an absolute URL ({e})"))?;
    match parsed.scheme() {
        "https" => {}
        "http" if settings.allow_http => {}
        "http" => {
            return Err(
                "must be an https:// URL (the operator allows http:// with LICENSING_WEBHOOK_ALLOW_HTTP=true)"
                    .into(),
            );
        }
        _ => return Err("must be an https:// URL".into()),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("must not carry a user name or password".into());
    }
    let Some(host) = parsed.host_str().filter(|h| !h.is_empty()) else {
        return Err("must name a host".into());
    };
    if !settings.allow_private {
        let literal = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .ok();
        if let Some(ip) = literal
            && is_forbidden(ip)
        {
            return Err(format!(
                "points to {ip}, a loopback, private, link-local or otherwise non-public address: webhooks go to public addresses only"
            ));
        }
    }
    Ok(parsed)
}

/// The resolver of the webhook client: the system's, without the addresses a webhook may not
/// reach.
struct GuardedResolver;

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| !is_forbidden(a.ip()))
                .collect();
            if allowed.is_empty() {
                let shown: Vec<String> = found.iter().map(|a| a.ip().to_string()).collect();
                return Err(format!(
                    "refused: {host} resolves to {}, not a public address",
                    if shown.is_empty() {
                        "nothing".into()
                    } else {
                        shown.join(", ")
                    }
                )
                .into());
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Sends deliveries.
#[derive(Clone, Debug)]
pub struct Sender {
    client: reqwest::Client,
    settings: WebhookSettings,
    /// Opens the signing secrets (sealed at rest under a master key).
    keyring: super::keyring::Keyring,
}

impl Sender {
    /// A sender with the operator's settings, opening signing secrets with `keyring`.
    pub fn new(
        settings: WebhookSettings,
        keyring: super::keyring::Keyring,
    ) -> anyhow::Result<Self> {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            // Connections are kept for a while and reused: every new one resolves its host
            // afresh through the guard, and a kept one stays with the address checked when it
            // was opened, so rebinding the name reaches nothing new.
            .pool_idle_timeout(POOL_IDLE)
            .pool_max_idle_per_host(BATCH)
            .user_agent(concat!(
                "licensing-server/",
                env!("CARGO_PKG_VERSION"),
                " (webhooks)"
            ));
        if !settings.allow_private {
            builder = builder.dns_resolver(Arc::new(GuardedResolver));
        }
        Ok(Self {
            client: builder.build()?,
            settings,
            keyring,
        })
    }

    /// The settings.
    pub fn settings(&self) -> &WebhookSettings {
        &self.settings
    }

    /// One attempt to deliver `d` to `endpoint` at `now`.
    pub async fn attempt(
        &self,
        endpoint: &WebhookEndpoint,
        d: &WebhookDelivery,
    ) -> DeliveryAttempt {
        let at = Timestamp::now();
        let started = Instant::now();
        let outcome = self.send(endpoint, d, at).await;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match outcome {
            Ok((status, response)) => DeliveryAttempt {
                at,
                status_code: Some(status),
                duration_ms,
                error: (!(200..300).contains(&status))
                    .then(|| format!("the endpoint answered {status}")),
                response: Some(response),
            },
            Err(error) => DeliveryAttempt {
                at,
                status_code: None,
                duration_ms,
                error: Some(error),
                response: None,
            },
        }
    }

    async fn send(
        &self,
        endpoint: &WebhookEndpoint,
        d: &WebhookDelivery,
        at: Timestamp,
    ) -> Result<(u16, String), String> {
        let url = check_url(&endpoint.url, &self.settings)?;
        let purpose = super::keyring::webhook_purpose(endpoint.id);
        let secrets = endpoint
            .signing_secrets(at)
            .into_iter()
            .map(|stored| {
                let plain = self.keyring.open_secret(&purpose, stored)?;
                WebhookSecret::parse(&plain).map_err(|e| e.to_string())
            })
            .collect::<Result<Vec<_>, String>>()?;
        let id = d.event_id.to_string();
        let timestamp = at.as_millis().div_euclid(1000);
        let signature = signature_header(&secrets, &id, timestamp, d.payload.as_bytes());
        let response = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(headers::ID, &id)
            .header(headers::TIMESTAMP, timestamp.to_string())
            .header(headers::SIGNATURE, signature)
            .body(d.payload.clone())
            .send()
            .await
            .map_err(describe)?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while body.len() < RESPONSE_SNIPPET {
            match stream.next().await {
                Some(Ok(chunk)) => body.extend_from_slice(&chunk),
                // The status decides; a broken body is not the endpoint's answer.
                Some(Err(_)) | None => break,
            }
        }
        body.truncate(RESPONSE_SNIPPET);
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    }

    /// When the attempt after `attempts` failures is due, with ±20% jitter; `None` when the
    /// schedule is over.
    pub fn next_attempt(&self, attempts: u32, now: Timestamp) -> Option<Timestamp> {
        let delays = &self.settings.retry_delays;
        let delay = *delays.get(usize::try_from(attempts).ok()?.checked_sub(1)?)?;
        let ms = i64::try_from(delay)
            .unwrap_or(i64::MAX / 2)
            .saturating_mul(1000);
        let jitter = rand::thread_rng().gen_range(-ms / 5..=ms / 5);
        Some(Timestamp::from_millis(now.as_millis() + ms + jitter))
    }
}

/// An error of the HTTP client in plain words, with its causes.
fn describe(e: reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "the request failed"
    };
    let mut out = what.to_owned();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

/// Sends one claimed delivery and stores its outcome, and the endpoint's health.
pub async fn deliver<S: WebhookStore>(store: &S, sender: &Sender, mut d: WebhookDelivery) {
    let endpoint = match store.get_webhook(d.team_id, d.endpoint_id).await {
        Ok(Some(endpoint)) => endpoint,
        // Deleted with its deliveries meanwhile.
        Ok(None) => return,
        Err(e) => {
            tracing::error!(error = %e, "reading a webhook endpoint failed");
            return;
        }
    };
    if !endpoint.enabled {
        d.record(DeliveryAttempt {
            at: Timestamp::now(),
            status_code: None,
            duration_ms: 0,
            error: Some("not sent: the endpoint is disabled".into()),
            response: None,
        });
        d.status = DeliveryStatus::Failed;
        d.next_attempt_at = None;
        if let Err(e) = store.update_delivery(&d).await {
            tracing::error!(error = %e, "storing a webhook delivery failed");
        }
        return;
    }
    let attempt = sender.attempt(&endpoint, &d).await;
    let ok = attempt.error.is_none();
    let now = Timestamp::now();
    if ok {
        tracing::info!(delivery = %d.id, endpoint = %d.endpoint_id, event = %d.event_type, "webhook delivered");
        d.status = DeliveryStatus::Succeeded;
        d.next_attempt_at = None;
    } else {
        tracing::warn!(delivery = %d.id, endpoint = %d.endpoint_id, event = %d.event_type,
            error = attempt.error.as_deref().unwrap_or(""), "webhook attempt failed");
    }
    d.record(attempt);
    if !ok {
        d.next_attempt_at = sender.next_attempt(d.attempt_count, now);
        if d.next_attempt_at.is_none() {
            d.status = DeliveryStatus::Failed;
        }
    }
    if let Err(e) = store.update_delivery(&d).await {
        tracing::error!(error = %e, "storing a webhook delivery failed");
    }
    let disable_after =
        i64::try_from(sender.settings.disable_after.as_millis()).unwrap_or(i64::MAX);
    match store
        .webhook_health(
            d.team_id,
            d.endpoint_id,
            ok,
            now,
            disable_after,
            sender.settings.alerts,
        )
        .await
    {
        Ok(Some(change)) if change.disabled_now => {
            tracing::warn!(endpoint = %d.endpoint_id, team = %d.team_id, url = %change.endpoint.url,
                "webhook endpoint disabled: every delivery failed for the configured time");
        }
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "storing a webhook endpoint's health failed"),
    }
}

/// How much work a round found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Work {
    /// Nothing was queued or due.
    None,
    /// Less than a full batch.
    Some,
    /// A full batch: more may be waiting.
    Full,
}

/// One round: fan queued events out, then send what is due.
pub async fn round<S: WebhookStore>(store: &S, sender: &Sender) -> Work {
    let now = Timestamp::now();
    let mut busy = Work::None;
    loop {
        match store.fan_out_events(now, FAN_OUT_BATCH).await {
            Ok(0) => break,
            Ok(n) => {
                if n < FAN_OUT_BATCH {
                    busy = busy.max(Work::Some);
                    break;
                }
                busy = Work::Full;
            }
            Err(e) => {
                tracing::error!(error = %e, "fanning out webhook events failed");
                break;
            }
        }
    }
    let lease = sender.settings.timeout.saturating_mul(2) + LEASE_MARGIN;
    let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
    let due = match store.claim_deliveries(now, lease_ms, BATCH).await {
        Ok(due) => due,
        Err(e) => {
            tracing::error!(error = %e, "claiming webhook deliveries failed");
            return busy;
        }
    };
    if !due.is_empty() {
        busy = busy.max(if due.len() >= BATCH {
            Work::Full
        } else {
            Work::Some
        });
        futures_util::future::join_all(due.into_iter().map(|d| deliver(store, sender, d))).await;
    }
    busy
}

/// Delivers webhooks until `stop` turns true; prunes the delivery log daily.
pub async fn run_worker<S: WebhookStore>(
    store: S,
    sender: Sender,
    mut stop: watch::Receiver<bool>,
) {
    let mut pruned_at: Option<Instant> = None;
    loop {
        if *stop.borrow() {
            return;
        }
        if pruned_at.is_none_or(|at| at.elapsed() > Duration::from_secs(86_400)) {
            let before =
                Timestamp::from_millis(Timestamp::now().as_millis() - DELIVERY_RETENTION_MS);
            while let Ok(n) = store.prune_deliveries(before, 1_000).await {
                if n < 1_000 {
                    break;
                }
            }
            pruned_at = Some(Instant::now());
        }
        // A round cut short by the stop leaves its deliveries pending: they are sent again
        // after the restart (at least once).
        let pause = tokio::select! {
            work = round(&store, &sender) => match work {
                Work::Full => continue,
                Work::Some => GATHER,
                Work::None => POLL,
            },
            _ = stop.changed() => return,
        };
        tokio::select! {
            _ = stop.changed() => {},
            () = tokio::time::sleep(pause) => {},
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_addresses_are_forbidden() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "64:ff9b:1::808:808",
            "ff02::1",
            // IPv4 inside IPv6: IPv4-translated, 6to4 and Teredo of inside addresses.
            "::ffff:0:7f00:1",
            "::ffff:0:a00:1",
            "2002:7f00:1::1",
            "2002:a9fe:a9fe::",
            "2002:c0a8:101:1::1",
            "2001:0:4136:e378:8000:63bf:80ff:fffe", // Teredo client 127.0.0.1
            "2001:0:7f00:1:8000:63bf:f7f7:f7f7",    // Teredo server 127.0.0.1
            "100::1",
            "2001:2::1",
            "2001:10::1",
            "2001:20::1",
            "3fff::1",
        ] {
            assert!(is_forbidden(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "::ffff:0:808:808",
            "2002:808:808::1",
            "2001:0:4136:e378:8000:63bf:f7f7:f7f7", // Teredo of 8.8.8.8 via 65.54.227.120
        ] {
            assert!(!is_forbidden(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn urls_must_be_https_and_public_unless_allowed() {
        let strict = WebhookSettings::default();
        assert!(check_url("https://hooks.example.com/in", &strict).is_ok());
        // Each refused, the refusal naming what to fix.
        for (url, named) in [
            ("http://hooks.example.com/in", "https"),
            ("ftp://x.example.com", ""),
            ("https://u:p@x.example.com", ""),
            ("https://127.0.0.1/in", "127.0.0.1"),
            ("https://[::1]/in", ""),
        ] {
            let refusal = check_url(url, &strict).unwrap_err();
            assert!(refusal.contains(named), "{url}: {refusal}");
        }
        let plain = WebhookSettings {
            allow_http: true,
            ..WebhookSettings::default()
        };
        for inside in ["http://[2002:7f00:1::1]/", "http://[::ffff:0:7f00:1]/"] {
            assert!(
                check_url(inside, &plain)
                    .unwrap_err()
                    .contains("non-public"),
                "{inside}"
            );
        }
        assert!(check_url("https://169.254.169.254/latest", &strict).is_err());
        let open = WebhookSettings {
            allow_http: true,
            allow_private: true,
            ..WebhookSettings::default()
        };
        assert!(check_url("http://127.0.0.1:9/in", &open).is_ok());
    }

    #[test]
    fn the_schedule_spans_about_three_days_with_jitter() {
        let sender = Sender::new(WebhookSettings::default(), Default::default()).unwrap();
        let now = Timestamp::from_millis(0);
        let total: u64 = sender.settings().retry_delays.iter().sum();
        assert!((3 * 86_400..4 * 86_400).contains(&total), "{total}");
        let first = sender.next_attempt(1, now).unwrap().as_millis();
        assert!((4_000..=6_000).contains(&first), "{first}");
        assert_eq!(sender.next_attempt(0, now), None);
        assert_eq!(sender.next_attempt(12, now), None);
        assert!(parse_delays("5, 60").is_ok());
        assert!(
            parse_delays("").is_err() && parse_delays("0").is_err() && parse_delays("x").is_err()
        );
    }
}

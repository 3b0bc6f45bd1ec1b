//! Prometheus metrics at `GET /metrics`: requests by route, method and status, and a latency
//! histogram by route. Routes are labelled by template (ids replaced by placeholders), and any
//! path that is not a route is `unmatched`, so hostile paths cannot grow the label set.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Every route but the developer API's (whose templates come from the operations'
/// declarations, see [`templates`]), as a template; `{…}` stands for one path segment.
pub const ROUTES: &[&str] = &[
    "/",
    "/healthz",
    "/metrics",
    "/api/openapi.json",
    "/docs",
    "/api/v1/client/teams/{teamId}/verification/verify",
    "/api/v1/client/teams/{teamId}/verification/heartbeat",
    "/api/v1/client/teams/{teamId}/verification/checkout",
    "/api/v1/client/teams/{teamId}/verification/sessions/start",
    "/api/v1/client/teams/{teamId}/verification/sessions/end",
    "/api/v1/client/teams/{teamId}/verification/classloader",
    "/api/v1/client/teams/{teamId}/usage",
    "/api/v1/admin/teams",
    "/api/v1/admin/teams/{teamId}/features",
    "/api/v1/admin/teams/{teamId}/api-keys",
    "/api/v1/admin/teams/{teamId}/users",
    "/api/v1/admin/teams/{teamId}/password-links",
    "/api/v1/admin/backup",
    "/dashboard",
    "/dashboard/static/{file}",
    "/dashboard/sign-in",
    "/dashboard/sign-out",
    "/dashboard/sign-out-everywhere",
    "/dashboard/set-password/{staffId}/{secret}",
    "/dashboard/account",
    "/dashboard/licenses",
    "/dashboard/licenses/new",
    "/dashboard/licenses/{licenseId}",
    "/dashboard/licenses/{licenseId}/{action}",
    "/dashboard/licenses/{licenseId}/{records}/{recordId}/{action}",
    "/dashboard/customers",
    "/dashboard/customers/{customerId}",
    "/dashboard/customers/{customerId}/delete",
    "/dashboard/products",
    "/dashboard/products/{productId}",
    "/dashboard/products/{productId}/{action}",
    "/dashboard/products/{productId}/branches/{branchId}/delete",
    "/dashboard/blacklist",
    "/dashboard/blacklist/{blacklistId}/delete",
    "/dashboard/settings",
    "/dashboard/releases",
    "/dashboard/releases/{releaseId}",
    "/dashboard/releases/{releaseId}/delete",
    "/dashboard/releases/{releaseId}/artifacts",
    "/dashboard/releases/{releaseId}/artifacts/{artifactId}/delete",
    "/dashboard/api-keys",
    "/dashboard/api-keys/{apiKeyId}/revoke",
    "/dashboard/webhooks",
    "/dashboard/webhooks/{webhookId}",
    "/dashboard/webhooks/{webhookId}/{action}",
    "/dashboard/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver",
    "/dashboard/audit",
    "/dashboard/users",
    "/dashboard/users/{staffId}/{action}",
];

/// The templates of [`ROUTES`] by their count of segments, each split once: `None` stands for
/// a placeholder. Within a count, templates with fewer placeholders come first (the first
/// match wins: `…/signing-keys/rotate` before `…/signing-keys/{kid}`).
type Templates = Vec<Vec<(Vec<Option<&'static str>>, &'static str)>>;

/// The developer operations' path templates, each once.
static DEVELOPER: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
    let mut all: Vec<String> = Vec::new();
    for (_, path) in licensing_core::operations::paths() {
        let template = format!("/api/v1/dev/teams/{{teamId}}/{path}");
        if !all.contains(&template) {
            all.push(template);
        }
    }
    all
});

/// The update feeds' templates: the token's, and each feed's, plainly and under a token.
static UPDATES: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
    const PREFIX: &str = "/api/v1/client/teams/{teamId}/updates/{productId}";
    let mut all = vec![format!("{PREFIX}/token")];
    for path in licensing_core::updates::FEED_PATHS {
        all.push(format!("{PREFIX}/{path}"));
        all.push(format!("{PREFIX}/t/{{token}}/{path}"));
    }
    all
});

/// Every route, as a template: [`ROUTES`], the update feeds' and each developer operation's
/// path.
pub fn templates() -> Vec<&'static str> {
    ROUTES
        .iter()
        .copied()
        .chain(UPDATES.iter().map(String::as_str))
        .chain(DEVELOPER.iter().map(String::as_str))
        .collect()
}

static TEMPLATES: std::sync::LazyLock<Templates> = std::sync::LazyLock::new(|| {
    let mut by_count: Templates = Vec::new();
    for template in templates() {
        let segments: Vec<Option<&'static str>> = template
            .split('/')
            .map(|s| (!s.contains('{')).then_some(s))
            .collect();
        if by_count.len() <= segments.len() {
            by_count.resize_with(segments.len() + 1, Vec::new);
        }
        by_count[segments.len()].push((segments, template));
    }
    for templates in &mut by_count {
        templates.sort_by_key(|(segments, _)| segments.iter().filter(|s| s.is_none()).count());
    }
    by_count
});

/// The template a request path belongs to, or `unmatched`. Runs for every request, so it
/// allocates nothing and compares only with the templates of the path's count of segments,
/// split once at start-up.
pub fn route_of(path: &str) -> &'static str {
    if path == "/" {
        return "/";
    }
    let path = path.trim_end_matches('/');
    let count = path.bytes().filter(|&b| b == b'/').count() + 1;
    TEMPLATES
        .get(count)
        .and_then(|templates| {
            templates.iter().find(|(segments, _)| {
                segments
                    .iter()
                    .zip(path.split('/'))
                    .all(|(t, s)| t.is_none_or(|t| t == s))
            })
        })
        .map_or("unmatched", |(_, template)| *template)
}

/// The method as a label: the standard ones by name, anything else as `OTHER`, so that neither
/// a hostile method can grow the label set nor a request allocate for its label.
fn method_label(method: &str) -> &'static str {
    const METHODS: &[&str] = &[
        "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "CONNECT", "TRACE",
    ];
    METHODS
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or("OTHER")
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: &'static str,
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    endpoint: &'static str,
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeOfOperation {
    operation: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: &'static str,
}

/// The server's metrics.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Mutex<Registry>>,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
    outcomes: Family<OutcomeLabels, Counter>,
    rsa: Family<OperationLabels, Counter>,
    operations: Family<OutcomeOfOperation, Counter>,
    operation_latency: Family<OperationLabels, Histogram>,
    sessions: Gauge,
    outbox: Gauge,
    events: Gauge,
    deliveries: Gauge,
    pool: Family<PoolLabels, Gauge>,
    history_waiting: Gauge,
    history_dropped: Counter,
    cache_hits: Counter,
    cache_misses: Counter,
    cache_pairs: Gauge,
}

/// The state of the store's database connections.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    state: &'static str,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut root = Registry::default();
        root.register_collector(Box::new(ProcessCollector::new()));
        let registry = root.sub_registry_with_prefix("licensing");
        let build = Family::<BuildLabels, Gauge>::default();
        build
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
            })
            .set(1);
        registry.register(
            "build_info",
            "The server's version, as a label; the value is always 1",
            build,
        );
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests by route template, method and status",
            requests.clone(),
        );
        let latency = Family::<RouteLabels, Histogram>::new_with_constructor(|| {
            // 0.1 ms to about 3.3 s.
            Histogram::new(exponential_buckets(0.000_1, 2.0, 16))
        });
        registry.register(
            "http_request_duration_seconds",
            "Time to answer, by route template",
            latency.clone(),
        );
        let outcomes = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "client_outcomes",
            "Client API answers by endpoint (verify, heartbeat, classloader) and result code",
            outcomes.clone(),
        );
        let rsa = Family::<OperationLabels, Counter>::default();
        registry.register(
            "rsa_private_key_operations",
            "RSA private-key operations by kind (sign_challenge, decrypt_session_key)",
            rsa.clone(),
        );
        let operations = Family::<OutcomeOfOperation, Counter>::default();
        registry.register(
            "operations",
            "Operations performed (developer API, dashboard), by name and outcome (`ok` or the refusal's result code)",
            operations.clone(),
        );
        let operation_latency = Family::<OperationLabels, Histogram>::new_with_constructor(|| {
            // 0.1 ms to about 3.3 s.
            Histogram::new(exponential_buckets(0.000_1, 2.0, 16))
        });
        registry.register(
            "operation_duration_seconds",
            "Time an operation took, by name",
            operation_latency.clone(),
        );
        let sessions = Gauge::default();
        registry.register(
            "floating_sessions_live",
            "Floating sessions live on the server (every team), as the last sweep counted them (every 10 s)",
            sessions.clone(),
        );
        let outbox = Gauge::default();
        registry.register(
            "outbox_messages",
            "E-mails queued and not yet sent (every team), at the scrape",
            outbox.clone(),
        );
        let events = Gauge::default();
        registry.register(
            "webhook_events_queued",
            "Webhook events not yet turned into deliveries (every team), at the scrape",
            events.clone(),
        );
        let deliveries = Gauge::default();
        registry.register(
            "webhook_deliveries_pending",
            "Webhook deliveries waiting for their first or next attempt (every team), at the scrape",
            deliveries.clone(),
        );
        let pool = Family::<PoolLabels, Gauge>::default();
        registry.register(
            "store_pool_connections",
            "PostgreSQL connections of this server: open (busy and idle), idle, and the most it opens (max)",
            pool.clone(),
        );
        let history_waiting = Gauge::default();
        registry.register(
            "request_history_waiting",
            "Request history entries waiting to be written (every second), at the scrape",
            history_waiting.clone(),
        );
        let history_dropped = Counter::default();
        registry.register(
            "request_history_dropped",
            "Request history entries dropped because too many waited or the store refused them",
            history_dropped.clone(),
        );
        let cache_hits = Counter::default();
        registry.register(
            "license_cache_hits",
            "Client requests whose license and records were read from memory, not the store",
            cache_hits.clone(),
        );
        let cache_misses = Counter::default();
        registry.register(
            "license_cache_misses",
            "Client requests whose license was read from the store",
            cache_misses.clone(),
        );
        let cache_pairs = Gauge::default();
        registry.register(
            "license_cache_pairs",
            "Device and address pairs held in the license cache, at the scrape",
            cache_pairs.clone(),
        );
        Self {
            registry: Arc::new(Mutex::new(root)),
            requests,
            latency,
            outcomes,
            rsa,
            operations,
            operation_latency,
            sessions,
            outbox,
            events,
            deliveries,
            pool,
            history_waiting,
            history_dropped,
            cache_hits,
            cache_misses,
            cache_pairs,
        }
    }
}

impl Metrics {
    /// Counts one answered request.
    pub fn observe(&self, path: &str, method: &str, status: u16, elapsed: Duration) {
        let route = route_of(path);
        self.requests
            .get_or_create(&RequestLabels {
                route,
                method: method_label(method),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels { route })
            .observe(elapsed.as_secs_f64());
    }

    /// Counts one client API answer: `endpoint` is `verify`, `heartbeat` or `classloader`, `code`
    /// the `result.code` (`VALID` for successes and downloads).
    pub fn client_outcome(&self, endpoint: &'static str, code: &'static str) {
        self.outcomes
            .get_or_create(&OutcomeLabels { endpoint, code })
            .inc();
    }

    /// Counts one operation performed: its name, its outcome (`ok`, or the refusal's result
    /// code) and how long it took.
    pub fn operation(&self, operation: &'static str, outcome: &'static str, elapsed: Duration) {
        self.operations
            .get_or_create(&OutcomeOfOperation { operation, outcome })
            .inc();
        self.operation_latency
            .get_or_create(&OperationLabels { operation })
            .observe(elapsed.as_secs_f64());
    }

    /// Sets the gauge of live floating sessions.
    pub fn live_sessions(&self, live: u64) {
        self.sessions.set(i64::try_from(live).unwrap_or(i64::MAX));
    }

    /// Sets the backlog gauges (read from the store at each scrape).
    pub fn backlog(&self, backlog: &licensing_core::model::Backlog) {
        let set = |gauge: &Gauge, n: u64| gauge.set(i64::try_from(n).unwrap_or(i64::MAX));
        set(&self.outbox, backlog.outbox_messages);
        set(&self.events, backlog.queued_events);
        set(&self.deliveries, backlog.pending_deliveries);
    }

    /// Sets the request history's figures: entries waiting, and dropped since the start.
    pub fn request_history(&self, waiting: u64, dropped: u64) {
        self.history_waiting
            .set(i64::try_from(waiting).unwrap_or(i64::MAX));
        let counted = self.history_dropped.get();
        if dropped > counted {
            self.history_dropped.inc_by(dropped - counted);
        }
    }

    /// Sets the license cache's figures: hits and misses since the start, pairs held.
    pub fn license_cache(&self, hits: u64, misses: u64, pairs: usize) {
        for (counter, total) in [(&self.cache_hits, hits), (&self.cache_misses, misses)] {
            let counted = counter.get();
            if total > counted {
                counter.inc_by(total - counted);
            }
        }
        self.cache_pairs
            .set(i64::try_from(pairs).unwrap_or(i64::MAX));
    }

    /// Sets the gauges of the store's database connections: `open`, `idle`, `max`.
    pub fn pool_connections(&self, open: u32, idle: u32, max: u32) {
        for (state, n) in [("open", open), ("idle", idle), ("max", max)] {
            self.pool
                .get_or_create(&PoolLabels { state })
                .set(i64::from(n));
        }
    }

    /// Counts one RSA private-key operation (`sign_challenge` or `decrypt_session_key`).
    pub fn rsa_operation(&self, operation: &'static str) {
        self.rsa.get_or_create(&OperationLabels { operation }).inc();
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Ok(registry) = self.registry.lock()
            && let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry)
        {
            tracing::error!(error = %e, "metrics encoding failed");
        }
        out
    }
}

/// The process's own figures, read at each scrape under the names Prometheus's clients use
/// (`process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_open_fds`,
/// `process_max_fds`, `process_start_time_seconds`); from `/proc`, so on Linux only (elsewhere
/// only the start time).
#[derive(Debug)]
struct ProcessCollector {
    started: f64,
}

impl ProcessCollector {
    fn new() -> Self {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        Self { started }
    }
}

/// CPU seconds (user and system) from `/proc/self/stat`.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 2..)?.split(' ').collect();
    // Fields 14 and 15 (utime, stime) are the 12th and 13th after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / rustix::param::clock_ticks_per_second().max(1) as f64)
}

/// Resident memory in bytes (`VmRSS` of `/proc/self/status`).
fn resident_bytes() -> Option<i64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Open file descriptors (the entries of `/proc/self/fd`, less the one reading it).
fn open_fds() -> Option<i64> {
    let count = std::fs::read_dir("/proc/self/fd").ok()?.count();
    i64::try_from(count.saturating_sub(1)).ok()
}

/// The soft limit on open files (`/proc/self/limits`).
fn max_fds() -> Option<i64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

impl prometheus_client::collector::Collector for ProcessCollector {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::DescriptorEncoder<'_>,
    ) -> Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeMetric as _;
        use prometheus_client::metrics::counter::ConstCounter;
        use prometheus_client::metrics::gauge::ConstGauge;
        if let Some(seconds) = cpu_seconds() {
            let metric = ConstCounter::new(seconds);
            metric.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "CPU time (user and system) the process used, in seconds",
                None,
                metric.metric_type(),
            )?)?;
        }
        for (name, help, value) in [
            (
                "process_resident_memory_bytes",
                "Resident memory, in bytes",
                resident_bytes(),
            ),
            ("process_open_fds", "Open file descriptors", open_fds()),
            (
                "process_max_fds",
                "The limit on open file descriptors",
                max_fds(),
            ),
        ] {
            if let Some(value) = value {
                let metric = ConstGauge::new(value);
                metric.encode(encoder.encode_descriptor(
                    name,
                    help,
                    None,
                    metric.metric_type(),
                )?)?;
            }
        }
        let metric = ConstGauge::new(self.started);
        metric.encode(encoder.encode_descriptor(
            "process_start_time_seconds",
            "When the server started, in seconds since the Unix epoch",
            None,
            metric.metric_type(),
        )?)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_map_to_templates() {
        let id = "6f9619ff-8b86-4011-b42d-00c04fc964ff";
        assert_eq!(
            route_of(&format!("/api/v1/dev/teams/{id}/licenses")),
            "/api/v1/dev/teams/{teamId}/licenses"
        );
        assert_eq!(
            route_of(&format!("/api/v1/dev/teams/{id}/licenses/id/{id}/hwid")),
            "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/hwid"
        );
        assert_eq!(
            route_of(&format!("/api/v1/dev/teams/{id}/signing-keys/rotate")),
            "/api/v1/dev/teams/{teamId}/signing-keys/rotate"
        );
        assert_eq!(
            route_of(&format!(
                "/api/v1/dev/teams/{id}/signing-keys/0123456789abcdef"
            )),
            "/api/v1/dev/teams/{teamId}/signing-keys/{kid}"
        );
        assert_eq!(route_of("/healthz"), "/healthz");
        assert_eq!(route_of("/"), "/");
        assert_eq!(route_of("//"), "unmatched");
        assert_eq!(route_of("/wp-admin/anything"), "unmatched");
        assert_eq!(
            route_of(&format!("/api/v1/dev/teams/{id}/nope")),
            "unmatched"
        );
    }

    /// The process's figures and the build's version are in every scrape.
    #[test]
    fn renders_the_process_and_the_build() {
        // Enough work for the kernel to count a tick of CPU time (bounded).
        let started = std::time::Instant::now();
        while cpu_seconds().is_some_and(|s| s == 0.0) && started.elapsed() < Duration::from_secs(5)
        {
            std::hint::black_box((0..10_000u64).sum::<u64>());
        }
        let text = Metrics::default().render();
        let value = |name: &str| -> f64 {
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("{name} ")))
                .unwrap_or_else(|| panic!("{name} in {text}"));
            line.rsplit(' ').next().unwrap().parse().unwrap()
        };
        assert!(text.contains(&format!(
            "licensing_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        )));
        assert!(value("process_start_time_seconds") > 1.7e9);
        if cfg!(target_os = "linux") {
            assert!(value("process_resident_memory_bytes") > 1e6);
            assert!(value("process_open_fds") >= 3.0);
            assert!(value("process_max_fds") >= value("process_open_fds"));
            assert!(value("process_cpu_seconds_total") > 0.0);
        }
    }

    #[test]
    fn the_request_history_figures_follow_the_recorder() {
        let m = Metrics::default();
        m.request_history(3, 5);
        m.request_history(0, 7);
        let text = m.render();
        assert!(
            text.contains("licensing_request_history_waiting 0\n"),
            "{text}"
        );
        assert!(
            text.contains("licensing_request_history_dropped_total 7\n"),
            "{text}"
        );
    }

    #[test]
    fn renders_counts_and_histograms() {
        let m = Metrics::default();
        m.observe("/healthz", "GET", 200, Duration::from_millis(2));
        m.observe("/x/y", "GET", 404, Duration::from_millis(1));
        m.observe("/healthz", "BREW", 405, Duration::from_millis(1));
        let text = m.render();
        assert!(
            text.contains(
                r#"licensing_http_requests_total{route="/healthz",method="OTHER",status="405"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"licensing_http_requests_total{route="/healthz",method="GET",status="200"} 1"#
            ),
            "{text}"
        );
        assert!(text.contains(r#"route="unmatched""#));
        assert!(text.contains("licensing_http_request_duration_seconds_bucket"));
    }
}

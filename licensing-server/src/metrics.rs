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

/// Every route, as a template; `{…}` stands for one path segment.
pub const ROUTES: &[&str] = &[
    "/",
    "/healthz",
    "/metrics",
    "/api/openapi.json",
    "/docs",
    "/api/v1/dev/teams/{teamId}/licenses",
    "/api/v1/dev/teams/{teamId}/licenses/{licenseKey}",
    "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}",
    "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/suspend",
    "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/unsuspend",
    "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/email",
    "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/hwid",
    "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/hwid/{hwidId}",
    "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/ip-address",
    "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/ip-address/{ipId}",
    "/api/v1/dev/teams/{teamId}/customers",
    "/api/v1/dev/teams/{teamId}/customers/{customerId}",
    "/api/v1/dev/teams/{teamId}/products",
    "/api/v1/dev/teams/{teamId}/products/{productId}",
    "/api/v1/dev/teams/{teamId}/products/{productId}/branches",
    "/api/v1/dev/teams/{teamId}/products/{productId}/branches/{branchId}",
    "/api/v1/dev/teams/{teamId}/releases",
    "/api/v1/dev/teams/{teamId}/releases/{releaseId}",
    "/api/v1/dev/teams/{teamId}/statistics",
    "/api/v1/dev/teams/{teamId}/settings",
    "/api/v1/dev/teams/{teamId}/blacklist",
    "/api/v1/dev/teams/{teamId}/blacklist/{blacklistId}",
    "/api/v1/dev/teams/{teamId}/api-keys",
    "/api/v1/dev/teams/{teamId}/api-keys/{apiKeyId}",
    "/api/v1/dev/teams/{teamId}/audit-log",
    "/api/v1/dev/teams/{teamId}/webhooks",
    "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}",
    "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/rotate-secret",
    "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/test",
    "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/deliveries",
    "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/deliveries/{deliveryId}",
    "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver",
    "/api/v1/dev/teams/{teamId}/public-key",
    "/api/v1/dev/teams/{teamId}/signing-keys/rotate",
    "/api/v1/dev/teams/{teamId}/entitlements",
    "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/file",
    "/api/v1/dev/teams/{teamId}/entitlements/{entitlementId}",
    "/api/v1/dev/teams/{teamId}/signing-keys/{kid}",
    "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/sessions",
    "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/sessions/{sessionId}",
    "/api/v1/client/teams/{teamId}/verification/verify",
    "/api/v1/client/teams/{teamId}/verification/heartbeat",
    "/api/v1/client/teams/{teamId}/verification/checkout",
    "/api/v1/client/teams/{teamId}/verification/sessions/start",
    "/api/v1/client/teams/{teamId}/verification/sessions/end",
    "/api/v1/client/teams/{teamId}/verification/classloader",
    "/api/v1/admin/teams",
    "/api/v1/admin/teams/{teamId}/features",
    "/api/v1/admin/teams/{teamId}/api-keys",
    "/api/v1/admin/teams/{teamId}/users",
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

/// The template a request path belongs to, or `unmatched`. Runs for every request, so it
/// allocates nothing: segments are compared in place, templates with another segment count are
/// skipped first.
pub fn route_of(path: &str) -> &'static str {
    if path == "/" {
        return "/";
    }
    let path = path.trim_end_matches('/');
    let count = path.split('/').count();
    ROUTES
        .iter()
        .find(|template| {
            template.split('/').count() == count
                && template
                    .split('/')
                    .zip(path.split('/'))
                    .all(|(t, s)| t.starts_with('{') || t == s)
        })
        .copied()
        .unwrap_or("unmatched")
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
    sessions: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("licensing");
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
        let sessions = Gauge::default();
        registry.register(
            "floating_sessions_live",
            "Floating sessions live on the server (every team), as the last sweep counted them (every 10 s)",
            sessions.clone(),
        );
        Self {
            registry: Arc::new(Mutex::new(registry)),
            requests,
            latency,
            outcomes,
            rsa,
            sessions,
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

    /// Sets the gauge of live floating sessions.
    pub fn live_sessions(&self, live: u64) {
        self.sessions.set(i64::try_from(live).unwrap_or(i64::MAX));
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
        assert_eq!(route_of("/healthz"), "/healthz");
        assert_eq!(route_of("/"), "/");
        assert_eq!(route_of("//"), "unmatched");
        assert_eq!(route_of("/wp-admin/anything"), "unmatched");
        assert_eq!(
            route_of(&format!("/api/v1/dev/teams/{id}/nope")),
            "unmatched"
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

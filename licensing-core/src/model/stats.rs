use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::validate::Country;
use crate::{ProductId, Timestamp};

/// The kind of a client request, for statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RequestType {
    /// `verify`.
    Verify,
    /// `heartbeat`.
    Heartbeat,
    /// `classloader`.
    Download,
}

/// `GET {dev}/statistics`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Statistics {
    /// Totals.
    pub overview: Overview,
    /// Client requests of the last 30 days.
    pub requests: RequestCounts,
    /// Top 10 countries by requests in the last 30 days.
    pub top_countries: Vec<TopCountry>,
    /// Top 5 products by license count.
    pub top_products: Vec<TopProduct>,
    /// Requests in the last 24 hours, 7 days, 30 days.
    pub recent_activity: RecentActivity,
    /// (ext) Client requests per UTC day over the last 30 days (the same requests as
    /// `requests`), oldest first, one entry per day including days without any.
    #[serde(default)]
    pub daily: Vec<DailyRequests>,
    /// (ext) Why requests were refused in the last 30 days: the most frequent result codes,
    /// most first (at most 10).
    #[serde(default)]
    pub top_refusals: Vec<TopRefusal>,
}

/// (ext) One of the most frequent reasons for refusing a client request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TopRefusal {
    /// The `result.code` answered.
    pub code: crate::ResultCode,
    /// Requests refused with it.
    pub requests: u64,
}

/// (ext) Client requests of one UTC day.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DailyRequests {
    /// The day, `YYYY-MM-DD`.
    pub date: String,
    /// Requests answered `VALID`.
    pub successful: u64,
    /// Requests refused.
    pub failed: u64,
}

/// Work waiting on the whole server (every team): e-mails in the outbox, webhook events not yet
/// turned into deliveries, and deliveries waiting for their first or next attempt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    /// E-mails queued and not yet sent.
    pub outbox_messages: u64,
    /// Webhook events queued and not yet fanned out to their endpoints.
    pub queued_events: u64,
    /// Webhook deliveries pending.
    pub pending_deliveries: u64,
}

/// Totals of the team.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    /// Licenses.
    pub total_licenses: u64,
    /// Customers.
    pub total_customers: u64,
    /// Products.
    pub total_products: u64,
    /// Licenses with a client request in the last hour.
    pub active_licenses: u64,
    /// Client requests in the last 30 days.
    pub total_requests: u64,
}

/// Request counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RequestCounts {
    /// All.
    pub total: u64,
    /// Answered `VALID` (or a download).
    pub successful: u64,
    /// Answered with an error.
    pub failed: u64,
    /// `successful / total` as a percentage with two decimals; 0 without requests.
    pub success_rate: f64,
    /// By request type.
    pub by_type: RequestsByType,
}

/// Counts per request type.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RequestsByType {
    /// Verify requests.
    #[serde(rename = "VERIFY")]
    pub verify: u64,
    /// Heartbeat requests.
    #[serde(rename = "HEARTBEAT")]
    pub heartbeat: u64,
    /// Classloader requests.
    #[serde(rename = "DOWNLOAD")]
    pub download: u64,
}

/// One of the top countries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TopCountry {
    /// Country name.
    pub country: String,
    /// ISO alpha-3.
    pub alpha3: String,
    /// ISO alpha-2.
    pub alpha2: String,
    /// Requests.
    pub requests: u64,
}

/// One of the top products.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TopProduct {
    /// Id.
    pub id: ProductId,
    /// Name.
    pub name: String,
    /// Licenses that grant it.
    pub licenses: u64,
}

/// Requests over recent windows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecentActivity {
    /// Last 24 hours.
    #[serde(rename = "last24h")]
    pub last_24h: u64,
    /// Last 7 days.
    #[serde(rename = "last7d")]
    pub last_7d: u64,
    /// Last 30 days.
    #[serde(rename = "last30d")]
    pub last_30d: u64,
}

/// Client requests of one team in one hour: the unit statistics are stored in. Adding is
/// commutative, so buckets can be merged from batches in any order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HourlyStats {
    /// Hours since the Unix epoch.
    pub hour: i64,
    /// Per type.
    pub by_type: RequestsByType,
    /// Successful requests.
    pub successful: u64,
    /// Failed requests.
    pub failed: u64,
    /// Requests per country (alpha-2).
    pub countries: BTreeMap<String, u64>,
    /// Requests per product named by the request (when the license grants it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub products: BTreeMap<ProductId, u64>,
    /// (ext) Refused requests per `result.code`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub refusals: BTreeMap<crate::ResultCode, u64>,
}

impl HourlyStats {
    /// The bucket of `at`.
    pub fn hour_of(at: Timestamp) -> i64 {
        at.as_millis().div_euclid(3_600_000)
    }

    /// An empty bucket for the hour holding `at`.
    pub fn new(at: Timestamp) -> Self {
        Self {
            hour: Self::hour_of(at),
            ..Self::default()
        }
    }

    /// Counts one request.
    pub fn record(&mut self, kind: RequestType, success: bool, country_alpha2: Option<&str>) {
        match kind {
            RequestType::Verify => self.by_type.verify += 1,
            RequestType::Heartbeat => self.by_type.heartbeat += 1,
            RequestType::Download => self.by_type.download += 1,
        }
        if success {
            self.successful += 1;
        } else {
            self.failed += 1;
        }
        if let Some(code) = country_alpha2 {
            *self.countries.entry(code.to_owned()).or_default() += 1;
        }
    }

    /// Counts one refusal answered with `code`.
    pub fn record_refusal(&mut self, code: crate::ResultCode) {
        *self.refusals.entry(code).or_default() += 1;
    }

    /// Counts one request naming `product`.
    pub fn record_product(&mut self, product: ProductId) {
        *self.products.entry(product).or_default() += 1;
    }

    /// Adds another bucket's counts (of the same hour) to this one.
    pub fn merge(&mut self, other: &HourlyStats) {
        self.by_type.verify += other.by_type.verify;
        self.by_type.heartbeat += other.by_type.heartbeat;
        self.by_type.download += other.by_type.download;
        self.successful += other.successful;
        self.failed += other.failed;
        for (code, n) in &other.countries {
            *self.countries.entry(code.clone()).or_default() += n;
        }
        for (product, n) in &other.products {
            *self.products.entry(*product).or_default() += n;
        }
        for (code, n) in &other.refusals {
            *self.refusals.entry(*code).or_default() += n;
        }
    }

    /// Requests in this bucket.
    pub fn total(&self) -> u64 {
        self.successful + self.failed
    }
}

impl Statistics {
    /// Assembles the statistics from stored totals and hourly buckets (any hours; those older than
    /// 30 days are ignored). `top_products` must be sorted by license count, descending.
    pub fn compute(
        mut overview: Overview,
        buckets: &[HourlyStats],
        mut top_products: Vec<TopProduct>,
        now: Timestamp,
    ) -> Self {
        let current = HourlyStats::hour_of(now);
        let today = current.div_euclid(24);
        let mut daily: Vec<DailyRequests> = (0..30)
            .map(|i| DailyRequests {
                date: Timestamp::from_millis((today - 29 + i) * 86_400_000)
                    .as_datetime()
                    .format("%Y-%m-%d")
                    .to_string(),
                ..DailyRequests::default()
            })
            .collect();
        let mut month = HourlyStats::default();
        let mut recent = RecentActivity::default();
        for bucket in buckets {
            let age = current - bucket.hour;
            if !(0..30 * 24).contains(&age) {
                continue;
            }
            month.merge(bucket);
            if let Some(day) = usize::try_from(bucket.hour.div_euclid(24) - (today - 29))
                .ok()
                .and_then(|i| daily.get_mut(i))
            {
                day.successful += bucket.successful;
                day.failed += bucket.failed;
            }
            if age < 24 {
                recent.last_24h += bucket.total();
            }
            if age < 7 * 24 {
                recent.last_7d += bucket.total();
            }
            recent.last_30d += bucket.total();
        }
        let total = month.total();
        let success_rate = if total == 0 {
            0.0
        } else {
            (month.successful as f64 * 10_000.0 / total as f64).round() / 100.0
        };
        let mut countries: Vec<(&String, &u64)> = month.countries.iter().collect();
        countries.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let top_countries = countries
            .into_iter()
            .filter_map(|(code, &requests)| {
                let c = Country::from_code(code).ok()?;
                Some(TopCountry {
                    country: c.name.to_owned(),
                    alpha3: c.alpha3.to_owned(),
                    alpha2: c.alpha2.to_owned(),
                    requests,
                })
            })
            .take(10)
            .collect();
        let mut refusals: Vec<TopRefusal> = month
            .refusals
            .iter()
            .map(|(&code, &requests)| TopRefusal { code, requests })
            .collect();
        refusals.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.code.cmp(&b.code)));
        refusals.truncate(10);
        top_products.truncate(5);
        overview.total_requests = total;
        Self {
            overview,
            requests: RequestCounts {
                total,
                successful: month.successful,
                failed: month.failed,
                success_rate,
                by_type: month.by_type,
            },
            top_countries,
            top_products,
            recent_activity: recent,
            daily,
            top_refusals: refusals,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    #[test]
    fn windows_success_rate_and_top_countries() {
        let now = at("2026-11-22T10:30:00Z");
        let mut this_hour = HourlyStats::new(now);
        this_hour.record(RequestType::Verify, true, Some("FI"));
        this_hour.record(RequestType::Verify, false, Some("FI"));
        this_hour.record(RequestType::Heartbeat, true, Some("SE"));
        let mut three_days = HourlyStats::new(at("2026-11-19T10:30:00Z"));
        three_days.record(RequestType::Download, true, None);
        let mut too_old = HourlyStats::new(at("2026-10-01T00:00:00Z"));
        too_old.record(RequestType::Verify, true, Some("US"));

        let stats = Statistics::compute(
            Overview::default(),
            &[this_hour, three_days, too_old],
            Vec::new(),
            now,
        );
        assert_eq!(stats.requests.total, 4);
        assert_eq!(stats.overview.total_requests, 4);
        assert_eq!(stats.requests.successful, 3);
        assert_eq!(stats.requests.success_rate, 75.0);
        assert_eq!(
            stats.requests.by_type,
            RequestsByType {
                verify: 2,
                heartbeat: 1,
                download: 1
            }
        );
        assert_eq!(
            stats.recent_activity,
            RecentActivity {
                last_24h: 3,
                last_7d: 4,
                last_30d: 4
            }
        );
        let codes: Vec<&str> = stats
            .top_countries
            .iter()
            .map(|c| c.alpha3.as_str())
            .collect();
        assert_eq!(codes, ["FIN", "SWE"]);
        assert_eq!(stats.top_countries[0].country, "Finland");
        // Thirty days, oldest first; the bucket of 51 days ago is in none of them.
        assert_eq!(stats.daily.len(), 30);
        assert_eq!(stats.daily[0].date, "2026-10-24");
        assert_eq!(stats.daily[29].date, "2026-11-22");
        assert_eq!((stats.daily[29].successful, stats.daily[29].failed), (2, 1));
        assert_eq!((stats.daily[26].successful, stats.daily[26].failed), (1, 0));
        let sum: u64 = stats.daily.iter().map(|d| d.successful + d.failed).sum();
        assert_eq!(sum, stats.requests.total);
    }

    #[test]
    fn buckets_with_product_counts_roundtrip_and_merge() {
        let now = at("2026-11-22T10:30:00Z");
        let product = ProductId::new();
        let mut a = HourlyStats::new(now);
        a.record(RequestType::Verify, true, Some("FI"));
        a.record_product(product);
        let json = serde_json::to_string(&a).unwrap();
        assert!(json.contains(&product.to_string()));
        let back: HourlyStats = serde_json::from_str(&json).unwrap();
        assert_eq!(back, a);
        // Buckets stored before product counts existed still read.
        let old: HourlyStats = serde_json::from_str(
            r#"{"hour":1,"byType":{"VERIFY":1,"HEARTBEAT":0,"DOWNLOAD":0},"successful":1,"failed":0,"countries":{}}"#,
        )
        .unwrap();
        assert!(old.products.is_empty());
        let mut merged = back.clone();
        merged.merge(&a);
        assert_eq!(merged.products[&product], 2);
    }

    #[test]
    fn success_rate_has_two_decimals() {
        let now = at("2026-11-22T10:30:00Z");
        let mut b = HourlyStats::new(now);
        b.record(RequestType::Verify, true, None);
        b.record(RequestType::Verify, false, None);
        b.record(RequestType::Verify, false, None);
        let stats = Statistics::compute(Overview::default(), &[b], Vec::new(), now);
        assert_eq!(stats.requests.success_rate, 33.33);
        let json = serde_json::to_value(&stats).unwrap();
        assert_eq!(json["requests"]["byType"]["VERIFY"], 3);
        assert_eq!(json["recentActivity"]["last24h"], 3);
    }
}

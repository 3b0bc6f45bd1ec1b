//! A license's hardware identifiers and IP addresses over HTTP.

use licensing_core::api::requests::{DeviceListQuery, RequestLogQuery, parse_paging_query};
use licensing_core::api::{HwidPage, IpPage, RequestLogPage, SessionPage};
use licensing_core::{HwidId, IpId, LicenseId, LicenseSessionId};

use crate::app::devices::{ListHwids, ListIps, ListRequests, SetHwidForgotten, SetIpForgotten};
use crate::app::floating::{ListSessions, RevokeSession};

listed!(ListHwids(license: LicenseId) query DeviceListQuery::parse => HwidPage { hwids }, "Hardware identifiers retrieved");
listed!(ListIps(license: LicenseId) query DeviceListQuery::parse => IpPage { ip_addresses }, "IP addresses retrieved");
listed!(ListRequests(license: LicenseId) query RequestLogQuery::parse => RequestLogPage { requests }, "Request history retrieved");
with_body!(SetHwidForgotten(license: LicenseId, id: HwidId) => 200, "Hardware identifier updated");
with_body!(SetIpForgotten(license: LicenseId, id: IpId) => 200, "IP address updated");
listed!(ListSessions(license: LicenseId) query parse_paging_query => SessionPage { sessions }, "Sessions retrieved");
by_ids!(RevokeSession(license: LicenseId, id: LicenseSessionId) => 200, "Session revoked");

//! (ext) The team's settings, public keys, statistics and audit log over HTTP.

use licensing_core::api::AuditPage;
use licensing_core::api::requests::AuditQuery;

use crate::app::team::{GetPublicKeys, GetSettings, GetStatistics, ListAudit, UpdateSettings};

by_ids!(GetSettings => 200, "Settings retrieved");
with_body!(UpdateSettings() => 200, "Settings updated");
by_ids!(GetPublicKeys => 200, "Public keys retrieved");
listed!(ListAudit() query AuditQuery::parse => AuditPage { entries }, "Audit log retrieved");
by_ids!(GetStatistics => 200 |stats| &*stats, "Statistics retrieved");

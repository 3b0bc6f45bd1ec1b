//! (ext) The team's settings, public keys, statistics and audit log over HTTP.

use licensing_core::api::AuditPage;
use licensing_core::api::requests::AuditQuery;
use licensing_core::model::Kid;

use crate::app::team::{
    GetPublicKeys, GetSettings, GetStatistics, ListAudit, RetireSigningKey, RotateSigningKey,
    UpdateSettings,
};

by_ids!(GetSettings => 200, "Settings retrieved");
with_body!(UpdateSettings() => 200, "Settings updated");
by_ids!(GetPublicKeys => 200, "Public keys retrieved");
by_ids!(RotateSigningKey => 201, "Signing key rotated: answers and license files are signed with the new key from now on; the former keys stay trusted until retired");
by_ids!(RetireSigningKey(kid: Kid) => 200, "Signing key retired: clients no longer trust it");
listed!(ListAudit() query AuditQuery::parse => AuditPage { entries }, "Audit log retrieved");
by_ids!(GetStatistics => 200 |stats| &*stats, "Statistics retrieved");

//! (ext) The team's settings, public keys, statistics and audit log over HTTP.

use licensing_core::api::AuditPage;
use licensing_core::api::requests::AuditQuery;
use licensing_core::model::Kid;

use crate::app::team::{
    ActivateSigningKey, CreateSigningKey, GetPublicKeys, GetSettings, GetStatistics, ListAudit,
    RetireSigningKey, RotateSigningKey, UpdateSettings,
};

by_ids!(GetSettings => 200, "Settings retrieved");
with_body!(UpdateSettings() => 200, "Settings updated");
by_ids!(GetPublicKeys => 200, "Public keys retrieved");
no_body!(CreateSigningKey() => 201, "Next signing key created: it signs nothing yet; publish it in an application release, then activate it");
no_body!(ActivateSigningKey(kid: Kid) => 200, "Signing key activated: answers and license files are signed with it from now on; the former keys stay trusted until retired");
no_body!(RotateSigningKey() => 201, "Signing key rotated: answers and license files are signed with the new key from now on; the former keys stay trusted until retired");
by_ids!(RetireSigningKey(kid: Kid) => 200, "Signing key retired: clients no longer trust it");
listed!(ListAudit() query AuditQuery::parse => AuditPage { entries }, "Audit log retrieved");
by_ids!(GetStatistics => 200 |stats| &*stats, "Statistics retrieved");

//! (ext) The team: its settings, signing keys, statistics and audit log.

use std::sync::Arc;

use crate::api::AuditPage;
use crate::api::requests::{AuditQuery, SettingsBody};
use crate::model::{
    AuditEntry, Kid, PublicKeys, Resource, Scope, SigningKey, Statistics, TeamSettings,
};
use crate::store::Page;

use super::declare;

/// The team's settings.
pub struct GetSettings;

/// Changes the team's settings: members left out keep their value.
pub struct UpdateSettings(pub SettingsBody);

/// The keys the team's clients check its answers with (any caller of the team).
pub struct GetPublicKeys;

/// Makes a new Ed25519 signing key the active one; the former keys stay listed, and clients
/// keep trusting them until they are retired.
pub struct RotateSigningKey;

/// Makes a `next` signing key: listed for applications to ship, signing nothing until it is
/// activated (at most one at a time).
pub struct CreateSigningKey;

/// Makes the staged `next` signing key the active one.
pub struct ActivateSigningKey(pub Kid);

/// Retires a former signing key (by its `kid`; the active one cannot be retired).
pub struct RetireSigningKey(pub Kid);

/// The team's statistics (a restricted key's own products only among the top products).
pub struct GetStatistics;

/// One page of the audit log, newest first: entries about other products left out, and the
/// values of records the caller may not read withheld.
pub struct ListAudit(pub AuditQuery);

const SETTINGS: Option<Scope> = Some(Scope::write(Resource::Settings));

declare! {
    GetStatistics by ids;
    Get "statistics" "statistics" Some(Scope::read(Resource::Statistics));
    Arc<Statistics> => 200 Statistics: |stats| Arc::unwrap_or_clone(stats), "Statistics retrieved";

    GetSettings by ids;
    Get "settings" "get_settings" Some(Scope::read(Resource::Settings));
    TeamSettings => 200 "Settings retrieved";

    UpdateSettings() by json SettingsBody;
    Put "settings" "update_settings" SETTINGS;
    TeamSettings => 200 "Settings updated";

    GetPublicKeys by ids;
    Get "public-key" "public_keys" None;
    PublicKeys => 200 "Public keys retrieved";

    CreateSigningKey by empty;
    Post "signing-keys" "create_signing_key" SETTINGS;
    SigningKey => 201 "Next signing key created: it signs nothing yet; publish it in an application release, then activate it";

    RotateSigningKey by empty;
    Post "signing-keys/rotate" "rotate_signing_key" SETTINGS;
    SigningKey => 201 "Signing key rotated: answers and license files are signed with the new key from now on; the former keys stay trusted until retired";

    ActivateSigningKey(kid: Kid) by empty;
    Post "signing-keys/{kid}/activate" "activate_signing_key" SETTINGS;
    SigningKey => 200 "Signing key activated: answers and license files are signed with it from now on; the former keys stay trusted until retired";

    RetireSigningKey(kid: Kid) by ids;
    Delete "signing-keys/{kid}" "retire_signing_key" SETTINGS;
    SigningKey => 200 "Signing key retired: clients no longer trust it";

    ListAudit() by query AuditQuery;
    Get "audit-log" "audit_log" Some(Scope::read(Resource::AuditLog));
    Page<AuditEntry> => 200 AuditPage: |page| page.into(), "Audit log retrieved";
}

//! (ext) The team: its settings, signing keys, statistics and audit log.

use std::sync::Arc;

use crate::api::AuditPage;
use crate::api::requests::{AuditQuery, SettingsBody};
use crate::model::{
    AuditEntry, Kid, PublicKeys, Resource, Scope, SigningKey, Statistics, TeamSettings,
};
use crate::store::Page;

use super::declare;
use super::doc::*;

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
    doc Doc {
        tag: "team",
        summary: "The team's statistics (cached 15 minutes).",
        description: "",
        params: &[],
        body: "",
        success: "Statistics",
        refusals: &[REFUSED, OTHER_TEAM],
    };

    GetSettings by ids;
    Get "settings" "get_settings" Some(Scope::read(Resource::Settings));
    TeamSettings => 200 "Settings retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) The team's settings.",
        description: "",
        params: &[],
        body: "",
        success: "Settings",
        refusals: &[REFUSED, OTHER_TEAM],
    };

    UpdateSettings() by json SettingsBody;
    Put "settings" "update_settings" SETTINGS;
    TeamSettings => 200 "Settings updated";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Update the team's settings: members left out keep their values.",
        description: "",
        params: &[],
        body: "",
        success: "Updated",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED],
    };

    GetPublicKeys by ids;
    Get "public-key" "public_keys" None;
    PublicKeys => 200 "Public keys retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) The team's public keys: RSA (PEM and base64 of the PEM), the active Ed25519 key\n(`signingKey`) and every signing key clients should trust (`signingKeys`).",
        description: "",
        params: &[],
        body: "",
        success: "The keys",
        refusals: &[REFUSED, OTHER_TEAM],
    };

    CreateSigningKey by empty;
    Post "signing-keys" "create_signing_key" SETTINGS;
    SigningKey => 201 "Next signing key created: it signs nothing yet; publish it in an application release, then activate it";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Make the next Ed25519 signing key (state `next`): listed in `signingKeys` for\napplications to ship, it signs nothing until activated. At most one at a time. No body (an\nempty one or `{}`). Audited (`signing_key.created`).",
        description: "",
        params: &[],
        body: "",
        success: "The next key",
        refusals: &[REFUSED, OTHER_TEAM, crate::refusals![(409, "CONFLICT: a next key is already staged (activate or retire it first)")]],
    };

    RotateSigningKey by empty;
    Post "signing-keys/rotate" "rotate_signing_key" SETTINGS;
    SigningKey => 201 "Signing key rotated: answers and license files are signed with the new key from now on; the former keys stay trusted until retired";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Rotate the Ed25519 signing key in one step (create and activate): a new key signs\nanswers and license files from now on; the former keys stay listed (`former`) and trusted\nuntil retired. Applications that embed only the active key reject new answers at once:\nprefer creating a next key, shipping it, then activating it. The RSA key stays. No body.\nAudited (`signing_key.rotated`).",
        description: "",
        params: &[],
        body: "",
        success: "The new active key",
        refusals: &[REFUSED, OTHER_TEAM, crate::refusals![(409, "CONFLICT: a next key is staged (activate or retire it)")]],
    };

    ActivateSigningKey(kid: Kid) by empty;
    Post "signing-keys/{kid}/activate" "activate_signing_key" SETTINGS;
    SigningKey => 200 "Signing key activated: answers and license files are signed with it from now on; the former keys stay trusted until retired";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Activate the staged next signing key: it signs answers and license files from now on;\nthe former active key stays listed (`former`) and trusted until retired. Publish the next\nkey in an application release before activating it. No body. Audited\n(`signing_key.rotated`).",
        description: "",
        params: &[
            Param::path("kid", "The next key's id", Kind::Pattern("^[0-9a-f]{16}$")),
        ],
        body: "",
        success: "The key, now active",
        refusals: &[REFUSED, OTHER_TEAM, crate::refusals![(404, "SIGNING_KEY_NOT_FOUND: the team has no such key"), (409, "CONFLICT: a former key (make a next one instead)")]],
    };

    RetireSigningKey(kid: Kid) by ids;
    Delete "signing-keys/{kid}" "retire_signing_key" SETTINGS;
    SigningKey => 200 "Signing key retired: clients no longer trust it";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Retire a former or next signing key: clients stop trusting it. Audited\n(`signing_key.retired`).",
        description: "",
        params: &[
            Param::path("kid", "The key's id", Kind::Pattern("^[0-9a-f]{16}$")),
        ],
        body: "",
        success: "The retired key",
        refusals: &[REFUSED, OTHER_TEAM, crate::refusals![(404, "SIGNING_KEY_NOT_FOUND: the team has no such key")]],
    };

    ListAudit() by query AuditQuery;
    Get "audit-log" "audit_log" Some(Scope::read(Resource::AuditLog));
    Page<AuditEntry> => 200 AuditPage: |page| page.into(), "Audit log retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) The audit log: every change made through the developer and admin APIs, with who made\nit (API key, operator, command line), from which address, and each changed field's old and\nnew values (a secret appears as `secret: true`, without values). Newest first.",
        description: "",
        params: &[
            Param::query("page", "1-based page (default 1)", Kind::Integer(0)),
            PAGE_SIZE,
            Param::query("sortDirection", "`desc` (newest first, the default) or `asc`", Kind::Text),
            Param::query("resourceType", "Entries about this type of record: team, license, device, ip, customer, product, branch, release, blacklist, api_key, settings", Kind::Text),
            Param::query("resourceId", "Entries about the record with this id", Kind::Text),
            Param::query("actor", "Entries of one API key (its id) or of a kind of principal: API_KEY, ADMIN, USER, SYSTEM, CUSTOMER, INTEGRATION", Kind::Text),
            Param::query("action", "Entries of one action, such as `license.suspended`", Kind::Text),
            Param::query("from", "Entries at or after this time (RFC 3339)", Kind::DateTime),
            Param::query("to", "Entries before this time (RFC 3339)", Kind::DateTime),
        ],
        body: "",
        success: "One page of entries",
        refusals: &[REFUSED, OTHER_TEAM],
    };
}

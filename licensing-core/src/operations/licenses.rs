//! Licenses: create, list, read, change, suspend, extend, e-mail, issue a file and delete, by
//! id and by key.

use crate::api::requests::{
    BulkLicenseBody, ExtendBody, LicenseCreate, LicenseListQuery, LicenseUpdate, SuspendBody,
};
use crate::api::{
    BulkLicenseResult, LicenseDeleted, LicenseEmailed, LicenseFileBody, LicenseFileIssued,
    LicenseKeyDeleted, LicensePage,
};
use crate::model::{License, LicenseDetail, Resource, Scope};
use crate::store::Page;
use crate::{LicenseId, LicenseKey};

use super::declare;
use super::doc::*;

/// Creates a license under a fresh key (and e-mails it, when asked).
pub struct CreateLicense(pub LicenseCreate);

/// One page of the team's licenses (a restricted key's own products' only).
pub struct ListLicenses(pub LicenseListQuery);

/// A license with its customers and products.
pub struct GetLicense(pub LicenseId);

/// A license with its customers and products, by key.
pub struct GetLicenseByKey(pub LicenseKey);

/// Changes a license: members left out keep their value, `null` clears a nullable one.
pub struct UpdateLicense(pub LicenseId, pub LicenseUpdate);

/// Deletes a license; answers what was deleted.
pub struct DeleteLicense(pub LicenseId);

/// Deletes a license by key; answers what was deleted.
pub struct DeleteLicenseByKey(pub LicenseKey);

/// Suspends a license, for a reason when one is given (unchanged when it already is, but for a
/// new reason).
pub struct SuspendLicense(pub LicenseId, pub SuspendBody);

/// Lifts a license's suspension (unchanged when it is not suspended).
pub struct UnsuspendLicense(pub LicenseId);

/// (ext) Moves a license's expiry later: what the narrow scope `licenses:extend` allows.
pub struct ExtendLicense(pub LicenseId, pub ExtendBody);

/// (ext) E-mails the license key again to each of its customers with an address (one who lost
/// it, a new customer added to the license).
pub struct EmailLicense(pub LicenseId);

/// (ext) Issues a file of a license: bound to one machine or to none, valid for `ttl` seconds
/// or as long as the license, encrypted unless asked not to be.
pub struct IssueLicenseFile(pub LicenseId, pub LicenseFileBody);

/// (ext) Suspends, unsuspends or deletes up to 100 licenses at once, each through its own
/// operation (its scope, restriction, audit entry and webhook event): what one of them refuses is
/// listed, the others are done.
pub struct BulkLicenses(pub BulkLicenseBody);

const READ: Option<Scope> = Some(Scope::read(Resource::Licenses));
const WRITE: Option<Scope> = Some(Scope::write(Resource::Licenses));

declare! {
    CreateLicense() by json LicenseCreate;
    Post "licenses" "create_license" WRITE;
    LicenseDetail => 200 "License created";
    doc Doc {
        tag: "licenses",
        summary: "Create a license. Only `expirationType` is required.",
        description: "",
        params: &[],
        body: "",
        success: "License created (200 for compatibility)",
        refusals: &[OTHER_TEAM, BODY_REFUSED, crate::refusals![(400, "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)"), (401, "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key"), (404, "CUSTOMER_NOT_FOUND or PRODUCT_NOT_FOUND: an unknown id in customerIds or productIds"), (429, "RATE_LIMIT: too many requests, or the day's 50 license e-mails are queued"), (500, "INTERNAL_SERVER_ERROR")]],
    };

    ListLicenses() by query LicenseListQuery;
    Get "licenses" "list_licenses" READ;
    Page<License> => 200 LicensePage: |page| page.into(), "Licenses retrieved";
    doc Doc {
        tag: "licenses",
        summary: "List licenses, a page at a time.",
        description: "",
        params: &[
            PAGE,
            PAGE_SIZE,
            DIRECTION,
            Param::query("sortColumn", "One of createdAt, updatedAt, (ext) expirationDate, lastActiveAt (default createdAt); licenses without an expiration date or never used come last in either direction", Kind::Text),
            Param::query("productIds", "Comma-separated product ids: licenses with any of them", Kind::Text),
            Param::query("customerIds", "Comma-separated customer ids: licenses with any of them", Kind::Text),
            Param::query("search", "Part of the license key, case-insensitive, hyphens left out of both (a key typed without its hyphens is found)", Kind::Text),
            Param::query("metadataKey", "A metadata key the license has", Kind::Text),
            Param::query("metadataValue", "Text the value of metadataKey contains (needs metadataKey)", Kind::Text),
            Param::query("status", "EXPIRED: licenses whose expiration date has passed; ACTIVE: the others (suspended or not)", Kind::Text),
            Param::query("expirationType", "One of NEVER, DATE, DURATION", Kind::Text),
            Param::query("suspended", "true: suspended licenses only; false: the others", Kind::Boolean),
            Param::query("entitlementId", "(ext) Licenses that grant this entitlement, themselves or through one of their products", Kind::Uuid),
            Param::query("metadataSearch", "(ext) Licenses with a metadata value (of any key) containing this, case-insensitive", Kind::Text),
            Param::query("deviceSearch", "(ext) Licenses with a device whose name or platform contains this (case-insensitive) or whose hardware identifier is this", Kind::Text),
            Param::query("expiresWithinDays", "(ext) Licenses not expired yet whose expiration date is at most this many days (1 to 3650) ahead", Kind::Integer(1)),
        ],
        body: "",
        success: "A page of licenses",
        refusals: &[REFUSED, OTHER_TEAM],
    };

    GetLicenseByKey(key: LicenseKey) by ids;
    Get "licenses/{licenseKey}" "get_license" READ;
    LicenseDetail => 200 "License retrieved";
    doc Doc {
        tag: "licenses",
        summary: "A license by key.",
        description: "",
        params: &[
            LICENSE_KEY,
        ],
        body: "",
        success: "The license",
        refusals: &[REFUSED, OTHER_TEAM, NO_LICENSE],
    };

    DeleteLicenseByKey(key: LicenseKey) by ids;
    Delete "licenses/{licenseKey}" "delete_license" WRITE;
    License => 200 LicenseKeyDeleted: |license| LicenseKeyDeleted {
        license_key: license.license_key,
        deleted: true,
    }, "License deleted";
    doc Doc {
        tag: "licenses",
        summary: "Delete a license by key, with its devices and addresses.",
        description: "",
        params: &[
            LICENSE_KEY,
        ],
        body: "",
        success: "Deleted",
        refusals: &[REFUSED, OTHER_TEAM, NO_LICENSE],
    };

    GetLicense(id: LicenseId) by ids;
    Get "licenses/id/{licenseId}" "get_license_by_id" READ;
    LicenseDetail => 200 "License retrieved";
    doc Doc {
        tag: "licenses",
        summary: "A license by id.",
        description: "",
        params: &[
            LICENSE_ID,
        ],
        body: "",
        success: "The license",
        refusals: &[REFUSED, OTHER_TEAM, NO_LICENSE],
    };

    // The protocol's order: ids and credentials, then the body (400), then the record (404).
    UpdateLicense(id: LicenseId) by json LicenseUpdate;
    Put "licenses/id/{licenseId}" "update_license" WRITE;
    LicenseDetail => 200 "License updated";
    doc Doc {
        tag: "licenses",
        summary: "Update a license: members left out keep their values, null clears.",
        description: "",
        params: &[
            LICENSE_ID,
        ],
        body: "",
        success: "Updated",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, crate::refusals![(404, "LICENSE_NOT_FOUND, CUSTOMER_NOT_FOUND or PRODUCT_NOT_FOUND")]],
    };

    DeleteLicense(id: LicenseId) by ids;
    Delete "licenses/id/{licenseId}" "delete_license_by_id" WRITE;
    License => 200 LicenseDeleted: |license| LicenseDeleted {
        license_id: license.id,
        deleted: true,
    }, "License deleted";
    doc Doc {
        tag: "licenses",
        summary: "Delete a license by id.",
        description: "",
        params: &[
            LICENSE_ID,
        ],
        body: "",
        success: "Deleted",
        refusals: &[REFUSED, OTHER_TEAM, NO_LICENSE],
    };

    BulkLicenses() by json BulkLicenseBody;
    Post "licenses/bulk" "bulk_licenses" Some(Scope::LICENSE_SUSPEND);
    BulkLicenseResult => 200 "Bulk action applied";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Suspend, unsuspend or delete up to 100 licenses at once.",
        description: "Each license goes through its own operation, as if its own route were called: the same scope, product restriction, audit entry and webhook event. The answer is 200 when the request itself is sound, whatever each license's outcome: `data.done` lists the licenses the action was done to, `data.refused` each one it was not, with the code and details its own route would have answered (`LICENSE_NOT_FOUND` for an id of no license of the team, say). Suspending or unsuspending takes `licenses:suspend` (or `licenses:write`); deleting takes `licenses:write`. With an `Idempotency-Key` the whole action runs once.",
        params: &[],
        body: "The action and the licenses' ids (1 to 100; an id given twice counts once)",
        success: "What was done and what was refused, license by license",
        refusals: &[OTHER_TEAM, BODY_REFUSED, crate::refusals![(400, "BAD_REQUEST: no or an unknown action, no ids, more than 100, or an id that is not one (`data.errors` names each)"), (401, "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key"), (429, "RATE_LIMIT: too many requests for this API key (`Retry-After`)"), (500, "INTERNAL_SERVER_ERROR")]],
    };

    SuspendLicense(id: LicenseId) by optional SuspendBody;
    Post "licenses/id/{licenseId}/suspend" "suspend_license" Some(Scope::LICENSE_SUSPEND);
    LicenseDetail => 200 "License suspended";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Suspend a license: the one change the scope `licenses:suspend` allows (so\ndoes `licenses:write`). A license already suspended is answered the same, unchanged.",
        description: "An optional body `{\"reason\": \"…\"}` (1 to 500 characters) says why: it is kept as the license's `suspensionReason` (cleared when the suspension is lifted) and in the audit entry. Suspending a suspended license with another reason replaces the reason.",
        params: &[
            LICENSE_ID,
        ],
        body: "",
        success: "The license, suspended",
        refusals: &[OTHER_TEAM, NO_LICENSE, crate::refusals![(400, "BAD_REQUEST: a malformed id (`data.errors` names it)"), (401, "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key"), (429, "RATE_LIMIT: too many requests for this API key (`Retry-After`)"), (500, "INTERNAL_SERVER_ERROR")]],
    };

    UnsuspendLicense(id: LicenseId) by ids;
    Post "licenses/id/{licenseId}/unsuspend" "unsuspend_license" Some(Scope::LICENSE_SUSPEND);
    LicenseDetail => 200 "License unsuspended";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Unsuspend a license: the one change the scope `licenses:suspend` allows (so\ndoes `licenses:write`). A license already unsuspended is answered the same, unchanged.",
        description: "",
        params: &[
            LICENSE_ID,
        ],
        body: "",
        success: "The license, unsuspended",
        refusals: &[OTHER_TEAM, NO_LICENSE, crate::refusals![(400, "BAD_REQUEST: a malformed id (`data.errors` names it)"), (401, "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key"), (429, "RATE_LIMIT: too many requests for this API key (`Retry-After`)"), (500, "INTERNAL_SERVER_ERROR")]],
    };

    EmailLicense(id: LicenseId) by ids;
    Post "licenses/id/{licenseId}/email" "email_license" Some(Scope::LICENSE_EMAIL);
    LicenseEmailed => 200 "License e-mails queued";
    doc Doc {
        tag: "extensions",
        summary: "(ext) E-mail the license key again to each of the license's customers that has an address,\nthrough the server's outbox (delivered and retried in the background). Counts against the\nteam's daily e-mail limit.",
        description: "",
        params: &[
            LICENSE_ID,
        ],
        body: "",
        success: "The e-mails queued and their recipients",
        refusals: &[NO_LICENSE, crate::refusals![(400, "BAD_REQUEST: a malformed id; e-mail not configured on this server; no customer of the license has an address"), (401, "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key"), (403, "FORBIDDEN: an API key of another team, or without licenses:email (which licenses:write includes)"), (429, "RATE_LIMIT: too many requests for this API key, or the team's e-mails of the day are used up (`Retry-After`)"), (500, "INTERNAL_SERVER_ERROR")]],
    };

    ExtendLicense(id: LicenseId) by json ExtendBody;
    Post "licenses/id/{licenseId}/extend" "extend_license" Some(Scope::LICENSE_EXTEND);
    LicenseDetail => 200 "License extended";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Move the license's expiry `days` later (1 to 3650): a `DATE` license expires that many\ndays after its date, or after now when the date has passed; a `DURATION` license lasts that\nmany days longer, counted from its start as before. A license that never expires cannot be\nextended. Needs `licenses:extend` (which `licenses:write` includes), so that a support desk\ncan extend without changing anything else; audited and announced as `license.updated`.",
        description: "",
        params: &[
            LICENSE_ID,
        ],
        body: "",
        success: "The license, extended",
        refusals: &[NO_LICENSE, crate::refusals![(400, "BAD_REQUEST: a malformed id or body; `days` missing or out of range; a license that never expires"), (401, "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key"), (403, "FORBIDDEN: an API key of another team, or without licenses:extend"), (429, "RATE_LIMIT: too many requests for this API key (`Retry-After`)"), (500, "INTERNAL_SERVER_ERROR")]],
    };

    // Every member is optional: an empty body asks for an encrypted file for any machine,
    // valid as long as the license.
    IssueLicenseFile(id: LicenseId) by optional LicenseFileBody;
    Post "licenses/id/{licenseId}/file" "issue_license_file" WRITE;
    LicenseFileIssued => 201 "License file issued";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Issue a license file: the license's data as a verify answers it (with its id, key,\nsuspension and entitlements; its customers only for a key with `customers:read`), signed\nwith the team's active Ed25519 key (`kid` in the envelope), encrypted under the license key\n(and the machine's hardware identifier, for a file bound to one, armored `MACHINE FILE`)\nunless `encrypt` is `false`. Its `expiry` is the earliest of `issued + ttl` and the\nlicense's end (a duration not started yet: `issued` + its days; issuing does not start the\nclock). An application checks it offline with the team's signing keys. Audited\n(`license.file_issued`).",
        description: "",
        params: &[
            LICENSE_ID,
        ],
        body: "Every member is optional; an empty body asks for an encrypted file for any machine, valid as long as the license",
        success: "The file",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, NO_LICENSE],
    };
}

//! Licenses: create, list, read, change, suspend, extend, e-mail, issue a file and delete, by
//! id and by key.

use crate::api::requests::{ExtendBody, LicenseCreate, LicenseListQuery, LicenseUpdate};
use crate::api::{
    LicenseDeleted, LicenseEmailed, LicenseFileBody, LicenseFileIssued, LicenseKeyDeleted,
    LicensePage,
};
use crate::model::{License, LicenseDetail, Resource, Scope};
use crate::store::Page;
use crate::{LicenseId, LicenseKey};

use super::declare;

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

/// Suspends a license (unchanged when it already is).
pub struct SuspendLicense(pub LicenseId);

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

const READ: Option<Scope> = Some(Scope::read(Resource::Licenses));
const WRITE: Option<Scope> = Some(Scope::write(Resource::Licenses));

declare! {
    CreateLicense() by json LicenseCreate;
    Post "licenses" "create_license" WRITE;
    LicenseDetail => 200 "License created";

    ListLicenses() by query LicenseListQuery;
    Get "licenses" "list_licenses" READ;
    Page<License> => 200 LicensePage: |page| page.into(), "Licenses retrieved";

    GetLicenseByKey(key: LicenseKey) by ids;
    Get "licenses/{licenseKey}" "get_license" READ;
    LicenseDetail => 200 "License retrieved";

    DeleteLicenseByKey(key: LicenseKey) by ids;
    Delete "licenses/{licenseKey}" "delete_license" WRITE;
    License => 200 LicenseKeyDeleted: |license| LicenseKeyDeleted {
        license_key: license.license_key,
        deleted: true,
    }, "License deleted";

    GetLicense(id: LicenseId) by ids;
    Get "licenses/id/{licenseId}" "get_license_by_id" READ;
    LicenseDetail => 200 "License retrieved";

    // The protocol's order: ids and credentials, then the body (400), then the record (404).
    UpdateLicense(id: LicenseId) by json LicenseUpdate;
    Put "licenses/id/{licenseId}" "update_license" WRITE;
    LicenseDetail => 200 "License updated";

    DeleteLicense(id: LicenseId) by ids;
    Delete "licenses/id/{licenseId}" "delete_license_by_id" WRITE;
    License => 200 LicenseDeleted: |license| LicenseDeleted {
        license_id: license.id,
        deleted: true,
    }, "License deleted";

    SuspendLicense(id: LicenseId) by ids;
    Post "licenses/id/{licenseId}/suspend" "suspend_license" Some(Scope::LICENSE_SUSPEND);
    LicenseDetail => 200 "License suspended";

    UnsuspendLicense(id: LicenseId) by ids;
    Post "licenses/id/{licenseId}/unsuspend" "unsuspend_license" Some(Scope::LICENSE_SUSPEND);
    LicenseDetail => 200 "License unsuspended";

    EmailLicense(id: LicenseId) by ids;
    Post "licenses/id/{licenseId}/email" "email_license" Some(Scope::LICENSE_EMAIL);
    LicenseEmailed => 200 "License e-mails queued";

    ExtendLicense(id: LicenseId) by json ExtendBody;
    Post "licenses/id/{licenseId}/extend" "extend_license" Some(Scope::LICENSE_EXTEND);
    LicenseDetail => 200 "License extended";

    // Every member is optional: an empty body asks for an encrypted file for any machine,
    // valid as long as the license.
    IssueLicenseFile(id: LicenseId) by optional LicenseFileBody;
    Post "licenses/id/{licenseId}/file" "issue_license_file" WRITE;
    LicenseFileIssued => 201 "License file issued";
}

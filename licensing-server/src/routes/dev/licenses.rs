//! Licenses over HTTP: create, list, read, update and delete, by key and by id.

use licensing_core::api::requests::LicenseListQuery;
use licensing_core::api::{LicenseDeleted, LicenseKeyDeleted, LicensePage};
use licensing_core::{LicenseId, LicenseKey};

use crate::app::licenses::{
    CreateLicense, DeleteLicense, DeleteLicenseByKey, EmailLicense, GetLicense, GetLicenseByKey,
    ListLicenses, SuspendLicense, UnsuspendLicense, UpdateLicense,
};

with_body!(CreateLicense() => 200, "License created");
listed!(ListLicenses() query LicenseListQuery::parse => LicensePage { licenses }, "Licenses retrieved");
by_ids!(GetLicenseByKey(key: LicenseKey) => 200, "License retrieved");
by_ids!(GetLicense(id: LicenseId) => 200, "License retrieved");
// The protocol's order: ids and credentials, then the body (400), then the record (404).
with_body!(UpdateLicense(id: LicenseId) => 200, "License updated");
by_ids!(SuspendLicense(id: LicenseId) => 200, "License suspended");
by_ids!(UnsuspendLicense(id: LicenseId) => 200, "License unsuspended");
by_ids!(EmailLicense(id: LicenseId) => 200, "License e-mails queued");
by_ids!(DeleteLicenseByKey(key: LicenseKey) => 200
    |license| LicenseKeyDeleted { license_key: license.license_key, deleted: true },
    "License deleted");
by_ids!(DeleteLicense(id: LicenseId) => 200
    |license| LicenseDeleted { license_id: license.id, deleted: true }, "License deleted");

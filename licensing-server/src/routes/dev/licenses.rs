//! Licenses over HTTP: create, list, read, update and delete, by key and by id.

use licensing_core::api::requests::LicenseListQuery;
use licensing_core::api::{LicenseDeleted, LicenseKeyDeleted, LicensePage};
use licensing_core::model::License;
use licensing_core::{ApiError, LicenseId, LicenseKey};

use super::{Dev, Endpoint, Input, Query};
use crate::app::licenses::{
    CreateLicense, DeleteLicense, DeleteLicenseByKey, EmailLicense, GetLicense, GetLicenseByKey,
    ListLicenses, SuspendLicense, UnsuspendLicense, UpdateLicense,
};
use crate::http::{Response, success};

with_body!(CreateLicense() => 200, "License created");
listed!(ListLicenses() query LicenseListQuery::parse => LicensePage { licenses }, "Licenses retrieved");
by_ids!(GetLicenseByKey(key: LicenseKey) => 200, "License retrieved");
by_ids!(GetLicense(id: LicenseId) => 200, "License retrieved");
// The protocol's order: ids and credentials, then the body (400), then the record (404).
with_body!(UpdateLicense(id: LicenseId) => 200, "License updated");
by_ids!(SuspendLicense(id: LicenseId) => 200, "License suspended");
by_ids!(UnsuspendLicense(id: LicenseId) => 200, "License unsuspended");
by_ids!(EmailLicense(id: LicenseId) => 200, "License e-mails queued");

impl Endpoint for DeleteLicenseByKey {
    type Ids = (LicenseKey,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (key,): (LicenseKey,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(key))
    }

    fn answer(license: License) -> Response {
        let deleted = LicenseKeyDeleted {
            license_key: license.license_key,
            deleted: true,
        };
        success(200, deleted, "License deleted")
    }
}

impl Endpoint for DeleteLicense {
    type Ids = (LicenseId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (LicenseId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(license: License) -> Response {
        let deleted = LicenseDeleted {
            license_id: license.id,
            deleted: true,
        };
        success(200, deleted, "License deleted")
    }
}

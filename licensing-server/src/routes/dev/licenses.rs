//! Licenses over HTTP: create, list, read, update and delete, by key and by id.

use licensing_core::api::requests::LicenseListQuery;
use licensing_core::api::{LicenseDeleted, LicenseKeyDeleted, LicensePage};
use licensing_core::{LicenseId, LicenseKey};

use crate::app::licenses::{
    CreateLicense, DeleteLicense, DeleteLicenseByKey, EmailLicense, ExtendLicense, GetLicense,
    GetLicenseByKey, ListLicenses, SuspendLicense, UnsuspendLicense, UpdateLicense,
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
with_body!(ExtendLicense(id: LicenseId) => 200, "License extended");
by_ids!(DeleteLicenseByKey(key: LicenseKey) => 200
    |license| LicenseKeyDeleted { license_key: license.license_key, deleted: true },
    "License deleted");
by_ids!(DeleteLicense(id: LicenseId) => 200
    |license| LicenseDeleted { license_id: license.id, deleted: true }, "License deleted");

impl super::Endpoint for crate::app::license_files::IssueLicenseFile {
    type Ids = (LicenseId,);
    const QUERY: super::Query = super::Query::None;

    async fn from_request(
        _: &super::Dev,
        (id,): (LicenseId,),
        input: super::Input,
    ) -> Result<Self, licensing_core::ApiError> {
        // Every member is optional: an empty body asks for an encrypted file for any machine,
        // valid as long as the license.
        let bytes = input.json().await?;
        let body = if bytes.iter().all(u8::is_ascii_whitespace) {
            licensing_core::api::LicenseFileBody::default()
        } else {
            licensing_core::api::requests::parse_json(&bytes)?
        };
        Ok(Self(id, body))
    }

    fn answer(output: Self::Output) -> crate::http::Response {
        crate::http::success(201, output, "License file issued")
    }
}

//! Licenses over HTTP: create, list, read, update and delete, by key and by id.

use licensing_core::api::requests::{LicenseListQuery, LicenseUpdate, parse_json};
use licensing_core::api::{LicenseDeleted, LicenseEmailed, LicenseKeyDeleted, LicensePage};
use licensing_core::model::{License, LicenseDetail};
use licensing_core::store::Page;
use licensing_core::{ApiError, LicenseId, LicenseKey};

use super::{Dev, Endpoint, Input, Query};
use crate::app::licenses::{
    CreateLicense, DeleteLicense, DeleteLicenseByKey, EmailLicense, GetLicense, GetLicenseByKey,
    ListLicenses, SuspendLicense, UnsuspendLicense, UpdateLicense,
};
use crate::http::{Response, success};

impl Endpoint for CreateLicense {
    type Ids = ();
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (): (), input: Input) -> Result<Self, ApiError> {
        Ok(Self(parse_json(&input.json().await?)?))
    }

    fn answer(detail: LicenseDetail) -> Response {
        success(200, detail, "License created")
    }
}

impl Endpoint for ListLicenses {
    type Ids = ();
    const QUERY: Query = Query::Parsed;

    async fn from_request(_: &Dev, (): (), input: Input) -> Result<Self, ApiError> {
        Ok(Self(LicenseListQuery::parse(&input.query)?))
    }

    fn answer(found: Page<License>) -> Response {
        success(
            200,
            LicensePage {
                licenses: found.items,
                total_results: found.total,
                has_next_page: found.has_next_page,
            },
            "Licenses retrieved",
        )
    }
}

impl Endpoint for GetLicenseByKey {
    type Ids = (LicenseKey,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (key,): (LicenseKey,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(key))
    }

    fn answer(detail: LicenseDetail) -> Response {
        success(200, detail, "License retrieved")
    }
}

impl Endpoint for GetLicense {
    type Ids = (LicenseId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (LicenseId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(detail: LicenseDetail) -> Response {
        success(200, detail, "License retrieved")
    }
}

impl Endpoint for UpdateLicense {
    type Ids = (LicenseId,);
    const QUERY: Query = Query::None;

    /// The protocol's order: ids and credentials, then the body (400), then the record (404).
    async fn from_request(_: &Dev, (id,): (LicenseId,), input: Input) -> Result<Self, ApiError> {
        let body: LicenseUpdate = parse_json(&input.json().await?)?;
        Ok(Self(id, body))
    }

    fn answer(detail: LicenseDetail) -> Response {
        success(200, detail, "License updated")
    }
}

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

impl Endpoint for SuspendLicense {
    type Ids = (LicenseId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (LicenseId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(detail: LicenseDetail) -> Response {
        success(200, detail, "License suspended")
    }
}

impl Endpoint for UnsuspendLicense {
    type Ids = (LicenseId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (LicenseId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(detail: LicenseDetail) -> Response {
        success(200, detail, "License unsuspended")
    }
}

impl Endpoint for EmailLicense {
    type Ids = (LicenseId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (LicenseId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(emailed: LicenseEmailed) -> Response {
        success(200, emailed, "License e-mails queued")
    }
}

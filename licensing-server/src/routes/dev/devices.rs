//! A license's hardware identifiers and IP addresses over HTTP.

use licensing_core::api::requests::{DeviceListQuery, parse_json};
use licensing_core::api::{HwidForgotten, HwidPage, IpForgotten, IpPage};
use licensing_core::model::{HwidView, IpRecordView};
use licensing_core::store::Page;
use licensing_core::{ApiError, HwidId, IpId, LicenseId};

use super::{Dev, Endpoint, Input, Query};
use crate::app::devices::{ListHwids, ListIps, SetHwidForgotten, SetIpForgotten};
use crate::http::{Response, success};

impl Endpoint for ListHwids {
    type Ids = (LicenseId,);
    const QUERY: Query = Query::Parsed;

    async fn from_request(
        _: &Dev,
        (license,): (LicenseId,),
        input: Input,
    ) -> Result<Self, ApiError> {
        Ok(Self(license, DeviceListQuery::parse(&input.query)?))
    }

    fn answer(page: Page<HwidView>) -> Response {
        let hwids = HwidPage {
            hwids: page.items,
            total_results: page.total,
            has_next_page: page.has_next_page,
        };
        success(200, hwids, "Hardware identifiers retrieved")
    }
}

impl Endpoint for ListIps {
    type Ids = (LicenseId,);
    const QUERY: Query = Query::Parsed;

    async fn from_request(
        _: &Dev,
        (license,): (LicenseId,),
        input: Input,
    ) -> Result<Self, ApiError> {
        Ok(Self(license, DeviceListQuery::parse(&input.query)?))
    }

    fn answer(page: Page<IpRecordView>) -> Response {
        let ips = IpPage {
            ip_addresses: page.items,
            total_results: page.total,
            has_next_page: page.has_next_page,
        };
        success(200, ips, "IP addresses retrieved")
    }
}

impl Endpoint for SetHwidForgotten {
    type Ids = (LicenseId, HwidId);
    const QUERY: Query = Query::None;

    async fn from_request(
        _: &Dev,
        (license, id): (LicenseId, HwidId),
        input: Input,
    ) -> Result<Self, ApiError> {
        Ok(Self(license, id, parse_json(&input.json().await?)?))
    }

    fn answer(changed: HwidForgotten) -> Response {
        success(200, changed, "Hardware identifier updated")
    }
}

impl Endpoint for SetIpForgotten {
    type Ids = (LicenseId, IpId);
    const QUERY: Query = Query::None;

    async fn from_request(
        _: &Dev,
        (license, id): (LicenseId, IpId),
        input: Input,
    ) -> Result<Self, ApiError> {
        Ok(Self(license, id, parse_json(&input.json().await?)?))
    }

    fn answer(changed: IpForgotten) -> Response {
        success(200, changed, "IP address updated")
    }
}

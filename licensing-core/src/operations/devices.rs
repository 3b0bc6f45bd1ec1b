//! A license's hardware identifiers, IP addresses and request history.

use crate::api::requests::{DeviceListQuery, ForgottenBody, RequestLogQuery};
use crate::api::{HwidForgotten, HwidPage, IpForgotten, IpPage, RequestLogPage};
use crate::model::{HwidView, IpRecordView, RequestLogEntry, Resource, Scope};
use crate::store::Page;
use crate::{HwidId, IpId, LicenseId};

use super::declare;

/// One page of a license's hardware identifiers, with their status.
pub struct ListHwids(pub LicenseId, pub DeviceListQuery);

/// One page of a license's IP addresses, with their status.
pub struct ListIps(pub LicenseId, pub DeviceListQuery);

/// Forgets a hardware identifier (its seat is free) or remembers it again.
pub struct SetHwidForgotten(pub LicenseId, pub HwidId, pub ForgottenBody);

/// Forgets an IP address (its seat is free) or remembers it again.
pub struct SetIpForgotten(pub LicenseId, pub IpId, pub ForgottenBody);

/// (ext) One page of a license's request history.
pub struct ListRequests(pub LicenseId, pub RequestLogQuery);

const READ: Option<Scope> = Some(Scope::read(Resource::Licenses));

declare! {
    ListHwids(license: LicenseId) by query DeviceListQuery;
    Get "licenses/id/{licenseId}/hwid" "list_hwids" READ;
    Page<HwidView> => 200 HwidPage: |page| page.into(), "Hardware identifiers retrieved";

    SetHwidForgotten(license: LicenseId, id: HwidId) by json ForgottenBody;
    Patch "licenses/id/{licenseId}/hwid/{hwidId}" "set_hwid_forgotten" Some(Scope::LICENSE_DEVICES);
    HwidForgotten => 200 "Hardware identifier updated";

    ListIps(license: LicenseId) by query DeviceListQuery;
    Get "licenses/id/{licenseId}/ip-address" "list_ips" READ;
    Page<IpRecordView> => 200 IpPage: |page| page.into(), "IP addresses retrieved";

    SetIpForgotten(license: LicenseId, id: IpId) by json ForgottenBody;
    Patch "licenses/id/{licenseId}/ip-address/{ipId}" "set_ip_forgotten" Some(Scope::LICENSE_DEVICES);
    IpForgotten => 200 "IP address updated";

    ListRequests(license: LicenseId) by query RequestLogQuery;
    Get "licenses/id/{licenseId}/requests" "list_requests" READ;
    Page<RequestLogEntry> => 200 RequestLogPage: |page| page.into(), "Request history retrieved";
}

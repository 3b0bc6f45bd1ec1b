//! A license's hardware identifiers, IP addresses and request history.

use crate::api::requests::{DeviceListQuery, ForgottenBody, RequestLogQuery};
use crate::api::{HwidForgotten, HwidPage, IpForgotten, IpPage, RequestLogPage};
use crate::model::{HwidView, IpRecordView, RequestLogEntry, Resource, Scope};
use crate::store::Page;
use crate::{HwidId, IpId, LicenseId};

use super::declare;
use super::doc::*;

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

/// The parameters of a list of a license's devices or addresses.
const DEVICE_LIST: &[Param] = &[
    LICENSE_ID,
    PAGE,
    PAGE_SIZE,
    DIRECTION,
    Param::query(
        "sortColumn",
        "One of lastSeenAt, createdAt (default lastSeenAt)",
        Kind::Text,
    ),
    Param::query(
        "showForgotten",
        "Also list forgotten records (default false)",
        Kind::Boolean,
    ),
];

declare! {
    ListHwids(license: LicenseId) by query DeviceListQuery;
    Get "licenses/id/{licenseId}/hwid" "list_hwids" READ;
    Page<HwidView> => 200 HwidPage: |page| page.into(), "Hardware identifiers retrieved";
    doc Doc {
        tag: "devices",
        summary: "The license's hardware identifiers.",
        description: "",
        params: DEVICE_LIST,
        body: "",
        success: "A page of records",
        refusals: &[REFUSED, OTHER_TEAM, NO_LICENSE],
    };

    SetHwidForgotten(license: LicenseId, id: HwidId) by json ForgottenBody;
    Patch "licenses/id/{licenseId}/hwid/{hwidId}" "set_hwid_forgotten" Some(Scope::LICENSE_DEVICES);
    HwidForgotten => 200 "Hardware identifier updated";
    doc Doc {
        tag: "devices",
        summary: "Forget (or remember) a hardware identifier: forgotten ones do not count against the limit.",
        description: "",
        params: &[
            LICENSE_ID,
            Param::path("hwidId", "The hardware identifier record", Kind::Uuid),
        ],
        body: "",
        success: "Changed",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, crate::refusals![(404, "LICENSE_NOT_FOUND or BAD_REQUEST (no such record)")]],
    };

    ListIps(license: LicenseId) by query DeviceListQuery;
    Get "licenses/id/{licenseId}/ip-address" "list_ips" READ;
    Page<IpRecordView> => 200 IpPage: |page| page.into(), "IP addresses retrieved";
    doc Doc {
        tag: "devices",
        summary: "The license's IP address records.",
        description: "",
        params: DEVICE_LIST,
        body: "",
        success: "A page of records",
        refusals: &[REFUSED, OTHER_TEAM, NO_LICENSE],
    };

    SetIpForgotten(license: LicenseId, id: IpId) by json ForgottenBody;
    Patch "licenses/id/{licenseId}/ip-address/{ipId}" "set_ip_forgotten" Some(Scope::LICENSE_DEVICES);
    IpForgotten => 200 "IP address updated";
    doc Doc {
        tag: "devices",
        summary: "Forget (or remember) an IP address record.",
        description: "",
        params: &[
            LICENSE_ID,
            Param::path("ipId", "The IP address record", Kind::Uuid),
        ],
        body: "",
        success: "Changed",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, crate::refusals![(404, "LICENSE_NOT_FOUND or BAD_REQUEST (no such record)")]],
    };

    ListRequests(license: LicenseId) by query RequestLogQuery;
    Get "licenses/id/{licenseId}/requests" "list_requests" READ;
    Page<RequestLogEntry> => 200 RequestLogPage: |page| page.into(), "Request history retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) The license's request history: every client request that reached it (verify,\nheartbeat, classloader, checkout, session start and end), accepted or refused, with its\nresult code, address, country, device, product and version; newest first. Kept for the\nserver's `request-history-days` (default 30), at most `request-history-per-license` (10,000)\nentries per license and `request-history-per-team` per team; a license gets at most 20\nentries of its own a second (its other requests counted in the entry of the same endpoint\nand answer).",
        description: "",
        params: &[
            LICENSE_ID,
            PAGE,
            PAGE_SIZE,
            Param::query("sortDirection", "asc or desc by time (default desc)", Kind::Text),
            Param::query("code", "Only requests answered with this result code", Kind::Schema("ResultCode")),
            Param::query("refused", "Only refused requests (true) or accepted ones (false)", Kind::Boolean),
            Param::query("endpoint", "Only requests to this endpoint", Kind::Schema("ClientEndpoint")),
            Param::query("from", "Only requests at or after this time (RFC 3339)", Kind::DateTime),
            Param::query("to", "Only requests before this time (RFC 3339)", Kind::DateTime),
        ],
        body: "",
        success: "A page of the history",
        refusals: &[REFUSED, OTHER_TEAM, NO_LICENSE],
    };
}

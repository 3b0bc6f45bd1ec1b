//! The meaning of list filters and sort orders, and the record changes of an admission, shared
//! by every store so that they all answer alike.

use std::cmp::Ordering;

use super::{Activity, Page};
use crate::api::requests::{
    CustomerSort, DeviceSort, LicenseFilter, LicenseSort, Paging, ProductFilter, ProductSort,
    ReleaseFilter, ReleaseSort, SortDirection,
};
use crate::model::{
    Customer, DeviceLabel, ExpirationType, Hwid, IpRecord, License, Product, Release, TopProduct,
    UsageRecord,
};
use crate::validate::{Country, HardwareId, SearchText};
use crate::verify::Admission;
use crate::{HwidId, IpId, Timestamp};

/// Whether `key` contains `search`, case-insensitively and with the hyphens of both left out: a
/// key typed or pasted without its hyphens (or a piece of one across a group) is found.
pub fn key_contains(key: &str, search: &str) -> bool {
    let needle = || {
        search
            .bytes()
            .filter(|b| *b != b'-')
            .map(|b| b.to_ascii_uppercase())
    };
    if needle().next().is_none() {
        return true;
    }
    let key = key.as_bytes();
    (0..key.len()).filter(|&i| key[i] != b'-').any(|i| {
        let mut hay = key[i..]
            .iter()
            .filter(|b| **b != b'-')
            .map(|b| b.to_ascii_uppercase());
        needle().all(|n| hay.next() == Some(n))
    })
}

/// The search text of a key search as a store compares it with a key without its hyphens (see
/// [`key_contains`]): upper case, without hyphens.
pub fn key_search_text(search: &SearchText) -> String {
    search
        .as_str()
        .chars()
        .filter(|c| *c != '-')
        .collect::<String>()
        .to_ascii_uppercase()
}

/// Whether a license passes the list filters: any of the products, any of the customers, the key
/// containing the search text (see [`key_contains`]), the metadata key present with a value
/// containing the text, expired or not at the filter's moment, the expiration type, suspended or
/// not.
pub fn license_matches(l: &License, f: &LicenseFilter) -> bool {
    f.expiry.is_none_or(|e| l.is_expired(e.at) == e.expired)
        && f.expiration_type.is_none_or(|t| l.expiration_type == t)
        && f.suspended.is_none_or(|s| l.suspended == s)
        && f.policy_id.is_none_or(|p| l.policy_id == Some(p))
        && (f.product_ids.is_empty()
            || l.product_ids.iter().any(|p| f.product_ids.contains(p))
            || l.policy_id.is_some_and(|p| f.product_policies.contains(&p)))
        && (f.customer_ids.is_empty() || l.customer_ids.iter().any(|c| f.customer_ids.contains(c)))
        && f.entitlement.as_ref().is_none_or(|e| {
            l.entitlement_ids.contains(&e.id)
                || l.product_ids.iter().any(|p| e.products.contains(p))
                || l.policy_id.is_some_and(|p| e.policies.contains(&p))
        })
        && f.search
            .as_ref()
            .is_none_or(|s| key_contains(l.license_key.as_str(), s.as_str()))
        && f.expires_within.is_none_or(|w| {
            l.expiration_type != ExpirationType::Never && w.contains(l.expiration_date)
        })
        && f.metadata_search.as_ref().is_none_or(|s| {
            let needle = s.as_str().to_lowercase();
            l.metadata
                .iter()
                .any(|m| m.value.to_lowercase().contains(&needle))
        })
        && f.metadata_key.as_ref().is_none_or(|key| {
            l.metadata.iter().any(|m| {
                &m.key == key
                    && f.metadata_value
                        .as_ref()
                        .is_none_or(|value| m.value.contains(value.as_str()))
            })
        })
}

fn contains_ci(haystack: Option<&str>, needle_lower: &str) -> bool {
    haystack.is_some_and(|h| h.to_lowercase().contains(needle_lower))
}

/// Whether a customer matches the search text (part of e-mail, full name or user name,
/// case-insensitive).
pub fn customer_matches(c: &Customer, search: Option<&SearchText>) -> bool {
    let Some(search) = search else { return true };
    let needle = search.as_str().to_lowercase();
    contains_ci(c.email.as_ref().map(|e| e.as_str()), &needle)
        || contains_ci(c.full_name.as_deref(), &needle)
        || contains_ci(c.username.as_deref(), &needle)
}

/// (ext) Whether a device matches a `deviceSearch`: its name or platform contains the text
/// (case-insensitive), or its hardware identifier is the text (case-insensitive).
pub fn device_matches(h: &Hwid, search: &SearchText) -> bool {
    let needle = search.as_str().to_lowercase();
    contains_ci(h.name.as_ref().map(|n| n.as_str()), &needle)
        || contains_ci(h.platform.as_ref().map(|p| p.as_str()), &needle)
        || h.identifier.as_str().to_lowercase() == needle
}

/// Whether a release passes the list filters.
pub fn release_matches(r: &Release, f: &ReleaseFilter) -> bool {
    f.product_id.is_none_or(|p| r.product_id == p)
        && f.within_products
            .as_ref()
            .is_none_or(|within| within.contains(&r.product_id))
        && f.status.is_none_or(|s| r.status == s)
        && f.search.as_ref().is_none_or(|s| {
            r.version
                .as_str()
                .to_lowercase()
                .contains(&s.as_str().to_lowercase())
        })
}

/// Whether a product is in the list's restriction.
pub fn product_matches(p: &Product, f: &ProductFilter) -> bool {
    f.within
        .as_ref()
        .is_none_or(|within| within.contains(&p.id))
}

fn directed(ordering: Ordering, direction: SortDirection) -> Ordering {
    match direction {
        SortDirection::Asc => ordering,
        SortDirection::Desc => ordering.reverse(),
    }
}

/// License order: by the column, ties by id (so pages never overlap).
pub fn compare_licenses(
    a: &License,
    b: &License,
    sort: LicenseSort,
    dir: SortDirection,
) -> Ordering {
    let optional = |x: Option<Timestamp>, y: Option<Timestamp>| {
        // Those without a value last, whichever the direction.
        x.is_none()
            .cmp(&y.is_none())
            .then_with(|| directed(x.cmp(&y).then_with(|| a.id.cmp(&b.id)), dir))
    };
    let by = match sort {
        LicenseSort::CreatedAt => a.created_at.cmp(&b.created_at),
        LicenseSort::UpdatedAt => a.updated_at.cmp(&b.updated_at),
        LicenseSort::ExpirationDate => return optional(a.expiration_date, b.expiration_date),
        LicenseSort::LastActiveAt => return optional(a.last_active_at, b.last_active_at),
    };
    directed(by.then_with(|| a.id.cmp(&b.id)), dir)
}

/// Customer order: text columns compare case-insensitively, missing values first.
pub fn compare_customers(
    a: &Customer,
    b: &Customer,
    sort: CustomerSort,
    dir: SortDirection,
) -> Ordering {
    let text =
        |x: Option<&str>, y: Option<&str>| x.map(str::to_lowercase).cmp(&y.map(str::to_lowercase));
    let by = match sort {
        CustomerSort::FullName => text(a.full_name.as_deref(), b.full_name.as_deref()),
        CustomerSort::Email => text(
            a.email.as_ref().map(|e| e.as_str()),
            b.email.as_ref().map(|e| e.as_str()),
        ),
        CustomerSort::Username => text(a.username.as_deref(), b.username.as_deref()),
        CustomerSort::CreatedAt => a.created_at.cmp(&b.created_at),
        CustomerSort::UpdatedAt => a.updated_at.cmp(&b.updated_at),
    };
    directed(by.then_with(|| a.id.cmp(&b.id)), dir)
}

/// Release order; `latest` sorts latest releases after the others (ascending), then by creation.
pub fn compare_releases(
    a: &Release,
    b: &Release,
    sort: ReleaseSort,
    dir: SortDirection,
) -> Ordering {
    let by = match sort {
        ReleaseSort::Version => a.version.as_str().cmp(b.version.as_str()),
        ReleaseSort::CreatedAt => a.created_at.cmp(&b.created_at),
        ReleaseSort::UpdatedAt => a.updated_at.cmp(&b.updated_at),
        ReleaseSort::Latest => a
            .latest
            .cmp(&b.latest)
            .then_with(|| a.created_at.cmp(&b.created_at)),
    };
    directed(by.then_with(|| a.id.cmp(&b.id)), dir)
}

/// Product order.
pub fn compare_products(
    a: &Product,
    b: &Product,
    sort: ProductSort,
    dir: SortDirection,
) -> Ordering {
    let by = match sort {
        ProductSort::Name => a.name.to_lowercase().cmp(&b.name.to_lowercase()),
        ProductSort::CreatedAt => a.created_at.cmp(&b.created_at),
        ProductSort::UpdatedAt => a.updated_at.cmp(&b.updated_at),
    };
    directed(by.then_with(|| a.id.cmp(&b.id)), dir)
}

/// Order of hardware-identifier and IP records.
pub fn compare_usage<R: UsageRecord>(
    a: &R,
    b: &R,
    sort: DeviceSort,
    dir: SortDirection,
) -> Ordering {
    let by = match sort {
        DeviceSort::LastSeenAt => a.last_seen_at().cmp(&b.last_seen_at()),
        DeviceSort::CreatedAt => a.created_at().cmp(&b.created_at()),
    };
    directed(by.then_with(|| a.record_id().cmp(&b.record_id())), dir)
}

/// The `limit` products with the most licenses, most first (ties by name, then id).
pub fn rank_top_products(mut products: Vec<TopProduct>, limit: usize) -> Vec<TopProduct> {
    products.sort_by(|a, b| {
        b.licenses
            .cmp(&a.licenses)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.id.cmp(&b.id))
    });
    products.truncate(limit);
    products
}

/// Sorts all matching items and cuts the page: the simple way, for stores that hold the items.
pub fn page_of<T>(
    mut items: Vec<T>,
    paging: &Paging,
    cmp: impl FnMut(&T, &T) -> Ordering,
) -> Page<T> {
    items.sort_by(cmp);
    let total = items.len() as u64;
    let (items, has_next_page) = paging.slice(items);
    Page {
        items,
        total,
        has_next_page,
    }
}

/// (ext) One page of a license's live sessions, by start, newest first unless `paging` says
/// `asc` (ties by id, so that pages never overlap).
pub fn sessions_page(
    live: Vec<crate::model::LicenseSession>,
    paging: &Paging,
) -> Page<crate::model::LicenseSession> {
    let desc = paging.direction == crate::api::requests::SortDirection::Desc;
    page_of(live, paging, |a, b| {
        let order = (a.started_at, a.id).cmp(&(b.started_at, b.id));
        if desc { order.reverse() } else { order }
    })
}

/// How many records to drop at once when a license reaches the cap on stored records: a tenth
/// of it, so that a license at the cap looks its records over once per that many new ones.
pub fn prune_batch(max_records: u32) -> usize {
    (max_records as usize / 10).max(1)
}

/// The records to drop to make room under the cap, least recently seen first, at most `want`:
/// those that count against nothing (forgotten, past the team's `timeout`, or any when there is
/// no `limit`). Empty when none may be dropped.
pub fn prune_victims<R: UsageRecord>(
    records: &[R],
    limit: Option<u32>,
    timeout: Option<u32>,
    now: Timestamp,
    want: usize,
) -> Vec<&R> {
    let limited = limit.is_some_and(|l| l > 0);
    let mut victims: Vec<&R> = records
        .iter()
        .filter(|r| {
            !limited || !crate::verify::counts(r.forgotten(), r.last_seen_at(), timeout, now)
        })
        .collect();
    victims.sort_by(|a, b| {
        a.last_seen_at()
            .cmp(&b.last_seen_at())
            .then_with(|| a.record_id().cmp(&b.record_id()))
    });
    victims.truncate(want);
    victims
}

/// The check every store's `restore_usage` makes first: each record names the license (and
/// team) it is restored into.
pub fn check_usage_owner(
    team: crate::TeamId,
    license: crate::LicenseId,
    hwids: &[Hwid],
    ips: &[IpRecord],
) -> super::StoreResult<()> {
    let foreign = hwids
        .iter()
        .any(|h| h.license_id != license || h.team_id != team)
        || ips
            .iter()
            .any(|r| r.license_id != license || r.team_id != team);
    if foreign {
        return Err(super::StoreError::conflict(
            "licenseId",
            "records must name their license",
        ));
    }
    Ok(())
}

/// The refusal of a request whose new record would pass the cap when no record may be dropped.
pub fn cap_reached(kind: crate::verify::RecordKind, max_records: u32) -> crate::verify::Denial {
    use crate::code::ResultCode;
    let (code, what) = match kind {
        crate::verify::RecordKind::Hwid => (ResultCode::HwidLimitReached, "hardware identifiers"),
        crate::verify::RecordKind::Ip => (ResultCode::IpLimitReached, "IP addresses"),
    };
    crate::verify::Denial {
        code,
        details: std::borrow::Cow::Owned(format!(
            "This license holds the most {what} the server keeps per license ({max_records}) and none of them may be dropped: forget some"
        )),
        blacklist_hit: None,
    }
}

/// A new hardware-identifier record for a license.
pub fn new_hwid(
    license: &License,
    identifier: &HardwareId,
    label: &DeviceLabel,
    now: Timestamp,
) -> Hwid {
    Hwid {
        id: HwidId::new(),
        identifier: identifier.clone(),
        forgotten: false,
        license_id: license.id,
        team_id: license.team_id,
        last_seen_at: now,
        created_at: now,
        updated_at: now,
        name: label.name.clone(),
        platform: label.platform.clone(),
    }
}

/// A new IP record for a license, with the country of the request.
pub fn new_ip(license: &License, activity: &Activity, now: Timestamp) -> IpRecord {
    IpRecord {
        id: IpId::new(),
        address: activity.ip.to_canonical(),
        forgotten: false,
        country: activity.country.map(|c| c.name.to_owned()),
        alpha2: activity.country.map(|c| c.alpha2.to_owned()),
        alpha3: activity.country.map(|c| c.alpha3.to_owned()),
        license_id: license.id,
        team_id: license.team_id,
        last_seen_at: now,
        created_at: now,
        updated_at: now,
    }
}

/// Refreshes a known hardware identifier: seen now, not forgotten, labelled as the request
/// says.
pub fn refresh_hwid(h: &mut Hwid, label: &DeviceLabel, now: Timestamp) {
    if h.forgotten {
        h.forgotten = false;
        h.updated_at = now;
    }
    label.apply(h, now);
    h.last_seen_at = now;
}

/// Refreshes a known IP record: seen now, not forgotten, country updated when known.
pub fn refresh_ip(r: &mut IpRecord, activity: &Activity, now: Timestamp) {
    if r.forgotten {
        r.forgotten = false;
        r.updated_at = now;
    }
    if let Some(c) = activity.country {
        set_ip_country(r, c);
    }
    r.last_seen_at = now;
}

/// Sets an IP record's country (name and both codes).
pub fn set_ip_country(r: &mut IpRecord, c: Country) {
    r.country = Some(c.name.to_owned());
    r.alpha2 = Some(c.alpha2.to_owned());
    r.alpha3 = Some(c.alpha3.to_owned());
}

/// The license after an admitted request: clock started if it starts now, `lastActiveAt` set.
pub fn license_after(license: &License, admission: &Admission, now: Timestamp) -> License {
    let mut next = license.clone();
    if let Some(date) = admission.activate {
        next.expiration_date = Some(date);
        next.updated_at = now;
    }
    next.last_active_at = Some(now);
    next
}

/// Whether the team (whose entitlements are `existing`) may have `new`: its code must be free
/// (`Conflict` on `code`) and the team under [`MAX_ENTITLEMENTS`](crate::model::MAX_ENTITLEMENTS)
/// (`Limit`).
pub fn admit_entitlement<'a>(
    existing: impl IntoIterator<Item = &'a crate::model::Entitlement>,
    new: &crate::model::Entitlement,
) -> Result<(), super::StoreError> {
    let mut count = 0;
    for e in existing {
        if e.code == new.code && e.id != new.id {
            return Err(code_taken());
        }
        count += 1;
    }
    if count >= crate::model::MAX_ENTITLEMENTS {
        return Err(super::StoreError::Limit(format!(
            "a team has at most {} entitlements",
            crate::model::MAX_ENTITLEMENTS
        )));
    }
    Ok(())
}

/// The conflict of an entitlement code the team already uses.
pub fn code_taken() -> super::StoreError {
    super::StoreError::conflict(
        "code",
        "is already used by another entitlement of this team",
    )
}

/// Whether the team (whose policies are `existing`) may have `new`: under
/// [`MAX_POLICIES`](crate::model::MAX_POLICIES) (`Limit`).
pub fn admit_policy<'a>(
    existing: impl IntoIterator<Item = &'a crate::model::Policy>,
    new: &crate::model::Policy,
) -> Result<(), super::StoreError> {
    let count = existing.into_iter().filter(|p| p.id != new.id).count();
    if count >= crate::model::MAX_POLICIES {
        return Err(super::StoreError::Limit(format!(
            "a team has at most {} policies",
            crate::model::MAX_POLICIES
        )));
    }
    Ok(())
}

/// The refusal to delete a policy that `count` licenses use.
pub fn policy_in_use(count: u64) -> super::StoreError {
    let licenses = if count == 1 { "license" } else { "licenses" };
    super::StoreError::State(format!(
        "The policy is used by {count} {licenses}: move them to another policy, or delete it with ?detach=true to write its terms into them"
    ))
}

/// Whether a policy matches a search (in its name, case-insensitive).
pub fn policy_matches(p: &crate::model::Policy, search: Option<&SearchText>) -> bool {
    search.is_none_or(|s| p.name.to_lowercase().contains(&s.as_str().to_lowercase()))
}

/// The policy list's order.
pub fn compare_policies(
    a: &crate::model::Policy,
    b: &crate::model::Policy,
    sort: crate::api::requests::PolicySort,
    direction: crate::api::requests::SortDirection,
) -> Ordering {
    use crate::api::requests::PolicySort;
    let order = match sort {
        PolicySort::Name => a.name.to_lowercase().cmp(&b.name.to_lowercase()),
        PolicySort::CreatedAt => a.created_at.cmp(&b.created_at),
    }
    .then_with(|| a.id.cmp(&b.id));
    match direction {
        crate::api::requests::SortDirection::Asc => order,
        crate::api::requests::SortDirection::Desc => order.reverse(),
    }
}

/// Whether an entitlement matches a search (in its name or code, case-insensitive).
pub fn entitlement_matches(e: &crate::model::Entitlement, search: Option<&SearchText>) -> bool {
    search.is_none_or(|s| {
        let needle = s.as_str().to_lowercase();
        e.name.to_lowercase().contains(&needle) || e.code.to_lowercase().contains(&needle)
    })
}

/// The entitlement list's order.
pub fn compare_entitlements(
    a: &crate::model::Entitlement,
    b: &crate::model::Entitlement,
    sort: crate::api::requests::EntitlementSort,
    direction: crate::api::requests::SortDirection,
) -> Ordering {
    use crate::api::requests::EntitlementSort;
    let order = match sort {
        EntitlementSort::Name => a.name.to_lowercase().cmp(&b.name.to_lowercase()),
        EntitlementSort::Code => a.code.cmp(&b.code),
        EntitlementSort::CreatedAt => a.created_at.cmp(&b.created_at),
    }
    .then_with(|| a.id.cmp(&b.id));
    match direction {
        crate::api::requests::SortDirection::Asc => order,
        crate::api::requests::SortDirection::Desc => order.reverse(),
    }
}

#[cfg(test)]
mod tests {
    use super::key_contains;

    #[test]
    fn key_searches_leave_hyphens_out() {
        let key = "ABCDE-FGHIJ-KLMNO-PQRST-UVWXY";
        for found in [
            "ABCDE-FGHIJ-KLMNO-PQRST-UVWXY",
            "abcdefghijklmnopqrstuvwxy",
            "defgh",
            "E-F",
            "jk-lm",
            "-",
            "",
            "UVWXY",
        ] {
            assert!(key_contains(key, found), "{found}");
        }
        for missing in ["ABCDF", "UVWXYZ", "Z", "ABCDE-FGHIJ-KLMNO-PQRST-UVWXY-A"] {
            assert!(!key_contains(key, missing), "{missing}");
        }
    }
}

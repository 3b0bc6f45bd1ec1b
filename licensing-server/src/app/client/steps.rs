//! Steps 2 to 8 of the client protocol (protocol.md section 3) over the store: gather what the
//! decision reads (the license, the named product's releases), run core's
//! [`licensing_core::verify::precheck`], count blacklist hits, and record the request in the
//! store's atomic unit; then read what a verify's answer shows.

use std::net::IpAddr;

use licensing_core::model::{
    Branch, DeviceLabel, License, LicenseSession, Product, Release, SessionStep, effective_codes,
    missing_codes,
};
use licensing_core::store::{Activity, ActivityRules, LicenseRead, Store};
use licensing_core::validate::{
    BranchName, Country, DeviceName, DevicePlatform, HardwareId, Version,
};
use licensing_core::verify::{self, Catalog, ClientRequest, Context, RequestKind};
use licensing_core::{
    ApiError, CustomerId, LicenseId, LicenseKey, ProductId, ResultCode, Timestamp,
};

use crate::runtime::client_events::{ClientEventQueue, Refused};
use crate::runtime::contexts::TeamContext;
use crate::runtime::license_cache::LicenseCache;
use crate::runtime::usage::UsageRecorder;

/// A validated client request, as steps 2 to 8 need it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request<'a> {
    /// Which endpoint.
    pub(crate) kind: RequestKind,
    /// The license key.
    pub(crate) license_key: &'a LicenseKey,
    /// The device.
    pub(crate) hardware_id: Option<&'a HardwareId>,
    /// The claimed customer.
    pub(crate) customer_id: Option<CustomerId>,
    /// The named product.
    pub(crate) product_id: Option<ProductId>,
    /// The software version.
    pub(crate) version: Option<&'a Version>,
    /// The branch.
    pub(crate) branch: Option<&'a BranchName>,
    /// (ext) What the request calls the device.
    pub(crate) device_name: Option<&'a DeviceName>,
    /// (ext) The device's platform.
    pub(crate) platform: Option<&'a DevicePlatform>,
    /// The client address.
    pub(crate) ip: IpAddr,
    /// Its country.
    pub(crate) country: Option<Country>,
}

impl Request<'_> {
    /// What the store records of the request.
    fn activity(&self) -> Activity {
        Activity {
            hardware_id: self.hardware_id.cloned(),
            label: DeviceLabel {
                name: self.device_name.cloned(),
                platform: self.platform.cloned(),
            },
            ip: self.ip,
            country: self.country,
            session: SessionStep::None,
        }
    }

    /// The request as a refusal's event shows it.
    fn refused<'a>(&'a self, team: &TeamContext, license: Option<&'a License>) -> Refused<'a> {
        Refused {
            team: team.team.id,
            license,
            hardware_id: self.hardware_id,
            ip: self.ip,
            country: self.country,
        }
    }
}

/// What steps 2 to 8 record besides the answer: request counts, blacklist hits and the
/// refusals' webhook events, each written behind; and the licenses they read, cached.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Recorders<'a> {
    /// Request counts and blacklist hits.
    pub(crate) usage: &'a UsageRecorder,
    /// The refusals' events.
    pub(crate) events: &'a ClientEventQueue,
    /// Licenses as read, with the records of the devices and addresses that used them.
    pub(crate) licenses: &'a LicenseCache,
    /// The teams' contexts (dropped when a license names a policy its team's lacks).
    pub(crate) contexts: &'a crate::runtime::contexts::TeamContexts,
}

/// A request that passed steps 2 to 6.
#[derive(Debug)]
pub(crate) struct Checked {
    /// The license as read (with the request's own records where the store read them).
    pub(crate) read: LicenseRead,
    /// What the store records of the request.
    pub(crate) activity: Activity,
    /// The license as it applies: with its policy's terms (the one the answer shows).
    pub(crate) license: License,
    /// (ext) When its grace period ends, if it is in one (expired, within its policy's
    /// `graceDays`).
    pub(crate) grace_until: Option<Timestamp>,
    /// The release the request resolved to (the classloader serves it).
    pub(crate) release: Option<Release>,
    /// The named product's branches and releases, when the license grants the product.
    pub(crate) catalog: Option<(Vec<Branch>, Vec<Release>)>,
}

/// The product a request names, when the license grants it (only then do releases matter, and
/// only then is it counted in the statistics).
pub(crate) fn named_product(
    license: Option<&License>,
    product: Option<ProductId>,
) -> Option<ProductId> {
    let product = product?;
    license
        .filter(|l| l.product_ids.contains(&product))
        .map(|_| product)
}

/// Steps 2 to 6. Also returns the product to count the request under and the license found,
/// whatever the outcome.
pub(crate) async fn check<S: Store>(
    store: &S,
    recorders: Recorders<'_>,
    team: &TeamContext,
    request: &Request<'_>,
    now: Timestamp,
) -> (
    Option<ProductId>,
    Option<LicenseId>,
    Result<Checked, ApiError>,
) {
    let activity = request.activity();
    let read = match recorders
        .licenses
        .get(team.team.id, request.license_key, &activity)
    {
        Ok(hit) => Some(hit),
        Err(ticket) => match store
            .read_license_for_activity(team.team.id, request.license_key, &activity)
            .await
        {
            Ok(read) => {
                if let Some(read) = &read {
                    recorders.licenses.store(ticket, &activity, read);
                }
                read
            }
            Err(e) => return (None, None, Err(ApiError::from(e))),
        },
    };
    // The license with its policy's terms, live: what every check and the answer read.
    let stored = read.as_ref().map(|r| &r.license);
    if stored.is_some_and(|l| team.policies.lacks_policy_of(l)) {
        // Put on a policy made since the team was read: the next request reads it again (until
        // then the license's own copy of the policy's terms applies).
        recorders.contexts.invalidate(team.team.id);
    }
    let effective = stored.map(|l| team.policies.effective(l));
    let license = effective.as_deref();
    let grace_days = stored.map_or(0, |l| team.policies.grace_days(l));
    let found = license.map(|l| l.id);
    let product = named_product(license, request.product_id);
    let catalog = match product {
        Some(product) => match store.catalog(team.team.id, product).await {
            Ok(catalog) => Some(catalog),
            Err(e) => return (Some(product), found, Err(ApiError::from(e))),
        },
        None => None,
    };
    let ctx = Context {
        settings: &team.team.settings,
        blacklist: &team.blacklist,
        license,
        catalog: catalog
            .as_ref()
            .map(|(branches, releases)| Catalog { branches, releases }),
        grace_days,
    };
    let req = ClientRequest {
        kind: request.kind,
        hardware_id: request.hardware_id,
        customer_id: request.customer_id,
        product_id: request.product_id,
        version: request.version,
        branch: request.branch,
        ip: request.ip,
        country: request.country,
    };
    let outcome = match verify::precheck(&ctx, &req, now) {
        Ok((license, release)) => Ok((license.clone(), release.cloned())),
        Err(denial) => {
            if let Some(hit) = denial.blacklist_hit {
                recorders.usage.hit(team.team.id, hit);
            }
            recorders.events.refused(
                team.client_events,
                &request.refused(team, license),
                &denial,
                now,
            );
            Err(ApiError::from(denial))
        }
    };
    let checked = outcome.and_then(|(license, release)| {
        Ok(Checked {
            grace_until: verify::grace_until(&license, grace_days, now),
            read: read.ok_or_else(|| {
                ApiError::from(licensing_core::store::StoreError::NotFound(
                    licensing_core::store::Entity::License,
                ))
            })?,
            activity,
            license,
            release,
            catalog,
        })
    });
    (product, found, checked)
}

/// Steps 7 and 8 in the store's atomic unit: the limits (and a session's), then the device and
/// address records, the activation clock and `lastActiveAt`. Returns the license after it, and
/// the session started or extended. A request that changed more than the times of records that
/// counted already (or that the atomic step refused) drops its license from the cache.
pub(crate) async fn record<S: Store>(
    store: &S,
    recorders: Recorders<'_>,
    team: &TeamContext,
    max_records: u32,
    (request, checked): (&Request<'_>, &Checked),
    now: Timestamp,
) -> Result<(License, Option<LicenseSession>), ApiError> {
    let recorded = store
        .record_activity_after(
            &checked.read,
            &ActivityRules {
                settings: &team.team.settings,
                max_records,
                events: team.client_events,
                policies: &team.policies,
            },
            &checked.activity,
            now,
        )
        .await;
    // What was read decided it (the store's path without the atomic step) and nothing new was
    // written: the cached copy stays true. Otherwise (a record past its timeout as read, a new
    // or un-forgotten record, an activation, a session's start, a refusal) the next request
    // reads the store again.
    let settled =
        matches!(&recorded, Ok(Ok(r)) if r.decided_from_read && !r.admission.creates_state());
    if !settled {
        recorders
            .licenses
            .forget(team.team.id, checked.license.license_key.as_str());
    }
    match recorded? {
        Ok(recorded) => Ok((
            team.policies.effective(&recorded.license).into_owned(),
            recorded.session,
        )),
        Err(denial) => {
            recorders.events.refused(
                team.client_events,
                &request.refused(team, Some(&checked.license)),
                &denial,
                now,
            );
            Err(ApiError::from(denial))
        }
    }
}

/// What a license grants: its entitlement codes, and its products when they were read to find
/// them (a verify's answer shows them).
pub(crate) struct Granted {
    /// The codes, sorted.
    pub(crate) codes: Vec<String>,
    /// The license's products, when read.
    pub(crate) products: Option<Vec<Product>>,
}

/// The entitlements `license` grants (its own and its products'), by the team's codes. A team
/// without entitlements grants none and reads nothing.
pub(crate) async fn granted<S: Store>(
    store: &S,
    team: &TeamContext,
    license: &License,
) -> Result<Granted, ApiError> {
    if team.entitlements.is_empty() {
        return Ok(Granted {
            codes: Vec::new(),
            products: None,
        });
    }
    let products = if license.product_ids.is_empty() {
        Vec::new()
    } else {
        store
            .get_products(license.team_id, &license.product_ids)
            .await?
    };
    let codes = effective_codes(
        &license.entitlement_ids,
        products.iter().map(|p| p.entitlement_ids.as_slice()),
        |id| team.entitlements.get(&id).map(String::as_str),
    );
    Ok(Granted {
        codes,
        products: Some(products),
    })
}

/// 403 `ENTITLEMENTS_MISSING` naming the codes of `requested` that `granted` lacks, in request
/// order (a code the team does not know is lacked too).
pub(crate) fn require_entitlements(
    requested: &[String],
    granted: &[String],
) -> Result<(), ApiError> {
    let missing = missing_codes(requested, granted);
    if missing.is_empty() {
        return Ok(());
    }
    Err(ApiError::new(
        ResultCode::EntitlementsMissing,
        format!("The license lacks entitlements: {}", missing.join(", ")),
    ))
}

/// `data` of a successful verify: the license, its customers, and its products each with the
/// latest published release of the requested branch (none where the product lacks the branch).
/// `products`: the license's products, when already read.
pub(crate) async fn verify_data<S: Store>(
    store: &S,
    license: &License,
    products: Option<Vec<Product>>,
    checked_catalog: Option<&(Vec<Branch>, Vec<Release>)>,
    named: Option<ProductId>,
    branch: Option<&BranchName>,
) -> Result<licensing_core::api::VerifyData, ApiError> {
    let team = license.team_id;
    let customers = if license.customer_ids.is_empty() {
        Vec::new()
    } else {
        store.get_customers(team, &license.customer_ids).await?
    };
    let products: Vec<Product> = match products {
        Some(products) => products,
        None if license.product_ids.is_empty() => Vec::new(),
        None => store.get_products(team, &license.product_ids).await?,
    };
    // The named product's catalog was read for the checks; only the others are read here.
    let reuse = |id: ProductId| named == Some(id) && checked_catalog.is_some();
    let mut others: Vec<(Vec<Branch>, Vec<Release>)> = Vec::new();
    for product in products.iter().filter(|p| !reuse(p.id)) {
        others.push(store.catalog(team, product.id).await?);
    }
    let mut others = others.iter();
    let latest: Vec<Option<&Release>> = products
        .iter()
        .map(|product| {
            let (branches, releases) = if reuse(product.id) {
                checked_catalog?
            } else {
                others.next()?
            };
            let branch_id = match branch {
                None => None,
                Some(name) => Some(branches.iter().find(|b| &b.name == name)?.id),
            };
            licensing_core::api::latest_release(releases, branch_id, branch.is_none())
        })
        .collect();
    let pairs: Vec<(&Product, Option<&Release>)> = products.iter().zip(latest).collect();
    Ok(licensing_core::api::VerifyData::build(
        license, &customers, &pairs,
    ))
}

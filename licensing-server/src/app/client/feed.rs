//! (ext) Update feeds, feed tokens and artifact downloads as one use case: who reads (a license
//! by its key or a feed token, or anyone where the product's feed is public), verify's license
//! checks for that reader ([`licensing_core::verify::admit_update`]), and the product's releases
//! they read. The routes render the feeds in each updater's format.

use std::net::IpAddr;
use std::sync::Arc;

use licensing_core::model::{
    Artifact, Branch, ClientEvent, License, Product, Release, ReleaseStatus, UpdateFeed,
};
use licensing_core::store::{LicenseStore, ProductStore, RaisedEvent, ReleaseStore};
use licensing_core::updates::{self, FeedToken, Reader};
use licensing_core::verify::{self, Context};
use licensing_core::{ApiError, ArtifactId, LicenseKey, ProductId, ResultCode, TeamId, Timestamp};

use super::{Seen, team_context};
use crate::runtime::contexts::TeamContext;
use crate::runtime::ratelimit::{RateLimiter, ip_key};
use crate::state::AppState;

/// How an updater names its license.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Credential {
    /// None: a public feed's reader.
    None,
    /// The license key, from `Authorization: License <key>` or `X-License-Key`.
    Key(LicenseKey),
    /// A feed token, from the path (`…/t/{token}/…`).
    Token(String),
}

/// A reader let in: the team, the product, the license (as it applies, with its policy's terms)
/// when one reads, and the product's branches and releases.
pub(crate) struct Access {
    /// The team's context (its keys sign the generic feed).
    pub(crate) context: Arc<TeamContext>,
    /// The product.
    pub(crate) product: Product,
    /// Who reads.
    pub(crate) reader: Reader,
    /// The license, when one reads.
    pub(crate) license: Option<License>,
    /// The product's branches.
    pub(crate) branches: Vec<Branch>,
    /// The product's releases.
    pub(crate) releases: Vec<Release>,
}

impl Access {
    /// The branch a channel names: `None` for `stable` (and for the names updaters use for it:
    /// electron-updater's `latest`); `Err` for a channel the product does not have.
    pub(crate) fn channel(&self, name: &str) -> Result<Option<licensing_core::BranchId>, ()> {
        if name == updates::STABLE || name == "latest" {
            return Ok(None);
        }
        self.branches
            .iter()
            .find(|b| b.name.as_str() == name)
            .map(|b| Some(b.id))
            .ok_or(())
    }

    /// What the reader is offered on channel `branch`, newest first.
    pub(crate) fn offered(&self, branch: Option<licensing_core::BranchId>) -> updates::Catalog<'_> {
        updates::Catalog::offered(&self.releases, branch, self.reader)
    }

    /// The answers are the license's own: not to be kept by shared caches.
    pub(crate) fn is_private(&self) -> bool {
        self.license.is_some()
    }

    /// The artifact `id` and its release, as a download may take it: 404 when the product has
    /// none of that id, 410 `RELEASE_YANKED` when its release was withdrawn (ARCHIVED), 403
    /// when the release is a draft or limited to other licenses.
    pub(crate) fn artifact(&self, id: ArtifactId) -> Result<(&Release, &Artifact), ApiError> {
        let (release, artifact) = self
            .releases
            .iter()
            .find_map(|r| r.artifacts.iter().find(|a| a.id == id).map(|a| (r, a)))
            .ok_or_else(|| ApiError::new(ResultCode::ArtifactNotFound, "Artifact not found"))?;
        match release.status {
            ReleaseStatus::Archived => {
                return Err(ApiError::new(
                    ResultCode::ReleaseYanked,
                    format!(
                        "Release {} was withdrawn: its downloads are gone",
                        release.version
                    ),
                ));
            }
            ReleaseStatus::Draft => {
                return Err(ApiError::new(
                    ResultCode::ReleaseDraft,
                    "Release is a draft",
                ));
            }
            ReleaseStatus::Published | ReleaseStatus::Deprecated => {}
        }
        let allowed = match self.reader {
            Reader::License(license) => {
                release.allowed_license_ids.is_empty()
                    || release.allowed_license_ids.contains(&license)
            }
            Reader::Anyone => release.allowed_license_ids.is_empty(),
        };
        if !allowed {
            return Err(ApiError::new(
                ResultCode::NoAccessToRelease,
                "This license has no access to the release",
            ));
        }
        Ok((release, artifact))
    }
}

/// Lets a reader of `product` of `team` in, from `ip`: the rate limit (`limiter`), the team, the
/// product, the credential (401 without one where the feed is not public; 401 for a token that
/// is unknown, malformed, expired or another product's), then verify's license checks.
pub(crate) async fn access(
    state: &AppState,
    (team, product): (TeamId, ProductId),
    credential: &Credential,
    ip: IpAddr,
    limiter: Option<&RateLimiter<u128>>,
    seen: &mut Seen,
) -> Result<Access, ApiError> {
    if let Some(limiter) = limiter {
        seen.admit(limiter.check(&ip_key(ip)).await)?;
    }
    let context = team_context(state, team).await?;
    seen.context = Some(context.clone());
    let country = state.geo.country(ip);
    seen.country = country;
    let now = Timestamp::now();
    let store = &state.store;
    let product = store
        .get_product(team, product)
        .await?
        .ok_or_else(|| ApiError::new(ResultCode::ProductNotFound, "Product not found"))?;
    let stored = match credential {
        Credential::None if product.update_feed == UpdateFeed::Public => None,
        Credential::None => {
            return Err(ApiError::new(
                ResultCode::Unauthorized,
                "This product's updates need a license: send Authorization: License <key> or X-License-Key: <key>, or read the feed under a feed token (POST …/updates/{productId}/token)",
            ));
        }
        Credential::Key(key) => Some(store.get_license_by_key(team, key).await?),
        Credential::Token(text) => Some(Some(
            token_license(state, &context, &product, text, now).await?,
        )),
    };
    let (reader, license) = match stored {
        None => (Reader::Anyone, None),
        Some(found) => {
            let license = admit(
                state,
                &context,
                found.as_ref(),
                product.id,
                (ip, country),
                None,
                now,
                seen,
            )?;
            (Reader::License(license.id), Some(license))
        }
    };
    seen.product = Some(product.id);
    if state.request_log.on() {
        seen.named = Some(product.id);
    }
    let (branches, releases) = store.catalog(team, product.id).await?;
    Ok(Access {
        context,
        product,
        reader,
        license,
        branches,
        releases,
    })
}

/// Verify's license checks of an update request (the license found, the blacklists, the
/// product, suspended and expired past the policy's grace), counting a blacklist hit and
/// raising the refusal's event as verify does. Returns the license as it applies.
#[allow(clippy::too_many_arguments)]
fn admit(
    state: &AppState,
    context: &TeamContext,
    found: Option<&License>,
    product: ProductId,
    (ip, country): (IpAddr, Option<licensing_core::validate::Country>),
    hardware_id: Option<&licensing_core::validate::HardwareId>,
    now: Timestamp,
    seen: &mut Seen,
) -> Result<License, ApiError> {
    seen.license = found.map(|l| l.id);
    let effective = found.map(|l| context.policies.effective(l));
    let grace_days = found.map_or(0, |l| context.policies.grace_days(l));
    let ctx = Context {
        settings: &context.team.settings,
        blacklist: &context.blacklist,
        license: effective.as_deref(),
        catalog: None,
        grace_days,
    };
    let checked = context
        .blacklist
        .check(ip, country, hardware_id)
        .and_then(|()| verify::admit_update(&ctx, product, ip, country, now));
    match checked {
        Ok(license) => Ok(license.clone()),
        Err(denial) => {
            if let Some(hit) = denial.blacklist_hit {
                state.usage.hit(context.team.id, hit);
            }
            state.client_events.refused(
                context.client_events,
                &crate::runtime::client_events::Refused {
                    team: context.team.id,
                    license: effective.as_deref(),
                    hardware_id,
                    ip,
                    country,
                },
                &denial,
                now,
            );
            Err(ApiError::from(denial))
        }
    }
}

/// The license a feed token names, once its signature, product and time are checked (401
/// otherwise, saying which).
async fn token_license(
    state: &AppState,
    context: &TeamContext,
    product: &Product,
    text: &str,
    now: Timestamp,
) -> Result<License, ApiError> {
    let refused = |why: &str| {
        ApiError::new(
            ResultCode::Unauthorized,
            format!("{why}: mint a feed token with POST …/updates/{{productId}}/token"),
        )
    };
    let (claims, key_id, signed) =
        FeedToken::decode(text).ok_or_else(|| refused("The feed token is malformed"))?;
    let kid = hex::encode(key_id);
    let key = context
        .keys
        .public_keys()
        .signing_key(Some(&kid))
        .ok_or_else(|| refused("The feed token was signed by a key this team no longer uses"))?;
    use base64::Engine as _;
    let signature = base64::engine::general_purpose::STANDARD.encode(signed.signature);
    key.verify(&signed.message, &signature)
        .map_err(|_| refused("The feed token's signature does not verify"))?;
    if claims.product != product.id {
        return Err(refused("The feed token is for another product"));
    }
    if claims.expires_at <= now {
        return Err(refused(&format!(
            "The feed token expired at {}",
            claims.expires_at
        )));
    }
    state
        .store
        .get_license(context.team.id, claims.license)
        .await?
        .ok_or_else(|| refused("The feed token's license no longer exists"))
}

/// A minted feed token.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MintedToken {
    /// The token, for the path `…/updates/{productId}/t/{token}/…`.
    pub(crate) token: String,
    /// When it stops working.
    pub(crate) expires_at: Timestamp,
}

/// Mints a feed token of `key` for `product` of `team`: the rate limit, the team, the product,
/// verify's license checks (with the device's blacklist, when one is named; no device is
/// recorded).
pub(crate) async fn mint_token(
    state: &AppState,
    (team, product): (TeamId, ProductId),
    (key, hardware_id): (&LicenseKey, Option<&licensing_core::validate::HardwareId>),
    ip: IpAddr,
    seen: &mut Seen,
) -> Result<MintedToken, ApiError> {
    if let Some(limiter) = &state.limits.verify {
        seen.admit(limiter.check(&ip_key(ip)).await)?;
    }
    let context = team_context(state, team).await?;
    seen.context = Some(context.clone());
    let country = state.geo.country(ip);
    seen.country = country;
    let now = Timestamp::now();
    let product = state
        .store
        .get_product(team, product)
        .await?
        .ok_or_else(|| ApiError::new(ResultCode::ProductNotFound, "Product not found"))?;
    seen.product = Some(product.id);
    let found = state.store.get_license_by_key(team, key).await?;
    let license = admit(
        state,
        &context,
        found.as_ref(),
        product.id,
        (ip, country),
        hardware_id,
        now,
        seen,
    )?;
    let claims = FeedToken {
        license: license.id,
        product: product.id,
        expires_at: now.plus_days(updates::TOKEN_DAYS),
    };
    let key_id = context.keys.public_keys().signing.minisign().key_id();
    let token = claims.encode(key_id, |message| context.keys.sign_bytes(message));
    Ok(MintedToken {
        token,
        expires_at: claims.expires_at,
    })
}

/// Raises `release.downloaded` (when the team's endpoints want it) for a download by
/// `license` of `artifact` of `release`, once per license, artifact and address in the repeat
/// window (a download resumed in ranges is one download).
pub(crate) fn downloaded(
    state: &AppState,
    access: &Access,
    (release, artifact): (&Release, &Artifact),
    ip: IpAddr,
) {
    let context = &access.context;
    if !context.client_events.wants(ClientEvent::ReleaseDownloaded) {
        return;
    }
    let now = Timestamp::now();
    let license = access.license.as_ref();
    let subject = (
        ClientEvent::ReleaseDownloaded,
        license.map(|l| l.id),
        artifact.id,
        ip,
    );
    state.client_events.raise_once(&subject, now, || {
        let data = serde_json::json!({
            "releaseId": release.id,
            "version": release.version,
            "productId": release.product_id,
            "artifactId": artifact.id,
            "platform": artifact.platform,
            "arch": artifact.arch,
            "kind": artifact.kind,
            "filename": artifact.filename,
            "size": artifact.size,
            "licenseId": license.map(|l| l.id),
            "licenseKey": license.map(|l| l.license_key),
            "ipAddress": ip.to_canonical(),
        });
        RaisedEvent {
            event: ClientEvent::ReleaseDownloaded
                .event(context.team.id, "release", release.id, data, now)
                .tied_to(std::slice::from_ref(&release.product_id)),
            once: None,
        }
    });
}

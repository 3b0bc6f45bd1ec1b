use serde::{Deserialize, Serialize};

use super::scope::{ProductRestriction, Scope, Scopes};
use crate::crypto::{ApiKeyHash, SigningPublicKey, StoredTeamKeys};
use crate::store::{Entity, StoreError};
use crate::{ApiKeyId, BlacklistId, ProductId, TeamId, Timestamp, UserId};

/// A team: the tenant every other record belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Team {
    /// Id.
    pub id: TeamId,
    /// Name.
    pub name: String,
    /// Verification settings.
    pub settings: TeamSettings,
    /// Feature switches set by the operator.
    pub features: TeamFeatures,
    /// Private key material (never shown).
    pub keys: StoredTeamKeys,
    /// The public halves of the team's Ed25519 signing keys, the active one and those it
    /// rotated from that are still trusted. Empty for a team that never rotated: its only key is
    /// the one in [`keys`](Self::keys), made with the team.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signing_keys: Vec<SigningKey>,
    /// The private keys of the staged `next` signing key (the team's keys with it as signing
    /// key), sealed like [`keys`](Self::keys); they replace those when it is activated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_keys: Option<StoredTeamKeys>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// One of a team's Ed25519 signing keys, public half only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SigningKey {
    /// Key id: lower-case hex of the first 8 bytes of SHA-256 of the raw public key.
    #[cfg_attr(feature = "openapi", schema(example = "3f1c2a9be04d5e71"))]
    pub kid: String,
    /// Base64 of the raw 32-byte public key.
    pub key: String,
    /// When the key was made.
    pub created_at: Timestamp,
    /// Whether the server signs with it now (exactly one is active).
    pub active: bool,
    /// `next` (made to be shipped in applications, signs nothing yet), `active` (signs
    /// answers and new files) or `former` (signs nothing; still verifies what it signed).
    #[serde(default)]
    pub state: SigningKeyState,
}

/// Where a signing key stands in a rotation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum SigningKeyState {
    /// Made, not signing yet: publish it in an application release, then activate it.
    Next,
    /// Signs every answer and new license file.
    Active,
    /// Was active; still listed so that applications verify what it signed.
    #[default]
    Former,
}

/// A signing key's id as a path names it: 16 lower-case hex characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kid(String);

impl Kid {
    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Kid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Kid {
    type Err = &'static str;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.len() == 16 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Ok(Self(text.to_owned()))
        } else {
            Err("must be a signing key id: 16 lower-case hexadecimal characters")
        }
    }
}

/// A change of a team's signing keys, applied by a store under the team's lock
/// ([`Team::change_signing_keys`]).
#[derive(Clone, Debug)]
pub enum SigningKeyChange {
    /// A new active key at once: `keys` (the team's private keys with the new signing key, as
    /// stored) replace the stored ones; `new` is the new key's public half, `current` the
    /// active one's (listed too when the team has no list yet). Refused while a `next` key is
    /// staged.
    Rotate {
        /// The private keys to store.
        keys: StoredTeamKeys,
        /// The new key (active).
        new: SigningKey,
        /// The key it replaces, as the caller read it.
        current: SigningKey,
    },
    /// A `next` key, listed and kept (its private half in `keys`, the team's keys with it as
    /// signing key) until it is activated; at most one at a time.
    Stage {
        /// The private keys the team will have once the key is activated.
        keys: StoredTeamKeys,
        /// The new key (state `next`).
        new: SigningKey,
        /// The active key, as the caller read it (listed too when the team has no list yet).
        current: SigningKey,
    },
    /// The staged `next` key becomes the active one; the active one becomes `former`.
    Activate {
        /// Its id.
        kid: String,
    },
    /// A former or next key is no longer trusted: it leaves the list.
    Retire {
        /// Its id.
        kid: String,
    },
}

impl SigningKey {
    /// The listing of `key`, made at `created_at`, in `state`.
    pub fn of(key: &SigningPublicKey, created_at: Timestamp, state: SigningKeyState) -> Self {
        Self {
            kid: key.kid().to_owned(),
            key: key.to_base64(),
            created_at,
            active: state == SigningKeyState::Active,
            state,
        }
    }
}

impl Team {
    /// The team's signing keys, given the public half of the active one (from its private
    /// keys): the stored list, or for a team that never rotated, the active key made with the
    /// team.
    pub fn signing_key_list(&self, active: &SigningPublicKey) -> Vec<SigningKey> {
        if self.signing_keys.is_empty() {
            return vec![SigningKey::of(
                active,
                self.created_at,
                SigningKeyState::Active,
            )];
        }
        let mut keys = self.signing_keys.clone();
        // Keys listed before keys had states: the active one, and former ones.
        for key in &mut keys {
            if key.active {
                key.state = SigningKeyState::Active;
            }
        }
        keys
    }

    /// Replaces the stored private keys, and the staged next key's with `next` when one is
    /// still staged (re-sealing under a master key).
    pub fn set_keys(&mut self, keys: &StoredTeamKeys, next: Option<&StoredTeamKeys>) {
        self.keys = keys.clone();
        if let (Some(next), Some(staged)) = (next, self.next_keys.as_mut()) {
            *staged = next.clone();
        }
    }

    /// The staged `next` key, if any.
    pub fn next_signing_key(&self) -> Option<&SigningKey> {
        self.signing_keys
            .iter()
            .find(|k| k.state == SigningKeyState::Next)
    }

    /// Applies `change` (under the store's lock of the team): a rotation lists the key it
    /// replaces as former and the new one as active; staging lists a `next` key and keeps its
    /// private half; activation makes the `next` key active; retiring removes a key that is not
    /// the active one. `NotFound` for a key the team does not list, `Conflict` for retiring
    /// the active one, `State` for a change the keys' states do not allow (a second `next`
    /// key, a rotation while one is staged, activating a former key).
    pub fn change_signing_keys(&mut self, change: &SigningKeyChange) -> Result<(), StoreError> {
        match change {
            SigningKeyChange::Rotate { keys, new, current } => {
                if let Some(next) = self.next_signing_key() {
                    return Err(StoreError::State(format!(
                        "a next signing key ({}) is staged: activate it (signing-keys/{}/activate) or retire it, then rotate",
                        next.kid, next.kid
                    )));
                }
                if self.signing_keys.is_empty() {
                    self.signing_keys.push(current.clone());
                }
                for key in &mut self.signing_keys {
                    key.active = false;
                    key.state = SigningKeyState::Former;
                }
                self.signing_keys.push(new.clone());
                self.keys = keys.clone();
            }
            SigningKeyChange::Stage { keys, new, current } => {
                if let Some(next) = self.next_signing_key() {
                    return Err(StoreError::State(format!(
                        "a next signing key ({}) is already staged: activate or retire it first",
                        next.kid
                    )));
                }
                if self.signing_keys.is_empty() {
                    self.signing_keys.push(current.clone());
                }
                self.signing_keys.push(new.clone());
                self.next_keys = Some(keys.clone());
            }
            SigningKeyChange::Activate { kid } => {
                let at = self
                    .signing_keys
                    .iter()
                    .position(|k| k.kid == *kid)
                    .ok_or(StoreError::NotFound(Entity::SigningKey))?;
                let key = &self.signing_keys[at];
                if key.active {
                    return Ok(());
                }
                if key.state != SigningKeyState::Next {
                    return Err(StoreError::State(
                        "a former signing key cannot be made active again: create a next key and activate that"
                            .into(),
                    ));
                }
                let keys = self.next_keys.take().ok_or_else(|| {
                    StoreError::State("the next key's private half is missing".into())
                })?;
                for key in &mut self.signing_keys {
                    key.active = false;
                    key.state = SigningKeyState::Former;
                }
                self.signing_keys[at].active = true;
                self.signing_keys[at].state = SigningKeyState::Active;
                self.keys = keys;
            }
            SigningKeyChange::Retire { kid } => {
                let at = self
                    .signing_keys
                    .iter()
                    .position(|k| k.kid == *kid)
                    .ok_or(StoreError::NotFound(Entity::SigningKey))?;
                if self.signing_keys[at].active {
                    return Err(active_key_conflict());
                }
                if self.signing_keys[at].state == SigningKeyState::Next {
                    self.next_keys = None;
                }
                self.signing_keys.remove(at);
            }
        }
        Ok(())
    }
}

/// The refusal to retire the active signing key.
pub fn active_key_conflict() -> StoreError {
    StoreError::Conflict {
        field: "kid",
        message: "this is the active signing key: rotate to a new key first, then retire this one"
            .into(),
    }
}

/// A team's verification settings (`GET`/`PUT {dev}/settings`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TeamSettings {
    /// A license with customers requires `customerId`.
    pub strict_customers: bool,
    /// A license with products requires `productId`.
    pub strict_products: bool,
    /// A product with releases requires `version`.
    pub strict_releases: bool,
    /// A verify of a license with an `hwidLimit` requires `hardwareIdentifier` (the secure
    /// default). `false`, for clients that send none: such a verify passes the hardware limit,
    /// records no device, and its answer says `hardwareIdentifierChecked: false`. Heartbeats
    /// always require one.
    #[serde(default = "yes")]
    pub require_hardware_identifier: bool,
    /// Minutes after which an unseen hardware identifier stops counting; `null`: never.
    pub hwid_timeout: Option<u32>,
    /// Minutes after which an unseen IP address stops counting; `null`: never.
    pub ip_timeout: Option<u32>,
    /// (ext) Seconds a floating session lives without a heartbeat, for licenses that set no
    /// `sessionTtl` (10 to 86,400).
    #[serde(default = "default_session_ttl")]
    pub session_ttl: u32,
    /// (ext) Live floating sessions one license may hold, whether or not it has a
    /// `sessionLimit` (1 to 100,000; default 1,000): a start or a checkout past it is refused
    /// with `SESSION_LIMIT_REACHED`.
    #[serde(default = "default_max_live_sessions")]
    pub max_live_sessions_per_license: u32,
    /// (ext) Whether the client API's checkout issues license files (default `true`; off:
    /// 403 `FORBIDDEN`).
    #[serde(default = "yes")]
    pub checkout_enabled: bool,
    /// (ext) The longest life of a file issued by checkout, in seconds (3,600 to 315,360,000;
    /// default 2,592,000, 30 days): a checkout without `ttl` gets this, a longer `ttl` is cut
    /// to it.
    #[serde(default = "default_checkout_max_ttl")]
    pub checkout_max_ttl: u32,
    /// (ext) Whether the team's customer portal is open (default `false`: every portal address
    /// of the team answers 404).
    #[serde(default)]
    pub portal_enabled: bool,
    /// (ext) How customers sign in to the portal: any of `"email"` and `"licenseKey"` (default
    /// both). Links the vendor's site mints work whenever the portal is open.
    #[serde(default = "super::portal::default_portal_sign_in")]
    pub portal_sign_in: Vec<super::PortalSignIn>,
}

/// Live sessions per license unless the team sets another cap.
pub const DEFAULT_MAX_LIVE_SESSIONS: u32 = 1_000;
/// The highest cap of live sessions per license a team may set.
pub const MAX_LIVE_SESSIONS_CAP: u32 = 100_000;
/// The longest checkout unless the team sets another, in seconds (30 days).
pub const DEFAULT_CHECKOUT_MAX_TTL: u32 = 2_592_000;

fn default_session_ttl() -> u32 {
    super::DEFAULT_SESSION_TTL
}

fn default_max_live_sessions() -> u32 {
    DEFAULT_MAX_LIVE_SESSIONS
}

fn default_checkout_max_ttl() -> u32 {
    DEFAULT_CHECKOUT_MAX_TTL
}

fn yes() -> bool {
    true
}

impl TeamSettings {
    /// Whether the portal is open to sign-ins by `way`.
    pub fn portal_allows(&self, way: super::PortalSignIn) -> bool {
        self.portal_enabled && self.portal_sign_in.contains(&way)
    }
}

impl Default for TeamSettings {
    fn default() -> Self {
        Self {
            strict_customers: false,
            strict_products: false,
            strict_releases: false,
            require_hardware_identifier: true,
            hwid_timeout: None,
            ip_timeout: None,
            session_ttl: super::DEFAULT_SESSION_TTL,
            max_live_sessions_per_license: DEFAULT_MAX_LIVE_SESSIONS,
            checkout_enabled: true,
            checkout_max_ttl: DEFAULT_CHECKOUT_MAX_TTL,
            portal_enabled: false,
            portal_sign_in: super::portal::default_portal_sign_in(),
        }
    }
}

/// Features the operator switches per team.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TeamFeatures {
    /// Release file uploads and classloader downloads.
    pub classloader: bool,
}

impl Default for TeamFeatures {
    fn default() -> Self {
        Self { classloader: true }
    }
}

/// A team as the admin API lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TeamView {
    /// Id.
    pub id: TeamId,
    /// Name.
    pub name: String,
    /// Features.
    pub features: TeamFeatures,
    /// Creation time.
    pub created_at: Timestamp,
}

impl From<&Team> for TeamView {
    fn from(t: &Team) -> Self {
        Self {
            id: t.id,
            name: t.name.clone(),
            features: t.features,
            created_at: t.created_at,
        }
    }
}

/// The answer to creating a team: its first API key is shown here only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TeamCreated {
    /// Id.
    pub team_id: TeamId,
    /// The first API key, plaintext, shown once.
    pub api_key: String,
    /// RSA public key, SPKI PEM.
    pub public_key: String,
    /// Ed25519 response-signing key, base64.
    pub signing_key: String,
}

/// `GET {dev}/public-key`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PublicKeys {
    /// RSA public key, SPKI PEM.
    pub public_key: String,
    /// Base64 of the PEM text, as clients embed it.
    pub public_key_base64: String,
    /// The active Ed25519 signing key (answers and license files), base64 of 32 bytes.
    pub signing_key: String,
    /// (ext) Every signing key the team's clients should trust, the active one among them.
    pub signing_keys: Vec<SigningKey>,
    /// (ext) The active signing key as desktop updaters take it, for artifacts the server signs
    /// (a product's `signUpdates`). Absent in answers of servers before update feeds.
    #[serde(default)]
    pub updater_keys: Option<UpdaterKeys>,
}

/// (ext) The team's active signing key in the forms desktop updaters take.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UpdaterKeys {
    /// Base64 of the two-line minisign public key (Tauri's `pubkey` setting); its key id is the
    /// first 8 bytes of the key's `kid`.
    pub minisign: String,
    /// Base64 of the raw 32-byte key (Sparkle's `SUPublicEDKey`).
    pub sparkle: String,
}

/// What a blacklist entry matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BlacklistType {
    /// An IP address or CIDR range.
    Ip,
    /// A country, alpha-2 or alpha-3.
    Country,
    /// A hardware identifier.
    HardwareIdentifier,
}

/// One blacklist entry with its hit counter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BlacklistEntry {
    /// Id.
    pub id: BlacklistId,
    /// Owning team.
    pub team_id: TeamId,
    /// What it matches.
    #[serde(rename = "type")]
    pub kind: BlacklistType,
    /// The address, range, country code or identifier, normalized.
    pub value: String,
    /// How many requests it refused.
    pub hits: u64,
    /// The API key (or admin) that created it.
    pub created_by_user_id: UserId,
    /// Creation time.
    pub created_at: Timestamp,
}

/// A stored API key: only its hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyRecord {
    /// Id; also the `createdByUserId` of what it creates.
    pub id: ApiKeyId,
    /// Owning team.
    pub team_id: TeamId,
    /// A name to recognize it by.
    pub name: String,
    /// SHA-256 of the key.
    pub hash: ApiKeyHash,
    /// When it stops working.
    pub expires_at: Option<Timestamp>,
    /// Creation time.
    pub created_at: Timestamp,
    /// What it may do (keys stored before scopes existed: everything).
    #[serde(default)]
    pub scopes: Scopes,
    /// The products it is restricted to; `None`: every product.
    #[serde(default)]
    pub product_ids: ProductRestriction,
    /// The key (or the admin principal) that created it; unknown for keys made before this was
    /// recorded.
    #[serde(default)]
    pub created_by_user_id: Option<UserId>,
    /// When it last authenticated a request (written behind: within a minute or so).
    #[serde(default)]
    pub last_used_at: Option<Timestamp>,
}

impl ApiKeyRecord {
    /// Whether the key still works at `now`.
    pub fn is_usable(&self, now: Timestamp) -> bool {
        self.expires_at.is_none_or(|at| now < at)
    }

    /// Whether the key grants `scope`.
    pub fn allows(&self, scope: Scope) -> bool {
        self.scopes.allows(scope)
    }

    /// Why this key may not create a key with `scopes` and `products`, if it may not: a key
    /// hands on no more than it has.
    pub fn cannot_grant(&self, scopes: &Scopes, products: &ProductRestriction) -> Option<String> {
        super::cannot_grant(
            "this API key",
            &self.scopes,
            &self.product_ids,
            scopes,
            products,
        )
    }
}

/// An API key as lists show it: never the key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyView {
    /// Id.
    pub id: ApiKeyId,
    /// Name.
    pub name: String,
    /// Expiry.
    pub expires_at: Option<Timestamp>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Scopes (`["*"]`: every scope).
    pub scopes: Scopes,
    /// The products the key is restricted to; `null`: every product.
    pub product_ids: Option<Vec<ProductId>>,
    /// The key (or admin) that created it; `null` for keys made before this was recorded.
    pub created_by_user_id: Option<UserId>,
    /// When it last authenticated a request (updated about once a minute).
    pub last_used_at: Option<Timestamp>,
}

impl From<&ApiKeyRecord> for ApiKeyView {
    fn from(r: &ApiKeyRecord) -> Self {
        Self {
            id: r.id,
            name: r.name.clone(),
            expires_at: r.expires_at,
            created_at: r.created_at,
            scopes: r.scopes.clone(),
            product_ids: r.product_ids.clone(),
            created_by_user_id: r.created_by_user_id,
            last_used_at: r.last_used_at,
        }
    }
}

/// The answer to creating an API key: the key is shown here only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyCreated {
    /// Id.
    pub id: ApiKeyId,
    /// Name.
    pub name: String,
    /// The key, plaintext, shown once.
    pub key: String,
    /// Expiry.
    pub expires_at: Option<Timestamp>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Scopes (`["*"]`: every scope).
    pub scopes: Scopes,
    /// The products the key is restricted to; `null`: every product.
    pub product_ids: Option<Vec<ProductId>>,
    /// The key (or admin) that created it.
    pub created_by_user_id: Option<UserId>,
}

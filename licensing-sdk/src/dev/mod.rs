//! [`DevClient`]: the developer API for vendors' back ends, typed with `licensing-core`'s request
//! bodies (the very types the server parses) and records.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use licensing_core::TeamId;
use licensing_core::api::requests::ReleaseData;
use licensing_core::api::{
    CustomerPage, EntitlementPage, Envelope, LicensePage, ProductPage, ReleasePage, ResultCode,
};
use licensing_core::model::{Arch, ArtifactKind, Platform};
use licensing_core::model::{Customer, Entitlement, Kid, License, Product, ReleaseView};
use licensing_core::operations::releases::{ArtifactForm, ReleaseForm};
use licensing_core::operations::{self, DevOperation, Form};
use reqwest::Method;
use serde::de::DeserializeOwned;

mod calls;

use crate::Error;

/// A release file to upload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upload {
    /// The file name (it must have an extension; `.jar` files get their `Main-Class` read).
    pub name: String,
    /// The content (at most 10 MiB).
    pub bytes: Vec<u8>,
}

impl Upload {
    /// A file from memory.
    pub fn from_bytes(name: impl Into<String>, bytes: Vec<u8>) -> Self {
        Self {
            name: name.into(),
            bytes,
        }
    }

    /// A file from disk, named after its file name.
    pub async fn from_path(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| Error::Config(format!("{} has no file name", path.display())))?
            .to_owned();
        let bytes = tokio::fs::read(path).await?;
        Ok(Self { name, bytes })
    }
}

/// A release's form as this client sends it: its `data` and, optionally, a file.
#[derive(Clone, Debug)]
pub struct ReleaseUpload {
    /// The `data` part.
    pub data: ReleaseData,
    /// The `file` part.
    pub file: Option<Upload>,
}

impl ReleaseUpload {
    /// The form of `data` and `file`.
    pub fn new(data: &ReleaseData, file: Option<Upload>) -> Self {
        Self {
            data: data.clone(),
            file,
        }
    }
}

impl ReleaseForm for ReleaseUpload {
    fn parts(&self) -> Option<Form<'_>> {
        Some(Form::release(
            &self.data,
            self.file
                .as_ref()
                .map(|f| (f.name.as_str(), f.bytes.as_slice())),
        ))
    }
}

/// (ext) An update artifact's form as this client sends it: the file, where it runs, and the
/// vendor's signatures (when the product does not have the server sign).
#[derive(Clone, Debug)]
pub struct ArtifactUpload {
    /// Operating system.
    pub platform: Platform,
    /// Architecture.
    pub arch: Arch,
    /// Kind (`None`: from the file name).
    pub kind: Option<ArtifactKind>,
    /// The minisign signature a Tauri build writes (the `.sig` file's content).
    pub signature: Option<String>,
    /// Sparkle's `edSignature`.
    pub ed_signature: Option<String>,
    /// The file.
    pub file: Upload,
}

impl ArtifactUpload {
    /// The form of `file`, for `platform` and `arch`, without signatures.
    pub fn new(platform: Platform, arch: Arch, file: Upload) -> Self {
        Self {
            platform,
            arch,
            kind: None,
            signature: None,
            ed_signature: None,
            file,
        }
    }
}

impl ArtifactForm for ArtifactUpload {
    fn parts(&self) -> Option<Form<'_>> {
        let mut fields = vec![
            ("platform", self.platform.as_str().to_owned()),
            ("arch", self.arch.as_str().to_owned()),
        ];
        if let Some(kind) = self.kind {
            fields.push(("kind", kind.as_str().to_owned()));
        }
        if let Some(signature) = &self.signature {
            fields.push(("signature", signature.clone()));
        }
        if let Some(signature) = &self.ed_signature {
            fields.push(("edSignature", signature.clone()));
        }
        Some(Form {
            fields,
            file: Some((self.file.name.as_str(), self.file.bytes.as_slice())),
        })
    }
}

/// A signing key's id, checked before it is sent.
fn kid_of(kid: &str) -> Result<Kid, Error> {
    kid.parse()
        .map_err(|e: &str| Error::Config(format!("{kid:?}: {e}")))
}

/// The developer API of one team, with one API key.
#[derive(Clone, Debug)]
pub struct DevClient {
    http: reqwest::Client,
    base: String,
    key: String,
    retry: RetryPolicy,
    idempotency_key: Option<String>,
}

/// How [`DevClient`] retries a request that timed out, lost its connection, or was answered
/// with a 5xx (or a 409 `IDEMPOTENCY_KEY_IN_USE`: the first try still runs). Every write
/// carries an `Idempotency-Key`, the same on each of its tries, so that a write the server
/// already did is answered again rather than done twice. Other answers (4xx, 429) are not
/// retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, the first included (1: none again).
    pub attempts: u32,
    /// The wait before the first retry, doubled before each next one up to `max_backoff`; each
    /// wait is drawn between half of it and all of it. A 409 waits its `Retry-After` instead.
    pub backoff: Duration,
    /// The longest wait between tries.
    pub max_backoff: Duration,
    /// How long one try may take, answer included, before it counts as timed out.
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    /// Four tries, 250 ms then 500 ms then 1 s apart (up to 5 s), 30 s each.
    fn default() -> Self {
        Self {
            attempts: 4,
            backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(5),
            timeout: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// One try, no retry (writes still carry a key).
    pub fn none() -> Self {
        Self {
            attempts: 1,
            ..Self::default()
        }
    }

    /// The wait after try `attempt` (1-based) failed.
    fn backoff_before(&self, attempt: u32) -> Duration {
        let doubled = self
            .backoff
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let full = doubled.min(self.max_backoff);
        let half = full / 2;
        half + full.saturating_sub(half).mul_f64(rand::random::<f64>())
    }
}

/// Why a try failed: worth another, after an optional wait, or not.
enum Failed {
    Retry(Error, Option<Duration>),
    Final(Error),
}

/// A fresh `Idempotency-Key`: 128 random bits.
fn fresh_idempotency_key() -> String {
    let mut bytes = [0u8; 16];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
    format!("sdk-{}", hex::encode(bytes))
}

/// A page of any list, for [`DevClient`]'s `all_*` helpers.
trait Paged {
    type Item;
    fn into_parts(self) -> (Vec<Self::Item>, bool);
}

macro_rules! paged {
    ($page:ty, $member:ident, $item:ty) => {
        impl Paged for $page {
            type Item = $item;
            fn into_parts(self) -> (Vec<$item>, bool) {
                (self.$member, self.has_next_page)
            }
        }
    };
}

paged!(LicensePage, licenses, License);
paged!(CustomerPage, customers, Customer);
paged!(ProductPage, products, Product);
paged!(ReleasePage, releases, ReleaseView);
paged!(EntitlementPage, entitlements, Entitlement);
paged!(
    licensing_core::api::PolicyPage,
    policies,
    licensing_core::model::Policy
);

/// Pages are fetched until one says there is no next page (at most this many, as a guard).
const MAX_PAGES: u32 = 100_000;

async fn collect<P, F, Fut>(mut fetch: F) -> Result<Vec<P::Item>, Error>
where
    P: Paged,
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<P, Error>>,
{
    let mut all = Vec::new();
    for page in 1..=MAX_PAGES {
        let (items, more) = fetch(page).await?.into_parts();
        all.extend(items);
        if !more {
            break;
        }
    }
    Ok(all)
}

impl DevClient {
    /// A client for `base_url`, the team and an API key (`lsk_…`).
    pub fn new(base_url: &str, team: TeamId, api_key: &str) -> Result<Self, Error> {
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| Error::Config(format!("HTTP client: {e}")))?;
        Self::with_http_client(http, base_url, team, api_key)
    }

    /// Like [`DevClient::new`], with your own `reqwest` client.
    pub fn with_http_client(
        http: reqwest::Client,
        base_url: &str,
        team: TeamId,
        api_key: &str,
    ) -> Result<Self, Error> {
        let root = base_url.trim_end_matches('/');
        if !(root.starts_with("http://") || root.starts_with("https://")) {
            return Err(Error::Config(format!(
                "the base URL must start with http:// or https:// (got {base_url})"
            )));
        }
        Ok(Self {
            http,
            base: format!("{root}/api/v1/dev/teams/{team}"),
            key: api_key.to_owned(),
            retry: RetryPolicy::default(),
            idempotency_key: None,
        })
    }

    /// The same client, retrying as `policy` says (see [`RetryPolicy`]).
    #[must_use]
    pub fn with_retries(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The same client, sending `key` as the `Idempotency-Key` of its writes instead of a fresh
    /// random one per write: for a key of your own that outlives this process (an order's
    /// number, say), so that a write retried after a restart of your back end runs once too.
    /// Use it for one write: the server refuses a key sent again with another request (422
    /// `IDEMPOTENCY_KEY_MISMATCH`).
    #[must_use]
    pub fn with_idempotency_key(&self, key: impl Into<String>) -> Self {
        Self {
            idempotency_key: Some(key.into()),
            ..self.clone()
        }
    }

    /// Sends the request `make` builds, again as [`RetryPolicy`] allows, with one idempotency
    /// key for every try of a write.
    async fn send<T: DeserializeOwned>(
        &self,
        method: &Method,
        make: impl Fn() -> Result<reqwest::RequestBuilder, Error>,
    ) -> Result<T, Error> {
        let key = licensing_core::idempotency::is_write(method.as_str()).then(|| {
            self.idempotency_key
                .clone()
                .unwrap_or_else(fresh_idempotency_key)
        });
        let mut attempt = 1;
        loop {
            let mut request = make()?.bearer_auth(&self.key).timeout(self.retry.timeout);
            if let Some(key) = &key {
                request = request.header("Idempotency-Key", key);
            }
            match self.try_once(request).await {
                Ok(value) => return Ok(value),
                Err(Failed::Retry(e, wait)) if attempt < self.retry.attempts.max(1) => {
                    let wait = wait.unwrap_or_else(|| self.retry.backoff_before(attempt));
                    tracing::debug!(error = %e, attempt, ?wait, "retrying a developer API request");
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err(Failed::Retry(e, _) | Failed::Final(e)) => return Err(e),
            }
        }
    }

    /// One try: its answer, or why it failed and whether another try may succeed.
    async fn try_once<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, Failed> {
        let transport = |e: reqwest::Error| {
            if e.is_builder() {
                Failed::Final(Error::Transport(e))
            } else {
                Failed::Retry(Error::Transport(e), None)
            }
        };
        let response = request.send().await.map_err(transport)?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .map(|s| Duration::from_secs(s.min(60)));
        let replayed = response
            .headers()
            .get(licensing_core::idempotency::REPLAYED_HEADER)
            .is_some_and(|v| v == "true");
        let bytes = response.bytes().await.map_err(transport)?;
        let failed = |e: Error| {
            if status >= 500 {
                Failed::Retry(e, None)
            } else {
                Failed::Final(e)
            }
        };
        let envelope: Envelope<serde_json::Value> =
            serde_json::from_slice(&bytes).map_err(|e| {
                failed(Error::Protocol(format!(
                    "HTTP {status}: not an answer envelope: {e}"
                )))
            })?;
        if !envelope.result.valid {
            let e = Error::refused(status, envelope);
            if e.code() == Some(ResultCode::IdempotencyKeyInUse) {
                return Err(Failed::Retry(
                    e,
                    retry_after.or(Some(Duration::from_secs(1))),
                ));
            }
            return Err(failed(e));
        }
        // A retry answered with the first answer, whose secret (a new API key, a webhook's
        // secret) was shown only then: what stands in its place is no secret to hand on.
        if replayed
            && bytes
                .windows(licensing_core::idempotency::REDACTED.len())
                .any(|w| w == licensing_core::idempotency::REDACTED.as_bytes())
        {
            return Err(Failed::Final(Error::Protocol(
                "the request was carried out by an earlier try whose answer was lost; the secret it showed is shown only once and is not replayed: make a new one (a new key, or rotate the secret)".into(),
            )));
        }
        serde_json::from_value(envelope.data)
            .map_err(|e| Failed::Final(Error::Protocol(format!("the answer's data: {e}"))))
    }

    /// Performs `op`, an operation of the developer API as `licensing-core` declares it (the
    /// very value the server reads from the request): its method, path, query and body come
    /// from its declaration, and its answer's `data` is typed by it. Every named method below
    /// is this with its arguments; `perform` reaches any operation, named or not.
    ///
    /// ```no_run
    /// # async fn demo(dev: &licensing_sdk::DevClient, id: licensing_sdk::core::LicenseId)
    /// # -> Result<(), licensing_sdk::Error> {
    /// use licensing_sdk::core::api::requests::SuspendBody;
    /// use licensing_sdk::core::operations::licenses::SuspendLicense;
    ///
    /// let suspended = dev.perform(&SuspendLicense(id, SuspendBody::because("chargeback"))).await?;
    /// assert!(suspended.license.suspended);
    /// # Ok(()) }
    /// ```
    pub async fn perform<O: DevOperation>(&self, op: &O) -> Result<O::Answer, Error> {
        let path = operations::path_of(op);
        let url = match op.query_string() {
            Some(q) => format!("{}/{path}?{q}", self.base),
            None => format!("{}/{path}", self.base),
        };
        let method = match O::METHOD {
            operations::Method::Get => Method::GET,
            operations::Method::Post => Method::POST,
            operations::Method::Put => Method::PUT,
            operations::Method::Patch => Method::PATCH,
            operations::Method::Delete => Method::DELETE,
        };
        let json = op
            .json_body()
            .transpose()
            .map_err(|e| Error::Protocol(e.to_string()))?;
        let form = op.form();
        // A retry sends the same parts in a new form (with a new boundary): the server matches
        // a retried upload by its parts.
        self.send(&method, || {
            let request = self.http.request(method.clone(), &url);
            Ok(match (&json, &form) {
                (Some(json), _) => request
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(json.clone()),
                (None, Some(form)) => {
                    let mut parts = reqwest::multipart::Form::new();
                    for (name, text) in &form.fields {
                        parts = parts.text(*name, text.clone());
                    }
                    if let Some((name, bytes)) = form.file {
                        parts = parts.part(
                            "file",
                            reqwest::multipart::Part::bytes(bytes.to_vec())
                                .file_name(name.to_owned()),
                        );
                    }
                    request.multipart(parts)
                }
                _ => request,
            })
        })
        .await
    }
}

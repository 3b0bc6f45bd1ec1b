//! [`LicenseClient`]: verify, heartbeat and classloader downloads, every answer checked.

use std::time::Duration;

use licensing_core::TeamId;
use licensing_core::api::requests::ClientBody;
use licensing_core::api::{
    CheckoutData, Envelope, HeartbeatData, ResultCode, ResultMeta, VerifyData,
};
use licensing_core::crypto::{SIGNATURE_HEADER, SIGNATURE_KEY_ID_HEADER, TeamPublicKeys};
use licensing_core::model::DeviceLabel;
use licensing_core::validate::{Challenge, DeviceName, DevicePlatform};
use rand::RngCore;
use serde::de::DeserializeOwned;

use crate::Error;
use crate::license_file::LicenseFile;

/// A successful verify: the license data and the signed result.
#[derive(Clone, Debug, PartialEq)]
pub struct Verified {
    /// `data`: the license, its customers and products.
    pub data: VerifyData,
    /// `result`: timestamp, details, code `VALID`, `challengeResponse`.
    pub result: ResultMeta,
    /// Whether this came from the offline cache (the server was unreachable) rather than the
    /// server just now.
    pub offline: bool,
}

impl Verified {
    /// When the license's grace period ends, if it is in one: it has expired, and its policy
    /// lets it run until then (`data.license.graceUntil`). Warn the user.
    pub fn grace_until(&self) -> Option<licensing_core::Timestamp> {
        self.data.license.grace_until
    }
}

impl Heartbeat {
    /// When the license's grace period ends, if it is in one (see [`Verified::grace_until`]).
    pub fn grace_until(&self) -> Option<licensing_core::Timestamp> {
        self.data.license.grace_until
    }
}

/// A successful checkout: the verify answer, and the license file for this machine (already
/// stored where the application asked).
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedOut {
    /// The verify answer.
    pub verified: Verified,
    /// The license file.
    pub file: LicenseFile,
}

/// A successful heartbeat.
#[derive(Clone, Debug, PartialEq)]
pub struct Heartbeat {
    /// `data`: the license's limits and expiration type.
    pub data: HeartbeatData,
    /// `result`.
    pub result: ResultMeta,
}

/// The exact bytes of one signed exchange, as the offline cache stores them.
#[derive(Clone, Debug)]
pub(crate) struct Exchange {
    pub(crate) request: Vec<u8>,
    pub(crate) response: Vec<u8>,
    pub(crate) signature: String,
    /// The `X-Signature-Key-Id` of the answer (servers before key ids sent none).
    pub(crate) kid: Option<String>,
}

/// The client a desktop application embeds.
///
/// It is configured with the server's base URL, the team id and the team's two public keys (as
/// `GET {dev}/public-key` gives them, or as the server printed them at the team's creation). Every
/// call sends a fresh random challenge and fails closed: an answer counts only when its
/// `X-Signature` verifies over the exact bytes sent and received and, for a success, its
/// `challengeResponse` verifies over the challenge.
#[derive(Clone, Debug)]
pub struct LicenseClient {
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
    pub(crate) team: TeamId,
    pub(crate) keys: TeamPublicKeys,
    /// (ext) Vendor keys trusted for update artifacts, besides the team's signing keys.
    pub(crate) updater_keys: Vec<licensing_core::crypto::updater::MinisignPublicKey>,
    /// (ext) What requests that name a device call it, unless their body says otherwise: this
    /// machine's host name and OS by default; `None` sends neither.
    pub(crate) device_label: Option<DeviceLabel>,
}

/// (ext) This machine as the vendor's staff see it beside its hardware identifier: its host
/// name (when the system has one that is a valid `deviceName`) and its OS and architecture,
/// such as `windows x86_64`.
pub fn this_device() -> DeviceLabel {
    let name = hostname::get()
        .ok()
        .and_then(|n| n.into_string().ok())
        .map(|n| n.chars().take(100).collect::<String>())
        .and_then(|n| DeviceName::parse(n.trim()).ok());
    let platform = DevicePlatform::parse(&format!(
        "{} {}",
        std::env::consts::OS,
        std::env::consts::ARCH
    ))
    .ok();
    DeviceLabel { name, platform }
}

impl LicenseClient {
    /// A client for `base_url` (such as `https://licensing.example.com`), the team, its RSA public
    /// key (PEM, or base64 of the PEM as vendors often embed it) and its Ed25519 signing key
    /// (base64).
    pub fn new(
        base_url: &str,
        team: TeamId,
        public_key: &str,
        signing_key: &str,
    ) -> Result<Self, Error> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| Error::Config(format!("HTTP client: {e}")))?;
        Self::with_http_client(http, base_url, team, public_key, signing_key)
    }

    /// Like [`LicenseClient::new`], with your own `reqwest` client (proxies, timeouts, TLS roots).
    pub fn with_http_client(
        http: reqwest::Client,
        base_url: &str,
        team: TeamId,
        public_key: &str,
        signing_key: &str,
    ) -> Result<Self, Error> {
        let keys = TeamPublicKeys::parse(public_key, signing_key)
            .map_err(|e| Error::Config(format!("team public keys: {e}")))?;
        let base = base_url.trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::Config(format!(
                "the base URL must start with http:// or https:// (got {base_url})"
            )));
        }
        Ok(Self {
            http,
            base,
            team,
            keys,
            updater_keys: Vec::new(),
            device_label: Some(this_device()),
        })
    }

    /// (ext) Sends no device name or platform: requests name the device by its hardware
    /// identifier alone (by default the client sends this machine's host name and OS, see
    /// [`this_device`], so that the vendor's staff recognise the device).
    pub fn without_device_label(mut self) -> Self {
        self.device_label = None;
        self
    }

    /// (ext) Calls the device `label` instead of this machine's host name and OS (a member left
    /// `None` is not sent). A body's own `device_name` or `platform` still wins.
    pub fn with_device_label(mut self, label: DeviceLabel) -> Self {
        self.device_label = Some(label);
        self
    }

    /// Trusts one more signing key of the team (base64 of 32 bytes, a `key` of the
    /// `signingKeys` that `GET {dev}/public-key` lists). Answers name their key by id
    /// (`X-Signature-Key-Id`), so an application that ships the team's next key keeps working
    /// across a rotation; the key given to [`LicenseClient::new`] checks answers that name none.
    pub fn trust_signing_key(mut self, signing_key: &str) -> Result<Self, Error> {
        self.keys
            .trust(signing_key)
            .map_err(|e| Error::Config(format!("signing key: {e}")))?;
        Ok(self)
    }

    /// The team's public keys.
    pub fn public_keys(&self) -> &TeamPublicKeys {
        &self.keys
    }

    pub(crate) fn url(&self, endpoint: &str) -> String {
        format!(
            "{}/api/v1/client/teams/{}/verification/{endpoint}",
            self.base, self.team
        )
    }

    /// Verifies the license (call it at start-up). `body` names the license and, as the license
    /// needs, the device, customer, product, version and branch; its `challenge` is replaced by a
    /// fresh one.
    pub async fn verify(&self, body: &ClientBody) -> Result<Verified, Error> {
        self.verify_exchange(body).await.map(|(v, _)| v)
    }

    pub(crate) async fn verify_exchange(
        &self,
        body: &ClientBody,
    ) -> Result<(Verified, Exchange), Error> {
        let (challenge, request) = self.with_challenge(body)?;
        let (status, exchange) = self.post("verify", request).await?;
        let (data, result) = self.accept::<VerifyData>(status, &exchange, Some(&challenge))?;
        Ok((
            Verified {
                data,
                result,
                offline: false,
            },
            exchange,
        ))
    }

    /// Reports that the device is still in use and checks the license again. The body must name
    /// the device. Like verify, it sends a challenge, so an old answer cannot be replayed.
    pub async fn heartbeat(&self, body: &ClientBody) -> Result<Heartbeat, Error> {
        let (challenge, request) = self.with_challenge(body)?;
        let (status, exchange) = self.post("heartbeat", request).await?;
        let (data, result) = self.accept::<HeartbeatData>(status, &exchange, Some(&challenge))?;
        Ok(Heartbeat { data, result })
    }

    /// Checks the license out for offline use: a verify (the device is recorded the same way;
    /// `body` must name it), whose answer also carries a license file bound to this machine and
    /// encrypted, valid for `ttl` seconds (3,600 to 315,360,000; `None`: as long as the
    /// license). The file is stored at `path`, from where [`LicenseFile::load`] reads it when the
    /// server cannot be reached.
    pub async fn checkout(
        &self,
        body: &ClientBody,
        ttl: Option<u32>,
        path: impl AsRef<std::path::Path>,
    ) -> Result<CheckedOut, Error> {
        if body.hardware_id.is_none() {
            return Err(Error::Config(
                "a checkout binds the file to a machine: set the body's hardware_id".into(),
            ));
        }
        let mut body = body.clone();
        body.ttl = ttl;
        let (challenge, request) = self.with_challenge(&body)?;
        let (status, exchange) = self.post("checkout", request).await?;
        let (data, result) = self.accept::<CheckoutData>(status, &exchange, Some(&challenge))?;
        let file = LicenseFile::parse(&data.license_file.certificate)?;
        file.save(path)?;
        Ok(CheckedOut {
            verified: Verified {
                data: data.verify,
                result,
                offline: false,
            },
            file,
        })
    }

    pub(crate) async fn post(
        &self,
        endpoint: &str,
        request: Vec<u8>,
    ) -> Result<(u16, Exchange), Error> {
        self.post_to(self.url(endpoint), request).await
    }

    /// POSTs `request` to `url` and keeps the exchange's exact bytes.
    pub(crate) async fn post_to(
        &self,
        url: String,
        request: Vec<u8>,
    ) -> Result<(u16, Exchange), Error> {
        let response = self
            .http
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(request.clone())
            .send()
            .await
            .map_err(Error::Transport)?;
        let status = response.status().as_u16();
        let (signature, kid) = signature_of(response.headers());
        let bytes = response.bytes().await.map_err(Error::Transport)?.to_vec();
        Ok((
            status,
            Exchange {
                request,
                response: bytes,
                signature,
                kid,
            },
        ))
    }

    /// Checks an answer: its signature, its result, the challenge response; returns the data.
    pub(crate) fn accept<T: DeserializeOwned>(
        &self,
        status: u16,
        exchange: &Exchange,
        challenge: Option<&str>,
    ) -> Result<(T, ResultMeta), Error> {
        let (data, result) = check_answer(&self.keys, status, exchange)?;
        if let Some(challenge) = challenge {
            let response = result
                .challenge_response
                .as_deref()
                .ok_or(Error::Forged("the answer has no challengeResponse"))?;
            self.keys
                .rsa
                .verify_challenge(challenge, response)
                .map_err(|_| Error::Forged("challengeResponse does not verify"))?;
        }
        let data = serde_json::from_value(data)
            .map_err(|e| Error::Protocol(format!("the answer's data: {e}")))?;
        Ok((data, result))
    }
}

/// The `X-Signature` header (empty when absent) and the `X-Signature-Key-Id` header.
pub(crate) fn signature_of(headers: &reqwest::header::HeaderMap) -> (String, Option<String>) {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    (
        text(SIGNATURE_HEADER).unwrap_or_default(),
        text(SIGNATURE_KEY_ID_HEADER),
    )
}

/// Checks the exchange's `X-Signature` with the key its `X-Signature-Key-Id` names.
pub(crate) fn verify_signature(keys: &TeamPublicKeys, exchange: &Exchange) -> Result<(), Error> {
    let key = keys
        .signing_key(exchange.kid.as_deref())
        .ok_or(Error::Forged(
            "X-Signature-Key-Id names a key this client does not trust",
        ))?;
    key.verify_response(&exchange.request, &exchange.response, &exchange.signature)
        .map_err(|_| Error::Forged("X-Signature does not verify"))
}

/// Checks a JSON answer: a present signature must verify; a success must be signed and `VALID`;
/// an error must be signed unless it is one answered before the team is known. Returns the raw
/// data and the result of a success, or the error.
pub(crate) fn check_answer(
    keys: &TeamPublicKeys,
    status: u16,
    exchange: &Exchange,
) -> Result<(serde_json::Value, ResultMeta), Error> {
    let signed = !exchange.signature.is_empty();
    if signed {
        verify_signature(keys, exchange)?;
    }
    let envelope: Envelope<serde_json::Value> = serde_json::from_slice(&exchange.response)
        .map_err(|e| {
            if signed {
                Error::Protocol(format!("HTTP {status}: not an answer envelope: {e}"))
            } else {
                Error::Forged("an unsigned answer that is not an envelope")
            }
        })?;
    if !envelope.result.valid {
        let before_team = matches!(
            envelope.result.code,
            Some(ResultCode::BadRequest | ResultCode::TeamNotFound | ResultCode::RateLimit)
        );
        if !signed && envelope.result.code.is_some() && !before_team {
            return Err(Error::Forged("an unsigned refusal"));
        }
        return Err(Error::refused(status, envelope));
    }
    let result = envelope.result;
    if !signed {
        return Err(Error::Forged("an unsigned success"));
    }
    if result.code != Some(ResultCode::Valid) {
        return Err(Error::Protocol(format!(
            "a success without code VALID (HTTP {status})"
        )));
    }
    Ok((envelope.data, result))
}

impl LicenseClient {
    /// The body with a fresh challenge (32 random bytes, hex) and, when it names a device, the
    /// client's label of it where the body has none; and its JSON.
    pub(crate) fn with_challenge(&self, body: &ClientBody) -> Result<(String, Vec<u8>), Error> {
        let (challenge, body) = self.with_challenge_body(body)?;
        let json = serde_json::to_vec(&body).map_err(|e| Error::Protocol(e.to_string()))?;
        Ok((challenge, json))
    }

    /// [`with_challenge`](Self::with_challenge) before the body is written out.
    pub(crate) fn with_challenge_body(
        &self,
        body: &ClientBody,
    ) -> Result<(String, ClientBody), Error> {
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        let challenge = hex::encode(bytes);
        let mut body = body.clone();
        body.challenge =
            Some(Challenge::parse(&challenge).map_err(|e| Error::Protocol(e.to_string()))?);
        if let (Some(_), Some(label)) = (&body.hardware_id, &self.device_label) {
            if body.device_name.is_none() {
                body.device_name.clone_from(&label.name);
            }
            if body.platform.is_none() {
                body.platform.clone_from(&label.platform);
            }
        }
        Ok((challenge, body))
    }
}

//! (ext) Idempotency keys: a retried write runs once (protocol.md section 6).
//!
//! A client sends `Idempotency-Key` with a write; the first request with a key runs, and its
//! answer is kept under the key, per team and credential ([`IdempotencyOwner`]), with the
//! request's [`Fingerprint`]. The same key with the same fingerprint answers the kept answer and
//! runs nothing; with another fingerprint it is refused ([`Claim::Mismatch`]); while the first
//! still runs, the retry is told to wait ([`Claim::InUse`]). This module holds the vocabulary and
//! the pure parts (parsing the key, computing the fingerprint, the claim rule); the stores keep
//! the records ([`crate::store::IdempotencyStore`]) and the server applies them at its gates.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::code::ResultCode;
use crate::error::ApiError;
use crate::ids::TeamId;
use crate::time::Timestamp;

/// The header's name.
pub const HEADER: &str = "Idempotency-Key";

/// The header of a replayed answer (value `true`).
pub const REPLAYED_HEADER: &str = "Idempotent-Replayed";

/// How long a key and its answer are kept: 24 hours from the first request.
pub const KEPT_FOR_MS: i64 = 24 * 60 * 60 * 1000;

/// How long a request that claimed a key may run before its claim counts as abandoned (its
/// server stopped mid-request): a retry after that runs again.
pub const ABANDONED_AFTER_MS: i64 = 5 * 60 * 1000;

/// The longest key.
pub const MAX_KEY_LEN: usize = 255;

/// Whether a request of `method` (an HTTP method's name, upper case) writes: the methods that
/// take a key. Reads ignore the header.
pub fn is_write(method: &str) -> bool {
    matches!(method, "POST" | "PUT" | "PATCH" | "DELETE")
}

/// A valid `Idempotency-Key`: 1 to 255 characters of visible ASCII (`!` to `~`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Parses the header's value: 400 naming the header and the rule otherwise.
    pub fn parse(value: &[u8]) -> Result<Self, ApiError> {
        let valid = !value.is_empty()
            && value.len() <= MAX_KEY_LEN
            && value.iter().all(|b| (b'!'..=b'~').contains(b));
        if !valid {
            return Err(ApiError::bad_field(
                HEADER,
                "must be 1 to 255 characters of visible ASCII (no spaces): send a fresh random value, such as a UUID, per write",
            ));
        }
        // Visible ASCII is UTF-8.
        Ok(Self(String::from_utf8_lossy(value).into_owned()))
    }

    /// The key as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whose keys: one team's credential (an API key, a staff member), or the operator's admin
/// token. Two owners never see each other's keys.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IdempotencyOwner(String);

impl IdempotencyOwner {
    /// The keys of API key `key_id` of `team`.
    pub fn api_key(team: TeamId, key_id: impl fmt::Display) -> Self {
        Self(format!("{team}/key/{key_id}"))
    }

    /// The keys of staff member `staff_id` of `team` (the dashboard's forms).
    pub fn staff(team: TeamId, staff_id: impl fmt::Display) -> Self {
        Self(format!("{team}/staff/{staff_id}"))
    }

    /// The keys of the admin API's token.
    pub fn admin() -> Self {
        Self("admin".to_owned())
    }

    /// The keys of whoever `actor` is, acting on `team`: an API key's and a staff member's as
    /// [`api_key`](Self::api_key) and [`staff`](Self::staff) name them, a customer's in the
    /// portal, an integration's (a payment provider's events), the command line's, the
    /// operator's.
    pub fn acting(team: TeamId, actor: &crate::model::Actor) -> Self {
        use crate::model::ActorKind;
        let id = || actor.id.map(|id| id.to_string()).unwrap_or_default();
        let name = || actor.name.clone().unwrap_or_default();
        match actor.kind {
            ActorKind::ApiKey => Self::api_key(team, id()),
            ActorKind::User => Self::staff(team, id()),
            ActorKind::Customer => Self(format!("{team}/customer/{}", id())),
            ActorKind::Integration => Self(format!("{team}/integration/{}", name())),
            ActorKind::System => Self(format!("{team}/system/{}", name())),
            ActorKind::Admin => Self::admin(),
        }
    }

    /// The owner as stored: ASCII, no NUL.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// An owner read back from a store.
    pub fn from_stored(text: String) -> Self {
        Self(text)
    }
}

/// What identifies a request: SHA-256 of its method, path, query and body digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// The fingerprint of a request whose body has digest `body` ([`body_digest`] or
    /// [`MultipartDigest`]).
    pub fn of(method: &str, path: &str, query: &str, body: [u8; 32]) -> Self {
        let mut h = Sha256::new();
        for part in [method.as_bytes(), path.as_bytes(), query.as_bytes()] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part);
        }
        h.update(body);
        Self(h.finalize().into())
    }
}

/// SHA-256 of a whole body.
pub fn body_digest(body: &[u8]) -> [u8; 32] {
    Sha256::digest(body).into()
}

/// The digest of a multipart body from its parts (name, file name and content, in order), so
/// that the same form sent again with a new boundary has the same digest.
#[derive(Clone, Debug, Default)]
pub struct MultipartDigest(Sha256);

impl MultipartDigest {
    /// Adds the next part.
    pub fn part(&mut self, name: Option<&str>, file_name: Option<&str>, content: &[u8]) {
        for field in [name, file_name] {
            match field {
                Some(text) => {
                    self.0.update([1]);
                    self.0.update((text.len() as u64).to_be_bytes());
                    self.0.update(text.as_bytes());
                }
                None => self.0.update([0]),
            }
        }
        self.0.update(body_digest(content));
    }

    /// The digest of every part added.
    pub fn finish(self) -> [u8; 32] {
        self.0.finalize().into()
    }
}

/// An answer as kept and replayed: status, content type and body, byte for byte, and the
/// headers that say where it leads or what it is ([`REPLAYED_HEADERS`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeptAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` (empty: none).
    pub content_type: String,
    /// The headers of [`REPLAYED_HEADERS`] the answer had, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// The headers besides `Content-Type` a kept answer keeps: where a form's answer leads, and
/// the name of a download.
pub const REPLAYED_HEADERS: [&str; 2] = ["location", "content-disposition"];

impl KeptAnswer {
    /// Whether an answer with `status` is kept: 5xx and 429 are not (a retry may succeed).
    pub fn is_kept(status: u16) -> bool {
        status < 500 && status != 429
    }
}

/// What a kept answer holds where the answer sent showed a secret once.
pub const REDACTED: &str = "[shown once; not kept for replays]";

/// The secrets an answer may show once, and only once: an API key (`lsk_…`), a webhook
/// signing secret (`whsec_…`), the secret of a set-password link
/// (`…/set-password/{account}/{secret}`), a two-step recovery code (`abcd-efgh-jkmn`). Kept
/// answers hold [`REDACTED`] in their place, so that no secret stays stored in the clear for a
/// day to serve a retry; the replay of such an answer says so where the secret was.
fn secret_at(text: &[u8], at: usize) -> Option<(usize, usize)> {
    // Most bytes start nothing: one look tells (a recovery code has a dash four bytes on).
    if !matches!(text[at], b'l' | b'w' | b'/') && text.get(at + 4) != Some(&b'-') {
        return None;
    }
    let rest = &text[at..];
    let run = |from: usize, ok: fn(u8) -> bool| {
        rest.get(from..)
            .map_or(0, |r| r.iter().take_while(|b| ok(**b)).count())
    };
    // An API key: 38 letters and digits (64 hex digits in the first format).
    let key = run(4, |b| b.is_ascii_alphanumeric());
    if rest.starts_with(b"lsk_") && key >= 38 {
        return Some((at, at + 4 + key));
    }
    if rest.starts_with(b"whsec_") {
        let len = run(6, |b| {
            b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')
        });
        if len > 0 {
            return Some((at, at + 6 + len));
        }
    }
    const LINK: &[u8] = b"/set-password/";
    if rest.starts_with(LINK) {
        let account = run(LINK.len(), |b| b.is_ascii_alphanumeric() || b == b'-');
        let slash = LINK.len() + account;
        if account > 0 && rest.get(slash) == Some(&b'/') {
            let secret = run(slash + 1, |b| {
                b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_')
            });
            if secret > 0 {
                return Some((at + slash + 1, at + slash + 1 + secret));
            }
        }
    }
    // A recovery code, not inside a longer word or id (a UUID has runs like it).
    let code = |b: u8| b"abcdefghjkmnpqrstuvwxyz23456789".contains(&b);
    let joined = |b: u8| b.is_ascii_alphanumeric() || b == b'-';
    if rest.len() >= 14
        && (at == 0 || !joined(text[at - 1]))
        && rest[..14].iter().enumerate().all(|(i, b)| {
            if i == 4 || i == 9 {
                *b == b'-'
            } else {
                code(*b)
            }
        })
        && rest.get(14).is_none_or(|b| !joined(*b))
    {
        return Some((at, at + 14));
    }
    None
}

/// `body` with every secret it shows once replaced by [`REDACTED`]; `None` when it shows none.
pub fn redact_secrets(body: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut at = 0;
    while at < body.len() {
        match secret_at(body, at) {
            Some((start, end)) => {
                let out = out.get_or_insert_with(|| Vec::with_capacity(body.len()));
                out.extend_from_slice(&body[copied..start]);
                out.extend_from_slice(REDACTED.as_bytes());
                copied = end;
                at = end;
            }
            None => at += 1,
        }
    }
    let mut out = out?;
    out.extend_from_slice(&body[copied..]);
    Some(out)
}

/// Whether `body` shows a secret ([`redact_secrets`]).
pub fn holds_secret(body: &[u8]) -> bool {
    (0..body.len()).any(|at| secret_at(body, at).is_some())
}

/// A key's record in a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// The fingerprint of the request that claimed the key.
    pub fingerprint: Fingerprint,
    /// When it was claimed; the key is kept [`KEPT_FOR_MS`] from then.
    pub created_at: Timestamp,
    /// Its answer; `None` while the request runs.
    pub answer: Option<KeptAnswer>,
    /// Whether a write of the request is stored: written in the same atomic step as the write
    /// ([`KeyedWrite`]), so that a request whose write landed runs no more, even if the server
    /// stopped before its answer was kept.
    pub applied: bool,
}

/// The claim a write runs under, carried by its [`Journal`](crate::store::Journal): a store
/// marks the claim applied in the same atomic step as the write, and need not make the write
/// durable before it returns (the kept answer, written next, is made durable with it before
/// the request is answered).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyedWrite {
    /// Whose key.
    pub owner: IdempotencyOwner,
    /// The key.
    pub key: IdempotencyKey,
    /// The request's fingerprint.
    pub fingerprint: Fingerprint,
    /// When the key was claimed.
    pub claimed_at: Timestamp,
}

impl KeyedWrite {
    /// The record marking the claim applied, before its answer is kept.
    pub fn applied(&self) -> IdempotencyRecord {
        IdempotencyRecord {
            fingerprint: self.fingerprint,
            created_at: self.claimed_at,
            answer: None,
            applied: true,
        }
    }
}

/// What a request finds under its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Nothing (or an expired or abandoned record): the key is now the request's; it runs.
    Run,
    /// The answer of the same request, which ran before.
    Replay(KeptAnswer),
    /// The key was used with another request.
    Mismatch,
    /// The same request is still running.
    InUse,
    /// The same request ran and its write is stored, but the server stopped before its answer
    /// was kept (a crash in the moment between them, before any answer was sent): it does not
    /// run again, and there is nothing to replay.
    AnswerLost,
}

impl Claim {
    /// The claim of a request with `fingerprint` at `now` on what the store holds under its key
    /// (`None`: nothing): the rule every store applies, atomically with writing the claim.
    pub fn decide(
        existing: Option<&IdempotencyRecord>,
        fingerprint: Fingerprint,
        now: Timestamp,
    ) -> Self {
        let Some(record) = existing else {
            return Self::Run;
        };
        let age = now.as_millis() - record.created_at.as_millis();
        if age >= KEPT_FOR_MS {
            return Self::Run;
        }
        match &record.answer {
            None if !record.applied && age >= ABANDONED_AFTER_MS => Self::Run,
            _ if record.fingerprint != fingerprint => Self::Mismatch,
            None if record.applied => Self::AnswerLost,
            None => Self::InUse,
            Some(answer) => Self::Replay(answer.clone()),
        }
    }

    /// The error answer of a refused claim; `None` for [`Claim::Run`] and [`Claim::Replay`].
    pub fn refusal(&self) -> Option<ApiError> {
        match self {
            Self::Mismatch => Some(ApiError::new(
                ResultCode::IdempotencyKeyMismatch,
                "Idempotency-Key was already used with another request (method, path, query or body): send a new key for a new request",
            )),
            Self::InUse => Some(
                ApiError::new(
                    ResultCode::IdempotencyKeyInUse,
                    "The request first sent with this Idempotency-Key is still running: retry it after a second to get its answer",
                )
                .retry_after_secs(1),
            ),
            Self::AnswerLost => Some(ApiError::new(
                ResultCode::Conflict,
                "The request first sent with this Idempotency-Key was carried out, but the server stopped before its answer could be kept: it will not run again; read the record it changed (or send a new key for a new request)",
            )),
            Self::Run | Self::Replay(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_shown_once_are_not_kept() {
        let key = "lsk_l9ANlhwqcQWU4Kk4zzPAEU0UQO2Ynr3s1KsWu3";
        let body = format!(
            r#"{{"data":{{"key":"{key}","secret":"whsec_c2VjcmV0K2Jhc2U2NA==","setPasswordPath":"/dashboard/set-password/6f9619ff-8b86-4011-b42d-00c04fc964ff/Ab_c-9","codes":["abcd-efgh-jkmn","x"]}},"id":"6f9619ff-8b86-4011-b42d-00c04fc964ff"}}"#
        );
        assert!(holds_secret(body.as_bytes()));
        let kept = String::from_utf8(redact_secrets(body.as_bytes()).unwrap()).unwrap();
        assert!(!holds_secret(kept.as_bytes()), "{kept}");
        for secret in [key, "whsec_", "Ab_c-9", "abcd-efgh-jkmn"] {
            assert!(!kept.contains(secret), "{secret} in {kept}");
        }
        assert_eq!(kept.matches(REDACTED).count(), 4, "{kept}");
        let legacy = format!("lsk_{}", "0123456789abcdef".repeat(4));
        assert!(holds_secret(legacy.as_bytes()));
        // Still JSON, and what is no secret is kept as it was.
        let value: serde_json::Value = serde_json::from_str(&kept).unwrap();
        assert_eq!(value["id"], "6f9619ff-8b86-4011-b42d-00c04fc964ff");
        assert!(
            value["data"]["setPasswordPath"]
                .as_str()
                .unwrap()
                .starts_with("/dashboard/set-password/6f9619ff-8b86-4011-b42d-00c04fc964ff/")
        );
        // Answers without secrets are kept as they are: UUIDs, license keys, short prefixes.
        for plain in [
            r#"{"id":"6f9619ff-8b86-4a2d-b42d-00c04fc964ff","licenseKey":"ABCDE-FGHJK-MNPQR-STUVW-XYZ23"}"#,
            "abcd-efgh-jkmn-pqrs and lsk_short whsec_",
        ] {
            assert_eq!(redact_secrets(plain.as_bytes()), None, "{plain}");
        }
    }

    #[test]
    fn only_writes_take_a_key() {
        for method in ["POST", "PUT", "PATCH", "DELETE"] {
            assert!(is_write(method), "{method}");
        }
        for method in ["GET", "HEAD", "OPTIONS", "TRACE", "post"] {
            assert!(!is_write(method), "{method}");
        }
    }

    #[test]
    fn keys_are_one_to_255_visible_ascii_characters() {
        assert!(IdempotencyKey::parse(b"a").is_ok());
        assert!(IdempotencyKey::parse(&[b'~'; 255]).is_ok());
        assert!(IdempotencyKey::parse(b"order-42/retry:1!").is_ok());
        for bad in [
            &b""[..],
            &[b'a'; 256],
            b"has space",
            b"tab\there",
            "é".as_bytes(),
            b"nul\0",
        ] {
            let e = IdempotencyKey::parse(bad).unwrap_err();
            assert_eq!(e.code(), ResultCode::BadRequest);
            assert!(e.details().contains("Idempotency-Key"), "{}", e.details());
        }
    }

    /// A caller's keys are those its HTTP requests use: an API key's and a staff member's
    /// owners are the ones the gates name; customers and integrations each have their own.
    #[test]
    fn a_callers_keys_are_its_requests_keys() {
        use crate::model::Actor;
        let team = TeamId::new();
        let key = crate::ApiKeyId::new();
        let staff = crate::StaffId::new();
        assert_eq!(
            IdempotencyOwner::acting(team, &Actor::api_key(key, "ci")),
            IdempotencyOwner::api_key(team, key)
        );
        assert_eq!(
            IdempotencyOwner::acting(team, &Actor::user(staff, "a@example.com")),
            IdempotencyOwner::staff(team, staff)
        );
        let stripe = IdempotencyOwner::acting(team, &Actor::integration("stripe"));
        let paddle = IdempotencyOwner::acting(team, &Actor::integration("paddle"));
        let customer =
            IdempotencyOwner::acting(team, &Actor::customer(crate::CustomerId::new(), None));
        assert_ne!(stripe, paddle);
        assert_ne!(stripe.as_str(), customer.as_str());
        assert!(stripe.as_str().starts_with(&team.to_string()));
    }

    #[test]
    fn fingerprints_separate_each_part_of_a_request() {
        let body = body_digest(b"{}");
        let a = Fingerprint::of("POST", "/a", "", body);
        assert_eq!(a, Fingerprint::of("POST", "/a", "", body));
        assert_ne!(a, Fingerprint::of("PUT", "/a", "", body));
        assert_ne!(a, Fingerprint::of("POST", "/a", "x=1", body));
        assert_ne!(a, Fingerprint::of("POST", "/ax", "", body));
        assert_ne!(a, Fingerprint::of("POST", "/a", "", body_digest(b"{ }")));
        // A part's bytes never spill into the next.
        assert_ne!(
            Fingerprint::of("POST", "/a", "b", body),
            Fingerprint::of("POST", "/ab", "", body)
        );
    }

    #[test]
    fn multipart_digests_follow_names_file_names_and_contents_in_order() {
        let digest = |parts: &[(Option<&str>, Option<&str>, &[u8])]| {
            let mut d = MultipartDigest::default();
            for (name, file, content) in parts {
                d.part(*name, *file, content);
            }
            d.finish()
        };
        let base = digest(&[
            (Some("data"), None, b"{}"),
            (Some("file"), Some("a.jar"), b"PK"),
        ]);
        assert_eq!(
            base,
            digest(&[
                (Some("data"), None, b"{}"),
                (Some("file"), Some("a.jar"), b"PK")
            ])
        );
        assert_ne!(
            base,
            digest(&[
                (Some("file"), Some("a.jar"), b"PK"),
                (Some("data"), None, b"{}")
            ])
        );
        assert_ne!(
            base,
            digest(&[
                (Some("data"), None, b"{}"),
                (Some("file"), Some("b.jar"), b"PK")
            ])
        );
        assert_ne!(
            base,
            digest(&[(Some("data"), None, b"{}"), (Some("file"), None, b"PK")])
        );
        assert_ne!(
            base,
            digest(&[
                (Some("data"), None, b"{}"),
                (Some("file"), Some("a.jar"), b"PK!")
            ])
        );
    }

    #[test]
    fn the_claim_rule_replays_refuses_waits_and_expires() {
        let t0 = Timestamp::from_millis(1_000_000);
        let at = |ms: i64| Timestamp::from_millis(t0.as_millis() + ms);
        let print = Fingerprint([1; 32]);
        let other = Fingerprint([2; 32]);
        let answer = KeptAnswer {
            status: 201,
            content_type: "application/json".into(),
            headers: vec![("location".into(), "/x".into())],
            body: b"{}".to_vec(),
        };
        let running = IdempotencyRecord {
            fingerprint: print,
            created_at: t0,
            answer: None,
            applied: false,
        };
        let done = IdempotencyRecord {
            answer: Some(answer.clone()),
            ..running.clone()
        };
        assert_eq!(Claim::decide(None, print, t0), Claim::Run);
        assert_eq!(Claim::decide(Some(&running), print, at(1)), Claim::InUse);
        assert_eq!(Claim::decide(Some(&running), other, at(1)), Claim::Mismatch);
        assert_eq!(
            Claim::decide(Some(&running), print, at(ABANDONED_AFTER_MS)),
            Claim::Run
        );
        assert_eq!(
            Claim::decide(Some(&done), print, at(ABANDONED_AFTER_MS)),
            Claim::Replay(answer)
        );
        assert_eq!(Claim::decide(Some(&done), other, at(1)), Claim::Mismatch);
        assert_eq!(
            Claim::decide(Some(&done), other, at(KEPT_FOR_MS)),
            Claim::Run
        );
        // Applied without an answer (a crash between the write and its answer): never run
        // again, never abandoned, until the key expires.
        let applied = IdempotencyRecord {
            applied: true,
            ..running.clone()
        };
        assert_eq!(
            Claim::decide(Some(&applied), print, at(ABANDONED_AFTER_MS)),
            Claim::AnswerLost
        );
        assert_eq!(Claim::decide(Some(&applied), other, at(1)), Claim::Mismatch);
        assert_eq!(
            Claim::decide(Some(&applied), print, at(KEPT_FOR_MS)),
            Claim::Run
        );
        let lost = Claim::AnswerLost.refusal().unwrap();
        assert_eq!((lost.status(), lost.code()), (409, ResultCode::Conflict));
        assert_eq!(lost.retry_after(), None);
        let in_use = Claim::InUse.refusal().unwrap();
        assert_eq!(in_use.status(), 409);
        assert_eq!(in_use.retry_after(), Some(1));
        assert_eq!(Claim::Mismatch.refusal().unwrap().status(), 422);
        assert!(KeptAnswer::is_kept(201) && KeptAnswer::is_kept(404));
        assert!(
            !KeptAnswer::is_kept(429) && !KeptAnswer::is_kept(500) && !KeptAnswer::is_kept(503)
        );
    }
}

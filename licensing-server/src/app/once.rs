//! Idempotency claims (protocol.md section 6): a write performed again under the same key runs
//! once, whoever performs it.
//!
//! [`claimed`] is the one way a keyed write runs: it claims the key in the store, which every
//! instance shares, and
//! - for a key never seen (or expired), runs the write, to its end even when whoever asked goes
//!   away (the reason it retries), so that neither the write nor its answer's keeping is
//!   cancelled half-way ([`RunToEnd`]), under the claim (every write it makes marks the claim
//!   applied in its own atomic step and leaves its flush to the answer's); the answer is then
//!   kept (unless it is a 5xx or a 429: a retry may succeed), durably with the write, before it
//!   is handed back;
//! - for the same request again, hands back the kept answer and runs nothing;
//! - for another request under the key, refuses with 422 `IDEMPOTENCY_KEY_MISMATCH`; for the
//!   same one still running, 409 `IDEMPOTENCY_KEY_IN_USE`.
//!
//! What is kept is an answer as the developer API sends it (its status, content type and
//! body), whatever performed the write: [`Cx::once`] performs a typed operation under a key and
//! keeps the envelope the API would have answered, and the HTTP gates (`http::idempotency`)
//! keep their responses, so a write sent over HTTP and retried by any other caller under the
//! same owner and key (or the other way round) runs once.

use std::future::Future;

use futures_util::FutureExt as _;
use licensing_core::api::{Envelope, ErrorData};
use licensing_core::idempotency::{
    self, Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, KeptAnswer, KeyedWrite,
};
use licensing_core::operations::{Body, DevOperation, path_of};
use licensing_core::store::IdempotencyStore;
use licensing_core::{ApiError, Timestamp};

use super::{Cx, Run};

/// An answer a claim keeps: what of it is kept, and what the kept one answers again.
pub(crate) trait Keep: Sized + Send + 'static {
    /// Its status, as HTTP would send it: a 5xx or a 429 is not kept.
    fn status(&self) -> u16;

    /// What is kept of it (a secret shown once is not: see
    /// [`redact_secrets`](idempotency::redact_secrets)), and itself, as handed back.
    fn keep(self) -> impl Future<Output = Result<(KeptAnswer, Self), ApiError>> + Send;

    /// The kept answer, handed back again.
    fn replay(kept: KeptAnswer) -> Self;

    /// A refusal: the key in use or used with another request, or the store failing.
    fn refused(error: ApiError) -> Self;
}

/// One keyed write: who owns the key, the key, and what identifies the request it was sent
/// with.
pub(crate) struct Keyed {
    /// Whose key.
    pub(crate) owner: IdempotencyOwner,
    /// The key.
    pub(crate) key: IdempotencyKey,
    /// The request's fingerprint.
    pub(crate) fingerprint: Fingerprint,
}

/// Runs `write` once for `keyed` (see the module documentation), in the caller's task while it
/// waits, and on its own if it goes away. With `wait`, a claim still running is waited for
/// (polling) up to that long before the 409: a browser that sent a form twice gets the answer
/// rather than an error.
pub(crate) async fn claimed<S, A>(
    store: &S,
    keyed: Keyed,
    wait: Option<std::time::Duration>,
    write: impl Future<Output = A> + Send + 'static,
) -> A
where
    S: IdempotencyStore + Clone + Send + Sync + 'static,
    A: Keep,
{
    let Keyed {
        owner,
        key,
        fingerprint,
    } = keyed;
    let deadline = wait.map(|w| tokio::time::Instant::now() + w);
    let (claim, claimed_at) = loop {
        let now = Timestamp::now();
        let claim = store
            .claim_idempotency_key(&owner, &key, fingerprint, now)
            .await;
        match (&claim, deadline) {
            (Ok(Claim::InUse), Some(deadline)) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            _ => break (claim, now),
        }
    };
    match claim {
        Err(e) => A::refused(ApiError::internal_because(
            "claiming an idempotency key failed",
            e,
        )),
        Ok(Claim::Replay(answer)) => A::replay(answer),
        Ok(Claim::Run) => {
            let claim = KeyedWrite {
                owner: owner.clone(),
                key: key.clone(),
                fingerprint,
                claimed_at,
            };
            let write = super::journal::under_claim(claim, write);
            let keyed = Keyed {
                owner,
                key,
                fingerprint,
            };
            run_claimed(store.clone(), keyed, write).await
        }
        Ok(refused) => A::refused(refused.refusal().unwrap_or_else(ApiError::internal)),
    }
}

/// Runs `write`, claimed under `keyed`, to its end (even if whoever waits for it goes away
/// meanwhile), and keeps its answer (see [`settle`]).
pub(crate) async fn run_claimed<S, A>(
    store: S,
    keyed: Keyed,
    write: impl Future<Output = A> + Send + 'static,
) -> A
where
    S: IdempotencyStore + Send + Sync + 'static,
    A: Keep,
{
    RunToEnd::new(async move {
        match std::panic::AssertUnwindSafe(write).catch_unwind().await {
            Ok(answer) => settle(&store, &keyed, answer).await,
            Err(_) => {
                // The write panicked: nothing is kept, so a retry runs.
                tracing::error!("a write with an idempotency key panicked");
                release(&store, &keyed).await;
                A::refused(ApiError::internal())
            }
        }
    })
    .await
}

/// Frees `keyed`'s claim, so that a retry runs.
async fn release<S: IdempotencyStore>(store: &S, keyed: &Keyed) {
    if let Err(e) = store
        .release_idempotency_key(&keyed.owner, &keyed.key, keyed.fingerprint)
        .await
    {
        tracing::error!(error = %e, "releasing an idempotency key failed");
    }
}

/// A claimed write and the keeping of its answer, run in the waiting task; if that task drops
/// it before they end (the client went away, the reason it retries), what is left runs on in a
/// task of its own, so that the write is not cancelled half-way and its answer is kept for the
/// retry. (A task of its own from the start costs a spawn and a wake-up across threads on every
/// keyed write.)
struct RunToEnd<F: Future + Send + 'static>(Option<std::pin::Pin<Box<F>>>)
where
    F::Output: Send;

impl<F: Future + Send + 'static> RunToEnd<F>
where
    F::Output: Send,
{
    fn new(run: F) -> Self {
        Self(Some(Box::pin(run)))
    }
}

impl<A: Keep, F: Future<Output = A> + Send + 'static> Future for RunToEnd<F> {
    type Output = A;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<A> {
        let Some(run) = self.0.as_mut() else {
            return std::task::Poll::Ready(A::refused(ApiError::internal()));
        };
        let done = std::task::ready!(run.as_mut().poll(cx));
        self.0 = None;
        std::task::Poll::Ready(done)
    }
}

impl<F: Future + Send + 'static> Drop for RunToEnd<F>
where
    F::Output: Send,
{
    fn drop(&mut self) {
        if let Some(run) = self.0.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn(run)),
                Err(_) => tracing::error!("a write with an idempotency key dropped unfinished"),
            }
        }
    }
}

/// Keeps `answer` under the claim (or frees the claim for a 5xx or a 429), and hands it back.
async fn settle<S: IdempotencyStore, A: Keep>(store: &S, keyed: &Keyed, answer: A) -> A {
    if !KeptAnswer::is_kept(answer.status()) {
        release(store, keyed).await;
        return answer;
    }
    let (kept, answer) = match answer.keep().await {
        Ok(kept) => kept,
        Err(e) => {
            release(store, keyed).await;
            return A::refused(e);
        }
    };
    match store
        .keep_idempotent_answer(&keyed.owner, &keyed.key, keyed.fingerprint, &kept)
        .await
    {
        Ok(()) => answer,
        Err(e) => {
            // Neither the answer nor (for certain) the write is durable: no success is handed
            // back. A retry finds the write marked applied if it landed (and is told so), else
            // runs.
            release(store, keyed).await;
            A::refused(ApiError::internal_because(
                "keeping an idempotent answer failed",
                e,
            ))
        }
    }
}
/// What an operation performed under an idempotency key answered.
#[derive(Debug)]
pub(crate) struct Answered<T> {
    /// Its answer, as the developer API's `data` renders it.
    pub(crate) answer: T,
    /// Its `result.details`.
    pub(crate) details: String,
    /// Whether this is the kept answer of an earlier run (nothing ran now).
    pub(crate) replayed: bool,
}

/// An operation's answer in the developer API's envelope, as the claim keeps it.
struct Rendered {
    status: u16,
    body: Vec<u8>,
    replayed: bool,
}

impl Rendered {
    fn of(status: u16, body: Result<Vec<u8>, serde_json::Error>) -> Self {
        match body {
            Ok(body) => Self {
                status,
                body,
                replayed: false,
            },
            Err(e) => Self::refused(ApiError::internal_because("rendering an answer failed", e)),
        }
    }

    /// What it answers: the data of a success, or the refusal it holds.
    fn answered<T: serde::de::DeserializeOwned>(self) -> Result<Answered<T>, ApiError> {
        let envelope: Envelope<serde_json::Value> = serde_json::from_slice(&self.body)
            .map_err(|e| ApiError::internal_because("reading a kept answer failed", e))?;
        let result = envelope.result;
        if !(200..300).contains(&self.status) {
            let code = result
                .code
                .unwrap_or(licensing_core::ResultCode::InternalServerError);
            let errors = serde_json::from_value::<Option<ErrorData>>(envelope.data)
                .ok()
                .flatten();
            return Err(match errors {
                Some(data) if !data.errors.is_empty() => {
                    ApiError::validation(licensing_core::ValidationErrors::new(data.errors))
                }
                _ => ApiError::new(code, result.details),
            });
        }
        let answer = serde_json::from_value(envelope.data)
            .map_err(|e| ApiError::internal_because("reading a kept answer failed", e))?;
        Ok(Answered {
            answer,
            details: result.details.into_owned(),
            replayed: self.replayed,
        })
    }
}

impl Keep for Rendered {
    fn status(&self) -> u16 {
        self.status
    }

    async fn keep(self) -> Result<(KeptAnswer, Self), ApiError> {
        let kept = KeptAnswer {
            status: self.status,
            content_type: "application/json".to_owned(),
            headers: Vec::new(),
            body: idempotency::redact_secrets(&self.body).unwrap_or_else(|| self.body.clone()),
        };
        Ok((kept, self))
    }

    fn replay(kept: KeptAnswer) -> Self {
        Self {
            status: kept.status,
            body: kept.body,
            replayed: true,
        }
    }

    fn refused(error: ApiError) -> Self {
        Self::of(
            error.status(),
            serde_json::to_vec(&Envelope::<Option<ErrorData>>::error(
                &error,
                Timestamp::now(),
            )),
        )
    }
}

/// The fingerprint of the request that asks the developer API for `op` on `team`, as the SDK
/// sends it.
fn fingerprint<O: DevOperation>(
    team: licensing_core::TeamId,
    op: &O,
) -> Result<Fingerprint, ApiError> {
    let body = match op.json_body() {
        Some(body) => body.map_err(|e| ApiError::internal_because("an operation's body", e))?,
        None => Vec::new(),
    };
    Ok(Fingerprint::of(
        O::METHOD.as_str(),
        &format!("/api/v1/dev/teams/{team}/{}", path_of(op)),
        &op.query_string().unwrap_or_default(),
        idempotency::body_digest(&body),
    ))
}

impl Cx {
    /// Performs `op` once for `key`, whoever the caller is (a payment provider's event applied
    /// again, a command retried): the first time it runs and its answer is kept for a day; a
    /// retry with the same key and the same operation answers the kept one (`replayed`) and
    /// runs nothing; the key used with another operation is 422 `IDEMPOTENCY_KEY_MISMATCH`, and
    /// one still running 409 `IDEMPOTENCY_KEY_IN_USE`. The key is the caller's own (as the
    /// `Idempotency-Key` of its HTTP requests), and the operation is identified as the request
    /// that asks for it through the developer API would be, so a request over HTTP and the same
    /// operation performed here share one claim. (Not the two release uploads, whose files are
    /// not part of a typed operation.)
    pub(crate) async fn once<O>(
        &self,
        key: IdempotencyKey,
        op: O,
    ) -> Result<Answered<O::Answer>, ApiError>
    where
        O: DevOperation + Run + Send + 'static,
        O::Output: Send,
    {
        if O::BODY == Body::Form {
            return Err(ApiError::internal_because(
                "an idempotency claim",
                "a release upload is performed under a key through HTTP only",
            ));
        }
        let keyed = Keyed {
            owner: IdempotencyOwner::acting(self.team, &self.caller.actor),
            key,
            fingerprint: fingerprint(self.team, &op)?,
        };
        let cx = Cx::new(
            self.state.clone(),
            self.team,
            self.caller.clone(),
            self.now,
            self.client,
        );
        let write = async move {
            match cx.perform(op).await {
                Ok(output) => {
                    let (data, details) = O::answer(output);
                    let envelope = Envelope::success(data, details, Timestamp::now());
                    Rendered::of(O::STATUS, serde_json::to_vec(&envelope))
                }
                Err(e) => Rendered::refused(e),
            }
        };
        claimed(&self.state.store, keyed, None, write)
            .await
            .answered()
    }
}

#[cfg(test)]
mod tests {
    use licensing_core::api::requests::{CustomerBody, CustomerListQuery, Patch};
    use licensing_core::idempotency::{Fingerprint, IdempotencyKey, body_digest};
    use licensing_core::store::CustomerStore as _;
    use licensing_core::{CustomerId, ResultCode};

    use crate::app::Caller;
    use crate::app::customers::{CreateCustomer, GetCustomer};

    fn customer(email: &str) -> CustomerBody {
        CustomerBody {
            email: Patch::Value(email.into()),
            ..CustomerBody::default()
        }
    }

    /// An operation performed again under its key (a payment event delivered twice) runs once
    /// and answers what it answered; the key with another operation is refused; a refusal is
    /// kept like a success; another caller's keys are its own.
    #[tokio::test]
    async fn an_operation_runs_once_under_its_key_whoever_performs_it() {
        let shop = crate::app::Shop::open().await;
        let (state, team) = (shop.state(), shop.team);
        let as_caller = |caller: Caller| shop.as_caller(caller);
        let key = |text: &str| IdempotencyKey::parse(text.as_bytes()).unwrap();
        let stripe = as_caller(Caller::integration("stripe"));

        let first = stripe
            .once(key("evt_1"), CreateCustomer(customer("jane@example.com")))
            .await
            .unwrap();
        assert!(!first.replayed);
        assert_eq!(first.details, "Customer created");
        let again = stripe
            .once(key("evt_1"), CreateCustomer(customer("jane@example.com")))
            .await
            .unwrap();
        assert!(again.replayed, "the kept answer");
        assert_eq!(again.answer.id, first.answer.id);
        let count = |state: &crate::state::AppState| {
            let state = state.clone();
            async move {
                state
                    .store
                    .list_customers(team, &CustomerListQuery::default())
                    .await
                    .unwrap()
                    .items
                    .len()
            }
        };
        assert_eq!(count(&state).await, 1, "one customer created");

        let other = stripe
            .once(key("evt_1"), CreateCustomer(customer("john@example.com")))
            .await
            .unwrap_err();
        assert_eq!(other.code(), ResultCode::IdempotencyKeyMismatch);

        let missing = CustomerId::new();
        for replayed in [false, true] {
            let refused = stripe
                .once(key("evt_2"), GetCustomer(missing))
                .await
                .unwrap_err();
            assert_eq!(refused.code(), ResultCode::CustomerNotFound, "{replayed}");
        }

        let paddle = as_caller(Caller::integration("paddle"));
        let own = paddle
            .once(key("evt_1"), CreateCustomer(customer("john@example.com")))
            .await
            .unwrap();
        assert!(!own.replayed, "another caller's key is its own");
        assert_eq!(count(&state).await, 2);
    }

    /// The typed claim identifies an operation as the developer API identifies the request the
    /// SDK sends for it, so that the two share one claim.
    #[test]
    fn an_operation_is_fingerprinted_as_its_request() {
        let team = licensing_core::TeamId::new();
        let body = customer("jane@example.com");
        let sent = serde_json::to_vec(&body).unwrap();
        assert_eq!(
            super::fingerprint(team, &CreateCustomer(body)).unwrap(),
            Fingerprint::of(
                "POST",
                &format!("/api/v1/dev/teams/{team}/customers"),
                "",
                body_digest(&sent),
            )
        );
    }
}

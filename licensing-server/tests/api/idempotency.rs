//! `Idempotency-Key` on the writes of the developer and admin APIs (protocol.md section 6): a
//! retry runs nothing again and answers the same bytes; another request with the key is
//! refused; a request still running is waited for; keys are per credential and shared by
//! instances on one database.

use licensing_core::idempotency::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, body_digest,
};
use licensing_core::store::{ApiKeyStore, IdempotencyStore};
use reqwest::Method;
use serde_json::{Value, json};

use crate::client::release_form;
use crate::helpers::{TestServer, on_postgres};

/// A raw answer: status, headers and the body's bytes.
struct Raw {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
}

impl Raw {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    fn code(&self) -> String {
        self.json()["result"]["code"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    }

    fn replayed(&self) -> bool {
        self.headers
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true")
    }
}

async fn raw(response: reqwest::Response) -> Raw {
    Raw {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: response.bytes().await.unwrap().to_vec(),
    }
}

/// Sends `method url` with `bearer`, a JSON `body` and `Idempotency-Key: key`.
async fn send(
    s: &TestServer,
    method: Method,
    url: &str,
    bearer: &str,
    key: Option<&str>,
    body: Option<&str>,
) -> Raw {
    let mut request = s.client.request(method, url).bearer_auth(bearer);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_owned());
    }
    raw(request.send().await.unwrap()).await
}

async fn customer_count(s: &TestServer) -> u64 {
    s.get(&s.dev("customers")).await.ok()["totalResults"]
        .as_u64()
        .unwrap()
}

async fn audit_count(s: &TestServer, action: &str) -> usize {
    let page = s.get(&s.dev("audit-log?pageSize=100")).await;
    page.ok()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == action)
        .count()
}

/// The first request runs and its answer is kept; the same request again answers the same
/// status and bytes with `Idempotent-Replayed: true` and creates nothing (no second record or
/// audit entry); another body, path or method with the key is 422; a key is the credential's
/// own (another API key, another team: their own keys); a read ignores the header.
#[tokio::test]
async fn a_retried_write_runs_once_and_answers_the_same_bytes() {
    let s = TestServer::start().await;
    let url = s.dev("customers");
    let body = json!({"email": "retry@example.com", "username": "retry"}).to_string();
    let first = send(
        &s,
        Method::POST,
        &url,
        s.key(),
        Some("order-1"),
        Some(&body),
    )
    .await;
    assert_eq!(first.status, 201, "{}", first.json());
    assert!(!first.replayed());
    let again = send(
        &s,
        Method::POST,
        &url,
        s.key(),
        Some("order-1"),
        Some(&body),
    )
    .await;
    assert_eq!(again.status, 201);
    assert!(again.replayed(), "{:?}", again.headers);
    assert_eq!(again.body, first.body, "byte-identical");
    assert_eq!(
        again.headers.get("content-type").unwrap(),
        first.headers.get("content-type").unwrap()
    );
    assert_eq!(customer_count(&s).await, 1);
    assert_eq!(audit_count(&s, "customer.created").await, 1);

    // Another request with the key: another body, path or method.
    let id = first.json()["data"]["id"].as_str().unwrap().to_owned();
    let other = json!({"email": "other@example.com"}).to_string();
    for (method, url, body) in [
        (Method::POST, url.clone(), Some(other.as_str())),
        (Method::POST, s.dev("products"), Some(r#"{"name":"P"}"#)),
        (Method::DELETE, format!("{url}/{id}"), None),
    ] {
        let refused = send(&s, method, &url, s.key(), Some("order-1"), body).await;
        assert_eq!(refused.status, 422, "{}", refused.json());
        assert_eq!(refused.code(), "IDEMPOTENCY_KEY_MISMATCH");
        assert!(!refused.replayed());
    }
    assert_eq!(customer_count(&s).await, 1);

    // Keys are per credential: another key of the team, another team.
    let created = s
        .post(
            &s.dev("api-keys"),
            &json!({"name": "second", "scopes": ["customers:write", "customers:read"]}).to_string(),
        )
        .await;
    let second = created.ok()["key"].as_str().unwrap().to_owned();
    let own = send(
        &s,
        Method::POST,
        &url,
        &second,
        Some("order-1"),
        Some(&body),
    )
    .await;
    assert_eq!((own.status, own.replayed()), (201, false), "it ran");
    assert_ne!(own.body, first.body);
    assert_eq!(customer_count(&s).await, 2);
    let b = s.other_team().await;
    let b_url = format!("{}/api/v1/dev/teams/{}/customers", s.base, b.team_id);
    let theirs = send(
        &s,
        Method::POST,
        &b_url,
        &b.api_key,
        Some("order-1"),
        Some(&body),
    )
    .await;
    assert_eq!(theirs.status, 201, "{}", theirs.json());
    assert!(!theirs.replayed());
    assert_ne!(theirs.body, first.body);

    // A read ignores the header; a write without one runs each time.
    let read = send(&s, Method::GET, &url, s.key(), Some("order-1"), None).await;
    assert_eq!(read.status, 200);
    assert!(!read.replayed());
    for n in 0..2 {
        let plain = json!({"email": format!("plain{n}@example.com")}).to_string();
        let created = send(&s, Method::POST, &url, s.key(), None, Some(&plain)).await;
        assert_eq!(created.status, 201);
    }
    assert_eq!(customer_count(&s).await, 4);
}

/// A key of 1 to 255 visible ASCII characters, once: anything else is 400 naming the header,
/// and nothing runs.
#[tokio::test]
async fn invalid_keys_are_refused_before_anything_runs() {
    let s = TestServer::start().await;
    let url = s.dev("customers");
    let body = json!({"email": "bad-key@example.com"}).to_string();
    let long = "k".repeat(256);
    for key in ["", " ", "has space", long.as_str()] {
        let refused = send(&s, Method::POST, &url, s.key(), Some(key), Some(&body)).await;
        assert_eq!(refused.status, 400, "{key:?}: {}", refused.json());
        assert_eq!(refused.code(), "BAD_REQUEST");
        let details = refused.json()["result"]["details"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(details.contains("Idempotency-Key"), "{details}");
    }
    let twice = s
        .client
        .post(&url)
        .bearer_auth(s.key())
        .header("Idempotency-Key", "a")
        .header("Idempotency-Key", "b")
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(twice.status(), 400);
    assert_eq!(customer_count(&s).await, 0);
    let longest = "~".repeat(255);
    let fine = send(&s, Method::POST, &url, s.key(), Some(&longest), Some(&body)).await;
    assert_eq!(fine.status, 201);
}

/// Client errors are kept and replayed like successes (a 404, a 400); an answer that may
/// change on a retry is not kept: a 429 runs again.
#[tokio::test]
async fn client_errors_are_kept_and_rate_limits_are_not() {
    let s = TestServer::start_with(|c| c.upload_rate_limit_per_minute = 1).await;
    let missing = s.dev(&format!("customers/{}", uuid::Uuid::new_v4()));
    let body = json!({"email": "nobody@example.com"}).to_string();
    let first = send(
        &s,
        Method::PUT,
        &missing,
        s.key(),
        Some("put-1"),
        Some(&body),
    )
    .await;
    assert_eq!(first.status, 404);
    let again = send(
        &s,
        Method::PUT,
        &missing,
        s.key(),
        Some("put-1"),
        Some(&body),
    )
    .await;
    assert_eq!((again.status, again.replayed()), (404, true));
    assert_eq!(again.body, first.body);
    let invalid = r#"{"email":"not-an-address"}"#;
    let url = s.dev("customers");
    let first = send(
        &s,
        Method::POST,
        &url,
        s.key(),
        Some("bad-1"),
        Some(invalid),
    )
    .await;
    assert_eq!(first.status, 400);
    let again = send(
        &s,
        Method::POST,
        &url,
        s.key(),
        Some("bad-1"),
        Some(invalid),
    )
    .await;
    assert_eq!((again.status, again.replayed()), (400, true));

    // The team may upload once a minute: the second upload is 429, and it is not kept.
    let product = s
        .post(&s.dev("products"), r#"{"name":"Limited"}"#)
        .await
        .ok()["id"]
        .clone();
    let data = |v: &str| json!({"version": v, "productId": product, "status": "PUBLISHED"});
    let upload = |key: &'static str, version: &'static str| {
        let form = release_form(&data(version), Some(("app.jar", b"PK jar".to_vec())));
        let request = s
            .client
            .post(s.dev("releases"))
            .bearer_auth(s.key())
            .header("Idempotency-Key", key)
            .multipart(form);
        async move { raw(request.send().await.unwrap()).await }
    };
    assert_eq!(upload("up-1", "1.0.0").await.status, 201);
    let limited = upload("up-2", "2.0.0").await;
    assert_eq!(limited.status, 429, "{}", limited.json());
    let again = upload("up-2", "2.0.0").await;
    assert_eq!(again.status, 429);
    assert!(!again.replayed(), "a 429 ran again");
}

/// A multipart upload is the same request when its parts are, whatever its boundary: the retry
/// is replayed and stores nothing; another file with the key is 422.
#[tokio::test]
async fn an_upload_matches_by_its_parts_not_its_boundary() {
    let s = TestServer::start().await;
    let product = s
        .post(&s.dev("products"), r#"{"name":"Uploads"}"#)
        .await
        .ok()["id"]
        .clone();
    let data = json!({"version": "1.0.0", "productId": product, "status": "PUBLISHED"});
    let upload = |file: &'static [u8]| {
        // Each form has a boundary of its own.
        let form = release_form(&data, Some(("app.jar", file.to_vec())));
        let request = s
            .client
            .post(s.dev("releases"))
            .bearer_auth(s.key())
            .header("Idempotency-Key", "release-1.0.0")
            .multipart(form);
        async move { raw(request.send().await.unwrap()).await }
    };
    let first = upload(b"PK first jar").await;
    assert_eq!(first.status, 201, "{}", first.json());
    let again = upload(b"PK first jar").await;
    assert_eq!((again.status, again.replayed()), (201, true));
    assert_eq!(again.body, first.body);
    let other = upload(b"PK another jar").await;
    assert_eq!(other.status, 422);
    assert_eq!(other.code(), "IDEMPOTENCY_KEY_MISMATCH");
    let releases = s.get(&s.dev("releases")).await;
    assert_eq!(releases.ok()["totalResults"], 1);
}

/// While the request that claimed a key runs, the same request is told to retry in a second
/// (409 with `Retry-After: 1`) and another is refused (422); once its claim is released, the
/// retry runs. Concurrent identical requests create one record, and every answer that is not
/// 409 is the first one's bytes.
#[tokio::test]
async fn a_request_still_running_is_waited_for_and_runs_once_under_concurrency() {
    let s = TestServer::start().await;
    let url = s.dev("customers");
    let body = json!({"email": "running@example.com"}).to_string();
    // A claim of the same request, as another request in flight holds it.
    let path = format!("/api/v1/dev/teams/{}/customers", s.team_id());
    let print = Fingerprint::of("POST", &path, "", body_digest(body.as_bytes()));
    let hash = licensing_core::crypto::ApiKeySecret::parse(s.key())
        .unwrap()
        .hash();
    let record = s.store.find_api_key(&hash).await.unwrap().unwrap();
    let owner = IdempotencyOwner::api_key(s.team_id(), record.id);
    let key = IdempotencyKey::parse(b"in-flight").unwrap();
    let claim = s
        .store
        .claim_idempotency_key(&owner, &key, print, licensing_core::Timestamp::now())
        .await
        .unwrap();
    assert_eq!(claim, Claim::Run);
    let waiting = send(
        &s,
        Method::POST,
        &url,
        s.key(),
        Some("in-flight"),
        Some(&body),
    )
    .await;
    assert_eq!(waiting.status, 409, "{}", waiting.json());
    assert_eq!(waiting.code(), "IDEMPOTENCY_KEY_IN_USE");
    assert_eq!(waiting.headers.get("retry-after").unwrap(), "1");
    let other = json!({"email": "else@example.com"}).to_string();
    let refused = send(
        &s,
        Method::POST,
        &url,
        s.key(),
        Some("in-flight"),
        Some(&other),
    )
    .await;
    assert_eq!(refused.status, 422);
    assert_eq!(customer_count(&s).await, 0);
    s.store
        .release_idempotency_key(&owner, &key, print)
        .await
        .unwrap();
    let ran = send(
        &s,
        Method::POST,
        &url,
        s.key(),
        Some("in-flight"),
        Some(&body),
    )
    .await;
    assert_eq!((ran.status, ran.replayed()), (201, false));

    // Many at once.
    let body = json!({"email": "many@example.com"}).to_string();
    let mut tasks = Vec::new();
    for _ in 0..12 {
        let request = s
            .client
            .post(&url)
            .bearer_auth(s.key())
            .header("Idempotency-Key", "many-at-once")
            .header("content-type", "application/json")
            .body(body.clone());
        tasks.push(tokio::spawn(async move {
            raw(request.send().await.unwrap()).await
        }));
    }
    let mut bodies = Vec::new();
    for task in tasks {
        let answer = task.await.unwrap();
        match answer.status {
            201 => bodies.push(answer.body),
            409 => assert_eq!(answer.code(), "IDEMPOTENCY_KEY_IN_USE"),
            other => panic!("unexpected {other}: {}", answer.json()),
        }
    }
    assert!(!bodies.is_empty());
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "one answer, kept");
    assert_eq!(customer_count(&s).await, 2);
}

/// The admin API takes keys too: a retried team creation creates one team.
#[tokio::test]
async fn the_admin_api_runs_a_retried_write_once() {
    const TOKEN: &str = "admin-token-for-idempotency-tests-0123456789";
    let s = TestServer::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    let url = format!("{}/api/v1/admin/teams", s.base);
    let body = r#"{"name":"Retried"}"#;
    let first = send(&s, Method::POST, &url, TOKEN, Some("team-1"), Some(body)).await;
    assert_eq!(first.status, 201, "{}", first.json());
    let again = send(&s, Method::POST, &url, TOKEN, Some("team-1"), Some(body)).await;
    assert_eq!((again.status, again.replayed()), (201, true));
    // The same answer, but for the team's first API key, shown only once.
    let mut expected = first.json();
    expected["data"]["apiKey"] = json!(licensing_core::idempotency::REDACTED);
    assert_eq!(again.json(), expected);
    let teams = send(&s, Method::GET, &url, TOKEN, None, None).await;
    let named = teams.json()["data"]["teams"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "Retried")
        .count();
    assert_eq!(named, 1);
}

/// Two instances on one database share the keys: a retry through the other instance is
/// replayed (once the first has written its answer: told to wait until then), and another
/// request with the key is refused there.
#[tokio::test]
async fn instances_on_one_database_share_the_keys() {
    if !on_postgres() {
        eprintln!(
            "instances_on_one_database_share_the_keys: runs on PostgreSQL only (the api_postgres suite)"
        );
        return;
    }
    let a = TestServer::start().await;
    let b = a.second_instance().await;
    let body = json!({"email": "shared@example.com"}).to_string();
    let first = send(
        &a,
        Method::POST,
        &a.dev("customers"),
        a.key(),
        Some("shared"),
        Some(&body),
    )
    .await;
    assert_eq!(first.status, 201);
    // The first instance writes its answer's row just after answering: until then the other
    // sees the claim running and says so (409, as to any retry that comes too early).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let again = loop {
        let again = send(
            &b,
            Method::POST,
            &b.dev("customers"),
            b.key(),
            Some("shared"),
            Some(&body),
        )
        .await;
        if again.status != 409 || std::time::Instant::now() > deadline {
            break again;
        }
        assert_eq!(again.code(), "IDEMPOTENCY_KEY_IN_USE");
        assert_eq!(again.headers["retry-after"], "1");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!((again.status, again.replayed()), (201, true));
    assert_eq!(again.body, first.body);
    let other = json!({"email": "not-shared@example.com"}).to_string();
    let refused = send(
        &b,
        Method::POST,
        &b.dev("customers"),
        b.key(),
        Some("shared"),
        Some(&other),
    )
    .await;
    assert_eq!(refused.status, 422);
    assert_eq!(customer_count(&a).await, 1);
}

/// A secret an answer shows once (a new API key, a webhook's signing secret) is not kept in the
/// clear to serve retries: the replay has the first answer's status and body but for the
/// secret, in whose place it says it was shown once; nothing stored holds it, and `check`
/// reports a kept answer that does (kept by an earlier version).
#[tokio::test]
async fn kept_answers_hold_no_secret_shown_once() {
    use licensing_core::idempotency::{KeptAnswer, REDACTED};
    let s = TestServer::start().await;
    let token = s.team.api_key.clone();
    let created = send(
        &s,
        Method::POST,
        &s.dev("api-keys"),
        &token,
        Some("new-key-1"),
        Some(r#"{"name":"shop"}"#),
    )
    .await;
    assert_eq!(created.status, 201);
    let key = created.json()["data"]["key"].as_str().unwrap().to_owned();
    assert!(key.starts_with("lsk_"));
    let again = send(
        &s,
        Method::POST,
        &s.dev("api-keys"),
        &token,
        Some("new-key-1"),
        Some(r#"{"name":"shop"}"#),
    )
    .await;
    assert!(again.replayed());
    assert_eq!(again.status, 201);
    assert_eq!(again.json()["data"]["key"], REDACTED);
    assert_eq!(again.json()["data"]["id"], created.json()["data"]["id"]);
    let text = String::from_utf8(again.body.clone()).unwrap();
    assert!(!text.contains(&key[4..]), "{text}");
    // The webhook's secret alike, and a rotated one.
    let hook = send(
        &s,
        Method::POST,
        &s.dev("webhooks"),
        &token,
        Some("new-hook-1"),
        Some(r#"{"url":"https://hooks.example.com/in"}"#),
    )
    .await;
    assert_eq!(hook.status, 201, "{}", hook.json());
    let secret = hook.json()["data"]["secret"].as_str().unwrap().to_owned();
    let replay = send(
        &s,
        Method::POST,
        &s.dev("webhooks"),
        &token,
        Some("new-hook-1"),
        Some(r#"{"url":"https://hooks.example.com/in"}"#),
    )
    .await;
    assert_eq!(replay.json()["data"]["secret"], REDACTED);
    let rotate = s.dev(&format!(
        "webhooks/{}/rotate-secret",
        hook.json()["data"]["id"].as_str().unwrap()
    ));
    let rotated = send(&s, Method::POST, &rotate, &token, Some("rotate-1"), None).await;
    assert_eq!(rotated.status, 200, "{}", rotated.json());
    let new_secret = rotated.json()["data"]["secret"]
        .as_str()
        .unwrap()
        .to_owned();
    let replay = send(&s, Method::POST, &rotate, &token, Some("rotate-1"), None).await;
    assert_eq!(replay.json()["data"]["secret"], REDACTED);
    // Nothing kept holds a secret.
    assert_eq!(s.store.count_kept_secrets().await.unwrap(), 0);
    for shown in [&key, &secret, &new_secret] {
        assert!(!shown.is_empty());
    }
    let report = licensing_server::check::check(&s.store, &s.files, s.dir.path())
        .await
        .unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    // An answer kept in the clear by an earlier version is reported.
    let owner = IdempotencyOwner::admin();
    let old = IdempotencyKey::parse(b"kept-by-an-earlier-version").unwrap();
    let print = Fingerprint([9; 32]);
    let now = licensing_core::Timestamp::now();
    assert_eq!(
        s.store
            .claim_idempotency_key(&owner, &old, print, now)
            .await
            .unwrap(),
        Claim::Run
    );
    let body = format!(r#"{{"data":{{"key":"{key}"}}}}"#);
    s.store
        .keep_idempotent_answer(
            &owner,
            &old,
            print,
            &KeptAnswer {
                status: 201,
                content_type: "application/json".into(),
                headers: Vec::new(),
                body: body.into_bytes(),
            },
        )
        .await
        .unwrap();
    assert_eq!(s.store.count_kept_secrets().await.unwrap(), 1);
    let report = licensing_server::check::check(&s.store, &s.files, s.dir.path())
        .await
        .unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("kept idempotent answers hold a secret")),
        "{:?}",
        report.problems
    );
}

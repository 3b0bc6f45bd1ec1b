//! The one gate of the developer API: the order of its checks on every operation, scopes,
//! product restrictions, and the limits on failed authentications (BUG-4).

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Answer, TestServer};

/// Every developer operation as the OpenAPI document lists it: method, path template, the
/// scope its security requirement names.
fn developer_operations(doc: &Value) -> Vec<(Method, String, Option<String>)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        if !path.starts_with("/api/v1/dev/") {
            continue;
        }
        for (method, op) in item.as_object().unwrap() {
            let scope = op["security"][0]["apiKey"][0].as_str().map(str::to_owned);
            out.push((method.to_uppercase().parse().unwrap(), path.clone(), scope));
        }
    }
    out
}

/// The path's parameters, in order.
fn params(template: &str) -> Vec<&str> {
    template
        .split('/')
        .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .collect()
}

/// A well-formed value of a path parameter that names nothing.
fn good(name: &str) -> String {
    match name {
        "licenseKey" => "AAAAA-AAAAA-AAAAA-AAAAA-AAAAA".into(),
        "kid" => "0123456789abcdef".into(),
        "provider" => "stripe".into(),
        "meter" => "EXPORTS".into(),
        _ => uuid::Uuid::new_v4().to_string(),
    }
}

fn fill(template: &str, value: impl Fn(&str) -> String) -> String {
    template
        .split('/')
        .map(
            |s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => value(name),
                None => s.to_owned(),
            },
        )
        .collect::<Vec<_>>()
        .join("/")
}

async fn call(
    s: &TestServer,
    method: &Method,
    path: &str,
    key: Option<&str>,
) -> (Answer, Option<String>) {
    let mut request = s
        .client
        .request(method.clone(), format!("{}{path}", s.base))
        .header("content-type", "application/json");
    if [Method::POST, Method::PUT, Method::PATCH].contains(method) {
        request = request.body("{}");
    }
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    let body: Value = response.json().await.unwrap();
    (Answer { status, body }, challenge)
}

/// Creates a key with `scopes` (and `products`) through the API; its text.
async fn key_with(s: &TestServer, scopes: &[String], products: Option<&[&str]>) -> String {
    let mut body = json!({"name": "scoped", "scopes": scopes});
    if let Some(products) = products {
        body["productIds"] = json!(products);
    }
    let created = s.post(&s.dev("api-keys"), &body.to_string()).await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.body["data"]["key"].as_str().unwrap().to_owned()
}

const ALL_SCOPES: [&str; 30] = [
    "licenses:read",
    "licenses:write",
    "licenses:devices",
    "licenses:suspend",
    "licenses:extend",
    "licenses:email",
    "customers:read",
    "customers:write",
    "products:read",
    "products:write",
    "releases:read",
    "releases:write",
    "blacklist:read",
    "blacklist:write",
    "settings:read",
    "settings:write",
    "statistics:read",
    "api-keys:read",
    "api-keys:write",
    "audit-log:read",
    "webhooks:read",
    "webhooks:write",
    "entitlements:read",
    "entitlements:write",
    "policies:read",
    "policies:write",
    "integrations:read",
    "integrations:write",
    "usage:read",
    "usage:write",
];

/// Every scope that does not grant `scope` (a write scope grants every scope of its resource,
/// and every scope its resource's read).
fn all_but(scope: &str) -> Vec<String> {
    let (resource, access) = scope.split_once(':').unwrap();
    ALL_SCOPES
        .iter()
        .filter(|s| {
            let (r, a) = s.split_once(':').unwrap();
            let grants = **s == scope || (r == resource && (a == "write" || access == "read"));
            !grants
        })
        .map(|s| (*s).to_owned())
        .collect()
}

/// protocol.md section 4 on every developer operation: a malformed path id is 400 naming it
/// before credentials are looked at; then a missing key is 401; then a key without the
/// operation's scope is 403 naming the scope; and a key with exactly that scope passes the gate.
/// Before the gate, customers, products, devices, releases, access and API keys answered 401 to
/// a malformed id without credentials, and every key could do everything.
#[tokio::test]
async fn every_developer_operation_checks_ids_then_credentials_then_scope() {
    let s = TestServer::start().await;
    let doc = s.openapi().await;
    let operations = developer_operations(&doc);
    assert_eq!(operations.len(), 91, "every developer operation");
    let team = s.team_id().to_string();
    let scopes: BTreeSet<String> = operations
        .iter()
        .filter_map(|(_, _, s)| s.clone())
        .collect();
    assert_eq!(
        scopes.len(),
        ALL_SCOPES.len(),
        "every scope is used: {scopes:?}"
    );
    let mut without = std::collections::HashMap::new();
    let mut only = std::collections::HashMap::new();
    for scope in &scopes {
        without.insert(scope.clone(), key_with(&s, &all_but(scope), None).await);
        only.insert(
            scope.clone(),
            key_with(&s, std::slice::from_ref(scope), None).await,
        );
    }
    for (method, template, scope) in &operations {
        let names = params(template);
        // 1. Each malformed id, the others well formed, no credentials: 400 naming it.
        for bad in &names {
            let path = fill(template, |name| {
                if name == *bad {
                    "not-an-id".into()
                } else if name == "teamId" {
                    team.clone()
                } else {
                    good(name)
                }
            });
            let (answer, _) = call(&s, method, &path, None).await;
            answer.err(400, "BAD_REQUEST");
            assert_eq!(answer.fields(), [*bad], "{method} {path}");
        }
        let path = fill(template, |name| {
            if name == "teamId" {
                team.clone()
            } else {
                good(name)
            }
        });
        // 2. Good ids, no credentials: 401.
        let (answer, _) = call(&s, method, &path, None).await;
        answer.err(401, "UNAUTHORIZED");
        let Some(scope) = scope else {
            // Any key of the team may: a key with a single unrelated scope passes the gate.
            let (answer, _) = call(&s, method, &path, Some(&only["statistics:read"])).await;
            assert_ne!(answer.status, 403, "{method} {path}: {}", answer.body);
            continue;
        };
        // 3. A key with every scope but this one: 403 naming it.
        let (answer, challenge) = call(&s, method, &path, Some(&without[scope])).await;
        answer.err(403, "FORBIDDEN");
        assert!(
            answer.body["result"]["details"]
                .as_str()
                .unwrap()
                .contains(scope.as_str()),
            "{method} {path}: {}",
            answer.body
        );
        assert_eq!(
            challenge.as_deref(),
            Some(format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\"").as_str()),
            "{method} {path}"
        );
        // 4. A key with only this scope passes the gate (and meets the unknown ids, or the
        // empty body).
        let (answer, _) = call(&s, method, &path, Some(&only[scope])).await;
        assert!(
            ![401, 403].contains(&answer.status),
            "{method} {path} with {scope}: {}",
            answer.body
        );
    }
}

#[tokio::test]
async fn a_read_only_key_reads_and_cannot_write() {
    let s = TestServer::start().await;
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let reader = key_with(&s, &["licenses:read".into()], None).await;
    let id = l["id"].as_str().unwrap();
    s.send(Method::GET, &s.dev("licenses"), Some(&reader), None)
        .await
        .ok();
    s.send(
        Method::GET,
        &s.dev(&format!("licenses/id/{id}")),
        Some(&reader),
        None,
    )
    .await
    .ok();
    for (method, path, body) in [
        (
            Method::POST,
            "licenses".to_owned(),
            r#"{"expirationType":"NEVER"}"#,
        ),
        (
            Method::PUT,
            format!("licenses/id/{id}"),
            r#"{"suspended":true}"#,
        ),
        (Method::DELETE, format!("licenses/id/{id}"), "{}"),
        (
            Method::POST,
            "customers".to_owned(),
            r#"{"email":"a@example.com"}"#,
        ),
        (Method::GET, "customers".to_owned(), "{}"),
    ] {
        s.send(method, &s.dev(&path), Some(&reader), Some(body))
            .await
            .err(403, "FORBIDDEN");
    }
    // Nothing changed.
    let after = s.get(&s.dev(&format!("licenses/id/{id}"))).await;
    assert_eq!(after.ok()["suspended"], false);
}

/// A key cannot hand on (or revoke) more than it has.
#[tokio::test]
async fn a_key_cannot_create_a_key_with_more_access_than_its_own() {
    let s = TestServer::start().await;
    let p = s.post(&s.dev("products"), r#"{"name":"App"}"#).await;
    let pid = p.ok()["id"].as_str().unwrap().to_owned();
    let manager = key_with(&s, &["api-keys:write".into(), "licenses:read".into()], None).await;
    let create = |body: Value| {
        let manager = manager.clone();
        let s = &s;
        async move {
            s.send(
                Method::POST,
                &s.dev("api-keys"),
                Some(&manager),
                Some(&body.to_string()),
            )
            .await
        }
    };
    // Within its own scopes: fine.
    create(json!({"name": "ro", "scopes": ["licenses:read"]}))
        .await
        .ok();
    // More: 403, naming what it lacks.
    for body in [
        json!({"name": "rw", "scopes": ["licenses:write"]}),
        json!({"name": "all", "scopes": ["*"]}),
        json!({"name": "default"}),
    ] {
        let answer = create(body).await;
        answer.err(403, "FORBIDDEN");
    }
    // A product-restricted key only hands on its own products.
    let restricted = key_with(
        &s,
        &["api-keys:write".into(), "licenses:read".into()],
        Some(&[&pid]),
    )
    .await;
    let other = s.post(&s.dev("products"), r#"{"name":"Other"}"#).await;
    let other = other.ok()["id"].as_str().unwrap().to_owned();
    for (body, status) in [
        (json!({"name": "x", "scopes": ["licenses:read"]}), 403),
        (
            json!({"name": "x", "scopes": ["licenses:read"], "productIds": [other]}),
            403,
        ),
        (
            json!({"name": "x", "scopes": ["licenses:read"], "productIds": [pid]}),
            201,
        ),
    ] {
        let answer = s
            .send(
                Method::POST,
                &s.dev("api-keys"),
                Some(&restricted),
                Some(&body.to_string()),
            )
            .await;
        assert_eq!(answer.status, status, "{body}: {}", answer.body);
    }
    // Bad scopes are 400 naming the field.
    for body in [
        json!({"name": "x", "scopes": []}),
        json!({"name": "x", "scopes": ["licenses:delete"]}),
        json!({"name": "x", "scopes": ["statistics:write"]}),
        json!({"name": "x", "productIds": []}),
        json!({"name": "x", "productIds": ["nope"]}),
    ] {
        let answer = s.post(&s.dev("api-keys"), &body.to_string()).await;
        answer.err(400, "BAD_REQUEST");
        assert!(
            answer.fields()[0].starts_with("scopes")
                || answer.fields()[0].starts_with("productIds"),
            "{body}: {}",
            answer.body
        );
    }
    // Unknown products are 404.
    s.post(
        &s.dev("api-keys"),
        &json!({"name": "x", "productIds": [uuid::Uuid::new_v4()]}).to_string(),
    )
    .await
    .err(404, "PRODUCT_NOT_FOUND");
}

/// A key restricted to a product sees and changes only what belongs to it.
#[tokio::test]
async fn a_product_restricted_key_sees_only_its_products() {
    let s = TestServer::start().await;
    let a = s.post(&s.dev("products"), r#"{"name":"A"}"#).await.ok()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let b = s.post(&s.dev("products"), r#"{"name":"B"}"#).await.ok()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let la = s
        .license(&json!({"expirationType": "NEVER", "productIds": [a]}).to_string())
        .await;
    let lb = s
        .license(&json!({"expirationType": "NEVER", "productIds": [b]}).to_string())
        .await;
    let both = s
        .license(&json!({"expirationType": "NEVER", "productIds": [a, b]}).to_string())
        .await;
    let _none = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let key = key_with(
        &s,
        &[
            "licenses:*".into(),
            "products:*".into(),
            "releases:*".into(),
        ],
        Some(&[&a]),
    )
    .await;
    let get = |path: String| {
        let key = key.clone();
        let s = &s;
        async move { s.send(Method::GET, &s.dev(&path), Some(&key), None).await }
    };
    // Lists hold only product A's records.
    let licenses = get("licenses".into()).await;
    let mut ids: Vec<&str> = licenses.ok()["licenses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    let mut expected = vec![la["id"].as_str().unwrap(), both["id"].as_str().unwrap()];
    expected.sort_unstable();
    assert_eq!(ids, expected);
    assert_eq!(licenses.ok()["totalResults"], 2);
    assert_eq!(
        get(format!("licenses?productIds={b}")).await.ok()["totalResults"],
        0
    );
    let products = get("products".into()).await;
    assert_eq!(products.ok()["totalResults"], 1);
    assert_eq!(products.ok()["products"][0]["id"], a.as_str());
    // Another product's records are not found.
    get(format!("licenses/id/{}", lb["id"].as_str().unwrap()))
        .await
        .err(404, "LICENSE_NOT_FOUND");
    get(format!("licenses/{}", lb["licenseKey"].as_str().unwrap()))
        .await
        .err(404, "LICENSE_NOT_FOUND");
    get(format!("products/{b}"))
        .await
        .err(404, "PRODUCT_NOT_FOUND");
    get(format!("licenses/id/{}/hwid", lb["id"].as_str().unwrap()))
        .await
        .err(404, "LICENSE_NOT_FOUND");
    // It reads a license shared with another product, but may not change it.
    let both_id = both["id"].as_str().unwrap();
    get(format!("licenses/id/{both_id}")).await.ok();
    s.send(
        Method::PUT,
        &s.dev(&format!("licenses/id/{both_id}")),
        Some(&key),
        Some(r#"{"suspended":true}"#),
    )
    .await
    .err(403, "FORBIDDEN");
    // It creates licenses only for its products, and no products.
    for body in [
        json!({"expirationType": "NEVER"}),
        json!({"expirationType": "NEVER", "productIds": [b]}),
        json!({"expirationType": "NEVER", "productIds": [a, b]}),
    ] {
        s.send(
            Method::POST,
            &s.dev("licenses"),
            Some(&key),
            Some(&body.to_string()),
        )
        .await
        .err(403, "FORBIDDEN");
    }
    s.send(
        Method::POST,
        &s.dev("licenses"),
        Some(&key),
        Some(&json!({"expirationType": "NEVER", "productIds": [a]}).to_string()),
    )
    .await
    .ok();
    s.send(
        Method::POST,
        &s.dev("products"),
        Some(&key),
        Some(r#"{"name":"C"}"#),
    )
    .await
    .err(403, "FORBIDDEN");
    // Nothing of product B changed.
    let lb_after = s
        .get(&s.dev(&format!("licenses/id/{}", lb["id"].as_str().unwrap())))
        .await;
    assert_eq!(lb_after.ok()["suspended"], false);
}

/// BUG-4: 2,000 wrong admin tokens got 2,000 x 401. Now an address is limited, and answered 429
/// with `Retry-After` whatever it sends once past the limit; another address is not slowed.
#[tokio::test]
async fn failed_admin_tokens_are_limited_per_address() {
    const TOKEN: &str = "admin-token-for-tests-0123456789";
    let s = TestServer::start_with(|c| {
        c.admin_token = Some(TOKEN.into());
        c.auth_failure_limit_per_minute = 20;
    })
    .await;
    let url = format!("{}/api/v1/admin/teams", s.base);
    let from = |ip: &'static str, token: &'static str| {
        let url = url.clone();
        let client = s.client.clone();
        async move {
            client
                .get(url)
                .bearer_auth(token)
                .header("x-forwarded-for", ip)
                .send()
                .await
                .unwrap()
        }
    };
    let mut statuses = Vec::new();
    for i in 0..200 {
        let guess: &'static str =
            Box::leak(format!("guess-{i:04}-padding-to-32-characters").into_boxed_str());
        statuses.push(from("198.51.100.66", guess).await.status().as_u16());
    }
    assert!(statuses[..20].iter().all(|s| *s == 401), "{statuses:?}");
    assert!(statuses[20..].iter().all(|s| *s == 429), "{statuses:?}");
    // Even the right token is refused from that address now: it must not learn anything.
    let blocked = from("198.51.100.66", TOKEN).await;
    assert_eq!(blocked.status(), 429);
    assert!(blocked.headers().get("retry-after").is_some());
    // Another address with the right token is served at once.
    assert_eq!(from("203.0.113.5", TOKEN).await.status(), 200);
}

/// BUG-4: wrong API keys were never throttled. Failures are limited per address and, against
/// one team, per team; a correct key is never slowed by failures from another address.
#[tokio::test]
async fn failed_api_keys_are_limited_per_address_and_per_team() {
    let s = TestServer::start_with(|c| c.auth_failure_limit_per_minute = 5).await;
    let url = s.dev("licenses");
    let send = |ip: String, key: String| {
        let url = url.clone();
        let client = s.client.clone();
        async move {
            let r = client
                .get(url)
                .bearer_auth(key)
                .header("x-forwarded-for", ip)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let body: Value = r.json().await.unwrap();
            (status, body)
        }
    };
    let wrong = || format!("lsk_{}", "0123456789abcdef".repeat(4));
    // A mistyped key (one character changed) is told from a wrong one, without a lookup.
    let mut mistyped = s.key().to_owned();
    let last = mistyped.pop().unwrap();
    mistyped.push(if last == 'A' { 'B' } else { 'A' });
    let (status, body) = send("192.0.2.1".into(), mistyped).await;
    assert_eq!(status, 401);
    assert!(
        body["result"]["details"]
            .as_str()
            .unwrap()
            .contains("Mistyped"),
        "{body}"
    );
    // One address: 5 failures, then 429.
    for i in 0..8 {
        let (status, _) = send("198.51.100.10".into(), wrong()).await;
        assert_eq!(status, if i < 5 { 401 } else { 429 }, "attempt {i}");
    }
    // The team's own key from another address still works.
    let (status, _) = send("203.0.113.1".into(), s.key().to_owned()).await;
    assert_eq!(status, 200);
    // Many addresses against one team: past ten times the address limit, failures get 429...
    let mut team_limited = false;
    for i in 0..60 {
        let (status, _) = send(format!("10.0.{}.{}", i / 200, i % 200 + 1), wrong()).await;
        if status == 429 {
            team_limited = true;
        }
    }
    assert!(team_limited, "failures against one team are limited");
    // ... and a correct key of that team, from a fresh address, is still answered at once.
    let (status, _) = send("203.0.113.2".into(), s.key().to_owned()).await;
    assert_eq!(status, 200);
    // Failures past the team's limit are refused, not only counted.
    let (status, _) = send("203.0.113.3".into(), wrong()).await;
    assert_eq!(status, 429);
}

/// An admin token shorter than 32 characters is refused at start-up, saying why.
#[tokio::test]
async fn a_short_admin_token_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = crate::helpers::test_config(dir.path());
    config.admin_token = Some("abcd".into());
    let err = licensing_server::Server::bind(config).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("LICENSING_ADMIN_TOKEN") && text.contains("32"),
        "{text}"
    );
}

/// Each operation is counted in the metrics under its declared name, by outcome: a success as
/// `ok`, a refusal by its result code.
#[tokio::test]
async fn operations_are_counted_by_name_and_outcome() {
    let s = TestServer::start().await;
    let ok = "licensing_operations_total{operation=\"create_product\",outcome=\"ok\"}";
    let missing =
        "licensing_operations_total{operation=\"get_product\",outcome=\"PRODUCT_NOT_FOUND\"}";
    assert_eq!(s.metric(ok).await, 0.0, "metrics are per process");
    s.post(&s.dev("products"), r#"{"name":"Counted"}"#)
        .await
        .ok();
    s.post(&s.dev("products"), r#"{"name":"Counted too"}"#)
        .await
        .ok();
    let unknown = uuid::Uuid::new_v4();
    s.get(&s.dev(&format!("products/{unknown}"))).await;
    assert_eq!(s.metric(ok).await, 2.0);
    assert_eq!(s.metric(missing).await, 1.0);
    assert!(
        s.metric("licensing_operation_duration_seconds_count{operation=\"create_product\"}")
            .await
            >= 2.0
    );
}

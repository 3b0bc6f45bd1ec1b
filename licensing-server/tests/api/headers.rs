//! Headers every answer carries, and who may read `/metrics`.

use reqwest::Method;
use serde_json::json;

use crate::helpers::TestServer;

const TOKEN: &str = "admin-token-for-tests-0123456789";

/// A request of the table: method, URL, credential, body, and whether its answer is private.
type Case<'a> = (Method, String, Option<&'a str>, Option<String>, bool);

/// `X-Content-Type-Options: nosniff` on every answer, `Cache-Control: no-store` on every answer
/// that carries secrets or private data (all of the API); the public documents stay cacheable.
#[tokio::test]
async fn every_answer_says_nosniff_and_api_answers_are_not_stored() {
    let s = TestServer::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    let team = s.team_id();
    let l = s.license(r#"{"expirationType":"NEVER"}"#).await;
    let verify = json!({"licenseKey": l["licenseKey"]}).to_string();
    let cases: Vec<Case<'_>> = vec![
        (
            Method::POST,
            s.dev("api-keys"),
            Some(s.key()),
            Some(r#"{"name":"ci"}"#.into()),
            true,
        ),
        (
            Method::POST,
            format!("{}/api/v1/admin/teams", s.base),
            Some(TOKEN),
            Some(r#"{"name":"B"}"#.into()),
            true,
        ),
        (Method::GET, s.dev("licenses"), Some(s.key()), None, true),
        (Method::GET, s.dev("licenses"), None, None, true),
        (Method::GET, s.dev("nowhere"), Some(s.key()), None, true),
        (Method::PATCH, s.dev("licenses"), Some(s.key()), None, true),
        (
            Method::POST,
            format!("{}/api/v1/client/teams/{team}/verification/verify", s.base),
            None,
            Some(verify),
            true,
        ),
        (Method::GET, format!("{}/healthz", s.base), None, None, true),
        (Method::GET, format!("{}/metrics", s.base), None, None, true),
        (Method::GET, format!("{}/unknown", s.base), None, None, true),
        (
            Method::GET,
            format!("{}/api/openapi.json", s.base),
            None,
            None,
            false,
        ),
        (Method::GET, format!("{}/docs/", s.base), None, None, false),
    ];
    for (method, url, key, body, private) in cases {
        let mut request = s.client.request(method.clone(), &url);
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body);
        }
        let response = request.send().await.unwrap();
        let headers = response.headers();
        assert_eq!(
            headers
                .get("x-content-type-options")
                .map(|v| v.to_str().unwrap()),
            Some("nosniff"),
            "{method} {url}"
        );
        let cache = headers
            .get("cache-control")
            .map(|v| v.to_str().unwrap().to_owned());
        if private {
            assert_eq!(cache.as_deref(), Some("no-store"), "{method} {url}");
        } else {
            assert_ne!(cache.as_deref(), Some("no-store"), "{method} {url}");
        }
    }
}

/// By default `/metrics` answers clients on this host only; a proxied outside client is refused.
#[tokio::test]
async fn metrics_answer_loopback_clients_by_default() {
    let s = TestServer::start().await;
    let url = format!("{}/metrics", s.base);
    // Something to count.
    s.client
        .get(format!("{}/healthz", s.base))
        .send()
        .await
        .unwrap();
    let local = s.client.get(&url).send().await.unwrap();
    assert_eq!(local.status(), 200);
    // Prometheus's text exposition format, as the body is.
    assert_eq!(
        local.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    assert!(local.text().await.unwrap().contains("licensing_"));
    // Through the trusted loopback proxy, for a client elsewhere.
    let outside = s
        .client
        .get(&url)
        .header("x-forwarded-for", "203.0.113.9")
        .send()
        .await
        .unwrap();
    assert_eq!(outside.status(), 403);
}

#[tokio::test]
async fn metrics_can_require_a_token() {
    let s = TestServer::start_with(|c| c.metrics_token = Some("metrics-secret".into())).await;
    let url = format!("{}/metrics", s.base);
    assert_eq!(s.client.get(&url).send().await.unwrap().status(), 401);
    let wrong = s.client.get(&url).bearer_auth("nope").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let right = s
        .client
        .get(&url)
        .bearer_auth("metrics-secret")
        .header("x-forwarded-for", "203.0.113.9")
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);
}

#[tokio::test]
async fn metrics_can_have_a_listener_of_their_own() {
    let s = TestServer::start_with(|c| {
        c.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    // Not on the main listener.
    let main = s
        .client
        .get(format!("{}/metrics", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(main.status(), 404);
    let addr = s.metrics_addr.expect("a metrics listener");
    let own = s
        .client
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), 200);
    assert_eq!(own.headers().get("cache-control").unwrap(), "no-store");
    assert!(own.text().await.unwrap().contains("licensing_"));
    // Nothing else there.
    let other = s
        .client
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
}

/// Every answer carries `X-Request-Id`: the client's when it is a plausible id, a new one
/// (different for each request) otherwise.
#[tokio::test]
async fn answers_carry_a_request_id() {
    let s = TestServer::start().await;
    let url = format!("{}/healthz", s.base);
    let id = |r: &reqwest::Response| r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let first = s.client.get(&url).send().await.unwrap();
    let second = s.client.get(&url).send().await.unwrap();
    assert!(!id(&first).is_empty());
    assert_ne!(id(&first), id(&second));
    let given = s
        .client
        .get(&url)
        .header("x-request-id", "req-2026/11:25.abc_DEF+1=")
        .send()
        .await
        .unwrap();
    assert_eq!(id(&given), "req-2026/11:25.abc_DEF+1=");
    // Errors carry it too.
    let missing = s
        .client
        .get(s.dev("licenses/id/not-an-id"))
        .bearer_auth(s.key())
        .header("x-request-id", "trace-404")
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 400);
    assert_eq!(id(&missing), "trace-404");
    for odd in ["has space", "quote\"", &"x".repeat(129)] {
        let replaced = s
            .client
            .get(&url)
            .header("x-request-id", odd)
            .send()
            .await
            .unwrap();
        assert_ne!(id(&replaced), odd);
        assert!(!id(&replaced).is_empty());
    }
}

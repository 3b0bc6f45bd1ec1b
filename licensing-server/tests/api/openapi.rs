//! The OpenAPI document against the real routes: every documented operation is routed, every
//! route is documented, and the document and Swagger UI are served.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::helpers::TestServer;

const TOKEN: &str = "admin-token-for-tests-0123456789";

/// Fills a path template with ids of the right shapes.
fn concrete(s: &TestServer, template: &str) -> String {
    let mut path = template.replace("{teamId}", &s.team_id().to_string());
    path = path.replace("{licenseKey}", "AAAAA-AAAAA-AAAAA-AAAAA-AAAAA");
    while let Some(start) = path.find('{') {
        let end = path[start..].find('}').unwrap() + start;
        path.replace_range(start..=end, &uuid::Uuid::new_v4().to_string());
    }
    path
}

/// Whether the server routes `method` on `template`: anything but "no such endpoint" and 405.
async fn routed(s: &TestServer, method: &str, template: &str) -> bool {
    let url = format!("{}{}", s.base, concrete(s, template));
    let method: reqwest::Method = method.to_uppercase().parse().unwrap();
    let mut request = s.client.request(method.clone(), &url);
    request = if template.starts_with("/api/v1/admin") {
        request.bearer_auth(TOKEN)
    } else {
        request.bearer_auth(s.key())
    };
    if method != reqwest::Method::GET && method != reqwest::Method::DELETE {
        request = request
            .header("content-type", "application/json")
            .body("{}");
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let no_route = status == 404
        && body["result"]["details"]
            .as_str()
            .is_some_and(|d| d.starts_with("No such endpoint"));
    !(no_route || status == 405)
}

#[tokio::test]
async fn every_documented_operation_is_routed_and_every_route_is_documented() {
    let s = TestServer::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    let response = s
        .client
        .get(format!("{}/api/openapi.json", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let text = response.text().await.unwrap();
    assert_eq!(text, licensing_server::openapi_json());
    let doc: Value = serde_json::from_str(&text).unwrap();

    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.insert((method.clone(), path.clone()));
        }
    }
    for (method, path) in &documented {
        assert!(
            routed(&s, method, path).await,
            "documented but not routed: {method} {path}"
        );
    }
    let templates: BTreeSet<&str> = licensing_server::metrics::templates().into_iter().collect();
    for path in documented.iter().map(|(_, p)| p.as_str()) {
        assert!(
            templates.contains(path),
            "{path} is not a known route template"
        );
    }
    // The dashboard's pages are HTML for browsers, not operations of the API; nor is `/`, which
    // sends a browser to them.
    for template in templates
        .iter()
        .filter(|t| !t.starts_with("/dashboard") && **t != "/")
    {
        for method in ["get", "post", "put", "patch", "delete"] {
            if routed(&s, method, template).await {
                assert!(
                    documented.contains(&(method.to_owned(), (*template).to_owned())),
                    "routed but not documented: {method} {template}"
                );
            }
        }
    }
    // The (ext) operations are under their own tag.
    let ext = &doc["paths"]["/api/v1/dev/teams/{teamId}/public-key"]["get"];
    assert_eq!(ext["tags"], serde_json::json!(["extensions"]));
}

#[tokio::test]
async fn swagger_ui_is_served_from_the_binary() {
    let s = TestServer::start().await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let redirect = client.get(format!("{}/docs", s.base)).send().await.unwrap();
    assert_eq!(redirect.status(), 303);
    assert_eq!(redirect.headers()["location"], "/docs/");
    let page = s
        .client
        .get(format!("{}/docs/", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(page.text().await.unwrap().contains("swagger-ui"));
    let init = s
        .client
        .get(format!("{}/docs/swagger-initializer.js", s.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(init.contains("/api/openapi.json"), "{init}");
    let missing = s.get(&format!("{}/docs/nope.js", s.base)).await;
    assert_eq!(missing.status, 404);
    // HEAD answers as GET does, without the body.
    let head = client
        .head(format!("{}/docs", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 303);
    assert_eq!(head.headers()["location"], "/docs/");
    for path in ["/docs/", "/api/openapi.json"] {
        let head = client
            .head(format!("{}{path}", s.base))
            .send()
            .await
            .unwrap();
        assert_eq!(head.status(), 200, "{path}");
        let get = client
            .get(format!("{}{path}", s.base))
            .send()
            .await
            .unwrap();
        assert_eq!(
            head.headers()["content-type"],
            get.headers()["content-type"],
            "{path}"
        );
        assert!(head.bytes().await.unwrap().is_empty(), "{path}");
    }
}

/// Every write of the developer and admin APIs declares `Idempotency-Key` and the two answers
/// it adds; no read and no client operation does.
#[tokio::test]
async fn every_write_declares_its_idempotency_key() {
    let s = TestServer::start().await;
    let doc = s.openapi().await;
    let mut writes = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let declares = operation["parameters"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["name"] == "Idempotency-Key"));
            let write = matches!(method.as_str(), "post" | "put" | "patch" | "delete")
                && (path.starts_with("/api/v1/dev/") || path.starts_with("/api/v1/admin/"));
            assert_eq!(declares, write, "{method} {path}");
            if write {
                writes += 1;
                for status in ["409", "422"] {
                    assert!(
                        operation["responses"][status].is_object(),
                        "{method} {path} {status}"
                    );
                }
            }
        }
    }
    assert!(writes >= 40, "{writes}");
}

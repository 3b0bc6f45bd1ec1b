//! The API's own description: `GET /api/openapi.json`, and Swagger UI at `/docs`, its assets
//! compiled into the binary (no network needed).

use std::sync::{Arc, OnceLock};

use licensing_core::api::requests::parse_no_query;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{HeaderValue, StatusCode, header};

use crate::http::{self, Response, raw_query};

/// `GET`, or `HEAD` answered alike (the server sends its headers without the body).
fn get_or_head() -> BoxedFilter<()> {
    warp::get().or(warp::head()).unify().boxed()
}

fn with_type(mut response: Response, content_type: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

/// `/api/openapi.json` (what `document` writes, once, on the first request), `/docs` and the
/// UI's assets under `/docs/`.
pub(crate) fn routes(document: fn() -> String) -> BoxedFilter<(Response,)> {
    let written: Arc<OnceLock<bytes::Bytes>> = Arc::new(OnceLock::new());
    let document = warp::path!("api" / "openapi.json")
        .and(get_or_head())
        .and(raw_query())
        .map(move |query: String| {
            http::respond(parse_no_query(&query).map(|()| {
                let text = written.get_or_init(|| document().into()).clone();
                with_type(Response::new(text.into()), "application/json")
            }))
        });
    let config = Arc::new(utoipa_swagger_ui::Config::new(["/api/openapi.json"]));
    let ui = warp::path("docs")
        .and(warp::path::full())
        .and(warp::path::tail())
        .and(get_or_head())
        .map(move |full: warp::path::FullPath, tail: warp::path::Tail| {
            // The UI's page refers to its assets relatively: it must be served as `/docs/`.
            if full.as_str() == "/docs" {
                return warp::reply::Reply::into_response(warp::redirect::see_other(
                    warp::http::Uri::from_static("/docs/"),
                ));
            }
            asset(tail.as_str(), &config)
        });
    document.or(ui).unify().boxed()
}

fn asset(path: &str, config: &Arc<utoipa_swagger_ui::Config<'static>>) -> Response {
    match utoipa_swagger_ui::serve(path, config.clone()) {
        Ok(Some(file)) => {
            let mut response = with_type(
                Response::new(file.bytes.into_owned().into()),
                &file.content_type,
            );
            if file.gzpipped {
                response
                    .headers_mut()
                    .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            }
            response
        }
        Ok(None) => http::error(&licensing_core::ApiError::route_not_found()),
        Err(e) => {
            let mut response = http::error(&http::internal("serving Swagger UI failed", e));
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            response
        }
    }
}

#[cfg(test)]
mod openapi_document {
    /// The checked-in `openapi.json` is the generated document. After changing the API, run
    /// `UPDATE_OPENAPI=1 cargo test -p licensing-server --lib openapi` to regenerate it.
    #[test]
    fn the_checked_in_document_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../openapi.json");
        let generated = format!("{}\n", super::super::openapi_json());
        if std::env::var_os("UPDATE_OPENAPI").is_some() {
            std::fs::write(&path, &generated).unwrap();
            return;
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            checked_in == generated,
            "openapi.json differs from the generated document: regenerate it with\n  UPDATE_OPENAPI=1 cargo test -p licensing-server --lib openapi\nand commit the result"
        );
    }

    /// Every developer operation of the gate's table is documented, with its scope as the
    /// security requirement, and every documented developer operation is in the table.
    #[test]
    fn every_developer_operation_documents_its_scope() {
        let doc: serde_json::Value = serde_json::from_str(&super::super::openapi_json()).unwrap();
        let table = crate::routes::dev::operations();
        for operation in &table {
            let method = operation.method.as_str().to_ascii_lowercase();
            let declared = &doc["paths"][operation.template()][&method];
            assert!(
                declared.is_object(),
                "{method} {} is not documented",
                operation.template()
            );
            let expected: Vec<String> = operation.scope.iter().map(|s| s.name()).collect();
            assert_eq!(
                declared["security"],
                serde_json::json!([{ "apiKey": expected }]),
                "{method} {}",
                operation.template()
            );
        }
        let documented = doc["paths"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(path, _)| path.starts_with("/api/v1/dev/"))
            .map(|(_, item)| item.as_object().unwrap().len())
            .sum::<usize>();
        assert_eq!(documented, table.len());
    }

    #[test]
    fn every_operation_documents_its_answers() {
        let doc: serde_json::Value = serde_json::from_str(&super::super::openapi_json()).unwrap();
        let paths = doc["paths"].as_object().unwrap();
        assert!(paths.len() >= 30, "{}", paths.len());
        for (path, item) in paths {
            for (method, op) in item.as_object().unwrap() {
                let responses = op["responses"].as_object().unwrap();
                assert!(!responses.is_empty(), "{method} {path}");
                if path.starts_with("/api/v1/") {
                    assert!(
                        responses.contains_key("400"),
                        "{method} {path} lacks its 400"
                    );
                    assert!(
                        responses.contains_key("500"),
                        "{method} {path} lacks its 500"
                    );
                }
            }
        }
    }
}

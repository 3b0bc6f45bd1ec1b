//! The API's own description: `GET /api/openapi.json`, and Swagger UI at `/docs`, its assets
//! compiled into the binary (no network needed).

use std::sync::{Arc, OnceLock};

use licensing_core::api::requests::parse_no_query;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{HeaderValue, StatusCode, header};

use crate::http::{self, Response, raw_query};

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
        .and(warp::get())
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
        .and(warp::get())
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

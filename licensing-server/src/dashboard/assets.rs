//! The dashboard's one stylesheet, one small script and its icon, compiled into the binary, so that the
//! pages need nothing from anywhere else (they work offline). The script only enhances: every
//! form works without it.

use warp::http::{HeaderValue, StatusCode, header};

use crate::http::Response;

/// The stylesheet's path, versioned so that browsers may keep it.
pub(crate) const CSS_PATH: &str = concat!(
    "/dashboard/static/dashboard.css?v=",
    env!("CARGO_PKG_VERSION")
);
/// The script's path, versioned likewise.
pub(crate) const JS_PATH: &str = concat!(
    "/dashboard/static/dashboard.js?v=",
    env!("CARGO_PKG_VERSION")
);

/// The icon browsers show in the tab (the dashboard's and the portal's).
pub(crate) const FAVICON_PATH: &str = concat!(
    "/dashboard/static/favicon.svg?v=",
    env!("CARGO_PKG_VERSION")
);
/// The icon itself (SVG).
pub(crate) const FAVICON: &str = include_str!("static/favicon.svg");

const CSS: &str = include_str!("static/dashboard.css");
const JS: &str = include_str!("static/dashboard.js");

/// `GET /dashboard/static/{name}`.
pub(crate) fn serve(name: &str) -> Response {
    let (body, kind) = match name {
        "dashboard.css" => (CSS, "text/css; charset=utf-8"),
        "dashboard.js" => (JS, "text/javascript; charset=utf-8"),
        "favicon.svg" => (FAVICON, "image/svg+xml"),
        _ => {
            let mut response = Response::new("Not found".into());
            *response.status_mut() = StatusCode::NOT_FOUND;
            return response;
        }
    };
    let mut response = Response::new(body.into());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400"),
    );
    response
}

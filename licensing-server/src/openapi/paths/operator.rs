//! What the server serves besides the APIs: health, metrics, this document and its UI. (The
//! admin API's operations are declared with their routes, `routes::admin`.)

use super::*;

/// Whether the server is up.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "Up", body = Health)))]
pub(in crate::openapi) fn healthz() {}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, description = "Prometheus text exposition", content_type = "text/plain", body = String)))]
pub(in crate::openapi) fn metrics() {}

/// This document.
#[utoipa::path(get, path = "/api/openapi.json", tag = "operations", responses((status = 200, description = "The OpenAPI document", content_type = "application/json", body = Object)))]
pub(in crate::openapi) fn openapi() {}

/// Swagger UI for this document (assets served from the binary, no network needed).
#[utoipa::path(get, path = "/docs", tag = "operations", responses((status = 303, description = "Redirects to `/docs/`, the Swagger UI page")))]
pub(in crate::openapi) fn docs() {}

//! The OpenAPI document (`GET /api/openapi.json`, checked in as `openapi.json`): utoipa path
//! declarations for every route, the schemas of `licensing-core`'s API types, and the error
//! answers each operation can give.

mod paths;

use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Licensing API",
        version = "1.0.0",
        description = "License management and verification: a developer API (bearer API keys) and a client API (no credentials) for applications."
    ),
    paths(
        paths::verify, paths::heartbeat, paths::classloader, paths::create_license, paths::list_licenses, paths::get_license, paths::delete_license, paths::get_license_by_id, paths::update_license, paths::delete_license_by_id, paths::list_hwids, paths::set_hwid_forgotten, paths::list_ips, paths::set_ip_forgotten, paths::create_customer, paths::list_customers, paths::get_customer, paths::update_customer, paths::delete_customer, paths::create_product, paths::list_products, paths::get_product, paths::update_product, paths::delete_product, paths::create_branch, paths::list_branches, paths::delete_branch, paths::create_release, paths::list_releases, paths::get_release, paths::update_release, paths::delete_release, paths::statistics, paths::get_settings, paths::update_settings, paths::create_blacklist_entry, paths::list_blacklist, paths::delete_blacklist_entry, paths::create_api_key, paths::list_api_keys, paths::revoke_api_key, paths::public_keys, paths::create_team, paths::list_teams, paths::set_features, paths::healthz, paths::metrics, paths::openapi, paths::docs
    ),
    components(schemas(licensing_core::api::requests::ReleaseData)),
    tags(
        (name = "client", description = "Called by applications: verify, heartbeat, classloader."),
        (name = "licenses", description = "Licenses of the team."),
        (name = "devices", description = "Hardware identifiers and IP addresses seen on a license."),
        (name = "customers", description = "Customers of the team."),
        (name = "products", description = "Products and their branches."),
        (name = "releases", description = "Releases and their files."),
        (name = "team", description = "The team: statistics."),
        (name = "admin", description = "The operator's API (only with LICENSING_ADMIN_TOKEN)."),
        (name = "operations", description = "Health, metrics, this document."),
        (name = "extensions", description = "(ext) endpoints of this server beyond the specification.")
    ),
    modifiers(&Security)
)]
pub struct ApiDoc;

struct Security;

impl utoipa::Modify for Security {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "apiKey",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("A team API key: `Authorization: Bearer lsk_…`"))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "adminToken",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("The operator's LICENSING_ADMIN_TOKEN"))
                    .build(),
            ),
        );
    }
}

/// The document as pretty JSON, as checked in.
pub fn json() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    /// The checked-in `openapi.json` is the generated document. After changing the API, run
    /// `UPDATE_OPENAPI=1 cargo test -p licensing-server --lib openapi` to regenerate it.
    #[test]
    fn the_checked_in_document_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../openapi.json");
        let generated = format!("{}\n", super::json());
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

    #[test]
    fn every_operation_documents_its_answers() {
        let doc: serde_json::Value = serde_json::from_str(&super::json()).unwrap();
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

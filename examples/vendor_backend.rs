//! A vendor's back end managing licenses:
//! `cargo run -p licensing-sdk --example vendor_backend` with `LICENSING_URL`,
//! `LICENSING_TEAM_ID` and `LICENSING_API_KEY` set.
//!
//! Creates a product and three licenses for it, lists every license of the product (walking the
//! pages), suspends one and shows the result. The last line, `LICENSE_KEY=…`, names an active
//! license (the CI feeds it to the `desktop_app` example).

use licensing_sdk::DevClient;
use licensing_sdk::core::api::requests::{
    LicenseCreate, LicenseListQuery, LicenseUpdate, Patch, ProductBody, RawMetadata,
};

fn env(name: &str) -> anyhow::Result<String> {
    std::env::var(name)
        .map_err(|_| anyhow::anyhow!("set {name} (see the top of examples/vendor_backend.rs)"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dev = DevClient::new(
        &env("LICENSING_URL")?,
        env("LICENSING_TEAM_ID")?.parse()?,
        &env("LICENSING_API_KEY")?,
    )?;
    let product = dev
        .create_product(&ProductBody {
            name: Patch::Value("Vendor Example App".into()),
            ..ProductBody::default()
        })
        .await?;
    println!("product {} ({})", product.name, product.id);

    for seat in 1..=3 {
        let created = dev
            .create_license(&LicenseCreate {
                expiration_type: Some("DURATION".into()),
                expiration_days: Some(365),
                hwid_limit: Patch::Value(3),
                product_ids: Some(vec![product.id.to_string()]),
                metadata: Some(vec![RawMetadata::new("seat", seat.to_string())]),
                ..LicenseCreate::default()
            })
            .await?;
        println!("created {}", created.license.license_key);
    }

    let mut query = LicenseListQuery::default();
    query.filter.product_ids = vec![product.id];
    let licenses = dev.all_licenses(&query).await?;
    println!("{} licenses for the product:", licenses.len());
    for license in &licenses {
        let expires = license
            .expiration_date
            .map_or("never".into(), |d| d.to_string());
        println!(
            "  {}  suspended={}  expires={expires}",
            license.license_key, license.suspended
        );
    }

    let (first, rest) = licenses
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("no licenses were listed"))?;
    let suspended = dev
        .update_license(
            first.id,
            &LicenseUpdate {
                suspended: Patch::Value(true),
                ..LicenseUpdate::default()
            },
        )
        .await?;
    println!(
        "suspended {} (suspended={})",
        suspended.license.license_key, suspended.license.suspended
    );
    let active = rest
        .first()
        .ok_or_else(|| anyhow::anyhow!("no active license left"))?;
    println!("LICENSE_KEY={}", active.license_key);
    Ok(())
}

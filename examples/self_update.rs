//! A Rust application that updates itself from the licensing server:
//! `cargo run -p licensing-sdk --example self_update` with `LICENSING_URL`, `LICENSING_TEAM_ID`,
//! `LICENSING_API_KEY`, `LICENSING_PUBLIC_KEY` and `LICENSING_SIGNING_KEY` set.
//!
//! First the vendor's side, as a back end does it once per release: a product whose artifacts
//! the server signs, release 1.1.0 with a Linux build, and a license. Then the application,
//! running 1.0.0: it asks for an update, downloads the build into a temporary directory (its
//! size, SHA-256 and minisign signature checked against the team's keys before it is kept), and
//! finds nothing newer once it runs 1.1.0.

use licensing_sdk::core::api::requests::{LicenseCreate, Patch, ProductBody, ReleaseData};
use licensing_sdk::core::model::{Arch, Platform};
use licensing_sdk::{ArtifactUpload, DevClient, LicenseClient, Upload};

fn env(name: &str) -> anyhow::Result<String> {
    std::env::var(name)
        .map_err(|_| anyhow::anyhow!("set {name} (see the top of examples/self_update.rs)"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = env("LICENSING_URL")?;
    let team = env("LICENSING_TEAM_ID")?.parse()?;

    // The vendor: a product whose updates the server signs, a release and its Linux build.
    let dev = DevClient::new(&url, team, &env("LICENSING_API_KEY")?)?;
    let product = dev
        .create_product(&ProductBody {
            name: Patch::Value("Self-updating App".into()),
            sign_updates: Patch::Value(true),
            ..ProductBody::default()
        })
        .await?;
    let release = dev
        .create_release(
            &ReleaseData {
                version: Some("1.1.0".into()),
                product_id: Some(product.id.to_string()),
                status: Some("PUBLISHED".into()),
                notes: Patch::Value("Faster start-up.".into()),
                ..ReleaseData::default()
            },
            None,
        )
        .await?;
    let build = b"#!/bin/sh\necho 'Self-updating App 1.1.0'\n".repeat(4096);
    let artifact = dev
        .upload_artifact(
            release.release.id,
            &ArtifactUpload::new(
                Platform::Linux,
                Arch::X86_64,
                Upload::from_bytes("self-updating-app-1.1.0.AppImage", build.clone()),
            ),
        )
        .await?;
    println!(
        "published {} {} with {} ({} bytes, signed by the server: {})",
        product.name,
        release.release.version,
        artifact.filename,
        artifact.size,
        artifact.server_signed
    );
    let license = dev
        .create_license(&LicenseCreate {
            expiration_type: Some("NEVER".into()),
            product_ids: Some(vec![product.id.to_string()]),
            ..LicenseCreate::default()
        })
        .await?
        .license;

    // The application, running 1.0.0, with the team's public keys compiled in.
    let client = LicenseClient::new(
        &url,
        team,
        &env("LICENSING_PUBLIC_KEY")?,
        &env("LICENSING_SIGNING_KEY")?,
    )?;
    let key = license.license_key;
    let update = client
        .check_for_update(&key, product.id, "1.0.0", Platform::Linux, Arch::X86_64)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no update offered to 1.0.0"))?;
    println!(
        "update available: {} ({})",
        update.version,
        update.notes.as_deref().unwrap_or("no notes")
    );
    let artifact = update
        .artifacts
        .first()
        .ok_or_else(|| anyhow::anyhow!("the update has no artifact for this platform"))?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join(&artifact.artifact.filename);
    client.download_update(&key, artifact, &path).await?;
    let downloaded = std::fs::read(&path)?;
    anyhow::ensure!(downloaded == build, "the download is not the build");
    println!(
        "downloaded {} ({} bytes): size, SHA-256 and signature verified",
        path.display(),
        downloaded.len()
    );

    // Once it runs 1.1.0, nothing is newer.
    let none = client
        .check_for_update(&key, product.id, "1.1.0", Platform::Linux, Arch::X86_64)
        .await?;
    anyhow::ensure!(none.is_none(), "1.1.0 was offered an update");
    println!("1.1.0 is up to date");
    Ok(())
}

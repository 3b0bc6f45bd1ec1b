//! The whole flow in one program: `cargo run -p licensing-sdk --example quickstart`.
//!
//! Starts a licensing server in-process on a temporary directory, then, printing each step:
//! creates a product, a customer and a license through the developer client; verifies and sends a
//! heartbeat as a desktop application would; uploads a release and downloads it through the
//! encrypted classloader.

use std::time::Duration;

use licensing_sdk::core::Timestamp;
use licensing_sdk::core::api::requests::{
    ClientBody, CustomerBody, LicenseCreate, Patch, ProductBody, ReleaseData,
};
use licensing_sdk::core::validate::HardwareId;
use licensing_sdk::{DevClient, DownloadRequest, LicenseClient, Upload, hwid};
use licensing_server::{Config, Server, open_store};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // A server on 127.0.0.1 with a free port and a temporary data directory.
    let dir = tempfile::tempdir()?;
    let store = open_store(dir.path())?;
    let team = licensing_server::teams::create_team(&store, "Quickstart", Timestamp::now()).await?;
    let server = Server::bind_with_store(Config::for_data_dir(dir.path()), store).await?;
    let base = format!("http://{}", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run(async {
        stopped.await.ok();
    }));
    println!("1. server listening on {base}, team {}", team.team_id);

    // The vendor's back end: a product, a customer, a license.
    let dev = DevClient::new(&base, team.team_id, &team.api_key)?;
    let product = dev
        .create_product(&ProductBody {
            name: Patch::Value("Quickstart App".into()),
            ..ProductBody::default()
        })
        .await?;
    println!("2. product {} ({})", product.name, product.id);
    let customer = dev
        .create_customer(&CustomerBody {
            email: Patch::Value("jane@example.com".into()),
            full_name: Patch::Value("Jane Doe".into()),
            ..CustomerBody::default()
        })
        .await?;
    println!("3. customer {}", customer.id);
    let license = dev
        .create_license(&LicenseCreate {
            expiration_type: Some("DURATION".into()),
            expiration_days: Some(30),
            hwid_limit: Patch::Value(2),
            product_ids: Some(vec![product.id.to_string()]),
            customer_ids: Some(vec![customer.id.to_string()]),
            ..LicenseCreate::default()
        })
        .await?;
    let key = license.license.license_key;
    let expires = license
        .license
        .expiration_date
        .map_or("never".into(), |d| d.to_string());
    println!("4. license {key}, expires {expires}");

    // The desktop application: verify at start-up, then a heartbeat.
    let keys = dev.public_keys().await?;
    let app = LicenseClient::new(
        &base,
        team.team_id,
        &keys.public_key_base64,
        &keys.signing_key,
    )?;
    let device: HardwareId = hwid::hardware_id("quickstart-app")?;
    let mut body = ClientBody::new(key);
    body.hardware_id = Some(device.clone());
    body.product_id = Some(product.id);
    let verified = app.verify(&body).await?;
    println!(
        "5. verify: {} (challenge response and X-Signature checked), {} customer(s), product {}",
        verified.result.details,
        verified.data.customers.len(),
        verified.data.products[0].name
    );
    let beat = app.heartbeat(&body).await?;
    println!("6. heartbeat: {}", beat.result.details);

    // A release with a file, downloaded through the classloader.
    let file: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let release = dev
        .create_release(
            &ReleaseData {
                version: Some("1.0.0".into()),
                product_id: Some(product.id.to_string()),
                status: Some("PUBLISHED".into()),
                set_as_latest: Patch::Value(true),
                ..ReleaseData::default()
            },
            Some(Upload::from_bytes("app.bin", file.clone())),
        )
        .await?;
    println!(
        "7. release {} uploaded ({} bytes)",
        release.release.version.as_str(),
        file.len()
    );
    let (info, bytes) = app
        .download_to_vec(&DownloadRequest::new(key, product.id, device))
        .await?;
    anyhow::ensure!(bytes == file, "the download differs from the upload");
    println!(
        "8. downloaded release {} ({} bytes, MD5 {}), decrypted and checked",
        info.version, info.size, info.checksum
    );

    stop.send(()).ok();
    tokio::time::timeout(Duration::from_secs(10), running).await???;
    println!("9. server stopped");
    Ok(())
}

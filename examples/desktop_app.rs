//! A desktop application's licensing, blocking, in a plain `fn main`:
//! `cargo run -p licensing-sdk --example desktop_app` with the environment below.
//!
//! - `LICENSING_URL`: the server, such as `http://127.0.0.1:3000`;
//! - `LICENSING_TEAM_ID`, `LICENSING_PUBLIC_KEY` (PEM or its base64), `LICENSING_SIGNING_KEY`:
//!   the team, as `GET {dev}/public-key` or `licensing-server team create` give them;
//! - `LICENSE_KEY`: the license to check;
//! - `APP_RUN_SECONDS` (optional, default 5): how long the "application" runs.
//!
//! It verifies at start-up (with offline grace: a verified answer cached in the temporary
//! directory is accepted for 3 days when the server cannot be reached), then runs with a
//! background heartbeat that reports every change of the license's state.

use std::sync::Arc;
use std::time::Duration;

use licensing_sdk::blocking::LicenseClient;
use licensing_sdk::core::LicenseKey;
use licensing_sdk::core::api::requests::ClientBody;
use licensing_sdk::{HeartbeatSchedule, LicenseState, OfflineCache, hwid};

fn env(name: &str) -> anyhow::Result<String> {
    std::env::var(name)
        .map_err(|_| anyhow::anyhow!("set {name} (see the top of examples/desktop_app.rs)"))
}

fn main() -> anyhow::Result<()> {
    let client = LicenseClient::new(
        &env("LICENSING_URL")?,
        env("LICENSING_TEAM_ID")?.parse()?,
        &env("LICENSING_PUBLIC_KEY")?,
        &env("LICENSING_SIGNING_KEY")?,
    )?;
    let mut body = ClientBody::new(LicenseKey::parse(&env("LICENSE_KEY")?)?);
    body.hardware_id = Some(hwid::hardware_id("desktop-app-example")?);

    let cache = OfflineCache::new(
        std::env::temp_dir().join("desktop-app-example-license.json"),
        Duration::from_secs(3 * 24 * 3600),
    );
    let verified = match client.verify_with_grace(&body, &cache) {
        Ok(verified) => verified,
        Err(e) => {
            eprintln!("This copy is not licensed: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "Licensed{} (expires: {}).",
        if verified.offline {
            " (offline grace)"
        } else {
            ""
        },
        verified
            .data
            .license
            .expiration_date
            .map_or("never".to_owned(), |d| d.to_string())
    );

    let heartbeat = client.spawn_heartbeat(
        body,
        HeartbeatSchedule {
            interval: Duration::from_secs(2),
            ..HeartbeatSchedule::default()
        },
        Some(Arc::new(|state: &LicenseState| {
            println!("license state: {state:?}");
        })),
    );
    let seconds: u64 = std::env::var("APP_RUN_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    for _ in 0..seconds {
        std::thread::sleep(Duration::from_secs(1));
        if matches!(
            heartbeat.state(),
            LicenseState::Suspended | LicenseState::Expired
        ) {
            eprintln!("The license was withdrawn: closing.");
            std::process::exit(3);
        }
    }
    println!("Application finished; last state {:?}.", heartbeat.state());
    Ok(())
}

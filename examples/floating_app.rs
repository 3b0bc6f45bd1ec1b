//! An application sold by concurrent seats ("five engineers at once, on any machines"):
//! `cargo run -p licensing-sdk --example floating_app` with the environment below.
//!
//! - `LICENSING_URL`, `LICENSING_TEAM_ID`, `LICENSING_PUBLIC_KEY`, `LICENSING_SIGNING_KEY`: the
//!   server and the team, as `licensing-server team create` prints them;
//! - `LICENSE_KEY`: a license with a `sessionLimit` (say 5);
//! - `APP_RUN_SECONDS` (optional, default 5): how long the "application" runs.
//!
//! At start it takes one of the license's seats (a floating session). When every seat is taken
//! it says so and exits with status 2: the sixth copy of a five-seat license does not start.
//! While it runs, the session heartbeats in the background; if the seat is lost (revoked from
//! the dashboard, say) it closes. On exit it gives the seat back at once. A copy that crashes
//! gives nothing back: its seat frees when the session's TTL passes without a heartbeat.

use std::time::Duration;

use licensing_sdk::blocking::LicenseClient;
use licensing_sdk::core::LicenseKey;
use licensing_sdk::core::api::ResultCode;
use licensing_sdk::core::api::requests::ClientBody;
use licensing_sdk::{Error, hwid};

fn env(name: &str) -> anyhow::Result<String> {
    std::env::var(name)
        .map_err(|_| anyhow::anyhow!("set {name} (see the top of examples/floating_app.rs)"))
}

fn main() -> anyhow::Result<()> {
    let client = LicenseClient::new(
        &env("LICENSING_URL")?,
        env("LICENSING_TEAM_ID")?.parse()?,
        &env("LICENSING_PUBLIC_KEY")?,
        &env("LICENSING_SIGNING_KEY")?,
    )?;
    let mut body = ClientBody::new(LicenseKey::parse(&env("LICENSE_KEY")?)?);
    // Several copies on one machine each take a seat: the limit counts running copies.
    body.hardware_id = Some(hwid::hardware_id("floating-app-example")?);

    let session = match client.start_session(&body, None) {
        Ok(session) => session,
        Err(
            e @ Error::Api {
                code: ResultCode::SessionLimitReached,
                ..
            },
        ) => {
            eprintln!(
                "Every seat of this license is in use: close another copy and try again. ({e})"
            );
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("This copy is not licensed: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "Seat taken (session {}, heartbeat every {} s).",
        session.id(),
        session.started().ttl / 3
    );

    let seconds: u64 = std::env::var("APP_RUN_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    for _ in 0..seconds * 10 {
        std::thread::sleep(Duration::from_millis(100));
        if !session.state().is_held() {
            eprintln!("The seat was lost ({:?}): closing.", session.state());
            std::process::exit(3);
        }
    }
    // Giving the seat back; dropping the session would too.
    session.end()?;
    println!("Seat given back.");
    Ok(())
}

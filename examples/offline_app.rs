//! An application that runs offline (on an air-gapped machine, say) after one checkout:
//! `cargo run -p licensing-sdk --example offline_app` with the environment below.
//!
//! - `LICENSING_URL`, `LICENSING_TEAM_ID`, `LICENSING_PUBLIC_KEY`, `LICENSING_SIGNING_KEY`: the
//!   server and the team, as `licensing-server team create` prints them;
//! - `LICENSE_KEY`: the license;
//! - `APP_DATA_DIR` (optional): where the license file and the clock file live (default: a
//!   directory in the temporary directory).
//!
//! At start it checks the stored license file, with no network at all: the signature (with the
//! team's signing key, chosen by the file's key id), the decryption with the license key and
//! this machine's hardware identifier, the file's expiry, the license's own expiration, and
//! that the clock was not set back. Only when there is no usable file does it check the license
//! out from the server (once; the file is then valid for 30 days). Run it once with the server
//! up, stop the server, and run it again: it still starts.

use licensing_sdk::blocking::LicenseClient;
use licensing_sdk::core::LicenseKey;
use licensing_sdk::core::api::requests::ClientBody;
use licensing_sdk::{Clock, FileError, LicenseFile, hwid};

fn env(name: &str) -> anyhow::Result<String> {
    std::env::var(name)
        .map_err(|_| anyhow::anyhow!("set {name} (see the top of examples/offline_app.rs)"))
}

/// How long a checked-out file lets the application run without the server.
const OFFLINE_DAYS: u32 = 30;

fn main() -> anyhow::Result<()> {
    let dir = std::env::var_os("APP_DATA_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("offline-app-example"));
    let file_path = dir.join("license.lic");
    let clock = Clock::new(dir.join("clock"));
    let license_key = env("LICENSE_KEY")?;
    let machine = hwid::hardware_id("offline-app-example")?;
    // The client holds the team's keys; it reaches the network only for a checkout.
    let client = LicenseClient::new(
        &env("LICENSING_URL")?,
        env("LICENSING_TEAM_ID")?.parse()?,
        &env("LICENSING_PUBLIC_KEY")?,
        &env("LICENSING_SIGNING_KEY")?,
    )?;
    let keys = client.inner().public_keys();

    let stored = LicenseFile::load(&file_path)
        .and_then(|file| file.verify(keys, &license_key, Some(&machine), &clock));
    let payload = match stored {
        Ok(payload) => {
            println!("Licensed offline, from {}.", file_path.display());
            payload
        }
        Err(
            e @ (FileError::ClockBackwards { .. }
            | FileError::BadSignature
            | FileError::UntrustedKey(_)),
        ) => {
            // Not something a new checkout should paper over.
            eprintln!("This copy is not licensed: {e}");
            std::process::exit(2);
        }
        Err(e) => {
            println!("No usable license file ({e}): checking the license out from the server.");
            let mut body = ClientBody::new(LicenseKey::parse(&license_key)?);
            body.hardware_id = Some(machine.clone());
            if let Err(e) = client.checkout(&body, Some(OFFLINE_DAYS * 24 * 3600), &file_path) {
                eprintln!("This copy is not licensed: {e}");
                std::process::exit(2);
            }
            LicenseFile::load(&file_path)?.verify(keys, &license_key, Some(&machine), &clock)?
        }
    };
    println!(
        "License {} runs until {} (entitlements: {}).",
        payload.data.license.key,
        payload
            .meta
            .expiry
            .map_or("the license ends".to_owned(), |at| at.to_string()),
        if payload.data.license.terms.entitlements.is_empty() {
            "none".to_owned()
        } else {
            payload.data.license.terms.entitlements.join(", ")
        }
    );
    Ok(())
}

//! `licensing-server`: the reference server (warp + sled). It is being built in the issue that
//! follows the core; until then the binary only says so.

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!(
        "licensing-server {}: the HTTP server is not built yet; licensing-core is available as a library",
        env!("CARGO_PKG_VERSION")
    );
    ExitCode::from(2)
}

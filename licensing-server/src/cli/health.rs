//! `licensing-server healthcheck`: a container's `HEALTHCHECK` (the image has no shell or curl).

use anyhow::Context as _;

/// Succeeds when the server listening on `listen` (an unspecified address is reached on
/// loopback) answers `GET /healthz` with 200 within `timeout_secs`.
pub(crate) async fn check(listen: &str, timeout_secs: u64) -> anyhow::Result<()> {
    let url = super::backup::url_of_listen(listen)?;
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(std::time::Duration::from_secs(timeout_secs))
        .build()?;
    let response = client
        .get(format!("{url}/healthz"))
        .send()
        .await
        .with_context(|| format!("the server at {url} did not answer"))?;
    let status = response.status();
    anyhow::ensure!(
        status.is_success(),
        "the server at {url} answered /healthz with {status}"
    );
    Ok(())
}

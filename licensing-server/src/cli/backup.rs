//! `licensing-server backup`: saves the archive a running server streams from
//! `GET /api/v1/admin/backup` to a file, complete or not at all.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use tokio::io::AsyncWriteExt as _;

/// The server's default address, as the server's own `--listen` default.
pub(crate) const DEFAULT_URL: &str = "http://127.0.0.1:3000";
/// The prefix of the files `--to-dir` creates.
const PREFIX: &str = "licensing-backup-";

/// The server's base URL and admin token: from the flags (or their environment variables),
/// else from the server's config file, else the default address.
pub(crate) fn server_of(
    url: Option<String>,
    token: Option<String>,
    config: Option<&Path>,
) -> anyhow::Result<(String, String)> {
    let file = config.map(config_table).transpose()?;
    let setting = |key: &str| {
        file.as_ref()
            .and_then(|t| t.get(key))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let url = match url {
        Some(url) => url,
        None => match setting("listen") {
            Some(listen) => url_of_listen(&listen)?,
            None => DEFAULT_URL.to_owned(),
        },
    };
    let token = token.or_else(|| setting("admin-token")).context(
        "an online backup goes through the admin API: give --admin-token (LICENSING_ADMIN_TOKEN) or --config with the server's admin-token",
    )?;
    Ok((url.trim_end_matches('/').to_owned(), token))
}

/// The server's config file, as a table.
pub(crate) fn config_table(path: &Path) -> anyhow::Result<toml::Table> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the config file {}", path.display()))?;
    text.parse()
        .with_context(|| format!("{} is not TOML", path.display()))
}

/// The URL to reach a server listening on `listen` from this host: an unspecified address
/// (`0.0.0.0`, `[::]`) is reached on loopback.
pub(crate) fn url_of_listen(listen: &str) -> anyhow::Result<String> {
    let mut addr: SocketAddr = listen
        .parse()
        .with_context(|| format!("the config file's listen = {listen:?} is not an address"))?;
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    Ok(format!("http://{addr}"))
}

/// Downloads the backup into `to` (or a new file in `to_dir`): written to a `.part` file,
/// checked to end with the archive's trailer, fsynced, then given its name; with `keep`, the
/// oldest backups in `to_dir` beyond that many are removed.
pub(crate) async fn save(
    url: &str,
    token: &str,
    to: Option<&Path>,
    to_dir: Option<&Path>,
    keep: Option<usize>,
) -> anyhow::Result<()> {
    let target = match (to, to_dir) {
        (Some(to), _) => to.to_path_buf(),
        (None, Some(dir)) => {
            let stamp: String = licensing_core::Timestamp::now()
                .to_string()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == 'T' || *c == '.')
                .collect();
            dir.join(format!("{PREFIX}{stamp}.jsonl"))
        }
        (None, None) => anyhow::bail!("give --to FILE or --to-dir DIR"),
    };
    if target.exists() {
        anyhow::bail!(
            "{} exists already; backups never overwrite",
            target.display()
        );
    }
    let mut part = target.clone().into_os_string();
    part.push(".part");
    let part = PathBuf::from(part);
    let client = reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .build()?;
    let mut response = client
        .get(format!("{url}/api/v1/admin/backup"))
        .bearer_auth(token)
        .send()
        .await
        .with_context(|| format!("reaching the server at {url}"))?;
    if !response.status().is_success() {
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        anyhow::bail!("the server answered {status}: {body}");
    }
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&part)
        .await
        .with_context(|| format!("creating {}", part.display()))?;
    let written = async {
        let mut bytes = 0u64;
        let mut tail: Vec<u8> = Vec::new();
        while let Some(chunk) = response.chunk().await.context("receiving the backup")? {
            file.write_all(&chunk).await?;
            bytes += chunk.len() as u64;
            tail.extend_from_slice(&chunk);
            if tail.len() > 4096 {
                tail.drain(..tail.len() - 4096);
            }
        }
        let last = tail
            .strip_suffix(b"\n")
            .unwrap_or(&tail)
            .rsplit(|b| *b == b'\n')
            .next()
            .unwrap_or_default();
        if !last.starts_with(br#"{"kind":"trailer""#) {
            anyhow::bail!(
                "the backup ended before its trailer: the server's export failed (see its log)"
            );
        }
        file.sync_all().await?;
        anyhow::Ok(bytes)
    }
    .await;
    let bytes = match written {
        Ok(bytes) => bytes,
        Err(e) => {
            drop(file);
            tokio::fs::remove_file(&part).await.ok();
            return Err(e);
        }
    };
    drop(file);
    // A hard link, unlike a rename, never replaces a file that appeared meanwhile.
    std::fs::hard_link(&part, &target)
        .with_context(|| format!("naming the backup {}", target.display()))?;
    std::fs::remove_file(&part)?;
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    println!("{}", serde_json::json!({"file": target, "bytes": bytes}));
    if let (Some(dir), Some(keep)) = (to_dir, keep) {
        prune(dir, keep)?;
    }
    Ok(())
}

/// Removes the oldest `licensing-backup-*.jsonl` files of `dir` beyond the newest `keep`.
fn prune(dir: &Path, keep: usize) -> anyhow::Result<()> {
    let mut backups: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(PREFIX) && n.ends_with(".jsonl"))
        })
        .collect();
    // The names hold the UTC time, so name order is age order.
    backups.sort();
    let excess = backups.len().saturating_sub(keep.max(1));
    for old in &backups[..excess] {
        std::fs::remove_file(old).with_context(|| format!("removing {}", old.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unspecified_listen_address_is_reached_on_loopback() {
        assert_eq!(
            super::url_of_listen("0.0.0.0:3000").expect("url"),
            "http://127.0.0.1:3000"
        );
        assert_eq!(
            super::url_of_listen("[::]:8080").expect("url"),
            "http://[::1]:8080"
        );
        assert_eq!(
            super::url_of_listen("192.0.2.1:80").expect("url"),
            "http://192.0.2.1:80"
        );
    }
}

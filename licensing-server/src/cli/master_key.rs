//! `master-key generate` and `master-key rotate`: the key that seals teams' private keys at rest.

use anyhow::Context as _;
use licensing_core::crypto::MasterKey;
use licensing_server::compact_store;
use licensing_server::runtime::keyring::Keyring;

use super::open_for_command;

pub(crate) fn master_key_generate(out: &std::path::Path) -> anyhow::Result<()> {
    let key = MasterKey::generate();
    licensing_server::datadir::write_private_file(out, key.to_file().as_bytes())
        .with_context(|| format!("writing {} (it must not exist yet)", out.display()))?;
    println!(
        "Wrote master key {} to {} (readable by this user only). Keep a copy apart from the data directory: without it, sealed keys cannot be opened.",
        key.id(),
        out.display()
    );
    Ok(())
}

pub(crate) async fn master_key_rotate(
    old: &std::path::Path,
    new: &std::path::Path,
    data_dir: &std::path::Path,
    database_url: Option<&str>,
) -> anyhow::Result<()> {
    let old = Keyring::load(Some(old)).map_err(anyhow::Error::msg)?;
    let new = Keyring::load(Some(new)).map_err(anyhow::Error::msg)?;
    let store = open_for_command(data_dir, database_url).await?;
    let teams = old.rotate(&store, &new).await.map_err(anyhow::Error::msg)?;
    store.flush().await?;
    // The rows were rewritten in place: their versions under the old key stay in the store's
    // files until it rewrites them, in place or, for the embedded store, once closed.
    if !store.rewrite_secrets_in_place().await? {
        drop(store);
        compact_store(data_dir)?;
        licensing_server::store::remove_migration_copies(data_dir)?;
    }
    println!(
        "Re-sealed the private keys of {teams} team(s) from master key {} under {}; nothing sealed under the old key is left in the store. Start the server with the new key.",
        old.master_id().unwrap_or("-"),
        new.master_id().unwrap_or("-")
    );
    Ok(())
}

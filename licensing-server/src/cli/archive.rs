//! `export`, `import` (`restore`) and `check`: the whole store as an archive, back, and checked.

use anyhow::Context as _;

use crate::StoreArgs;

pub(crate) async fn export(out: &std::path::Path, store: &StoreArgs) -> anyhow::Result<()> {
    let opened = store.open().await?;
    let files = licensing_server::file_store_for(&opened, &store.data_dir)?;
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(out)
        .await
        .with_context(|| format!("creating {} (it must not exist yet)", out.display()))?;
    let counts = licensing_server::archive::export(&opened, &files, &mut file).await?;
    file.sync_all().await?;
    println!("{}", serde_json::to_string(&counts)?);
    Ok(())
}

pub(crate) async fn import(input: &std::path::Path, store: &StoreArgs) -> anyhow::Result<()> {
    let opened = store.open().await?;
    let files = licensing_server::file_store_for(&opened, &store.data_dir)?;
    let file =
        std::fs::File::open(input).with_context(|| format!("opening {}", input.display()))?;
    let counts =
        licensing_server::archive::import(&opened, &files, std::io::BufReader::new(file)).await?;
    opened.flush().await?;
    println!("{}", serde_json::to_string(&counts)?);
    Ok(())
}

pub(crate) async fn check(store: &StoreArgs) -> anyhow::Result<()> {
    let opened = store.open().await?;
    let files = licensing_server::file_store_for(&opened, &store.data_dir)?;
    let report = licensing_server::check::check(&opened, &files, &store.data_dir).await?;
    let read: Vec<String> = report
        .checked
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    println!(
        "read: {}",
        if read.is_empty() {
            "nothing".to_owned()
        } else {
            read.join(", ")
        }
    );
    for problem in &report.problems {
        println!("problem: {problem}");
    }
    if report.problems.is_empty() {
        println!("the store is sound");
        Ok(())
    } else {
        anyhow::bail!(
            "{} problem(s) found; restore the latest backup (`licensing-server restore`) or export what is readable",
            report.problems.len()
        )
    }
}

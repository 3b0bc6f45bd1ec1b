//! Release files in PostgreSQL: table `release_files`, a row per 256 KiB chunk, so that every
//! instance serves every file. A file is inserted in one transaction and read a chunk at a time.

use std::path::Path;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::{FutureExt as _, StreamExt as _};

use super::PgStore;
use crate::store::shared::{Blobs, Chunks};

/// Bytes per stored chunk, and the most a download holds of a file at once.
const CHUNK: usize = 256 * 1024;

impl Blobs for PgStore {
    fn put<'a>(&'a self, key: &'a str, path: &'a Path) -> BoxFuture<'a, std::io::Result<()>> {
        store_chunks(self.pool(), key, path).boxed()
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, std::io::Result<Option<(u64, Chunks)>>> {
        async move {
            let (chunks, len): (i64, Option<i64>) = sqlx::query_as(
                "SELECT count(*), sum(length(data))::bigint FROM release_files WHERE key = $1",
            )
            .bind(key)
            .fetch_one(self.pool())
            .await
            .map_err(std::io::Error::other)?;
            if chunks == 0 {
                return Ok(None);
            }
            let len = u64::try_from(len.unwrap_or(0)).unwrap_or(0);
            let stream = read_chunks(self.pool().clone(), key.to_owned(), chunks).boxed();
            Ok(Some((len, stream)))
        }
        .boxed()
    }

    fn keys(&self) -> BoxFuture<'_, std::io::Result<Vec<String>>> {
        async move {
            sqlx::query_scalar("SELECT DISTINCT key FROM release_files")
                .fetch_all(self.pool())
                .await
                .map_err(std::io::Error::other)
        }
        .boxed()
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, std::io::Result<()>> {
        async move {
            sqlx::query("DELETE FROM release_files WHERE key = $1")
                .bind(key)
                .execute(self.pool())
                .await
                .map_err(std::io::Error::other)?;
            Ok(())
        }
        .boxed()
    }
}

/// Inserts a file's chunks in one transaction.
async fn store_chunks(pool: &sqlx::PgPool, key: &str, path: &Path) -> std::io::Result<()> {
    use tokio::io::AsyncReadExt as _;
    let db = std::io::Error::other;
    let mut file = tokio::fs::File::open(path).await?;
    let mut tx = pool.begin().await.map_err(db)?;
    let mut buf = vec![0u8; CHUNK];
    let mut chunk: i32 = 0;
    loop {
        let mut filled = 0;
        while filled < buf.len() {
            let n = file.read(&mut buf[filled..]).await?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        if filled == 0 && chunk > 0 {
            break;
        }
        sqlx::query("INSERT INTO release_files (key, chunk, data) VALUES ($1, $2, $3)")
            .bind(key)
            .bind(chunk)
            .bind(&buf[..filled])
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        chunk += 1;
        if filled < buf.len() {
            break;
        }
    }
    tx.commit().await.map_err(db)?;
    Ok(())
}

/// A stored file's chunks, read one query at a time.
fn read_chunks(
    pool: sqlx::PgPool,
    key: String,
    chunks: i64,
) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> + Send {
    futures_util::stream::try_unfold(0i64, move |next| {
        let (pool, key) = (pool.clone(), key.clone());
        async move {
            if next >= chunks {
                return Ok(None);
            }
            let data: Option<Vec<u8>> =
                sqlx::query_scalar("SELECT data FROM release_files WHERE key = $1 AND chunk = $2")
                    .bind(&key)
                    .bind(i32::try_from(next).unwrap_or(i32::MAX))
                    .fetch_optional(&pool)
                    .await
                    .map_err(std::io::Error::other)?;
            match data {
                Some(data) => Ok(Some((Bytes::from(data), next + 1))),
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "a release file lost a chunk while it was read",
                )),
            }
        }
    })
}

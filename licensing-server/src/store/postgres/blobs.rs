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

    fn get<'a>(
        &'a self,
        key: &'a str,
        start: u64,
    ) -> BoxFuture<'a, std::io::Result<Option<(u64, Chunks)>>> {
        async move {
            let db = std::io::Error::other;
            let (chunks, len): (i64, Option<i64>) = sqlx::query_as(
                "SELECT count(*), sum(length(data))::bigint FROM release_files WHERE key = $1",
            )
            .bind(key)
            .fetch_one(self.pool())
            .await
            .map_err(db)?;
            if chunks == 0 {
                return Ok(None);
            }
            let len = u64::try_from(len.unwrap_or(0)).unwrap_or(0);
            if start >= len {
                return Ok(Some((len, futures_util::stream::empty().boxed())));
            }
            // The chunk that holds byte `start`, and where in it that byte lies. (The sizes
            // are read from each chunk's header, not its bytes.)
            let (first, skip): (i32, i64) = if start == 0 {
                (0, 0)
            } else {
                sqlx::query_as(
                    "SELECT chunk, $2 - (below - size) FROM ( \
                         SELECT chunk, length(data)::int8 AS size, \
                                (sum(length(data)) OVER (ORDER BY chunk))::int8 AS below \
                         FROM release_files WHERE key = $1) AS c \
                     WHERE below > $2 ORDER BY chunk LIMIT 1",
                )
                .bind(key)
                .bind(i64::try_from(start).unwrap_or(i64::MAX))
                .fetch_one(self.pool())
                .await
                .map_err(db)?
            };
            let stream = read_chunks(
                self.pool().clone(),
                key.to_owned(),
                i64::from(first),
                chunks,
                usize::try_from(skip).unwrap_or(0),
            )
            .boxed();
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

/// A stored file's chunks from `first` on, read one query at a time, the first `skip` bytes of
/// the first left out.
fn read_chunks(
    pool: sqlx::PgPool,
    key: String,
    first: i64,
    chunks: i64,
    skip: usize,
) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> + Send {
    futures_util::stream::try_unfold(first, move |next| {
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
                Some(data) => {
                    let mut data = Bytes::from(data);
                    if next == first {
                        data = data.slice(skip.min(data.len())..);
                    }
                    Ok(Some((data, next + 1)))
                }
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "a release file lost a chunk while it was read",
                )),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use futures_util::TryStreamExt as _;

    use super::*;

    /// A stored file is read whole or from any byte on, without the chunks before that byte.
    #[test]
    fn files_are_read_from_any_byte() {
        crate::testing::postgres::on_fresh_database(|url| async move {
            let store = PgStore::connect(&url, 4).await.unwrap();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("file");
            let bytes: Vec<u8> = (0..(2 * CHUNK + 1000)).map(|i| (i % 251) as u8).collect();
            std::fs::write(&path, &bytes).unwrap();
            store.put("k", &path).await.unwrap();

            let from = |start: u64| {
                let store = &store;
                async move {
                    let (len, chunks) = store.get("k", start).await.unwrap().unwrap();
                    let pieces: Vec<Bytes> = chunks.try_collect().await.unwrap();
                    (len, pieces.len(), pieces.concat())
                }
            };
            let len = bytes.len() as u64;
            let chunk = CHUNK as u64;
            assert_eq!(from(0).await, (len, 3, bytes.clone()));
            assert_eq!(from(1).await, (len, 3, bytes[1..].to_vec()));
            assert_eq!(from(chunk - 1).await, (len, 3, bytes[CHUNK - 1..].to_vec()));
            assert_eq!(from(chunk).await, (len, 2, bytes[CHUNK..].to_vec()));
            let last = 2 * chunk + 999;
            assert_eq!(
                from(last).await,
                (len, 1, bytes[2 * CHUNK + 999..].to_vec())
            );
            assert_eq!(from(len).await, (len, 0, Vec::new()));
            assert_eq!(from(len + 7).await, (len, 0, Vec::new()));
            assert!(store.get("other", 0).await.unwrap().is_none());
        });
    }
}

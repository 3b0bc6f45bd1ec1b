//! The reference licensing server: warp over the embedded sled store, or PostgreSQL for several
//! instances on one database.
//!
//! | module | what it holds |
//! |---|---|
//! | [`server`] | [`Server`]: bind (port 0 allowed), report the address, run until shutdown |
//! | [`config`] | [`Config`]: every setting, as flag and `LICENSING_*` variable |
//! | [`client_addr`] | the client address behind trusted proxies (`X-Forwarded-For`, right to left) |
//! | [`store`] | [`store::SledStore`] and [`store::postgres::PgStore`], implementing `licensing-core`'s storage traits, and [`store::AnyStore`], the one a server runs on |
//! | [`files`] | release files, on disk or in PostgreSQL |
//! | `routes` | the route tree; thin handlers over core and the store |
//! | `http` | the envelope on the wire, body limits, authentication, rejection handling |
//! | [`runtime`] | what a running server keeps besides its store: caches, limiters, write-behind recorders, the keyring, outbound clients |
//! | `app` | the operations, whoever performs them (re-exported: [`operator`], [`teams`], [`staff`]) |
//! | `workers` | the background jobs a running server starts and stops as one |
//!
//! A server you can start from a test:
//!
//! ```no_run
//! # async fn demo() -> Result<(), licensing_server::ServerError> {
//! let dir = std::env::temp_dir().join("licensing-demo");
//! let server = licensing_server::Server::bind(licensing_server::Config::for_data_dir(dir)).await?;
//! println!("listening on {}", server.local_addr());
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let running = tokio::spawn(server.run(async { stopped.await.ok(); }));
//! stop.send(()).ok();
//! running.await.expect("server task")?;
//! # Ok(()) }
//! ```

mod app;
pub mod archive;
pub mod check;
pub mod client_addr;
pub mod config;
pub mod config_file;
pub mod connections;
pub mod dashboard;
pub mod datadir;
pub mod files;
mod http;
mod i18n;
mod jar;
pub mod metrics;
pub mod openapi;
mod portal;
mod routes;
pub mod runtime;
pub mod server;
mod state;
pub mod store;
#[doc(hidden)]
pub mod testing;
mod workers;

pub use app::{journal, operator, staff, teams, two_step};
pub use config::{Config, FirstStartCredentials, LogFormat};
pub use connections::ConnectionLimits;
pub use routes::openapi_json;
pub use server::{Server, ServerError, file_store_for};
pub use store::{compact_store, open_configured_store, open_store, open_store_with_cache};

/// mimalloc instead of the C library's allocator, for every program built on this crate (the
/// server, its tests and benchmarks): sled's reads build and drop a page's nodes on every
/// lookup, and glibc's `free` (`malloc_consolidate`, `unlink_chunk`) was about a sixth of a
/// heartbeat's time at full size; see benches/README.md.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

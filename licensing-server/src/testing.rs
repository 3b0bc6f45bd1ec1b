//! Helpers for the project's own tests and benchmarks: a throw-away PostgreSQL.
//!
//! [`postgres::database`] hands out a fresh, empty database per call, on
//! `LICENSING_TEST_DATABASE_URL` when it is set, otherwise on a cluster this process starts
//! once from the installed PostgreSQL binaries (`initdb` into a temporary directory, on a free
//! loopback port; as an unprivileged user when run as root, since PostgreSQL refuses root). A
//! watchdog process stops the cluster and removes its directory when this process ends. Without
//! PostgreSQL it prints a notice and returns `None`, except under `CI=true`, where it panics.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

pub mod postgres {
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::sync::OnceLock;
    use std::time::{Duration, Instant};

    /// A server the tests may create databases on.
    #[derive(Debug)]
    struct Server {
        /// URL of its maintenance database (`postgres`).
        admin_url: String,
    }

    static SERVER: OnceLock<Option<Server>> = OnceLock::new();
    static DURABLE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    /// Makes the cluster this process starts (if it has not started yet) flush to disk like a
    /// production server (benchmarks); tests run it without fsync.
    pub fn durable() {
        DURABLE.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a PostgreSQL server can be had; prints a notice once when not (and panics under
    /// `CI=true`).
    pub fn available() -> bool {
        server().is_some()
    }

    fn server() -> Option<&'static Server> {
        SERVER
            .get_or_init(|| match start() {
                Ok(server) => Some(server),
                Err(why) => {
                    if std::env::var("CI").is_ok_and(|v| v == "true") {
                        panic!("PostgreSQL is required under CI=true: {why}");
                    }
                    eprintln!("notice: PostgreSQL tests skipped: {why}");
                    None
                }
            })
            .as_ref()
    }

    /// Runs `test` with a fresh, empty database's URL, on a runtime of its own (two workers;
    /// the store's pool lives on it). Nothing runs when PostgreSQL cannot be had (a notice, or
    /// a panic under `CI=true`).
    pub fn on_fresh_database<F, Fut>(test: F)
    where
        F: FnOnce(String) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        if !available() {
            return;
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            let url = database().await.expect("a test database");
            test(url).await;
        });
    }

    /// A fresh, empty database: its URL. `None` when PostgreSQL cannot be had.
    pub async fn database() -> Option<String> {
        let server = server()?;
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        let admin = server.admin_url.clone();
        // One plain connection, made and dropped here, so that no pool outlives a runtime.
        let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&admin)
            .await
            .expect("connect to the test PostgreSQL");
        sqlx::Executor::execute(
            &mut conn,
            sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")),
        )
        .await
        .expect("create a test database");
        let _ = sqlx::Connection::close(conn).await;
        Some(with_database(&admin, &name))
    }

    /// `url` with its database replaced by `name`.
    fn with_database(url: &str, name: &str) -> String {
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (url, None),
        };
        let scheme_end = base.find("://").map_or(0, |i| i + 3);
        let path_start = base[scheme_end..]
            .find('/')
            .map_or(base.len(), |i| scheme_end + i);
        let mut out = format!("{}/{name}", &base[..path_start]);
        if let Some(q) = query {
            out.push('?');
            out.push_str(q);
        }
        out
    }

    fn start() -> Result<Server, String> {
        if let Ok(url) = std::env::var("LICENSING_TEST_DATABASE_URL")
            && !url.is_empty()
        {
            return Ok(Server { admin_url: url });
        }
        let bin = find_binaries().ok_or(
            "no PostgreSQL binaries found (install Debian's `postgresql` package, or set \
             LICENSING_TEST_DATABASE_URL)",
        )?;
        let dir = std::env::temp_dir().join(format!(
            "licensing-pg-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir(&dir).map_err(|e| format!("temporary directory: {e}"))?;
        let run_as = if rustix::process::geteuid().is_root() {
            Some(
                unprivileged_user()
                    .ok_or("running as root and found no `postgres` or `nobody` user")?,
            )
        } else {
            None
        };
        let data = dir.join("data");
        std::fs::create_dir(&data).map_err(|e| e.to_string())?;
        if let Some((uid, gid)) = run_as {
            for path in [&dir, &data] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid))
                    .map_err(|e| format!("chown {}: {e}", path.display()))?;
            }
        }
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .args(["-D"])
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        as_user(&mut initdb, run_as);
        let out = initdb.output().map_err(|e| format!("initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let port = free_port()?;
        let mut postgres = Command::new(bin.join("postgres"));
        postgres
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", "unix_socket_directories="])
            .args(["-c", "max_connections=300"])
            .args(if DURABLE.load(std::sync::atomic::Ordering::Relaxed) {
                ["-c", "shared_buffers=256MB", "-c", "max_wal_size=4GB"]
            } else {
                // Throw-away data: no need to survive a power cut.
                ["-c", "fsync=off", "-c", "full_page_writes=off"]
            })
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(dir.join("log")).map_err(|e| e.to_string())?,
            ));
        as_user(&mut postgres, run_as);
        let child = postgres.spawn().map_err(|e| format!("postgres: {e}"))?;
        watchdog(child.id(), &dir)?;
        // The child is the watchdog's to stop; dropping the handle does not kill it.
        drop(child);
        let admin_url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
        wait_ready(port, &dir)?;
        Ok(Server { admin_url })
    }

    fn as_user(cmd: &mut Command, user: Option<(u32, u32)>) {
        use std::os::unix::process::CommandExt as _;
        if let Some((uid, gid)) = user {
            cmd.uid(uid).gid(gid);
        }
    }

    /// Waits until the server accepts connections (10 s).
    fn wait_ready(port: u16, dir: &Path) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                // Accepting TCP is not yet accepting logins; give start-up a moment.
                std::thread::sleep(Duration::from_millis(300));
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "PostgreSQL did not start: {}",
            std::fs::read_to_string(dir.join("log")).unwrap_or_default()
        ))
    }

    /// A process that stops the cluster and removes its directory once this process ends.
    fn watchdog(postgres: u32, dir: &Path) -> Result<(), String> {
        let me = std::process::id();
        let script = format!(
            "while kill -0 {me} 2>/dev/null; do sleep 0.5; done; \
             kill -INT {postgres} 2>/dev/null; \
             for i in $(seq 1 40); do kill -0 {postgres} 2>/dev/null || break; sleep 0.25; done; \
             kill -KILL {postgres} 2>/dev/null; rm -rf '{}'",
            dir.display()
        );
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(drop)
            .map_err(|e| format!("watchdog: {e}"))
    }

    fn free_port() -> Result<u16, String> {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| e.to_string())
    }

    /// The directory of `initdb` and `postgres`: Debian's newest `/usr/lib/postgresql/N/bin`,
    /// or the `PATH`.
    fn find_binaries() -> Option<PathBuf> {
        let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let version = e.file_name().to_str()?.parse::<u32>().ok()?;
                let bin = e.path().join("bin");
                bin.join("initdb").exists().then_some((version, bin))
            })
            .collect();
        versions.sort();
        if let Some((_, bin)) = versions.pop() {
            return Some(bin);
        }
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .find(|p| p.join("initdb").exists() && p.join("postgres").exists())
        })
    }

    /// The uid and gid of `postgres`, else `nobody`, from `/etc/passwd`.
    fn unprivileged_user() -> Option<(u32, u32)> {
        let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
        let find = |name: &str| {
            passwd.lines().find_map(|line| {
                let mut fields = line.split(':');
                if fields.next()? != name {
                    return None;
                }
                let uid = fields.nth(1)?.parse().ok()?;
                let gid = fields.next()?.parse().ok()?;
                Some((uid, gid))
            })
        };
        find("postgres").or_else(|| find("nobody"))
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn database_urls_swap_the_database() {
            assert_eq!(
                super::with_database("postgres://u@127.0.0.1:5/postgres?sslmode=disable", "t_1"),
                "postgres://u@127.0.0.1:5/t_1?sslmode=disable"
            );
            assert_eq!(
                super::with_database("postgres://u@h:5", "t_1"),
                "postgres://u@h:5/t_1"
            );
        }
    }
}

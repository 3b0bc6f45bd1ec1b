//! Integration tests: the real server on 127.0.0.1:0 with a temporary data directory, over HTTP.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod abuse;
mod account;
mod admin;
mod audit;
mod browser;
mod chat;
mod classloader;
mod client;
mod console;
mod customers;
mod dashboard;
mod devices;
mod entitlements;
mod errors;
mod ext;
mod forwarded;
mod fuzz;
mod gate;
mod headers;
mod helpers;
mod history;
mod idempotency;
mod instances;
mod isolation;
mod license_cache;
mod license_files;
mod licenses;
mod mail;
mod openapi;
mod payments;
mod policies;
mod portal;
mod ratelimit;
mod records;
mod releases;
mod restart;
mod sessions;
mod strict;
mod team;
mod updates;
mod usage;
mod webhooks;

/// The PostgreSQL suite (`tests/api_postgres.rs`) builds every module this one does.
#[test]
fn the_postgres_suite_has_every_module() {
    let modules = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|line| line.strip_prefix("mod "))
            .map(|name| name.trim_end_matches(';').to_owned())
            .collect()
    };
    let here = modules(include_str!("main.rs"));
    assert!(here.len() > 40);
    assert_eq!(here, modules(include_str!("../api_postgres.rs")));
}

//! The HTTP tests of `tests/api` again, on PostgreSQL: a throw-away cluster per test (see
//! `testing::postgres`). The same files, built as a second test target; its name tells the
//! helpers which store to start (`helpers::on_postgres`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

#[path = "api/abuse.rs"]
mod abuse;
#[path = "api/account.rs"]
mod account;
#[path = "api/admin.rs"]
mod admin;
#[path = "api/audit.rs"]
mod audit;
#[path = "api/browser.rs"]
mod browser;
#[path = "api/chat.rs"]
mod chat;
#[path = "api/classloader.rs"]
mod classloader;
#[path = "api/client.rs"]
mod client;
#[path = "api/console.rs"]
mod console;
#[path = "api/customers.rs"]
mod customers;
#[path = "api/dashboard.rs"]
mod dashboard;
#[path = "api/devices.rs"]
mod devices;
#[path = "api/entitlements.rs"]
mod entitlements;
#[path = "api/errors.rs"]
mod errors;
#[path = "api/ext.rs"]
mod ext;
#[path = "api/forwarded.rs"]
mod forwarded;
#[path = "api/fuzz.rs"]
mod fuzz;
#[path = "api/gate.rs"]
mod gate;
#[path = "api/headers.rs"]
mod headers;
#[path = "api/helpers.rs"]
mod helpers;
#[path = "api/history.rs"]
mod history;
#[path = "api/idempotency.rs"]
mod idempotency;
#[path = "api/instances.rs"]
mod instances;
#[path = "api/isolation.rs"]
mod isolation;
#[path = "api/license_cache.rs"]
mod license_cache;
#[path = "api/license_files.rs"]
mod license_files;
#[path = "api/licenses.rs"]
mod licenses;
#[path = "api/mail.rs"]
mod mail;
#[path = "api/openapi.rs"]
mod openapi;
#[path = "api/payments.rs"]
mod payments;
#[path = "api/policies.rs"]
mod policies;
#[path = "api/portal.rs"]
mod portal;
#[path = "api/ratelimit.rs"]
mod ratelimit;
#[path = "api/records.rs"]
mod records;
#[path = "api/releases.rs"]
mod releases;
#[path = "api/restart.rs"]
mod restart;
#[path = "api/sessions.rs"]
mod sessions;
#[path = "api/strict.rs"]
mod strict;
#[path = "api/team.rs"]
mod team;
#[path = "api/updates.rs"]
mod updates;
#[path = "api/usage.rs"]
mod usage;
#[path = "api/webhooks.rs"]
mod webhooks;

//! Durability and robustness tests against the real `licensing-server` binary in a child
//! process: crash safety under SIGKILL, graceful shutdown under load, and resource bounds.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs,
    unreachable_pub
)]

mod backup;
mod busy_license;
mod child;
mod crash;
mod downloads;
mod events;
mod fixture;
mod idempotency;

mod postgres;
mod shutdown;
mod startup;

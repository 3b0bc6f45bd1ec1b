//! `licensing-sdk`: the typed Rust client of the licensing service. It is being built in a later
//! issue; today it re-exports the core types it will speak in.

pub use licensing_core as core;

//! Operations that span several stores or need more than one call into core.

pub mod chat;
pub mod mail;
pub mod stats;
pub mod teams;

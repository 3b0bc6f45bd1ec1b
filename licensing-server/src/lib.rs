//! The reference licensing server: warp on top of the embedded sled store.
pub mod store;

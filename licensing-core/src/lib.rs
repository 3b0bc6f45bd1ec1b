//! The storage-agnostic core of the licensing service.
pub mod api;
pub mod crypto;
pub mod error;
pub mod expiry;
pub mod ids;
pub mod key;
pub mod model;
pub mod store;
pub mod time;
pub mod validate;
pub mod verify;

pub use error::{ApiError, FieldError, ValidationErrors};
pub use ids::*;
pub use key::LicenseKey;
pub use time::Timestamp;

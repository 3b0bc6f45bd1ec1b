//! The wire format: result codes, the envelope, request bodies and response views.
mod envelope;
pub mod requests;
mod views;

pub use crate::code::ResultCode;
pub use envelope::{Envelope, ErrorData, ResultMeta};
pub use views::*;

//! The wire format: result codes, the envelope, request bodies and response views.
mod code;
mod envelope;

pub use code::ResultCode;
pub use envelope::{Envelope, ErrorData, ResultMeta};

//! The wire format: result codes, the envelope, request bodies and response views.
mod envelope;
mod license_file;
pub mod requests;
mod views;

pub use crate::code::ResultCode;
pub use envelope::{Envelope, ErrorData, ResultMeta};
pub use license_file::{
    CheckedOutFile, CheckoutData, LicenseFileBody, LicenseFileData, LicenseFileIssued,
    LicenseFileLicense, LicenseFileMeta, LicenseFilePayload, LicenseFileRequest, MAX_FILE_TTL,
    MIN_FILE_TTL, file_expiry, file_ttl,
};
pub use views::*;

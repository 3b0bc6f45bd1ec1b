//! The SDK's one error type: what the server answered, what went wrong on the way, and answers
//! that are not authentic, kept apart so an application can tell "refused" from "unreachable".

use licensing_core::api::{Envelope, ErrorData, ResultCode};
use licensing_core::crypto::CryptoError;
use licensing_core::error::FieldError;

/// Why a call did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered with an error code (an authentic answer, or one from before the team
    /// is known, which is never signed: `BAD_REQUEST`, `TEAM_NOT_FOUND`, `RATE_LIMIT`).
    #[error("{code}: {details}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// `result.code`.
        code: ResultCode,
        /// `result.details`.
        details: String,
        /// For validation errors, every field at fault.
        errors: Vec<FieldError>,
    },
    /// The server could not be reached, or the connection broke.
    #[error("could not reach the licensing server: {0}")]
    Transport(#[source] reqwest::Error),
    /// The answer does not prove it comes from the team's server: a missing or wrong
    /// `X-Signature` or `challengeResponse`. Treat as "not licensed".
    #[error("the answer is not authentic: {0}")]
    Forged(&'static str),
    /// A download failed its integrity checks (tampered, missing, reordered or truncated frames,
    /// or a size or checksum mismatch).
    #[error("the download failed its integrity checks: {0}")]
    Download(CryptoError),
    /// The server's answer could not be understood.
    #[error("unexpected answer: {0}")]
    Protocol(String),
    /// Reading or writing a local file failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// A setting given to the SDK is unusable (a key that does not parse, a bad URL).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A license file was refused (or could not be stored); see [`FileError`](crate::FileError).
    #[error("license file: {0}")]
    File(#[from] crate::license_file::FileError),
}

impl Error {
    /// The API code, when the server answered with one.
    pub fn code(&self) -> Option<ResultCode> {
        match self {
            Self::Api { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The error of a refusal's envelope (`result.valid` false): its code, details and, for a
    /// validation error, every field at fault.
    pub(crate) fn refused(status: u16, envelope: Envelope<serde_json::Value>) -> Self {
        let Some(code) = envelope.result.code else {
            return Self::Protocol("an error without a code".into());
        };
        let errors = serde_json::from_value::<ErrorData>(envelope.data)
            .map(|d| d.errors)
            .unwrap_or_default();
        Self::Api {
            status,
            code,
            details: envelope.result.details.into_owned(),
            errors,
        }
    }

    /// Whether the server was not reached (the case offline grace covers).
    pub fn is_transport(&self) -> bool {
        matches!(self, Self::Transport(_))
    }
}

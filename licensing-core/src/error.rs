//! One error vocabulary: field-level validation problems and the API error that every failure
//! becomes on its way out.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::code::ResultCode;

/// One problem with one input field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FieldError {
    /// The field as the client spelled it, with a path for nested values (`metadata[2].key`).
    pub field: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl FieldError {
    /// A problem with `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Every problem found in one input, in the order the fields were checked. Never empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationErrors(Vec<FieldError>);

impl ValidationErrors {
    /// Errors from a list; an empty list becomes one generic problem, so the list is never empty.
    pub fn new(mut errors: Vec<FieldError>) -> Self {
        if errors.is_empty() {
            errors.push(FieldError::new("body", "is invalid"));
        }
        Self(errors)
    }

    /// A single problem.
    pub fn single(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self(vec![FieldError::new(field, message)])
    }

    /// The problems, first found first.
    pub fn errors(&self) -> &[FieldError] {
        &self.0
    }

    /// The first problem.
    pub fn first(&self) -> &FieldError {
        &self.0[0]
    }

    /// Whether some problem concerns `field`.
    pub fn has(&self, field: &str) -> bool {
        self.0.iter().any(|e| e.field == field)
    }

    /// The message for `field`, if it has a problem.
    pub fn message_for(&self, field: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|e| e.field == field)
            .map(|e| e.message.as_str())
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationErrors {}

/// Collects every field problem of one input instead of stopping at the first.
///
/// Each check returns the parsed value, or `None` after recording why; [`Validator::finish`]
/// fails if anything was recorded, so values are only used when all of them parsed.
#[derive(Debug, Default)]
pub struct Validator {
    errors: Vec<FieldError>,
}

impl Validator {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the outcome of parsing `field`.
    pub fn check<T, E: fmt::Display>(&mut self, field: &str, parsed: Result<T, E>) -> Option<T> {
        match parsed {
            Ok(value) => Some(value),
            Err(e) => {
                self.errors.push(FieldError::new(field, e.to_string()));
                None
            }
        }
    }

    /// Parses an optional field: absent stays absent, present must parse.
    pub fn optional<T, E: fmt::Display>(
        &mut self,
        field: &str,
        raw: Option<impl AsRef<str>>,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Option<Option<T>> {
        match raw {
            None => Some(None),
            Some(text) => self.check(field, parse(text.as_ref())).map(Some),
        }
    }

    /// Parses a required field.
    pub fn required<T, E: fmt::Display>(
        &mut self,
        field: &str,
        raw: Option<impl AsRef<str>>,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Option<T> {
        match raw {
            None => {
                self.push(field, "is required");
                None
            }
            Some(text) => self.check(field, parse(text.as_ref())),
        }
    }

    /// Whether a problem with `field` was recorded already (so that a check of a value the
    /// request did send is not followed by a spurious "is required").
    pub fn noted(&self, field: &str) -> bool {
        self.errors.iter().any(|e| e.field == field)
    }

    /// Records a problem directly.
    pub fn push(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.errors.push(FieldError::new(field, message));
    }

    /// `Ok` when every check passed, else all the problems.
    pub fn finish(self) -> Result<(), ValidationErrors> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(ValidationErrors(self.errors))
        }
    }
}

/// The one error type that leaves the API: a code, the HTTP status, a message that says what to
/// fix, and for validation failures the list of field problems. An internal error also keeps
/// its cause, for the server's log: never answered, and not part of its equality.
#[derive(Clone, Debug)]
pub struct ApiError {
    code: ResultCode,
    status: u16,
    details: Cow<'static, str>,
    errors: Vec<FieldError>,
    retry_after: Option<u64>,
    window: Option<RateWindow>,
    cause: Option<std::sync::Arc<str>>,
}

/// Where a caller stands against a limit counted over a sliding window: HTTP answers it as
/// `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateWindow {
    /// Requests allowed per window.
    pub limit: u32,
    /// Requests left in the window.
    pub remaining: u32,
    /// Seconds until every counted request has left the window.
    pub reset_secs: u64,
}

impl PartialEq for ApiError {
    fn eq(&self, other: &Self) -> bool {
        (
            self.code,
            self.status,
            &self.details,
            &self.errors,
            self.retry_after,
            self.window,
        ) == (
            other.code,
            other.status,
            &other.details,
            &other.errors,
            other.retry_after,
            other.window,
        )
    }
}

impl Eq for ApiError {}

impl ApiError {
    /// An error with the code's own status.
    pub fn new(code: ResultCode, details: impl Into<Cow<'static, str>>) -> Self {
        Self {
            code,
            status: code.http_status(),
            details: details.into(),
            errors: Vec::new(),
            retry_after: None,
            window: None,
            cause: None,
        }
    }

    /// 400 `BAD_REQUEST`.
    pub fn bad_request(details: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ResultCode::BadRequest, details)
    }

    /// 400 `BAD_REQUEST` naming one field.
    pub fn bad_field(field: &str, message: &str) -> Self {
        Self::validation(ValidationErrors::single(field, message))
    }

    /// 400 `BAD_REQUEST` with every field problem; `details` repeats the first.
    pub fn validation(errors: ValidationErrors) -> Self {
        Self {
            code: ResultCode::BadRequest,
            status: 400,
            details: Cow::Owned(errors.first().to_string()),
            errors: errors.0,
            retry_after: None,
            window: None,
            cause: None,
        }
    }

    /// 413 `BAD_REQUEST`: a body or file over its limit.
    pub fn payload_too_large(details: impl Into<Cow<'static, str>>) -> Self {
        Self {
            status: 413,
            ..Self::bad_request(details)
        }
    }

    /// 408 `BAD_REQUEST`: the request body did not arrive in time.
    pub fn request_timeout(details: impl Into<Cow<'static, str>>) -> Self {
        Self {
            status: 408,
            ..Self::bad_request(details)
        }
    }

    /// 414 `BAD_REQUEST`: the request line is longer than the server reads.
    pub fn uri_too_long(details: impl Into<Cow<'static, str>>) -> Self {
        Self {
            status: 414,
            ..Self::bad_request(details)
        }
    }

    /// 431 `BAD_REQUEST`: the request headers are larger than the server reads.
    pub fn headers_too_large(details: impl Into<Cow<'static, str>>) -> Self {
        Self {
            status: 431,
            ..Self::bad_request(details)
        }
    }

    /// 416 `BAD_REQUEST`: a download's `Range` lies past the end of the file.
    pub fn range_not_satisfiable(details: impl Into<Cow<'static, str>>) -> Self {
        Self {
            status: 416,
            ..Self::bad_request(details)
        }
    }

    /// 404 `BAD_REQUEST`: no such route.
    pub fn route_not_found() -> Self {
        Self {
            status: 404,
            ..Self::bad_request("No such endpoint: check the method and the path")
        }
    }

    /// 405 `BAD_REQUEST`: the route exists with other methods.
    pub fn method_not_allowed() -> Self {
        Self {
            status: 405,
            ..Self::bad_request("Method not allowed on this endpoint")
        }
    }

    /// 404 `BAD_REQUEST`: a record without a code of its own (a hardware identifier, an API key,
    /// a blacklist entry) does not exist in this team.
    pub fn record_not_found(details: impl Into<Cow<'static, str>>) -> Self {
        Self {
            status: 404,
            ..Self::bad_request(details)
        }
    }

    /// 500 `INTERNAL_SERVER_ERROR`, without detail: the cause is logged, never answered.
    pub fn internal() -> Self {
        Self::new(ResultCode::InternalServerError, "Internal server error")
    }

    /// 500 `INTERNAL_SERVER_ERROR` that keeps what went wrong (`context`: `cause`) for whoever
    /// logs it where the answer is made; the answer never carries it.
    pub fn internal_because(context: &str, cause: impl fmt::Display) -> Self {
        Self {
            cause: Some(format!("{context}: {cause}").into()),
            ..Self::internal()
        }
    }

    /// The same error, telling the caller to try again in `seconds` (a limit that resets; HTTP
    /// answers it as `Retry-After`).
    #[must_use]
    pub fn retry_after_secs(self, seconds: u64) -> Self {
        Self {
            retry_after: Some(seconds),
            ..self
        }
    }

    /// When to try again, in seconds, for an error of a limit that resets.
    pub fn retry_after(&self) -> Option<u64> {
        self.retry_after
    }

    /// The same error, with where the caller stands against the limit that refused it.
    #[must_use]
    pub fn in_window(self, window: RateWindow) -> Self {
        Self {
            window: Some(window),
            ..self
        }
    }

    /// Where the caller stands against the limit that refused it, if one did.
    pub fn window(&self) -> Option<RateWindow> {
        self.window
    }

    /// The cause kept for the log, if any (see [`internal_because`](Self::internal_because)).
    pub fn cause(&self) -> Option<&str> {
        self.cause.as_deref()
    }

    /// 401 `UNAUTHORIZED`.
    pub fn unauthorized(details: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ResultCode::Unauthorized, details)
    }

    /// 403 `FORBIDDEN`.
    pub fn forbidden(details: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ResultCode::Forbidden, details)
    }

    /// 429 `RATE_LIMIT`.
    pub fn rate_limited() -> Self {
        Self::new(
            ResultCode::RateLimit,
            "Too many requests; retry after the delay given in Retry-After",
        )
    }

    /// The `result.code`.
    pub fn code(&self) -> ResultCode {
        self.code
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The `result.details`.
    pub fn details(&self) -> &str {
        &self.details
    }

    /// The field problems of a validation error (empty otherwise).
    pub fn field_errors(&self) -> &[FieldError] {
        &self.errors
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.status, self.details)
    }
}

impl std::error::Error for ApiError {}

impl From<ValidationErrors> for ApiError {
    fn from(errors: ValidationErrors) -> Self {
        Self::validation(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validator_collects_every_problem_in_order() {
        let mut v = Validator::new();
        let a: Option<u32> = v.check("a", "x".parse::<u32>());
        let b: Option<u32> = v.check("b", "7".parse::<u32>());
        let c: Option<u32> = v.required("c", None::<&str>, |s| s.parse::<u32>());
        assert_eq!((a, b, c), (None, Some(7), None));
        let errors = v.finish().unwrap_err();
        let fields: Vec<_> = errors.errors().iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["a", "c"]);
        assert_eq!(errors.message_for("c"), Some("is required"));
    }

    #[test]
    fn an_internal_error_keeps_its_cause_for_the_log_only() {
        let e = ApiError::internal_because("store failure", "disk on fire");
        assert_eq!(e.cause(), Some("store failure: disk on fire"));
        assert_eq!(e.details(), "Internal server error");
        assert_eq!(
            e,
            ApiError::internal(),
            "the cause is not part of what is answered"
        );
        let store: ApiError =
            crate::store::StoreError::backend_from("sled", std::io::Error::other("eio")).into();
        assert_eq!(store.status(), 500);
        assert!(
            store.cause().is_some_and(|c| c.contains("eio")),
            "{store:?}"
        );
    }

    #[test]
    fn validation_error_details_repeat_the_first_problem() {
        let errors = ValidationErrors::new(vec![
            FieldError::new("hwidLimit", "must be at least 1"),
            FieldError::new("ipLimit", "must be at least 0"),
        ]);
        let err = ApiError::validation(errors);
        assert_eq!(err.status(), 400);
        assert_eq!(err.code(), ResultCode::BadRequest);
        assert_eq!(err.details(), "hwidLimit: must be at least 1");
        assert_eq!(err.field_errors().len(), 2);
    }

    #[test]
    fn bad_request_variants_carry_their_statuses() {
        assert_eq!(ApiError::payload_too_large("too big").status(), 413);
        assert_eq!(ApiError::route_not_found().status(), 404);
        assert_eq!(ApiError::method_not_allowed().status(), 405);
        assert_eq!(ApiError::uri_too_long("x").status(), 414);
        assert_eq!(ApiError::headers_too_large("x").status(), 431);
        assert_eq!(ApiError::request_timeout("x").status(), 408);
        for e in [
            ApiError::payload_too_large("x"),
            ApiError::route_not_found(),
            ApiError::method_not_allowed(),
        ] {
            assert_eq!(e.code(), ResultCode::BadRequest);
        }
        assert_eq!(ApiError::internal().details(), "Internal server error");
    }
}

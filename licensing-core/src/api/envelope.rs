//! The response envelope, built in one place for every answer.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::api::ResultCode;
use crate::error::{ApiError, FieldError};
use crate::time::Timestamp;

/// `{"data": …, "result": {…}}`: the shape of every JSON answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Envelope<T> {
    /// The payload; `null` on errors other than validation errors.
    pub data: T,
    /// What happened.
    pub result: ResultMeta,
}

/// The `result` member of the envelope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ResultMeta {
    /// When the answer was generated.
    pub timestamp: Timestamp,
    /// `true` on success.
    pub valid: bool,
    /// A human-readable message.
    pub details: Cow<'static, str>,
    /// Set on every error and on client verify and heartbeat successes (`VALID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<ResultCode>,
    /// Only in a successful verify answer to a request that carried a challenge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge_response: Option<String>,
}

/// `data` of a validation error: every field problem.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorData {
    /// The problems, first found first.
    pub errors: Vec<FieldError>,
}

impl<T> Envelope<T> {
    /// A developer-API success: no `code`.
    pub fn success(data: T, details: impl Into<Cow<'static, str>>, now: Timestamp) -> Self {
        Self {
            data,
            result: ResultMeta {
                timestamp: now,
                valid: true,
                details: details.into(),
                code: None,
                challenge_response: None,
            },
        }
    }

    /// A client verify or heartbeat success: `code` is `VALID`.
    pub fn valid(
        data: T,
        details: impl Into<Cow<'static, str>>,
        challenge_response: Option<String>,
        now: Timestamp,
    ) -> Self {
        Self {
            data,
            result: ResultMeta {
                timestamp: now,
                valid: true,
                details: details.into(),
                code: Some(ResultCode::Valid),
                challenge_response,
            },
        }
    }
}

impl Envelope<Option<ErrorData>> {
    /// The answer to an error: `data` is `null`, or the field problems of a validation error.
    pub fn error(error: &ApiError, now: Timestamp) -> Self {
        let data = (!error.field_errors().is_empty()).then(|| ErrorData {
            errors: error.field_errors().to_vec(),
        });
        Self {
            data,
            result: ResultMeta {
                timestamp: now,
                valid: false,
                details: Cow::Owned(error.details().to_owned()),
                code: Some(error.code()),
                challenge_response: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::ValidationErrors;

    fn at() -> Timestamp {
        Timestamp::parse("2026-11-22T10:00:00Z").unwrap()
    }

    #[test]
    fn developer_success_has_no_code() {
        let env = Envelope::success(json!({"x": 1}), "Done", at());
        assert_eq!(
            serde_json::to_value(&env).unwrap(),
            json!({"data": {"x": 1}, "result": {
                "timestamp": "2026-11-22T10:00:00.000Z", "valid": true, "details": "Done"}})
        );
    }

    #[test]
    fn verify_success_carries_valid_and_challenge_response() {
        let env = Envelope::valid(json!({}), "License is valid", Some("ab".into()), at());
        let v = serde_json::to_value(&env).unwrap();
        assert_eq!(v["result"]["code"], "VALID");
        assert_eq!(v["result"]["challengeResponse"], "ab");
    }

    #[test]
    fn plain_error_has_null_data() {
        let err = ApiError::new(ResultCode::LicenseNotFound, "License not found");
        let v = serde_json::to_value(Envelope::error(&err, at())).unwrap();
        assert_eq!(
            v,
            json!({"data": null, "result": {"timestamp": "2026-11-22T10:00:00.000Z",
                "valid": false, "details": "License not found", "code": "LICENSE_NOT_FOUND"}})
        );
    }

    #[test]
    fn validation_error_lists_every_field() {
        let err = ApiError::validation(ValidationErrors::new(vec![
            FieldError::new("a", "bad"),
            FieldError::new("b", "worse"),
        ]));
        let v = serde_json::to_value(Envelope::error(&err, at())).unwrap();
        assert_eq!(
            v["data"],
            json!({"errors": [{"field": "a", "message": "bad"}, {"field": "b", "message": "worse"}]})
        );
        assert_eq!(v["result"]["details"], "a: bad");
    }
}

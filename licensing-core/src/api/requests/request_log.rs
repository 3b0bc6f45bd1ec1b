//! (ext) `GET {dev}/licenses/{licenseId}/requests`: a license's request history, newest first
//! unless `sortDirection=asc`.

use super::finish;
use super::list::{Paging, Query, SortDirection, time_range};
use crate::ApiError;
use crate::code::ResultCode;
use crate::error::Validator;
use crate::model::{ClientEndpoint, RequestLogEntry};
use crate::time::Timestamp;

/// The query of a license's request history.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestLogQuery {
    /// Page, size and direction (by time).
    pub paging: Paging,
    /// Requests answered with this code.
    pub code: Option<ResultCode>,
    /// Refused requests only (`true`) or accepted ones only (`false`).
    pub refused: Option<bool>,
    /// Requests to this endpoint.
    pub endpoint: Option<ClientEndpoint>,
    /// Requests at or after this time.
    pub from: Option<Timestamp>,
    /// Requests before this time.
    pub to: Option<Timestamp>,
}

const KNOWN: [&str; 8] = [
    "page",
    "pageSize",
    "sortDirection",
    "code",
    "refused",
    "endpoint",
    "from",
    "to",
];

impl RequestLogQuery {
    /// Parses the query string.
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let mut v = Validator::new();
        let q = Query::parse(raw, &KNOWN, &mut v);
        let paging = Paging::parse(&q, &mut v);
        let code = v
            .optional("code", q.get("code"), |t| {
                ResultCode::ALL
                    .into_iter()
                    .find(|c| c.as_str() == t)
                    .ok_or("must be a result code, such as VALID or HWID_LIMIT_REACHED")
            })
            .flatten();
        let refused = v
            .optional("refused", q.get("refused"), |t| match t {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err("must be true or false"),
            })
            .flatten();
        let endpoint = v
            .optional("endpoint", q.get("endpoint"), |t| {
                ClientEndpoint::parse(t).ok_or_else(|| {
                    let names: Vec<&str> = ClientEndpoint::ALL.iter().map(|e| e.as_str()).collect();
                    format!("must be one of {}", names.join(", "))
                })
            })
            .flatten();
        let (from, to) = time_range(&q, &mut v);
        if let (Some(code), Some(refused)) = (code, refused)
            && code.is_success() == refused
        {
            v.push("refused", "contradicts code: leave one of them out");
        }
        finish(v)?;
        Ok(Self {
            paging,
            code,
            refused,
            endpoint,
            from,
            to,
        })
    }

    /// Whether `entry` passes the filters (the team and license are the caller's to check).
    pub fn matches(&self, entry: &RequestLogEntry) -> bool {
        self.code.is_none_or(|c| entry.code == c)
            && self.refused.is_none_or(|r| entry.refused() == r)
            && self.endpoint.is_none_or(|e| entry.endpoint == e)
            && self.from.is_none_or(|from| entry.at >= from)
            && self.to.is_none_or(|to| entry.at < to)
    }

    /// Whether the newest entries come first.
    pub fn newest_first(&self) -> bool {
        self.paging.direction == SortDirection::Desc
    }

    /// The query string that [`parse`](Self::parse) reads back (what the SDK sends).
    pub fn to_query_string(&self) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query
            .append_pair("page", &self.paging.page.to_string())
            .append_pair("pageSize", &self.paging.page_size.to_string());
        if !self.newest_first() {
            query.append_pair("sortDirection", "asc");
        }
        if let Some(code) = self.code {
            query.append_pair("code", code.as_str());
        }
        if let Some(refused) = self.refused {
            query.append_pair("refused", if refused { "true" } else { "false" });
        }
        if let Some(endpoint) = self.endpoint {
            query.append_pair("endpoint", endpoint.as_str());
        }
        if let Some(from) = self.from {
            query.append_pair("from", &from.to_string());
        }
        if let Some(to) = self.to {
            query.append_pair("to", &to.to_string());
        }
        query.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::super::problems;
    use super::*;

    #[test]
    fn parses_every_filter_and_reads_its_own_query_string_back() {
        let q = RequestLogQuery::parse(
            "code=HWID_LIMIT_REACHED&endpoint=VERIFY&from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z&pageSize=10&sortDirection=asc",
        )
        .unwrap();
        assert_eq!(q.code, Some(ResultCode::HwidLimitReached));
        assert_eq!(q.endpoint, Some(ClientEndpoint::Verify));
        assert!(!q.newest_first());
        assert_eq!(RequestLogQuery::parse(&q.to_query_string()).unwrap(), q);
        let refused = RequestLogQuery::parse("refused=true").unwrap();
        assert_eq!(refused.refused, Some(true));
        assert_eq!(
            RequestLogQuery::parse(&refused.to_query_string()).unwrap(),
            refused
        );
    }

    #[test]
    fn refuses_what_it_cannot_read_with_what_to_send() {
        let e = RequestLogQuery::parse(
            "code=NOPE&refused=maybe&endpoint=PING&from=yesterday&color=red",
        )
        .unwrap_err();
        let fields: Vec<String> = problems(&e).into_iter().map(|(f, _)| f).collect();
        for field in ["code", "refused", "endpoint", "from", "color"] {
            assert!(fields.iter().any(|f| f == field), "{field} in {fields:?}");
        }
        let e = RequestLogQuery::parse("code=VALID&refused=true").unwrap_err();
        assert_eq!(problems(&e)[0].0, "refused");
        let e = RequestLogQuery::parse("from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z")
            .unwrap_err();
        assert_eq!(problems(&e)[0].0, "to");
    }
}

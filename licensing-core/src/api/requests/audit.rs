//! `GET {dev}/audit-log`: paging and filters.

use super::finish;
use super::list::{Paging, Query, SortDirection, time_range};
use crate::error::{ApiError, Validator};
use crate::ids::parse_uuid;
use crate::model::{Action, ActorKind, AuditEntry, ProductRestriction, Scopes, Sight, sight};
use crate::time::Timestamp;
use crate::validate::check_length;

/// Whose changes an audit query asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActorFilter {
    /// One API key or user, by id.
    Id(uuid::Uuid),
    /// Every principal of a kind (`ADMIN`, `SYSTEM`, …).
    Kind(ActorKind),
}

/// The query of the audit log: newest first unless `sortDirection=asc`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// Page, size and direction (by time).
    pub paging: Paging,
    /// Entries about this type of record (`license`, `customer`, …).
    pub resource_type: Option<String>,
    /// Entries about the record with this id.
    pub resource_id: Option<String>,
    /// Entries of this principal.
    pub actor: Option<ActorFilter>,
    /// Entries of this action.
    pub action: Option<Action>,
    /// Entries at or after this time.
    pub from: Option<Timestamp>,
    /// Entries before this time.
    pub to: Option<Timestamp>,
    /// Not a parameter: the caller's product restriction. Entries about records of other
    /// products are left out (see [`sight`](crate::model::sight)).
    pub products: ProductRestriction,
}

const KNOWN: [&str; 9] = [
    "page",
    "pageSize",
    "sortDirection",
    "resourceType",
    "resourceId",
    "actor",
    "action",
    "from",
    "to",
];

impl AuditQuery {
    /// Parses the query string.
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let mut v = Validator::new();
        let q = Query::parse(raw, &KNOWN, &mut v);
        let paging = Paging::parse(&q, &mut v);
        let resource_type = v
            .optional("resourceType", q.get("resourceType"), |t| {
                let known = Action::resources();
                if known.contains(&t) {
                    Ok(t.to_owned())
                } else {
                    Err(format!("must be one of {}", known.join(", ")))
                }
            })
            .flatten();
        let resource_id = v
            .optional("resourceId", q.get("resourceId"), |t| {
                check_length(t, 1, 100).map(|()| t.to_owned())
            })
            .flatten();
        let actor = v
            .optional("actor", q.get("actor"), |t| {
                if let Ok(id) = parse_uuid(t) {
                    return Ok(ActorFilter::Id(id));
                }
                serde_json::from_value(serde_json::Value::from(t))
                    .map(ActorFilter::Kind)
                    .map_err(|_| {
                        "must be an API key's or user's id, or one of API_KEY, ADMIN, USER, SYSTEM, CUSTOMER, INTEGRATION"
                    })
            })
            .flatten();
        let action = v
            .optional("action", q.get("action"), |t| {
                Action::parse(t).ok_or_else(|| {
                    let names: Vec<&str> = Action::ALL.iter().map(|a| a.as_str()).collect();
                    format!("must be one of {}", names.join(", "))
                })
            })
            .flatten();
        let (from, to) = time_range(&q, &mut v);
        finish(v)?;
        Ok(Self {
            paging,
            resource_type,
            resource_id,
            actor,
            action,
            from,
            to,
            products: None,
        })
    }

    /// Whether `entry` passes the filters (the team is the caller's to check).
    pub fn matches(&self, entry: &AuditEntry) -> bool {
        self.resource_type
            .as_deref()
            .is_none_or(|t| entry.resource_type == t)
            && self
                .resource_id
                .as_deref()
                .is_none_or(|id| entry.resource_id == id)
            && self.actor.is_none_or(|a| match a {
                ActorFilter::Id(id) => entry.actor.id == Some(id),
                ActorFilter::Kind(kind) => entry.actor.kind == kind,
            })
            && self.action.is_none_or(|a| entry.action == a)
            && self.from.is_none_or(|from| entry.at >= from)
            && self.to.is_none_or(|to| entry.at < to)
            && sight(
                &Scopes::All,
                &self.products,
                &entry.resource_type,
                entry.product_ids.as_deref(),
            ) != Sight::Hidden
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
        if let Some(t) = &self.resource_type {
            query.append_pair("resourceType", t);
        }
        if let Some(id) = &self.resource_id {
            query.append_pair("resourceId", id);
        }
        match self.actor {
            Some(ActorFilter::Id(id)) => {
                query.append_pair("actor", &id.hyphenated().to_string());
            }
            Some(ActorFilter::Kind(kind)) => {
                if let Ok(serde_json::Value::String(name)) = serde_json::to_value(kind) {
                    query.append_pair("actor", &name);
                }
            }
            None => {}
        }
        if let Some(a) = self.action {
            query.append_pair("action", a.as_str());
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
        let q = AuditQuery::parse(
            "resourceType=license&resourceId=abc&actor=ADMIN&action=license.suspended&from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z&pageSize=10&sortDirection=asc",
        )
        .unwrap();
        assert_eq!(q.resource_type.as_deref(), Some("license"));
        assert_eq!(q.actor, Some(ActorFilter::Kind(ActorKind::Admin)));
        assert_eq!(q.action, Some(Action::LicenseSuspended));
        assert!(!q.newest_first());
        assert_eq!(AuditQuery::parse(&q.to_query_string()).unwrap(), q);
        let id = uuid::Uuid::new_v4();
        let q = AuditQuery::parse(&format!("actor={id}")).unwrap();
        assert_eq!(q.actor, Some(ActorFilter::Id(id)));
        assert_eq!(AuditQuery::parse(&q.to_query_string()).unwrap(), q);
    }

    #[test]
    fn refuses_what_it_cannot_read_naming_the_parameter() {
        for (raw, field) in [
            ("resourceType=licence", "resourceType"),
            ("action=license.frobbed", "action"),
            ("actor=bob", "actor"),
            ("from=yesterday", "from"),
            ("from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", "to"),
            ("sortColumn=at", "sortColumn"),
        ] {
            let e = AuditQuery::parse(raw).unwrap_err();
            assert!(
                problems(&e).iter().any(|(f, _)| f == field),
                "{raw}: {:?}",
                problems(&e)
            );
        }
    }
}

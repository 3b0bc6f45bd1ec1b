//! The audit log, filterable by kind of record, actor and time.

use licensing_core::api::requests::AuditQuery;
use licensing_core::model::{Action, ActorKind, AuditEntry, FieldChange};
use maud::{Markup, html};

use super::api::{self, Failure};
use super::page::{self, Nav};
use super::{Ctx, Staff};
use crate::app::team::ListAudit;
use crate::dashboard::words::{t, tm, tw};
use crate::http::Response;
use crate::i18n::Arg;

/// An action's name in words (`api_key.revoked`: "API key revoked"); the name itself is the
/// entry's title, as the API and the filters spell it.
fn action_words(name: &str) -> String {
    let spaced = name
        .replace("api_key", t("audit-api-key"))
        .replace(['.', '_'], " ");
    let mut chars = spaced.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// `GET /dashboard/audit`.
pub(crate) async fn list(ctx: &Ctx, staff: &Staff) -> Response {
    let outcome = page_of(ctx, staff).await;
    page::or_failure(ctx, staff, outcome)
}

fn value_text(value: Option<&serde_json::Value>) -> String {
    match value {
        None | Some(serde_json::Value::Null) => "—".to_owned(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Whether `value` says nothing: absent, null, or an empty text, list or object.
fn is_blank(value: Option<&serde_json::Value>) -> bool {
    use serde_json::Value;
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(items)) => items.is_empty(),
        Some(Value::Object(members)) => members.is_empty(),
        Some(_) => false,
    }
}

/// Whether a change is worth a line: a creation records every field, most of them empty
/// before and after (`— → —` says nothing).
fn shown(c: &FieldChange) -> bool {
    c.secret || c.redacted || !(is_blank(c.old.as_ref()) && is_blank(c.new.as_ref()))
}

fn change(c: &FieldChange) -> Markup {
    html! {
        li {
            code { (c.field) } ": "
            @if c.secret { em { (t("audit-secret-not-recorded")) } }
            @else if c.redacted { em { (t("audit-changed-your-role-may-not")) } }
            @else { (value_text(c.old.as_ref())) " → " (value_text(c.new.as_ref())) }
        }
    }
}

pub(crate) fn actor(entry: &AuditEntry) -> String {
    let name = entry.actor.name.clone().unwrap_or_default();
    match entry.actor.kind {
        ActorKind::User => tw("audit-actor-staff", &[("name", Arg::Text(&name))]),
        ActorKind::ApiKey => tw("audit-actor-api-key", &[("name", Arg::Text(&name))]),
        ActorKind::Admin => t("audit-operator-admin-api").to_owned(),
        ActorKind::System => tw("audit-actor-server", &[("name", Arg::Text(&name))]),
        ActorKind::Customer if name.is_empty() => t("audit-customer-portal").to_owned(),
        ActorKind::Customer => tw("audit-actor-customer", &[("name", Arg::Text(&name))]),
        ActorKind::Integration => tw("audit-actor-integration", &[("name", Arg::Text(&name))]),
    }
}

/// The dashboard page of a record an entry is about, where there is one.
fn record_page(entry: &AuditEntry) -> Option<String> {
    let section = match entry.resource_type.as_str() {
        "license" => "licenses",
        "customer" => "customers",
        "product" => "products",
        "release" => "releases",
        "webhook" => "webhooks",
        _ => return None,
    };
    let deleted = entry.action.as_str().ends_with(".deleted");
    (!deleted).then(|| format!("/dashboard/{section}/{}", entry.resource_id))
}

async fn page_of(ctx: &Ctx, staff: &Staff) -> Result<Response, Failure> {
    let resource = ctx.param("resourceType").unwrap_or_default();
    let who = ctx.param("actor").unwrap_or_default();
    let record = ctx.param("resourceId").unwrap_or_default();
    let page_number: u32 = page::page_number(ctx);
    // The filters as a query string: for the API's query and the pages' links.
    let filters = |page: u32| {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (name, value) in [
            ("resourceType", &resource),
            ("resourceId", &record),
            ("actor", &who),
        ] {
            if !value.is_empty() {
                q.append_pair(name, value);
            }
        }
        q.append_pair("page", &page.to_string());
        q.finish()
    };
    let query = AuditQuery::parse(&format!("pageSize=50&{}", filters(page_number)))?;
    let entries = api::perform(ctx, staff, ListAudit(query)).await?;
    let link = |page: u32| format!("/dashboard/audit?{}", filters(page));
    let history = |id: &str| {
        let mut q = form_urlencoded::Serializer::new(String::new());
        q.append_pair("resourceId", id);
        format!("/dashboard/audit?{}", q.finish())
    };
    let content = html! {
        h1 { (t("audit-audit-log")) }
        @if !record.is_empty() {
            p.notice {
                (tm("audit-history-record", &[("code", html! { code { (record) } }), ("link", html! { a href="/dashboard/audit" { (t("audit-show-every-record")) } })]))
            }
        }
        form.filters method="get" action="/dashboard/audit" {
            @if !record.is_empty() { input type="hidden" name="resourceId" value=(record); }
            (page::filter(("resourceType", t("audit-records"), t("audit-all")), Action::resources().into_iter().map(|r| (r, r)), &resource))
            (page::filter(
                ("actor", t("audit-who"), t("audit-anyone")),
                [("USER", t("audit-staff")), ("API_KEY", t("audit-api-keys")), ("ADMIN", t("audit-operator")), ("SYSTEM", t("audit-server"))],
                &who,
            ))
            div { button type="submit" { (t("audit-show")) } }
        }
        (page::table(&[t("audit-when"), t("audit-who"), t("audit-what"), t("audit-record"), t("audit-changes")], None, html! {
            @if entries.items.is_empty() {
                tr { td.empty colspan="5" { (t("audit-nothing-recorded-matches")) } }
            }
            @for e in &entries.items {
                tr {
                    td.nowrap { (page::when_exact(staff, e.at)) }
                    td {
                        (actor(e))
                        @if let Some(address) = e.address { br; span.hint { (address) } }
                    }
                    td { span title=(e.action.as_str()) { (action_words(e.action.as_str())) } }
                    td {
                        a href=(history(&e.resource_id)) title=(tw("audit-every-entry-about", &[("record", Arg::Text(&e.resource_id))])) {
                            code { (e.resource_id.get(..8).unwrap_or(&e.resource_id)) }
                        }
                        @if let Some(href) = record_page(e) {
                            " " a.hint href=(href) { (t("audit-open")) }
                        }
                    }
                    td { ul.changes { @for c in e.changes.iter().filter(|c| shown(c)) { (change(c)) } } }
                }
            }
        }))
        nav.pager aria-label=(t("audit-pages")) {
            @if entries.total > 0 { span { (page::counted(entries.total, "count-entries")) } }
            @if page_number > 1 { a href=(link(page_number - 1)) rel="prev" { (t("audit-newer")) } }
            @if entries.has_next_page { a href=(link(page_number + 1)) rel="next" { (t("audit-older")) } }
        }
    };
    Ok(page::html_response(
        200,
        page::layout(ctx, staff, Nav::Audit, t("audit-audit-log"), content),
    ))
}

#[cfg(test)]
mod tests {
    use super::action_words;

    #[test]
    fn actions_read_as_words() {
        assert_eq!(action_words("license.created"), "License created");
        assert_eq!(action_words("api_key.revoked"), "API key revoked");
        assert_eq!(action_words("staff.sign_in_failed"), "Staff sign in failed");
    }
}

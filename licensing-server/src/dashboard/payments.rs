//! The payments page: per provider (Stripe, Paddle, Lemon Squeezy), the setup steps (the address
//! to paste, the events to send), the secrets (shown by their last 4 characters), the rules
//! mapping what is bought to a policy, and the log of the events received, with their reasons
//! and a replay for those skipped or failed.

use licensing_core::api::requests::{InboundQuery, IntegrationBody, Patch, RawMatch, RuleBody};
use licensing_core::api::{InboundEventView, IntegrationView};
use licensing_core::crypto::inbound::Provider;
use licensing_core::model::{InboundStatus, OnCancel, OnPaymentFailed, OnRefund, Policy};
use maud::{Markup, html};

use super::api::{self, Failure};
use super::page::{self, After, Confirm, Form, Nav, field_error};
use super::{Ctx, Staff};
use crate::app::integrations::{
    CreateRule, DeleteIntegration, DeleteRule, ListInboundEvents, ListIntegrations, PutIntegration,
    ReplayInboundEvent,
};
use crate::dashboard::words::{t, tm};
use crate::http::Response;

/// The events each provider should send.
fn events_to_send(provider: Provider) -> &'static [&'static str] {
    match provider {
        Provider::Stripe => &[
            "checkout.session.completed",
            "invoice.paid",
            "invoice.payment_failed",
            "customer.subscription.updated",
            "customer.subscription.deleted",
            "charge.refunded",
            "charge.dispute.created",
        ],
        Provider::Paddle => &[
            "transaction.completed",
            "transaction.payment_failed",
            "subscription.updated",
            "subscription.canceled",
            "adjustment.created",
        ],
        Provider::LemonSqueezy => &[
            "order_created",
            "order_refunded",
            "subscription_created",
            "subscription_payment_success",
            "subscription_payment_failed",
            "subscription_cancelled",
            "subscription_expired",
        ],
    }
}

/// Where, at the provider, the secret and the address go.
fn where_at(provider: Provider) -> &'static str {
    match provider {
        Provider::Stripe => t("payments-stripe-dashboard-developers-webhooks-add"),
        Provider::Paddle => t("payments-paddle-developer-tools-notifications-new"),
        Provider::LemonSqueezy => t("payments-lemon-squeezy-settings-webhooks-add"),
    }
}

fn provider_of(text: &str) -> Result<Provider, Failure> {
    Provider::parse(text).ok_or_else(|| Failure {
        status: 404,
        details: t("payments-no-such-payment-provider").into(),
        fields: Vec::new(),
    })
}

/// `GET /dashboard/payments`, or the page again with what to fix in the form `refused_for`
/// sent.
pub(crate) async fn list(
    ctx: &Ctx,
    staff: &Staff,
    after: After<'_>,
    refused_for: Option<&str>,
) -> Response {
    let (form, failure) = (after.form(), after.failure());
    let outcome = async {
        let set_up = api::perform(ctx, staff, ListIntegrations)
            .await?
            .integrations;
        let policies = super::policies::readable(ctx, staff).await?;
        let query = InboundQuery::parse("pageSize=50").map_err(Failure::from)?;
        let events = api::perform(ctx, staff, ListInboundEvents(query)).await?;
        let write = staff.may_perform::<PutIntegration>();
        let base = super::users::base(ctx);
        let content = html! {
            h1 { (t("payments-payments")) }
            p.hint { (t("payments-when-customer-pays-through-stripe")) }
            @for (name, provider) in Provider::ALL {
                @let mine = set_up.iter().find(|i| i.provider == provider);
                @let here = refused_for == Some(name);
                (section(staff, provider, mine, &policies, &base, write, here.then_some((form, failure))))
            }
            h2 #events { (t("payments-events-received")) }
            p.hint { (t("payments-newest-first-kept-90-days")) }
            (page::table(&[t("payments-received"), t("payments-provider"), t("payments-event"), t("payments-status"), t("payments-what-happened"), t("payments-license"), ""], None, html! {
                @if events.items.is_empty() { tr { td.empty colspan="7" { (t("payments-no-events-received-yet")) } } }
                @for e in &events.items { (event_row(staff, e, write)) }
            }))
        };
        Ok(page::shown(Nav::Payments, t("payments-payments"), content))
    };
    page::answer(ctx, staff, failure, outcome.await)
}

fn event_row(staff: &Staff, e: &InboundEventView, write: bool) -> Markup {
    let replayable = matches!(e.status, InboundStatus::Skipped | InboundStatus::Failed);
    html! {
        tr {
            td { (page::when(staff, e.received_at)) }
            td { (e.provider.title()) }
            td { code { (e.event_type) } br; span.hint { (e.event_id) } }
            td { span class={ "badge " (e.status.as_str()) } { (e.status.as_str()) } }
            td { (e.reason.as_deref().unwrap_or("")) }
            td {
                @if let Some(l) = e.license_id { a href={ "/dashboard/licenses/" (l) } { (t("payments-open")) } }
            }
            td {
                @if write && replayable {
                    form.inline method="post" action={ "/dashboard/payments/events/" (e.id) "/replay" } {
                        (page::csrf(staff))
                        button.small.secondary type="submit" { (t("payments-replay")) }
                    }
                }
            }
        }
    }
}

/// One provider's part of the page.
fn section(
    staff: &Staff,
    provider: Provider,
    mine: Option<&IntegrationView>,
    policies: &[Policy],
    base: &str,
    write: bool,
    refused: Option<(&Form, Option<&Failure>)>,
) -> Markup {
    let name = provider.as_str();
    let (form, failure) = match refused {
        Some((form, failure)) => (Some(form), failure),
        None => (None, None),
    };
    let value = |field: &str| form.and_then(|f| f.get(field)).unwrap_or("").to_owned();
    html! {
        section.card id=(name) {
            h2 { (provider.title()) }
            @match mine {
                None => p { (t("payments-not-set-up")) }
                Some(i) => {
                    dl.facts {
                        dt { (t("payments-status")) } dd { @if i.enabled { (t("payments-receiving-events")) } @else { (t("payments-disabled-events-answered-not-received")) } }
                        dt { (tm("payments-address-give-title", &[("title", html! { (provider.title()) })])) } dd { code.copy { (base) (i.webhook_path) } }
                        dt { (t("payments-webhook-secret")) } dd { code { (i.webhook_secret) }
                            @if let (Some(previous), Some(until)) = (&i.previous_secret, i.previous_secret_until) {
                                (tm("payments-replaced-one-accepted-until", &[("code", html! { code { (previous) } }), ("when", html! { (page::when(staff, until)) })]))
                            }
                        }
                        dt { (t("payments-api-key")) } dd { @match &i.api_key { Some(k) => code { (k) }, None => (t("payments-none-what-event-lacks-cannot")) } }
                        dt { (t("payments-events-send")) } dd { @for e in events_to_send(provider) { code { (e) } " " } }
                    }
                }
            }
            @if write {
                details open[mine.is_none() || refused.is_some()] {
                    summary { @if mine.is_some() { (t("payments-change-secrets")) } @else { (tm("payments-set-up-title", &[("title", html! { (provider.title()) })])) } }
                    p.hint { (where_at(provider)) }
                    @if refused.is_some() { (page::problems(failure)) }
                    form method="post" action={ "/dashboard/payments/" (name) } {
                        (page::csrf(staff))
                        label for={ (name) "-secret" } { (t("payments-webhook-signing-secret")) span.hint { @if mine.is_some() { (t("payments-blank-keep-new-one-leaves")) } } (field_error(failure, "webhookSecret")) }
                        input id={ (name) "-secret" } type="password" name="webhookSecret" autocomplete="off" value=(value("webhookSecret"));
                        label for={ (name) "-key" } { (t("payments-api-key")) span.hint { (t("payments-blank-keep")) } (field_error(failure, "apiKey")) }
                        input id={ (name) "-key" } type="password" name="apiKey" autocomplete="off";
                        label.choice { input type="checkbox" name="enabled" value="true" checked[mine.is_none_or(|i| i.enabled)]; (t("payments-apply-events")) }
                        div.actions {
                            button type="submit" { (t("payments-save")) }
                            @if mine.is_some() {
                                a.button.secondary.small href={ "/dashboard/payments/" (name) "/delete" } { (t("payments-remove")) }
                            }
                        }
                    }
                }
            }
            @if let Some(i) = mine {
                h3 { (t("payments-rules")) }
                p.hint { (t("payments-what-bought-policy-license-gets")) }
                (page::table(&[t("payments-match"), t("payments-policy-2"), t("payments-failed-payment-2"), t("payments-cancellation-2"), t("payments-refund"), "E-mail", ""], None, html! {
                    @if i.rules.is_empty() {
                        tr { td.empty colspan="7" {
                            @if provider == Provider::Stripe { (t("payments-no-rules-stripe-products-with")) }
                            @else { (t("payments-no-rules-yet-purchases-skipped")) }
                        } }
                    }
                    @for r in &i.rules {
                        tr {
                            td { (r.matches.name()) " " code { (r.matches.value()) } }
                            td { @match policies.iter().find(|p| p.id == r.policy_id) {
                                Some(p) => a href={ "/dashboard/policies/" (p.id) } { (p.name) },
                                None => (t("payments-deleted")),
                            } }
                            td { (match r.on_payment_failed { OnPaymentFailed::Keep => t("payments-keep-grace"), OnPaymentFailed::Suspend => t("payments-suspend") }) }
                            td { (match r.on_cancel { OnCancel::PeriodEnd => t("payments-ends-with-period"), OnCancel::Now => t("payments-suspend-now") }) }
                            td { (match r.on_refund { OnRefund::Suspend => t("payments-suspend"), OnRefund::Delete => t("payments-delete"), OnRefund::Keep => t("payments-keep") }) }
                            td { @if r.send_license_email { (t("payments-sent")) } @else { (t("payments-not-sent")) } }
                            td { @if write {
                                form.inline method="post" action={ "/dashboard/payments/" (name) "/rules/" (r.id) "/delete" } {
                                    (page::csrf(staff))
                                    button.small.secondary type="submit" { (t("payments-delete")) }
                                }
                            } }
                        }
                    }
                }))
                @if write {
                    (rule_form(staff, provider, policies, refused))
                }
            }
        }
    }
}

fn rule_form(
    staff: &Staff,
    provider: Provider,
    policies: &[Policy],
    refused: Option<(&Form, Option<&Failure>)>,
) -> Markup {
    let name = provider.as_str();
    let failure = refused.and_then(|(_, f)| f);
    let kinds: &[(&str, &str)] = match provider {
        Provider::LemonSqueezy => &[
            ("variantId", t("payments-variant")),
            ("productId", t("payments-product")),
        ],
        _ => &[
            ("priceId", t("payments-price")),
            ("productId", t("payments-product")),
        ],
    };
    html! {
        details {
            summary { (t("payments-add-rule")) }
            @if policies.is_empty() {
                p { (tm("payments-create-first-rule-gives-buyer", &[("link", html! { a href="/dashboard/policies" { (t("payments-policy")) } })])) }
            } @else {
                form method="post" action={ "/dashboard/payments/" (name) "/rules" } {
                    (page::csrf(staff))
                    label for={ (name) "-kind" } { (t("payments-what-bought")) }
                    select id={ (name) "-kind" } name="kind" {
                        @for (v, text) in kinds { option value=(v) { (text) } }
                    }
                    label for={ (name) "-value" } { (tm("payments-id-title", &[("title", html! { (provider.title()) })])) (field_error(failure, "match")) }
                    input id={ (name) "-value" } type="text" name="value" required;
                    label for={ (name) "-policy" } { (t("payments-policy-2")) (field_error(failure, "policyId")) }
                    select id={ (name) "-policy" } name="policyId" {
                        @for p in policies { option value=(p.id) { (p.name) } }
                    }
                    label for={ (name) "-failed" } { (t("payments-failed-payment")) }
                    select id={ (name) "-failed" } name="onPaymentFailed" {
                        option value="keep" { (t("payments-keeps-license-runs-date-then")) }
                        option value="suspend" { (t("payments-suspends-until-next-payment")) }
                    }
                    label for={ (name) "-cancel" } { (t("payments-cancellation")) }
                    select id={ (name) "-cancel" } name="onCancel" {
                        option value="periodEnd" { (t("payments-ends-with-period-paid")) }
                        option value="now" { (t("payments-suspends-once")) }
                    }
                    label for={ (name) "-refund" } { (t("payments-refund-dispute")) }
                    select id={ (name) "-refund" } name="onRefund" {
                        option value="suspend" { (t("payments-suspends")) }
                        option value="delete" { (t("payments-deletes")) }
                        option value="keep" { (t("payments-keeps")) }
                    }
                    label.choice { input type="checkbox" name="sendLicenseEmail" value="true" checked; (t("payments-e-mail-key-buyer")) }
                    p { button type="submit" { (t("payments-add-rule-2")) } }
                }
            }
        }
    }
}

/// `POST /dashboard/payments/{provider}`: sets up or changes the integration.
pub(crate) async fn save(ctx: &Ctx, staff: &Staff, provider: &str, form: &Form) -> Response {
    let provider_name = provider.to_owned();
    let op = provider_of(provider).map(|p| {
        PutIntegration(
            p,
            IntegrationBody {
                enabled: Some(form.get("enabled") == Some("true")),
                webhook_secret: form.text("webhookSecret").map(str::to_owned),
                api_key: form
                    .text("apiKey")
                    .map_or(Patch::Missing, |k| Patch::Value(k.to_owned())),
            },
        )
    });
    let saved = match op {
        Ok(op) => api::perform(ctx, staff, op).await.map(drop),
        Err(f) => Err(f),
    };
    match saved {
        Ok(()) => page::redirect(&format!(
            "/dashboard/payments?notice=integration-saved#{provider_name}"
        )),
        Err(f) if f.status == 400 => {
            list(ctx, staff, After::Refused(form, &f), Some(&provider_name)).await
        }
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// `POST /dashboard/payments/{provider}/rules`.
pub(crate) async fn create_rule(ctx: &Ctx, staff: &Staff, provider: &str, form: &Form) -> Response {
    let provider_name = provider.to_owned();
    let value = serde_json::Value::String(form.get("value").unwrap_or("").trim().to_owned());
    let matches = match form.get("kind") {
        Some("productId") => RawMatch {
            product_id: Some(value),
            ..RawMatch::default()
        },
        Some("variantId") => RawMatch {
            variant_id: Some(value),
            ..RawMatch::default()
        },
        _ => RawMatch {
            price_id: Some(value),
            ..RawMatch::default()
        },
    };
    let body = RuleBody {
        matches: Some(matches),
        policy_id: form.get("policyId").map(str::to_owned),
        product_ids: None,
        send_license_email: Some(form.get("sendLicenseEmail") == Some("true")),
        on_payment_failed: form.get("onPaymentFailed").map(str::to_owned),
        on_cancel: form.get("onCancel").map(str::to_owned),
        on_refund: form.get("onRefund").map(str::to_owned),
    };
    let made = match provider_of(provider) {
        Ok(p) => api::perform(ctx, staff, CreateRule(p, body))
            .await
            .map(drop),
        Err(f) => Err(f),
    };
    match made {
        Ok(()) => page::redirect(&format!(
            "/dashboard/payments?notice=rule-created#{provider_name}"
        )),
        Err(f) if f.status == 400 || f.status == 404 => {
            list(ctx, staff, After::Refused(form, &f), Some(&provider_name)).await
        }
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// `POST /dashboard/payments/{provider}/rules/{id}/delete`.
pub(crate) async fn delete_rule(ctx: &Ctx, staff: &Staff, provider: &str, id: &str) -> Response {
    let op = provider_of(provider).and_then(|p| Ok(DeleteRule(p, page::id_of(id, "rule")?)));
    page::done(ctx, staff, op, "/dashboard/payments?notice=rule-deleted").await
}

/// `POST /dashboard/payments/events/{id}/replay`.
pub(crate) async fn replay(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let outcome = async {
        let id = page::id_of(id, "event")?;
        let replayed = api::perform(ctx, staff, ReplayInboundEvent(id)).await?;
        Ok(page::redirect(&format!(
            "/dashboard/payments?notice=event-replayed-{}#events",
            replayed.status.as_str()
        )))
    };
    page::or_failure(ctx, staff, outcome.await)
}

/// `GET /dashboard/payments/{provider}/delete`: the confirmation.
pub(crate) async fn confirm_delete(ctx: &Ctx, staff: &Staff, provider: &str) -> Response {
    let outcome = async {
        let p = provider_of(provider)?;
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::Payments,
                title: t("payments-remove-integration"),
                what: html! {
                    (tm("payments-secrets-rules-deleted-title-s", &[("title", html! { (p.title()) })]))
                },
                action: format!("/dashboard/payments/{}/delete", p.as_str()),
                button: t("payments-remove-integration-2"),
                back: "/dashboard/payments".to_owned(),
            },
        ))
    };
    page::answer(ctx, staff, None, outcome.await)
}

/// `POST /dashboard/payments/{provider}/delete`.
pub(crate) async fn delete(ctx: &Ctx, staff: &Staff, provider: &str) -> Response {
    let op = provider_of(provider).map(DeleteIntegration);
    page::done(
        ctx,
        staff,
        op,
        "/dashboard/payments?notice=integration-deleted",
    )
    .await
}

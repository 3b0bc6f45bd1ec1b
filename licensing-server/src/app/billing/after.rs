//! What follows a purchase: a renewal moves the expiry; a failed payment, a cancellation, an
//! end, a refund or a dispute does what the license's rule says.

use licensing_core::api::requests::{LicenseUpdate, Patch};

use super::*;
use crate::app::licenses::{DeleteLicense, UpdateLicense};

/// A renewal (or another event of a purchase whose license exists): the expiry moves to the
/// later of its date and the new period's end.
pub(super) async fn renew(
    cx: &Cx,
    integration: &Integration,
    event: &PaymentEvent,
    base: &InboundEvent,
    subjects: &[String],
    link: &PaymentLink,
    license: License,
) -> Result<Done, ApiError> {
    let mut end = event.period_end;
    if end.is_none()
        && event.kind == PaymentKind::Renewal
        && event.provider == Provider::LemonSqueezy
        && let Some(subscription) = &event.subscription_id
    {
        let Some(key) = api_key(cx, integration)? else {
            return Ok(Done::Skipped(
                needs_key("the subscription's renewal date"),
                Some(license.id),
            ));
        };
        end = cx
            .state
            .providers
            .lemonsqueezy_renews_at(&key, subscription)
            .await
            .map_err(|e| ApiError::internal_because("reading the subscription", e))?;
    }
    let lift = license.suspended
        && rule_of(integration, link)
            .is_some_and(|r| r.on_payment_failed == OnPaymentFailed::Suspend)
        && event.kind == PaymentKind::Renewal;
    let current = dated(&license);
    let later = end.filter(|end| {
        current.is_none_or(|c| *end > c) || license.expiration_type != ExpirationType::Date
    });
    if later.is_none() && !lift {
        let reason = match current {
            Some(c) => format!("the license runs to {c} already"),
            None => "the purchase's license exists: nothing to change".to_owned(),
        };
        return kept(
            cx,
            event,
            InboundEvent {
                reason: Some(reason),
                ..base.clone()
            },
            subjects,
            link,
        )
        .await;
    }
    let mut body = LicenseUpdate::default();
    let mut said = Vec::new();
    if let Some(end) = later {
        body.expiration_type = Patch::Value("DATE".into());
        body.expiration_date = Patch::Value(end.to_string());
        said.push(format!("expiry moved to {end}"));
    }
    if lift {
        body.suspended = Patch::Value(false);
        said.push("suspension lifted (the rule suspends on a failed payment)".to_owned());
    }
    let record = InboundEvent {
        reason: Some(said.join("; ")),
        ..base.clone()
    };
    let mark = advance(cx, event, &record, subjects, link);
    let applied = mark.event.clone();
    effect(cx, mark, UpdateLicense(license.id, body)).await?;
    Ok(Done::Applied(applied))
}

/// What a failed payment, a cancellation, an end, a refund or a dispute does, by the rule.
enum Change {
    Keep(&'static str),
    Suspend,
    Delete,
    EndBy(Timestamp),
}

pub(super) async fn change(
    cx: &Cx,
    integration: &Integration,
    event: &PaymentEvent,
    base: &InboundEvent,
    subjects: &[String],
    link: &PaymentLink,
    license: License,
) -> Result<Done, ApiError> {
    let rule = rule_of(integration, link);
    let on_failed = rule.map_or(OnPaymentFailed::default(), |r| r.on_payment_failed);
    let on_cancel = rule.map_or(OnCancel::default(), |r| r.on_cancel);
    let on_refund = rule.map_or(OnRefund::default(), |r| r.on_refund);
    let occurred = event.occurred_at.unwrap_or(cx.now);
    let what = match event.kind {
        PaymentKind::PaymentFailed => match on_failed {
            OnPaymentFailed::Keep => Change::Keep(
                "payment failed: kept as the rule says (it runs to its date, then the policy's grace)",
            ),
            OnPaymentFailed::Suspend => Change::Suspend,
        },
        PaymentKind::Cancelled => match (on_cancel, event.period_end) {
            (OnCancel::PeriodEnd, Some(end)) => Change::EndBy(end),
            (OnCancel::PeriodEnd, None) => {
                Change::Keep("cancelled: it ends with the period paid for")
            }
            (OnCancel::Now, _) => Change::Suspend,
        },
        PaymentKind::Ended => match on_cancel {
            OnCancel::PeriodEnd => Change::EndBy(occurred),
            OnCancel::Now => Change::Suspend,
        },
        PaymentKind::Refunded | PaymentKind::Disputed => match on_refund {
            OnRefund::Suspend => Change::Suspend,
            OnRefund::Delete => Change::Delete,
            OnRefund::Keep => Change::Keep("refunded: kept as the rule says"),
        },
        PaymentKind::Purchase | PaymentKind::Renewal | PaymentKind::Ignored => {
            return skipped("nothing to change");
        }
    };
    let record = |reason: String| InboundEvent {
        reason: Some(reason),
        ..base.clone()
    };
    match what {
        Change::Keep(reason) => kept(cx, event, record(reason.to_owned()), subjects, link).await,
        Change::Suspend if license.suspended => {
            kept(
                cx,
                event,
                record("the license is suspended already".into()),
                subjects,
                link,
            )
            .await
        }
        Change::Suspend => {
            let mark = advance(
                cx,
                event,
                &record(format!("{}: license suspended", event.kind_name)),
                subjects,
                link,
            );
            let applied = mark.event.clone();
            let body = LicenseUpdate {
                suspended: Patch::Value(true),
                // Within the reason's 500 characters whatever the provider's names.
                suspension_reason: Patch::Value(
                    format!(
                        "{} event {} ({})",
                        event.provider, event.kind_name, event.id
                    )
                    .chars()
                    .take(licensing_core::model::MAX_SUSPENSION_REASON)
                    .collect(),
                ),
                ..LicenseUpdate::default()
            };
            effect(cx, mark, UpdateLicense(license.id, body)).await?;
            Ok(Done::Applied(applied))
        }
        Change::Delete => {
            let mark = advance(
                cx,
                event,
                &record(format!("{}: license deleted", event.kind_name)),
                subjects,
                link,
            );
            let applied = mark.event.clone();
            effect(cx, mark, DeleteLicense(license.id)).await?;
            Ok(Done::Applied(applied))
        }
        Change::EndBy(end) => {
            // An end already past is now: the first moment the API takes.
            let end = end.max(cx.now.plus_seconds(1));
            if dated(&license).is_some_and(|c| c <= end) {
                let reason = format!("{}: the license ends by {end} already", event.kind_name);
                return kept(cx, event, record(reason), subjects, link).await;
            }
            let mark = advance(
                cx,
                event,
                &record(format!("{}: the license ends at {end}", event.kind_name)),
                subjects,
                link,
            );
            let applied = mark.event.clone();
            let body = LicenseUpdate {
                expiration_type: Patch::Value("DATE".into()),
                expiration_date: Patch::Value(end.to_string()),
                ..LicenseUpdate::default()
            };
            effect(cx, mark, UpdateLicense(license.id, body)).await?;
            Ok(Done::Applied(applied))
        }
    }
}

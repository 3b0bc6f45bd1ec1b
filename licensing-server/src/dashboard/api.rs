//! The dashboard's way to the operations: each page performs them as the signed-in staff
//! member, and shows what went wrong as a [`Failure`].

use crate::dashboard::words::t;
use licensing_core::ApiError;
use licensing_core::api::requests::ProductListQuery;
use licensing_core::error::FieldError;
use licensing_core::model::Product;
use licensing_core::store::{Page, StoreError};

use super::{Ctx, Staff};
use crate::app::products::ListProducts;
use crate::app::{Caller, Cx, Run};

/// Why an operation did not succeed, in the words of its error.
#[derive(Clone, Debug)]
pub(crate) struct Failure {
    /// The HTTP status.
    pub(crate) status: u16,
    /// The API's `result.details`.
    pub(crate) details: String,
    /// The field problems of a validation error.
    pub(crate) fields: Vec<FieldError>,
}

impl Failure {
    /// A failure with `status` and `details`.
    pub(crate) fn new(status: u16, details: impl Into<String>) -> Self {
        Self {
            status,
            details: details.into(),
            fields: Vec::new(),
        }
    }

    /// The heading of its page.
    pub(crate) fn title(&self) -> &'static str {
        match self.status {
            400 => t("api-did-not-work"),
            401 | 403 => t("api-not-allowed"),
            404 => "Not found",
            409 => t("api-conflict"),
            413 => t("api-too-large"),
            429 => t("api-too-many-attempts"),
            _ => t("api-something-went-wrong"),
        }
    }

    /// One sentence for the top of a form.
    pub(crate) fn summary(&self) -> String {
        if self.fields.is_empty() {
            self.details.clone()
        } else {
            t("api-nothing-was-saved-please-correct").to_owned()
        }
    }

    /// The message for `field`, if it has a problem.
    pub(crate) fn field(&self, field: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|e| e.field == field)
            .map(|e| e.message.as_str())
    }
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        crate::http::log_cause(&e);
        let details = if e.status() >= 500 {
            t("api-server-could-not-do-just").to_owned()
        } else {
            e.details().to_owned()
        };
        let fields = e
            .field_errors()
            .iter()
            .map(|f| FieldError {
                field: f.field.clone(),
                message: in_words(&f.message),
            })
            .collect();
        Self {
            status: e.status(),
            details,
            fields,
        }
    }
}

/// A field's message as a person reads it: the API names other fields and values
/// ("is required when expirationType is DURATION"); the form calls them as its labels do ("is
/// required when the license expires after a duration").
fn in_words(message: &str) -> String {
    let message = message
        .replace("expirationType is NEVER", t("api-license-never-expires"))
        .replace("expirationType is DATE", t("api-license-expires-date"))
        .replace(
            "expirationType is DURATION",
            t("api-license-expires-after-duration"),
        )
        .replace("ACTIVATION", t("api-counting-from-first-use"));
    message
        .split(' ')
        .map(|word| {
            let bare = word.trim_end_matches([',', '.', ':', ';', ')']);
            let camel = bare.starts_with(|c: char| c.is_ascii_lowercase())
                && bare.chars().any(|c| c.is_ascii_uppercase())
                && bare.chars().all(|c| c.is_ascii_alphanumeric());
            if camel {
                let words = field_words(bare).to_lowercase();
                format!("{words}{}", &word[bare.len()..])
            } else {
                word.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        crate::http::store_error(e).into()
    }
}

/// The context of the signed-in staff member's operations, for their team.
pub(crate) fn cx(ctx: &Ctx, staff: &Staff) -> Cx {
    Cx::new(
        ctx.state.clone(),
        staff.user.team_id,
        Caller::staff(&staff.user),
        ctx.now,
        ctx.client,
    )
}

/// Performs `op` as the signed-in staff member, for their team.
pub(crate) async fn perform<O: Run>(ctx: &Ctx, staff: &Staff, op: O) -> Result<O::Output, Failure> {
    cx(ctx, staff).perform(op).await.map_err(Failure::from)
}

/// The team's first hundred products in the list's default order: the names, filters and
/// choices of the dashboard's pages.
pub(crate) async fn all_products(ctx: &Ctx, staff: &Staff) -> Result<Page<Product>, Failure> {
    let mut query = ProductListQuery::default();
    query.paging.page_size = 100;
    perform(ctx, staff, ListProducts(query)).await
}

/// A field of the API in a person's words, as its form labels it: `hwidLimit` is "Device limit";
/// a field without a label of its own has its name split into words (`expirationDate`:
/// "Expiration date").
pub(crate) fn field_words(field: &str) -> String {
    let known = match field {
        "hwidLimit" => t("api-device-limit"),
        "ipLimit" => t("api-address-limit"),
        "customerIds" => t("api-customers"),
        "productIds" => t("api-products"),
        "entitlementIds" => t("api-entitlements"),
        "expirationDays" => t("api-days"),
        "expirationType" => t("api-expiration"),
        "email" => t("api-e-mail-address"),
        "url" => t("api-address"),
        "eventTypes" => t("api-events"),
        "ipAddress" => t("api-ip-address"),
        "hardwareIdentifier" => t("api-device"),
        _ => "",
    };
    if !known.is_empty() {
        return known.to_owned();
    }
    let mut words = String::with_capacity(field.len() + 4);
    for (i, c) in field.chars().enumerate() {
        if i == 0 {
            words.extend(c.to_uppercase());
        } else if c.is_ascii_uppercase() {
            words.push(' ');
            words.push(c.to_ascii_lowercase());
        } else if c == '_' || c == '.' || c == '[' {
            words.push(' ');
        } else if c != ']' {
            words.push(c);
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::in_words;

    #[test]
    fn messages_name_fields_and_values_as_the_forms_do() {
        assert_eq!(
            in_words("is required when expirationType is DURATION"),
            "is required when the license expires after a duration"
        );
        assert_eq!(
            in_words("must not exceed hwidLimit, ipLimit."),
            "must not exceed device limit, address limit."
        );
        assert_eq!(in_words("must be 1 to 3650"), "must be 1 to 3650");
    }
}

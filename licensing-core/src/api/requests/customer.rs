use serde::{Deserialize, Serialize};

use super::{Patch, RawMetadata, finish, metadata, not_null, parse_json};
use crate::error::{ApiError, Validator};
use crate::model::{Address, ChatAccount, Customer, MetadataItem};
use crate::validate::{ChatId, Email, text};
use crate::{ChatAccountId, CustomerId, TeamId, Timestamp, UserId};

/// The customer body of `PUT {dev}/customers/{id}` and (ext) `POST {dev}/customers`.
#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"email": "jane@example.com", "fullName": "Jane Doe", "username": "jane", "address": {"city": "Helsinki", "country": "Finland"}, "metadata": [{"key": "vip", "value": "yes"}]})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CustomerBody {
    /// `email`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub email: Patch<String>,
    /// `fullName`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub full_name: Patch<String>,
    /// `username`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub username: Patch<String>,
    /// `chatId`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub chat_id: Patch<String>,
    /// `metadata`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<RawMetadata>>))]
    pub metadata: Patch<Vec<RawMetadata>>,
    /// `address`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Address>))]
    pub address: Patch<Address>,
}

/// (ext) `POST {dev}/customers/{customerId}/portal-sessions`: an empty body signs the customer
/// in to see all of their licenses, `licenseId` to see that one only.
#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"licenseId": "4f8c2a70-3a44-4c57-9d7e-0b1f5d2c9e11"})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PortalSessionBody {
    /// `licenseId`: one of the customer's licenses, the only one the session sees.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub license_id: Option<String>,
}

impl PortalSessionBody {
    /// The license the link is for, if the body names one (400 when it is not an id).
    pub fn validate(self) -> Result<Option<crate::LicenseId>, ApiError> {
        let mut v = Validator::new();
        let license = v.optional("licenseId", self.license_id, |t| {
            t.parse::<crate::LicenseId>()
                .map_err(|_| "must be a license id (a UUID)")
        });
        finish(v)?;
        Ok(license.flatten())
    }
}

/// A validated customer body: each member left out, cleared, or set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CustomerInput {
    /// E-mail address.
    pub email: Patch<Email>,
    /// Full name.
    pub full_name: Patch<String>,
    /// User name.
    pub username: Patch<String>,
    /// Chat user id; the server may look the user up to fill the account's names.
    pub chat_id: Patch<ChatId>,
    /// Metadata (replaces all items when given).
    pub metadata: Option<Vec<MetadataItem>>,
    /// Address (replaces it when given; `null` clears it).
    pub address: Patch<Address>,
}

fn patch_text<T>(
    v: &mut Validator,
    field: &str,
    raw: Patch<String>,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Patch<T> {
    match raw {
        Patch::Missing => Patch::Missing,
        Patch::Null => Patch::Null,
        Patch::Value(t) => v
            .check(field, parse(&t))
            .map_or(Patch::Missing, Patch::Value),
    }
}

fn address(v: &mut Validator, a: Address) -> Address {
    let mut part = |name: &str, value: Option<String>| {
        value.and_then(|t| v.check(&format!("address.{name}"), text(&t, 0, 255)))
    };
    Address {
        street: part("street", a.street),
        city: part("city", a.city),
        state: part("state", a.state),
        country: part("country", a.country),
        postal_code: part("postalCode", a.postal_code),
    }
}

impl CustomerBody {
    /// Parses and validates the body.
    pub fn parse(body: &[u8]) -> Result<CustomerInput, ApiError> {
        parse_json::<Self>(body)?.validate()
    }

    /// Validates the body (every field problem at once).
    pub fn validate(self) -> Result<CustomerInput, ApiError> {
        let raw = self;
        let mut v = Validator::new();
        let input = CustomerInput {
            email: patch_text(&mut v, "email", raw.email, Email::parse),
            full_name: patch_text(&mut v, "fullName", raw.full_name, |t| text(t, 1, 255)),
            username: patch_text(&mut v, "username", raw.username, |t| text(t, 1, 255)),
            chat_id: patch_text(&mut v, "chatId", raw.chat_id, ChatId::parse),
            metadata: not_null(&mut v, "metadata", raw.metadata)
                .map(|m| metadata(&mut v, "metadata", m)),
            address: match raw.address {
                Patch::Value(a) => Patch::Value(address(&mut v, a)),
                Patch::Null => Patch::Null,
                Patch::Missing => Patch::Missing,
            },
        };
        finish(v)?;
        Ok(input)
    }
}

fn apply<T: Clone>(slot: &mut Option<T>, patch: &Patch<T>) {
    match patch {
        Patch::Missing => {}
        Patch::Null => *slot = None,
        Patch::Value(v) => *slot = Some(v.clone()),
    }
}

impl CustomerInput {
    /// The customer after this update.
    pub fn apply_to(&self, existing: &Customer, now: Timestamp) -> Result<Customer, ApiError> {
        let mut next = existing.clone();
        apply(&mut next.email, &self.email);
        apply(&mut next.full_name, &self.full_name);
        apply(&mut next.username, &self.username);
        if let Some(items) = &self.metadata {
            next.metadata = items.clone();
        }
        match &self.address {
            Patch::Missing => {}
            Patch::Null => next.address = Address::default(),
            Patch::Value(a) => next.address = a.clone(),
        }
        match &self.chat_id {
            Patch::Missing => {}
            Patch::Null => next.chat_account = None,
            Patch::Value(chat_id) => {
                let same = existing
                    .chat_account
                    .as_ref()
                    .filter(|a| &a.chat_id == chat_id);
                next.chat_account = Some(match same {
                    Some(account) => account.clone(),
                    None => ChatAccount {
                        id: ChatAccountId::new(),
                        customer_id: existing.id,
                        chat_id: chat_id.clone(),
                        username: None,
                        avatar: None,
                        global_name: None,
                        created_at: now,
                        updated_at: now,
                    },
                });
            }
        }
        Self::check_identity(&next)?;
        next.updated_at = now;
        Ok(next)
    }

    /// A new customer from this body.
    pub fn into_new(
        &self,
        team_id: TeamId,
        by: UserId,
        now: Timestamp,
    ) -> Result<Customer, ApiError> {
        let blank = Customer {
            id: CustomerId::new(),
            email: None,
            full_name: None,
            username: None,
            metadata: Vec::new(),
            address: Address::default(),
            chat_account: None,
            team_id,
            created_by_user_id: by,
            created_at: now,
            updated_at: now,
        };
        self.apply_to(&blank, now)
    }

    fn check_identity(c: &Customer) -> Result<(), ApiError> {
        if c.email.is_none() && c.full_name.is_none() && c.username.is_none() {
            return Err(ApiError::bad_field(
                "email",
                "a customer needs at least one of email, fullName or username",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::problems;
    use super::*;

    fn now() -> Timestamp {
        Timestamp::parse("2026-11-22T10:00:00Z").unwrap()
    }

    fn new(body: &str) -> Result<Customer, ApiError> {
        CustomerBody::parse(body.as_bytes())?.into_new(TeamId::new(), UserId::ADMIN, now())
    }

    #[test]
    fn create_and_update() {
        let c = new(r#"{"email":"jane@example.com","fullName":"Jane Doe","chatId":"123456789012345678",
                        "address":{"city":"Helsinki","postalCode":"00100"},"metadata":[{"key":"tier","value":"gold"}]}"#)
        .unwrap();
        assert_eq!(c.email.as_ref().unwrap().as_str(), "jane@example.com");
        assert_eq!(c.address.city.as_deref(), Some("Helsinki"));
        let account = c.chat_account.clone().unwrap();
        assert_eq!(
            (account.customer_id, account.chat_id.as_str()),
            (c.id, "123456789012345678")
        );

        let input =
            CustomerBody::parse(br#"{"username":"jdoe","fullName":null,"address":null}"#).unwrap();
        let u = input.apply_to(&c, now().plus_days(1)).unwrap();
        assert_eq!(u.username.as_deref(), Some("jdoe"));
        assert_eq!(u.full_name, None);
        assert!(u.address.is_empty());
        assert_eq!(u.email, c.email, "left out: kept");
        assert_eq!(u.chat_account, c.chat_account, "same chat account");
        let input = CustomerBody::parse(br#"{"chatId":null}"#).unwrap();
        assert_eq!(input.apply_to(&c, now()).unwrap().chat_account, None);
    }

    #[test]
    fn a_customer_needs_some_identity() {
        let e = new("{}").unwrap_err();
        assert_eq!(
            problems(&e),
            [(
                "email".into(),
                "a customer needs at least one of email, fullName or username".into()
            )]
        );
    }

    #[test]
    fn rules_name_the_field() {
        let cases: &[(&str, &str, &str)] = &[
            (
                r#"{"email":"not-an-email"}"#,
                "email",
                "must be an e-mail address such as jane@example.com",
            ),
            (
                r#"{"email":"a@b.c","fullName":""}"#,
                "fullName",
                "must be 1 to 255 characters long (got 0)",
            ),
            (
                r#"{"email":"a@b.c","username":"a\u0000b"}"#,
                "username",
                "must not contain control characters",
            ),
            (
                r#"{"email":"a@b.c","chatId":"1234"}"#,
                "chatId",
                "must be 17 to 19 digits",
            ),
            (
                r#"{"email":"a@b.c","metadata":null}"#,
                "metadata",
                "must not be null",
            ),
            (
                r#"{"email":"a@b.c","address":{"zip":"1"}}"#,
                "address.zip",
                "is not a known member (unknown field `zip`, expected one of `street`, `city`, `state`, `country`, `postalCode`)",
            ),
        ];
        for (body, field, message) in cases {
            let e = new(body).unwrap_err();
            assert_eq!(
                problems(&e),
                [(field.to_string(), message.to_string())],
                "{body}"
            );
        }
        let long = format!(
            r#"{{"email":"a@b.c","address":{{"street":"{}"}}}}"#,
            "s".repeat(256)
        );
        assert_eq!(
            problems(&new(&long).unwrap_err()),
            [(
                "address.street".into(),
                "must be at most 255 characters long (got more than 255)".into()
            )]
        );
    }
}

//! OpenAPI schemas (feature `openapi`) of the types whose JSON form is written by hand: ids,
//! timestamps, license keys and checked text. (`Patch` members are described as their
//! value type, nullable.) The other API types derive
//! `utoipa::ToSchema` next to their serde derives.

use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type};

/// A string schema with an optional format and pattern, a description and an example.
pub fn string_schema(
    format: Option<KnownFormat>,
    pattern: Option<&str>,
    description: &str,
    example: &str,
) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(format.map(SchemaFormat::KnownFormat))
        .pattern(pattern)
        .description(Some(description))
        .examples([serde_json::Value::from(example)])
        .into()
}

/// Implements `PartialSchema` and `ToSchema` for a type serialized as a string.
#[macro_export]
#[doc(hidden)]
macro_rules! string_schema {
    ($type:ty, $name:expr, $format:expr, $pattern:expr, $description:expr, $example:expr) => {
        impl utoipa::PartialSchema for $type {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                $crate::openapi::string_schema($format, $pattern, $description, $example)
            }
        }

        impl utoipa::ToSchema for $type {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed($name)
            }
        }
    };
}

string_schema!(
    crate::Timestamp,
    "Timestamp",
    Some(KnownFormat::DateTime),
    None,
    "UTC date-time with milliseconds",
    "2026-11-22T10:00:00.000Z"
);
string_schema!(
    crate::LicenseKey,
    "LicenseKey",
    None,
    Some("^[A-Z0-9]{5}(-[A-Z0-9]{5}){4}$"),
    "License key: five groups of five upper-case letters or digits",
    "ABCDE-12345-FGHIJ-67890-KLMNO"
);

#[cfg(test)]
mod tests {
    use utoipa::{PartialSchema, ToSchema};

    use crate::model::License;
    use crate::{LicenseId, LicenseKey, Timestamp};

    fn json<T: PartialSchema>() -> serde_json::Value {
        serde_json::to_value(T::schema()).unwrap()
    }

    #[test]
    fn hand_serialized_types_describe_their_strings() {
        assert_eq!(
            json::<LicenseKey>()["pattern"],
            "^[A-Z0-9]{5}(-[A-Z0-9]{5}){4}$"
        );
        assert_eq!(json::<Timestamp>()["format"], "date-time");
        assert_eq!(json::<LicenseId>()["format"], "uuid");
        assert_eq!(LicenseId::name(), "LicenseId");
    }

    #[test]
    fn derived_schemas_use_the_wire_names() {
        let license = json::<License>();
        let properties = license["properties"].as_object().unwrap();
        for member in [
            "licenseKey",
            "ipLimit",
            "hwidLimit",
            "expirationType",
            "lastActiveAt",
        ] {
            assert!(properties.contains_key(member), "{member}: {license}");
        }
    }
}

//! (ext) Entitlements: named features a license grants, directly or through its products.

use serde::{Deserialize, Serialize};

use super::MetadataItem;
use crate::{EntitlementId, TeamId, Timestamp};

/// The most entitlements a team may define.
pub const MAX_ENTITLEMENTS: usize = 1_000;

/// The most entitlement codes a client request may ask for.
pub const MAX_REQUESTED_ENTITLEMENTS: usize = 100;

/// A feature a license may grant, named by an immutable `code` (`PRO_EXPORT`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Entitlement {
    /// Id.
    pub id: EntitlementId,
    /// Name, 1 to 255 characters.
    pub name: String,
    /// Code: 1 to 64 of `A-Z`, `0-9` and `_`, starting with a letter; unique in the team and
    /// never changed.
    #[cfg_attr(feature = "openapi", schema(example = "PRO_EXPORT"))]
    pub code: String,
    /// Metadata items.
    pub metadata: Vec<MetadataItem>,
    /// Owning team.
    pub team_id: TeamId,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// Checks an entitlement code: 1 to 64 of `A-Z`, `0-9` and `_`, starting with a letter.
pub fn entitlement_code(text: &str) -> Result<String, String> {
    let well_formed = (1..=64).contains(&text.len())
        && text.as_bytes()[0].is_ascii_uppercase()
        && text
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if well_formed {
        Ok(text.to_owned())
    } else {
        Err("must be 1 to 64 of A-Z, 0-9 and _, starting with a letter (such as PRO_EXPORT)".into())
    }
}

/// The codes a license grants: those of `own` and of `products`' entitlement ids, looked up in
/// `codes` (ids that name no entitlement grant nothing), sorted and each once.
pub fn effective_codes<'a>(
    own: &[EntitlementId],
    products: impl IntoIterator<Item = &'a [EntitlementId]>,
    code_of: impl Fn(EntitlementId) -> Option<&'a str>,
) -> Vec<String> {
    let mut codes: Vec<&str> = own
        .iter()
        .copied()
        .chain(products.into_iter().flatten().copied())
        .filter_map(code_of)
        .collect();
    codes.sort_unstable();
    codes.dedup();
    codes.into_iter().map(str::to_owned).collect()
}

/// The codes of `requested` that `granted` (sorted) lacks, in request order.
pub fn missing_codes<'a>(requested: &'a [String], granted: &[String]) -> Vec<&'a str> {
    requested
        .iter()
        .filter(|code| granted.binary_search(code).is_err())
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_upper_case_letters_digits_and_underscores_starting_with_a_letter() {
        for good in ["A", "PRO_EXPORT", "X1", &"A".repeat(64)] {
            assert!(entitlement_code(good).is_ok(), "{good}");
        }
        for bad in ["", "pro", "1ABC", "_A", "A-B", "A B", "Ä", &"A".repeat(65)] {
            assert!(entitlement_code(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn effective_codes_merge_the_license_and_its_products_sorted_once() {
        let (a, b, c, gone) = (
            EntitlementId::new(),
            EntitlementId::new(),
            EntitlementId::new(),
            EntitlementId::new(),
        );
        let code_of = |id: EntitlementId| {
            [(a, "EXPORT"), (b, "API"), (c, "SSO")]
                .into_iter()
                .find(|(i, _)| *i == id)
                .map(|(_, code)| code)
        };
        let p1 = vec![b, c];
        let p2 = vec![a];
        let codes = effective_codes(&[a, gone], [p1.as_slice(), p2.as_slice()], code_of);
        assert_eq!(codes, ["API", "EXPORT", "SSO"]);
        let requested = vec!["SSO".to_owned(), "ZED".into(), "API".into(), "AUDIT".into()];
        assert_eq!(missing_codes(&requested, &codes), ["ZED", "AUDIT"]);
    }
}

//! What an API key (or a staff member's role) may do: scopes per resource (read or write), and
//! optionally the products it is restricted to. Written as `resource:read`, `resource:write`,
//! `resource:*` (every scope of the resource), or `*` (everything). Write includes read.
//!
//! Licenses have four narrower scopes besides: `licenses:devices` (forget and restore a license's
//! hardware identifiers and addresses), `licenses:suspend` (suspend and unsuspend),
//! `licenses:extend` (move the expiry later) and `licenses:email` (send the key to the license's
//! customers again), which a support desk needs without being able to create, change or delete
//! licenses. Each includes `licenses:read`; `licenses:write` includes them all.

use std::collections::BTreeSet;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ProductId;

/// A kind of record the developer API manages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    /// Licenses and their hardware identifiers and addresses.
    Licenses,
    /// Customers.
    Customers,
    /// Products and their branches.
    Products,
    /// Releases and their files.
    Releases,
    /// The blacklist.
    Blacklist,
    /// The team's settings.
    Settings,
    /// Statistics (read only).
    Statistics,
    /// API keys.
    ApiKeys,
    /// The audit log (read only).
    AuditLog,
    /// Webhook endpoints and their delivery log.
    Webhooks,
    /// (ext) Entitlements.
    Entitlements,
    /// (ext) Policies.
    Policies,
    /// (ext) Payment integrations: their settings, rules and received events.
    Integrations,
    /// (ext) Licenses' usage counters: read them, adjust and reset them.
    Usage,
}

impl Resource {
    /// Every resource.
    pub const ALL: [Resource; 14] = [
        Resource::Licenses,
        Resource::Customers,
        Resource::Products,
        Resource::Releases,
        Resource::Blacklist,
        Resource::Settings,
        Resource::Statistics,
        Resource::ApiKeys,
        Resource::AuditLog,
        Resource::Webhooks,
        Resource::Entitlements,
        Resource::Policies,
        Resource::Integrations,
        Resource::Usage,
    ];

    /// The name in scope strings.
    pub fn as_str(self) -> &'static str {
        match self {
            Resource::Licenses => "licenses",
            Resource::Customers => "customers",
            Resource::Products => "products",
            Resource::Releases => "releases",
            Resource::Blacklist => "blacklist",
            Resource::Settings => "settings",
            Resource::Statistics => "statistics",
            Resource::ApiKeys => "api-keys",
            Resource::AuditLog => "audit-log",
            Resource::Webhooks => "webhooks",
            Resource::Entitlements => "entitlements",
            Resource::Policies => "policies",
            Resource::Integrations => "integrations",
            Resource::Usage => "usage",
        }
    }

    /// Whether the resource has a write scope (statistics and the audit log are only read).
    pub fn writable(self) -> bool {
        !matches!(self, Resource::Statistics | Resource::AuditLog)
    }

    fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

/// Read, write, or one of the narrower changes licenses have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Access {
    /// Read.
    Read,
    /// Create, change and delete (includes read and the narrower changes).
    Write,
    /// Licenses only: forget and restore hardware identifiers and addresses (includes read).
    Devices,
    /// Licenses only: suspend and unsuspend (includes read).
    Suspend,
    /// Licenses only: move the expiry later (includes read).
    Extend,
    /// Licenses only: e-mail the key to the license's customers again (includes read).
    Email,
}

impl Access {
    /// The name in scope strings.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Devices => "devices",
            Access::Suspend => "suspend",
            Access::Extend => "extend",
            Access::Email => "email",
        }
    }
}

/// One scope, such as `licenses:read`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scope {
    /// The resource.
    pub resource: Resource,
    /// The access.
    pub access: Access,
}

impl Scope {
    /// `resource:read`.
    pub const fn read(resource: Resource) -> Self {
        Self {
            resource,
            access: Access::Read,
        }
    }

    /// `resource:write`.
    pub const fn write(resource: Resource) -> Self {
        Self {
            resource,
            access: Access::Write,
        }
    }

    /// `licenses:devices`: forget and restore a license's hardware identifiers and addresses.
    pub const LICENSE_DEVICES: Scope = Scope {
        resource: Resource::Licenses,
        access: Access::Devices,
    };

    /// `licenses:suspend`: suspend and unsuspend a license.
    pub const LICENSE_SUSPEND: Scope = Scope {
        resource: Resource::Licenses,
        access: Access::Suspend,
    };

    /// `licenses:extend`: move a license's expiry later.
    pub const LICENSE_EXTEND: Scope = Scope {
        resource: Resource::Licenses,
        access: Access::Extend,
    };

    /// `licenses:email`: e-mail a license's key to its customers again.
    pub const LICENSE_EMAIL: Scope = Scope {
        resource: Resource::Licenses,
        access: Access::Email,
    };

    /// Every scope there is, in order.
    pub fn all() -> impl Iterator<Item = Scope> {
        Resource::ALL.into_iter().flat_map(Scope::of)
    }

    /// Every scope of `resource`: read, and write with the narrower changes where it has them.
    fn of(resource: Resource) -> Vec<Scope> {
        let mut scopes = vec![Scope::read(resource)];
        if resource.writable() {
            scopes.push(Scope::write(resource));
        }
        if resource == Resource::Licenses {
            scopes.extend([
                Scope::LICENSE_DEVICES,
                Scope::LICENSE_SUSPEND,
                Scope::LICENSE_EXTEND,
                Scope::LICENSE_EMAIL,
            ]);
        }
        scopes
    }

    /// Whether holding this scope grants `other`: itself; write grants every scope of its
    /// resource; every scope grants its resource's read.
    pub fn grants(self, other: Scope) -> bool {
        self == other
            || (self.resource == other.resource
                && (self.access == Access::Write || other.access == Access::Read))
    }

    /// The scope as text, such as `licenses:read`.
    pub fn name(self) -> String {
        format!("{}:{}", self.resource.as_str(), self.access.as_str())
    }

    /// Parses one scope entry: `resource:read`, `resource:write`, `resource:*` or `*`; the
    /// scopes it stands for.
    pub fn parse_entry(text: &str) -> Result<Vec<Scope>, String> {
        if text == "*" {
            return Ok(Scope::all().collect());
        }
        let unknown = || {
            format!(
                "is not a scope: use resource:read, resource:write, resource:* or *, with a resource among {}",
                Resource::ALL.map(Resource::as_str).join(", ")
            )
        };
        let (resource, access) = text.split_once(':').ok_or_else(unknown)?;
        let resource = Resource::parse(resource).ok_or_else(unknown)?;
        match access {
            "*" => Ok(Scope::of(resource)),
            "write" if !resource.writable() => {
                Err(format!("{} can only be read", resource.as_str()))
            }
            _ => Scope::of(resource)
                .into_iter()
                .find(|s| s.access.as_str() == access)
                .map(|s| vec![s])
                .ok_or_else(unknown),
        }
    }

    /// What the scope lets its holder do, in words for a person ("change licenses", "see the
    /// audit log"): for messages that a person reads rather than a program.
    pub fn words(self) -> String {
        let what = match self.resource {
            Resource::Licenses => "licenses",
            Resource::Customers => "customers",
            Resource::Products => "products",
            Resource::Releases => "releases",
            Resource::Blacklist => "the blacklist",
            Resource::Settings => "the team's settings",
            Resource::Statistics => "statistics",
            Resource::ApiKeys => "API keys",
            Resource::AuditLog => "the audit log",
            Resource::Webhooks => "webhooks",
            Resource::Entitlements => "entitlements",
            Resource::Policies => "policies",
            Resource::Integrations => "payment integrations",
            Resource::Usage => "licenses' usage counters",
        };
        match self.access {
            Access::Read => format!("see {what}"),
            Access::Write => format!("create, change or delete {what}"),
            Access::Devices => "forget or restore a license's devices and addresses".to_owned(),
            Access::Suspend => "suspend or unsuspend licenses".to_owned(),
            Access::Extend => "extend licenses".to_owned(),
            Access::Email => "send license keys by e-mail".to_owned(),
        }
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// The scopes of a key: everything (keys made before scopes existed, and a team's first key), or
/// a set. On the wire, a list of scope names; everything is `["*"]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Scopes {
    /// Every scope, including those that later resources add.
    #[default]
    All,
    /// These scopes.
    Only(BTreeSet<Scope>),
}

impl Scopes {
    /// Whether `scope` is granted, by itself or by a scope that grants it (see
    /// [`Scope::grants`]).
    pub fn allows(&self, scope: Scope) -> bool {
        match self {
            Scopes::All => true,
            Scopes::Only(set) => set.iter().any(|held| held.grants(scope)),
        }
    }

    /// Whether these scopes grant everything `other` grants; the first one missing otherwise.
    pub fn missing_from(&self, other: &Scopes) -> Option<String> {
        match (self, other) {
            (Scopes::All, _) => None,
            (Scopes::Only(_), Scopes::All) => Some("*".into()),
            (Scopes::Only(_), Scopes::Only(wanted)) => {
                wanted.iter().find(|s| !self.allows(**s)).map(|s| s.name())
            }
        }
    }

    /// Parses a list of scope entries; an empty list is refused (a key that can do nothing).
    pub fn parse(entries: &[String]) -> Result<Scopes, String> {
        if entries.is_empty() {
            return Err("must name at least one scope (or \"*\" for every scope)".into());
        }
        if entries.iter().any(|e| e == "*") {
            return Ok(Scopes::All);
        }
        let mut set = BTreeSet::new();
        for entry in entries {
            set.extend(Scope::parse_entry(entry).map_err(|e| format!("{entry:?} {e}"))?);
        }
        Ok(Scopes::Only(set))
    }

    /// The scope names, `["*"]` for everything.
    pub fn names(&self) -> Vec<String> {
        match self {
            Scopes::All => vec!["*".into()],
            Scopes::Only(set) => set.iter().map(|s| s.name()).collect(),
        }
    }
}

impl Serialize for Scopes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.names().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Scopes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(deserializer)?;
        Scopes::parse(&names).map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Scopes {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
        let mut names: Vec<String> = Scope::all().map(|s| s.name()).collect();
        names.push("*".into());
        ArrayBuilder::new()
            .items(
                ObjectBuilder::new()
                    .schema_type(SchemaType::Type(Type::String))
                    .enum_values(Some(names)),
            )
            .description(Some(
                "Scopes: resource:read, resource:write (includes read), licenses:devices, \
                 licenses:suspend, licenses:extend and licenses:email (each includes \
                 licenses:read), resource:* for all of a resource's, or \"*\" for every scope",
            ))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Scopes {}

/// A key's product restriction: `None` is every product. It covers the records tied to products
/// (licenses and their devices, products and branches, releases); the other resources are
/// governed by scopes alone.
pub type ProductRestriction = Option<Vec<ProductId>>;

/// Whether a restriction lets a key see a record tied to `products` (at least one of them is
/// among the key's products; a record tied to none is seen only by unrestricted keys).
pub fn sees_products(restriction: &ProductRestriction, products: &[ProductId]) -> bool {
    match restriction {
        None => true,
        Some(allowed) => products.iter().any(|p| allowed.contains(p)),
    }
}

/// How much of a record's history (an audit entry, a webhook event) a principal may see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sight {
    /// All of it.
    Whole,
    /// That it happened, when and by whom, but not the values: the principal may not read
    /// records of its kind.
    Redacted,
    /// Nothing: it is about products outside the principal's restriction.
    Hidden,
}

/// The scopes that reading records of `kind` needs: an audit entry's resource type, or the
/// first part of an event type (`verification` of `verification.blacklisted`, whose data
/// names the license and the blacklist entry). `None` for a kind this server does not know:
/// only principals with every scope see those.
pub fn read_scopes_of(kind: &str) -> Option<&'static [Scope]> {
    use Resource::*;
    const LICENSES: &[Scope] = &[Scope::read(Licenses)];
    const CUSTOMERS: &[Scope] = &[Scope::read(Customers)];
    const PRODUCTS: &[Scope] = &[Scope::read(Products)];
    const RELEASES: &[Scope] = &[Scope::read(Releases)];
    const BLACKLIST: &[Scope] = &[Scope::read(Blacklist)];
    const VERIFICATION: &[Scope] = &[Scope::read(Licenses), Scope::read(Blacklist)];
    const API_KEYS: &[Scope] = &[Scope::read(ApiKeys)];
    const SETTINGS: &[Scope] = &[Scope::read(Settings)];
    const WEBHOOKS: &[Scope] = &[Scope::read(Webhooks)];
    const ENTITLEMENTS: &[Scope] = &[Scope::read(Entitlements)];
    const POLICIES: &[Scope] = &[Scope::read(Policies)];
    const INTEGRATIONS: &[Scope] = &[Scope::read(Integrations)];
    const USAGE: &[Scope] = &[Scope::read(Licenses), Scope::read(Usage)];
    Some(match kind {
        "license" | "device" | "ip" => LICENSES,
        "customer" => CUSTOMERS,
        "product" | "branch" => PRODUCTS,
        "release" => RELEASES,
        "blacklist" => BLACKLIST,
        "verification" => VERIFICATION,
        // Staff accounts are the team's other principals, beside its API keys.
        "api_key" | "staff" => API_KEYS,
        "settings" | "team" | "signing_key" => SETTINGS,
        "webhook" => WEBHOOKS,
        "entitlement" => ENTITLEMENTS,
        "policy" => POLICIES,
        "integration" => INTEGRATIONS,
        "usage" => USAGE,
        _ => return None,
    })
}

/// The kinds of records (see [`read_scopes_of`]) that belong to products.
pub const PRODUCT_TIED_KINDS: &[&str] = &[
    "license",
    "device",
    "ip",
    "product",
    "branch",
    "release",
    "verification",
    "usage",
];

/// Whether records of `kind` belong to products, so that a product-restricted principal sees
/// them only for its products (and not at all when their products are unknown).
pub fn tied_to_products(kind: &str) -> bool {
    PRODUCT_TIED_KINDS.contains(&kind)
}

/// What a principal with `scopes` and `restriction` may see of a record's history of `kind`
/// (see [`read_scopes_of`]) tied to `products` (`None`: to none, or not recorded): what it may
/// read elsewhere in the API, no more.
pub fn sight(
    scopes: &Scopes,
    restriction: &ProductRestriction,
    kind: &str,
    products: Option<&[ProductId]>,
) -> Sight {
    let in_products = match (restriction, products) {
        (None, _) => true,
        (Some(_), Some(products)) => sees_products(restriction, products),
        (Some(_), None) => !tied_to_products(kind),
    };
    if !in_products {
        return Sight::Hidden;
    }
    let readable = match read_scopes_of(kind) {
        Some(needed) => needed.iter().all(|s| scopes.allows(*s)),
        None => *scopes == Scopes::All,
    };
    if readable {
        Sight::Whole
    } else {
        Sight::Redacted
    }
}

/// Why a principal with `own_scopes` and `own_products` (named `who`, as in "this API key") may
/// not create or revoke a key with `scopes` and `products`, if it may not: nobody hands on more
/// access than they have.
pub fn cannot_grant(
    who: &str,
    own_scopes: &Scopes,
    own_products: &ProductRestriction,
    scopes: &Scopes,
    products: &ProductRestriction,
) -> Option<String> {
    if let Some(missing) = own_scopes.missing_from(scopes) {
        return Some(format!(
            "{who} lacks the scope {missing}, so it cannot give it to a new key"
        ));
    }
    match (own_products, products) {
        (None, _) => None,
        (Some(_), None) => Some(format!(
            "{who} is restricted to some products, so a new key must name productIds among them"
        )),
        (Some(own), Some(wanted)) => wanted.iter().find(|p| !own.contains(p)).map(|p| {
            format!("{who} is not allowed product {p}, so it cannot give it to a new key")
        }),
    }
}

/// Whether a restriction lets a key change a record tied to `products` (tied to at least one,
/// and all of them among the key's products).
pub fn covers_products(restriction: &ProductRestriction, products: &[ProductId]) -> bool {
    match restriction {
        None => true,
        Some(allowed) => !products.is_empty() && products.iter().all(|p| allowed.contains(p)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_entries_parse_and_print() {
        assert_eq!(
            Scope::parse_entry("licenses:read").unwrap(),
            [Scope::read(Resource::Licenses)]
        );
        assert_eq!(
            Scope::parse_entry("customers:*").unwrap(),
            [
                Scope::read(Resource::Customers),
                Scope::write(Resource::Customers)
            ]
        );
        assert_eq!(
            Scope::parse_entry("statistics:*").unwrap(),
            [Scope::read(Resource::Statistics)]
        );
        assert!(Scope::parse_entry("statistics:write").is_err());
        for bad in [
            "",
            "licenses",
            "licenses:delete",
            "license:read",
            "LICENSES:read",
        ] {
            assert!(Scope::parse_entry(bad).is_err(), "{bad}");
        }
        for scope in Scope::all() {
            assert_eq!(Scope::parse_entry(&scope.name()).unwrap(), [scope]);
        }
        assert!(Scope::parse_entry("customers:suspend").is_err());
        assert!(Scope::parse_entry("statistics:devices").is_err());
        assert_eq!(
            Scope::parse_entry("licenses:*").unwrap(),
            [
                Scope::read(Resource::Licenses),
                Scope::write(Resource::Licenses),
                Scope::LICENSE_DEVICES,
                Scope::LICENSE_SUSPEND,
                Scope::LICENSE_EXTEND,
                Scope::LICENSE_EMAIL,
            ]
        );
        assert_eq!(Scope::all().count(), 30);
    }

    #[test]
    fn the_narrower_license_scopes_include_read_and_nothing_else() {
        let support =
            Scopes::parse(&["licenses:devices".into(), "licenses:suspend".into()]).unwrap();
        assert!(support.allows(Scope::read(Resource::Licenses)));
        assert!(support.allows(Scope::LICENSE_DEVICES));
        assert!(support.allows(Scope::LICENSE_SUSPEND));
        assert!(!support.allows(Scope::write(Resource::Licenses)));
        assert!(!support.allows(Scope::read(Resource::Customers)));
        let devices = Scopes::parse(&["licenses:devices".into()]).unwrap();
        assert!(!devices.allows(Scope::LICENSE_SUSPEND));
        let extend = Scopes::parse(&["licenses:extend".into()]).unwrap();
        assert!(extend.allows(Scope::read(Resource::Licenses)));
        assert!(!extend.allows(Scope::LICENSE_EMAIL) && !extend.allows(Scope::LICENSE_SUSPEND));
        assert!(
            Scopes::parse(&["licenses:write".into()])
                .unwrap()
                .allows(Scope::LICENSE_EXTEND)
        );
        let writer = Scopes::parse(&["licenses:write".into()]).unwrap();
        assert!(writer.allows(Scope::LICENSE_DEVICES) && writer.allows(Scope::LICENSE_SUSPEND));
        assert_eq!(writer.missing_from(&support), None);
        assert_eq!(
            support.missing_from(&writer).as_deref(),
            Some("licenses:write")
        );
    }

    #[test]
    fn write_grants_read_and_all_grants_everything() {
        let scopes = Scopes::parse(&["licenses:write".into(), "statistics:read".into()]).unwrap();
        assert!(scopes.allows(Scope::read(Resource::Licenses)));
        assert!(scopes.allows(Scope::write(Resource::Licenses)));
        assert!(scopes.allows(Scope::read(Resource::Statistics)));
        assert!(!scopes.allows(Scope::read(Resource::Customers)));
        assert!(Scope::all().all(|s| Scopes::All.allows(s)));
        assert!(Scopes::parse(&[]).is_err());
        assert_eq!(Scopes::parse(&["*".into()]).unwrap(), Scopes::All);
    }

    #[test]
    fn a_key_can_only_hand_on_what_it_has() {
        let reader = Scopes::parse(&["licenses:read".into()]).unwrap();
        let writer = Scopes::parse(&["licenses:*".into()]).unwrap();
        assert_eq!(writer.missing_from(&reader), None);
        assert_eq!(
            reader.missing_from(&writer).as_deref(),
            Some("licenses:write")
        );
        assert_eq!(reader.missing_from(&Scopes::All).as_deref(), Some("*"));
        assert_eq!(Scopes::All.missing_from(&writer), None);
    }

    #[test]
    fn scopes_serialize_as_names() {
        let scopes = Scopes::parse(&["licenses:*".into()]).unwrap();
        let json = serde_json::to_string(&scopes).unwrap();
        assert_eq!(
            json,
            r#"["licenses:read","licenses:write","licenses:devices","licenses:suspend","licenses:extend","licenses:email"]"#
        );
        assert_eq!(serde_json::from_str::<Scopes>(&json).unwrap(), scopes);
        assert_eq!(serde_json::to_string(&Scopes::All).unwrap(), r#"["*"]"#);
    }

    #[test]
    fn product_restrictions() {
        let (a, b, c) = (ProductId::new(), ProductId::new(), ProductId::new());
        let only_a: ProductRestriction = Some(vec![a]);
        assert!(sees_products(&None, &[]));
        assert!(covers_products(&None, &[]));
        assert!(sees_products(&only_a, &[a, b]));
        assert!(!sees_products(&only_a, &[b, c]));
        assert!(!sees_products(&only_a, &[]));
        assert!(covers_products(&only_a, &[a]));
        assert!(!covers_products(&only_a, &[a, b]));
        assert!(!covers_products(&only_a, &[]));
    }
}

//! What an operation's documentation says beyond what its declaration already states: its
//! summary, the parameters' descriptions, what a success is called and each refusal it may
//! answer. The server builds its OpenAPI document from these and the declarations, so the
//! document lists exactly the operations it routes.

/// An operation's documentation.
#[derive(Clone, Copy, Debug)]
pub struct Doc {
    /// The group it is listed under.
    pub tag: &'static str,
    /// One line.
    pub summary: &'static str,
    /// More, or nothing.
    pub description: &'static str,
    /// Its parameters besides `{teamId}`: the path's ids, then the query's.
    pub params: &'static [Param],
    /// What its body is, or nothing (the body's schema says the rest).
    pub body: &'static str,
    /// What a success is.
    pub success: &'static str,
    /// The refusals it may answer, set by set (a later set's answer to a status replaces an
    /// earlier one's).
    pub refusals: &'static [&'static [Refusal]],
}

/// Where a parameter is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum In {
    /// In the path (required).
    Path,
    /// In the query string (optional).
    Query,
}

/// A parameter's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A UUID.
    Uuid,
    /// A string matching a pattern.
    Pattern(&'static str),
    /// Any string.
    Text,
    /// An RFC 3339 time.
    DateTime,
    /// `true` or `false`.
    Boolean,
    /// A 32-bit integer of at least this.
    Integer(i64),
    /// A value of a named schema.
    Schema(&'static str),
}

/// A parameter.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    /// Its name.
    pub name: &'static str,
    /// Where it is.
    pub place: In,
    /// What it is.
    pub description: &'static str,
    /// Its type.
    pub kind: Kind,
}

impl Param {
    /// A path parameter.
    pub const fn path(name: &'static str, description: &'static str, kind: Kind) -> Self {
        Self {
            name,
            place: In::Path,
            description,
            kind,
        }
    }

    /// A query parameter.
    pub const fn query(name: &'static str, description: &'static str, kind: Kind) -> Self {
        Self {
            name,
            place: In::Query,
            description,
            kind,
        }
    }
}

// The parameters that many operations share.

/// `{licenseId}`.
pub const LICENSE_ID: Param = Param::path("licenseId", "The license", Kind::Uuid);
/// `{webhookId}`.
pub const WEBHOOK_ID: Param = Param::path("webhookId", "The endpoint", Kind::Uuid);
/// `{deliveryId}`.
pub const DELIVERY_ID: Param = Param::path("deliveryId", "The delivery", Kind::Uuid);
/// `{productId}`.
pub const PRODUCT_ID: Param = Param::path("productId", "The product", Kind::Uuid);
/// `{customerId}`.
pub const CUSTOMER_ID: Param = Param::path("customerId", "The customer", Kind::Uuid);
/// `{entitlementId}`.
pub const ENTITLEMENT_ID: Param = Param::path("entitlementId", "The entitlement", Kind::Uuid);
/// `{policyId}`.
pub const POLICY_ID: Param = Param::path("policyId", "The policy", Kind::Uuid);
/// `{releaseId}`.
pub const RELEASE_ID: Param = Param::path("releaseId", "The release", Kind::Uuid);
/// `{artifactId}`.
pub const ARTIFACT_ID: Param = Param::path("artifactId", "The artifact", Kind::Uuid);
/// `{licenseKey}`.
pub const LICENSE_KEY: Param = Param::path(
    "licenseKey",
    "The license key",
    Kind::Pattern("^[A-Z0-9]{5}(-[A-Z0-9]{5}){4}$"),
);
/// `page` of a list.
pub const PAGE: Param = Param::query("page", "1-based page (default 1)", Kind::Integer(1));
/// `pageSize` of a list.
pub const PAGE_SIZE: Param = Param::query(
    "pageSize",
    "10, 25, 50 or 100 (default 25)",
    Kind::Integer(0),
);
/// `sortDirection` of a list.
pub const DIRECTION: Param =
    Param::query("sortDirection", "asc or desc (default desc)", Kind::Text);

/// A refusal: a status and what it means.
#[derive(Clone, Copy, Debug)]
pub struct Refusal {
    /// The status.
    pub status: u16,
    /// The result code and when.
    pub description: &'static str,
}

const fn refusal(status: u16, description: &'static str) -> Refusal {
    Refusal {
        status,
        description,
    }
}

/// What every developer operation may answer: a malformed request, a bad API key, the key's
/// rate limit, a server failure.
pub const REFUSED: &[Refusal] = &[
    refusal(
        400,
        "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)",
    ),
    refusal(
        401,
        "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key",
    ),
    refusal(
        429,
        "RATE_LIMIT: too many requests for this API key (`Retry-After`)",
    ),
    refusal(500, "INTERNAL_SERVER_ERROR"),
];

/// Another team's API key.
pub const OTHER_TEAM: &[Refusal] = &[refusal(403, "FORBIDDEN: an API key of another team")];

/// A body too slow or too large.
pub const BODY_REFUSED: &[Refusal] = &[
    refusal(
        408,
        "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)",
    ),
    refusal(413, "BAD_REQUEST: the body is over 1 MiB"),
];

/// The webhook operations' own: another team's key or one without the `webhooks` scope, an
/// unknown endpoint or delivery.
pub const WEBHOOK_REFUSED: &[Refusal] = &[
    refusal(
        403,
        "FORBIDDEN: an API key of another team, or without the webhooks scope",
    ),
    refusal(
        404,
        "NOT_FOUND: no such webhook endpoint (or delivery) in this team",
    ),
];

/// No such license.
pub const NO_LICENSE: &[Refusal] = &[refusal(404, "LICENSE_NOT_FOUND")];
/// No such product.
pub const NO_PRODUCT: &[Refusal] = &[refusal(404, "PRODUCT_NOT_FOUND")];
/// No such customer.
pub const NO_CUSTOMER: &[Refusal] = &[refusal(404, "CUSTOMER_NOT_FOUND")];
/// No such release.
pub const NO_RELEASE: &[Refusal] = &[refusal(404, "RELEASE_NOT_FOUND")];
/// No such entitlement.
pub const NO_ENTITLEMENT: &[Refusal] = &[refusal(
    404,
    "BAD_REQUEST (no such entitlement of the team)",
)];

/// No such policy.
pub const NO_POLICY: &[Refusal] = &[refusal(404, "BAD_REQUEST (no such policy of the team)")];

/// An operation's own refusals, beside the shared sets: `refusals![(409, "CONFLICT: …")]`.
#[macro_export]
macro_rules! refusals {
    ($(($status:literal, $description:literal)),* $(,)?) => {
        &[$($crate::operations::doc::Refusal { status: $status, description: $description }),*]
    };
}

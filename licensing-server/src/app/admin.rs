//! The admin API's operations as the API shows them, each declared once: its method and path
//! under `/api/v1/admin/`, its operation id and success status, its documentation, and the
//! shapes of its body and answer. The admin API's route table (`routes::admin`) and the
//! document's path items (`openapi`) are both built from these declarations.

use licensing_core::api::TeamList;
use licensing_core::api::requests::{
    AdminTeamBody, ApiKeyBody, FeaturesBody, PasswordLinkBody, StaffBody,
};
use licensing_core::model::{ApiKeyCreated, StaffInvited, TeamCreated, TeamView};
use licensing_core::operations::doc::{Doc, Refusal};
use licensing_core::operations::{Body, Method};

use super::operator::{
    Backup, CreateStaff, CreateTeam, CreateTeamKey, ListTeams, NewPasswordLink, OperatorOperation,
    SetFeatures,
};

/// An operation of the operator as the admin API shows it.
pub(crate) trait AdminOperation: OperatorOperation {
    /// Its method.
    const METHOD: Method;
    /// Its path under `/api/v1/admin/`.
    const PATH: &'static str;
    /// Its operation id in the document.
    const ID: &'static str;
    /// The status of its success.
    const STATUS: u16;
    /// Its documentation: summary, success and refusals.
    const DOC: Doc;
    /// Whether it reads a JSON body ([`Body::Json`]) or none ([`Body::Empty`]).
    const BODY: Body;
    /// Its body (`()` for none).
    type Payload;
    /// The `data` of its answer's envelope (`()` for a stream).
    type Data;
    /// The media type of a success that is a stream rather than the envelope.
    const STREAMED: Option<&'static str> = None;
}

/// What every admin operation may answer: a malformed request, a bad admin token, the token's
/// rate limit, a failure.
const ADMIN_REFUSED: &[Refusal] = licensing_core::refusals![
    (400, "BAD_REQUEST"),
    (401, "UNAUTHORIZED: missing or wrong admin token"),
    (429, "RATE_LIMIT"),
    (500, "INTERNAL_SERVER_ERROR"),
];

/// The admin API off: its paths are unknown.
const OFF: &[Refusal] = licensing_core::refusals![(
    404,
    "BAD_REQUEST: the admin API is off (no LICENSING_ADMIN_TOKEN)"
)];

/// The documentation of an admin operation: its summary, what its success is, and what it may
/// refuse ([`ADMIN_REFUSED`] and its own).
const fn documented(
    summary: &'static str,
    success: &'static str,
    refusals: &'static [&'static [Refusal]],
) -> Doc {
    Doc {
        tag: "admin",
        summary,
        description: "",
        params: &[],
        body: "",
        success,
        refusals,
    }
}

/// Every admin operation, in the document's order: `$then!(A, B, …)`; whoever serves or
/// documents the admin API walks this one list.
macro_rules! admin_operations {
    ($then:ident) => {
        $then!(
            $crate::operator::CreateTeam,
            $crate::operator::ListTeams,
            $crate::operator::SetFeatures,
            $crate::operator::CreateTeamKey,
            $crate::operator::CreateStaff,
            $crate::operator::NewPasswordLink,
            $crate::operator::Backup
        )
    };
}
pub(crate) use admin_operations;

impl AdminOperation for CreateTeam {
    const STATUS: u16 = 201;
    const METHOD: Method = Method::Post;
    const PATH: &'static str = "teams";
    const ID: &'static str = "create_team";
    const DOC: Doc = documented(
        "(admin) Create a team with its key pairs and a first API key.",
        "Created: the API key is in this answer only",
        &[ADMIN_REFUSED, OFF],
    );
    const BODY: Body = Body::Json;
    type Payload = AdminTeamBody;
    type Data = TeamCreated;
}

impl AdminOperation for ListTeams {
    const STATUS: u16 = 200;
    const METHOD: Method = Method::Get;
    const PATH: &'static str = "teams";
    const ID: &'static str = "list_teams";
    const DOC: Doc = documented(
        "(admin) List the teams.",
        "The teams",
        &[ADMIN_REFUSED, OFF],
    );
    const BODY: Body = Body::Empty;
    type Payload = ();
    type Data = TeamList;
}

impl AdminOperation for SetFeatures {
    const STATUS: u16 = 200;
    const METHOD: Method = Method::Put;
    const PATH: &'static str = "teams/{teamId}/features";
    const ID: &'static str = "set_features";
    const DOC: Doc = documented(
        "(admin) Turn a team's classloader feature on or off.",
        "Updated",
        &[ADMIN_REFUSED, OFF],
    );
    const BODY: Body = Body::Json;
    type Payload = FeaturesBody;
    type Data = TeamView;
}

impl AdminOperation for CreateTeamKey {
    const STATUS: u16 = 201;
    const METHOD: Method = Method::Post;
    const PATH: &'static str = "teams/{teamId}/api-keys";
    const ID: &'static str = "admin_create_api_key";
    const DOC: Doc = documented(
        "(admin) Give a team a new API key, with any scopes (a team whose keys are all lost has no\nother way back); the key is shown only in this answer.",
        "Created: the key is in this answer only",
        &[
            ADMIN_REFUSED,
            licensing_core::refusals![(
                404,
                "TEAM_NOT_FOUND, PRODUCT_NOT_FOUND; BAD_REQUEST: the admin API is off (no LICENSING_ADMIN_TOKEN)"
            )],
        ],
    );
    const BODY: Body = Body::Json;
    type Payload = ApiKeyBody;
    type Data = ApiKeyCreated;
}

impl AdminOperation for CreateStaff {
    const STATUS: u16 = 201;
    const METHOD: Method = Method::Post;
    const PATH: &'static str = "teams/{teamId}/users";
    const ID: &'static str = "admin_create_user";
    const DOC: Doc = documented(
        "(admin) Create a staff account of a team for the dashboard; the answer carries its one-time\nset-password link (valid 72 hours), which is shown only there.",
        "Created: the set-password link is in this answer only",
        &[
            ADMIN_REFUSED,
            licensing_core::refusals![
                (
                    400,
                    "BAD_REQUEST: a bad address or role, or an address that has an account"
                ),
                (
                    404,
                    "TEAM_NOT_FOUND; BAD_REQUEST: the admin API is off (no LICENSING_ADMIN_TOKEN)"
                )
            ],
        ],
    );
    const BODY: Body = Body::Json;
    type Payload = StaffBody;
    type Data = StaffInvited;
}

impl AdminOperation for NewPasswordLink {
    const STATUS: u16 = 201;
    const METHOD: Method = Method::Post;
    const PATH: &'static str = "teams/{teamId}/password-links";
    const ID: &'static str = "admin_new_password_link";
    const DOC: Doc = documented(
        "(admin) A new one-time set-password link for a staff account of the team (a forgotten\npassword, or a sole owner locked out), valid 72 hours and shown only in this answer; the old\npassword keeps working until the link is used. `licensing-server user link` does the same on\na stopped server.",
        "Created: the set-password link is in this answer only",
        &[
            ADMIN_REFUSED,
            licensing_core::refusals![(
                404,
                "TEAM_NOT_FOUND; BAD_REQUEST: no account of the team has the address, or the admin API is off (no LICENSING_ADMIN_TOKEN)"
            )],
        ],
    );
    const BODY: Body = Body::Json;
    type Payload = PasswordLinkBody;
    type Data = StaffInvited;
}

impl AdminOperation for Backup {
    const STATUS: u16 = 200;
    const METHOD: Method = Method::Get;
    const PATH: &'static str = "backup";
    const ID: &'static str = "admin_backup";
    const DOC: Doc = documented(
        "(admin) An online backup: every team's records and release files as the export archive\n(JSON lines: a header, the records, a trailer counting the lines), streamed while the server\ngoes on serving. `licensing-server backup --to FILE` saves it; `licensing-server restore`\nloads it into an empty store. An archive that ends without its trailer is incomplete (the\nexport failed half way) and is refused by `restore`.",
        "The archive, streamed",
        &[ADMIN_REFUSED, OFF],
    );
    const BODY: Body = Body::Empty;
    type Payload = ();
    type Data = ();
    const STREAMED: Option<&'static str> = Some("application/jsonl");
}

//! The admin API under `/api/v1/admin`, for the operator: create and list teams, switch a team's
//! classloader feature, give a team a new API key or a staff account for the dashboard, save an
//! online backup. It exists only when `LICENSING_ADMIN_TOKEN` is set; otherwise its paths are
//! unknown routes (404).
//!
//! Each route is one operation of [`crate::operator`], in a table like the developer API's; its
//! gate, for each request: finds the route (404, 405), checks the admin token (404 when the
//! admin API is off, 401, 429 past the failure limit), counts the admin principal's rate limit
//! (429), refuses a query string where the route takes none (400), parses the path's ids (400),
//! applies a write's `Idempotency-Key` ([`crate::http::idempotency`]), parses the body (400,
//! 413), and performs the operation. Every answer past the token carries the
//! `X-RateLimit-*` headers.

use std::future::Future;
use std::sync::Arc;

use licensing_core::api::TeamList;
use licensing_core::api::requests::{
    AdminTeamBody, ApiKeyBody, FeaturesBody, PasswordLinkBody, StaffBody, parse_no_query,
};
use licensing_core::model::{ApiKeyCreated, StaffInvited, Team, TeamCreated, TeamView};
use licensing_core::{ApiError, TeamId, Timestamp};
use warp::Filter;
use warp::Reply as _;
use warp::filters::BoxedFilter;
use warp::http::{HeaderValue, header};

use crate::app::admin::{AdminOperation, admin_operations};
use crate::app::staff::CreatedStaff;
use crate::http::{Incoming, Response, auth, idempotency, respond, success};
use crate::operator::{
    Backup, CreateStaff, CreateTeam, CreateTeamKey, ListTeams, NewPasswordLink, Operator,
    SetFeatures,
};
use crate::routes::table::{Input, PathIds, Query, Route, find};
use crate::state::{AppState, Principal};
use licensing_core::idempotency::IdempotencyOwner;

/// An admin operation as the admin API reaches it: the operation a request asks for (from its
/// path's ids and body), and the answer to what it did. What it is (method, path, status,
/// documentation) is declared with the operation ([`AdminOperation`]); the route table is built
/// from those declarations, as the document's path items are.
pub(crate) trait AdminEndpoint: AdminOperation + 'static {
    /// The ids of its path, in order.
    type Ids: PathIds;
    /// Whether it reads a query string.
    const QUERY: Query;
    /// The operation the request asks for.
    fn from_request(
        ids: Self::Ids,
        input: Input,
    ) -> impl Future<Output = Result<Self, ApiError>> + Send;
    /// The answer.
    fn answer(output: Self::Output) -> Response;
}

/// The table's entry of endpoint `E`, at its method and path.
fn route<E: AdminEndpoint>() -> Route<Operator> {
    Route::new(
        super::dev::method(E::METHOD),
        E::PATH,
        None,
        E::QUERY,
        |operator: Operator, ids: E::Ids, input: Input| async move {
            let op = E::from_request(ids, input).await?;
            Ok(E::answer(operator.perform(op).await?))
        },
    )
}

/// Every route of the admin API, under `/api/v1/admin/`.
fn operations() -> Vec<Route<Operator>> {
    macro_rules! table {
        ($($endpoint:ty),*) => {
            vec![$(route::<$endpoint>()),*]
        };
    }
    admin_operations!(table)
}

pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let table: Arc<[Route<Operator>]> = operations().into();
    warp::path!("api" / "v1" / "admin" / ..)
        .and(crate::http::incoming(state))
        .then(move |request: crate::http::Incoming| {
            let table = table.clone();
            async move { gate(&table, request).await }
        })
        .boxed()
}

/// The gate: the steps of the module documentation.
async fn gate(table: &[Route<Operator>], request: Incoming) -> Response {
    let (state, client, input) = (request.state, request.client, request.input);
    let segments: Vec<&str> = request.path.as_str().split('/').collect();
    let (route, ids) = match find(table, &segments, &request.method) {
        Ok(found) => found,
        Err(e) => return crate::http::error(&e),
    };
    if let Err(refused) = auth::admin(&state, client, &input.headers).await {
        return refused.into_response();
    }
    let rate = match &state.limits.dev {
        Some(limiter) => Some(limiter.check(&Principal::Admin).await),
        None => None,
    };
    if let Some(status) = rate.filter(|s| !s.allowed()) {
        return crate::http::rate_limited(&status, "requests", " per admin token");
    }
    let checked = (|| {
        if route.query == Query::None {
            parse_no_query(&input.query)?;
        }
        route.bind(&ids)
    })();
    let mut response = match checked {
        Err(e) => crate::http::error(&e),
        Ok(bound) => {
            let operator = Operator::admin(&state, client);
            let path = format!("/api/v1/admin/{}", request.path.as_str());
            let write = move |input: Input| async move { respond(bound(operator, input).await) };
            idempotency::guard(
                &state,
                IdempotencyOwner::admin(),
                &request.method,
                &path,
                input,
                write,
            )
            .await
        }
    };
    if let Some(status) = rate {
        status.apply(response.headers_mut());
    }
    response
}

impl AdminEndpoint for CreateTeam {
    type Ids = ();
    const QUERY: Query = Query::Ignored;

    async fn from_request((): (), input: Input) -> Result<Self, ApiError> {
        Ok(Self {
            name: AdminTeamBody::parse(&input.json().await?)?,
        })
    }

    fn answer(team: TeamCreated) -> Response {
        success(
            Self::STATUS,
            team,
            "Team created; its API key is shown only in this answer",
        )
    }
}

impl AdminEndpoint for ListTeams {
    type Ids = ();
    const QUERY: Query = Query::None;

    async fn from_request((): (), _: Input) -> Result<Self, ApiError> {
        Ok(Self)
    }

    fn answer(teams: Vec<Team>) -> Response {
        let teams = TeamList {
            teams: teams.iter().map(TeamView::from).collect(),
        };
        success(Self::STATUS, teams, "Teams retrieved")
    }
}

impl AdminEndpoint for SetFeatures {
    type Ids = (TeamId,);
    const QUERY: Query = Query::Ignored;

    async fn from_request((team,): (TeamId,), input: Input) -> Result<Self, ApiError> {
        let features = FeaturesBody::parse(&input.json().await?)?;
        Ok(Self { team, features })
    }

    fn answer(team: Team) -> Response {
        success(Self::STATUS, TeamView::from(&team), "Features updated")
    }
}

impl AdminEndpoint for CreateTeamKey {
    type Ids = (TeamId,);
    const QUERY: Query = Query::Ignored;

    async fn from_request((team,): (TeamId,), input: Input) -> Result<Self, ApiError> {
        let input = ApiKeyBody::parse(&input.json().await?, Timestamp::now())?;
        Ok(Self { team, input })
    }

    fn answer(created: ApiKeyCreated) -> Response {
        success(
            Self::STATUS,
            created,
            "API key created; it is shown only in this answer",
        )
    }
}

impl AdminEndpoint for CreateStaff {
    type Ids = (TeamId,);
    const QUERY: Query = Query::Ignored;

    async fn from_request((team,): (TeamId,), input: Input) -> Result<Self, ApiError> {
        let (email, role) = StaffBody::parse(&input.json().await?)?;
        Ok(Self { team, email, role })
    }

    fn answer(created: CreatedStaff) -> Response {
        with_link(
            Self::STATUS,
            &created,
            "Account created; its set-password link is shown only in this answer",
        )
    }
}

impl AdminEndpoint for NewPasswordLink {
    type Ids = (TeamId,);
    const QUERY: Query = Query::Ignored;

    async fn from_request((team,): (TeamId,), input: Input) -> Result<Self, ApiError> {
        let email = PasswordLinkBody::parse(&input.json().await?)?;
        Ok(Self {
            email,
            team: Some(team),
        })
    }

    fn answer(issued: CreatedStaff) -> Response {
        with_link(
            Self::STATUS,
            &issued,
            "A new set-password link; it is shown only in this answer",
        )
    }
}

/// The answer that carries an account's new set-password link.
fn with_link(status: u16, made: &CreatedStaff, message: &'static str) -> Response {
    let Some(link) = made.user.password_link.as_ref() else {
        return crate::http::error(&ApiError::internal());
    };
    let invited = StaffInvited {
        id: made.user.id,
        team_id: made.user.team_id,
        email: made.user.email.as_str().to_owned(),
        role: made.user.role,
        set_password_path: format!(
            "/dashboard/set-password/{}/{}",
            made.user.id, made.link_secret
        ),
        set_password_expires_at: link.expires_at,
    };
    success(status, invited, message)
}

impl AdminEndpoint for Backup {
    type Ids = ();
    const QUERY: Query = Query::None;

    async fn from_request((): (), _: Input) -> Result<Self, ApiError> {
        Ok(Self)
    }

    fn answer(archive: tokio::io::DuplexStream) -> Response {
        let mut response =
            warp::reply::stream(tokio_util::io::ReaderStream::new(archive)).into_response();
        let name = format!(
            "attachment; filename=\"licensing-backup-{}.jsonl\"",
            Timestamp::now().as_millis()
        );
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/jsonl"),
        );
        if let Ok(value) = HeaderValue::from_str(&name) {
            headers.insert(header::CONTENT_DISPOSITION, value);
        }
        response
    }
}

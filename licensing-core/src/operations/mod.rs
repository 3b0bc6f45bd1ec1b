//! Every operation of the developer API, declared once: its input (the type itself), the
//! method and path template that reach it, the scope it needs, what it yields and how that is
//! answered (status, `data`, `details`). The server derives its route table and OpenAPI
//! entries from these declarations and runs each; the SDK builds each request from the same
//! value it would hand the server (`DevClient::perform`), so the two cannot drift apart.
//!
//! An operation is a plain value: `GetProduct(id)`, `UpdateLicense(id, body)`. Adding one is
//! one declaration here (a struct and a `declare!` entry, listed in [`crate::dev_operations!`]); the
//! server then needs its `run`, and the compiler says so.

pub mod access;
pub mod customers;
pub mod devices;
pub mod doc;
pub mod entitlements;
pub mod floating;
pub mod integrations;
pub mod licenses;
pub mod policies;
pub mod products;
pub mod releases;
pub mod team;
pub mod usage;
pub mod webhooks;

use std::str::FromStr;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ApiError;
use crate::api::requests::{Paging, ReleaseData};
use crate::model::Scope;

/// An HTTP method, as an operation declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// `GET`: reads.
    Get,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
}

impl Method {
    /// The method's name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Patch => "PATCH",
            Self::Delete => "DELETE",
        }
    }
}

/// What an operation reads from a request's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// Nothing: a body is not looked at.
    Ignored,
    /// Nothing, and says so: an empty body or `{}` passes, anything else is 400.
    Empty,
    /// A JSON object (400 when malformed, 413 past 1 MiB).
    Json,
    /// A JSON object whose members are all optional: an empty body is the default one.
    OptionalJson,
    /// A multipart form of a `data` part (JSON) and an optional `file` part.
    Form,
}

/// Whether an operation reads a query string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// None: any parameter is refused (400).
    None,
    /// The operation parses it.
    Parsed,
}

/// What every operation declares, whoever performs it (an API key, a staff member, the
/// operator): the scope it needs and what it yields.
pub trait Operation: Send + Sized + 'static {
    /// Its name (a developer operation's is its OpenAPI `operationId`): its tracing span's and
    /// metric's.
    const NAME: &'static str;
    /// What it yields to whoever performs it.
    type Output: Send;
    /// The scope it needs; `None`: any caller of the team.
    const SCOPE: Option<Scope>;
    /// Whether it only reads. Any other operation may change the team's records.
    const READ_ONLY: bool = false;
}

/// The ids of a path, parsed in order; each names itself in its 400.
pub trait PathIds: Sized + Send + 'static {
    /// Parses `(name, text)` pairs, in path order.
    fn parse(values: &[(&'static str, &str)]) -> Result<Self, ApiError>;
}

/// Parses a path parameter, naming it in the 400.
pub fn path_param<T: FromStr>(name: &str, text: &str) -> Result<T, ApiError>
where
    T::Err: std::fmt::Display,
{
    T::from_str(text).map_err(|e| ApiError::bad_field(name, &e.to_string()))
}

fn nth<T: FromStr>(values: &[(&'static str, &str)], i: usize) -> Result<T, ApiError>
where
    T::Err: std::fmt::Display,
{
    let (name, text) = values.get(i).ok_or_else(ApiError::internal)?;
    path_param(name, text)
}

impl PathIds for () {
    fn parse(_: &[(&'static str, &str)]) -> Result<Self, ApiError> {
        Ok(())
    }
}

impl<A> PathIds for (A,)
where
    A: FromStr + Send + 'static,
    A::Err: std::fmt::Display,
{
    fn parse(values: &[(&'static str, &str)]) -> Result<Self, ApiError> {
        Ok((nth(values, 0)?,))
    }
}

impl<A, B> PathIds for (A, B)
where
    A: FromStr + Send + 'static,
    A::Err: std::fmt::Display,
    B: FromStr + Send + 'static,
    B::Err: std::fmt::Display,
{
    fn parse(values: &[(&'static str, &str)]) -> Result<Self, ApiError> {
        Ok((nth(values, 0)?, nth(values, 1)?))
    }
}

/// A query string an operation reads, and writes back (what the SDK sends).
pub trait QueryText: Sized {
    /// Parses a raw query string (400 naming each bad parameter).
    fn parse_query(raw: &str) -> Result<Self, ApiError>;
    /// The query string [`QueryText::parse_query`] reads back.
    fn to_query(&self) -> String;
}

macro_rules! query_text {
    ($($query:ty),* $(,)?) => {$(
        impl QueryText for $query {
            fn parse_query(raw: &str) -> Result<Self, ApiError> {
                Self::parse(raw)
            }
            fn to_query(&self) -> String {
                self.to_query_string()
            }
        }
    )*};
}

query_text!(
    crate::api::requests::LicenseListQuery,
    crate::api::requests::CustomerListQuery,
    crate::api::requests::EntitlementListQuery,
    crate::api::requests::PolicyListQuery,
    crate::api::requests::InboundQuery,
    crate::api::requests::ReleaseListQuery,
    crate::api::requests::DeviceListQuery,
    crate::api::requests::ProductListQuery,
    crate::api::requests::RequestLogQuery,
    crate::api::requests::AuditQuery,
);

impl QueryText for crate::api::requests::DetachQuery {
    fn parse_query(raw: &str) -> Result<Self, ApiError> {
        Self::parse(raw)
    }
    fn to_query(&self) -> String {
        self.to_query_string()
    }
}

impl QueryText for Paging {
    fn parse_query(raw: &str) -> Result<Self, ApiError> {
        crate::api::requests::parse_paging_query(raw)
    }
    fn to_query(&self) -> String {
        self.to_query_string()
    }
}

/// The parts of a multipart form (a release's, an artifact's), as a client sends them.
#[derive(Clone, Debug)]
pub struct Form<'a> {
    /// The text parts, in order: a release's `data` (its JSON), an artifact's `platform`,
    /// `arch` and the others given.
    pub fields: Vec<(&'static str, String)>,
    /// The `file` part: its file name (with an extension) and its bytes.
    pub file: Option<(&'a str, &'a [u8])>,
}

impl<'a> Form<'a> {
    /// A release's form: `data` and the file, if any.
    pub fn release(data: &ReleaseData, file: Option<(&'a str, &'a [u8])>) -> Self {
        Self {
            fields: vec![("data", serde_json::to_string(data).unwrap_or_default())],
            file,
        }
    }
}

/// An operation of the developer API (`/api/v1/dev/teams/{teamId}/…`): how a request reaches
/// it and how its answer looks.
pub trait DevOperation: Operation {
    /// The method.
    const METHOD: Method;
    /// The path template under `/api/v1/dev/teams/{teamId}/`, with `{name}` for each id.
    const PATH: &'static str;
    /// Whether it reads a query string.
    const QUERY: Query;
    /// What it reads from the body.
    const BODY: Body;
    /// The status of a success.
    const STATUS: u16;
    /// Its documentation.
    const DOC: doc::Doc;
    /// The ids of its path, in order.
    type Ids: PathIds;
    /// The `data` of a success.
    type Answer: Serialize + DeserializeOwned + Send;
    /// Its JSON body (`()` for none; a form's parts are its own).
    type Payload;

    /// The operation a request asks for, from its path's ids, its query string and its body
    /// (400, 413), before anything is looked up. An operation whose body is a
    /// [`Body::Form`] is read by whoever receives it, streaming; this refuses it.
    fn from_parts(ids: Self::Ids, query: &str, body: &[u8]) -> Result<Self, ApiError>;
    /// Its output as an answer: `data` and `details`.
    fn answer(output: Self::Output) -> (Self::Answer, &'static str);
    /// The values of its path's ids, in order.
    fn path_values(&self) -> Vec<String>;
    /// Its query string, if it reads one.
    fn query_string(&self) -> Option<String> {
        None
    }
    /// Its JSON body, if it sends one.
    fn json_body(&self) -> Option<Result<Vec<u8>, serde_json::Error>> {
        None
    }
    /// Its multipart form, if it sends one.
    fn form(&self) -> Option<Form<'_>> {
        None
    }
}

/// The path of `op` under `/api/v1/dev/teams/{teamId}/`: its template with its ids filled in.
pub fn path_of<O: DevOperation>(op: &O) -> String {
    let mut values = op.path_values().into_iter();
    O::PATH
        .split('/')
        .map(|part| {
            if part.starts_with('{') {
                values.next().unwrap_or_default()
            } else {
                part.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Declares operations of the developer API, each as
/// ```text
/// Name(id: Type, …) by kind [BodyOrQuery];
/// METHOD "path/{id}" "operation_id" SCOPE;
/// Output => status [Answer: |output| answer,] "details";
/// doc Doc { … };
/// ```
/// (`Name by kind` for an operation without ids or body). The kinds: `ids` (path ids only; a
/// body is ignored), `empty` (no body: empty or `{}`), `json T` (a JSON body), `optional T`
/// (a JSON body whose absence is `T::default()`), `query T` (a query string). The struct is
/// declared beside, with its documentation: its fields are the ids in order, then the body or
/// query.
macro_rules! declare {
    ($(
        $name:ident $(($($id:ident: $ty:ty),*))? by $kind:ident $($part:ty)?;
        $method:ident $path:literal $opid:literal $scope:expr;
        $out:ty => $status:literal $($answer:ty: |$o:pat_param| $map:expr,)? $details:literal;
        doc $doc:expr;
    )*) => {$(
        declare!(@one $name [$($($id: $ty),*)?] [$(($($id),*))?] $kind [$($part)?];
            $method $path $opid $scope; $out => $status [$($answer: |$o| $map)?] $details; $doc);
    )*};
    (@one $name:ident [$($id:ident: $ty:ty),*] [$($shape:tt)?] $kind:ident [$($part:ty)?];
        $method:ident $path:literal $opid:literal $scope:expr;
        $out:ty => $status:literal [$($answer:ty: |$o:pat_param| $map:expr)?] $details:literal;
        $doc:expr) => {
        impl $crate::operations::Operation for $name {
            const NAME: &'static str = $opid;
            type Output = $out;
            const SCOPE: Option<$crate::model::Scope> = $scope;
            const READ_ONLY: bool =
                matches!($crate::operations::Method::$method, $crate::operations::Method::Get);
        }

        impl $crate::operations::DevOperation for $name {
            const METHOD: $crate::operations::Method = $crate::operations::Method::$method;
            const PATH: &'static str = $path;
            const QUERY: $crate::operations::Query = declare!(@query $kind);
            const BODY: $crate::operations::Body = declare!(@body $kind);
            const STATUS: u16 = $status;
            const DOC: $crate::operations::doc::Doc = $doc;
            type Ids = ($($ty,)*);
            type Answer = declare!(@answer $out $(, $answer)?);
            type Payload = declare!(@payload $kind [$($part)?]);

            #[allow(unused_variables)]
            fn from_parts(
                ($($id,)*): Self::Ids,
                query: &str,
                body: &[u8],
            ) -> Result<Self, $crate::ApiError> {
                declare!(@make [$($shape)?] [$($id),*] $kind [$($part)?] query body)
            }

            fn answer(output: $out) -> (Self::Answer, &'static str) {
                (declare!(@map output $(|$o| $map)?), $details)
            }

            fn path_values(&self) -> Vec<String> {
                declare!(@values self [$($shape)?] [$($id),*])
            }

            declare!(@sent $kind [$($shape)?]);
        }
    };

    (@query query) => { $crate::operations::Query::Parsed };
    (@query $kind:ident) => { $crate::operations::Query::None };
    (@body ids) => { $crate::operations::Body::Ignored };
    (@body query) => { $crate::operations::Body::Ignored };
    (@body empty) => { $crate::operations::Body::Empty };
    (@body json) => { $crate::operations::Body::Json };
    (@body optional) => { $crate::operations::Body::OptionalJson };
    (@payload json [$part:ty]) => { $part };
    (@payload optional [$part:ty]) => { $part };
    (@payload $kind:ident [$($part:ty)?]) => { () };
    (@answer $out:ty) => { $out };
    (@answer $out:ty, $answer:ty) => { $answer };
    (@map $output:ident) => { $output };
    (@map $output:ident |$o:pat_param| $map:expr) => {{
        let $o = $output;
        $map
    }};

    (@make [] [] ids [] $query:ident $body:ident) => { Ok(Self) };
    (@make [] [] empty [] $query:ident $body:ident) => {{
        $crate::api::requests::parse_empty_body($body)?;
        Ok(Self)
    }};
    (@make [$shape:tt] [$($id:ident),*] ids [] $query:ident $body:ident) => { Ok(Self($($id),*)) };
    (@make [$shape:tt] [$($id:ident),*] empty [] $query:ident $body:ident) => {{
        $crate::api::requests::parse_empty_body($body)?;
        Ok(Self($($id),*))
    }};
    (@make [$shape:tt] [$($id:ident),*] json [$part:ty] $query:ident $body:ident) => {
        Ok(Self($($id,)* $crate::api::requests::parse_json::<$part>($body)?))
    };
    (@make [$shape:tt] [$($id:ident),*] optional [$part:ty] $query:ident $body:ident) => {{
        let part = if $body.iter().all(u8::is_ascii_whitespace) {
            <$part>::default()
        } else {
            $crate::api::requests::parse_json::<$part>($body)?
        };
        Ok(Self($($id,)* part))
    }};
    (@make [$shape:tt] [$($id:ident),*] query [$part:ty] $query:ident $body:ident) => {
        Ok(Self($($id,)* <$part as $crate::operations::QueryText>::parse_query($query)?))
    };

    (@values $self:ident [] []) => { Vec::new() };
    (@values $self:ident [$shape:tt] [$($id:ident),*]) => {{
        let Self($($id,)* ..) = $self;
        vec![$($id.to_string()),*]
    }};

    (@sent query [$shape:tt]) => {
        fn query_string(&self) -> Option<String> {
            let Self(.., query) = self;
            Some($crate::operations::QueryText::to_query(query))
        }
    };
    (@sent json [$shape:tt]) => {
        fn json_body(&self) -> Option<Result<Vec<u8>, serde_json::Error>> {
            let Self(.., body) = self;
            Some(serde_json::to_vec(body))
        }
    };
    (@sent optional [$shape:tt]) => { declare!(@sent json [$shape]); };
    (@sent $kind:ident [$($shape:tt)?]) => {};
}
pub(crate) use declare;

/// A release's form no one sends: what walking the declarations of the list takes for the
/// forms' type.
pub struct Unsent;

impl releases::ArtifactForm for Unsent {
    fn parts(&self) -> Option<Form<'_>> {
        None
    }
}

impl releases::ReleaseForm for Unsent {
    fn parts(&self) -> Option<Form<'_>> {
        None
    }
}

/// Every developer operation's method and path template (under `/api/v1/dev/teams/{teamId}/`),
/// in the list's order; several operations share a path.
pub fn paths() -> Vec<(Method, &'static str)> {
    macro_rules! paths {
        ([$($op:ty),* $(,)?] [$($form:ty),* $(,)?]) => {
            vec![
                $((<$op as DevOperation>::METHOD, <$op as DevOperation>::PATH),)*
                $((<$form as DevOperation>::METHOD, <$form as DevOperation>::PATH),)*
            ]
        };
    }
    crate::dev_operations!(paths, Unsent, Unsent)
}

/// Calls `$then!` with every operation of the developer API, as two bracketed lists: those
/// whose body is JSON (or none), then those whose body is a multipart form (with `$form`, the
/// form as the caller holds it). Whoever serves or calls the API walks this one list:
/// `licensing_core::dev_operations!(table, Received, ReceivedArtifact)`.
#[macro_export]
macro_rules! dev_operations {
    ($then:ident, $form:ty, $artifact:ty) => {
        $then! {
            [$crate::operations::licenses::CreateLicense,
            $crate::operations::licenses::ListLicenses,
            $crate::operations::licenses::GetLicenseByKey,
            $crate::operations::licenses::DeleteLicenseByKey,
            $crate::operations::licenses::GetLicense,
            $crate::operations::licenses::UpdateLicense,
            $crate::operations::licenses::DeleteLicense,
            $crate::operations::licenses::BulkLicenses,
            $crate::operations::licenses::SuspendLicense,
            $crate::operations::licenses::UnsuspendLicense,
            $crate::operations::licenses::EmailLicense,
            $crate::operations::licenses::ExtendLicense,
            $crate::operations::licenses::IssueLicenseFile,
            $crate::operations::devices::ListHwids,
            $crate::operations::devices::SetHwidForgotten,
            $crate::operations::devices::ListIps,
            $crate::operations::devices::SetIpForgotten,
            $crate::operations::floating::ListSessions,
            $crate::operations::devices::ListRequests,
            $crate::operations::floating::RevokeSession,
            $crate::operations::usage::GetUsage,
            $crate::operations::usage::AdjustUsage,
            $crate::operations::usage::ResetUsage,
            $crate::operations::customers::CreateCustomer,
            $crate::operations::customers::ListCustomers,
            $crate::operations::customers::GetCustomer,
            $crate::operations::customers::UpdateCustomer,
            $crate::operations::customers::DeleteCustomer,
            $crate::operations::customers::CreatePortalSession,
            $crate::operations::entitlements::CreateEntitlement,
            $crate::operations::entitlements::ListEntitlements,
            $crate::operations::entitlements::GetEntitlement,
            $crate::operations::entitlements::UpdateEntitlement,
            $crate::operations::entitlements::DeleteEntitlement,
            $crate::operations::policies::CreatePolicy,
            $crate::operations::policies::ListPolicies,
            $crate::operations::policies::GetPolicy,
            $crate::operations::policies::UpdatePolicy,
            $crate::operations::policies::DeletePolicy,
            $crate::operations::integrations::ListIntegrations,
            $crate::operations::integrations::ListInboundEvents,
            $crate::operations::integrations::GetInboundEvent,
            $crate::operations::integrations::ReplayInboundEvent,
            $crate::operations::integrations::GetIntegration,
            $crate::operations::integrations::PutIntegration,
            $crate::operations::integrations::DeleteIntegration,
            $crate::operations::integrations::ListRules,
            $crate::operations::integrations::CreateRule,
            $crate::operations::integrations::UpdateRule,
            $crate::operations::integrations::DeleteRule,
            $crate::operations::products::CreateProduct,
            $crate::operations::products::ListProducts,
            $crate::operations::products::GetProduct,
            $crate::operations::products::UpdateProduct,
            $crate::operations::products::DeleteProduct,
            $crate::operations::products::CreateBranch,
            $crate::operations::products::ListBranches,
            $crate::operations::products::DeleteBranch,
            $crate::operations::releases::ListReleases,
            $crate::operations::releases::GetRelease,
            $crate::operations::releases::ListArtifacts,
            $crate::operations::releases::DeleteArtifact,
            $crate::operations::releases::DeleteRelease,
            $crate::operations::team::GetStatistics,
            $crate::operations::team::GetSettings,
            $crate::operations::team::UpdateSettings,
            $crate::operations::team::GetPublicKeys,
            $crate::operations::team::CreateSigningKey,
            $crate::operations::team::RotateSigningKey,
            $crate::operations::team::ActivateSigningKey,
            $crate::operations::team::RetireSigningKey,
            $crate::operations::access::CreateBlacklistEntry,
            $crate::operations::access::ListBlacklist,
            $crate::operations::access::DeleteBlacklistEntry,
            $crate::operations::access::CreateApiKey,
            $crate::operations::access::ListApiKeys,
            $crate::operations::team::ListAudit,
            $crate::operations::webhooks::CreateWebhook,
            $crate::operations::webhooks::ListWebhooks,
            $crate::operations::webhooks::GetWebhook,
            $crate::operations::webhooks::UpdateWebhook,
            $crate::operations::webhooks::DeleteWebhook,
            $crate::operations::webhooks::RotateWebhookSecret,
            $crate::operations::webhooks::SendTestEvent,
            $crate::operations::webhooks::ListDeliveries,
            $crate::operations::webhooks::GetDelivery,
            $crate::operations::webhooks::Redeliver,
            $crate::operations::access::RevokeApiKey]
            [$crate::operations::releases::CreateRelease<$form>,
            $crate::operations::releases::UpdateRelease<$form>,
            $crate::operations::releases::UploadArtifact<$artifact>]
        }
    };
}

#[cfg(test)]
mod tests;

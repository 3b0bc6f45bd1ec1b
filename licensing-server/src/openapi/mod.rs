//! The OpenAPI document (`GET /api/openapi.json`, checked in as `openapi.json`): each developer
//! operation's path item built from its declaration in `licensing-core` (method, path, scope,
//! body, answer, documentation, refusals), each admin operation's from its declaration in
//! `app::admin`, utoipa path declarations for the client API and the server's
//! own endpoints (health, metrics, this document), and the schemas of `licensing-core`'s API
//! types.

mod paths;

use licensing_core::api::Envelope;
use licensing_core::model::{Access, Resource, Scope};
use licensing_core::operations::doc::{Doc, In, Kind, Param};
use licensing_core::operations::{Body, DevOperation};
use utoipa::OpenApi;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use warp::http::Method;

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Licensing API",
        version = "1.0.0",
        description = "License management and verification: a developer API (bearer API keys) and a client API (no credentials) for applications."
    ),
    paths(
        paths::client::verify, paths::client::heartbeat, paths::client::checkout, paths::client::start_session, paths::client::end_session, paths::client::usage, paths::client::classloader, paths::updates::feed_token, paths::updates::tauri, paths::updates::sparkle, paths::updates::velopack, paths::updates::velopack_legacy, paths::updates::velopack_file, paths::updates::electron, paths::updates::latest, paths::updates::download, paths::operator::healthz, paths::operator::metrics, paths::operator::openapi, paths::operator::docs
    ),
    components(schemas(licensing_core::api::requests::ReleaseData, licensing_core::api::UsageBatchData, licensing_core::api::UsageData)),
    tags(
        (name = "client", description = "Called by applications: verify, heartbeat, classloader."),
        (name = "licenses", description = "Licenses of the team."),
        (name = "devices", description = "Hardware identifiers and IP addresses seen on a license."),
        (name = "customers", description = "Customers of the team."),
        (name = "products", description = "Products and their branches."),
        (name = "releases", description = "Releases and their files."),
        (name = "team", description = "The team: statistics."),
        (name = "admin", description = "The operator's API (only with LICENSING_ADMIN_TOKEN)."),
        (name = "operations", description = "Health, metrics, this document."),
        (name = "extensions", description = "(ext) endpoints of this server beyond the specification.")
    ),
    modifiers(&Security)
)]
pub struct ApiDoc;

struct Security;

impl utoipa::Modify for Security {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        let scopes: Vec<String> = Scope::all().map(|s| format!("`{s}`")).collect();
        components.add_security_scheme(
            "apiKey",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(format!(
                        "A team API key: `Authorization: Bearer lsk_…`. Each operation lists the scope it needs \
                         (one of {}; a write scope includes the read scope of its resource); a key without it \
                         is answered 403 `FORBIDDEN` with `WWW-Authenticate: Bearer error=\"insufficient_scope\", scope=\"…\"`. \
                         A key restricted to products sees only the licenses, products and releases of those products.",
                        scopes.join(", ")
                    )))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "adminToken",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("The operator's LICENSING_ADMIN_TOKEN"))
                    .build(),
            ),
        );
    }
}

/// A developer operation as the gate's table has it: its method, its path template and the
/// scope it needs (`None`: any key of the team).
pub struct Scoped {
    /// The method.
    pub method: Method,
    /// The full path template (`/api/v1/dev/teams/{teamId}/…`).
    pub template: String,
    /// The scope.
    pub scope: Option<Scope>,
}

/// Writes the scope of every developer operation, from the gate's own table, into its security
/// requirement and its description, so that the document and the server cannot disagree.
fn scopes_of_operations(doc: &mut utoipa::openapi::OpenApi, operations: &[Scoped]) {
    for operation in operations {
        let Some(item) = doc.paths.paths.get_mut(&operation.template) else {
            continue;
        };
        let declared = match operation.method {
            Method::GET => item.get.as_mut(),
            Method::POST => item.post.as_mut(),
            Method::PUT => item.put.as_mut(),
            Method::PATCH => item.patch.as_mut(),
            Method::DELETE => item.delete.as_mut(),
            _ => None,
        };
        let Some(declared) = declared else { continue };
        let names: Vec<String> = operation.scope.iter().map(|s| s.name()).collect();
        declared.security = Some(vec![SecurityRequirement::new("apiKey", names)]);
        let note = match operation.scope {
            Some(scope) if matches!(scope.access, Access::Read | Access::Write) => {
                format!("Scope: `{scope}`.")
            }
            Some(scope) => format!(
                "Scope: `{scope}` (or `{}`, which includes it).",
                Scope::write(scope.resource)
            ),
            None => "Any API key of the team.".to_owned(),
        };
        declared.description = Some(match declared.description.take() {
            Some(text) if !text.is_empty() => format!("{text}\n\n{note}"),
            _ => note,
        });
        let responses = &mut declared.responses.responses;
        if let (Some(scope), Some(RefOr::T(forbidden))) =
            (operation.scope, responses.get_mut("403"))
        {
            forbidden.description.push_str(&format!(
                "; or a key without the scope `{scope}` (named in `WWW-Authenticate`)"
            ));
            let product_bound = matches!(
                scope.resource,
                Resource::Licenses | Resource::Products | Resource::Releases
            );
            if product_bound && scope.access != Access::Read {
                forbidden.description.push_str(
                    "; or a key restricted to products whose products do not cover the record",
                );
            }
            if scope == Scope::write(Resource::ApiKeys) {
                forbidden.description.push_str(
                    "; or a key that would hand on (or revoke) scopes or products it does not have",
                );
            }
        }
        if let Some(RefOr::T(unauthorized)) = responses.get_mut("401") {
            unauthorized
                .description
                .push_str(" (a key whose checksum does not match is told apart as mistyped)");
        }
        if let Some(RefOr::T(limited)) = responses.get_mut("429") {
            limited
                .description
                .push_str("; or too many failed authentications from this address (`Retry-After`)");
        }
    }
}

/// Declares `Idempotency-Key` on every write of the developer and admin APIs, with the two
/// answers it adds (409 while the first request runs, 422 for another request with the key).
fn idempotency_keys_of_writes(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
    use utoipa::openapi::{ObjectBuilder, Required, Type};
    for (path, item) in doc.paths.paths.iter_mut() {
        if !(path.starts_with("/api/v1/dev/") || path.starts_with("/api/v1/admin/")) {
            continue;
        }
        let writes = [
            item.post.as_mut(),
            item.put.as_mut(),
            item.patch.as_mut(),
            item.delete.as_mut(),
        ];
        for operation in writes.into_iter().flatten() {
            let parameter = ParameterBuilder::new()
                .name(licensing_core::idempotency::HEADER)
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some(
                    "A key of your own (1 to 255 visible ASCII characters, such as a UUID) that makes a retry of this write safe: \
                     the same request with the same key within 24 hours runs once and is answered again with the first answer \
                     (status and body byte for byte, with `Idempotent-Replayed: true`). Keys are per API key (or admin token). \
                     5xx and 429 answers are not kept.",
                ))
                .schema(Some(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .min_length(Some(1))
                        .max_length(Some(licensing_core::idempotency::MAX_KEY_LEN))
                        .pattern(Some("^[!-~]+$")),
                ))
                .build();
            operation
                .parameters
                .get_or_insert_with(Vec::new)
                .push(RefOr::T(parameter));
            let responses = &mut operation.responses.responses;
            let Some(template) = responses
                .get("400")
                .or_else(|| responses.get("401"))
                .cloned()
            else {
                continue;
            };
            for (status, description) in [
                (
                    "409",
                    "`IDEMPOTENCY_KEY_IN_USE`: the request first sent with this `Idempotency-Key` is still running; retry after `Retry-After` (1 second)",
                ),
                (
                    "422",
                    "`IDEMPOTENCY_KEY_MISMATCH`: this `Idempotency-Key` was used with another request (method, path, query or body)",
                ),
            ] {
                let mut answer = template.clone();
                if let RefOr::T(response) = &mut answer {
                    response.description = description.to_owned();
                }
                match responses.get_mut(status) {
                    Some(RefOr::T(existing)) => {
                        existing.description.push_str("; or ");
                        existing.description.push_str(description);
                    }
                    _ => {
                        responses.insert(status.to_owned(), answer);
                    }
                }
            }
        }
    }
}

/// The path items of the developer API, one per declared operation, and the schemas they
/// name: built from each operation's declaration (method, path, scope, body, answer) and its
/// documentation, so that the document lists what the gate routes, no more and no less.
fn developer_operations(doc: &mut utoipa::openapi::OpenApi) {
    macro_rules! each {
        ([$($op:ty),* $(,)?] [$($form:ty),* $(,)?]) => {{
            let mut schemas = Vec::new();
            $(declared::<$op>(doc, &mut schemas);)*
            $(declared::<$form>(doc, &mut schemas);)*
            schemas
        }};
    }
    let schemas = licensing_core::dev_operations!(
        each,
        crate::app::releases::Received,
        crate::app::artifacts::ReceivedArtifact
    );
    let components = doc.components.get_or_insert_with(Default::default);
    for (name, schema) in schemas {
        components.schemas.entry(name).or_insert(schema);
    }
}

/// The schemas a path item names, collected as it is built.
type Schemas = Vec<(String, RefOr<Schema>)>;

/// `T`'s schema, named as utoipa names it.
fn named<T: utoipa::ToSchema>(schemas: &mut Schemas) -> String {
    let name = T::name().into_owned();
    schemas.push((name.clone(), <T as utoipa::PartialSchema>::schema()));
    T::schemas(schemas);
    name
}

/// The envelope of `T`, named and composed as utoipa's path macro names and composes a
/// generic's instance (through its `ComposeSchema`), so that the schemas are the ones a
/// `#[utoipa::path]` would have collected; `T`'s own schema too.
fn enveloped<T: utoipa::ToSchema>(schemas: &mut Schemas) -> String {
    use utoipa::{PartialSchema, ToSchema};
    let answer = format!("{}_{}", <Envelope<T> as ToSchema>::name(), T::name());
    schemas.push((
        answer.clone(),
        <Envelope<T> as utoipa::__dev::ComposeSchema>::compose(
            vec![<T as PartialSchema>::schema()],
        ),
    ));
    <Envelope<T> as ToSchema>::schemas(schemas);
    named::<T>(schemas);
    answer
}

/// One operation as the document shows it.
struct Item {
    id: &'static str,
    method: licensing_core::operations::Method,
    path: String,
    /// Its parameters, in order.
    params: Vec<&'static Param>,
    doc: &'static Doc,
    /// The body's media type and schema.
    body: Option<(&'static str, String)>,
    status: u16,
    /// The success's media type and schema.
    answer: (&'static str, RefOr<Schema>),
    /// Who may call it, when the document says it here.
    security: Option<SecurityRequirement>,
}

/// A reference to schema `name`.
fn schema_ref(name: String) -> RefOr<Schema> {
    utoipa::openapi::Ref::from_schema_name(name).into()
}

/// Adds `item`'s path item to `doc`.
fn add_item(doc: &mut utoipa::openapi::OpenApi, item: Item) {
    use utoipa::openapi::path::{HttpMethod, OperationBuilder};
    use utoipa::openapi::request_body::RequestBodyBuilder;
    use utoipa::openapi::{ContentBuilder, Required, ResponseBuilder};

    let documented = item.doc;
    let text = |t: &str| (!t.is_empty()).then(|| t.to_owned());
    let mut operation = OperationBuilder::new()
        .tag(documented.tag)
        .summary(text(documented.summary))
        .description(text(documented.description))
        .operation_id(Some(item.id));
    for param in item.params {
        operation = operation.parameter(parameter(param));
    }
    let content = |schema: RefOr<Schema>| ContentBuilder::new().schema(Some(schema)).build();
    if let Some((media, name)) = item.body {
        operation = operation.request_body(Some(
            RequestBodyBuilder::new()
                .description(text(documented.body))
                .content(media, content(schema_ref(name)))
                .required(Some(Required::True))
                .build(),
        ));
    }
    let (media, schema) = item.answer;
    operation = operation.response(
        item.status.to_string(),
        ResponseBuilder::new()
            .description(documented.success)
            .content(media, content(schema))
            .build(),
    );
    let mut refusals = std::collections::BTreeMap::new();
    for set in documented.refusals {
        for refusal in *set {
            refusals.insert(refusal.status, refusal.description);
        }
    }
    for (status, description) in refusals {
        operation = operation.response(
            status.to_string(),
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    content(schema_ref("Envelope_Option_ErrorData".to_owned())),
                )
                .build(),
        );
    }
    if let Some(security) = item.security {
        operation = operation.security(security);
    }
    let method = match item.method {
        licensing_core::operations::Method::Get => HttpMethod::Get,
        licensing_core::operations::Method::Post => HttpMethod::Post,
        licensing_core::operations::Method::Put => HttpMethod::Put,
        licensing_core::operations::Method::Patch => HttpMethod::Patch,
        licensing_core::operations::Method::Delete => HttpMethod::Delete,
    };
    doc.paths
        .add_path_operation(item.path, vec![method], operation.build());
}

/// Adds operation `O`'s path item to `doc`, and the schemas it names to `schemas`.
fn declared<O>(doc: &mut utoipa::openapi::OpenApi, schemas: &mut Schemas)
where
    O: DevOperation,
    O::Answer: utoipa::ToSchema,
    O::Payload: utoipa::ToSchema,
{
    let body = match O::BODY {
        Body::Json | Body::OptionalJson => Some(("application/json", named::<O::Payload>(schemas))),
        // A release's form has no payload type of its own; an artifact's does.
        Body::Form if std::any::type_name::<O::Payload>() == "()" => {
            Some(("multipart/form-data", named::<paths::ReleaseForm>(schemas)))
        }
        Body::Form => Some(("multipart/form-data", named::<O::Payload>(schemas))),
        Body::Ignored | Body::Empty => None,
    };
    let answer = enveloped::<O::Answer>(schemas);
    let mut params = vec![&TEAM];
    params.extend(O::DOC.params);
    add_item(
        doc,
        Item {
            id: O::NAME,
            method: O::METHOD,
            path: format!("/api/v1/dev/teams/{{teamId}}/{}", O::PATH),
            params,
            doc: &O::DOC,
            body,
            status: O::STATUS,
            answer: ("application/json", schema_ref(answer)),
            security: None,
        },
    );
}

/// The path items of the admin API, one per declared operation (see
/// `app::admin::AdminOperation`), and the schemas they name.
fn admin_operations(doc: &mut utoipa::openapi::OpenApi) {
    use crate::app::admin::{AdminOperation, admin_operations};
    use utoipa::openapi::schema::{ObjectBuilder, Type};

    fn admin<E>(doc: &mut utoipa::openapi::OpenApi, schemas: &mut Schemas)
    where
        E: AdminOperation,
        E::Payload: utoipa::ToSchema,
        E::Data: utoipa::ToSchema,
    {
        let body =
            (E::BODY == Body::Json).then(|| ("application/json", named::<E::Payload>(schemas)));
        let answer = match E::STREAMED {
            None => (
                "application/json",
                schema_ref(enveloped::<E::Data>(schemas)),
            ),
            Some(media) => (media, ObjectBuilder::new().schema_type(Type::String).into()),
        };
        let params = if E::PATH.contains("{teamId}") {
            vec![&TEAM]
        } else {
            Vec::new()
        };
        add_item(
            doc,
            Item {
                id: E::ID,
                method: E::METHOD,
                path: format!("/api/v1/admin/{}", E::PATH),
                params,
                doc: &E::DOC,
                body,
                status: E::STATUS,
                answer,
                security: Some(SecurityRequirement::new::<&str, [&str; 0], &str>(
                    "adminToken",
                    [],
                )),
            },
        );
    }
    macro_rules! each {
        ($($endpoint:ty),*) => {{
            let mut schemas = Vec::new();
            $(admin::<$endpoint>(doc, &mut schemas);)*
            schemas
        }};
    }
    let schemas = admin_operations!(each);
    let components = doc.components.get_or_insert_with(Default::default);
    for (name, schema) in schemas {
        components.schemas.entry(name).or_insert(schema);
    }
}

/// `{teamId}`, the first parameter of every developer operation.
const TEAM: Param = Param::path("teamId", "The team", Kind::Uuid);

/// A parameter as the document declares it.
fn parameter(param: &Param) -> utoipa::openapi::path::Parameter {
    use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
    use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
    use utoipa::openapi::{Ref, Required};

    let string = ObjectBuilder::new().schema_type(Type::String);
    let schema: RefOr<Schema> = match param.kind {
        Kind::Uuid => string
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)))
            .into(),
        Kind::DateTime => string
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
            .into(),
        Kind::Pattern(pattern) => string.pattern(Some(pattern)).into(),
        Kind::Text => string.into(),
        Kind::Boolean => ObjectBuilder::new().schema_type(Type::Boolean).into(),
        Kind::Integer(minimum) => ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
            .minimum(Some(minimum))
            .into(),
        Kind::Schema(name) => Ref::from_schema_name(name).into(),
    };
    let (place, required) = match param.place {
        In::Path => (ParameterIn::Path, Required::True),
        In::Query => (ParameterIn::Query, Required::False),
    };
    ParameterBuilder::new()
        .name(param.name)
        .parameter_in(place)
        .description(Some(param.description))
        .required(required)
        .schema(Some(schema))
        .build()
}

/// Each update feed and download again under a feed token (`…/updates/{productId}/t/{token}/…`):
/// the same operation, with the token as a path parameter instead of a license key header.
fn token_twins(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
    const PREFIX: &str = "/api/v1/client/teams/{teamId}/updates/{productId}/";
    let twins: Vec<(String, utoipa::openapi::PathItem)> = doc
        .paths
        .paths
        .iter()
        .filter(|(path, _)| path.starts_with(PREFIX) && !path.ends_with("/token"))
        .map(|(path, item)| {
            let mut item = item.clone();
            for operation in [item.get.as_mut(), item.head.as_mut()].into_iter().flatten() {
                let token: Parameter = ParameterBuilder::new()
                    .name("token")
                    .parameter_in(ParameterIn::Path)
                    .required(utoipa::openapi::Required::True)
                    .description(Some(
                        "A feed token (`POST …/updates/{productId}/token`), for updaters that cannot send a header",
                    ))
                    .schema(Some(utoipa::openapi::ObjectBuilder::new().schema_type(utoipa::openapi::schema::Type::String)))
                    .build();
                operation
                    .parameters
                    .get_or_insert_with(Vec::new)
                    .push(token.into());
                operation.operation_id = operation.operation_id.take().map(|id| format!("{id}_under_token"));
                operation.summary = operation.summary.take().map(|s| format!("{s} (under a feed token)"));
            }
            (path.replacen(PREFIX, &format!("{PREFIX}t/{{token}}/"), 1), item)
        })
        .collect();
    doc.paths.paths.extend(twins);
}

/// The document as pretty JSON, as checked in, with the scopes of `operations` (the developer
/// API's table) written into it.
pub fn document(operations: &[Scoped]) -> String {
    let mut doc = ApiDoc::openapi();
    token_twins(&mut doc);
    developer_operations(&mut doc);
    admin_operations(&mut doc);
    scopes_of_operations(&mut doc, operations);
    idempotency_keys_of_writes(&mut doc);
    doc.to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

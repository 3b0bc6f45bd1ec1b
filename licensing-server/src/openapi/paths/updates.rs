//! (ext) The update feeds: Tauri, Sparkle, Velopack, electron-updater and the generic signed
//! feed, the downloads they point at, and feed tokens. Each feed and download is also served
//! under a feed token (`…/updates/{productId}/t/{token}/…`): the document gets those twins from
//! these declarations ([`super::super::token_twins`]).

use super::*;

/// The refusals of a feed or download.
#[derive(utoipa::IntoResponses)]
pub(in crate::openapi) enum FeedRefused {
    /// A malformed request.
    #[response(
        status = 400,
        description = "BAD_REQUEST: a license key in the query string (refused before anything else: send it in a header or use a feed token), a malformed id, an unknown target, architecture, channel name or version"
    )]
    Malformed(Envelope<Option<ErrorData>>),
    /// No credential, or a token that does not work.
    #[response(
        status = 401,
        description = "UNAUTHORIZED: no license key (`Authorization: License <key>` or `X-License-Key`) for a product whose feed is not public; a feed token that is malformed, expired, of another product or signed by a key the team no longer uses"
    )]
    Unauthorized(Envelope<Option<ErrorData>>),
    /// The license may not update.
    #[response(
        status = 403,
        description = "LICENSE_SUSPENDED, LICENSE_EXPIRED (past its policy's grace), IP_BLACKLISTED, COUNTRY_BLACKLISTED, NO_ACCESS_TO_RELEASE (the license does not grant the product, or the release is limited to other licenses), RELEASE_DRAFT"
    )]
    Refused(Envelope<Option<ErrorData>>),
    /// Something named that is not there.
    #[response(
        status = 404,
        description = "TEAM_NOT_FOUND, PRODUCT_NOT_FOUND, LICENSE_NOT_FOUND, RELEASE_NOT_FOUND (no such channel; electron-updater: no release for the platform), ARTIFACT_NOT_FOUND; BAD_REQUEST for a path no feed has"
    )]
    NotFound(Envelope<Option<ErrorData>>),
    /// The address's rate limit.
    #[response(
        status = 429,
        description = "RATE_LIMIT: too many requests from this address (`Retry-After`)",
        headers(("Retry-After" = u64, description = "Seconds until a request is allowed"))
    )]
    RateLimit(Envelope<Option<ErrorData>>),
    /// A failure of the server.
    #[response(status = 500, description = "INTERNAL_SERVER_ERROR")]
    Internal(Envelope<Option<ErrorData>>),
}

/// `{productId}` of the update feeds.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path, rename_all = "camelCase")]
pub(in crate::openapi) struct ProductPath {
    /// The product
    #[param(format = "uuid")]
    product_id: String,
}

/// `?channel=`.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(in crate::openapi) struct ChannelQuery {
    /// The channel: a branch's name; `stable` (the default) is the releases without one
    channel: Option<String>,
}

/// The generic feed's answer.
#[derive(ToSchema)]
pub(in crate::openapi) struct LatestRelease {
    /// `{id, version, channel, notes, critical, publishedAt, artifacts: [Artifact and its url]}`.
    #[schema(value_type = Object)]
    release: (),
}

/// A minted feed token.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(in crate::openapi) struct FeedToken {
    /// The token, for the paths `…/updates/{productId}/t/{token}/…`.
    token: String,
    /// When it stops working (30 days).
    expires_at: licensing_core::Timestamp,
}

/// (ext) Mint a feed token: verify's license checks for the product (the device's blacklist
/// when `hardwareIdentifier` is given; no device is recorded), then a token signed by the team's
/// signing key, valid 30 days, for the paths `…/updates/{productId}/t/{token}/…` (Velopack,
/// Sparkle's enclosure downloads). Suspending the license revokes it.
#[utoipa::path(
    post,
    path = "/api/v1/client/teams/{teamId}/updates/{productId}/token",
    tag = "extensions",
    params(TeamPath, ProductPath),
    request_body = licensing_core::api::requests::FeedTokenBody,
    responses(
        (status = 200, description = "VALID, \"Feed token issued\"", body = Envelope<FeedToken>, headers(
            ("X-Signature" = String, description = "Signature of this exchange"),
            ("X-Signature-Key-Id" = String, description = "The `kid` of the key that signed")
        )),
        FeedRefused,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn feed_token() {}

/// (ext) Tauri's dynamic update check: the newest release after `currentVersion` with a signed
/// artifact for the target and architecture (a universal one fits any), as Tauri's updater
/// reads it; 204 when none is newer. Licensed answers are `Cache-Control: private, no-store`.
#[utoipa::path(
    get,
    path = "/api/v1/client/teams/{teamId}/updates/{productId}/tauri/{target}/{arch}/{currentVersion}",
    tag = "extensions",
    params(
        TeamPath,
        ProductPath,
        ("target" = String, Path, description = "windows, darwin or linux (Tauri's `{{target}}`)"),
        ("arch" = String, Path, description = "x86_64, aarch64, i686 or armv7 (Tauri's `{{arch}}`)"),
        ("currentVersion" = String, Path, description = "The running version (Tauri's `{{current_version}}`), a semantic version"),
        ChannelQuery
    ),
    responses(
        (status = 200, description = "`{version, notes, pub_date, url, signature}`; `signature` is the minisign signature as Tauri's updater decodes it", content_type = "application/json", body = Object),
        (status = 204, description = "Nothing newer"),
        FeedRefused,
    )
)]
pub(in crate::openapi) fn tauri() {}

/// (ext) Sparkle's appcast: the releases with a macOS artifact, newest first (a channel's own
/// marked `sparkle:channel`), each with its enclosure's length and `sparkle:edSignature`.
#[utoipa::path(
    get,
    path = "/api/v1/client/teams/{teamId}/updates/{productId}/sparkle/appcast.xml",
    tag = "extensions",
    params(TeamPath, ProductPath, ChannelQuery),
    responses(
        (status = 200, description = "RSS 2.0 with the Sparkle namespace", content_type = "application/rss+xml", body = String),
        (status = 304, description = "A public feed's `ETag` matched `If-None-Match`"),
        FeedRefused,
    )
)]
pub(in crate::openapi) fn sparkle() {}

/// (ext) Velopack's feed: `{"Assets": [...]}`, the `.nupkg` packages offered (`Full`, or
/// `Delta` for a name with `-delta`), with file names relative to the feed. `win`, `osx` and
/// `linux` (Velopack's default channels) are the stable packages of that platform unless a
/// branch has the name.
#[utoipa::path(
    get,
    path = "/api/v1/client/teams/{teamId}/updates/{productId}/velopack/releases.{channel}.json",
    tag = "extensions",
    params(
        TeamPath,
        ProductPath,
        ("channel" = String, Path, description = "A branch's name, stable, or win, osx, linux")
    ),
    responses(
        (status = 200, description = "Velopack's asset feed", content_type = "application/json", body = Object),
        (status = 304, description = "A public feed's `ETag` matched `If-None-Match`"),
        FeedRefused,
    )
)]
pub(in crate::openapi) fn velopack() {}

/// (ext) Velopack's (and Squirrel's) legacy `RELEASES`: `SHA1 FileName Size` per package.
#[utoipa::path(
    get,
    path = "/api/v1/client/teams/{teamId}/updates/{productId}/velopack/RELEASES",
    tag = "extensions",
    params(TeamPath, ProductPath, ChannelQuery),
    responses(
        (status = 200, description = "One line per package", content_type = "text/plain", body = String),
        FeedRefused,
    )
)]
pub(in crate::openapi) fn velopack_legacy() {}

/// (ext) A Velopack package, by the file name its feed gives (streamed, with `Range`).
#[utoipa::path(
    get,
    path = "/api/v1/client/teams/{teamId}/updates/{productId}/velopack/{fileName}",
    tag = "extensions",
    params(
        TeamPath,
        ProductPath,
        ("fileName" = String, Path, description = "The package's `FileName`")
    ),
    responses(
        (status = 200, description = "The package", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 206, description = "The range asked", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 410, description = "RELEASE_YANKED: the release was withdrawn (ARCHIVED)", body = Envelope<Option<ErrorData>>),
        (status = 416, description = "BAD_REQUEST: the range lies past the end", body = Envelope<Option<ErrorData>>),
        FeedRefused,
    )
)]
pub(in crate::openapi) fn velopack_file() {}

/// (ext) electron-updater's channel file: `{channel}.yml` (Windows), `{channel}-mac.yml`,
/// `{channel}-linux.yml`, `{channel}-linux-arm64.yml`; `latest` is the stable channel.
#[utoipa::path(
    get,
    path = "/api/v1/client/teams/{teamId}/updates/{productId}/electron/{channelFile}",
    tag = "extensions",
    params(
        TeamPath,
        ProductPath,
        ("channelFile" = String, Path, description = "latest.yml, latest-mac.yml, beta-linux.yml, …")
    ),
    responses(
        (status = 200, description = "`version`, `files[{url, sha512, size}]`, `path`, `sha512`, `releaseDate`", content_type = "text/yaml", body = String),
        (status = 304, description = "A public feed's `ETag` matched `If-None-Match`"),
        FeedRefused,
    )
)]
pub(in crate::openapi) fn electron() {}

/// (ext) The generic feed, enveloped and signed like verify (`X-Signature` over the query
/// string and the body): the newest release after `version` with an artifact for the platform
/// and architecture asked; 204 when none is newer.
#[utoipa::path(
    get,
    path = "/api/v1/client/teams/{teamId}/updates/{productId}/latest",
    tag = "extensions",
    params(
        TeamPath,
        ProductPath,
        ("version" = Option<String>, Query, description = "The running version (a semantic version); none: the newest release"),
        ("platform" = Option<String>, Query, description = "windows, darwin or linux"),
        ("arch" = Option<String>, Query, description = "x86_64, aarch64, i686, armv7 or universal"),
        ChannelQuery
    ),
    responses(
        (status = 200, description = "VALID, \"Update available\"", body = Envelope<LatestRelease>, headers(
            ("X-Signature" = String, description = "Signature of this exchange (the query string is the request)"),
            ("X-Signature-Key-Id" = String, description = "The `kid` of the key that signed")
        )),
        (status = 204, description = "Nothing newer"),
        FeedRefused,
    )
)]
pub(in crate::openapi) fn latest() {}

/// (ext) An artifact's download: streamed with `Content-Length`, `ETag` (its SHA-256) and
/// `Accept-Ranges`; one `Range` answers 206; `HEAD` answers the headers only. Recorded in the
/// license's request history (`DOWNLOAD`) and raised as `release.downloaded`.
#[utoipa::path(
    get,
    path = "/api/v1/client/teams/{teamId}/updates/{productId}/download/{artifactId}/{filename}",
    tag = "extensions",
    params(
        TeamPath,
        ProductPath,
        ("artifactId" = String, Path, format = "uuid", description = "The artifact"),
        ("filename" = String, Path, description = "Its file name")
    ),
    responses(
        (status = 200, description = "The file", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 206, description = "The range asked", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 304, description = "`If-None-Match` matched the `ETag`"),
        (status = 410, description = "RELEASE_YANKED: the release was withdrawn (ARCHIVED)", body = Envelope<Option<ErrorData>>),
        (status = 416, description = "BAD_REQUEST: the range lies past the end", body = Envelope<Option<ErrorData>>),
        FeedRefused,
    )
)]
pub(in crate::openapi) fn download() {}

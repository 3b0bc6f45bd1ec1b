//! (ext) Update feeds under `{client}/updates/{productId}/` (and `…/t/{token}/…`): Tauri's
//! dynamic JSON, Sparkle's appcast, Velopack's `releases.{channel}.json` and legacy `RELEASES`,
//! electron-updater's `{channel}.yml`, the generic signed `latest`, and the downloads they point
//! at (streamed, with `Range`), plus `POST …/token` (a feed token for updaters that cannot send a
//! header).
//!
//! A license key in the query string is refused before anything else. Refusals are enveloped
//! and signed once the team is known; the updaters' own formats and downloads are not (their
//! trust is the artifacts' signatures); the generic feed is enveloped and signed like verify.

use std::fmt::Write as _;
use std::net::IpAddr;

use bytes::{Buf, Bytes};
use futures_util::Stream;
use licensing_core::api::Envelope;
use licensing_core::api::requests::{
    FeedTokenBody, LatestQuery, MAX_JSON_BODY, channel_of, refuse_key_in_query,
};
use licensing_core::model::{Arch, Artifact, ArtifactKind, ClientEndpoint, Platform, Release};
use licensing_core::updates::{self, Offer};
use licensing_core::{ApiError, ArtifactId, LicenseKey, ProductId, ResultCode, TeamId, Timestamp};
use serde::Serialize;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use warp::path::Tail;

use super::{error_answer, json_answer};
use crate::app::client::Seen;
use crate::app::client::feed::{self, Access, Credential};
use crate::http::{Response, client_addr, path_param, raw_query, read_body, with_state};
use crate::state::AppState;

/// How much of a file a download reads at a time.
const DOWNLOAD_CHUNK: usize = 64 * 1024;

/// Releases an appcast lists, at most (newest first).
const APPCAST_ITEMS: usize = 50;

/// The update routes.
pub(super) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let token =
        warp::path!("api" / "v1" / "client" / "teams" / String / "updates" / String / "token")
            .and(warp::post())
            .and(with_state(state.clone()))
            .and(client_addr())
            .and(warp::body::stream())
            .then(
                |team: String, product: String, state: AppState, ip: IpAddr, body| async move {
                    mint(state, (team, product), ip, body).await
                },
            );
    let feeds = warp::path!("api" / "v1" / "client" / "teams" / String / "updates" / ..)
        .and(warp::path::tail())
        .and(warp::method())
        .and(warp::header::headers_cloned())
        .and(raw_query())
        .and(with_state(state))
        .and(client_addr())
        .then(
            |team: String,
             tail: Tail,
             method: Method,
             headers: HeaderMap,
             query: String,
             state: AppState,
             ip: IpAddr| async move {
                let asked = Asked {
                    tail: tail.as_str(),
                    method: &method,
                    headers: &headers,
                    query: &query,
                };
                feed(state, team, asked, ip).await
            },
        );
    token.or(feeds).unify().boxed()
}

/// What a feed request asks.
struct Asked<'a> {
    tail: &'a str,
    method: &'a Method,
    headers: &'a HeaderMap,
    query: &'a str,
}

/// `POST …/updates/{productId}/token`: a feed token, enveloped and signed like verify.
async fn mint<S, B>(
    state: AppState,
    (team, product): (String, String),
    ip: IpAddr,
    body: S,
) -> Response
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let mut seen = Seen::updates(ClientEndpoint::UpdateCheck);
    let mut request = Bytes::new();
    let outcome = async {
        let team = path_param::<TeamId>("teamId", &team)?;
        let product = path_param::<ProductId>("productId", &product)?;
        request = read_body(body, MAX_JSON_BODY).await?;
        let input = FeedTokenBody::parse(&request)?;
        feed::mint_token(
            &state,
            (team, product),
            (&input.license_key, input.hardware_id.as_ref()),
            ip,
            &mut seen,
        )
        .await
    }
    .await;
    let code = outcome
        .as_ref()
        .map_or_else(ApiError::code, |_| ResultCode::Valid);
    seen.count(&state, code, state.limits.verify.as_ref(), ip)
        .await;
    match outcome {
        Ok(minted) => {
            let envelope = Envelope::valid(minted, "Feed token issued", None, Timestamp::now());
            json_answer(&seen, 200, &envelope, &request)
        }
        Err(error) => error_answer(&seen, &error, &request),
    }
}

/// What a feed path asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Route {
    /// `tauri/{target}/{arch}/{currentVersion}`.
    Tauri {
        platform: Platform,
        arch: Arch,
        current: updates::SemVer,
    },
    /// `sparkle/appcast.xml`.
    Sparkle,
    /// `velopack/releases.{channel}.json`.
    VelopackFeed { channel: String },
    /// `velopack/RELEASES` (legacy), of a channel (`RELEASES-{channel}`, or the query's).
    VelopackLegacy { channel: Option<String> },
    /// `velopack/{FileName}`: a package, by its name.
    VelopackFile { name: String },
    /// `electron/{channel}{-mac|-linux|-linux-arm64}.yml`.
    Electron {
        channel: String,
        platform: Platform,
        arch: Option<Arch>,
    },
    /// `latest`.
    Latest,
    /// `download/{artifactId}/{filename}`.
    Download { id: ArtifactId, name: String },
}

impl Route {
    /// Whether it serves a file.
    fn is_download(&self) -> bool {
        matches!(self, Self::Download { .. } | Self::VelopackFile { .. })
    }
}

/// A path under `updates/`: the product, the token (if any) and the route; 400 or 404 naming
/// what is wrong.
fn parse_path(tail: &str) -> Result<(String, Option<String>, Route), ApiError> {
    let segments: Vec<String> = tail
        .split('/')
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|c| c.into_owned())
                .map_err(|_| ApiError::bad_request("The path is not UTF-8 once decoded"))
        })
        .collect::<Result<_, _>>()?;
    let (product, rest) = segments
        .split_first()
        .ok_or_else(ApiError::route_not_found)?;
    let (token, rest) = match rest {
        [t, token, rest @ ..] if t == "t" => (Some(token.clone()), rest),
        _ => (None, rest),
    };
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let route = match rest.as_slice() {
        ["tauri", target, arch, current] => Route::Tauri {
            platform: Platform::parse(target).map_err(|e| ApiError::bad_field("target", &e))?,
            arch: Arch::parse(arch).map_err(|e| ApiError::bad_field("arch", &e))?,
            current: updates::semantic(current).ok_or_else(|| {
                ApiError::bad_field(
                    "currentVersion",
                    "must be a semantic version, such as 1.4.0 (Tauri sends the application's version)",
                )
            })?,
        },
        ["sparkle", "appcast.xml"] => Route::Sparkle,
        ["velopack", "RELEASES"] => Route::VelopackLegacy { channel: None },
        ["velopack", name] if name.starts_with("RELEASES-") => Route::VelopackLegacy {
            channel: Some(name["RELEASES-".len()..].to_owned()),
        },
        ["velopack", name] if name.starts_with("releases.") && name.ends_with(".json") => {
            Route::VelopackFeed {
                channel: name["releases.".len()..name.len() - ".json".len()].to_owned(),
            }
        }
        ["velopack", name] if !name.is_empty() => Route::VelopackFile {
            name: (*name).to_owned(),
        },
        ["electron", name] if name.ends_with(".yml") => {
            let stem = &name[..name.len() - ".yml".len()];
            let (channel, platform, arch) = if let Some(c) = stem.strip_suffix("-linux-arm64") {
                (c, Platform::Linux, Some(Arch::Aarch64))
            } else if let Some(c) = stem.strip_suffix("-linux") {
                (c, Platform::Linux, Some(Arch::X86_64))
            } else if let Some(c) = stem.strip_suffix("-mac") {
                (c, Platform::Darwin, None)
            } else {
                (stem, Platform::Windows, None)
            };
            Route::Electron {
                channel: channel.to_owned(),
                platform,
                arch,
            }
        }
        ["electron", _] => {
            return Err(ApiError::bad_field(
                "channelFile",
                "must be electron-updater's channel file: {channel}.yml, {channel}-mac.yml, {channel}-linux.yml or {channel}-linux-arm64.yml",
            ));
        }
        ["latest"] => Route::Latest,
        ["download", id, name] => Route::Download {
            id: path_param::<ArtifactId>("artifactId", id)?,
            name: (*name).to_owned(),
        },
        _ => return Err(ApiError::route_not_found()),
    };
    Ok((product.clone(), token, route))
}

/// The license key an updater sends in a header: `Authorization: License <key>` or
/// `X-License-Key: <key>`.
fn credential(headers: &HeaderMap) -> Result<Credential, ApiError> {
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .map(|v| v.to_str().map(str::trim).unwrap_or_default().to_owned())
    };
    let from_authorization = text(header::AUTHORIZATION).and_then(|value| {
        let (scheme, key) = value.split_once(' ')?;
        scheme
            .eq_ignore_ascii_case("License")
            .then(|| key.trim().to_owned())
    });
    let key = from_authorization.or_else(|| text(header::HeaderName::from_static("x-license-key")));
    match key {
        None => Ok(Credential::None),
        Some(key) => LicenseKey::parse(&key)
            .map(Credential::Key)
            .map_err(|e| ApiError::bad_field("licenseKey", &format!("(the header's) {e}"))),
    }
}

/// The absolute addresses of a reader's feeds and downloads.
struct Urls {
    /// `{base}/api/v1/client/teams/{team}/updates/{product}` (and `/t/{token}`).
    prefix: String,
}

impl Urls {
    fn new(
        state: &AppState,
        headers: &HeaderMap,
        (team, product): (TeamId, ProductId),
        token: Option<&str>,
    ) -> Self {
        let base = match &state.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => {
                let host = headers
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or("localhost");
                format!("http://{host}")
            }
        };
        let mut prefix = format!("{base}/api/v1/client/teams/{team}/updates/{product}");
        if let Some(token) = token {
            let _ = write!(prefix, "/t/{}", encode(token));
        }
        Self { prefix }
    }

    fn download(&self, artifact: &Artifact) -> String {
        format!(
            "{}/download/{}/{}",
            self.prefix,
            artifact.id,
            encode(&artifact.filename)
        )
    }

    fn sparkle(&self, channel: &str) -> String {
        format!(
            "{}/sparkle/appcast.xml?channel={}",
            self.prefix,
            encode(channel)
        )
    }
}

/// A path segment, percent-encoded.
fn encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC)
        .to_string()
        .replace("%2E", ".")
        .replace("%2D", "-")
        .replace("%5F", "_")
}

/// A feed or download request.
async fn feed(state: AppState, team: String, asked: Asked<'_>, ip: IpAddr) -> Response {
    let parsed = parse_path(asked.tail);
    let download = parsed.as_ref().is_ok_and(|(_, _, r)| r.is_download());
    let mut seen = Seen::updates(if download {
        ClientEndpoint::Download
    } else {
        ClientEndpoint::UpdateCheck
    });
    let limiter = if download {
        state.limits.classloader_ip.as_ref()
    } else {
        state.limits.verify.as_ref()
    };
    let outcome = async {
        refuse_key_in_query(asked.query)?;
        let head = *asked.method == Method::HEAD;
        if !head && *asked.method != Method::GET {
            return Err(ApiError::method_not_allowed());
        }
        let team = path_param::<TeamId>("teamId", &team)?;
        let (product, token, route) = parsed?;
        let product = path_param::<ProductId>("productId", &product)?;
        let credential = match &token {
            Some(token) => Credential::Token(token.clone()),
            None => credential(asked.headers)?,
        };
        let access =
            feed::access(&state, (team, product), &credential, ip, limiter, &mut seen).await?;
        let urls = Urls::new(&state, asked.headers, (team, product), token.as_deref());
        let answer = answer(&state, &access, &route, &urls, &asked, &seen).await?;
        if let Some(served) = answer.served {
            feed::downloaded(&state, &access, served, ip);
        }
        Ok(answer.response)
    }
    .await;
    let code = outcome
        .as_ref()
        .map_or_else(ApiError::code, |_| ResultCode::Valid);
    seen.count(&state, code, limiter, ip).await;
    match outcome {
        Ok(response) => response,
        Err(error) => error_answer(&seen, &error, asked.query.as_bytes()),
    }
}

/// A feed's or download's answer, and the artifact it served (a download's event).
struct Answered<'a> {
    response: Response,
    served: Option<(&'a Release, &'a Artifact)>,
}

/// The answer of `route` to a reader let in.
async fn answer<'a>(
    state: &AppState,
    access: &'a Access,
    route: &Route,
    urls: &Urls,
    asked: &Asked<'_>,
    seen: &Seen,
) -> Result<Answered<'a>, ApiError> {
    let feed_of = |response: Response| Answered {
        response: cached(access, asked.headers, response),
        served: None,
    };
    let branch = |name: &str| {
        access.channel(name).map_err(|()| {
            ApiError::new(
                ResultCode::ReleaseNotFound,
                format!("The product has no channel {name:?} (channels are its branches; stable is releases without one)"),
            )
        })
    };
    Ok(match route {
        Route::Tauri {
            platform,
            arch,
            current,
        } => {
            let channel = branch(&channel_of(asked.query)?)?;
            feed_of(tauri(access, channel, (*platform, *arch), current, urls))
        }
        Route::Sparkle => {
            let name = channel_of(asked.query)?;
            feed_of(sparkle(access, &name, branch(&name)?, urls))
        }
        Route::VelopackFeed { channel } => {
            let (branch, platform) = velopack_channel(access, channel)?;
            feed_of(velopack(access, branch, platform))
        }
        Route::VelopackLegacy { channel } => {
            let name = match channel {
                Some(name) => name.clone(),
                None => channel_of(asked.query)?,
            };
            let (branch, platform) = velopack_channel(access, &name)?;
            feed_of(velopack_legacy(access, branch, platform))
        }
        Route::Electron {
            channel,
            platform,
            arch,
        } => {
            let branch = branch(channel)?;
            feed_of(electron(access, branch, (*platform, *arch), urls)?)
        }
        Route::Latest => {
            let query = LatestQuery::parse(asked.query)?;
            let branch = branch(&query.channel)?;
            latest(access, branch, &query, urls, asked.query, seen)
        }
        Route::Download { id, name } => {
            let (release, artifact) = access.artifact(*id)?;
            if artifact.filename != *name {
                return Err(ApiError::new(
                    ResultCode::ArtifactNotFound,
                    format!("Artifact {id} is named {:?}", artifact.filename),
                ));
            }
            download(state, access, (release, artifact), asked).await?
        }
        Route::VelopackFile { name } => {
            let id = access
                .releases
                .iter()
                .flat_map(|r| &r.artifacts)
                .find(|a| a.kind == ArtifactKind::Nupkg && a.filename == *name)
                .map(|a| a.id)
                .ok_or_else(|| {
                    ApiError::new(ResultCode::ArtifactNotFound, "No package of that name")
                })?;
            let (release, artifact) = access.artifact(id)?;
            download(state, access, (release, artifact), asked).await?
        }
    })
}

/// Cache headers of a feed: the license's own answers are kept by no cache; a public feed's
/// carry an `ETag` (and answer 304 to it).
fn cached(access: &Access, headers: &HeaderMap, mut response: Response) -> Response {
    if access.is_private() {
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("private, no-store"),
        );
        return response;
    }
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=60"),
    );
    let Some(tag) = response.headers().get(header::ETAG).cloned() else {
        return response;
    };
    if headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|seen| seen.as_bytes() == tag.as_bytes())
    {
        let mut not_modified = Response::new(Vec::new().into());
        *not_modified.status_mut() = StatusCode::NOT_MODIFIED;
        not_modified.headers_mut().insert(header::ETAG, tag);
        not_modified.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=60"),
        );
        return not_modified;
    }
    response
}

/// A feed's body, with its content type and an `ETag` of its bytes.
fn body(status: StatusCode, content_type: &'static str, bytes: Vec<u8>) -> Response {
    use sha2::Digest as _;
    let tag = format!("\"{}\"", hex::encode(&sha2::Sha256::digest(&bytes)[..16]));
    let mut response = Response::new(bytes.into());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(tag) = HeaderValue::from_str(&tag) {
        headers.insert(header::ETAG, tag);
    }
    headers.insert(
        header::HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// 204: nothing newer.
fn no_content() -> Response {
    let mut response = Response::new(Vec::new().into());
    *response.status_mut() = StatusCode::NO_CONTENT;
    response
}

/// The order in which a platform's kinds are preferred where an updater takes one file.
fn preference(platform: Platform, kind: ArtifactKind) -> usize {
    let order: &[ArtifactKind] = match platform {
        Platform::Windows => &[ArtifactKind::Exe, ArtifactKind::Msi, ArtifactKind::Zip],
        Platform::Darwin => &[ArtifactKind::TarGz, ArtifactKind::Zip, ArtifactKind::Dmg],
        Platform::Linux => &[
            ArtifactKind::AppImage,
            ArtifactKind::TarGz,
            ArtifactKind::Deb,
            ArtifactKind::Rpm,
        ],
    };
    order.iter().position(|k| *k == kind).unwrap_or(order.len())
}

/// Whether `artifact` runs on `platform` and `arch` (a universal one runs on every
/// architecture of its platform).
fn runs_on(artifact: &Artifact, platform: Platform, arch: Option<Arch>) -> bool {
    artifact.platform == platform
        && arch.is_none_or(|arch| artifact.arch == arch || artifact.arch == Arch::Universal)
}

/// Tauri: the newest release after `current` with a signed artifact for the target, as
/// `{version, notes, pub_date, url, signature}`; 204 when there is none.
fn tauri(
    access: &Access,
    branch: Option<licensing_core::BranchId>,
    (platform, arch): (Platform, Arch),
    current: &updates::SemVer,
    urls: &Urls,
) -> Response {
    let wanted = |a: &Artifact| runs_on(a, platform, Some(arch)) && a.signature.is_some();
    let offered = access.offered(branch);
    let Some((offer, _)) = offered.newest(Some(current), wanted) else {
        return no_content();
    };
    let Some(artifact) = offer
        .release
        .artifacts
        .iter()
        .filter(|a| wanted(a))
        .min_by_key(|a| (preference(platform, a.kind), a.arch == Arch::Universal))
    else {
        return no_content();
    };
    #[derive(Serialize)]
    struct TauriUpdate<'a> {
        version: String,
        notes: &'a str,
        pub_date: String,
        url: String,
        signature: &'a str,
    }
    let update = TauriUpdate {
        version: offer.version.to_string(),
        notes: offer.release.notes.as_deref().unwrap_or_default(),
        pub_date: offer.release.created_at.to_string(),
        url: urls.download(artifact),
        signature: artifact.signature.as_deref().unwrap_or_default(),
    };
    body(
        StatusCode::OK,
        "application/json",
        serde_json::to_vec(&update).unwrap_or_default(),
    )
}

/// XML text, escaped.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 cannot hold at all.
            c if c.is_control() && !matches!(c, '\n' | '\r' | '\t') => {}
            c => out.push(c),
        }
    }
    out
}

/// Sparkle: an appcast of the releases with a macOS artifact, newest first: those of the stable
/// channel, and for another channel also its own, marked with `sparkle:channel`.
fn sparkle(
    access: &Access,
    name: &str,
    branch: Option<licensing_core::BranchId>,
    urls: &Urls,
) -> Response {
    let stable = access.offered(None);
    let own = branch.map(|b| access.offered(Some(b)));
    let mut offers: Vec<(Offer<'_>, bool)> = stable.all().map(|o| (o, false)).collect();
    if let Some(own) = &own {
        offers.extend(own.all().map(|o| (o, true)));
    }
    offers.sort_by(|(a, _), (b, _)| b.version.cmp(a.version));
    let title = xml(&access.product.name);
    let mut out = String::with_capacity(4096);
    out.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    out.push_str("<rss version=\"2.0\" xmlns:sparkle=\"http://www.andymatuschak.org/xml-namespaces/sparkle\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\">\n<channel>\n");
    let _ = writeln!(out, "<title>{title}</title>");
    let _ = writeln!(out, "<link>{}</link>", xml(&urls.sparkle(name)));
    let _ = writeln!(out, "<description>Updates of {title}</description>");
    out.push_str("<language>en</language>\n");
    let items = offers.iter().filter_map(|(offer, own)| {
        let artifact = offer
            .release
            .artifacts
            .iter()
            .filter(|a| a.platform == Platform::Darwin)
            .min_by_key(|a| {
                (
                    preference(Platform::Darwin, a.kind),
                    a.arch != Arch::Universal,
                )
            })?;
        Some((offer, *own, artifact))
    });
    for (offer, own, artifact) in items.take(APPCAST_ITEMS) {
        let version = xml(&offer.version.to_string());
        out.push_str("<item>\n");
        let _ = writeln!(out, "<title>Version {version}</title>");
        let _ = writeln!(
            out,
            "<pubDate>{}</pubDate>",
            offer.release.created_at.as_datetime().to_rfc2822()
        );
        let _ = writeln!(out, "<sparkle:version>{version}</sparkle:version>");
        let _ = writeln!(
            out,
            "<sparkle:shortVersionString>{version}</sparkle:shortVersionString>"
        );
        if own {
            let _ = writeln!(out, "<sparkle:channel>{}</sparkle:channel>", xml(name));
        }
        if offer.release.critical {
            out.push_str("<sparkle:criticalUpdate></sparkle:criticalUpdate>\n");
        }
        if let Some(notes) = &offer.release.notes {
            let _ = writeln!(out, "<description>{}</description>", xml(notes));
        }
        let _ = write!(
            out,
            "<enclosure url=\"{}\" length=\"{}\" type=\"application/octet-stream\"",
            xml(&urls.download(artifact)),
            artifact.size
        );
        if let Some(signature) = &artifact.ed_signature {
            let _ = write!(out, " sparkle:edSignature=\"{}\"", xml(signature));
        }
        out.push_str("/>\n</item>\n");
    }
    out.push_str("</channel>\n</rss>\n");
    body(
        StatusCode::OK,
        "application/rss+xml; charset=utf-8",
        out.into_bytes(),
    )
}

/// A Velopack channel: a branch of that name; else the names Velopack gives its default
/// channels (`win`, `osx`, `linux`) are the stable releases' packages of that platform.
fn velopack_channel(
    access: &Access,
    name: &str,
) -> Result<(Option<licensing_core::BranchId>, Option<Platform>), ApiError> {
    if let Ok(branch) = access.channel(name) {
        return Ok((branch, None));
    }
    let platform = match name {
        "win" => Platform::Windows,
        "osx" => Platform::Darwin,
        "linux" => Platform::Linux,
        _ => {
            return Err(ApiError::new(
                ResultCode::ReleaseNotFound,
                format!(
                    "The product has no channel {name:?} (channels are its branches; win, osx and linux are the stable packages of each platform)"
                ),
            ));
        }
    };
    Ok((None, Some(platform)))
}

/// The Velopack packages a reader is offered on a channel, newest first.
fn velopack_assets<'a>(
    offered: &'a updates::Catalog<'a>,
    platform: Option<Platform>,
) -> impl Iterator<Item = (Offer<'a>, &'a Artifact)> + 'a {
    offered.all().flat_map(move |offer| {
        offer
            .release
            .artifacts
            .iter()
            .filter(move |a| {
                a.kind == ArtifactKind::Nupkg && platform.is_none_or(|p| a.platform == p)
            })
            .map(move |a| (offer, a))
    })
}

/// A Velopack package's id: its file name before `-{version}`.
fn package_id(artifact: &Artifact, version: &updates::SemVer, fallback: &str) -> String {
    let marker = format!("-{version}");
    match artifact.filename.find(&marker) {
        Some(at) if at > 0 => artifact.filename[..at].to_owned(),
        _ => fallback
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect(),
    }
}

/// Velopack: `{"Assets": […]}`, each package with a file name relative to the feed.
fn velopack(
    access: &Access,
    branch: Option<licensing_core::BranchId>,
    platform: Option<Platform>,
) -> Response {
    #[derive(Serialize)]
    #[allow(non_snake_case)]
    struct Asset<'a> {
        PackageId: String,
        Version: String,
        Type: &'static str,
        FileName: &'a str,
        SHA1: String,
        SHA256: String,
        Size: u64,
        NotesMarkdown: &'a str,
        NotesHtml: &'a str,
    }
    #[derive(Serialize)]
    #[allow(non_snake_case)]
    struct Feed<'a> {
        Assets: Vec<Asset<'a>>,
    }
    let offered = access.offered(branch);
    let assets = velopack_assets(&offered, platform)
        .map(|(offer, a)| Asset {
            PackageId: package_id(a, offer.version, &access.product.name),
            Version: offer.version.to_string(),
            Type: if a.is_delta() { "Delta" } else { "Full" },
            FileName: &a.filename,
            SHA1: a.sha1.to_ascii_uppercase(),
            SHA256: a.sha256.to_ascii_uppercase(),
            Size: a.size,
            NotesMarkdown: offer.release.notes.as_deref().unwrap_or_default(),
            NotesHtml: "",
        })
        .collect();
    body(
        StatusCode::OK,
        "application/json",
        serde_json::to_vec(&Feed { Assets: assets }).unwrap_or_default(),
    )
}

/// Velopack's (and Squirrel's) legacy `RELEASES`: a line `SHA1 FileName Size` per package.
fn velopack_legacy(
    access: &Access,
    branch: Option<licensing_core::BranchId>,
    platform: Option<Platform>,
) -> Response {
    let offered = access.offered(branch);
    let mut out = String::new();
    for (_, a) in velopack_assets(&offered, platform) {
        let _ = writeln!(
            out,
            "{} {} {}",
            a.sha1.to_ascii_uppercase(),
            encode(&a.filename),
            a.size
        );
    }
    body(
        StatusCode::OK,
        "text/plain; charset=utf-8",
        out.into_bytes(),
    )
}

/// A YAML scalar: a JSON string is a YAML double-quoted one.
fn yaml(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// electron-updater: the newest release with an artifact for the platform, as its channel file
/// describes it (`version`, `files`, `path`, `sha512`, `releaseDate`); 404 when there is none.
fn electron(
    access: &Access,
    branch: Option<licensing_core::BranchId>,
    (platform, arch): (Platform, Option<Arch>),
    urls: &Urls,
) -> Result<Response, ApiError> {
    use base64::Engine as _;
    let offered = access.offered(branch);
    let wanted = |a: &Artifact| runs_on(a, platform, arch) && a.kind != ArtifactKind::Nupkg;
    let Some((offer, _)) = offered.newest(None, wanted) else {
        return Err(ApiError::new(
            ResultCode::ReleaseNotFound,
            format!("No release of this channel has an artifact for {platform}"),
        ));
    };
    let mut files: Vec<&Artifact> = offer
        .release
        .artifacts
        .iter()
        .filter(|a| wanted(a))
        .collect();
    files.sort_by_key(|a| preference(platform, a.kind));
    let sha512 = |a: &Artifact| {
        hex::decode(&a.sha512)
            .map(|raw| base64::engine::general_purpose::STANDARD.encode(raw))
            .unwrap_or_default()
    };
    let mut out = String::with_capacity(1024);
    let _ = writeln!(out, "version: {}", yaml(&offer.version.to_string()));
    out.push_str("files:\n");
    for a in &files {
        let _ = writeln!(out, "  - url: {}", yaml(&urls.download(a)));
        let _ = writeln!(out, "    sha512: {}", yaml(&sha512(a)));
        let _ = writeln!(out, "    size: {}", a.size);
    }
    if let Some(first) = files.first() {
        let _ = writeln!(out, "path: {}", yaml(&urls.download(first)));
        let _ = writeln!(out, "sha512: {}", yaml(&sha512(first)));
    }
    let _ = writeln!(
        out,
        "releaseDate: {}",
        yaml(&offer.release.created_at.to_string())
    );
    if let Some(notes) = &offer.release.notes {
        let _ = writeln!(out, "releaseNotes: {}", yaml(notes));
    }
    if offer.release.critical {
        // electron-updater reads `minimumSystemVersion`, not criticality; the flag is for the
        // application's own code (`updateInfo.critical`).
        out.push_str("critical: true\n");
    }
    Ok(body(
        StatusCode::OK,
        "text/yaml; charset=utf-8",
        out.into_bytes(),
    ))
}

/// An artifact as the generic feed shows it: with its download address.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LatestArtifact<'a> {
    #[serde(flatten)]
    artifact: &'a Artifact,
    url: String,
}

/// The generic feed's release.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LatestRelease<'a> {
    id: licensing_core::ReleaseId,
    version: String,
    channel: &'a str,
    notes: Option<&'a str>,
    critical: bool,
    published_at: Timestamp,
    artifacts: Vec<LatestArtifact<'a>>,
}

/// The generic feed's `data`.
#[derive(Serialize)]
struct LatestData<'a> {
    release: LatestRelease<'a>,
}

/// The generic feed: the newest release after `version` with an artifact for the platform and
/// architecture asked (any artifact when neither is), enveloped and signed like verify; 204
/// when there is none.
fn latest<'a>(
    access: &'a Access,
    branch: Option<licensing_core::BranchId>,
    query: &LatestQuery,
    urls: &Urls,
    raw_query: &str,
    seen: &Seen,
) -> Answered<'a> {
    let wanted = |a: &Artifact| {
        query.platform.is_none_or(|p| a.platform == p)
            && query
                .arch
                .is_none_or(|arch| a.arch == arch || a.arch == Arch::Universal)
    };
    let offered = access.offered(branch);
    let response = match offered.newest(query.version.as_ref(), wanted) {
        None => no_content(),
        Some((offer, _)) => {
            let data = LatestData {
                release: LatestRelease {
                    id: offer.release.id,
                    version: offer.version.to_string(),
                    channel: &query.channel,
                    notes: offer.release.notes.as_deref(),
                    critical: offer.release.critical,
                    published_at: offer.release.created_at,
                    artifacts: offer
                        .release
                        .artifacts
                        .iter()
                        .filter(|a| wanted(a))
                        .map(|artifact| LatestArtifact {
                            artifact,
                            url: urls.download(artifact),
                        })
                        .collect(),
                },
            };
            let envelope = Envelope::valid(data, "Update available", None, Timestamp::now());
            json_answer(seen, 200, &envelope, raw_query.as_bytes())
        }
    };
    let mut response = response;
    let cache = if access.is_private() {
        "private, no-store"
    } else {
        "public, max-age=60"
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    Answered {
        response,
        served: None,
    }
}

/// A `Range` header's one range of a file of `len` bytes: `None` for the whole file (no header,
/// several ranges, or another unit); `Err` when it lies past the end.
fn range(value: Option<&HeaderValue>, len: u64) -> Result<Option<(u64, u64)>, ()> {
    let Some(text) = value.and_then(|v| v.to_str().ok()) else {
        return Ok(None);
    };
    let Some(spec) = text.trim().strip_prefix("bytes=") else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None);
    }
    let Some((first, last)) = spec.split_once('-') else {
        return Ok(None);
    };
    let (first, last) = (first.trim(), last.trim());
    let (start, end) = if first.is_empty() {
        // The last `n` bytes.
        let n: u64 = last.parse().map_err(|_| ())?;
        if n == 0 {
            return Err(());
        }
        (len.saturating_sub(n), len.saturating_sub(1))
    } else {
        let start: u64 = first.parse().map_err(|_| ())?;
        let end = if last.is_empty() {
            len.saturating_sub(1)
        } else {
            last.parse::<u64>()
                .map_err(|_| ())?
                .min(len.saturating_sub(1))
        };
        (start, end)
    };
    if len == 0 || start >= len || end < start {
        return Err(());
    }
    Ok(Some((start, end)))
}

/// A download: the file streamed from the store a chunk at a time, with `Content-Length`,
/// `ETag` (its SHA-256) and `Accept-Ranges`; one `Range` answers 206 (416 past the end); `HEAD`
/// answers the headers only; `If-None-Match` with the tag answers 304.
async fn download<'a>(
    state: &AppState,
    access: &'a Access,
    (release, artifact): (&'a Release, &'a Artifact),
    asked: &Asked<'_>,
) -> Result<Answered<'a>, ApiError> {
    let len = artifact.size;
    let tag = format!("\"{}\"", artifact.sha256);
    let private = access.is_private();
    let cache = if private {
        "private, no-store"
    } else {
        "public, max-age=3600"
    };
    let base_headers = |response: &mut Response| {
        let headers = response.headers_mut();
        if let Ok(tag) = HeaderValue::from_str(&tag) {
            headers.insert(header::ETAG, tag);
        }
        headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
        headers.insert(
            header::HeaderName::from_static("x-content-type-options"),
            HeaderValue::from_static("nosniff"),
        );
    };
    if asked
        .headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == tag.as_bytes())
    {
        let mut response = Response::new(Vec::new().into());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        base_headers(&mut response);
        return Ok(Answered {
            response,
            served: None,
        });
    }
    // `If-Range` with another validator asks for the whole (changed) file.
    let ranged = asked
        .headers
        .get(header::IF_RANGE)
        .is_none_or(|v| v.as_bytes() == tag.as_bytes());
    let wanted = if ranged {
        range(asked.headers.get(header::RANGE), len)
    } else {
        Ok(None)
    };
    let wanted = match wanted {
        Ok(wanted) => wanted,
        Err(()) => {
            let mut response = super::error_answer(
                &Seen::updates(ClientEndpoint::Download),
                &ApiError::range_not_satisfiable(format!(
                    "The range asked lies past the end of the file ({len} bytes)"
                )),
                asked.query.as_bytes(),
            );
            if let Ok(value) = HeaderValue::from_str(&format!("bytes */{len}")) {
                response.headers_mut().insert(header::CONTENT_RANGE, value);
            }
            return Ok(Answered {
                response,
                served: None,
            });
        }
    };
    let (start, end) = wanted.unwrap_or((0, len.saturating_sub(1)));
    let length = if len == 0 { 0 } else { end - start + 1 };
    let head = *asked.method == Method::HEAD;
    let mut response = if head {
        Response::new(Vec::new().into())
    } else {
        let Some((reader, stored)) = state
            .files
            .open_at(&artifact.key, start)
            .await
            .map_err(|e| ApiError::internal_because("opening an artifact", e))?
        else {
            tracing::warn!(key = %artifact.key, "an artifact's file is missing from the file store");
            return Err(ApiError::new(
                ResultCode::ArtifactNotFound,
                "The artifact's file is missing",
            ));
        };
        if stored != len {
            tracing::warn!(key = %artifact.key, stored, recorded = len, "an artifact's file has another size than recorded");
        }
        let body = reader.into_body(length, DOWNLOAD_CHUNK);
        warp::reply::Reply::into_response(warp::reply::stream(body))
    };
    base_headers(&mut response);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    let disposition = format!(
        "attachment; filename=\"{}\"; filename*=UTF-8''{}",
        artifact
            .filename
            .replace(['"', '\\'], "_")
            .chars()
            .filter(|c| c.is_ascii() && !c.is_ascii_control())
            .collect::<String>(),
        encode(&artifact.filename)
    );
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    if wanted.is_some() {
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
        if let Ok(value) = HeaderValue::from_str(&format!("bytes {start}-{end}/{len}")) {
            response.headers_mut().insert(header::CONTENT_RANGE, value);
        }
    }
    Ok(Answered {
        response,
        served: (!head).then_some((release, artifact)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_rfc_9110() {
        let v = |s: &'static str| HeaderValue::from_static(s);
        assert_eq!(range(None, 10), Ok(None));
        assert_eq!(range(Some(&v("bytes=0-3")), 10), Ok(Some((0, 3))));
        assert_eq!(range(Some(&v("bytes=4-")), 10), Ok(Some((4, 9))));
        assert_eq!(range(Some(&v("bytes=-3")), 10), Ok(Some((7, 9))));
        assert_eq!(range(Some(&v("bytes=5-100")), 10), Ok(Some((5, 9))));
        assert_eq!(range(Some(&v("bytes=10-")), 10), Err(()));
        assert_eq!(range(Some(&v("bytes=0-1,4-5")), 10), Ok(None));
        assert_eq!(range(Some(&v("items=0-1")), 10), Ok(None));
        assert_eq!(range(Some(&v("bytes=5-2")), 10), Err(()));
    }

    #[test]
    fn paths_name_their_feed() {
        let (product, token, route) = parse_path("p/t/ft1_abc/tauri/darwin/aarch64/1.2.0").unwrap();
        assert_eq!((product.as_str(), token.as_deref()), ("p", Some("ft1_abc")));
        assert!(matches!(
            route,
            Route::Tauri {
                platform: Platform::Darwin,
                arch: Arch::Aarch64,
                ..
            }
        ));
        let (_, _, route) = parse_path("p/electron/beta-linux-arm64.yml").unwrap();
        assert_eq!(
            route,
            Route::Electron {
                channel: "beta".into(),
                platform: Platform::Linux,
                arch: Some(Arch::Aarch64)
            }
        );
        let (_, _, route) = parse_path("p/velopack/releases.win.json").unwrap();
        assert_eq!(
            route,
            Route::VelopackFeed {
                channel: "win".into()
            }
        );
        let (_, _, route) = parse_path("p/velopack/App-1.0.0-full.nupkg").unwrap();
        assert!(route.is_download());
        assert_eq!(
            parse_path("p/tauri/beos/x86_64/1.0.0")
                .unwrap_err()
                .status(),
            400
        );
        assert_eq!(
            parse_path("p/tauri/linux/x86_64/latest")
                .unwrap_err()
                .status(),
            400
        );
        assert_eq!(parse_path("p/nothing").unwrap_err().status(), 404);
    }

    #[test]
    fn feed_text_is_escaped() {
        assert_eq!(xml("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot;");
        assert_eq!(yaml("it's \"quoted\"\n"), "\"it's \\\"quoted\\\"\\n\"");
        assert_eq!(encode("My App 1.0.dmg"), "My%20App%201.0.dmg");
    }
}

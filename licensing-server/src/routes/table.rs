//! A table of routes, each a method, a path template and the operation it performs: what the
//! developer API and the admin API are made of. A gate authenticates a request its own way,
//! [`find`]s its route (404, 405), parses the path's ids (400 naming each) and hands the route
//! its context (`C`: a team's caller, or the operator) and the rest of the request.

use std::future::Future;
use std::pin::Pin;

use licensing_core::ApiError;
use licensing_core::model::Scope;
use warp::http::Method;

use crate::http::Handled;

pub(crate) use crate::http::Input;

pub(crate) use licensing_core::operations::PathIds;

/// A route's answer, on its way.
pub(crate) type Reply = Pin<Box<dyn Future<Output = Handled> + Send>>;
/// A route with its ids parsed, waiting for its context.
pub(crate) type Bound<C> = Box<dyn FnOnce(C, Input) -> Reply + Send>;
/// Parses a path's ids and binds them to the route's operation.
type Binder<C> = Box<dyn Fn(&[(&'static str, &str)]) -> Result<Bound<C>, ApiError> + Send + Sync>;

/// Whether an operation reads a query string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Query {
    /// None: the gate refuses any parameter.
    None,
    /// The endpoint parses it.
    Parsed,
    /// The endpoint does not look at it (the admin API's writes, as they always were).
    Ignored,
}

/// One route: a method and path, and the operation it performs in context `C`.
pub(crate) struct Route<C> {
    /// The method.
    pub(crate) method: Method,
    /// The path under the table's prefix, with `{name}` for ids.
    pub(crate) path: &'static str,
    /// The scope it needs; `None`: any caller that passed the gate.
    pub(crate) scope: Option<Scope>,
    /// Whether it reads a query string.
    pub(crate) query: Query,
    bind: Binder<C>,
}

impl<C> Route<C> {
    /// The route of `method path`, whose ids `ids` parses and whose operation `perform` reads
    /// from the request and performs.
    pub(crate) fn new<I, F, Fut>(
        method: Method,
        path: &'static str,
        scope: Option<Scope>,
        query: Query,
        perform: F,
    ) -> Self
    where
        I: PathIds,
        F: Fn(C, I, Input) -> Fut + Copy + Send + Sync + 'static,
        Fut: Future<Output = Handled> + Send + 'static,
        C: 'static,
    {
        Self {
            method,
            path,
            scope,
            query,
            bind: Box::new(move |values| {
                let ids = I::parse(values)?;
                Ok(
                    Box::new(move |cx: C, input: Input| Box::pin(perform(cx, ids, input)) as Reply)
                        as Bound<C>,
                )
            }),
        }
    }

    /// The route with `ids` parsed (400 naming the first that does not parse).
    pub(crate) fn bind(&self, ids: &[(&'static str, &str)]) -> Result<Bound<C>, ApiError> {
        (self.bind)(ids)
    }

    /// Matches `segments` (after the table's prefix); the ids in order on success.
    fn matches<'a>(&self, segments: &[&'a str]) -> Option<Vec<(&'static str, &'a str)>> {
        let mut ids = Vec::new();
        let mut template = self.path.split('/');
        for segment in segments {
            let part = template.next()?;
            match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                Some(name) => ids.push((name, *segment)),
                None if part == *segment => {}
                None => return None,
            }
        }
        template.next().is_none().then_some(ids)
    }
}

/// A route with the ids of a path, by name, in path order.
pub(crate) type Found<'t, 's, C> = (&'t Route<C>, Vec<(&'static str, &'s str)>);

/// The route for `segments` (the path after the table's prefix) and `method`, with its ids:
/// 404 for an unknown path, 405 for a known path with another method.
pub(crate) fn find<'t, 's, C>(
    table: &'t [Route<C>],
    segments: &[&'s str],
    method: &Method,
) -> Result<Found<'t, 's, C>, ApiError> {
    // The most specific routes of the path decide: a segment a route names literally (`rotate`
    // in `signing-keys/rotate`) is no id of another route (`signing-keys/{kid}`), so another
    // method there is 405 rather than an id that does not parse.
    let literals = |ids: &[(&'static str, &str)]| segments.len() - ids.len();
    let most = table
        .iter()
        .filter_map(|route| route.matches(segments).map(|ids| literals(&ids)))
        .max()
        .ok_or_else(ApiError::route_not_found)?;
    table
        .iter()
        .filter(|route| route.method == *method)
        .find_map(|route| {
            let ids = route.matches(segments)?;
            (literals(&ids) == most).then_some((route, ids))
        })
        .ok_or_else(ApiError::method_not_allowed)
}

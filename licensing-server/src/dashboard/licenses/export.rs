//! The license list as CSV: every license the list's filters and search find (not just one
//! page), oldest first, written as it is read, a few hundred licenses at a time, so that a list
//! of any size streams in bounded memory. A download stops early (and is cut short) only when
//! the store fails or the browser goes away.

use bytes::Bytes;
use licensing_core::api::requests::{LicenseSort, SortDirection};
use licensing_core::model::{Customer, License, Product};
use warp::Reply as _;
use warp::http::{HeaderValue, header};

use super::{Listing, customer_name, expiry_text, find, searching, status};
use crate::app::customers::GetCustomers;
use crate::app::licenses::ListLicenses;
use crate::dashboard::api;
use crate::dashboard::page;
use crate::dashboard::{Ctx, Staff};
use crate::http::Response;

/// Licenses read per step.
const STEP: u32 = 500;

/// The columns, in order.
const HEADER: &str = "key,id,status,suspended,customers,products,expiration,expires,hardware_limit,address_limit,created,last_changed,last_active\r\n";

/// One CSV field: quoted when it holds a comma, a quote or a line break; a text a spreadsheet
/// would read as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) gets
/// a leading `'`, so that a customer's name never runs as one.
fn field(out: &mut String, text: &str) {
    let formula = text.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if formula || text.contains([',', '"', '\n', '\r']) {
        out.push('"');
        if formula {
            out.push('\'');
        }
        for c in text.chars() {
            if c == '"' {
                out.push('"');
            }
            out.push(c);
        }
        out.push('"');
    } else {
        out.push_str(text);
    }
}

/// A time as RFC 3339 in UTC (a spreadsheet's reader converts it), or nothing.
fn time(at: Option<licensing_core::Timestamp>) -> String {
    at.map(|at| at.to_string()).unwrap_or_default()
}

/// One license's row.
fn row(
    out: &mut String,
    l: &License,
    now: licensing_core::Timestamp,
    customers: &[Customer],
    products: &[Product],
) {
    let customers_of = l
        .customer_ids
        .iter()
        .map(|id| {
            customers
                .iter()
                .find(|c| c.id == *id)
                .map_or_else(|| id.to_string(), customer_name)
        })
        .collect::<Vec<_>>()
        .join("; ");
    let products_of = l
        .product_ids
        .iter()
        .map(|id| {
            products
                .iter()
                .find(|p| p.id == *id)
                .map_or_else(|| id.to_string(), |p| p.name.clone())
        })
        .collect::<Vec<_>>()
        .join("; ");
    let fields = [
        l.license_key.as_str().to_owned(),
        l.id.to_string(),
        status(l, now).0.to_owned(),
        l.suspended.to_string(),
        customers_of,
        products_of,
        l.expiration_type.as_str().to_owned(),
        expiry_text(l),
        l.hwid_limit.map(|n| n.to_string()).unwrap_or_default(),
        l.ip_limit.map(|n| n.to_string()).unwrap_or_default(),
        time(Some(l.created_at)),
        time(Some(l.updated_at)),
        time(l.last_active_at),
    ];
    for (i, text) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        field(out, text);
    }
    out.push_str("\r\n");
}

/// `GET /dashboard/licenses/export`: the list's licenses (its filters and search, as the
/// list's own address gives them) as `licenses-YYYY-MM-DD.csv`.
pub(crate) async fn export(ctx: &Ctx, staff: &Staff) -> Response {
    let listing = Listing::of(ctx);
    let outcome = async {
        let (mut query, text) = listing.query(ctx.now)?;
        // Oldest first: a license created while the file is written joins its end instead of
        // moving the rows not written yet.
        query.sort = LicenseSort::CreatedAt;
        query.paging.direction = SortDirection::Asc;
        query.paging.page_size = STEP;
        let cx = api::cx(ctx, staff);
        // The first step decides how a search finds licenses; the others search the same way.
        let (first, by) = find(&cx, query.clone(), text.as_ref()).await?;
        if let (Some(text), Some(by)) = (&text, by) {
            query = searching(query, text, by);
        }
        let products = super::products(ctx, staff).await?;
        let names = staff.may_perform::<crate::app::customers::GetCustomers>();
        Ok::<_, api::Failure>((cx, query, first, products, names))
    };
    let (cx, query, first, products, names) = match outcome.await {
        Ok(ready) => ready,
        Err(failure) => return page::failure(ctx, Some(staff), &failure),
    };
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(2);
    let now = ctx.now;
    tokio::spawn(async move {
        let mut page = first;
        let mut query = query;
        let mut chunk = String::from(HEADER);
        loop {
            let customers = if names {
                let ids = page
                    .items
                    .iter()
                    .flat_map(|l| l.customer_ids.iter().copied())
                    .collect();
                match cx.perform(GetCustomers(ids)).await {
                    Ok(customers) => customers,
                    Err(e) => return stop(&sender, &e).await,
                }
            } else {
                Vec::new()
            };
            for l in &page.items {
                row(&mut chunk, l, now, &customers, &products);
            }
            if sender.send(Ok(Bytes::from(chunk))).await.is_err() {
                return; // The browser went away.
            }
            chunk = String::new();
            if !page.has_next_page {
                return;
            }
            query.paging.page += 1;
            page = match cx.perform(ListLicenses(query.clone())).await {
                Ok(page) => page,
                Err(e) => return stop(&sender, &e).await,
            };
        }
    });
    let body = futures_util::stream::poll_fn(move |cx| receiver.poll_recv(cx));
    let mut response = warp::reply::stream(body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    let name = format!(
        "attachment; filename=\"licenses-{}.csv\"",
        page::day(ctx.now)
    );
    if let Ok(value) = HeaderValue::from_str(&name) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Ends a download cut short by `error` (logged): the browser sees the transfer fail rather
/// than a file that looks whole.
async fn stop(
    sender: &tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    error: &licensing_core::ApiError,
) {
    crate::http::log_cause(error);
    tracing::warn!(details = error.details(), "a license export stopped early");
    // The receiver may be gone already: nothing more to tell.
    let _ = sender
        .send(Err(std::io::Error::other(
            "the license export stopped early",
        )))
        .await;
}

#[cfg(test)]
mod tests {
    use super::field;

    fn cell(text: &str) -> String {
        let mut out = String::new();
        field(&mut out, text);
        out
    }

    #[test]
    fn fields_are_quoted_and_formulas_defused() {
        assert_eq!(cell("ABCD-1234"), "ABCD-1234");
        assert_eq!(cell("Ann, Ltd"), "\"Ann, Ltd\"");
        assert_eq!(cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell("two\nlines"), "\"two\nlines\"");
        assert_eq!(cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(cell("@SUM(A1)"), "\"'@SUM(A1)\"");
        assert_eq!(cell(""), "");
    }
}

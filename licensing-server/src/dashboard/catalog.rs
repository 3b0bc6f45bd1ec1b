//! Customers, products with their branches, the blacklist, and the team's settings.

use licensing_core::api::requests::{
    BlacklistBody, BranchBody, CustomerBody, CustomerListQuery, LicenseListQuery, Patch,
    ProductBody,
};
use licensing_core::model::UpdateFeed;
use licensing_core::validate::SearchText;
use licensing_core::{ApiError, CustomerId, ProductId};
use maud::html;

use super::api::{self, Failure};
use super::page::{self, After, Confirm, Form, Nav, field_error};
use super::{Ctx, Staff};
use crate::app::access::{CreateBlacklistEntry, DeleteBlacklistEntry, ListBlacklist};
use crate::app::customers::{
    CreateCustomer, DeleteCustomer, GetCustomer, ListCustomers, UpdateCustomer,
};
use crate::app::licenses::ListLicenses;
use crate::app::products::{
    CreateBranch, CreateProduct, DeleteBranch, DeleteProduct, GetProduct, ListBranches,
    UpdateProduct,
};
use crate::dashboard::words::{t, tm, tw};
use crate::http::Response;
use crate::i18n::Arg;

// Customers.

/// `GET /dashboard/customers`, or the form again with what to fix.
pub(crate) async fn customers(ctx: &Ctx, staff: &Staff, after: After<'_>) -> Response {
    let (form, failure) = (after.form(), after.failure());
    let outcome = async {
        let search = ctx.param("search").unwrap_or_default();
        let page_number: u32 = page::page_number(ctx);
        let mut query = CustomerListQuery::default();
        query.paging.page = page_number;
        query.paging.page_size = 50;
        if !search.trim().is_empty() {
            query.filter = Some(
                SearchText::parse(search.trim())
                    .map_err(|e| ApiError::bad_field("search", &e.to_string()))?,
            );
        }
        let list = api::perform(ctx, staff, ListCustomers(query)).await?;
        let link = |page: u32| {
            let mut q = form_urlencoded::Serializer::new(String::new());
            if !search.is_empty() {
                q.append_pair("search", &search);
            }
            q.append_pair("page", &page.to_string());
            format!("/dashboard/customers?{}", q.finish())
        };
        let content = html! {
            h1 { (t("catalog-customers")) }
            form.filters method="get" action="/dashboard/customers" role="search" {
                div {
                    label for="search" { (t("catalog-search")) }
                    input #search type="search" name="search" value=(search) placeholder=(t("catalog-name-user-name-e-mail"));
                }
                div { button type="submit" { (t("catalog-show")) } }
            }
            (page::table(&[t("catalog-name"), t("catalog-e-mail-address"), t("catalog-user-name"), t("catalog-since")], None, html! {
                @if list.items.is_empty() { tr { td.empty colspan="4" { (t("catalog-no-customers-match")) } } }
                @for c in &list.items {
                    tr {
                        td { a href={ "/dashboard/customers/" (c.id) } { (c.full_name.as_deref().unwrap_or(t("catalog-no-name"))) } }
                        td { (c.email.as_ref().map_or("", |e| e.as_str())) }
                        td { (c.username.as_deref().unwrap_or("")) }
                        td { (page::day(c.created_at)) }
                    }
                }
            }))
            nav.pager aria-label=(t("catalog-pages")) {
                @if list.total > 0 { span { (page::counted(list.total, "count-customers")) } }
                @if page_number > 1 { a href=(link(page_number - 1)) rel="prev" { (t("catalog-previous")) } }
                @if list.has_next_page { a href=(link(page_number + 1)) rel="next" { (t("catalog-next")) } }
            }
            @if staff.may_perform::<crate::app::customers::CreateCustomer>() {
                h2 { (t("catalog-new-customer")) }
                (page::problems(failure))
                form method="post" action="/dashboard/customers" {
                    (page::csrf(staff))
                    label for="fullName" { (t("catalog-name")) (field_error(failure, "fullName")) }
                    input #fullName type="text" name="fullName" value=(form.get("fullName").unwrap_or(""));
                    label for="email" { (t("catalog-e-mail-address")) (field_error(failure, "email")) }
                    input #email type="email" name="email" value=(form.get("email").unwrap_or(""));
                    label for="username" { (t("catalog-user-name")) (field_error(failure, "username")) }
                    input #username type="text" name="username" value=(form.get("username").unwrap_or(""));
                    p { button type="submit" { (t("catalog-create-customer")) } }
                }
            }
        };
        Ok(page::shown(Nav::Customers, t("catalog-customers"), content))
    };
    page::answer(ctx, staff, failure, outcome.await)
}

/// A text field of a form as a member of a body: its trimmed text, or cleared when blank.
fn patch(form: &Form, name: &str) -> Patch<String> {
    form.text(name)
        .map_or(Patch::Null, |t| Patch::Value(t.to_owned()))
}

/// `POST /dashboard/customers`.
pub(crate) async fn create_customer(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let body = CustomerBody {
        full_name: patch(form, "fullName"),
        email: patch(form, "email"),
        username: patch(form, "username"),
        ..CustomerBody::default()
    };
    match api::perform(ctx, staff, CreateCustomer(body)).await {
        Ok(c) => page::redirect(&format!(
            "/dashboard/customers/{}?notice=customer-created",
            c.id
        )),
        Err(f) if f.status == 400 => customers(ctx, staff, After::Refused(form, &f)).await,
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// `GET /dashboard/customers/{id}`: the customer, their licenses, and (for who may change
/// customers) the edit form, filled with what was sent when it was refused (`form`, `failure`).
pub(crate) async fn customer(ctx: &Ctx, staff: &Staff, id: &str, after: After<'_>) -> Response {
    let failure = after.failure();
    let outcome = async {
        let id = page::id_of::<CustomerId>(id, "customer")?;
        let c = api::perform(ctx, staff, GetCustomer(id)).await?;
        // What the form shows: what was sent, when it was refused; else the customer's.
        let shown = |name: &str, current: Option<&str>| -> String {
            match after {
                After::Refused(form, _) => form.get(name).unwrap_or("").to_owned(),
                After::Nothing | After::Made(()) => current.unwrap_or("").to_owned(),
            }
        };
        let licenses = if staff.may_perform::<crate::app::licenses::ListLicenses>() {
            let mut theirs = LicenseListQuery::default();
            theirs.paging.page_size = 100;
            theirs.filter.customer_ids = vec![id];
            Some(api::perform(ctx, staff, ListLicenses(theirs)).await?.items)
        } else {
            None
        };
        let content = html! {
            div.heading {
                h1 { (c.full_name.as_deref().unwrap_or(t("catalog-customer-2"))) }
                div.actions {
                    @if staff.may_perform::<crate::app::licenses::CreateLicense>() {
                        a.button href={ "/dashboard/licenses/new?customer=" (id) } { (t("catalog-new-license-for-customer")) }
                    }
                    @if staff.may_perform::<crate::app::customers::DeleteCustomer>() {
                        a.button.danger href={ "/dashboard/customers/" (id) "/delete" } { (t("catalog-delete")) }
                    }
                }
            }
            div.card {
                dl.facts {
                    dt { (t("catalog-e-mail-address")) } dd { (c.email.as_ref().map_or(t("catalog-none-2"), |e| e.as_str())) }
                    dt { (t("catalog-user-name")) } dd { (c.username.as_deref().unwrap_or(t("catalog-none-2"))) }
                    dt { (t("catalog-since")) } dd { (page::when(staff, c.created_at)) }
                    @for m in &c.metadata { dt { code { (m.key) } } dd { (m.value) } }
                }
            }
            @if staff.may_perform::<crate::app::customers::UpdateCustomer>() {
                details.edit open[failure.is_some()] {
                    summary { (t("catalog-edit")) }
                    (page::problems(failure))
                    form method="post" action={ "/dashboard/customers/" (id) } {
                        (page::csrf(staff))
                        label for="fullName" { (t("catalog-name")) (field_error(failure, "fullName")) }
                        input #fullName type="text" name="fullName" value=(shown("fullName", c.full_name.as_deref()));
                        label for="email" { (t("catalog-e-mail-address")) (field_error(failure, "email")) }
                        input #email type="email" name="email" value=(shown("email", c.email.as_ref().map(|e| e.as_str())));
                        label for="username" { (t("catalog-user-name")) (field_error(failure, "username")) }
                        input #username type="text" name="username" value=(shown("username", c.username.as_deref()));
                        p.hint { (t("catalog-field-left-empty-cleared")) }
                        p { button type="submit" { (t("catalog-save-customer")) } }
                    }
                }
            }
            @if let Some(licenses) = licenses {
                h2 { (t("catalog-licenses")) }
                (page::table(&[t("catalog-key"), t("catalog-created")], None, html! {
                    @if licenses.is_empty() { tr { td.empty colspan="2" { (t("catalog-none")) } } }
                    @for l in &licenses {
                        tr {
                            td { a.key href={ "/dashboard/licenses/" (l.id) } { (l.license_key.as_str()) } }
                            td { (page::day(l.created_at)) }
                        }
                    }
                }))
            }
        };
        Ok(page::shown(
            Nav::Customers,
            t("catalog-customer-2"),
            content,
        ))
    };
    page::answer(ctx, staff, failure, outcome.await)
}

/// `POST /dashboard/customers/{id}`: the edit form; a refusal shows the page again with what
/// was sent and why.
pub(crate) async fn update_customer(ctx: &Ctx, staff: &Staff, id: &str, form: &Form) -> Response {
    let customer_id = match page::id_of::<CustomerId>(id, "customer") {
        Ok(customer_id) => customer_id,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    let body = CustomerBody {
        full_name: patch(form, "fullName"),
        email: patch(form, "email"),
        username: patch(form, "username"),
        ..CustomerBody::default()
    };
    match api::perform(ctx, staff, UpdateCustomer(customer_id, body)).await {
        Ok(_) => page::redirect(&format!(
            "/dashboard/customers/{customer_id}?notice=customer-updated"
        )),
        Err(f) if f.status == 400 => customer(ctx, staff, id, After::Refused(form, &f)).await,
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// `GET /dashboard/customers/{id}/delete`.
pub(crate) async fn confirm_delete_customer(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let outcome = async {
        let id = page::id_of::<CustomerId>(id, "customer")?;
        let c = api::perform(ctx, staff, GetCustomer(id)).await?;
        let name = c
            .full_name
            .clone()
            .or_else(|| c.email.as_ref().map(|e| e.as_str().to_owned()))
            .unwrap_or_else(|| id.to_string());
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::Customers,
                title: t("catalog-delete-customer"),
                what: html! { (tm("catalog-customer-will-deleted-removed-from", &[("strong", html! { strong { (name) } })])) },
                action: format!("/dashboard/customers/{id}/delete"),
                button: t("catalog-delete-customer-2"),
                back: format!("/dashboard/customers/{id}"),
            },
        ))
    };
    page::answer(ctx, staff, None, outcome.await)
}

/// `POST /dashboard/customers/{id}/delete`.
pub(crate) async fn delete_customer(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let op = page::id_of::<CustomerId>(id, "customer").map(DeleteCustomer);
    page::done(
        ctx,
        staff,
        op,
        "/dashboard/customers?notice=customer-deleted",
    )
    .await
}

// Products and branches.

/// `GET /dashboard/products`, or the form again with what to fix.
pub(crate) async fn products(ctx: &Ctx, staff: &Staff, after: After<'_>) -> Response {
    let (form, failure) = (after.form(), after.failure());
    let outcome = async {
        let list = api::all_products(ctx, staff).await?;
        let entitlements = super::entitlements::readable(ctx, staff).await?;
        let chosen = form.all("entitlementIds");
        let content = html! {
            h1 { (t("catalog-products")) }
            (page::table(&[t("catalog-name"), t("catalog-address"), t("catalog-since")], None, html! {
                @if list.items.is_empty() { tr { td.empty colspan="3" { (t("catalog-no-products-yet")) } } }
                @for p in &list.items {
                    tr {
                        td { a href={ "/dashboard/products/" (p.id) } { (p.name) } }
                        td { (p.url.as_ref().map_or("", |u| u.as_str())) }
                        td { (page::day(p.created_at)) }
                    }
                }
            }))
            @if staff.may_perform::<crate::app::products::CreateProduct>() {
                h2 { (t("catalog-new-product")) }
                (page::problems(failure))
                form method="post" action="/dashboard/products" {
                    (page::csrf(staff))
                    label for="name" { (t("catalog-name")) (field_error(failure, "name")) }
                    input #name type="text" name="name" required value=(form.get("name").unwrap_or(""));
                    label for="url" { (t("catalog-web-address")) span.hint { (t("catalog-optional")) } (field_error(failure, "url")) }
                    input #url type="text" name="url" value=(form.get("url").unwrap_or(""));
                    @if !entitlements.is_empty() {
                        fieldset {
                            legend { (t("catalog-entitlements")) span.hint { (t("catalog-every-license-product-grants-them")) } }
                            (field_error(failure, "entitlementIds"))
                            @for e in &entitlements {
                                label.choice {
                                    input type="checkbox" name="entitlementIds" value=(e.id) checked[chosen.contains(&e.id.to_string().as_str())];
                                    (e.name) " " code { (e.code) }
                                }
                            }
                        }
                    }
                    p { button type="submit" { (t("catalog-create-product")) } }
                }
            }
        };
        Ok(page::shown(Nav::Products, t("catalog-products"), content))
    };
    page::answer(ctx, staff, failure, outcome.await)
}

/// `POST /dashboard/products`.
pub(crate) async fn create_product(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let body = ProductBody {
        name: Patch::Value(form.get("name").unwrap_or("").trim().to_owned()),
        url: patch(form, "url"),
        entitlement_ids: Patch::Value(
            form.all("entitlementIds")
                .into_iter()
                .map(str::to_owned)
                .collect(),
        ),
        ..ProductBody::default()
    };
    match api::perform(ctx, staff, CreateProduct(body)).await {
        Ok(p) => page::redirect(&format!(
            "/dashboard/products/{}?notice=product-created",
            p.id
        )),
        Err(f) if f.status == 400 => products(ctx, staff, After::Refused(form, &f)).await,
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// `GET /dashboard/products/{id}`, with its branches, and (for who may change products) the
/// edit form. A refused branch shows its `failure` by the branch form; a refused edit (`edit`,
/// what was sent) shows it by the edit form, filled with what was sent.
pub(crate) async fn product(
    ctx: &Ctx,
    staff: &Staff,
    id: &str,
    failure: Option<&Failure>,
    edit: Option<&Form>,
) -> Response {
    let outcome = async {
        let id = page::id_of::<ProductId>(id, "product")?;
        let p = api::perform(ctx, staff, GetProduct(id)).await?;
        let (branch_failure, edit_failure) = match edit {
            Some(_) => (None, failure),
            None => (failure, None),
        };
        let shown = |name: &str, current: Option<&str>| -> String {
            match edit {
                Some(form) => form.get(name).unwrap_or("").to_owned(),
                None => current.unwrap_or("").to_owned(),
            }
        };
        let granted: Vec<String> = match edit {
            Some(form) => form
                .all("entitlementIds")
                .into_iter()
                .map(str::to_owned)
                .collect(),
            None => p.entitlement_ids.iter().map(ToString::to_string).collect(),
        };
        let branches = api::perform(ctx, staff, ListBranches(id)).await?;
        let entitlements = super::entitlements::readable(ctx, staff).await?;
        let write = staff.may_perform::<crate::app::products::UpdateProduct>();
        let content = html! {
            div.heading {
                h1 { (p.name) }
                @if write { a.button.danger href={ "/dashboard/products/" (id) "/delete" } { (t("catalog-delete")) } }
            }
            div.card {
                dl.facts {
                    dt { (t("catalog-web-address")) } dd { (p.url.as_ref().map_or(t("catalog-none-2"), |u| u.as_str())) }
                    @if !entitlements.is_empty() {
                        dt { (t("catalog-entitlements")) }
                        dd {
                            @if p.entitlement_ids.is_empty() { (t("catalog-none-2")) }
                            @for (i, e) in entitlements.iter().filter(|e| p.entitlement_ids.contains(&e.id)).enumerate() {
                                @if i > 0 { ", " }
                                code { (e.code) }
                            }
                        }
                    }
                    dt { (t("catalog-since")) } dd { (page::when(staff, p.created_at)) }
                    dt { (t("catalog-releases")) } dd { a href={ "/dashboard/releases?product=" (id) } { (t("catalog-products-releases")) } }
                    dt { (t("catalog-update-feeds")) }
                    dd {
                        @if p.update_feed == UpdateFeed::Public { (t("catalog-public-anyone-may-read-them")) } @else { (t("catalog-valid-license-product")) }
                    }
                    dt { (t("catalog-update-signatures")) }
                    dd {
                        @if p.sign_updates { (t("catalog-made-server-teams-signing-key")) }
                        @else if p.updater_public_key.is_some() || p.sparkle_public_key.is_some() { (t("catalog-vendors-checked-against-keys-below")) }
                        @else { (t("catalog-vendors-uploaded")) }
                    }
                    @if let Some(key) = &p.updater_public_key {
                        dt { (t("catalog-tauri-public-key")) } dd { code.checksum { (key) } }
                    }
                    @if let Some(key) = &p.sparkle_public_key {
                        dt { (t("catalog-sparkle-public-key")) } dd { code.checksum { (key) } }
                    }
                }
            }
            (feed_addresses(ctx, &p))
            @if write {
                details.edit open[edit_failure.is_some()] {
                    summary { (t("catalog-edit")) }
                    (page::problems(edit_failure))
                    form method="post" action={ "/dashboard/products/" (id) } {
                        (page::csrf(staff))
                        label for="name" { (t("catalog-name")) (field_error(edit_failure, "name")) }
                        input #name type="text" name="name" required value=(shown("name", Some(&p.name)));
                        label for="url" { (t("catalog-web-address")) span.hint { (t("catalog-optional")) } (field_error(edit_failure, "url")) }
                        input #url type="text" name="url" value=(shown("url", p.url.as_ref().map(|u| u.as_str())));
                        @if !entitlements.is_empty() {
                            fieldset {
                                legend { (t("catalog-entitlements")) span.hint { (t("catalog-every-license-product-grants-them")) } }
                                (field_error(edit_failure, "entitlementIds"))
                                @for e in &entitlements {
                                    label.choice {
                                        input type="checkbox" name="entitlementIds" value=(e.id) checked[granted.contains(&e.id.to_string())];
                                        (e.name) " " code { (e.code) }
                                    }
                                }
                            }
                        }
                        fieldset {
                            legend { (t("catalog-updates")) span.hint { (t("catalog-how-desktop-applications-update-from")) } }
                            label for="updateFeed" { (t("catalog-who-may-read-update-feeds")) (field_error(edit_failure, "updateFeed")) }
                            @let feed = match edit { Some(form) => form.get("updateFeed").unwrap_or("license").to_owned(), None => p.update_feed.as_str().to_owned() };
                            select #updateFeed name="updateFeed" {
                                option value="license" selected[feed == "license"] { (t("catalog-valid-license-product")) }
                                option value="public" selected[feed == "public"] { (t("catalog-anyone-public-feeds")) }
                            }
                            @let sign = match edit { Some(form) => form.get("signUpdates").is_some(), None => p.sign_updates };
                            label.choice { input type="checkbox" name="signUpdates" value="true" checked[sign]; (t("catalog-server-signs-each-uploaded-artifact")) }
                            label for="updaterPublicKey" { (t("catalog-tauri-public-key")) span.hint { (t("catalog-optional-minisign-key-tauris-pubkey")) } (field_error(edit_failure, "updaterPublicKey")) }
                            input #updaterPublicKey type="text" name="updaterPublicKey" value=(shown("updaterPublicKey", p.updater_public_key.as_deref()));
                            label for="sparklePublicKey" { (t("catalog-sparkle-public-key")) span.hint { (t("catalog-optional-supublicedkey-base64")) } (field_error(edit_failure, "sparklePublicKey")) }
                            input #sparklePublicKey type="text" name="sparklePublicKey" value=(shown("sparklePublicKey", p.sparkle_public_key.as_deref()));
                        }
                        p { button type="submit" { (t("catalog-save-product")) } }
                    }
                }
            }
            h2 { (t("catalog-branches")) }
            (page::table(&[t("catalog-name"), t("catalog-since")], write.then_some(t("catalog-action")), html! {
                @if branches.is_empty() { tr { td.empty colspan="3" { (t("catalog-no-branches-releases-main-line")) } } }
                @for b in &branches {
                    tr {
                        td { (b.name.as_str()) }
                        td { (page::day(b.created_at)) }
                        @if write {
                            td {
                                form method="post" action={ "/dashboard/products/" (id) "/branches/" (b.id) "/delete" } {
                                    (page::csrf(staff))
                                    button.secondary.small type="submit" aria-label=(tw("catalog-delete-branch-label", &[("name", Arg::Text(b.name.as_str()))])) { (t("catalog-delete-2")) }
                                }
                            }
                        }
                    }
                }
            }))
            @if write {
                (page::problems(branch_failure))
                form.inline method="post" action={ "/dashboard/products/" (id) "/branches" } {
                    (page::csrf(staff))
                    label for="branch" { (t("catalog-new-branch")) }
                    input #branch type="text" name="name" required placeholder="beta";
                    button type="submit" { (t("catalog-add")) }
                }
                p.hint { (t("catalog-deleting-branch-deletes-releases")) }
            }
        };
        Ok(page::shown(Nav::Products, &p.name, content))
    };
    page::answer(ctx, staff, failure, outcome.await)
}

/// The addresses each updater is configured with, for this product.
fn feed_addresses(ctx: &Ctx, p: &licensing_core::model::Product) -> maud::Markup {
    let feed = format!(
        "{}/api/v1/client/teams/{}/updates/{}",
        super::users::base(ctx),
        p.team_id,
        p.id
    );
    html! {
        details.card {
            summary { (t("catalog-update-feed-addresses")) }
            p.hint { (tm("catalog-send-license-key-authorization-license", &[("code", html! { code { (feed) "/token" } }), ("code2", html! { code { "FEED" } }), ("code3", html! { code { "FEED/t/TOKEN" } })])) "." }
            dl.facts {
                dt { (t("catalog-tauri")) } dd { code.checksum { (feed) "/tauri/{{target}}/{{arch}}/{{current_version}}" } }
                dt { (t("catalog-sparkle")) } dd { code.checksum { (feed) "/t/TOKEN/sparkle/appcast.xml" } }
                dt { (t("catalog-velopack")) } dd { code.checksum { (feed) "/t/TOKEN/velopack" } }
                dt { (t("catalog-electron-updater")) } dd { (tm("catalog-generic-provider", &[("code", html! { code.checksum { (feed) "/electron" } })])) }
                dt { (t("catalog-your-own-code")) } dd { code.checksum { (feed) "/latest?version=…&platform=…&arch=…" } }
            }
        }
    }
}

/// `POST /dashboard/products/{id}`: the edit form; a refusal shows the page again with what was
/// sent and why. Entitlements are replaced only when the team has any (the form lists them).
pub(crate) async fn update_product(ctx: &Ctx, staff: &Staff, id: &str, form: &Form) -> Response {
    let product_id = match page::id_of::<ProductId>(id, "product") {
        Ok(product_id) => product_id,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    let lists_entitlements = match super::entitlements::readable(ctx, staff).await {
        Ok(entitlements) => !entitlements.is_empty(),
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    let body = ProductBody {
        name: Patch::Value(form.get("name").unwrap_or("").trim().to_owned()),
        url: patch(form, "url"),
        entitlement_ids: if lists_entitlements {
            Patch::Value(
                form.all("entitlementIds")
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
            )
        } else {
            Patch::Missing
        },
        update_feed: Patch::Value(form.get("updateFeed").unwrap_or("license").to_owned()),
        sign_updates: Patch::Value(form.get("signUpdates").is_some()),
        updater_public_key: patch(form, "updaterPublicKey"),
        sparkle_public_key: patch(form, "sparklePublicKey"),
        ..ProductBody::default()
    };
    match api::perform(ctx, staff, UpdateProduct(product_id, body)).await {
        Ok(_) => page::redirect(&format!(
            "/dashboard/products/{product_id}?notice=product-updated"
        )),
        Err(f) if f.status == 400 => product(ctx, staff, id, Some(&f), Some(form)).await,
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// `POST /dashboard/products/{id}/branches`.
pub(crate) async fn create_branch(ctx: &Ctx, staff: &Staff, id: &str, form: &Form) -> Response {
    let Ok(pid) = page::id_of::<ProductId>(id, "product") else {
        return page::not_found(ctx, staff);
    };
    let body = BranchBody {
        name: Some(form.get("name").unwrap_or("").trim().to_owned()),
    };
    match api::perform(ctx, staff, CreateBranch(pid, body)).await {
        Ok(_) => page::redirect(&format!("/dashboard/products/{pid}?notice=branch-created")),
        Err(f) if f.status == 400 => product(ctx, staff, id, Some(&f), None).await,
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// `POST /dashboard/products/{id}/branches/{branchId}/delete`.
pub(crate) async fn delete_branch(ctx: &Ctx, staff: &Staff, id: &str, branch: &str) -> Response {
    let op = page::id_of(id, "product")
        .and_then(|id| Ok(DeleteBranch(id, page::id_of(branch, "branch")?)));
    let then = op.as_ref().map_or_else(
        |_| String::new(),
        |DeleteBranch(id, _)| format!("/dashboard/products/{id}?notice=branch-deleted"),
    );
    page::done(ctx, staff, op, &then).await
}

/// `GET /dashboard/products/{id}/delete`.
pub(crate) async fn confirm_delete_product(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let outcome = async {
        let id = page::id_of::<ProductId>(id, "product")?;
        let p = api::perform(ctx, staff, GetProduct(id)).await?;
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::Products,
                title: t("catalog-delete-product"),
                what: html! { (tm("catalog-product-will-deleted-with-branches", &[("strong", html! { strong { (p.name) } })])) },
                action: format!("/dashboard/products/{id}/delete"),
                button: t("catalog-delete-product-2"),
                back: format!("/dashboard/products/{id}"),
            },
        ))
    };
    page::answer(ctx, staff, None, outcome.await)
}

/// `POST /dashboard/products/{id}/delete`.
pub(crate) async fn delete_product(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let op = page::id_of::<ProductId>(id, "product").map(DeleteProduct);
    page::done(ctx, staff, op, "/dashboard/products?notice=product-deleted").await
}

// The blacklist.

/// `GET /dashboard/blacklist`, or the form again with what to fix.
pub(crate) async fn blacklist(ctx: &Ctx, staff: &Staff, after: After<'_>) -> Response {
    let (form, failure) = (after.form(), after.failure());
    let outcome = async {
        let list = api::perform(ctx, staff, ListBlacklist).await?;
        let write = staff.may_perform::<crate::app::access::CreateBlacklistEntry>();
        let kind = form.get("type").unwrap_or("IP");
        let content = html! {
            h1 { (t("catalog-blacklist")) }
            p.hint { (t("catalog-clients-from-listed-address-country")) }
            (page::table(&[t("catalog-type"), t("catalog-value"), t("catalog-refusals"), t("catalog-since")], write.then_some(t("catalog-action")), html! {
                @if list.is_empty() { tr { td.empty colspan="5" { (t("catalog-nothing-blacklisted")) } } }
                @for e in &list {
                    tr {
                        td { (serde_json::to_value(e.kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()) }
                        td.mono { (e.value) }
                        td { (e.hits) }
                        td { (page::day(e.created_at)) }
                        @if write {
                            td {
                                form method="post" action={ "/dashboard/blacklist/" (e.id) "/delete" } {
                                    (page::csrf(staff))
                                    button.secondary.small type="submit" aria-label=(tw("catalog-remove-entry-label", &[("value", Arg::Text(&e.value))])) { (t("catalog-remove")) }
                                }
                            }
                        }
                    }
                }
            }))
            @if write {
                h2 { (t("catalog-add")) }
                (page::problems(failure))
                form method="post" action="/dashboard/blacklist" {
                    (page::csrf(staff))
                    label for="type" { (t("catalog-type")) (field_error(failure, "type")) }
                    select #type name="type" {
                        @for (value, text) in [("IP", t("catalog-ip-address-range")), ("COUNTRY", t("catalog-country")), ("HARDWARE_IDENTIFIER", t("catalog-hardware-identifier"))] {
                            option value=(value) selected[kind == value] { (text) }
                        }
                    }
                    label for="value" { (t("catalog-value")) span.hint { (t("catalog-such-203-0-113-0")) } (field_error(failure, "value")) }
                    input #value type="text" name="value" required value=(form.get("value").unwrap_or(""));
                    p { button type="submit" { (t("catalog-add-blacklist")) } }
                }
            }
        };
        Ok(page::shown(Nav::Blacklist, t("catalog-blacklist"), content))
    };
    page::answer(ctx, staff, failure, outcome.await)
}

/// `POST /dashboard/blacklist`.
pub(crate) async fn add_blacklist(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let body = BlacklistBody {
        kind: Some(form.get("type").unwrap_or("").to_owned()),
        value: Some(form.get("value").unwrap_or("").trim().to_owned()),
    };
    match api::perform(ctx, staff, CreateBlacklistEntry(body)).await {
        Ok(_) => page::redirect("/dashboard/blacklist?notice=blacklist-added"),
        Err(f) if f.status == 400 || f.status == 409 => {
            blacklist(ctx, staff, After::Refused(form, &f)).await
        }
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// `POST /dashboard/blacklist/{id}/delete`.
pub(crate) async fn delete_blacklist(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let op = page::id_of(id, t("catalog-blacklist-entry")).map(DeleteBlacklistEntry);
    page::done(
        ctx,
        staff,
        op,
        "/dashboard/blacklist?notice=blacklist-removed",
    )
    .await
}

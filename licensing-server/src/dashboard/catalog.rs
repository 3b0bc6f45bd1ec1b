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
use crate::http::Response;

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
            h1 { "Customers" }
            form.filters method="get" action="/dashboard/customers" role="search" {
                div {
                    label for="search" { "Search" }
                    input #search type="search" name="search" value=(search) placeholder="Name, user name or e-mail";
                }
                div { button type="submit" { "Show" } }
            }
            (page::table(&["Name", "E-mail address", "User name", "Since"], None, html! {
                @if list.items.is_empty() { tr { td.empty colspan="4" { "No customers match." } } }
                @for c in &list.items {
                    tr {
                        td { a href={ "/dashboard/customers/" (c.id) } { (c.full_name.as_deref().unwrap_or("(no name)")) } }
                        td { (c.email.as_ref().map_or("", |e| e.as_str())) }
                        td { (c.username.as_deref().unwrap_or("")) }
                        td { (page::day(c.created_at)) }
                    }
                }
            }))
            nav.pager aria-label="Pages" {
                @if list.total > 0 { span { (page::counted(list.total, "customer", "customers")) } }
                @if page_number > 1 { a href=(link(page_number - 1)) rel="prev" { "Previous" } }
                @if list.has_next_page { a href=(link(page_number + 1)) rel="next" { "Next" } }
            }
            @if staff.may_perform::<crate::app::customers::CreateCustomer>() {
                h2 { "New customer" }
                (page::problems(failure))
                form method="post" action="/dashboard/customers" {
                    (page::csrf(staff))
                    label for="fullName" { "Name" (field_error(failure, "fullName")) }
                    input #fullName type="text" name="fullName" value=(form.get("fullName").unwrap_or(""));
                    label for="email" { "E-mail address" (field_error(failure, "email")) }
                    input #email type="email" name="email" value=(form.get("email").unwrap_or(""));
                    label for="username" { "User name" (field_error(failure, "username")) }
                    input #username type="text" name="username" value=(form.get("username").unwrap_or(""));
                    p { button type="submit" { "Create customer" } }
                }
            }
        };
        Ok(page::shown(Nav::Customers, "Customers", content))
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
                h1 { (c.full_name.as_deref().unwrap_or("Customer")) }
                @if staff.may_perform::<crate::app::customers::DeleteCustomer>() {
                    a.button.danger href={ "/dashboard/customers/" (id) "/delete" } { "Delete…" }
                }
            }
            div.card {
                dl.facts {
                    dt { "E-mail address" } dd { (c.email.as_ref().map_or("None", |e| e.as_str())) }
                    dt { "User name" } dd { (c.username.as_deref().unwrap_or("None")) }
                    dt { "Since" } dd { (page::when(staff, c.created_at)) }
                    @for m in &c.metadata { dt { code { (m.key) } } dd { (m.value) } }
                }
            }
            @if staff.may_perform::<crate::app::customers::UpdateCustomer>() {
                details.edit open[failure.is_some()] {
                    summary { "Edit" }
                    (page::problems(failure))
                    form method="post" action={ "/dashboard/customers/" (id) } {
                        (page::csrf(staff))
                        label for="fullName" { "Name" (field_error(failure, "fullName")) }
                        input #fullName type="text" name="fullName" value=(shown("fullName", c.full_name.as_deref()));
                        label for="email" { "E-mail address" (field_error(failure, "email")) }
                        input #email type="email" name="email" value=(shown("email", c.email.as_ref().map(|e| e.as_str())));
                        label for="username" { "User name" (field_error(failure, "username")) }
                        input #username type="text" name="username" value=(shown("username", c.username.as_deref()));
                        p.hint { "A field left empty is cleared." }
                        p { button type="submit" { "Save customer" } }
                    }
                }
            }
            @if let Some(licenses) = licenses {
                h2 { "Licenses" }
                (page::table(&["Key", "Created"], None, html! {
                    @if licenses.is_empty() { tr { td.empty colspan="2" { "None." } } }
                    @for l in &licenses {
                        tr {
                            td { a.key href={ "/dashboard/licenses/" (l.id) } { (l.license_key.as_str()) } }
                            td { (page::day(l.created_at)) }
                        }
                    }
                }))
            }
        };
        Ok(page::shown(Nav::Customers, "Customer", content))
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
                title: "Delete this customer?",
                what: html! { "Customer " strong { (name) } " will be deleted and removed from their licenses (which stay)." },
                action: format!("/dashboard/customers/{id}/delete"),
                button: "Delete customer",
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
            h1 { "Products" }
            (page::table(&["Name", "Address", "Since"], None, html! {
                @if list.items.is_empty() { tr { td.empty colspan="3" { "No products yet." } } }
                @for p in &list.items {
                    tr {
                        td { a href={ "/dashboard/products/" (p.id) } { (p.name) } }
                        td { (p.url.as_ref().map_or("", |u| u.as_str())) }
                        td { (page::day(p.created_at)) }
                    }
                }
            }))
            @if staff.may_perform::<crate::app::products::CreateProduct>() {
                h2 { "New product" }
                (page::problems(failure))
                form method="post" action="/dashboard/products" {
                    (page::csrf(staff))
                    label for="name" { "Name" (field_error(failure, "name")) }
                    input #name type="text" name="name" required value=(form.get("name").unwrap_or(""));
                    label for="url" { "Web address" span.hint { "Optional." } (field_error(failure, "url")) }
                    input #url type="text" name="url" value=(form.get("url").unwrap_or(""));
                    @if !entitlements.is_empty() {
                        fieldset {
                            legend { "Entitlements" span.hint { " Every license of the product grants them." } }
                            (field_error(failure, "entitlementIds"))
                            @for e in &entitlements {
                                label.choice {
                                    input type="checkbox" name="entitlementIds" value=(e.id) checked[chosen.contains(&e.id.to_string().as_str())];
                                    (e.name) " " code { (e.code) }
                                }
                            }
                        }
                    }
                    p { button type="submit" { "Create product" } }
                }
            }
        };
        Ok(page::shown(Nav::Products, "Products", content))
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
                @if write { a.button.danger href={ "/dashboard/products/" (id) "/delete" } { "Delete…" } }
            }
            div.card {
                dl.facts {
                    dt { "Web address" } dd { (p.url.as_ref().map_or("None", |u| u.as_str())) }
                    @if !entitlements.is_empty() {
                        dt { "Entitlements" }
                        dd {
                            @if p.entitlement_ids.is_empty() { "None" }
                            @for (i, e) in entitlements.iter().filter(|e| p.entitlement_ids.contains(&e.id)).enumerate() {
                                @if i > 0 { ", " }
                                code { (e.code) }
                            }
                        }
                    }
                    dt { "Since" } dd { (page::when(staff, p.created_at)) }
                    dt { "Releases" } dd { a href={ "/dashboard/releases?product=" (id) } { "This product's releases" } }
                    dt { "Update feeds" }
                    dd {
                        @if p.update_feed == UpdateFeed::Public { "Public: anyone may read them" } @else { "A valid license of the product" }
                    }
                    dt { "Update signatures" }
                    dd {
                        @if p.sign_updates { "Made by the server (the team's signing key)" }
                        @else if p.updater_public_key.is_some() || p.sparkle_public_key.is_some() { "The vendor's, checked against the keys below" }
                        @else { "The vendor's, as uploaded" }
                    }
                    @if let Some(key) = &p.updater_public_key {
                        dt { "Tauri public key" } dd { code.checksum { (key) } }
                    }
                    @if let Some(key) = &p.sparkle_public_key {
                        dt { "Sparkle public key" } dd { code.checksum { (key) } }
                    }
                }
            }
            (feed_addresses(ctx, &p))
            @if write {
                details.edit open[edit_failure.is_some()] {
                    summary { "Edit" }
                    (page::problems(edit_failure))
                    form method="post" action={ "/dashboard/products/" (id) } {
                        (page::csrf(staff))
                        label for="name" { "Name" (field_error(edit_failure, "name")) }
                        input #name type="text" name="name" required value=(shown("name", Some(&p.name)));
                        label for="url" { "Web address" span.hint { "Optional." } (field_error(edit_failure, "url")) }
                        input #url type="text" name="url" value=(shown("url", p.url.as_ref().map(|u| u.as_str())));
                        @if !entitlements.is_empty() {
                            fieldset {
                                legend { "Entitlements" span.hint { " Every license of the product grants them." } }
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
                            legend { "Updates" span.hint { " How desktop applications update from this server." } }
                            label for="updateFeed" { "Who may read the update feeds" (field_error(edit_failure, "updateFeed")) }
                            @let feed = match edit { Some(form) => form.get("updateFeed").unwrap_or("license").to_owned(), None => p.update_feed.as_str().to_owned() };
                            select #updateFeed name="updateFeed" {
                                option value="license" selected[feed == "license"] { "A valid license of the product" }
                                option value="public" selected[feed == "public"] { "Anyone (public feeds)" }
                            }
                            @let sign = match edit { Some(form) => form.get("signUpdates").is_some(), None => p.sign_updates };
                            label.choice { input type="checkbox" name="signUpdates" value="true" checked[sign]; "The server signs each uploaded artifact with the team's signing key" }
                            label for="updaterPublicKey" { "Tauri public key" span.hint { "Optional: the minisign key (Tauri's pubkey) every uploaded signature must verify with." } (field_error(edit_failure, "updaterPublicKey")) }
                            input #updaterPublicKey type="text" name="updaterPublicKey" value=(shown("updaterPublicKey", p.updater_public_key.as_deref()));
                            label for="sparklePublicKey" { "Sparkle public key" span.hint { "Optional: SUPublicEDKey, base64." } (field_error(edit_failure, "sparklePublicKey")) }
                            input #sparklePublicKey type="text" name="sparklePublicKey" value=(shown("sparklePublicKey", p.sparkle_public_key.as_deref()));
                        }
                        p { button type="submit" { "Save product" } }
                    }
                }
            }
            h2 { "Branches" }
            (page::table(&["Name", "Since"], write.then_some("Action"), html! {
                @if branches.is_empty() { tr { td.empty colspan="3" { "No branches: releases are on the main line." } } }
                @for b in &branches {
                    tr {
                        td { (b.name.as_str()) }
                        td { (page::day(b.created_at)) }
                        @if write {
                            td {
                                form method="post" action={ "/dashboard/products/" (id) "/branches/" (b.id) "/delete" } {
                                    (page::csrf(staff))
                                    button.secondary.small type="submit" aria-label={ "Delete branch " (b.name.as_str()) } { "Delete" }
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
                    label for="branch" { "New branch" }
                    input #branch type="text" name="name" required placeholder="beta";
                    button type="submit" { "Add" }
                }
                p.hint { "Deleting a branch deletes its releases." }
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
            summary { "Update feed addresses" }
            p.hint { "Send the license key as Authorization: License <key> (or X-License-Key). Updaters that cannot send a header read the feed under a token: POST " code { (feed) "/token" } " with {\"licenseKey\": \"…\"}, then replace " code { "FEED" } " by " code { "FEED/t/TOKEN" } "." }
            dl.facts {
                dt { "Tauri" } dd { code.checksum { (feed) "/tauri/{{target}}/{{arch}}/{{current_version}}" } }
                dt { "Sparkle" } dd { code.checksum { (feed) "/t/TOKEN/sparkle/appcast.xml" } }
                dt { "Velopack" } dd { code.checksum { (feed) "/t/TOKEN/velopack" } }
                dt { "electron-updater" } dd { code.checksum { (feed) "/electron" } " (generic provider)" }
                dt { "Your own code" } dd { code.checksum { (feed) "/latest?version=…&platform=…&arch=…" } }
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
                title: "Delete this product?",
                what: html! { "Product " strong { (p.name) } " will be deleted with its branches and releases." },
                action: format!("/dashboard/products/{id}/delete"),
                button: "Delete product",
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
            h1 { "Blacklist" }
            p.hint { "Clients from a listed address, country or device are refused, whatever their license." }
            (page::table(&["Type", "Value", "Refusals", "Since"], write.then_some("Action"), html! {
                @if list.is_empty() { tr { td.empty colspan="5" { "Nothing is blacklisted." } } }
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
                                    button.secondary.small type="submit" aria-label={ "Remove " (e.value) } { "Remove" }
                                }
                            }
                        }
                    }
                }
            }))
            @if write {
                h2 { "Add" }
                (page::problems(failure))
                form method="post" action="/dashboard/blacklist" {
                    (page::csrf(staff))
                    label for="type" { "Type" (field_error(failure, "type")) }
                    select #type name="type" {
                        @for (value, text) in [("IP", "IP address or range"), ("COUNTRY", "Country"), ("HARDWARE_IDENTIFIER", "Hardware identifier")] {
                            option value=(value) selected[kind == value] { (text) }
                        }
                    }
                    label for="value" { "Value" span.hint { "Such as 203.0.113.0/24, FI, or a device's identifier." } (field_error(failure, "value")) }
                    input #value type="text" name="value" required value=(form.get("value").unwrap_or(""));
                    p { button type="submit" { "Add to the blacklist" } }
                }
            }
        };
        Ok(page::shown(Nav::Blacklist, "Blacklist", content))
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
    let op = page::id_of(id, "blacklist entry").map(DeleteBlacklistEntry);
    page::done(
        ctx,
        staff,
        op,
        "/dashboard/blacklist?notice=blacklist-removed",
    )
    .await
}

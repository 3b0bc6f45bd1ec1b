use super::*;
use crate::api::requests::ProductListQuery;
use crate::operations::licenses::{GetLicense, UpdateLicense};
use crate::operations::products::{DeleteBranch, ListProducts};
use crate::{BranchId, LicenseId, ProductId};

#[test]
fn a_path_is_its_template_with_its_ids_in_order() {
    let (product, branch) = (ProductId::new(), BranchId::new());
    assert_eq!(
        path_of(&DeleteBranch(product, branch)),
        format!("products/{product}/branches/{branch}")
    );
    let id = LicenseId::new();
    assert_eq!(path_of(&GetLicense(id)), format!("licenses/id/{id}"));
}

#[test]
fn what_a_client_sends_is_what_the_operation_is_read_back_from() {
    let id = LicenseId::new();
    let update = UpdateLicense(
        id,
        crate::api::requests::parse_json(br#"{"ipLimit": 3}"#).unwrap(),
    );
    let body = update.json_body().unwrap().unwrap();
    let back = UpdateLicense::from_parts((id,), "", &body).unwrap();
    assert_eq!(back.0, update.0);

    let mut query = ProductListQuery::default();
    query.paging.page = 3;
    let list = ListProducts(query.clone());
    let text = list.query_string().unwrap();
    let back = ListProducts::from_parts((), &text, b"").unwrap();
    assert_eq!(back.0, query);
}

#[test]
fn reads_are_gets_and_only_gets() {
    macro_rules! check {
        ($([$($op:ty),* $(,)?])*) => {$($(
            assert_eq!(
                <$op as Operation>::READ_ONLY,
                <$op as DevOperation>::METHOD == Method::Get,
                "{}",
                <$op as Operation>::NAME
            );
        )*)*};
    }
    crate::dev_operations!(check, Unsent, Unsent);
}

#[test]
fn every_declared_operation_is_listed_once() {
    // Each area's declarations, counted in its source, against the one list that the server's
    // routes and the SDK's test walk.
    let sources = [
        include_str!("access.rs"),
        include_str!("customers.rs"),
        include_str!("entitlements.rs"),
        include_str!("floating.rs"),
        include_str!("integrations.rs"),
        include_str!("devices.rs"),
        include_str!("licenses.rs"),
        include_str!("policies.rs"),
        include_str!("products.rs"),
        include_str!("releases.rs"),
        include_str!("team.rs"),
        include_str!("usage.rs"),
        include_str!("webhooks.rs"),
    ];
    let declared: usize = sources
        .iter()
        .map(|s| {
            s.lines()
                .filter(|l| {
                    let l = l.trim_start();
                    l.contains(" by ") && l.ends_with(';') && !l.starts_with("//")
                        || l.starts_with("impl") && l.contains("DevOperation for")
                })
                .count()
        })
        .sum();
    macro_rules! names {
        ($([$($op:ty),* $(,)?])*) => { vec![$($(<$op as Operation>::NAME),*),*] };
    }
    let mut listed = crate::dev_operations!(names, Unsent, Unsent);
    assert_eq!(
        listed.len(),
        declared,
        "an operation is declared but not listed"
    );
    listed.sort_unstable();
    let before = listed.len();
    listed.dedup();
    assert_eq!(listed.len(), before, "an operation is listed twice");
}

use super::super::problems;
use super::*;

#[test]
#[allow(clippy::field_reassign_with_default)]
fn queries_written_back_parse_to_the_same_query() {
    let mut licenses = LicenseListQuery::default();
    licenses.paging = Paging {
        page: 3,
        page_size: 50,
        direction: SortDirection::Asc,
    };
    licenses.sort = LicenseSort::UpdatedAt;
    licenses.filter.product_ids = vec![ProductId::new(), ProductId::new()];
    licenses.filter.customer_ids = vec![CustomerId::new()];
    licenses.filter.search = Some(SearchText::parse("AB CD&x=1").unwrap());
    licenses.filter.metadata_key = Some("tier".into());
    licenses.filter.metadata_value = Some("gold".into());
    licenses.filter.expiration_type = Some(ExpirationType::Duration);
    licenses.filter.suspended = Some(false);
    let at = Timestamp::from_millis(1_700_000_000_000);
    licenses.filter.expiry = Some(ExpiryFilter { expired: true, at });
    let mut parsed = LicenseListQuery::parse(&licenses.to_query_string()).unwrap();
    // The moment is the parser's clock, which the server replaces with its own.
    let expiry = parsed.filter.expiry.as_mut().unwrap();
    assert!(expiry.at > at);
    expiry.at = at;
    assert_eq!(parsed, licenses);
    assert_eq!(
        LicenseListQuery::parse(&LicenseListQuery::default().to_query_string()).unwrap(),
        LicenseListQuery::parse("").unwrap()
    );
    let mut customers = CustomerListQuery::default();
    customers.sort = CustomerSort::Email;
    customers.filter = Some(SearchText::parse("jane").unwrap());
    assert_eq!(
        CustomerListQuery::parse(&customers.to_query_string()).unwrap(),
        customers
    );
    let mut releases = ReleaseListQuery::default();
    releases.sort = ReleaseSort::Latest;
    releases.filter.status = Some(ReleaseStatus::Deprecated);
    releases.filter.product_id = Some(ProductId::new());
    assert_eq!(
        ReleaseListQuery::parse(&releases.to_query_string()).unwrap(),
        releases
    );
    let mut devices = DeviceListQuery::default();
    devices.filter = true;
    devices.sort = DeviceSort::CreatedAt;
    assert_eq!(
        DeviceListQuery::parse(&devices.to_query_string()).unwrap(),
        devices
    );
    let mut products = ProductListQuery::default();
    products.sort = ProductSort::Name;
    assert_eq!(
        ProductListQuery::parse(&products.to_query_string()).unwrap(),
        products
    );
}

#[test]
fn defaults() {
    let q = LicenseListQuery::parse("").unwrap();
    assert_eq!(
        q.paging,
        Paging {
            page: 1,
            page_size: 25,
            direction: SortDirection::Desc
        }
    );
    assert_eq!(q.sort, LicenseSort::CreatedAt);
    assert_eq!(
        DeviceListQuery::parse("").unwrap().sort,
        DeviceSort::LastSeenAt
    );
    assert!(!DeviceListQuery::parse("").unwrap().filter);
}

#[test]
fn every_parameter_parses() {
    let a = "6f9619ff-8b86-4011-b42d-00c04fc964ff";
    let b = "7f9619ff-8b86-4011-b42d-00c04fc964ff";
    let q = LicenseListQuery::parse(&format!(
        "page=3&pageSize=50&sortColumn=updatedAt&sortDirection=asc&productIds={a},{b}&customerIds={a}&search=abc&metadataKey=tier&metadataValue=gold"
    ))
    .unwrap();
    assert_eq!(
        q.paging,
        Paging {
            page: 3,
            page_size: 50,
            direction: SortDirection::Asc
        }
    );
    assert_eq!(q.paging.offset(), 100);
    assert_eq!(q.sort, LicenseSort::UpdatedAt);
    assert_eq!(q.filter.product_ids.len(), 2);
    assert_eq!(q.filter.customer_ids.len(), 1);
    assert_eq!(q.filter.search.unwrap().as_str(), "abc");
    assert_eq!(q.filter.metadata_value.as_deref(), Some("gold"));

    let r = ReleaseListQuery::parse(&format!(
        "productId={a}&status=DRAFT&sortColumn=latest&search=1."
    ))
    .unwrap();
    assert_eq!(r.filter.status, Some(ReleaseStatus::Draft));
    assert_eq!(r.sort, ReleaseSort::Latest);
    let c = CustomerListQuery::parse("search=jane%20doe&sortColumn=email").unwrap();
    assert_eq!(c.filter.unwrap().as_str(), "jane doe");
    assert!(DeviceListQuery::parse("showForgotten=true").unwrap().filter);
}

#[test]
fn bad_values_name_the_parameter_and_the_allowed_values() {
    let cases: &[(&str, &str, &str)] = &[
        ("page=0", "page", "must be an integer from 1 to 1000000"),
        ("page=x", "page", "must be an integer from 1 to 1000000"),
        ("pageSize=20", "pageSize", "must be one of 10, 25, 50, 100"),
        ("status=active", "status", "must be one of ACTIVE, EXPIRED"),
        (
            "expirationType=Never",
            "expirationType",
            "must be one of NEVER, DATE, DURATION",
        ),
        ("suspended=1", "suspended", "must be true or false"),
        (
            "sortDirection=up",
            "sortDirection",
            "must be one of asc, desc",
        ),
        (
            "sortColumn=email",
            "sortColumn",
            "must be one of createdAt, updatedAt, expirationDate, lastActiveAt",
        ),
        (
            "expiresWithinDays=0",
            "expiresWithinDays",
            "must be at least 1 (got 0)",
        ),
        (
            "expiresWithinDays=soon",
            "expiresWithinDays",
            "must be a whole number of days, 1 to 3650",
        ),
        (
            "productIds=nope",
            "productIds[0]",
            "must be a UUID (8-4-4-4-12 hexadecimal digits)",
        ),
        (
            "search=",
            "search",
            "must be 1 to 255 characters long (got 0)",
        ),
        ("metadataValue=x", "metadataValue", "needs metadataKey"),
        (
            "pagesize=10",
            "pagesize",
            "is not a known query parameter here (known: page, pageSize, sortColumn, sortDirection, productIds, customerIds, search, metadataKey, metadataValue, status, expirationType, suspended, entitlementId, customerSearch, policyId, metadataSearch, deviceSearch, expiresWithinDays)",
        ),
    ];
    for (query, field, message) in cases {
        let e = LicenseListQuery::parse(query).unwrap_err();
        assert_eq!(
            problems(&e),
            [(field.to_string(), message.to_string())],
            "{query}"
        );
    }
    let long = format!("search={}", "x".repeat(256));
    assert_eq!(
        problems(&CustomerListQuery::parse(&long).unwrap_err()),
        [(
            "search".into(),
            "must be 1 to 255 characters long (got more than 255)".into()
        )]
    );
    assert_eq!(
        problems(&ReleaseListQuery::parse("status=LIVE").unwrap_err()),
        [(
            "status".into(),
            "must be one of PUBLISHED, DRAFT, ARCHIVED, DEPRECATED".into()
        )]
    );
    assert_eq!(
        problems(&DeviceListQuery::parse("showForgotten=1&sortColumn=updatedAt").unwrap_err()),
        [
            (
                "sortColumn".into(),
                "must be one of lastSeenAt, createdAt".into()
            ),
            ("showForgotten".into(), "must be true or false".into())
        ]
    );
    assert_eq!(
        problems(&CustomerListQuery::parse("sortColumn=name").unwrap_err())[0].1,
        "must be one of fullName, createdAt, updatedAt, email, username"
    );
    assert!(parse_no_query("").is_ok());
    assert_eq!(problems(&parse_no_query("x=1").unwrap_err())[0].0, "x");
}

/// Lenient decoding turned `%ff` into U+FFFD and a lone `%` into itself, answering 200 for a
/// search that was never sent.
#[test]
fn malformed_percent_encoding_is_refused_on_every_query() {
    let bad = [
        "search=%ff%fe",
        "search=%",
        "search=%%%%",
        "search=ab%2",
        "search=%zz",
        "search=%+1",
        "%ff=1",
    ];
    for query in bad {
        for parsed in [
            LicenseListQuery::parse(query).map(|_| ()),
            CustomerListQuery::parse(query).map(|_| ()),
            ReleaseListQuery::parse(query).map(|_| ()),
            parse_no_query(query),
        ] {
            let e = parsed.expect_err(query);
            assert_eq!(problems(&e)[0].0, "query", "{query}");
        }
    }
    // Well-formed encodings of UTF-8 still pass.
    let c = CustomerListQuery::parse("search=j%C3%A4ni%20%25+x").unwrap();
    assert_eq!(c.filter.unwrap().as_str(), "jäni % x");
}

#[test]
fn paging_slices() {
    let p = Paging {
        page: 2,
        page_size: 10,
        direction: SortDirection::Asc,
    };
    let (items, more) = p.slice(0..25);
    assert_eq!(items, (10..20).collect::<Vec<_>>());
    assert!(more);
    let (items, more) = Paging { page: 3, ..p }.slice(0..25);
    assert_eq!(items.len(), 5);
    assert!(!more);
    let (items, more) = Paging { page: 2, ..p }.slice(0..20);
    assert_eq!(items.len(), 10);
    assert!(!more);
}

//! Tests of `license`.

use super::super::problems;
use super::*;

fn now() -> Timestamp {
    Timestamp::parse("2026-11-22T10:00:00Z").unwrap()
}

fn create(body: &str) -> Result<NewLicense, ApiError> {
    LicenseCreate::parse(body.as_bytes(), now())
}

fn license(body: &str) -> License {
    create(body)
        .unwrap()
        .into_license(LicenseKey::generate(), TeamId::new(), UserId::ADMIN, now())
}

#[test]
fn minimal_create_needs_only_the_type() {
    let l = license(r#"{"expirationType":"NEVER"}"#);
    assert_eq!(l.expiration_type, ExpirationType::Never);
    assert_eq!(
        (l.expiration_date, l.ip_limit, l.hwid_limit, l.suspended),
        (None, None, None, false)
    );
}

#[test]
fn create_computes_the_date() {
    let l = license(r#"{"expirationType":"DURATION","expirationDays":30}"#);
    assert_eq!(l.expiration_date, Some(now().plus_days(30)));
    let l = license(
        r#"{"expirationType":"DURATION","expirationDays":30,"expirationStart":"ACTIVATION"}"#,
    );
    assert_eq!(l.expiration_date, None);
    let l = license(r#"{"expirationType":"DATE","expirationDate":"2027-01-01T00:00:00Z"}"#);
    assert_eq!(
        l.expiration_date,
        Some(Timestamp::parse("2027-01-01T00:00:00Z").unwrap())
    );
}

#[test]
fn an_extension_moves_the_expiry_later_and_only_later() {
    let extend = |days: i64| ExtendBody { days: Some(days) };
    let later = now().plus_days(100);
    // A date in the future moves by the days; one passed counts from now.
    let dated = license(r#"{"expirationType":"DATE","expirationDate":"2027-01-01T00:00:00Z"}"#);
    let moved = extend(30).apply_to(&dated, now()).unwrap();
    assert_eq!(
        moved.expiration_date,
        Some(Timestamp::parse("2027-01-31T00:00:00Z").unwrap())
    );
    assert_eq!(moved.updated_at, now());
    let expired = extend(30).apply_to(&dated, Timestamp::parse("2027-03-01T00:00:00Z").unwrap());
    assert_eq!(
        expired.unwrap().expiration_date,
        Some(Timestamp::parse("2027-03-31T00:00:00Z").unwrap())
    );
    // A duration lasts longer, from its start: creation, or the first use once there was one.
    let lasting = license(r#"{"expirationType":"DURATION","expirationDays":30}"#);
    let longer = extend(10).apply_to(&lasting, later).unwrap();
    assert_eq!(longer.expiration_days, Some(40));
    assert_eq!(longer.expiration_date, Some(now().plus_days(40)));
    let waiting = license(
        r#"{"expirationType":"DURATION","expirationDays":30,"expirationStart":"ACTIVATION"}"#,
    );
    let longer = extend(10).apply_to(&waiting, later).unwrap();
    assert_eq!(
        (longer.expiration_days, longer.expiration_date),
        (Some(40), None)
    );
    let mut started = waiting.clone();
    started.expiration_date = Some(now().plus_days(31));
    let longer = extend(10).apply_to(&started, later).unwrap();
    assert_eq!(longer.expiration_date, Some(now().plus_days(41)));
    // What cannot be extended, by how much.
    let never = license(r#"{"expirationType":"NEVER"}"#);
    for (body, l, message) in [
        (ExtendBody { days: None }, &dated, "is required"),
        (extend(0), &dated, "at least 1"),
        (extend(3651), &dated, "at most 3650"),
        (extend(30), &never, "never expires"),
    ] {
        let e = body.apply_to(l, now()).unwrap_err();
        let (field, text) = problems(&e).remove(0);
        assert_eq!(field, "days");
        assert!(text.contains(message), "{text}");
    }
}

#[test]
fn ip_limit_zero_means_unlimited() {
    let l = license(r#"{"expirationType":"NEVER","ipLimit":0,"hwidLimit":1}"#);
    assert_eq!((l.ip_limit, l.hwid_limit), (None, Some(1)));
}

#[test]
fn create_rules_name_the_field() {
    let cases: &[(&str, &str, &str)] = &[
        (r#"{}"#, "expirationType", "is required"),
        (
            r#"{"expirationType":"FOREVER"}"#,
            "expirationType",
            "must be one of NEVER, DATE, DURATION",
        ),
        (
            r#"{"expirationType":"DATE"}"#,
            "expirationDate",
            "is required when expirationType is DATE",
        ),
        (
            r#"{"expirationType":"DATE","expirationDate":"2020-01-01T00:00:00Z"}"#,
            "expirationDate",
            "must be in the future",
        ),
        (
            r#"{"expirationType":"DATE","expirationDate":"tomorrow"}"#,
            "expirationDate",
            "must be an ISO 8601 date-time with a time zone, such as 2026-11-22T10:00:00.000Z",
        ),
        (
            r#"{"expirationType":"DURATION"}"#,
            "expirationDays",
            "is required when expirationType is DURATION",
        ),
        (
            r#"{"expirationType":"DURATION","expirationDays":0}"#,
            "expirationDays",
            "must be at least 1 (got 0)",
        ),
        (
            r#"{"expirationType":"DURATION","expirationDays":1,"expirationStart":"LATER"}"#,
            "expirationStart",
            "must be one of CREATION, ACTIVATION",
        ),
        (
            r#"{"expirationType":"NEVER","expirationDays":5}"#,
            "expirationDays",
            "must not be set when expirationType is NEVER",
        ),
        (
            r#"{"expirationType":"NEVER","ipLimit":-1}"#,
            "ipLimit",
            "must be at least 0 (got -1)",
        ),
        (
            r#"{"expirationType":"NEVER","hwidLimit":0}"#,
            "hwidLimit",
            "must be at least 1 (got 0)",
        ),
        (
            r#"{"expirationType":"NEVER","hwidLimit":1000001}"#,
            "hwidLimit",
            "must be at most 1000000 (got 1000001)",
        ),
        (
            r#"{"expirationType":"NEVER","customerIds":["x"]}"#,
            "customerIds[0]",
            "must be a UUID (8-4-4-4-12 hexadecimal digits)",
        ),
        (
            r#"{"expirationType":"NEVER","productIds":["x"]}"#,
            "productIds[0]",
            "must be a UUID (8-4-4-4-12 hexadecimal digits)",
        ),
        (
            r#"{"expirationType":"NEVER","metadata":[{"key":"","value":"v"}]}"#,
            "metadata[0].key",
            "must be 1 to 255 characters long (got 0)",
        ),
        (
            r#"{"expirationType":"NEVER","metadata":[{"key":"a","value":"v"},{"key":"a","value":"w"}]}"#,
            "metadata[1].key",
            "duplicates the key \"a\"",
        ),
        (
            r#"{"expirationType":"NEVER","suspended":"yes"}"#,
            "suspended",
            "invalid type: string \"yes\", expected a boolean",
        ),
    ];
    for (body, field, message) in cases {
        let e = create(body).unwrap_err();
        assert_eq!(
            problems(&e),
            [(field.to_string(), message.to_string())],
            "{body}"
        );
    }
    let many: Vec<String> = (0..21)
        .map(|i| format!(r#"{{"key":"k{i}","value":"v"}}"#))
        .collect();
    let e = create(&format!(
        r#"{{"expirationType":"NEVER","metadata":[{}]}}"#,
        many.join(",")
    ))
    .unwrap_err();
    assert_eq!(
        problems(&e),
        [(
            "metadata".into(),
            "must have at most 20 items (got 21)".into()
        )]
    );
    let long_value = format!(
        r#"{{"expirationType":"NEVER","metadata":[{{"key":"k","value":"{}"}}]}}"#,
        "v".repeat(1001)
    );
    assert_eq!(
        problems(&create(&long_value).unwrap_err()),
        [(
            "metadata[0].value".into(),
            "must be at most 1000 characters long (got more than 1000)".into()
        )]
    );
}

#[test]
fn the_three_minimums_are_reported_together_in_order() {
    let e =
        create(r#"{"expirationType":"DURATION","expirationDays":0,"ipLimit":-1,"hwidLimit":0}"#)
            .unwrap_err();
    let fields: Vec<String> = problems(&e).into_iter().map(|(f, _)| f).collect();
    assert_eq!(fields, ["expirationDays", "ipLimit", "hwidLimit"]);
}

fn update(existing: &License, body: &str) -> Result<License, ApiError> {
    LicenseUpdate::apply(body.as_bytes(), existing, now().plus_days(1))
}

#[test]
fn update_keeps_left_out_members_and_clears_nulls() {
    let l = license(
        r#"{"expirationType":"NEVER","ipLimit":3,"hwidLimit":2,"metadata":[{"key":"a","value":"b"}]}"#,
    );
    let u = update(&l, r#"{"suspended":true}"#).unwrap();
    assert!(u.suspended);
    assert_eq!(
        (u.ip_limit, u.hwid_limit, u.metadata.len()),
        (Some(3), Some(2), 1)
    );
    assert_eq!(u.updated_at, now().plus_days(1));
    let u = update(&l, r#"{"ipLimit":null,"hwidLimit":null,"metadata":[]}"#).unwrap();
    assert_eq!(
        (u.ip_limit, u.hwid_limit, u.metadata.len()),
        (None, None, 0)
    );
}

#[test]
fn update_changes_the_key_and_validates_it() {
    let l = license(r#"{"expirationType":"NEVER"}"#);
    let u = update(&l, r#"{"licenseKey":"AAAAA-BBBBB-CCCCC-DDDDD-EEEEE"}"#).unwrap();
    assert_eq!(u.license_key.as_str(), "AAAAA-BBBBB-CCCCC-DDDDD-EEEEE");
    let e = update(&l, r#"{"licenseKey":"aaaaa-bbbbb-ccccc-ddddd-eeeee"}"#).unwrap_err();
    assert_eq!(problems(&e)[0].0, "licenseKey");
    let e = update(&l, r#"{"licenseKey":null,"suspended":null}"#).unwrap_err();
    assert_eq!(
        problems(&e),
        [
            ("licenseKey".into(), "must not be null".into()),
            ("suspended".into(), "must not be null".into())
        ]
    );
}

#[test]
fn update_recomputes_expiration() {
    let l = license(r#"{"expirationType":"DURATION","expirationDays":30}"#);
    let u = update(&l, r#"{"expirationDays":60}"#).unwrap();
    assert_eq!(
        u.expiration_date,
        Some(now().plus_days(60)),
        "from creation"
    );
    let u = update(&l, r#"{"expirationType":"NEVER"}"#).unwrap();
    assert_eq!((u.expiration_date, u.expiration_days), (None, None));
    let u = update(
        &l,
        r#"{"expirationType":"DATE","expirationDate":"2030-01-01T00:00:00Z"}"#,
    )
    .unwrap();
    assert_eq!(
        u.expiration_date,
        Some(Timestamp::parse("2030-01-01T00:00:00Z").unwrap())
    );
    assert_eq!(u.expiration_days, None);
    let e = update(&l, r#"{"expirationType":"DATE"}"#).unwrap_err();
    assert_eq!(
        problems(&e),
        [(
            "expirationDate".into(),
            "is required when expirationType is DATE".into()
        )]
    );
    let e = update(&l, r#"{"expirationDays":0}"#).unwrap_err();
    assert_eq!(
        problems(&e),
        [("expirationDays".into(), "must be at least 1 (got 0)".into())]
    );
    let e = update(&l, r#"{"ipLimit":0}"#).unwrap_err();
    assert_eq!(
        problems(&e),
        [("ipLimit".into(), "must be at least 1 (got 0)".into())]
    );
    let e = update(&l, r#"{"expirationDays":null}"#).unwrap_err();
    assert_eq!(
        problems(&e),
        [(
            "expirationDays".into(),
            "is required when expirationType is DURATION".into()
        )]
    );
    let e = update(&l, r#"{"expirationType":"NEVER","expirationDays":3}"#).unwrap_err();
    assert_eq!(
        problems(&e),
        [(
            "expirationDays".into(),
            "must not be set when expirationType is NEVER".into()
        )]
    );
    let d = license(r#"{"expirationType":"DATE","expirationDate":"2027-01-01T00:00:00Z"}"#);
    let u = update(&d, r#"{"suspended":false,"expirationType":"DATE"}"#).unwrap();
    assert_eq!(u.expiration_date, d.expiration_date, "a kept date stays");
    let u = update(
        &d,
        r#"{"expirationType":"DURATION","expirationDays":10,"expirationStart":"ACTIVATION"}"#,
    )
    .unwrap();
    assert_eq!(
        (u.expiration_date, u.expiration_start),
        (None, ExpirationStart::Activation)
    );
}

#[test]
fn update_reports_unknown_members() {
    let l = license(r#"{"expirationType":"NEVER"}"#);
    let e = update(&l, r#"{"hwidlimit":3}"#).unwrap_err();
    assert_eq!(problems(&e)[0].0, "hwidlimit");
}

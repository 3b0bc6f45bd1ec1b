//! Input generators for property-based fuzzing (feature `testing`): request bodies and query
//! strings shaped like the API's, so that random cases get past the first syntax check and
//! reach the validation behind it. Core's own fuzz tests and the server's HTTP fuzz test share
//! them.

use proptest::prelude::*;
use serde_json::{Map, Value};

/// Every member name any body knows, so that generated objects reach past "unknown field".
pub const FIELDS: &[&str] = &[
    "licenseKey",
    "hardwareIdentifier",
    "deviceIdentifier",
    "customerId",
    "productId",
    "challenge",
    "version",
    "branch",
    "expirationType",
    "expirationStart",
    "expirationDate",
    "expirationDays",
    "suspended",
    "ipLimit",
    "hwidLimit",
    "metadata",
    "customerIds",
    "productIds",
    "sendEmailDelay",
    "email",
    "fullName",
    "username",
    "chatId",
    "name",
    "url",
    "forgotten",
    "strictCustomers",
    "strictProducts",
    "strictReleases",
    "hwidTimeout",
    "ipTimeout",
    "type",
    "value",
    "expiresAt",
    "classloader",
    "status",
    "setAsLatest",
    "keepExistingFile",
    "licenseIds",
    "branchId",
    "key",
    "locked",
];

/// Scalars that tend to break parsers: extremes, odd numbers, odd text.
pub fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop_oneof![Just(0i64), Just(-1), Just(1), Just(i64::from(u32::MAX) + 1)].prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        ".{0,40}".prop_map(Value::from),
        "[A-Z0-9]{5}(-[A-Z0-9]{5}){4}".prop_map(Value::from),
        "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}".prop_map(Value::from),
        "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})?"
            .prop_map(Value::from),
        prop_oneof![
            Just("NEVER"), Just("DATE"), Just("DURATION"), Just("CREATION"), Just("ACTIVATION"),
            Just("PUBLISHED"), Just("DRAFT"), Just("ARCHIVED"), Just("IP"), Just("COUNTRY"),
            Just("HWID"), Just("1.0.0"), Just("main"), Just(""), Just(" "), Just("\u{0}"),
        ]
        .prop_map(Value::from),
        (1usize..5000).prop_map(|n| Value::from("x".repeat(n))),
    ]
}

/// JSON values, nested a few levels, with objects keyed mostly by known member names.
pub fn json_value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((field_name(), inner), 0..8)
                .prop_map(|members| Value::Object(members.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Member names: mostly ones the API knows, sometimes anything.
pub fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(FIELDS).prop_map(str::to_owned),
        1 => ".{0,12}",
    ]
}

/// Request bodies: JSON objects of known members, any JSON, JSON cut or corrupted at a random
/// place, and raw bytes.
pub fn json_body() -> impl Strategy<Value = Vec<u8>> {
    let object = || {
        prop::collection::vec((field_name(), json_value()), 0..10).prop_map(|m| {
            Value::Object(m.into_iter().collect())
                .to_string()
                .into_bytes()
        })
    };
    prop_oneof![
        4 => object(),
        1 => json_value().prop_map(|v| v.to_string().into_bytes()),
        1 => (object(), any::<prop::sample::Index>(), any::<u8>()).prop_map(|(mut b, at, byte)| {
            if !b.is_empty() {
                let i = at.index(b.len());
                if byte % 2 == 0 { b.truncate(i) } else { b[i] = byte }
            }
            b
        }),
        1 => prop::collection::vec(any::<u8>(), 0..512),
    ]
}

/// Query strings: known and unknown names, encoded and raw values, repeats, stray `&`, `=`, `%`.
pub fn query_string() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        prop::sample::select(
            &[
                "page",
                "pageSize",
                "sortColumn",
                "sortDirection",
                "search",
                "status",
                "productId",
                "branch",
                "customerId",
                "expired",
                "suspended",
                "forgotten",
                "licenseKey",
                "sessionKey",
                "hardwareIdentifier",
                "deviceIdentifier",
                "version",
                "challenge",
                "latest",
            ][..]
        )
        .prop_map(str::to_owned),
        "[a-zA-Z%&=+]{0,8}",
    ];
    let value = prop_oneof![
        "[0-9]{0,3}",
        "-?[0-9]{1,25}",
        ".{0,30}",
        "%[0-9A-Fa-f]{0,2}",
        "[a-zA-Z]{0,10}",
        Just("createdAt".to_owned()),
        Just("asc".to_owned()),
        Just("desc".to_owned()),
        Just("%FF%FE".to_owned()),
        Just("%00".to_owned()),
    ];
    prop::collection::vec((name, prop::option::of(value)), 0..8).prop_map(|pairs| {
        pairs
            .into_iter()
            .map(|(n, v)| match v {
                Some(v) => format!("{n}={v}"),
                None => n,
            })
            .collect::<Vec<_>>()
            .join("&")
    })
}

/// A multipart upload as `(Content-Type, body)`: a boundary, parts named like a release
/// upload's or not, with or without file names, holding release JSON or bytes; sometimes cut,
/// corrupted, or announced with another boundary.
pub fn multipart_body() -> impl Strategy<Value = (String, Vec<u8>)> {
    let part = (
        prop_oneof![
            3 => Just("data".to_owned()),
            3 => Just("file".to_owned()),
            1 => "[a-z\"\\r\\n]{0,6}",
        ],
        prop::option::of(prop_oneof![
            Just("app.jar".to_owned()),
            Just("../../etc/passwd".to_owned()),
            "[a-zA-Z0-9._/\\\\-]{0,20}",
        ]),
        prop_oneof![json_body(), prop::collection::vec(any::<u8>(), 0..256)],
    );
    let whole = (
        "[A-Za-z0-9'()+_,./:=?-]{1,30}",
        prop::collection::vec(part, 0..4),
        any::<bool>(),
    )
        .prop_map(|(boundary, parts, closed)| {
            let mut body = Vec::new();
            for (name, file_name, content) in parts {
                body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
                let disposition = match file_name {
                    Some(f) => format!("form-data; name=\"{name}\"; filename=\"{f}\""),
                    None => format!("form-data; name=\"{name}\""),
                };
                body.extend_from_slice(
                    format!("Content-Disposition: {disposition}\r\n\r\n").as_bytes(),
                );
                body.extend_from_slice(&content);
                body.extend_from_slice(b"\r\n");
            }
            if closed {
                body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
            }
            (boundary, body)
        });
    (whole, any::<prop::sample::Index>(), any::<u8>(), 0u8..8).prop_map(
        |((boundary, mut body), at, byte, how)| {
            let mut announced = boundary;
            match how {
                0 if !body.is_empty() => body.truncate(at.index(body.len())),
                1 if !body.is_empty() => {
                    let i = at.index(body.len());
                    body[i] = byte;
                }
                2 => announced.push('x'),
                _ => {}
            }
            (format!("multipart/form-data; boundary={announced}"), body)
        },
    )
}

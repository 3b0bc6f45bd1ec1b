use std::net::{IpAddr, Ipv4Addr};

use proptest::prelude::*;

use super::*;
use crate::model::{BlacklistEntry, BlacklistType, ExpirationStart, ExpirationType, ReleaseFile};
use crate::{BranchId, FileId, LicenseId, ReleaseId, TeamId, UserId};

fn now() -> Timestamp {
    Timestamp::parse("2026-11-22T10:00:00Z").unwrap()
}

fn license() -> License {
    crate::store::testing::license(TeamId::new(), now())
}

fn release(
    product: ProductId,
    branch: Option<BranchId>,
    version: &str,
    status: ReleaseStatus,
    latest: bool,
) -> Release {
    Release {
        id: ReleaseId::new(),
        version: Version::parse(version).unwrap(),
        status,
        latest,
        product_id: product,
        branch_id: branch,
        team_id: TeamId::new(),
        created_by_user_id: UserId::ADMIN,
        created_at: now(),
        updated_at: now(),
        metadata: Vec::new(),
        file: Some(ReleaseFile {
            id: FileId::new(),
            key: "k".into(),
            size: 1,
            name: "app.jar".into(),
            checksum: "00".into(),
            main_class_name: None,
            created_at: now(),
        }),
        allowed_license_ids: Vec::new(),
        notes: None,
        critical: false,
        rollout_percent: Default::default(),
        artifacts: Vec::new(),
    }
}

fn hw(text: &str) -> HardwareId {
    HardwareId::parse(text).unwrap()
}

fn ip(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(203, 0, 113, last))
}

fn request(kind: RequestKind) -> ClientRequest<'static> {
    ClientRequest {
        kind,
        hardware_id: None,
        customer_id: None,
        product_id: None,
        version: None,
        branch: None,
        ip: ip(1),
        country: None,
    }
}

fn blacklist_entry(kind: BlacklistType, value: &str) -> BlacklistEntry {
    BlacklistEntry {
        id: BlacklistId::new(),
        team_id: TeamId::new(),
        kind,
        value: value.into(),
        hits: 0,
        created_by_user_id: UserId::ADMIN,
        created_at: now(),
    }
}

fn code_of(result: Result<impl Sized, Denial>) -> ResultCode {
    match result {
        Ok(_) => ResultCode::Valid,
        Err(d) => d.code,
    }
}

#[test]
fn missing_license_is_license_not_found() {
    let settings = TeamSettings::default();
    let bl = Blacklist::default();
    let ctx = Context {
        grace_days: 0,
        settings: &settings,
        blacklist: &bl,
        license: None,
        catalog: None,
    };
    assert_eq!(
        code_of(precheck(&ctx, &request(RequestKind::Verify), now())),
        ResultCode::LicenseNotFound
    );
}

#[test]
fn blacklists_match_ip_cidr_country_and_hwid_in_that_order() {
    let lic = license();
    let settings = TeamSettings::default();
    let h = hw("device-0001-abcdef");
    let fin = Country::from_code("FI").unwrap();
    let mut req = request(RequestKind::Verify);
    req.hardware_id = Some(&h);
    req.country = Some(fin);

    let cases: Vec<(Vec<BlacklistEntry>, ResultCode)> = vec![
        (
            vec![blacklist_entry(BlacklistType::Ip, "203.0.113.1")],
            ResultCode::IpBlacklisted,
        ),
        (
            vec![blacklist_entry(BlacklistType::Ip, "203.0.113.0/24")],
            ResultCode::IpBlacklisted,
        ),
        (
            vec![blacklist_entry(BlacklistType::Ip, "198.51.100.0/24")],
            ResultCode::Valid,
        ),
        (
            vec![blacklist_entry(BlacklistType::Country, "FIN")],
            ResultCode::CountryBlacklisted,
        ),
        (
            vec![blacklist_entry(BlacklistType::Country, "fi")],
            ResultCode::CountryBlacklisted,
        ),
        (
            vec![blacklist_entry(BlacklistType::Country, "SE")],
            ResultCode::Valid,
        ),
        (
            vec![blacklist_entry(
                BlacklistType::HardwareIdentifier,
                "device-0001-abcdef",
            )],
            ResultCode::HardwareIdentifierBlacklisted,
        ),
        // All three: the IP wins; country and hwid: the country wins.
        (
            vec![
                blacklist_entry(BlacklistType::HardwareIdentifier, "device-0001-abcdef"),
                blacklist_entry(BlacklistType::Country, "FI"),
                blacklist_entry(BlacklistType::Ip, "203.0.113.1"),
            ],
            ResultCode::IpBlacklisted,
        ),
        (
            vec![
                blacklist_entry(BlacklistType::HardwareIdentifier, "device-0001-abcdef"),
                blacklist_entry(BlacklistType::Country, "FI"),
            ],
            ResultCode::CountryBlacklisted,
        ),
    ];
    for (entries, expected) in cases {
        let bl = Blacklist::compile(&entries);
        let ctx = Context {
            grace_days: 0,
            settings: &settings,
            blacklist: &bl,
            license: Some(&lic),
            catalog: None,
        };
        let result = precheck(&ctx, &req, now());
        assert_eq!(code_of(result.clone()), expected, "{entries:?}");
        if let Err(d) = result {
            assert!(
                entries.iter().any(|e| Some(e.id) == d.blacklist_hit),
                "the hit names its entry"
            );
        }
    }
}

#[test]
fn ipv6_ranges_and_ipv4_mapped_addresses_match() {
    let bl = Blacklist::compile(&[
        blacklist_entry(BlacklistType::Ip, "2001:db8::/32"),
        blacklist_entry(BlacklistType::Ip, "192.0.2.9"),
    ]);
    assert!(
        bl.check("2001:db8::1".parse().unwrap(), None, None)
            .is_err()
    );
    assert!(bl.check("2001:db9::1".parse().unwrap(), None, None).is_ok());
    assert!(
        bl.check("::ffff:192.0.2.9".parse().unwrap(), None, None)
            .is_err()
    );
}

#[test]
fn customers_and_products_follow_the_strict_settings() {
    let c1 = CustomerId::new();
    let p1 = ProductId::new();
    let mut lic = license();
    lic.customer_ids = vec![c1];
    lic.product_ids = vec![p1];
    let bl = Blacklist::default();
    let lax = TeamSettings::default();
    let strict = TeamSettings {
        strict_customers: true,
        strict_products: true,
        ..TeamSettings::default()
    };

    let cases = [
        (&lax, None, None, ResultCode::Valid),
        (&lax, Some(c1), Some(p1), ResultCode::Valid),
        (
            &lax,
            Some(CustomerId::new()),
            Some(p1),
            ResultCode::CustomerNotFound,
        ),
        (
            &lax,
            Some(c1),
            Some(ProductId::new()),
            ResultCode::ProductNotFound,
        ),
        (&strict, None, Some(p1), ResultCode::CustomerNotFound),
        (&strict, Some(c1), None, ResultCode::ProductNotFound),
        (&strict, Some(c1), Some(p1), ResultCode::Valid),
        // Customer is checked before product.
        (&strict, None, None, ResultCode::CustomerNotFound),
    ];
    for (settings, customer, product, expected) in cases {
        let ctx = Context {
            grace_days: 0,
            settings,
            blacklist: &bl,
            license: Some(&lic),
            catalog: None,
        };
        let mut req = request(RequestKind::Verify);
        req.customer_id = customer;
        req.product_id = product;
        assert_eq!(
            code_of(precheck(&ctx, &req, now())),
            expected,
            "{customer:?} {product:?}"
        );
    }

    // A license without customers or products ignores the given ids, strict or not.
    let bare = license();
    let ctx = Context {
        grace_days: 0,
        settings: &strict,
        blacklist: &bl,
        license: Some(&bare),
        catalog: None,
    };
    let mut req = request(RequestKind::Verify);
    req.customer_id = Some(CustomerId::new());
    req.product_id = Some(ProductId::new());
    assert_eq!(code_of(precheck(&ctx, &req, now())), ResultCode::Valid);
}

#[test]
fn classloader_always_needs_a_product_of_the_license() {
    let p1 = ProductId::new();
    let mut lic = license();
    let bl = Blacklist::default();
    let settings = TeamSettings::default();
    let mut req = request(RequestKind::Classloader);
    req.product_id = Some(p1);
    assert_eq!(
        check(&settings, &bl, &lic, &req),
        ResultCode::ProductNotFound
    );
    lic.product_ids = vec![p1];
    assert_eq!(
        check(&settings, &bl, &lic, &req),
        ResultCode::ReleaseNotFound,
        "no releases"
    );
}

fn check(
    settings: &TeamSettings,
    bl: &Blacklist,
    lic: &License,
    req: &ClientRequest<'_>,
) -> ResultCode {
    let ctx = Context {
        grace_days: 0,
        settings,
        blacklist: bl,
        license: Some(lic),
        catalog: None,
    };
    code_of(precheck(&ctx, req, now()))
}

fn check_all(
    settings: &TeamSettings,
    bl: &Blacklist,
    lic: &License,
    req: &ClientRequest<'_>,
    ips: &[IpRecord],
) -> ResultCode {
    let ctx = Context {
        grace_days: 0,
        settings,
        blacklist: bl,
        license: Some(lic),
        catalog: None,
    };
    code_of(decide(&ctx, req, &[], ips, now()))
}

#[test]
fn release_rules() {
    let p = ProductId::new();
    let beta = Branch {
        id: BranchId::new(),
        name: BranchName::parse("beta").unwrap(),
        product_id: p,
        team_id: TeamId::new(),
        created_at: now(),
        updated_at: now(),
    };
    let mut lic = license();
    lic.product_ids = vec![p];
    let mut restricted = release(p, None, "3.0.0", ReleaseStatus::Published, false);
    restricted.allowed_license_ids = vec![LicenseId::new()];
    let mut allowed = release(p, None, "3.1.0", ReleaseStatus::Published, false);
    allowed.allowed_license_ids = vec![lic.id];
    let mut fileless = release(p, None, "4.0.0", ReleaseStatus::Published, false);
    fileless.file = None;
    let releases = vec![
        release(p, None, "1.0.0", ReleaseStatus::Published, true),
        release(p, None, "0.9.0", ReleaseStatus::Archived, false),
        release(p, None, "2.0.0-rc", ReleaseStatus::Draft, false),
        release(p, None, "0.8.0", ReleaseStatus::Deprecated, false),
        restricted,
        allowed,
        fileless,
        release(
            p,
            Some(beta.id),
            "1.1.0-beta",
            ReleaseStatus::Published,
            true,
        ),
    ];
    let branches = vec![beta];
    let catalog = Catalog {
        branches: &branches,
        releases: &releases,
    };
    let bl = Blacklist::default();
    let lax = TeamSettings::default();
    let strict = TeamSettings {
        strict_releases: true,
        ..TeamSettings::default()
    };

    let v = |s: &str| Version::parse(s).unwrap();
    let b = |s: &str| BranchName::parse(s).unwrap();
    let (v100, v090, vrc, v080, v300, v310, v400, vbeta, v999) = (
        v("1.0.0"),
        v("0.9.0"),
        v("2.0.0-rc"),
        v("0.8.0"),
        v("3.0.0"),
        v("3.1.0"),
        v("4.0.0"),
        v("1.1.0-beta"),
        v("9.9.9"),
    );
    let (beta_name, nope) = (b("beta"), b("nope"));
    type Case<'a> = (
        RequestKind,
        &'a TeamSettings,
        Option<&'a Version>,
        Option<&'a BranchName>,
        ResultCode,
        Option<&'a str>,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            RequestKind::Verify,
            &lax,
            None,
            None,
            ResultCode::Valid,
            None,
        ),
        (
            RequestKind::Verify,
            &lax,
            Some(&v100),
            None,
            ResultCode::Valid,
            Some("1.0.0"),
        ),
        (
            RequestKind::Verify,
            &lax,
            Some(&v999),
            None,
            ResultCode::ReleaseNotFound,
            None,
        ),
        (
            RequestKind::Verify,
            &lax,
            Some(&v090),
            None,
            ResultCode::ReleaseArchived,
            None,
        ),
        (
            RequestKind::Verify,
            &lax,
            Some(&vrc),
            None,
            ResultCode::ReleaseDraft,
            None,
        ),
        (
            RequestKind::Verify,
            &lax,
            Some(&v080),
            None,
            ResultCode::Valid,
            Some("0.8.0"),
        ),
        (
            RequestKind::Verify,
            &lax,
            Some(&v300),
            None,
            ResultCode::NoAccessToRelease,
            None,
        ),
        (
            RequestKind::Verify,
            &lax,
            Some(&v310),
            None,
            ResultCode::Valid,
            Some("3.1.0"),
        ),
        (
            RequestKind::Verify,
            &lax,
            Some(&v400),
            None,
            ResultCode::Valid,
            Some("4.0.0"),
        ),
        (
            RequestKind::Classloader,
            &lax,
            Some(&v400),
            None,
            ResultCode::ReleaseNotFound,
            None,
        ),
        (
            RequestKind::Verify,
            &lax,
            None,
            Some(&nope),
            ResultCode::ReleaseNotFound,
            None,
        ),
        // The version must be in the requested branch.
        (
            RequestKind::Verify,
            &lax,
            Some(&v100),
            Some(&beta_name),
            ResultCode::ReleaseNotFound,
            None,
        ),
        (
            RequestKind::Verify,
            &lax,
            Some(&vbeta),
            Some(&beta_name),
            ResultCode::Valid,
            Some("1.1.0-beta"),
        ),
        // Without a branch, a version only on a branch is still found (protocol.md section 3).
        (
            RequestKind::Verify,
            &lax,
            Some(&vbeta),
            None,
            ResultCode::Valid,
            Some("1.1.0-beta"),
        ),
        (
            RequestKind::Verify,
            &strict,
            None,
            None,
            ResultCode::ReleaseNotFound,
            None,
        ),
        // Classloader without version takes the latest of the branch.
        (
            RequestKind::Classloader,
            &lax,
            None,
            None,
            ResultCode::Valid,
            Some("1.0.0"),
        ),
        (
            RequestKind::Classloader,
            &lax,
            None,
            Some(&beta_name),
            ResultCode::Valid,
            Some("1.1.0-beta"),
        ),
    ];
    for (kind, settings, version, branch, expected, served) in cases {
        let ctx = Context {
            grace_days: 0,
            settings,
            blacklist: &bl,
            license: Some(&lic),
            catalog: Some(catalog),
        };
        let mut req = request(kind);
        req.product_id = Some(p);
        req.version = version;
        req.branch = branch;
        let result = precheck(&ctx, &req, now());
        assert_eq!(
            code_of(result.clone()),
            expected,
            "{kind:?} {version:?} {branch:?}"
        );
        if let Ok((_, release)) = result {
            assert_eq!(
                release.map(|r| r.version.as_str()),
                served,
                "{kind:?} {version:?}"
            );
        }
    }
}

/// Clients written for Lukittu send a version but no branch: it is looked up among releases
/// without a branch first, then among every branch (several: the most recently created). The
/// classloader's "latest" without a branch likewise.
#[test]
fn a_version_without_a_branch_is_found_on_any_branch() {
    let p = ProductId::new();
    let (stable, beta) = (BranchId::new(), BranchId::new());
    let mut lic = license();
    lic.product_ids = vec![p];
    let later = |mut r: Release, minutes: u32| {
        r.created_at = now().plus_minutes(minutes);
        r
    };
    let releases = vec![
        later(
            release(p, Some(stable), "2.0.0", ReleaseStatus::Published, true),
            1,
        ),
        later(
            release(p, Some(beta), "2.0.0", ReleaseStatus::Published, false),
            5,
        ),
        later(
            release(p, Some(beta), "3.0.0-beta", ReleaseStatus::Published, true),
            6,
        ),
    ];
    let bl = Blacklist::default();
    let settings = TeamSettings::default();
    let find = |releases: &[Release], kind, version: Option<&str>| -> Option<String> {
        let version = version.map(|v| Version::parse(v).unwrap());
        let ctx = Context {
            grace_days: 0,
            settings: &settings,
            blacklist: &bl,
            license: Some(&lic),
            catalog: Some(Catalog {
                branches: &[],
                releases,
            }),
        };
        let mut req = request(kind);
        req.product_id = Some(p);
        req.version = version.as_ref();
        precheck(&ctx, &req, now())
            .ok()
            .and_then(|(_, r)| r.map(|r| format!("{} {:?}", r.version.as_str(), r.branch_id)))
    };
    // Only on branches: the most recently created match.
    assert_eq!(
        find(&releases, RequestKind::Verify, Some("2.0.0")),
        Some(format!("2.0.0 {:?}", Some(beta)))
    );
    assert_eq!(
        find(&releases, RequestKind::Classloader, None),
        Some(format!("3.0.0-beta {:?}", Some(beta)))
    );
    // Unbranched releases win.
    let mut with_main = releases.clone();
    with_main.push(release(p, None, "2.0.0", ReleaseStatus::Published, true));
    assert_eq!(
        find(&with_main, RequestKind::Verify, Some("2.0.0")),
        Some("2.0.0 None".into())
    );
    assert_eq!(
        find(&with_main, RequestKind::Classloader, None),
        Some("2.0.0 None".into())
    );
    assert_eq!(find(&releases, RequestKind::Verify, Some("9.0.0")), None);
}

#[test]
fn suspended_then_expired() {
    let bl = Blacklist::default();
    let settings = TeamSettings::default();
    let mut lic = license();
    lic.expiration_type = ExpirationType::Date;
    lic.expiration_date = Some(Timestamp::parse("2026-01-01T00:00:00Z").unwrap());
    let req = request(RequestKind::Verify);
    assert_eq!(
        check(&settings, &bl, &lic, &req),
        ResultCode::LicenseExpired
    );
    lic.suspended = true;
    assert_eq!(
        check(&settings, &bl, &lic, &req),
        ResultCode::LicenseSuspended
    );
}

#[test]
fn earlier_checks_win_over_later_ones() {
    // Blacklisted AND suspended AND wrong customer: the blacklist (step 3) answers.
    let mut lic = license();
    lic.suspended = true;
    lic.customer_ids = vec![CustomerId::new()];
    let settings = TeamSettings::default();
    let bl = Blacklist::compile(&[blacklist_entry(BlacklistType::Ip, "203.0.113.1")]);
    let empty = Blacklist::default();
    let mut req = request(RequestKind::Verify);
    req.customer_id = Some(CustomerId::new());
    assert_eq!(check(&settings, &bl, &lic, &req), ResultCode::IpBlacklisted);
    assert_eq!(
        check(&settings, &empty, &lic, &req),
        ResultCode::CustomerNotFound
    );
    req.customer_id = None;
    assert_eq!(
        check(&settings, &empty, &lic, &req),
        ResultCode::LicenseSuspended
    );
    // Suspended AND over a limit: suspended answers (step 6 before 7).
    lic.customer_ids.clear();
    lic.ip_limit = Some(1);
    let ips = [ip_record(&lic, ip(9), false, now())];
    assert_eq!(
        check_all(&settings, &empty, &lic, &req, &ips),
        ResultCode::LicenseSuspended
    );
    lic.suspended = false;
    assert_eq!(
        check_all(&settings, &empty, &lic, &req, &ips),
        ResultCode::IpLimitReached
    );
}

fn hwid_record(lic: &License, identifier: &str, forgotten: bool, last_seen: Timestamp) -> Hwid {
    Hwid {
        name: None,
        platform: None,
        id: HwidId::new(),
        identifier: hw(identifier),
        forgotten,
        license_id: lic.id,
        team_id: lic.team_id,
        last_seen_at: last_seen,
        created_at: last_seen,
        updated_at: last_seen,
    }
}

fn ip_record(lic: &License, address: IpAddr, forgotten: bool, last_seen: Timestamp) -> IpRecord {
    IpRecord {
        id: IpId::new(),
        address,
        forgotten,
        country: None,
        alpha2: None,
        alpha3: None,
        license_id: lic.id,
        team_id: lic.team_id,
        last_seen_at: last_seen,
        created_at: last_seen,
        updated_at: last_seen,
    }
}

#[test]
fn limits_count_only_live_records_and_known_ones_pass() {
    let mut lic = license();
    lic.hwid_limit = Some(2);
    lic.ip_limit = Some(1);
    let settings = TeamSettings {
        hwid_timeout: Some(60),
        ..TeamSettings::default()
    };
    let old = now().plus_minutes(0).plus(-chrono::TimeDelta::minutes(61));
    let a = hwid_record(&lic, "device-a-0000", false, now());
    let b = hwid_record(&lic, "device-b-0000", false, now());
    let stale = hwid_record(&lic, "device-c-0000", false, old);
    let forgotten = hwid_record(&lic, "device-d-0000", true, now());
    let known_ip = ip_record(&lic, ip(1), false, now());

    let run = |hwids: &[Hwid], id: &str| {
        admit(
            &lic,
            &settings,
            hwids,
            std::slice::from_ref(&known_ip),
            Some(&hw(id)),
            ip(1),
            now(),
        )
    };
    // Two live devices fill the limit: a third is refused, the known ones pass.
    let full = [a.clone(), b.clone(), stale.clone(), forgotten.clone()];
    assert_eq!(
        code_of(run(&full, "device-new-000")),
        ResultCode::HwidLimitReached
    );
    assert_eq!(
        run(&full, "device-a-0000").unwrap().hwid,
        Some(RecordChange::Refresh {
            id: a.id,
            was_forgotten: false
        })
    );
    // The stale and forgotten records do not count, and come back when room allows.
    let room = [a.clone(), stale.clone(), forgotten.clone()];
    assert_eq!(
        run(&room, "device-c-0000").unwrap().hwid,
        Some(RecordChange::Refresh {
            id: stale.id,
            was_forgotten: false
        })
    );
    assert_eq!(
        run(&room, "device-d-0000").unwrap().hwid,
        Some(RecordChange::Refresh {
            id: forgotten.id,
            was_forgotten: true
        })
    );
    assert_eq!(
        run(&room, "device-new-000").unwrap().hwid,
        Some(RecordChange::Create)
    );
    // Only records that already count take the lock-free path.
    let fast = |hwids: &[Hwid], id: &str| {
        admit_counted(
            &lic,
            &settings,
            hwids,
            std::slice::from_ref(&known_ip),
            Some(&hw(id)),
            ip(1),
            now(),
        )
    };
    assert_eq!(
        fast(&full, "device-a-0000"),
        run(&full, "device-a-0000").ok()
    );
    assert_eq!(
        fast(&room, "device-c-0000"),
        None,
        "a stale record takes a slot again"
    );
    assert_eq!(
        fast(&room, "device-d-0000"),
        None,
        "a forgotten record takes a slot again"
    );
    assert_eq!(fast(&room, "device-new-000"), None);
    // Only new or un-forgotten records (not plain refreshes) must be written before answering.
    assert!(run(&room, "device-d-0000").unwrap().creates_state());
    assert!(run(&room, "device-new-000").unwrap().creates_state());
    assert!(!run(&full, "device-a-0000").unwrap().creates_state());
    // But a forgotten device cannot come back past the limit.
    assert_eq!(
        code_of(run(&full, "device-d-0000")),
        ResultCode::HwidLimitReached
    );

    // IP limit is checked first.
    let other_ip = admit(
        &lic,
        &settings,
        &full,
        std::slice::from_ref(&known_ip),
        Some(&hw("device-new-000")),
        ip(2),
        now(),
    );
    assert_eq!(code_of(other_ip), ResultCode::IpLimitReached);
}

#[test]
fn zero_or_null_limits_are_unlimited() {
    let mut lic = license();
    let many: Vec<IpRecord> = (0..50)
        .map(|i| ip_record(&lic, ip(i), false, now()))
        .collect();
    for limit in [None, Some(0)] {
        lic.ip_limit = limit;
        let result = admit(
            &lic,
            &TeamSettings::default(),
            &[],
            &many,
            None,
            ip(200),
            now(),
        );
        assert_eq!(result.unwrap().ip, RecordChange::Create);
    }
}

#[test]
fn verify_without_hardware_identifier_cannot_bypass_a_limit() {
    let mut lic = license();
    lic.hwid_limit = Some(1);
    let result = admit(&lic, &TeamSettings::default(), &[], &[], None, ip(1), now());
    let denial = result.unwrap_err();
    assert_eq!(denial.code, ResultCode::BadRequest);
    let api: ApiError = denial.into();
    assert_eq!(api.field_errors()[0].field, "hardwareIdentifier");
    // When the limit is full (devices, or addresses before them), the limit's refusal: the
    // request could not pass with any identifier it might have sent.
    let taken = [hwid_record(&lic, "device-a-0000", false, now())];
    let full = admit(
        &lic,
        &TeamSettings::default(),
        &taken,
        &[],
        None,
        ip(1),
        now(),
    );
    assert_eq!(full.unwrap_err().code, ResultCode::HwidLimitReached);
    lic.ip_limit = Some(1);
    let addresses = [ip_record(&lic, ip(2), false, now())];
    let full = admit(
        &lic,
        &TeamSettings::default(),
        &[],
        &addresses,
        None,
        ip(1),
        now(),
    );
    assert_eq!(full.unwrap_err().code, ResultCode::IpLimitReached);
    lic.ip_limit = None;
    lic.hwid_limit = None;
    let ok = admit(&lic, &TeamSettings::default(), &[], &[], None, ip(1), now()).unwrap();
    assert_eq!(ok.hwid, None);
}

/// `requireHardwareIdentifier: false`: a verify without one passes the hardware limit (nothing
/// to count), records no device, and is told apart; one with an identifier is limited as ever.
#[test]
fn a_team_that_does_not_require_a_hardware_identifier_passes_verifies_without_one() {
    let mut lic = license();
    lic.hwid_limit = Some(1);
    let lax = TeamSettings {
        require_hardware_identifier: false,
        ..TeamSettings::default()
    };
    let ok = admit(&lic, &lax, &[], &[], None, ip(1), now()).unwrap();
    assert_eq!(ok.hwid, None);
    assert!(hardware_unchecked(&lic, None));
    assert!(!hardware_unchecked(&lic, Some(&hw("device-0001-abc"))));
    let taken = [hwid_record(&lic, "device-a-0000", false, now())];
    assert_eq!(
        admit(
            &lic,
            &lax,
            &taken,
            &[],
            Some(&hw("device-b-0000")),
            ip(1),
            now()
        )
        .unwrap_err()
        .code,
        ResultCode::HwidLimitReached
    );
    // The fast path agrees.
    let known = [ip_record(&lic, ip(1), false, now())];
    assert_eq!(
        admit_counted(&lic, &lax, &[], &known, None, ip(1), now()),
        admit(&lic, &lax, &[], &known, None, ip(1), now()).ok()
    );
}

#[test]
fn activation_starts_the_clock_once() {
    let mut lic = license();
    lic.expiration_type = ExpirationType::Duration;
    lic.expiration_start = ExpirationStart::Activation;
    lic.expiration_days = Some(10);
    let first = admit(&lic, &TeamSettings::default(), &[], &[], None, ip(1), now()).unwrap();
    assert_eq!(first.activate, Some(now().plus_days(10)));
    assert!(first.creates_state());
    lic.expiration_date = first.activate;
    let known = [ip_record(&lic, ip(1), false, now())];
    let second = admit(
        &lic,
        &TeamSettings::default(),
        &[],
        &known,
        None,
        ip(1),
        now(),
    )
    .unwrap();
    assert_eq!(second.activate, None);
    assert!(
        !second.creates_state(),
        "a refresh of known records can be batched"
    );
}

/// Applies an admission to in-memory records, the way a store does.
fn apply(
    lic: &License,
    hwids: &mut Vec<Hwid>,
    ips: &mut Vec<IpRecord>,
    adm: &Admission,
    h: Option<&HardwareId>,
    addr: IpAddr,
    at: Timestamp,
) {
    match adm.hwid {
        Some(RecordChange::Create) => hwids.push(hwid_record(lic, h.unwrap().as_str(), false, at)),
        Some(RecordChange::Refresh { id, .. }) => {
            let r = hwids.iter_mut().find(|r| r.id == id).unwrap();
            r.forgotten = false;
            r.last_seen_at = at;
        }
        None => {}
    }
    match adm.ip {
        RecordChange::Create => ips.push(ip_record(lic, addr, false, at)),
        RecordChange::Refresh { id, .. } => {
            let r = ips.iter_mut().find(|r| r.id == id).unwrap();
            r.forgotten = false;
            r.last_seen_at = at;
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Request { device: u8, addr: u8, minutes: u16 },
    ForgetHwid(u8),
    ForgetIp(u8),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..12, 0u8..12, 0u16..180).prop_map(|(device, addr, minutes)| Op::Request { device, addr, minutes }),
        1 => (0u8..12).prop_map(Op::ForgetHwid),
        1 => (0u8..12).prop_map(Op::ForgetIp),
    ]
}

proptest! {
    #[test]
    fn no_sequence_of_requests_exceeds_a_limit(
        hwid_limit in 1u32..5,
        ip_limit in 0u32..5,
        timeout in prop::option::of(1u32..120),
        require in any::<bool>(),
        ops in prop::collection::vec(op_strategy(), 1..80),
    ) {
        let mut lic = license();
        lic.hwid_limit = Some(hwid_limit);
        lic.ip_limit = Some(ip_limit);
        let settings = TeamSettings {
            hwid_timeout: timeout,
            ip_timeout: timeout,
            require_hardware_identifier: require,
            ..TeamSettings::default()
        };
        let (mut hwids, mut ips) = (Vec::new(), Vec::new());
        let mut clock = now();
        for op in ops {
            match op {
                Op::Request { device, addr, minutes } => {
                    clock = clock.plus_minutes(u32::from(minutes));
                    // Device 11 stands for a request that names none.
                    let h = (device != 11).then(|| hw(&format!("device-{device:04}-xyz")));
                    let address = ip(addr);
                    let full = admit(&lic, &settings, &hwids, &ips, h.as_ref(), address, clock);
                    // The lock-free path never admits what the atomic step would not, nor differently.
                    if let Some(fast) = admit_counted(&lic, &settings, &hwids, &ips, h.as_ref(), address, clock) {
                        prop_assert_eq!(full.as_ref().ok(), Some(&fast));
                        prop_assert!(!fast.creates_state());
                    }
                    // Without an identifier, only a team that does not require one passes.
                    if h.is_none() && require {
                        prop_assert!(full.is_err());
                    }
                    if let Ok(adm) = full {
                        apply(&lic, &mut hwids, &mut ips, &adm, h.as_ref(), address, clock);
                    }
                }
                Op::ForgetHwid(i) => if let Some(r) = hwids.get_mut(usize::from(i)) { r.forgotten = true },
                Op::ForgetIp(i) => if let Some(r) = ips.get_mut(usize::from(i)) { r.forgotten = true },
            }
            let live_hwids = hwids.iter().filter(|r| !r.forgotten && seen_within(r.last_seen_at, timeout, clock)).count();
            let live_ips = ips.iter().filter(|r| !r.forgotten && seen_within(r.last_seen_at, timeout, clock)).count();
            prop_assert!(live_hwids <= hwid_limit as usize, "{live_hwids} devices > {hwid_limit}");
            if ip_limit > 0 {
                prop_assert!(live_ips <= ip_limit as usize, "{live_ips} IPs > {ip_limit}");
            }
            // Records are unique per identifier and address.
            let mut ids: Vec<_> = hwids.iter().map(|r| r.identifier.clone()).collect();
            ids.sort();
            ids.dedup();
            prop_assert_eq!(ids.len(), hwids.len());
        }
    }
}

/// The latest release: the one marked latest when it may be served, else the newest published
/// one of the branch; with no branch named, else the newest of every branch's latest.
#[test]
fn the_latest_release_follows_one_rule() {
    use crate::api::latest_release;
    let p = ProductId::new();
    let (b1, b2) = (BranchId::new(), BranchId::new());
    let at = |mut r: Release, minutes: u32| {
        r.created_at = now().plus_minutes(minutes);
        r
    };
    let releases = vec![
        at(
            release(p, None, "1.0.0", ReleaseStatus::Published, false),
            1,
        ),
        at(
            release(p, None, "2.0.0", ReleaseStatus::Published, false),
            2,
        ),
        at(release(p, None, "3.0.0", ReleaseStatus::Draft, false), 3),
        at(
            release(p, Some(b1), "1.1.0", ReleaseStatus::Published, true),
            4,
        ),
        at(
            release(p, Some(b1), "1.2.0", ReleaseStatus::Published, false),
            5,
        ),
        at(release(p, Some(b2), "0.9.0", ReleaseStatus::Draft, true), 6),
        at(
            release(p, Some(b2), "0.8.0", ReleaseStatus::Deprecated, false),
            7,
        ),
    ];
    let version = |r: Option<&Release>| r.map(|r| r.version.as_str().to_owned());
    // No release without a branch is marked latest: the newest published one (not the draft).
    assert_eq!(
        version(latest_release(&releases, None, true)),
        Some("2.0.0".into())
    );
    // A branch's release marked latest wins over a newer one.
    assert_eq!(
        version(latest_release(&releases, Some(b1), false)),
        Some("1.1.0".into())
    );
    // A draft marked latest is not served, nor is a deprecated one that is not marked.
    assert_eq!(version(latest_release(&releases, Some(b2), false)), None);
    // Nothing without a branch: the newest of the branches' latest, when no branch was named.
    let branched: Vec<Release> = releases
        .iter()
        .filter(|r| r.branch_id.is_some())
        .cloned()
        .collect();
    assert_eq!(
        version(latest_release(&branched, None, true)),
        Some("1.1.0".into())
    );
    assert_eq!(version(latest_release(&branched, None, false)), None);
    // A deprecated release marked latest is served.
    let mut deprecated = branched.clone();
    deprecated[3].latest = true;
    assert_eq!(
        version(latest_release(&deprecated, Some(b2), false)),
        Some("0.8.0".into())
    );
    assert_eq!(
        version(latest_release(&deprecated, None, true)),
        Some("0.8.0".into())
    );
}

//! Two-step sign-in for staff accounts: an authenticator app's time-based codes (RFC 6238 with
//! SHA-1, six digits and 30-second steps, which every app reads from the `otpauth://` address)
//! and ten one-time recovery codes.
//!
//! A code is accepted for the step before, the current one and the one after (a minute and a
//! half of clock drift), and only for a step later than the last one accepted, so that a code
//! seen over a shoulder cannot sign in a second time. Recovery codes are stored as SHA-256: they
//! are random enough (60 bits) that no slow hash is needed, and each is deleted once used.

use licensing_core::crypto::sha256_hex;
use licensing_core::model::{Action, FieldChange, StaffUser, TwoStep};
use licensing_core::store::StaffStore;
use licensing_core::{ApiError, Timestamp};
use rand::RngCore as _;
use totp_rs::{Algorithm, Secret, TOTP};

use super::journal::Acting;
use crate::runtime::keyring::{Keyring, two_step_purpose};

/// How many recovery codes an account gets.
pub const RECOVERY_CODES: usize = 10;

/// Letters of recovery codes: no 0/O or 1/I/L to misread.
const RECOVERY_ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";

/// A new random secret (160 bits, as RFC 4226 recommends), in base32.
pub fn new_secret() -> String {
    let mut bytes = vec![0u8; 20];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    Secret::Raw(bytes).to_encoded().to_string()
}

/// The generator of `secret` for `account` at `issuer` (a `:` in either becomes a space, as the
/// address format reserves it).
fn totp(secret: &str, issuer: &str, account: &str) -> Option<TOTP> {
    let bytes = Secret::Encoded(secret.to_owned()).to_bytes().ok()?;
    TOTP::new(
        Algorithm::SHA1,
        6,
        1,
        30,
        bytes,
        Some(issuer.replace(':', " ")),
        account.replace(':', " "),
    )
    .ok()
}

/// The `otpauth://` address an authenticator app reads (from its QR code, or typed in).
pub fn setup_url(secret: &str, issuer: &str, account: &str) -> Option<String> {
    totp(secret, issuer, account).map(|t| t.get_url())
}

/// The step of `code` if it is the code of `secret` at `now` (one step of drift either way) and
/// of a step after `last_step`.
pub fn code_step(secret: &str, code: &str, now: Timestamp, last_step: u64) -> Option<u64> {
    let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let t = totp(secret, "x", "x")?;
    let seconds = u64::try_from(now.as_millis() / 1000).ok()?;
    let current = seconds / 30;
    (current.saturating_sub(1)..=current + 1)
        .filter(|step| *step > last_step)
        .find(|step| {
            let expected = t.generate(step * 30);
            subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), code.as_bytes()).into()
        })
}

/// A recovery code as typed, in the form it is hashed in: lower-case, without spaces or dashes.
fn normalized(code: &str) -> String {
    code.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// New recovery codes: what to show once (`xxxx-xxxx-xxxx`), and what to store.
pub fn new_recovery_codes() -> (Vec<String>, Vec<String>) {
    let mut shown = Vec::with_capacity(RECOVERY_CODES);
    let mut stored = Vec::with_capacity(RECOVERY_CODES);
    for _ in 0..RECOVERY_CODES {
        let mut bytes = [0u8; 12];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        let letters: String = bytes
            .iter()
            .map(|b| char::from(RECOVERY_ALPHABET[usize::from(*b) % RECOVERY_ALPHABET.len()]))
            .collect();
        let code = format!("{}-{}-{}", &letters[..4], &letters[4..8], &letters[8..]);
        stored.push(sha256_hex(normalized(&code).as_bytes()));
        shown.push(code);
    }
    (shown, stored)
}

/// The account's second factor after `code` (an app's code or a recovery code) is spent, or
/// `None` when the code is not good. `secret` is the factor's secret, opened (see
/// [`open_secret`]).
pub fn spend(two_step: &TwoStep, secret: &str, code: &str, now: Timestamp) -> Option<TwoStep> {
    if let Some(step) = code_step(secret, code, now, two_step.last_step) {
        return Some(TwoStep {
            last_step: step,
            ..two_step.clone()
        });
    }
    let hash = sha256_hex(normalized(code).as_bytes());
    let at = two_step
        .recovery_codes
        .iter()
        .position(|h| bool::from(subtle::ConstantTimeEq::ct_eq(h.as_bytes(), hash.as_bytes())))?;
    let mut spent = two_step.clone();
    spent.recovery_codes.remove(at);
    Some(spent)
}

fn change(field: &str, old: &str, new: &str) -> FieldChange {
    FieldChange {
        field: field.into(),
        old: Some(old.into()),
        new: Some(new.into()),
        secret: false,
        redacted: false,
    }
}

/// The secret of `user`'s second factor, opened (it is sealed at rest under a master key).
pub fn open_secret(
    keyring: &Keyring,
    user: &StaffUser,
    two_step: &TwoStep,
) -> Result<zeroize::Zeroizing<String>, ApiError> {
    keyring
        .open_secret(&two_step_purpose(user.id), &two_step.secret)
        .map_err(|e| {
            licensing_core::ApiError::internal_because("a two-step secret cannot be opened", e)
        })
}

/// Turns two-step sign-in on for `user` with `secret`, if `code` is the app's current code for
/// it (so the app is known to be set up); answers the recovery codes to show once. The secret is
/// stored as `keyring` says (sealed under its master key, when it has one).
pub async fn turn_on<S: StaffStore>(
    store: &S,
    keyring: &Keyring,
    user: &StaffUser,
    secret: &str,
    code: &str,
    now: Timestamp,
    acting: &Acting,
) -> Result<Vec<String>, ApiError> {
    if user.two_step.is_some() {
        return Err(ApiError::bad_field(
            "code",
            "two-step sign-in is on already",
        ));
    }
    let step = code_step(secret, code, now, 0).ok_or_else(|| {
        ApiError::bad_field(
            "code",
            "is not the code your app shows now: check that its clock is right, and type the six digits it shows",
        )
    })?;
    let (shown, stored) = new_recovery_codes();
    let sealed = keyring
        .seal_secret(&two_step_purpose(user.id), secret)
        .map_err(|e| {
            licensing_core::ApiError::internal_because("sealing a two-step secret failed", e)
        })?;
    let two_step = TwoStep {
        secret: sealed,
        last_step: step,
        recovery_codes: stored,
        since: now,
    };
    switch(store, user, Some(two_step), now, acting).await?;
    Ok(shown)
}

/// Turns two-step sign-in off for `user` (by themselves with a good code, or by an owner or an
/// admin for someone who lost both the app and the recovery codes).
pub async fn turn_off<S: StaffStore>(
    store: &S,
    user: &StaffUser,
    now: Timestamp,
    acting: &Acting,
) -> Result<(), ApiError> {
    if user.two_step.is_none() {
        return Ok(());
    }
    switch(store, user, None, now, acting).await
}

/// Stores `user` with two-step sign-in as `two_step` says (on with it, off without), audited.
async fn switch<S: StaffStore>(
    store: &S,
    user: &StaffUser,
    two_step: Option<TwoStep>,
    now: Timestamp,
    acting: &Acting,
) -> Result<(), ApiError> {
    let (from, to) = if two_step.is_some() {
        ("off", "on")
    } else {
        ("on", "off")
    };
    let mut changed = user.clone();
    changed.two_step = two_step;
    changed.updated_at = now;
    let journal = acting.journal(
        user.team_id,
        now,
        Action::StaffUpdated,
        user.id,
        vec![change("twoStep", from, to)],
    );
    store.update_staff(&changed, &journal).await?;
    Ok(())
}

/// Spends `code` for signing `user` in: the account as stored afterwards, or `None` when the
/// code is not good. Using a recovery code is in the audit log, with how many are left.
pub async fn sign_in<S: StaffStore>(
    store: &S,
    keyring: &Keyring,
    user: &StaffUser,
    code: &str,
    now: Timestamp,
    acting: &Acting,
) -> Result<Option<StaffUser>, ApiError> {
    let Some(two_step) = &user.two_step else {
        return Ok(Some(user.clone()));
    };
    let secret = open_secret(keyring, user, two_step)?;
    let Some(spent) = spend(two_step, &secret, code, now) else {
        return Ok(None);
    };
    let changes = if spent.recovery_codes.len() == two_step.recovery_codes.len() {
        Vec::new()
    } else {
        vec![change(
            "recoveryCodes",
            &two_step.recovery_codes.len().to_string(),
            &spent.recovery_codes.len().to_string(),
        )]
    };
    let mut changed = user.clone();
    changed.two_step = Some(spent);
    let journal = if changes.is_empty() {
        licensing_core::store::Journal::NONE
    } else {
        acting.journal(user.team_id, now, Action::StaffUpdated, user.id, changes)
    };
    store.update_staff(&changed, &journal).await?;
    Ok(Some(changed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_millis(seconds * 1000)
    }

    /// RFC 6238's SHA-1 test secret ("12345678901234567890") and its vectors, cut to six digits.
    const RFC_SECRET: &str = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";

    #[test]
    fn codes_follow_rfc_6238() {
        for (seconds, code) in [
            (59, "287082"),
            (1_111_111_109, "081804"),
            (1_234_567_890, "005924"),
            (2_000_000_000, "279037"),
        ] {
            assert!(
                code_step(RFC_SECRET, code, at(seconds), 0).is_some(),
                "{seconds}"
            );
        }
    }

    #[test]
    fn a_code_is_good_once_and_for_a_step_either_way() {
        let t = totp(RFC_SECRET, "x", "x").unwrap();
        let now = at(1_234_567_890);
        let current = 1_234_567_890 / 30;
        let code = t.generate(1_234_567_890);
        assert_eq!(code_step(RFC_SECRET, &code, now, 0), Some(current));
        // Spent: not again.
        assert_eq!(code_step(RFC_SECRET, &code, now, current), None);
        // The previous step's code a moment later; not two steps back.
        assert_eq!(
            code_step(RFC_SECRET, &code, at(1_234_567_890 + 30), 0),
            Some(current)
        );
        assert_eq!(
            code_step(RFC_SECRET, &code, at(1_234_567_890 + 61), 0),
            None
        );
        assert_eq!(code_step(RFC_SECRET, "12345", now, 0), None);
        assert_eq!(code_step(RFC_SECRET, "abcdef", now, 0), None);
        assert_eq!(
            code_step(
                RFC_SECRET,
                &format!("{} {}", &code[..3], &code[3..]),
                now,
                0
            ),
            Some(current),
            "spaces are ignored"
        );
    }

    #[test]
    fn recovery_codes_are_spent_once_whatever_their_case_and_dashes() {
        let (shown, stored) = new_recovery_codes();
        assert_eq!(shown.len(), RECOVERY_CODES);
        assert!(
            shown
                .iter()
                .all(|c| c.len() == 14 && c.matches('-').count() == 2)
        );
        let two_step = TwoStep {
            secret: new_secret(),
            last_step: 0,
            recovery_codes: stored,
            since: at(0),
        };
        let typed = shown[3].to_uppercase().replace('-', " ");
        let secret = two_step.secret.clone();
        let spent = spend(&two_step, &secret, &typed, at(100)).unwrap();
        assert_eq!(spent.recovery_codes.len(), RECOVERY_CODES - 1);
        assert!(spend(&spent, &secret, &shown[3], at(100)).is_none());
        assert!(spend(&spent, &secret, "not-a-code", at(100)).is_none());
    }

    #[test]
    fn the_setup_address_names_the_account() {
        let secret = new_secret();
        assert_eq!(secret.len(), 32);
        let url = setup_url(&secret, "Acme: licensing", "ann@example.com").unwrap();
        assert!(url.starts_with("otpauth://totp/"), "{url}");
        assert!(url.contains(&format!("secret={secret}")), "{url}");
        assert!(
            url.contains("ann%40example.com") || url.contains("ann@example.com"),
            "{url}"
        );
    }
}

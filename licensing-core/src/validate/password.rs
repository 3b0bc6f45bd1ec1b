//! The rules a staff account's password must pass: long enough, not absurdly long, and not one of
//! the passwords people use most (a list of 30,000 shipped inside the binary, see
//! `common-passwords.NOTICE`), nor the account's own e-mail name. Length is what makes a password
//! strong; there are no rules about character classes (NIST SP 800-63B, 5.1.1.2).

use std::sync::LazyLock;

/// The fewest characters a password may have.
pub const MIN_PASSWORD_CHARS: usize = 12;
/// The most bytes a password may have (hashing reads all of it).
pub const MAX_PASSWORD_BYTES: usize = 1024;

const COMMON: &str = include_str!("common-passwords.txt");

/// The list, sorted (the file is kept sorted; a test checks it).
static COMMON_SORTED: LazyLock<Vec<&'static str>> = LazyLock::new(|| COMMON.lines().collect());

/// Whether `password`, ignoring case, is on the list of common passwords.
pub fn is_common_password(password: &str) -> bool {
    let lower = password.to_lowercase();
    COMMON_SORTED.binary_search(&lower.as_str()).is_ok()
}

/// Checks a new password for the account with e-mail address `email`; the error says what to
/// change.
pub fn check_new_password(password: &str, email: &str) -> Result<(), String> {
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(format!("must be at most {MAX_PASSWORD_BYTES} bytes long"));
    }
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(format!(
            "must be at least {MIN_PASSWORD_CHARS} characters long (got {chars}); a few unrelated words make a good one"
        ));
    }
    if password.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    let mut distinct: Vec<char> = password.chars().collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 4 {
        return Err("must use more than three different characters".into());
    }
    if is_common_password(password) {
        return Err("is one of the most commonly used passwords; choose another".into());
    }
    let name = email.split('@').next().unwrap_or_default().to_lowercase();
    if name.chars().count() >= 4 && password.to_lowercase().contains(&name) {
        return Err("must not contain the account's e-mail address".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_sorted_lower_case_and_without_duplicates() {
        let lines: Vec<&str> = COMMON.lines().collect();
        assert_eq!(lines.len(), 30_000);
        assert!(
            lines.windows(2).all(|w| w[0] < w[1]),
            "sorted, no duplicates"
        );
        assert!(
            lines
                .iter()
                .all(|l| *l == l.to_lowercase() && !l.is_empty())
        );
    }

    #[test]
    fn common_passwords_are_refused_in_any_case() {
        for common in [
            "qwerty123456",
            "1qaz2wsx3edc",
            "QAZWSXEDCRFV",
            "123456654321",
        ] {
            assert_eq!(
                check_new_password(common, "ann@example.com").unwrap_err(),
                "is one of the most commonly used passwords; choose another",
                "{common}"
            );
        }
        assert!(is_common_password("password"));
        assert!(!is_common_password("correct horse battery staple"));
    }

    #[test]
    fn length_is_counted_in_characters_and_bounded_in_bytes() {
        assert!(
            check_new_password("short pass", "ann@example.com")
                .unwrap_err()
                .starts_with("must be at least 12 characters long (got 10)")
        );
        // Twelve characters, more than twelve bytes.
        check_new_password("ääääbbbbcccd", "ann@example.com").unwrap();
        assert_eq!(
            check_new_password(&"xy".repeat(513), "ann@example.com").unwrap_err(),
            "must be at most 1024 bytes long"
        );
        check_new_password(&"wxyz".repeat(256), "ann@example.com").unwrap();
    }

    #[test]
    fn weak_shapes_are_refused() {
        assert_eq!(
            check_new_password("aaaaaaaaaaaaaaaa", "ann@example.com").unwrap_err(),
            "must use more than three different characters"
        );
        assert_eq!(
            check_new_password("line\nbreak in it", "ann@example.com").unwrap_err(),
            "must not contain control characters"
        );
        assert_eq!(
            check_new_password("Johanna.Smith 2026", "johanna.smith@example.com").unwrap_err(),
            "must not contain the account's e-mail address"
        );
        // A short e-mail name is too common a fragment to refuse.
        check_new_password("bob the builder, quietly", "bob@example.com").unwrap();
        check_new_password("correct horse battery staple", "ann@example.com").unwrap();
    }
}

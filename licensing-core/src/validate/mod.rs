//! Parse, don't validate: each type here can only hold a value that passed its rules, so code that
//! receives one never checks again. Every rule's message says what to fix.

mod password;
mod text;

pub use crate::error::{FieldError, ValidationErrors, Validator};
pub use password::{
    MAX_PASSWORD_BYTES, MIN_PASSWORD_CHARS, check_new_password, is_common_password,
};
pub use text::*;

/// Checks a length in characters (not bytes) against an inclusive range.
pub(crate) fn check_length(text: &str, min: usize, max: usize) -> Result<(), String> {
    // Counting stops early: a hostile 1 MiB value costs no more than `max` steps.
    let count = text.chars().take(max + 1).count();
    if count < min || count > max {
        let got = if count > max {
            format!("more than {max}")
        } else {
            count.to_string()
        };
        return Err(if min == max {
            format!("must be exactly {min} characters long (got {got})")
        } else if min == 0 {
            format!("must be at most {max} characters long (got {got})")
        } else {
            format!("must be {min} to {max} characters long (got {got})")
        });
    }
    Ok(())
}

/// Rejects whitespace and control characters.
pub(crate) fn check_no_whitespace(text: &str) -> Result<(), String> {
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain whitespace or control characters".into());
    }
    Ok(())
}

/// Rejects control characters (free text may hold spaces, not line breaks or NULs).
pub(crate) fn check_no_control(text: &str) -> Result<(), String> {
    if text.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    Ok(())
}

/// Free text of `min..=max` characters without control characters, such as a name.
pub fn text(text: &str, min: usize, max: usize) -> Result<String, String> {
    check_length(text, min, max)?;
    check_no_control(text)?;
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_messages_say_the_range_and_what_was_given() {
        assert_eq!(
            check_length("ab", 3, 255).unwrap_err(),
            "must be 3 to 255 characters long (got 2)"
        );
        assert_eq!(
            check_length(&"x".repeat(300), 3, 255).unwrap_err(),
            "must be 3 to 255 characters long (got more than 255)"
        );
        assert_eq!(
            check_length(&"x".repeat(2), 0, 1).unwrap_err(),
            "must be at most 1 characters long (got more than 1)"
        );
        assert!(check_length("äöü", 3, 3).is_ok(), "characters, not bytes");
    }

    #[test]
    fn free_text_allows_spaces_but_not_control_characters() {
        assert!(text("Jane Doe", 1, 255).is_ok());
        assert_eq!(
            text("Jane\nDoe", 1, 255).unwrap_err(),
            "must not contain control characters"
        );
    }
}

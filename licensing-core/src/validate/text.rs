//! Validated text types of the API.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{check_length, check_no_control, check_no_whitespace};

macro_rules! text_type {
    ($(#[$meta:meta])* $name:ident, |$arg:ident| $check:expr) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        #[cfg(feature = "openapi")]
        $crate::string_schema!(
            $name,
            stringify!($name),
            None,
            None,
            stringify!($name),
            ""
        );

        impl $name {
            /// Parses and checks the value; the error says what to fix.
            pub fn parse($arg: &str) -> Result<Self, String> {
                $check?;
                Ok(Self($arg.to_owned()))
            }

            /// The value as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The owned text.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({:?})"), self.0)
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                Self::parse(s)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
                Self::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

text_type!(
    /// A device's hardware identifier: 10 to 1000 characters, no whitespace.
    HardwareId,
    |text| check_length(text, 10, 1000).and_then(|()| check_no_whitespace(text))
);

text_type!(
    /// A release or software version: 3 to 255 characters, no whitespace.
    Version,
    |text| check_length(text, 3, 255).and_then(|()| check_no_whitespace(text))
);

text_type!(
    /// A client's challenge: 10 to 1000 characters, no whitespace.
    Challenge,
    |text| check_length(text, 10, 1000).and_then(|()| check_no_whitespace(text))
);

text_type!(
    /// The classloader session key as sent (hex of the RSA ciphertext): 10 to 1000 characters, no
    /// whitespace. Whether it decodes and decrypts is checked later, with its own error code.
    SessionKeyText,
    |text| check_length(text, 10, 1000).and_then(|()| check_no_whitespace(text))
);

text_type!(
    /// A product branch name: 2 to 255 of `A-Z`, `a-z`, `0-9`, `_` and `-`.
    BranchName,
    |text| check_length(text, 2, 255).and_then(|()| {
        if text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            Ok(())
        } else {
            Err("must contain only letters A-Z and a-z, digits, '_' and '-'".to_owned())
        }
    })
);

text_type!(
    /// Search text of list filters: 1 to 255 characters, no control characters. Matching is
    /// case-insensitive, so the text is kept as given and lowered where it is compared.
    SearchText,
    |text| check_length(text, 1, 255).and_then(|()| check_no_control(text))
);

text_type!(
    /// (ext) What a client calls its device (`deviceName`, such as its host name): 1 to 100
    /// characters, no control characters. Shown to people, escaped where it is shown.
    DeviceName,
    |text| check_length(text, 1, 100).and_then(|()| check_no_control(text))
);

text_type!(
    /// (ext) A device's operating system as its client names it (`platform`, such as
    /// `windows 11` or `macos aarch64`): 1 to 64 characters, no control characters.
    DevicePlatform,
    |text| check_length(text, 1, 64).and_then(|()| check_no_control(text))
);

text_type!(
    /// A chat user id: 17 to 19 digits.
    ChatId,
    |text| {
        if (17..=19).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit()) {
            Ok(())
        } else {
            Err("must be 17 to 19 digits".to_owned())
        }
    }
);

text_type!(
    /// An e-mail address (RFC 5322 addr-spec, at most 254 characters).
    Email,
    |text| check_length(text, 3, 254).and_then(|()| {
        if text.contains(char::is_whitespace) {
            return Err("must be an e-mail address such as jane@example.com".to_owned());
        }
        email_address::EmailAddress::from_str(text)
            .map(drop)
            .map_err(|_| "must be an e-mail address such as jane@example.com".to_owned())
    })
);

text_type!(
    /// An absolute `http` or `https` URL of at most 2048 characters.
    HttpUrl,
    |text| check_length(text, 1, 2048).and_then(|()| check_http_url(text))
);

fn check_http_url(text: &str) -> Result<(), String> {
    const MESSAGE: &str = "must be an absolute http:// or https:// URL such as https://example.com";
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
        .ok_or(MESSAGE)?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let hostname = if host.starts_with('[') {
        host.split_once(']').map(|(h, _)| h.trim_start_matches('['))
    } else {
        Some(host.split(':').next().unwrap_or_default())
    };
    match hostname {
        Some(h) if !h.is_empty() && !text.contains(char::is_whitespace) => {}
        _ => return Err(MESSAGE.to_owned()),
    }
    if text.chars().any(char::is_control) {
        return Err(MESSAGE.to_owned());
    }
    Ok(())
}

/// A country, as ISO 3166-1 codes and English name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Country {
    /// Two-letter code, upper case.
    pub alpha2: &'static str,
    /// Three-letter code, upper case.
    pub alpha3: &'static str,
    /// English short name.
    pub name: &'static str,
}

impl Country {
    /// Looks a country up by its alpha-2 or alpha-3 code, in either case.
    pub fn from_code(code: &str) -> Result<Country, String> {
        let found = match code.len() {
            2 => celes::Country::from_alpha2(code).ok(),
            3 => celes::Country::from_alpha3(code).ok(),
            _ => None,
        };
        found.map(Self::from_celes).ok_or_else(|| {
            "must be an ISO 3166-1 alpha-2 or alpha-3 country code, such as FI or FIN".to_owned()
        })
    }

    fn from_celes(c: celes::Country) -> Self {
        Self {
            alpha2: c.alpha2,
            alpha3: c.alpha3,
            name: common_name(c.alpha2, c.long_name),
        }
    }
}

/// The names people write for the countries whose ISO 3166 names they do not ("United States",
/// not "The United States Of America"; accents and hyphens where the country writes them).
const COMMON_NAMES: &[(&str, &str)] = &[
    ("AX", "Åland Islands"),
    ("BL", "Saint Barthélemy"),
    ("BN", "Brunei"),
    ("CC", "Cocos (Keeling) Islands"),
    ("CD", "Democratic Republic of the Congo"),
    ("CI", "Côte d'Ivoire"),
    ("CW", "Curaçao"),
    ("FK", "Falkland Islands"),
    ("FM", "Micronesia"),
    ("GB", "United Kingdom"),
    ("GW", "Guinea-Bissau"),
    ("HM", "Heard Island and McDonald Islands"),
    ("IR", "Iran"),
    ("KP", "North Korea"),
    ("KR", "South Korea"),
    ("LA", "Laos"),
    ("MD", "Moldova"),
    ("MF", "Saint Martin"),
    ("MK", "North Macedonia"),
    ("PS", "Palestine"),
    ("RE", "Réunion"),
    ("RU", "Russia"),
    ("SH", "Saint Helena, Ascension and Tristan da Cunha"),
    ("SX", "Sint Maarten"),
    ("SY", "Syria"),
    ("TL", "Timor-Leste"),
    ("TW", "Taiwan"),
    ("TZ", "Tanzania"),
    ("UM", "U.S. Minor Outlying Islands"),
    ("US", "United States"),
    ("VA", "Vatican City"),
    ("VE", "Venezuela"),
    ("VI", "U.S. Virgin Islands"),
];

/// The name of country `alpha2` as people write it: its entry in [`COMMON_NAMES`], else its
/// ISO name without a leading "The" and with "and", "of" and "the" in lower case.
fn common_name(alpha2: &str, iso: &'static str) -> &'static str {
    static NAMES: std::sync::OnceLock<std::collections::HashMap<&'static str, &'static str>> =
        std::sync::OnceLock::new();
    if let Some((_, name)) = COMMON_NAMES.iter().find(|(code, _)| *code == alpha2) {
        return name;
    }
    let names = NAMES.get_or_init(|| {
        celes::Country::get_countries()
            .iter()
            .map(|c| {
                let trimmed = c.long_name.strip_prefix("The ").unwrap_or(c.long_name);
                let written = trimmed
                    .replace(" And ", " and ")
                    .replace(" Of ", " of ")
                    .replace(" The ", " the ");
                (c.alpha2, &*Box::leak(written.into_boxed_str()))
            })
            .collect()
    });
    names.get(alpha2).copied().unwrap_or(iso)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn countries_have_the_names_people_write() {
        let name = |code: &str| Country::from_code(code).unwrap().name;
        assert_eq!(name("US"), "United States");
        assert_eq!(name("GBR"), "United Kingdom");
        assert_eq!(name("kr"), "South Korea");
        assert_eq!(name("NL"), "Netherlands");
        assert_eq!(name("BA"), "Bosnia and Herzegovina");
        assert_eq!(name("VC"), "Saint Vincent and the Grenadines");
        assert_eq!(name("CI"), "Côte d'Ivoire");
        assert_eq!(name("FI"), "Finland");
        for c in celes::Country::get_countries() {
            let written = name(c.alpha2);
            assert!(
                !written.starts_with("The ") && !written.contains(" Of "),
                "{written}"
            );
        }
    }

    #[test]
    fn hardware_identifier_limits() {
        assert!(HardwareId::parse("0123456789").is_ok());
        assert!(HardwareId::parse(&"h".repeat(1000)).is_ok());
        assert_eq!(
            HardwareId::parse("012345678").unwrap_err(),
            "must be 10 to 1000 characters long (got 9)"
        );
        assert_eq!(
            HardwareId::parse(&"h".repeat(1001)).unwrap_err(),
            "must be 10 to 1000 characters long (got more than 1000)"
        );
        assert_eq!(
            HardwareId::parse("01234 56789").unwrap_err(),
            "must not contain whitespace or control characters"
        );
    }

    #[test]
    fn branch_names_allow_only_the_listed_characters() {
        for ok in ["main", "release_1-x", "AB"] {
            assert!(BranchName::parse(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            BranchName::parse("feature/x").unwrap_err(),
            "must contain only letters A-Z and a-z, digits, '_' and '-'"
        );
        assert_eq!(
            BranchName::parse("ä-branch").unwrap_err(),
            "must contain only letters A-Z and a-z, digits, '_' and '-'"
        );
        assert_eq!(
            BranchName::parse("x").unwrap_err(),
            "must be 2 to 255 characters long (got 1)"
        );
    }

    #[test]
    fn chat_ids_are_17_to_19_digits() {
        assert!(ChatId::parse("12345678901234567").is_ok());
        assert!(ChatId::parse("1234567890123456789").is_ok());
        for bad in [
            "1234567890123456",
            "12345678901234567890",
            "1234567890123456a",
        ] {
            assert_eq!(
                ChatId::parse(bad).unwrap_err(),
                "must be 17 to 19 digits",
                "{bad}"
            );
        }
    }

    #[test]
    fn emails() {
        assert!(Email::parse("jane.doe+x@example.com").is_ok());
        for bad in [
            "jane",
            "jane@",
            "@example.com",
            "jane doe@example.com",
            "a@b@c",
        ] {
            assert_eq!(
                Email::parse(bad).unwrap_err(),
                "must be an e-mail address such as jane@example.com",
                "{bad}"
            );
        }
    }

    #[test]
    fn urls_must_be_http_or_https_with_a_host() {
        for ok in [
            "https://example.com",
            "http://example.com:8080/path?q=1",
            "https://[::1]/x",
        ] {
            assert!(HttpUrl::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "ftp://example.com",
            "example.com",
            "https://",
            "https:// x",
            "javascript:alert(1)",
        ] {
            assert!(HttpUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn countries_by_alpha2_or_alpha3() {
        let fi = Country::from_code("FI").unwrap();
        assert_eq!((fi.alpha2, fi.alpha3), ("FI", "FIN"));
        assert_eq!(Country::from_code("fin").unwrap(), fi);
        assert!(Country::from_code("XX").is_err());
        assert!(Country::from_code("Finland").is_err());
    }

    #[test]
    fn values_deserialize_only_when_valid() {
        assert!(serde_json::from_str::<Version>("\"1.0.0\"").is_ok());
        let err = serde_json::from_str::<Version>("\"1 0\"").unwrap_err();
        assert!(err.to_string().contains("whitespace"), "{err}");
        let err = serde_json::from_str::<Version>("\"v1\"").unwrap_err();
        assert!(err.to_string().contains("3 to 255"), "{err}");
    }
}

//! The message catalog: the customer portal's pages and e-mails in every language the server
//! ships (English and German), from Fluent files compiled into the binary
//! (`licensing-server/locales/{lang}/*.ftl`). Translating to another language is adding its
//! files and a line to [`Lang`].

use std::collections::HashMap;
use std::sync::OnceLock;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use licensing_core::Timestamp;

/// A language the catalog has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lang {
    /// English (the default).
    En,
    /// German.
    De,
}

impl Lang {
    /// Every language, the default first.
    pub(crate) const ALL: [Self; 2] = [Self::En, Self::De];

    /// Its tag (`en`, `de`).
    pub(crate) fn tag(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::De => "de",
        }
    }

    /// The language of tag `tag` (`de`, `de-AT`), if the catalog has it.
    pub(crate) fn of_tag(tag: &str) -> Option<Self> {
        let primary = tag.trim().split(['-', '_']).next()?.to_ascii_lowercase();
        Self::ALL.into_iter().find(|l| l.tag() == primary)
    }

    /// The language for a request: the one a cookie chose (the page's switch), else the first
    /// of `Accept-Language` (by weight) the catalog has, else English.
    pub(crate) fn choose(cookie: Option<&str>, accept_language: Option<&str>) -> Self {
        Self::choose_among(cookie, accept_language, |_| true)
    }

    /// [`Lang::choose`] among the languages `offered` accepts (the others are passed over).
    pub(crate) fn choose_among(
        cookie: Option<&str>,
        accept_language: Option<&str>,
        offered: impl Fn(Self) -> bool,
    ) -> Self {
        let of_tag = |tag: &str| Self::of_tag(tag).filter(|lang| offered(*lang));
        if let Some(lang) = cookie.and_then(of_tag) {
            return lang;
        }
        let mut wanted: Vec<(f32, &str)> = accept_language
            .unwrap_or("")
            .split(',')
            .filter_map(|part| {
                let mut pieces = part.split(';');
                let tag = pieces.next()?.trim();
                let weight = pieces
                    .find_map(|p| p.trim().strip_prefix("q="))
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .unwrap_or(1.0);
                (!tag.is_empty() && weight > 0.0).then_some((weight, tag))
            })
            .collect();
        wanted.sort_by(|a, b| b.0.total_cmp(&a.0));
        wanted
            .into_iter()
            .find_map(|(_, tag)| of_tag(tag))
            .unwrap_or(Self::En)
    }

    /// Whether this language's own files have message `id` (without falling back to English).
    pub(crate) fn has(self, id: &str) -> bool {
        catalog()[self as usize].has_message(id)
    }

    /// Message `id` without arguments, formatted once and kept for the life of the process (such
    /// a message never changes): pages use it wherever a fixed text stood.
    pub(crate) fn text(self, id: &str) -> &'static str {
        static TEXTS: OnceLock<Vec<HashMap<String, &'static str>>> = OnceLock::new();
        let texts = TEXTS.get_or_init(|| {
            Self::ALL
                .into_iter()
                .zip(FILES)
                .map(|(lang, files)| {
                    files
                        .iter()
                        .filter_map(|text| FluentResource::try_new((*text).to_owned()).ok())
                        .flat_map(|resource| {
                            resource
                                .entries()
                                .filter_map(|entry| match entry {
                                    fluent_syntax::ast::Entry::Message(m) if m.value.is_some() => {
                                        Some(m.id.name.to_owned())
                                    }
                                    _ => None,
                                })
                                .collect::<Vec<_>>()
                        })
                        .map(|id| {
                            let text: &'static str = Box::leak(lang.t(&id).into_boxed_str());
                            (id, text)
                        })
                        .collect()
                })
                .collect()
        });
        texts[self as usize]
            .get(id)
            .or_else(|| texts[Self::En as usize].get(id))
            .copied()
            .unwrap_or("")
    }

    /// Message `id` without arguments.
    pub(crate) fn t(self, id: &str) -> String {
        self.format(id, None)
    }

    /// Message `id` with `args` (names and values, text or numbers).
    pub(crate) fn t_with(self, id: &str, args: &[(&str, Arg<'_>)]) -> String {
        let mut fluent = FluentArgs::new();
        for (name, value) in args {
            match value {
                Arg::Text(text) => fluent.set(*name, FluentValue::from(*text)),
                Arg::Number(n) => fluent.set(*name, FluentValue::from(*n)),
            }
        }
        self.format(id, Some(&fluent))
    }

    /// A date (UTC) as the language writes it: "November 30, 2026", "30. November 2026".
    pub(crate) fn date(self, at: Timestamp) -> String {
        let date = at.as_datetime().date_naive();
        use chrono::Datelike as _;
        let month = self.t(&format!("month-{}", date.month()));
        self.t_with(
            "date",
            &[
                ("day", Arg::Number(i64::from(date.day()))),
                ("month", Arg::Text(&month)),
                ("year", Arg::Number(i64::from(date.year()))),
            ],
        )
    }

    fn format(self, id: &str, args: Option<&FluentArgs<'_>>) -> String {
        let bundle = &catalog()[self as usize];
        let Some(pattern) = bundle.get_message(id).and_then(|m| m.value()) else {
            // A message missing from a translation falls back to English; one missing from
            // English is a bug the catalog test catches.
            return if self == Self::En {
                id.to_owned()
            } else {
                Self::En.format(id, args)
            };
        };
        let mut errors = Vec::new();
        bundle
            .format_pattern(pattern, args, &mut errors)
            .into_owned()
    }
}

/// A message argument.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arg<'a> {
    /// Text.
    Text(&'a str),
    /// A number (plurals choose by it).
    Number(i64),
}

/// The files of each language, in the order of [`Lang::ALL`].
const FILES: [&[&str]; 2] = [
    &[
        include_str!("../locales/en/portal.ftl"),
        include_str!("../locales/en/dashboard.ftl"),
    ],
    &[include_str!("../locales/de/portal.ftl")],
];

/// The bundles, parsed once.
fn catalog() -> &'static [FluentBundle<FluentResource>] {
    static CATALOG: OnceLock<Vec<FluentBundle<FluentResource>>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        Lang::ALL
            .into_iter()
            .zip(FILES)
            .map(|(lang, files)| {
                let id: unic_langid::LanguageIdentifier =
                    lang.tag().parse().expect("a language tag");
                let mut bundle = FluentBundle::new_concurrent(vec![id]);
                // Text goes into HTML and plain-text mail, not into mixed-direction UI:
                // no isolation marks around arguments.
                bundle.set_use_isolating(false);
                for text in files {
                    let resource = FluentResource::try_new((*text).to_owned())
                        .unwrap_or_else(|(resource, _)| resource);
                    let _ = bundle.add_resource(resource);
                }
                bundle
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file parses, and every language has every English message (German is complete).
    #[test]
    fn every_language_parses_and_has_every_message() {
        for (lang, files) in Lang::ALL.into_iter().zip(FILES) {
            for text in files {
                if let Err((_, errors)) = FluentResource::try_new((*text).to_owned()) {
                    panic!("{lang:?}: {errors:?}");
                }
            }
        }
        let ids = |text: &str| -> Vec<String> {
            text.lines()
                .filter_map(|l| l.split_once(" ="))
                .map(|(id, _)| id.trim().to_owned())
                .filter(|id| !id.is_empty() && !id.starts_with('#') && !id.contains(' '))
                .collect()
        };
        let english = ids(FILES[0][0]);
        assert!(english.len() > 50);
        for lang in Lang::ALL.into_iter().skip(1) {
            let theirs = ids(FILES[lang as usize][0]);
            let missing: Vec<&String> = english.iter().filter(|id| !theirs.contains(id)).collect();
            assert!(missing.is_empty(), "{lang:?} lacks {missing:?}");
        }
    }

    #[test]
    fn a_language_is_chosen_by_cookie_then_accept_language() {
        assert_eq!(Lang::choose(None, None), Lang::En);
        assert_eq!(
            Lang::choose(None, Some("de-DE,de;q=0.9,en;q=0.8")),
            Lang::De
        );
        assert_eq!(Lang::choose(None, Some("fr, de;q=0.5, en;q=0.7")), Lang::En);
        assert_eq!(Lang::choose(None, Some("fr, de;q=0.5")), Lang::De);
        assert_eq!(Lang::choose(Some("en"), Some("de")), Lang::En);
        assert_eq!(Lang::choose(Some("xx"), Some("de")), Lang::De);
    }

    #[test]
    fn messages_take_arguments_plurals_and_dates() {
        let at = Timestamp::parse("2026-11-30T10:00:00Z").unwrap();
        assert_eq!(Lang::En.date(at), "November 30, 2026");
        assert_eq!(Lang::De.date(at), "30. November 2026");
        assert_eq!(
            Lang::De.t_with("code-wrong", &[("left", Arg::Number(1))]),
            "Dieser Code stimmt nicht: noch ein Versuch."
        );
        assert_eq!(
            Lang::En.t_with("code-wrong", &[("left", Arg::Number(3))]),
            "That code is not right: 3 more tries."
        );
        assert_eq!(Lang::De.t("sign-out"), "Abmelden");
    }
}

//! The dashboard's words: every text a page shows comes from the message catalog
//! (`locales/{lang}/dashboard.ftl`), in the language of the request being answered.
//!
//! The dashboard is English today. Translating it is adding `locales/{lang}/dashboard.ftl`
//! to the catalog's files: a browser asking for that language (`Accept-Language`) then gets
//! the dashboard in it, and any message the translation lacks in English.

use std::future::Future;

use maud::{Markup, PreEscaped};

use crate::i18n::{Arg, Lang};

tokio::task_local! {
    /// The language of the request being answered.
    static LANG: Lang;
}

/// The message every dashboard catalog has (a language whose files lack it has no dashboard).
const MARKER: &str = "dashboard-language";

/// The language for a dashboard request: the first of `Accept-Language` whose catalog has the
/// dashboard, else English.
pub(crate) fn choose(accept_language: Option<&str>) -> Lang {
    Lang::choose_among(None, accept_language, |lang| lang.has(MARKER))
}

/// Runs `page` (the rendering of one request) speaking `lang`.
pub(crate) async fn speaking<F: Future>(lang: Lang, page: F) -> F::Output {
    LANG.scope(lang, page).await
}

/// The language being spoken (English outside a request).
pub(crate) fn lang() -> Lang {
    LANG.try_with(|lang| *lang).unwrap_or(Lang::En)
}

/// Message `id` (a message without arguments).
pub(crate) fn t(id: &str) -> &'static str {
    lang().text(id)
}

/// Message `id` with text or number arguments.
pub(crate) fn tw(id: &str, args: &[(&str, Arg<'_>)]) -> String {
    lang().t_with(id, args)
}

/// Message `id` with each `{ $name }` filled by markup (a name, a link, a date): the message's
/// own text escaped, the markup kept as it is.
pub(crate) fn tm(id: &str, args: &[(&str, Markup)]) -> Markup {
    tm_counted(id, None, args)
}

/// [`tm`] with a number `count` (named `count`) that chooses the message's plural form.
pub(crate) fn tm_counted(id: &str, count: Option<i64>, args: &[(&str, Markup)]) -> Markup {
    // Each argument goes in as a marker no message contains, which the escaped text then trades
    // for the argument's markup.
    let markers: Vec<String> = (0..args.len())
        .map(|i| format!("\u{E000}{i}\u{E001}"))
        .collect();
    let mut fluent: Vec<(&str, Arg<'_>)> = args
        .iter()
        .zip(&markers)
        .map(|((name, _), marker)| (*name, Arg::Text(marker)))
        .collect();
    if let Some(count) = count {
        fluent.push(("count", Arg::Number(count)));
    }
    let text = lang().t_with(id, &fluent);
    let mut html = maud::html! { (text) }.into_string();
    for ((_, markup), marker) in args.iter().zip(&markers) {
        html = html.replace(marker.as_str(), &markup.0);
    }
    PreEscaped(html)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_keep_their_markup_and_the_text_is_escaped() {
        let shown = tm(
            "api-keys-new-key-name",
            &[("name", maud::html! { b { "<billing>" } })],
        );
        assert_eq!(shown.0, "New key “<b>&lt;billing&gt;</b>”");
    }

    /// Every message a dashboard source names is in the English catalog, and every message of
    /// the catalog is named by a source (no page shows an id, no text is left over).
    #[test]
    fn the_catalog_and_the_pages_name_the_same_messages() {
        let catalog = include_str!("../../locales/en/dashboard.ftl");
        let ids: Vec<&str> = catalog
            .lines()
            .filter_map(|line| line.split_once(" = ").map(|(id, _)| id))
            .filter(|id| !id.starts_with(['#', ' ']))
            .collect();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/dashboard");
        let mut sources = String::new();
        let mut pending = vec![dir];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(dir).expect("the dashboard's sources") {
                let path = entry.expect("an entry").path();
                if path.is_dir() {
                    pending.push(path);
                } else if path.extension().is_some_and(|e| e == "rs" || e == "js")
                    && !path.ends_with("words.rs")
                {
                    sources.push_str(&std::fs::read_to_string(&path).expect("a source"));
                }
            }
        }
        let named = |call: &str| -> Vec<String> {
            sources
                .match_indices(call)
                .filter(|(at, _)| {
                    !sources[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
                })
                .filter_map(|(at, _)| {
                    let rest = &sources[at + call.len()..];
                    let end = rest.find('"')?;
                    Some(rest[..end].to_owned())
                })
                .collect()
        };
        for call in ["t(\"", "tw(\"", "tm(\"", "tm_counted(\"", "\"count-"] {
            for id in named(call) {
                let id = if call == "\"count-" {
                    format!("count-{id}")
                } else {
                    id
                };
                assert!(
                    Lang::En.has(&id),
                    "{id} is named by a page but not in the catalog"
                );
            }
        }
        for id in ids {
            assert!(
                id == MARKER || sources.contains(&format!("\"{id}\"")),
                "{id} is in the catalog but no page names it"
            );
        }
    }

    #[test]
    fn counts_choose_the_singular_or_the_plural() {
        assert_eq!(super::super::page::counted(1u64, "count-days"), "1 day");
        assert_eq!(super::super::page::counted(30u64, "count-days"), "30 days");
        let name = [
            ("name", maud::html! { "App" }),
            ("version", maud::html! { "1.2.0" }),
        ];
        let what = |n| tm_counted("releases-delete-what", Some(n), &name).0;
        assert_eq!(
            what(0),
            "App 1.2.0 and its file will be deleted; clients can no longer download them."
        );
        assert!(what(1).contains("and its file and its update artifact will"));
        assert!(what(3).contains("and its 3 update artifacts will"));
    }

    #[test]
    fn english_has_the_dashboard_and_a_language_without_it_falls_back() {
        assert_eq!(choose(Some("de-DE, de;q=0.9")), Lang::En);
        assert_eq!(choose(None), Lang::En);
    }
}

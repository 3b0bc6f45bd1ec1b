//! The main class of a JAR: `Main-Class` of `META-INF/MANIFEST.MF`, else the `main:` entry of a
//! `plugin.yml` (server plugins).

use std::io::Read;
use std::path::Path;

/// Largest manifest or plugin descriptor read, so a crafted archive cannot make us inflate much.
const MAX_ENTRY: u64 = 256 * 1024;

/// Reads the main class of the JAR at `path`; `None` when it is not a readable archive or names
/// no main class.
pub(crate) fn main_class(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file)).ok()?;
    if let Some(text) = read_entry(&mut archive, "META-INF/MANIFEST.MF")
        && let Some(class) = manifest_main_class(&text)
    {
        return Some(class);
    }
    read_entry(&mut archive, "plugin.yml").and_then(|text| plugin_main(&text))
}

/// Longest main class name accepted, in characters.
pub(crate) const MAX_MAIN_CLASS: usize = 255;

/// Whether `name` is a Java binary class name as a manifest may hold it: 1 to 255 letters,
/// digits, `_`, `$` and `.` (no spaces, no control characters). Anything else is refused at
/// upload and never sent back in `X-Main-Class`.
pub(crate) fn is_valid_main_class(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_MAIN_CLASS
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '$' | '.'))
}

fn read_entry<R: std::io::Read + std::io::Seek>(
    archive: &mut zip::ZipArchive<R>,
    name: &str,
) -> Option<String> {
    let entry = archive.by_name(name).ok()?;
    let mut text = String::new();
    entry.take(MAX_ENTRY).read_to_string(&mut text).ok()?;
    Some(text)
}

/// `Main-Class` of a manifest, with continuation lines (a line starting with one space continues
/// the previous one).
fn manifest_main_class(text: &str) -> Option<String> {
    let mut logical: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        match (line.strip_prefix(' '), logical.last_mut()) {
            (Some(rest), Some(last)) => last.push_str(rest),
            _ => logical.push(line.to_owned()),
        }
    }
    logical.iter().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        (name.trim().eq_ignore_ascii_case("Main-Class"))
            .then(|| value.trim().to_owned())
            .filter(|v| !v.is_empty())
    })
}

/// The top-level `main:` entry of a `plugin.yml`.
fn plugin_main(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix("main:")?;
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
        (!value.is_empty()).then(|| value.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn jar(entries: &[(&str, &str)]) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        let mut zip = zip::ZipWriter::new(file.reopen().unwrap());
        for (name, content) in entries {
            zip.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(content.as_bytes()).unwrap();
        }
        zip.finish().unwrap();
        file
    }

    #[test]
    fn manifest_main_class_with_continuations() {
        let text = "Manifest-Version: 1.0\r\nMain-Class: com.example.very.long.package.na\r\n me.App\r\nCreated-By: x\r\n";
        assert_eq!(
            manifest_main_class(text).as_deref(),
            Some("com.example.very.long.package.name.App")
        );
        assert_eq!(manifest_main_class("Manifest-Version: 1.0\n"), None);
    }

    #[test]
    fn main_class_names_are_java_names_of_at_most_255_characters() {
        for good in [
            "com.example.Main",
            "a",
            "Ünïcode.Kläss",
            "Outer$Inner",
            "_x.y9",
        ] {
            assert!(is_valid_main_class(good), "{good}");
        }
        let long = "a".repeat(256);
        for bad in [
            "",
            "com.example.Main\u{7}",
            "a b",
            "x\ty",
            "evil\r\nX-Other: 1",
            "a/b",
            &long,
        ] {
            assert!(!is_valid_main_class(bad), "{bad:?}");
        }
        assert!(is_valid_main_class(&"a".repeat(255)));
    }

    #[test]
    fn reads_jars_and_falls_back_to_plugin_yml() {
        let j = jar(&[(
            "META-INF/MANIFEST.MF",
            "Manifest-Version: 1.0\nMain-Class: com.example.Main\n",
        )]);
        assert_eq!(main_class(j.path()).as_deref(), Some("com.example.Main"));
        let p = jar(&[
            ("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n"),
            ("plugin.yml", "name: X\nmain: 'org.example.Plugin'\n"),
        ]);
        assert_eq!(main_class(p.path()).as_deref(), Some("org.example.Plugin"));
        let none = jar(&[("README", "hi")]);
        assert_eq!(main_class(none.path()), None);
        let not_zip = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(not_zip.path(), b"not a zip").unwrap();
        assert_eq!(main_class(not_zip.path()), None);
    }
}

//! The config file (`--config FILE`, or `LICENSING_CONFIG`): TOML, one key per setting, named as
//! its flag without the `--` (`listen = "0.0.0.0:3000"`, `data-dir = "/var/lib/…"`). A setting
//! comes from its flag, else its environment variable, else the file, else its default: the file's
//! values are handed to the same parser as flags (so they are checked the same way), for the
//! settings that neither a flag nor the environment gave. A key that is no setting is an error
//! naming it.

use std::path::Path;

use clap::parser::ValueSource;

/// The flags (`--key=value`) that the file at `path` adds to a command line whose matches are
/// `given`, for `command`'s settings.
pub fn file_args(
    path: &Path,
    command: &clap::Command,
    given: &clap::ArgMatches,
) -> Result<Vec<String>, String> {
    let shown = path.display();
    let table = read_table(path)?;
    let mut out = Vec::with_capacity(table.len());
    for (key, value) in &table {
        let arg = command
            .get_arguments()
            .find(|a| a.get_long() == Some(key.as_str()) && key != "config")
            .ok_or_else(|| {
                format!(
                    "config file {shown}: unknown key `{key}` (the keys are the settings' flags without `--`, as `licensing-server --help` lists them)"
                )
            })?;
        if matches!(
            given.value_source(arg.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        let text = match value {
            toml::Value::Array(items) => items
                .iter()
                .map(|item| scalar(item).ok_or(()))
                .collect::<Result<Vec<_>, ()>>()
                .map(|items| items.join(",")),
            other => scalar(other).ok_or(()),
        }
        .map_err(|()| {
            format!(
                "config file {shown}: `{key}` must be a string, a number, true or false, or a list of those"
            )
        })?;
        out.push(format!("--{key}={text}"));
    }
    Ok(out)
}

/// The flags (`--key=value`) that the server's config file at `path` adds to a command that works
/// on the server's store (`user link --config FILE`): its settings among `keys` (the store's:
/// `data-dir`, `database-url`) that `command` has and that neither a flag nor the environment
/// gave. The file's other settings are the server's, and are passed over.
pub fn store_args(
    path: &Path,
    command: &clap::Command,
    given: &clap::ArgMatches,
    keys: &[&str],
) -> Result<Vec<String>, String> {
    let shown = path.display();
    let table = read_table(path)?;
    let mut out = Vec::new();
    for key in keys {
        let (Some(value), Some(arg)) = (
            table.get(*key),
            command.get_arguments().find(|a| a.get_long() == Some(*key)),
        ) else {
            continue;
        };
        if matches!(
            given.value_source(arg.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        let text = scalar(value)
            .ok_or_else(|| format!("config file {shown}: `{key}` must be a string"))?;
        out.push(format!("--{key}={text}"));
    }
    Ok(out)
}

/// The flags (`--key=value`) that secrets kept in files add to a command line whose matches
/// are `given`, for `command`'s settings: each secret setting (its value hidden from `--help`,
/// read from `LICENSING_X`) that neither a flag nor `LICENSING_X` gave takes the contents of
/// the file `LICENSING_X_FILE` names, without its final line break (Docker and Kubernetes
/// secrets are files). `env` reads the environment.
pub fn secret_file_args(
    command: &clap::Command,
    given: &clap::ArgMatches,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for arg in command.get_arguments() {
        let (Some(var), Some(long)) = (arg.get_env(), arg.get_long()) else {
            continue;
        };
        if !arg.is_hide_env_values_set() {
            continue;
        }
        let file_var = format!("{}_FILE", var.to_string_lossy());
        let Some(path) = env(&file_var) else {
            continue;
        };
        if matches!(
            given.value_source(arg.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        let shown = Path::new(&path).display().to_string();
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{file_var} names {shown}, which cannot be read: {e}"))?;
        let value = text
            .strip_suffix("\r\n")
            .or_else(|| text.strip_suffix('\n'))
            .unwrap_or(&text);
        if value.is_empty() {
            return Err(format!("{file_var} names {shown}, which is empty"));
        }
        out.push(format!("--{long}={value}"));
    }
    Ok(out)
}

/// The settings of the config file at `path`, or what is wrong with it.
fn read_table(path: &Path) -> Result<toml::Table, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("config file {shown}: {e}"))?;
    text.parse()
        .map_err(|e| format!("config file {shown}: {e}"))
}

fn scalar(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use clap::{Args, Command, FromArgMatches};

    use super::*;
    use crate::Config;

    fn command() -> Command {
        Config::augment_args(Command::new("licensing-server"))
    }

    /// Parses `args` with the flags `added` makes of what they give, as the server does.
    fn parse_adding(
        args: &[&str],
        added: impl FnOnce(&clap::ArgMatches) -> Result<Vec<String>, String>,
    ) -> Result<Config, String> {
        let mut argv: Vec<String> = std::iter::once("licensing-server")
            .chain(args.iter().copied())
            .map(str::to_owned)
            .collect();
        let given = command()
            .try_get_matches_from(&argv)
            .map_err(|e| e.to_string())?;
        argv.extend(added(&given)?);
        let matches = command()
            .try_get_matches_from(&argv)
            .map_err(|e| e.to_string())?;
        Config::from_arg_matches(&matches).map_err(|e| e.to_string())
    }

    /// Parses `args` with the file's values as the server would.
    fn parse(file: &str, args: &[&str]) -> Result<Config, String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("server.toml");
        std::fs::write(&path, file).expect("write");
        parse_adding(args, |given| file_args(&path, &command(), given))
    }

    #[test]
    fn the_file_fills_what_flags_leave_at_their_defaults() {
        let config = parse(
            "listen = \"127.0.0.1:4000\"\n\
             data-dir = \"/srv/licensing\"\n\
             max-upload-mb = 20\n\
             webhook-allow-http = true\n\
             trusted-proxies = [\"10.0.0.0/8\", \"192.168.1.1\"]\n",
            &["--max-upload-mb", "30"],
        )
        .expect("parses");
        assert_eq!(config.listen.to_string(), "127.0.0.1:4000");
        assert_eq!(config.data_dir, Path::new("/srv/licensing"));
        assert_eq!(config.max_upload_mb, 30, "a flag wins over the file");
        assert!(config.webhook_allow_http);
        assert_eq!(config.trusted_proxies.len(), 2);
    }

    /// A secret in a file: read when neither its flag nor its variable gives it, its final line
    /// break dropped; a missing or empty file is refused by name; other settings have no
    /// `_FILE` form.
    #[test]
    fn secrets_are_read_from_the_files_their_file_variables_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let token = dir.path().join("admin-token");
        std::fs::write(&token, "s3cret-token\n").expect("write");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "").expect("write");
        let parse = |args: &[&str], vars: &[(&str, &std::path::Path)]| {
            let env = |name: &str| {
                vars.iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, p)| p.as_os_str().to_owned())
            };
            parse_adding(args, |given| secret_file_args(&command(), given, env))
        };
        let from_file = parse(&[], &[("LICENSING_ADMIN_TOKEN_FILE", &token)]).expect("parses");
        assert_eq!(from_file.admin_token.as_deref(), Some("s3cret-token"));
        let flag = parse(
            &["--admin-token", "from-flag"],
            &[("LICENSING_ADMIN_TOKEN_FILE", &token)],
        )
        .expect("parses");
        assert_eq!(
            flag.admin_token.as_deref(),
            Some("from-flag"),
            "a flag wins"
        );
        let missing = parse(
            &[],
            &[("LICENSING_DATABASE_URL_FILE", &dir.path().join("nothing"))],
        )
        .expect_err("no such file");
        assert!(missing.contains("LICENSING_DATABASE_URL_FILE"), "{missing}");
        let blank = parse(&[], &[("LICENSING_SMTP_URL_FILE", &empty)]).expect_err("empty");
        assert!(blank.contains("empty"), "{blank}");
        let not_secret = parse(&[], &[("LICENSING_LISTEN_FILE", &token)]).expect("parses");
        assert_eq!(not_secret.listen.to_string(), "127.0.0.1:3000");
    }

    /// The README's table of settings names every setting.
    #[test]
    fn every_setting_is_in_the_readme() {
        let readme = include_str!("../../README.md");
        for arg in command().get_arguments() {
            if let Some(long) = arg.get_long().filter(|l| *l != "help") {
                assert!(
                    readme.contains(&format!("| `--{long}` |")),
                    "README's configuration table lacks --{long}"
                );
            }
        }
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused_by_name() {
        let unknown = parse("listen-on = \"127.0.0.1:1\"\n", &[]).expect_err("unknown");
        assert!(unknown.contains("unknown key `listen-on`"), "{unknown}");
        let itself = parse("config = \"other.toml\"\n", &[]).expect_err("no nesting");
        assert!(itself.contains("unknown key `config`"), "{itself}");
        let table = parse("listen = { host = \"x\" }\n", &[]).expect_err("a table");
        assert!(table.contains("`listen` must be"), "{table}");
        let bad = parse("max-upload-mb = 0\n", &[]).expect_err("out of range");
        assert!(bad.contains("--max-upload-mb"), "{bad}");
        let syntax = parse("listen = \n", &[]).expect_err("not TOML");
        assert!(syntax.contains("config file"), "{syntax}");
    }
}

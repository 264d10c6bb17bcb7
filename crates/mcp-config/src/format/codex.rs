//! Codex's `config.toml`: the `[mcp_servers.NAME]` tables of `~/.codex/config.toml` and of a project's `.codex/config.toml`.
//!
//! A table with `command` is a stdio server (`args`, `env`, `env_vars`,
//! `cwd`); one with `url` is a Streamable HTTP server
//! (`bearer_token_env_var`, `http_headers`, `env_http_headers`, `scopes`).
//! Both take `enabled`, `startup_timeout_sec` (seconds, fractions allowed)
//! or `startup_timeout_ms` (the connect deadline; seconds win when both
//! are given, as in Codex), `tool_timeout_sec` (the tool-call deadline)
//! and `enabled_tools` / `disabled_tools` (which tools reach the host).
//!
//! Codex passes its strings as written, so a `${` in them is kept literal.
//! Everything outside `mcp_servers` (model, profiles, ...) is Codex's own
//! and read quietly past; a key inside a server table that has no meaning
//! here is reported once, as `ignored_field`.

use crate::diagnostic::{Code, Diagnostic};
use crate::json::{FieldReader, Json, join_index, join_key};
use crate::model::{
    EnvHeader, HttpConfig, OAuthConfig, SecretEntry, ServerConfig, StdioConfig, ToolFilter,
    TransportConfig,
};

use super::tree::{self, Unreadable};
use super::{DocumentError, EntryError, Format, ParsedDocument, ParsedEntry};

/// The table holding the servers.
const SERVERS_KEY: &str = "mcp_servers";

/// Keys read from every server table.
const COMMON_KEYS: [&str; 7] = [
    "enabled",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
    "bearer_token",
];

/// Keys of a stdio server, with the store field each becomes (for
/// `wrong_transport_field` when an HTTP server sets one).
const STDIO_KEYS: [(&str, &str); 5] = [
    ("command", "transport.command"),
    ("args", "transport.args"),
    ("env", "transport.env"),
    ("env_vars", "transport.envVars"),
    ("cwd", "transport.cwd"),
];

/// Keys of a Streamable HTTP server, as [`STDIO_KEYS`].
const HTTP_KEYS: [(&str, &str); 5] = [
    ("url", "transport.url"),
    ("bearer_token_env_var", "transport.bearerTokenEnv"),
    ("http_headers", "transport.headers"),
    ("env_http_headers", "transport.envHeaders"),
    ("scopes", "transport.oauth"),
];

/// Codex settings with no counterpart here, and what each would have done.
const UNSUPPORTED_KEYS: [(&str, &str); 5] = [
    (
        "required",
        "(stop when the server cannot start) has no equivalent here",
    ),
    (
        "oauth_resource",
        "(the resource named at OAuth login) is not supported",
    ),
    (
        "default_tools_approval_mode",
        "(approval of tool calls) is not supported",
    ),
    ("tools", "(per-tool approval) is not supported"),
    (
        "experimental_environment",
        "(a remote executor) is not supported; the server runs on this machine",
    ),
];

/// Reads a Codex `config.toml`.
pub(super) fn read(text: &str) -> Result<ParsedDocument, DocumentError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut table: toml::Table = text.parse().map_err(|error: toml::de::Error| {
        let (line, column) = tree::line_column(text, error.span().map_or(0, |span| span.start));
        DocumentError::Syntax {
            language: "TOML",
            line,
            column,
            message: tree::parser_message(error.message()),
        }
    })?;
    let mut doc = ParsedDocument::empty(Some(Format::Codex));
    let Some(servers) = table.remove(SERVERS_KEY) else {
        return Ok(doc);
    };
    let mut notes = Vec::new();
    let servers = from_toml(servers, SERVERS_KEY, &mut notes);
    let Json::Object(servers) = servers else {
        let message = tree::unreadable_at(&notes, SERVERS_KEY)
            .map(str::to_owned)
            .unwrap_or_else(|| {
                format!(
                    "`{SERVERS_KEY}` must be a table of servers (`[{SERVERS_KEY}.NAME]`), not {}",
                    tree::type_name(&servers, "a table")
                )
            });
        return Err(DocumentError::Shape {
            path: SERVERS_KEY.to_owned(),
            message,
        });
    };
    for (name, value) in &servers {
        let path = join_key(SERVERS_KEY, name);
        let entry = read_entry(name, value, &path, &notes, &mut doc.warnings);
        doc.entries.push(entry);
    }
    Ok(doc)
}

/// Converts a TOML value into the tree, noting what JSON cannot hold.
fn from_toml(value: toml::Value, path: &str, notes: &mut Vec<Unreadable>) -> Json {
    let mut unreadable = |message: &'static str| {
        notes.push(Unreadable {
            path: path.to_owned(),
            message,
        });
        Json::Null
    };
    match value {
        toml::Value::String(text) => Json::String(text),
        toml::Value::Integer(n) => Json::Number(n.into()),
        toml::Value::Float(x) => match serde_json::Number::from_f64(x) {
            Some(n) => Json::Number(n),
            None => unreadable("`inf` and `nan` are not values any server setting takes"),
        },
        toml::Value::Boolean(b) => Json::Bool(b),
        toml::Value::Datetime(_) => unreadable(
            "a TOML date or time is not a value any server setting takes; quote it if it is text",
        ),
        toml::Value::Array(items) => Json::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(index, item)| from_toml(item, &join_index(path, index), notes))
                .collect(),
        ),
        toml::Value::Table(members) => Json::Object(
            members
                .into_iter()
                .map(|(key, item)| {
                    let item = from_toml(item, &join_key(path, &key), notes);
                    (key, item)
                })
                .collect(),
        ),
    }
}

fn read_entry(
    name: &str,
    value: &Json,
    path: &str,
    notes: &[Unreadable],
    warnings: &mut Vec<Diagnostic>,
) -> ParsedEntry {
    let server = Some(name.to_owned());
    let Some(members) = value.as_object() else {
        let message = tree::unreadable_at(notes, path)
            .map(str::to_owned)
            .unwrap_or_else(|| {
                format!(
                    "a server must be a table (`[{SERVERS_KEY}.{name}]`), not {}",
                    tree::type_name(value, "a table")
                )
            });
        return Err(EntryError::new(
            server.clone(),
            vec![Diagnostic::new(Code::InvalidField, server, path, message)],
        ));
    };
    let mut r = FieldReader::new(members, path, server.clone());
    tree::report_unreadable(&mut r, notes);
    if r.has("bearer_token") {
        let field = r.field_path("bearer_token");
        r.problem(
            Code::InvalidField,
            field,
            "Codex no longer reads a token written in the file (`bearer_token`); put it in an \
             environment variable and name the variable in `bearer_token_env_var`",
        );
    }
    let enabled = r.bool("enabled").unwrap_or(true);
    let timeout_ms = match seconds(&mut r, "startup_timeout_sec") {
        Some(ms) => {
            if r.has("startup_timeout_ms") {
                warnings.push(ignored(
                    &r,
                    "startup_timeout_ms",
                    "gives way to `startup_timeout_sec`, as in Codex",
                ));
            }
            Some(ms)
        }
        None => r.millis("startup_timeout_ms"),
    };
    let call_timeout_ms = seconds(&mut r, "tool_timeout_sec");
    let mut tools = ToolFilter::default();
    if !matches!(r.raw("enabled_tools"), None | Some(Json::Null)) {
        tools.include = Some(r.string_array("enabled_tools"));
    }
    tools.exclude = r.string_array("disabled_tools");

    let stdio = r.has("command");
    let transport = if stdio {
        let mut config = StdioConfig::new(tree::literal(r.string("command").unwrap_or_default()));
        config.args = r
            .string_array("args")
            .into_iter()
            .map(tree::literal)
            .collect();
        config.env = r
            .string_map("env")
            .into_iter()
            .map(|(key, value)| SecretEntry::new(key, tree::literal(value)))
            .collect();
        config.env_passthrough = env_vars(&mut r, warnings);
        config.cwd = r.string("cwd").filter(|cwd| !cwd.is_empty());
        Some(TransportConfig::Stdio(config))
    } else if r.has("url") {
        let mut config = HttpConfig::new(tree::literal(r.string("url").unwrap_or_default()));
        config.bearer_token_env = r.string("bearer_token_env_var").filter(|v| !v.is_empty());
        config.headers = r
            .string_map("http_headers")
            .into_iter()
            .map(|(key, value)| SecretEntry::new(key, tree::literal(value)))
            .collect();
        config.env_headers = r
            .string_map("env_http_headers")
            .into_iter()
            .map(|(header, var)| EnvHeader::new(header, var))
            .collect();
        let scopes = r.string_array("scopes");
        if !scopes.is_empty() {
            let mut oauth = OAuthConfig::new();
            oauth.scopes = scopes;
            config.oauth = Some(oauth);
        }
        Some(TransportConfig::Http(config))
    } else {
        let field = r.path().to_owned();
        r.problem(
            Code::MissingTransport,
            field,
            "set `command` for a stdio server or `url` for a Streamable HTTP server",
        );
        None
    };
    let (own, foreign) = if stdio {
        (&STDIO_KEYS, &HTTP_KEYS)
    } else {
        (&HTTP_KEYS, &STDIO_KEYS)
    };
    let mut misplaced_fields = Vec::new();
    for (key, _) in members {
        let key = key.as_str();
        if COMMON_KEYS.contains(&key) || own.iter().any(|(k, _)| *k == key) {
            continue;
        }
        if let Some((_, field)) = foreign.iter().find(|(k, _)| *k == key) {
            // OAuth scopes mean nothing to a stdio server, but Codex
            // accepts them there: not worth refusing the server for.
            if key == "scopes" {
                warnings.push(ignored(&r, key, "applies to HTTP servers only"));
            } else if transport.is_some() {
                misplaced_fields.push((*field).to_owned());
            }
            continue;
        }
        let reason = UNSUPPORTED_KEYS
            .iter()
            .find(|(k, _)| *k == key)
            .map_or("is not a Codex server setting", |(_, reason)| *reason);
        warnings.push(ignored(&r, key, reason));
    }
    tree::drop_stand_in_problems(&mut r, notes);
    match transport {
        Some(transport) if r.problems.is_empty() => {
            let mut config = ServerConfig::new(name, transport);
            config.enabled = enabled;
            config.timeout_ms = timeout_ms;
            config.call_timeout_ms = call_timeout_ms;
            config.tools = tools;
            config.misplaced_fields = misplaced_fields;
            Ok(config)
        }
        _ => Err(EntryError::new(server, r.problems)),
    }
}

/// An `ignored_field` warning for `key` of the reader's server.
fn ignored(r: &FieldReader<'_>, key: &str, reason: &str) -> Diagnostic {
    Diagnostic::new(
        Code::IgnoredField,
        r.server(),
        r.field_path(key),
        format!("`{key}` {reason}; it was ignored"),
    )
}

/// An optional number of seconds (fractions allowed), in milliseconds
/// rounded up, so a deadline is never shortened to zero.
fn seconds(r: &mut FieldReader<'_>, key: &str) -> Option<u64> {
    let value = r.raw(key)?;
    let millis = match value {
        Json::Null => return None,
        Json::Number(n) => n.as_f64().and_then(|secs| {
            let duration = std::time::Duration::try_from_secs_f64(secs).ok()?;
            u64::try_from(duration.as_nanos().div_ceil(1_000_000)).ok()
        }),
        _ => None,
    };
    if millis.is_none() {
        let field = r.field_path(key);
        let message = match value {
            Json::Number(_) => format!("`{key}` must be a number of seconds, zero or more"),
            other => format!(
                "`{key}` must be a number of seconds, not {}",
                tree::type_name(other, "a table")
            ),
        };
        r.problem(Code::InvalidField, field, message);
    }
    millis
}

/// `env_vars`: names of variables passed through, each a string or a
/// `{ name, source }` table. `source = "local"` (the default) is this
/// machine's environment; `source = "remote"` names a remote executor's,
/// which is not available here, so that entry is skipped with a warning.
fn env_vars(r: &mut FieldReader<'_>, warnings: &mut Vec<Diagnostic>) -> Vec<String> {
    let items = match r.raw("env_vars") {
        None | Some(Json::Null) => return Vec::new(),
        Some(Json::Array(items)) => items,
        Some(other) => {
            let field = r.field_path("env_vars");
            let message = format!(
                "`env_vars` must be an array of variable names, not {}",
                tree::type_name(other, "a table")
            );
            r.problem(Code::InvalidField, field, message);
            return Vec::new();
        }
    };
    let base = r.field_path("env_vars");
    let mut names = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let path = join_index(&base, index);
        match item {
            Json::String(name) => names.push(name.clone()),
            Json::Object(members) => {
                let mut entry = FieldReader::new(members, path.clone(), r.server());
                let name = entry.required_string("name");
                let source = entry.string("source");
                let mut problems = std::mem::take(&mut entry.problems);
                match source.as_deref() {
                    None | Some("local") => names.extend(name),
                    Some("remote") => warnings.push(Diagnostic::new(
                        Code::IgnoredField,
                        r.server(),
                        path,
                        "a variable read from a remote executor (`source = \"remote\"`) is not \
                         available here; it was ignored",
                    )),
                    Some(_) => problems.push(Diagnostic::new(
                        Code::InvalidField,
                        r.server(),
                        join_key(&path, "source"),
                        "`source` must be `local` or `remote`",
                    )),
                }
                r.problems.append(&mut problems);
            }
            other => {
                let message = format!(
                    "every entry of `env_vars` must be a variable name or a `{{ name, source }}` \
                     table, not {}",
                    tree::type_name(other, "a table")
                );
                r.problem(Code::InvalidField, path, message);
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TransportKind;

    fn parse(text: &str) -> ParsedDocument {
        read(text).unwrap_or_else(|error| panic!("{error}"))
    }

    fn only(doc: &ParsedDocument) -> &ServerConfig {
        assert_eq!(doc.entries.len(), 1, "{:?}", doc.entries);
        doc.entries[0].as_ref().unwrap_or_else(|e| panic!("{e}"))
    }

    fn failure(doc: &ParsedDocument) -> &EntryError {
        doc.entries[0].as_ref().expect_err("the entry should fail")
    }

    fn warning_fields(doc: &ParsedDocument) -> Vec<(&str, &str)> {
        doc.warnings
            .iter()
            .map(|w| (w.code(), w.field.as_str()))
            .collect()
    }

    #[test]
    fn a_command_is_a_stdio_server_with_its_environment() {
        let doc = parse(
            r#"
            [mcp_servers.fs]
            command = "npx"
            args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
            env_vars = ["HOME", { name = "TOKEN" }, { name = "LOCAL", source = "local" }]
            cwd = "/srv"
            [mcp_servers.fs.env]
            LOG = "debug"
            "#,
        );
        let server = only(&doc);
        assert_eq!((server.id.as_str(), server.name.as_str()), ("fs", "fs"));
        let TransportConfig::Stdio(stdio) = &server.transport else {
            panic!("{server:?}")
        };
        assert_eq!(stdio.command, "npx");
        assert_eq!(stdio.args.len(), 3);
        assert_eq!(stdio.env, [SecretEntry::new("LOG", "debug")]);
        assert_eq!(stdio.env_passthrough, ["HOME", "TOKEN", "LOCAL"]);
        assert_eq!(stdio.cwd.as_deref(), Some("/srv"));
        assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    }

    #[test]
    fn a_url_is_a_streamable_http_server_with_its_headers() {
        let doc = parse(
            r#"
            [mcp_servers.figma]
            url = "https://mcp.figma.com/mcp"
            bearer_token_env_var = "FIGMA_TOKEN"
            http_headers = { "X-Region" = "us-east-1" }
            env_http_headers = { "X-Api-Key" = "FIGMA_KEY" }
            scopes = ["files:read"]
            "#,
        );
        let server = only(&doc);
        let TransportConfig::Http(http) = &server.transport else {
            panic!("{server:?}")
        };
        assert_eq!(http.url, "https://mcp.figma.com/mcp");
        assert_eq!(http.bearer_token_env.as_deref(), Some("FIGMA_TOKEN"));
        assert_eq!(http.headers, [SecretEntry::new("X-Region", "us-east-1")]);
        assert_eq!(http.env_headers, [EnvHeader::new("X-Api-Key", "FIGMA_KEY")]);
        assert_eq!(http.oauth.as_ref().unwrap().scopes, ["files:read"]);
    }

    #[test]
    fn enabled_false_keeps_the_server_disabled() {
        let doc = parse("[mcp_servers.a]\ncommand = \"a\"\nenabled = false\n");
        assert!(!only(&doc).enabled);
        let doc = parse("[mcp_servers.a]\ncommand = \"a\"\n");
        assert!(only(&doc).enabled);
        let doc = parse("[mcp_servers.a]\ncommand = \"a\"\nenabled = \"no\"\n");
        assert_eq!(failure(&doc).code(), "invalid_field");
    }

    #[test]
    fn startup_timeouts_become_the_connect_deadline() {
        let timeout = |fields: &str| {
            let doc = parse(&format!("[mcp_servers.a]\ncommand = \"a\"\n{fields}\n"));
            (only(&doc).timeout_ms, warning_fields(&doc).len())
        };
        assert_eq!(timeout("startup_timeout_sec = 20"), (Some(20_000), 0));
        assert_eq!(timeout("startup_timeout_sec = 1.5"), (Some(1_500), 0));
        // Rounded up: a tiny deadline never becomes none at all.
        assert_eq!(timeout("startup_timeout_sec = 0.0001"), (Some(1), 0));
        assert_eq!(timeout("startup_timeout_ms = 2500"), (Some(2_500), 0));
        // Seconds win, as in Codex, and the other is named as ignored.
        assert_eq!(
            timeout("startup_timeout_sec = 3\nstartup_timeout_ms = 9"),
            (Some(3_000), 1)
        );
        assert_eq!(timeout(""), (None, 0));
    }

    #[test]
    fn the_tool_timeout_becomes_the_call_deadline() {
        let doc = parse("[mcp_servers.a]\ncommand = \"a\"\ntool_timeout_sec = 45\n");
        assert_eq!(only(&doc).call_timeout_ms, Some(45_000));
        assert_eq!(only(&doc).timeout_ms, None);
    }

    #[test]
    fn bad_timeouts_are_refused_naming_the_field() {
        for value in ["-1", "1e300", "\"ten\"", "nan", "inf", "[1]"] {
            let doc = parse(&format!(
                "[mcp_servers.a]\ncommand = \"a\"\ntool_timeout_sec = {value}\n"
            ));
            let error = failure(&doc);
            assert_eq!(error.code(), "invalid_field", "{value}: {error}");
            assert_eq!(
                error.diagnostics[0].field, "mcp_servers.a.tool_timeout_sec",
                "{value}"
            );
        }
        let doc = parse("[mcp_servers.a]\ncommand = \"a\"\nstartup_timeout_ms = 1.5\n");
        assert_eq!(failure(&doc).code(), "invalid_field");
    }

    #[test]
    fn tool_lists_become_the_tool_filter() {
        let doc = parse(
            "[mcp_servers.a]\nurl = \"https://e.com/mcp\"\n\
             enabled_tools = [\"open\", \"shot\"]\ndisabled_tools = [\"shot\"]\n",
        );
        let tools = &only(&doc).tools;
        assert!(tools.allows("open"));
        assert!(!tools.allows("shot"));
        assert!(!tools.allows("other"));
        // An empty allow-list allows nothing, as in Codex.
        let doc = parse("[mcp_servers.a]\ncommand = \"a\"\nenabled_tools = []\n");
        assert!(!only(&doc).tools.allows("open"));
        let doc = parse("[mcp_servers.a]\ncommand = \"a\"\n");
        assert!(only(&doc).tools.is_all());
    }

    #[test]
    fn settings_outside_mcp_servers_are_not_ours() {
        let doc = parse(
            r#"
            model = "gpt-5-codex"
            approval_policy = "on-request"
            [profiles.fast]
            model = "o4-mini"
            [plugins."x@y".mcp_servers.z]
            enabled = false
            "#,
        );
        assert!(doc.entries.is_empty());
        assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
        assert_eq!(doc.format, Some(Format::Codex));
        assert!(parse("").entries.is_empty());
    }

    #[test]
    fn unknown_and_unsupported_keys_are_reported_once_each() {
        let doc = parse(
            r#"
            [mcp_servers.a]
            command = "a"
            required = true
            description = "x"
            [mcp_servers.a.tools.open]
            approval_mode = "approve"
            "#,
        );
        assert!(only(&doc).enabled);
        assert_eq!(
            warning_fields(&doc),
            [
                ("ignored_field", "mcp_servers.a.required"),
                ("ignored_field", "mcp_servers.a.description"),
                ("ignored_field", "mcp_servers.a.tools"),
            ]
        );
    }

    #[test]
    fn fields_of_the_other_transport_are_flagged_for_validation() {
        let doc = parse(
            "[mcp_servers.a]\ncommand = \"a\"\nurl = \"https://e.com\"\n\
             http_headers = { A = \"b\" }\nscopes = [\"s\"]\n",
        );
        let server = only(&doc);
        assert_eq!(server.transport.kind(), TransportKind::Stdio);
        assert_eq!(
            server.misplaced_fields,
            ["transport.url", "transport.headers"]
        );
        assert_eq!(
            warning_fields(&doc),
            [("ignored_field", "mcp_servers.a.scopes")]
        );
        let codes: Vec<&str> = crate::validate(server).iter().map(|d| d.code()).collect();
        assert_eq!(codes, ["wrong_transport_field", "wrong_transport_field"]);
        let doc = parse("[mcp_servers.a]\nurl = \"https://e.com\"\nenv = { A = \"b\" }\n");
        assert_eq!(only(&doc).misplaced_fields, ["transport.env"]);
    }

    #[test]
    fn a_server_without_command_or_url_is_missing_its_transport() {
        let doc = parse("[mcp_servers.a]\nenabled = true\n");
        assert_eq!(failure(&doc).code(), "missing_transport");
        assert_eq!(failure(&doc).server.as_deref(), Some("a"));
    }

    #[test]
    fn a_literal_bearer_token_is_refused_without_quoting_it() {
        let doc = parse("[mcp_servers.a]\nurl = \"https://e.com\"\nbearer_token = \"sk-SECRET\"\n");
        let error = failure(&doc);
        assert_eq!(error.code(), "invalid_field");
        assert!(
            error.to_string().contains("bearer_token_env_var"),
            "{error}"
        );
        assert!(!format!("{error} {error:?}").contains("SECRET"));
    }

    #[test]
    fn remote_env_vars_are_skipped_with_a_warning_and_bad_ones_refused() {
        let doc = parse(
            "[mcp_servers.a]\ncommand = \"a\"\n\
             env_vars = [\"A\", { name = \"R\", source = \"remote\" }]\n",
        );
        let TransportConfig::Stdio(stdio) = &only(&doc).transport else {
            panic!()
        };
        assert_eq!(stdio.env_passthrough, ["A"]);
        assert_eq!(
            warning_fields(&doc),
            [("ignored_field", "mcp_servers.a.env_vars[1]")]
        );
        for bad in [
            "[1]",
            "[{ source = \"local\" }]",
            "[{ name = \"A\", source = \"moon\" }]",
            "\"A\"",
        ] {
            let doc = parse(&format!(
                "[mcp_servers.a]\ncommand = \"a\"\nenv_vars = {bad}\n"
            ));
            let error = failure(&doc);
            assert!(
                error.diagnostics[0]
                    .field
                    .starts_with("mcp_servers.a.env_vars"),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn strings_are_literal_as_in_codex() {
        let doc = parse(
            "[mcp_servers.a]\ncommand = \"${X}\"\nargs = [\"${HOME}\"]\nenv = { A = \"${B}\" }\n",
        );
        let TransportConfig::Stdio(stdio) = &only(&doc).transport else {
            panic!()
        };
        let env = std::collections::HashMap::from([("HOME".to_owned(), "/h".to_owned())]);
        assert_eq!(crate::expand(&stdio.command, &env).unwrap(), "${X}");
        assert_eq!(crate::expand(&stdio.args[0], &env).unwrap(), "${HOME}");
    }

    #[test]
    fn dates_fail_their_entry_with_the_field_named() {
        let doc = parse(
            "[mcp_servers.a]\ncommand = \"a\"\nargs = [1979-05-27]\n\
             [mcp_servers.b]\ncommand = \"b\"\n",
        );
        let error = failure(&doc);
        assert_eq!(error.code(), "invalid_field");
        assert_eq!(error.diagnostics[0].field, "mcp_servers.a.args[0]");
        assert!(error.to_string().contains("date"), "{error}");
        assert!(doc.entries[1].is_ok());
        let doc = parse("[mcp_servers]\na = 07:32:00\n");
        assert!(failure(&doc).to_string().contains("date"));
        let error = read("mcp_servers = 1979-05-27\n").unwrap_err();
        assert_eq!(error.code(), "invalid_document");
        assert!(error.to_string().contains("date"), "{error}");
    }

    #[test]
    fn a_document_of_the_wrong_shape_says_so() {
        let error = read("mcp_servers = [\"a\"]\n").unwrap_err();
        assert_eq!(
            (error.code(), error.position().as_str()),
            ("invalid_document", "mcp_servers")
        );
        let doc = parse("[mcp_servers]\na = \"npx\"\n");
        assert_eq!(failure(&doc).code(), "invalid_field");
    }

    #[test]
    fn syntax_errors_have_a_position_and_never_quote_the_input() {
        for (text, line, column) in [
            ("[mcp_servers.a]\ncommand = \"sk-SECRET\n", 2, 21),
            ("a = 1\nb = sk-SECRET\n", 2, 5),
            ("[mcp_servers.a]\nenv = { K = \"sk-SECRET\" \n", 2, 24),
            ("[a]\nx = 1\n[a]\nx = 2\n", 3, 2),
            ("x = 'sk-SECRET", 1, 15),
        ] {
            let error = read(text).unwrap_err();
            let DocumentError::Syntax {
                language,
                line: l,
                column: c,
                ..
            } = &error
            else {
                panic!("{text}: {error:?}")
            };
            assert_eq!(
                (*language, *l, *c),
                ("TOML", line, column),
                "{text}: {error}"
            );
            assert_eq!(error.code(), "parse_error");
            let shown = format!("{error} {error:?}");
            assert!(!shown.contains("SECRET"), "{shown}");
            assert!(shown.contains("not valid TOML"), "{shown}");
        }
    }

    #[test]
    fn hostile_documents_are_refused_or_read_without_harm() {
        // A 10 MB value is read, and no message quotes it.
        let big = "sk-".to_owned() + &"x".repeat(10 << 20);
        let doc = parse(&format!(
            "[mcp_servers.a]\ncommand = \"a\"\nenv = {{ K = \"{big}\" }}\nargs = 5\n"
        ));
        let error = failure(&doc);
        let shown = format!("{error} {error:?}");
        assert!(shown.len() < 1_000, "{}", shown.len());
        assert!(!shown.contains("sk-"));
        // Deep nesting is a syntax error, not a crash.
        for deep in [
            format!("a = {}{}", "[".repeat(100_000), "]".repeat(100_000)),
            format!("a = {}1{}", "{b=".repeat(100_000), "}".repeat(100_000)),
            format!("[{}]", vec!["a"; 100_000].join(".")),
        ] {
            let error = read(&deep).unwrap_err();
            assert_eq!(error.code(), "parse_error", "{error}");
        }
        // Nesting the parser accepts is converted and reported in place.
        let nested = format!(
            "[mcp_servers.a]\ncommand = \"a\"\nargs = {}\"x\"{}\n",
            "[".repeat(50),
            "]".repeat(50)
        );
        let doc = parse(&nested);
        assert_eq!(failure(&doc).diagnostics[0].field, "mcp_servers.a.args[0]");
    }

    #[test]
    fn servers_keep_the_order_of_the_file() {
        let doc =
            parse("[mcp_servers.zeta]\ncommand = \"z\"\n[mcp_servers.alpha]\ncommand = \"a\"\n");
        let ids: Vec<&str> = doc.servers().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["zeta", "alpha"]);
    }
}

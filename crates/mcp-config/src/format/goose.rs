//! goose's `config.yaml`: the `extensions` map of `~/.config/goose/config.yaml`.
//!
//! Each extension is keyed by its id and has `enabled`, `type`, `name` (the
//! display name) and `description`. `type: stdio` runs `cmd` with `args`,
//! literal `envs` and passed-through `env_keys`; `type: sse` reaches `uri`
//! with the legacy HTTP+SSE transport; `type: streamable_http` reaches `uri`
//! with `headers`. `timeout` (seconds) is goose's per-call deadline and
//! `available_tools`, when not empty, lists the only tools offered.
//! `bundled` is goose's own bookkeeping and read quietly past.
//!
//! `type: builtin`, `platform`, `frontend` and `inline_python` are served
//! by goose itself: they cannot be started here, and each is named in a
//! warning. goose passes a command, its arguments and `envs` as written,
//! so a `${` in them is kept literal.
//!
//! The YAML is read event by event into the crate's JSON tree: an alias
//! (`*name`) is never expanded (so a file cannot grow into billions of
//! values), and it, a non-finite number or a key that is not text fails
//! the extension it is in, naming the field.

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};
use yaml_rust2::{Yaml, parser::Tag};

use crate::diagnostic::{Code, Diagnostic};
use crate::json::{FieldReader, Json, join_index, join_key};
use crate::model::{
    HttpConfig, SecretEntry, ServerConfig, StdioConfig, ToolFilter, TransportConfig, TransportKind,
};

use super::tree::{self, Unreadable};
use super::{DocumentError, EntryError, Format, ParsedDocument, ParsedEntry, shorten};

/// The map holding the extensions.
const EXTENSIONS_KEY: &str = "extensions";

/// Extension types goose serves itself.
const IN_PROCESS_TYPES: [&str; 4] = ["builtin", "platform", "frontend", "inline_python"];

/// Keys every extension may have that need no reading beyond what is done.
const QUIET_KEYS: [&str; 4] = ["bundled", "display_name", "enabled", "type"];

/// Reads a goose `config.yaml`.
pub(super) fn read(text: &str) -> Result<ParsedDocument, DocumentError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (root, notes) = parse(text)?;
    let mut doc = ParsedDocument::empty(Some(Format::Goose));
    let members: &[(String, Json)] = match &root {
        Json::Null => return Ok(doc),
        Json::Object(members) => members,
        other => {
            return Err(DocumentError::Shape {
                path: String::new(),
                message: format!(
                    "the document must be a YAML mapping of settings, not {}",
                    tree::type_name(other, "a mapping")
                ),
            });
        }
    };
    let extensions: &[(String, Json)] = match members
        .iter()
        .find(|(key, _)| key == EXTENSIONS_KEY)
        .map(|(_, value)| value)
    {
        None => return Ok(doc),
        Some(Json::Object(extensions)) => extensions,
        Some(Json::Null) if tree::unreadable_at(&notes, EXTENSIONS_KEY).is_none() => {
            return Ok(doc);
        }
        Some(other) => {
            let message = tree::unreadable_at(&notes, EXTENSIONS_KEY)
                .map(str::to_owned)
                .unwrap_or_else(|| {
                    format!(
                        "`{EXTENSIONS_KEY}` must be a mapping of extensions by id, not {}",
                        tree::type_name(other, "a mapping")
                    )
                });
            return Err(DocumentError::Shape {
                path: EXTENSIONS_KEY.to_owned(),
                message,
            });
        }
    };
    let mut entries = Vec::with_capacity(extensions.len());
    for (id, value) in extensions {
        let path = join_key(EXTENSIONS_KEY, id);
        if let Some(entry) = read_extension(id, value, &path, &notes, &mut doc.warnings) {
            entries.push((path, entry));
        }
    }
    doc.entries = super::reject_duplicate_ids(entries, "extension");
    Ok(doc)
}

/// One extension, or `None` for one goose serves itself (named in a warning).
fn read_extension(
    id: &str,
    value: &Json,
    path: &str,
    notes: &[Unreadable],
    warnings: &mut Vec<Diagnostic>,
) -> Option<ParsedEntry> {
    let server = Some(id.to_owned());
    let Some(members) = value.as_object() else {
        let message = tree::unreadable_at(notes, path)
            .map(str::to_owned)
            .unwrap_or_else(|| {
                format!(
                    "an extension must be a mapping, not {}",
                    tree::type_name(value, "a mapping")
                )
            });
        return Some(Err(EntryError::new(
            server.clone(),
            vec![Diagnostic::new(Code::InvalidField, server, path, message)],
        )));
    };
    let mut r = FieldReader::new(members, path, server.clone());
    tree::report_unreadable(&mut r, notes);
    let kind_name = r.required_string("type");
    if let Some(name) = kind_name.as_deref()
        && IN_PROCESS_TYPES.contains(&name)
    {
        warnings.push(Diagnostic::new(
            Code::IgnoredField,
            server,
            r.field_path("type"),
            format!(
                "goose extension `{id}` (`type: {name}`) is served by goose itself and cannot \
                 be started here; it was skipped"
            ),
        ));
        return None;
    }
    let kind = match kind_name.as_deref() {
        None => None,
        Some("stdio") => Some(TransportKind::Stdio),
        Some("sse") => Some(TransportKind::Sse),
        Some("streamable_http") => Some(TransportKind::Http),
        Some(other) => {
            let field = r.field_path("type");
            r.problem(
                Code::UnknownTransport,
                field,
                format!(
                    "unknown extension type `{}`; goose's are `stdio`, `sse`, `streamable_http`, \
                     `builtin`, `platform`, `frontend` and `inline_python`",
                    shorten(other)
                ),
            );
            None
        }
    };
    let enabled = r.bool("enabled").unwrap_or(true);
    let name = r.string("name").filter(|name| !name.is_empty());
    let description = r.string("description").filter(|d| !d.is_empty());
    let call_timeout_ms = timeout(&mut r);
    let mut tools = ToolFilter::default();
    let available = r.string_array("available_tools");
    if !available.is_empty() {
        tools.include = Some(available);
    }
    let mut read_keys: Vec<&str> = vec!["name", "description", "timeout", "available_tools"];
    let mut misplaced_fields = Vec::new();
    let transport = match kind {
        Some(TransportKind::Stdio) => {
            let mut stdio = StdioConfig::new(tree::literal(r.string("cmd").unwrap_or_default()));
            stdio.args = r
                .string_array("args")
                .into_iter()
                .map(tree::literal)
                .collect();
            stdio.env = r
                .string_map("envs")
                .into_iter()
                .map(|(key, value)| SecretEntry::new(key, tree::literal(value)))
                .collect();
            stdio.env_passthrough = r.string_array("env_keys");
            read_keys.extend(["cmd", "args", "envs", "env_keys"]);
            for (key, field) in [("uri", "transport.url"), ("headers", "transport.headers")] {
                if r.has(key) {
                    read_keys.push(key);
                    misplaced_fields.push(field.to_owned());
                }
            }
            Some(TransportConfig::Stdio(stdio))
        }
        Some(kind @ (TransportKind::Http | TransportKind::Sse)) => {
            let mut http = HttpConfig::new(r.string("uri").unwrap_or_default());
            http.headers = r
                .string_map("headers")
                .into_iter()
                .map(|(key, value)| SecretEntry::new(key, value))
                .collect();
            read_keys.extend(["uri", "headers"]);
            // `${NAME}` in a header reads the environment here, so
            // `env_keys` needs nothing more; literal `envs` have nowhere
            // to go on an HTTP server.
            let _ = r.string_array("env_keys");
            read_keys.push("env_keys");
            if !r.string_map("envs").is_empty() {
                warnings.push(Diagnostic::new(
                    Code::IgnoredField,
                    r.server(),
                    r.field_path("envs"),
                    "`envs` of an HTTP extension are not used here; put the values in \
                     environment variables, which `${NAME}` in a header reads; it was ignored",
                ));
            }
            read_keys.push("envs");
            for (key, field) in [("cmd", "transport.command"), ("args", "transport.args")] {
                if r.has(key) {
                    read_keys.push(key);
                    misplaced_fields.push(field.to_owned());
                }
            }
            Some(if kind == TransportKind::Sse {
                TransportConfig::Sse(http)
            } else {
                TransportConfig::Http(http)
            })
        }
        None => None,
    };
    if transport.is_some() {
        for (key, _) in members {
            let key = key.as_str();
            if !QUIET_KEYS.contains(&key) && !read_keys.contains(&key) {
                warnings.push(Diagnostic::new(
                    Code::IgnoredField,
                    r.server(),
                    r.field_path(key),
                    format!("`{key}` is not a goose extension setting; it was ignored"),
                ));
            }
        }
    }
    tree::drop_stand_in_problems(&mut r, notes);
    Some(match transport {
        Some(transport) if r.problems.is_empty() => {
            let mut config = ServerConfig::new(id, transport);
            if let Some(name) = name {
                config.name = name;
            }
            config.enabled = enabled;
            config.description = description;
            config.call_timeout_ms = call_timeout_ms;
            config.tools = tools;
            config.misplaced_fields = misplaced_fields;
            Ok(config)
        }
        _ => Err(EntryError::new(r.server(), r.problems)),
    })
}

/// `timeout`: whole seconds, in milliseconds.
fn timeout(r: &mut FieldReader<'_>) -> Option<u64> {
    let value = r.raw("timeout")?;
    let millis = match value {
        Json::Null => return None,
        Json::Number(n) => n.as_u64().and_then(|secs| secs.checked_mul(1_000)),
        _ => None,
    };
    if millis.is_none() {
        let field = r.field_path("timeout");
        let message = match value {
            Json::Number(_) => {
                String::from("`timeout` must be a whole number of seconds, zero or more")
            }
            other => format!(
                "`timeout` must be a whole number of seconds, not {}",
                tree::type_name(other, "a mapping")
            ),
        };
        r.problem(Code::InvalidField, field, message);
    }
    millis
}

/// Parses the text into the tree: `Json::Null` for an empty stream.
fn parse(text: &str) -> Result<(Json, Vec<Unreadable>), DocumentError> {
    let mut builder = Builder::default();
    Parser::new_from_str(text)
        .load(&mut builder, true)
        .map_err(|error| DocumentError::Syntax {
            language: "YAML",
            line: error.marker().line(),
            column: error.marker().col() + 1,
            message: tree::parser_message(error.info()),
        })?;
    if builder.documents > 1 {
        return Err(DocumentError::Shape {
            path: String::new(),
            message: String::from(
                "the file holds more than one YAML document (`---`); goose reads one",
            ),
        });
    }
    Ok((builder.root.unwrap_or(Json::Null), builder.notes))
}

/// Builds the tree from parser events, with an explicit stack (the
/// parser bounds the depth).
#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    root: Option<Json>,
    documents: usize,
    notes: Vec<Unreadable>,
}

/// An open sequence or mapping.
struct Frame {
    path: String,
    node: Node,
    /// This node is a mapping key: it is read to its end and dropped.
    is_key: bool,
}

enum Node {
    Sequence(Vec<Json>),
    Mapping {
        members: Vec<(String, Json)>,
        key: Key,
    },
}

/// Where a mapping is between its keys and values.
enum Key {
    /// The next node is a key.
    Expected,
    /// The next node is the value of this key.
    Text(String),
    /// The next node is the value of a key that is not text: dropped.
    Unusable,
}

const ALIAS: &str = "a YAML alias (`*name`) is not read here; write the value out in full";
const NON_FINITE: &str = "`.inf` and `.nan` are not values any server setting takes";
const BAD_KEY: &str = "a key must be text; a list, a mapping or an empty key is not read here";

impl Builder {
    /// The path of the node that comes next, and whether it is a key.
    fn next_position(&self) -> (String, bool) {
        match self.stack.last() {
            None => (String::new(), false),
            Some(frame) => match &frame.node {
                Node::Sequence(items) => (join_index(&frame.path, items.len()), false),
                Node::Mapping { key, .. } => match key {
                    Key::Expected => (frame.path.clone(), true),
                    Key::Text(text) => (join_key(&frame.path, text), false),
                    Key::Unusable => (frame.path.clone(), false),
                },
            },
        }
    }

    fn note(&mut self, path: String, message: &'static str) {
        self.notes.push(Unreadable { path, message });
    }

    /// Places a finished value where the parser is: the value of a key
    /// that is not text is dropped, and noted at its mapping.
    fn place(&mut self, value: Json) {
        let Some(frame) = self.stack.last_mut() else {
            self.root = Some(value);
            return;
        };
        match &mut frame.node {
            Node::Sequence(items) => items.push(value),
            Node::Mapping { members, key } => match std::mem::replace(key, Key::Expected) {
                Key::Text(text) => members.push((text, value)),
                // Keys never get here: scalars, aliases and collections in
                // key position set the key themselves.
                Key::Expected | Key::Unusable => {
                    let path = frame.path.clone();
                    self.note(path, BAD_KEY);
                }
            },
        }
    }

    /// Marks the key of the innermost mapping as not text.
    fn unusable_key(&mut self) {
        if let Some(Frame {
            node: Node::Mapping { key, .. },
            ..
        }) = self.stack.last_mut()
        {
            *key = Key::Unusable;
        }
    }

    fn scalar(&mut self, text: String, style: TScalarStyle, tag: Option<&Tag>) {
        let (path, is_key) = self.next_position();
        if is_key {
            // Any scalar key is its text, except an empty or null one.
            let usable =
                style != TScalarStyle::Plain || !matches!(Yaml::from_str(&text), Yaml::Null);
            if !usable {
                self.unusable_key();
            } else if let Some(Frame {
                node: Node::Mapping { key, .. },
                ..
            }) = self.stack.last_mut()
            {
                *key = Key::Text(text);
            }
            return;
        }
        let value = scalar_value(text, style, tag);
        let value = match value {
            Some(value) => value,
            None => {
                self.note(path, NON_FINITE);
                Json::Null
            }
        };
        self.place(value);
    }

    fn open(&mut self, node: Node) {
        let (path, is_key) = self.next_position();
        self.stack.push(Frame { path, node, is_key });
    }

    fn close(&mut self) {
        let Some(frame) = self.stack.pop() else {
            return;
        };
        let value = match frame.node {
            Node::Sequence(items) => Json::Array(items),
            Node::Mapping { members, .. } => Json::Object(members),
        };
        if frame.is_key {
            self.unusable_key();
        } else {
            self.place(value);
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, _mark: Marker) {
        match event {
            Event::DocumentStart => self.documents += 1,
            Event::Alias(_) => {
                let (path, is_key) = self.next_position();
                self.note(path, ALIAS);
                if is_key {
                    self.unusable_key();
                } else {
                    self.place(Json::Null);
                }
            }
            Event::Scalar(text, style, _anchor, tag) => self.scalar(text, style, tag.as_ref()),
            Event::SequenceStart(_, _) => self.open(Node::Sequence(Vec::new())),
            Event::MappingStart(_, _) => self.open(Node::Mapping {
                members: Vec::new(),
                key: Key::Expected,
            }),
            Event::SequenceEnd | Event::MappingEnd => self.close(),
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
        }
    }
}

/// A scalar's value by the YAML 1.2 core schema: quoted text is text; a
/// plain scalar may be null, a boolean or a number. `None` for a number
/// JSON cannot hold (`.inf`, `.nan`).
fn scalar_value(text: String, style: TScalarStyle, tag: Option<&Tag>) -> Option<Json> {
    let core = tag.filter(|tag| tag.handle == "tag:yaml.org,2002:");
    if core.is_some_and(|tag| tag.suffix == "str") {
        return Some(Json::String(text));
    }
    if style != TScalarStyle::Plain && core.is_none() {
        return Some(Json::String(text));
    }
    Some(match Yaml::from_str(&text) {
        Yaml::Null => Json::Null,
        Yaml::Boolean(b) => Json::Bool(b),
        Yaml::Integer(n) => Json::Number(n.into()),
        // What Rust cannot parse here is YAML's `.inf` or `.nan`.
        Yaml::Real(real) => Json::Number(
            real.parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)?,
        ),
        _ => Json::String(text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_doc(text: &str) -> ParsedDocument {
        read(text).unwrap_or_else(|error| panic!("{error}"))
    }

    fn only(doc: &ParsedDocument) -> &ServerConfig {
        assert_eq!(doc.entries.len(), 1, "{:?}", doc.entries);
        doc.entries[0].as_ref().unwrap_or_else(|e| panic!("{e}"))
    }

    fn failure(doc: &ParsedDocument) -> &EntryError {
        doc.entries[0].as_ref().expect_err("the entry should fail")
    }

    fn stdio(server: &ServerConfig) -> &StdioConfig {
        match &server.transport {
            TransportConfig::Stdio(stdio) => stdio,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_stdio_extension_runs_its_command() {
        let doc = parse_doc(
            "extensions:\n  github:\n    enabled: true\n    type: stdio\n    name: GitHub\n\
             \x20   description: ''\n    cmd: npx\n    args: [-y, '@modelcontextprotocol/server-github']\n\
             \x20   envs: {LOG: debug}\n    env_keys: [GITHUB_TOKEN]\n    timeout: 300\n    bundled: null\n",
        );
        let server = only(&doc);
        assert_eq!(
            (server.id.as_str(), server.name.as_str()),
            ("github", "GitHub")
        );
        assert_eq!(server.description, None);
        assert_eq!(server.call_timeout_ms, Some(300_000));
        assert_eq!(server.timeout_ms, None);
        let stdio = stdio(server);
        assert_eq!(stdio.command, "npx");
        assert_eq!(stdio.args, ["-y", "@modelcontextprotocol/server-github"]);
        assert_eq!(stdio.env, [SecretEntry::new("LOG", "debug")]);
        assert_eq!(stdio.env_passthrough, ["GITHUB_TOKEN"]);
        assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    }

    #[test]
    fn http_extensions_reach_their_uri() {
        let doc = parse_doc(
            "extensions:\n  api:\n    type: streamable_http\n    uri: https://e.com/mcp\n\
             \x20   headers: {Authorization: 'Bearer ${API_TOKEN}'}\n    envs: {}\n    env_keys: []\n\
             \x20 old:\n    type: sse\n    uri: http://localhost:8080/sse\n",
        );
        let api = doc.entries[0].as_ref().unwrap();
        let TransportConfig::Http(http) = &api.transport else {
            panic!("{api:?}")
        };
        assert_eq!(http.url, "https://e.com/mcp");
        // Header references read the environment, as written.
        assert_eq!(
            http.headers,
            [SecretEntry::new("Authorization", "Bearer ${API_TOKEN}")]
        );
        let old = doc.entries[1].as_ref().unwrap();
        assert_eq!(old.transport.kind(), TransportKind::Sse);
        assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    }

    #[test]
    fn goose_served_extensions_are_named_in_a_warning() {
        for kind in IN_PROCESS_TYPES {
            let doc = parse_doc(&format!(
                "extensions:\n  developer:\n    enabled: true\n    type: {kind}\n    name: developer\n"
            ));
            assert!(doc.entries.is_empty());
            assert_eq!(doc.warnings.len(), 1, "{kind}");
            let warning = &doc.warnings[0];
            assert_eq!(warning.code(), "ignored_field");
            assert_eq!(warning.field, "extensions.developer.type");
            assert!(warning.message.contains("`developer`"), "{warning}");
            assert!(warning.message.contains(kind), "{warning}");
        }
    }

    #[test]
    fn disabled_extensions_are_kept_disabled() {
        let doc = parse_doc("extensions:\n  a:\n    enabled: false\n    type: stdio\n    cmd: a\n");
        assert!(!only(&doc).enabled);
        let doc = parse_doc("extensions:\n  a:\n    enabled: yes\n    type: stdio\n    cmd: a\n");
        assert_eq!(failure(&doc).code(), "invalid_field");
    }

    #[test]
    fn available_tools_limit_the_tools_when_not_empty() {
        let doc = parse_doc(
            "extensions:\n  a:\n    type: stdio\n    cmd: a\n    available_tools: [read]\n",
        );
        let tools = &only(&doc).tools;
        assert!(tools.allows("read") && !tools.allows("write"));
        let doc =
            parse_doc("extensions:\n  a:\n    type: stdio\n    cmd: a\n    available_tools: []\n");
        assert!(only(&doc).tools.is_all());
    }

    #[test]
    fn bad_timeouts_are_refused() {
        for value in ["-1", "1.5", "ten", "[1]", "18446744073709551615"] {
            let doc = parse_doc(&format!(
                "extensions:\n  a:\n    type: stdio\n    cmd: a\n    timeout: {value}\n"
            ));
            let error = failure(&doc);
            assert_eq!(
                error.diagnostics[0].field, "extensions.a.timeout",
                "{value}"
            );
        }
    }

    #[test]
    fn unknown_types_and_keys_are_reported() {
        let doc = parse_doc("extensions:\n  a:\n    type: websocket\n    uri: ws://x\n");
        assert_eq!(failure(&doc).code(), "unknown_transport");
        assert!(failure(&doc).to_string().contains("`websocket`"));
        let doc = parse_doc("extensions:\n  a:\n    cmd: a\n");
        assert_eq!(failure(&doc).code(), "missing_field");
        let doc = parse_doc("extensions:\n  a:\n    type: stdio\n    cmd: a\n    cwd: /x\n");
        assert!(only(&doc).enabled);
        let fields: Vec<&str> = doc.warnings.iter().map(|w| w.field.as_str()).collect();
        assert_eq!(fields, ["extensions.a.cwd"]);
    }

    #[test]
    fn literal_envs_of_an_http_extension_are_named_as_ignored() {
        let doc = parse_doc(
            "extensions:\n  a:\n    type: streamable_http\n    uri: https://e.com\n    envs: {K: sk-SECRET}\n",
        );
        only(&doc);
        assert_eq!(doc.warnings[0].field, "extensions.a.envs");
        assert!(!doc.warnings[0].message.contains("SECRET"));
    }

    #[test]
    fn fields_of_the_other_transport_are_flagged_for_validation() {
        let doc =
            parse_doc("extensions:\n  a:\n    type: stdio\n    cmd: a\n    uri: https://e.com\n");
        assert_eq!(only(&doc).misplaced_fields, ["transport.url"]);
        let doc =
            parse_doc("extensions:\n  a:\n    type: sse\n    uri: https://e.com\n    args: [x]\n");
        assert_eq!(only(&doc).misplaced_fields, ["transport.args"]);
    }

    #[test]
    fn other_settings_are_not_ours() {
        let doc = parse_doc("GOOSE_PROVIDER: openai\nGOOSE_MODEL: gpt-4o\n");
        assert!(doc.entries.is_empty() && doc.warnings.is_empty());
        assert!(parse_doc("").entries.is_empty());
        assert!(parse_doc("# only a comment\n").entries.is_empty());
        assert!(parse_doc("extensions:\n").entries.is_empty());
        assert_eq!(parse_doc("").format, Some(Format::Goose));
    }

    #[test]
    fn documents_of_the_wrong_shape_say_so() {
        for (text, path) in [
            ("- a\n- b\n", "top level"),
            ("extensions: [a]\n", "extensions"),
            ("extensions: 3\n", "extensions"),
            ("a: 1\n---\nb: 2\n", "top level"),
        ] {
            let error = read(text).unwrap_err();
            assert_eq!(
                (error.code(), error.position().as_str()),
                ("invalid_document", path),
                "{text}"
            );
        }
        let doc = parse_doc("extensions:\n  a: npx\n");
        assert_eq!(failure(&doc).code(), "invalid_field");
    }

    #[test]
    fn aliases_are_never_expanded_and_fail_their_extension() {
        let doc = parse_doc(
            "base: &base {type: stdio, cmd: a}\nextensions:\n  a:\n    <<: *base\n    name: A\n\
             \x20 b: *base\n  c:\n    type: stdio\n    cmd: &c c\n    args: [*c]\n  d:\n    type: stdio\n    cmd: d\n",
        );
        let codes: Vec<&str> = doc
            .entries
            .iter()
            .map(|e| match e {
                Ok(_) => "ok",
                Err(error) => error.code(),
            })
            .collect();
        assert_eq!(
            codes,
            ["invalid_field", "invalid_field", "invalid_field", "ok"]
        );
        let message = doc.entries[2].as_ref().unwrap_err().to_string();
        assert!(
            message.contains("extensions.c.args[0]") && message.contains("alias"),
            "{message}"
        );
        // A billion laughs: nine levels of ten aliases each would be 10^9
        // values if expanded; read as written, it is a few dozen.
        let mut text = String::from("a0: &a0 [x]\n");
        for level in 1..10 {
            let refs = vec![format!("*a{}", level - 1); 10].join(", ");
            text.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
        }
        text.push_str("extensions:\n  boom:\n    type: stdio\n    cmd: a\n    args: *a9\n");
        let doc = parse_doc(&text);
        assert_eq!(failure(&doc).diagnostics[0].field, "extensions.boom.args");
        let error = read("extensions: *x\n").unwrap_err();
        assert_eq!(error.code(), "parse_error");
        let error = read("x: &x {}\nextensions: *x\n").unwrap_err();
        assert_eq!(error.code(), "invalid_document");
        assert!(error.to_string().contains("alias"), "{error}");
    }

    #[test]
    fn keys_that_are_not_text_fail_their_extension() {
        let doc = parse_doc(
            "extensions:\n  a:\n    type: stdio\n    cmd: a\n    ? [x, y]\n    : 1\n  b:\n    type: stdio\n    cmd: b\n    ~: 1\n  c:\n    type: stdio\n    cmd: c\n    envs: {1: one, true: yes}\n",
        );
        assert_eq!(
            doc.entries[0].as_ref().unwrap_err().diagnostics[0].field,
            "extensions.a"
        );
        assert_eq!(doc.entries[1].as_ref().unwrap_err().code(), "invalid_field");
        // Scalar keys are their text: `1` and `true` name variables.
        let c = doc.entries[2].as_ref().unwrap();
        let keys: Vec<&str> = stdio(c).env.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["1", "true"]);
        // Numeric extension ids are text too.
        let doc = parse_doc("extensions:\n  123:\n    type: stdio\n    cmd: a\n");
        assert_eq!(only(&doc).id, "123");
    }

    #[test]
    fn repeated_ids_and_keys_are_refused() {
        let doc = parse_doc(
            "extensions:\n  a:\n    type: stdio\n    cmd: a\n  a:\n    type: stdio\n    cmd: b\n",
        );
        assert_eq!(doc.entries.len(), 1);
        assert_eq!(failure(&doc).code(), "duplicate_id");
        let doc = parse_doc("extensions:\n  a:\n    type: stdio\n    cmd: a\n    cmd: b\n");
        assert_eq!(failure(&doc).code(), "invalid_field");
    }

    #[test]
    fn scalars_follow_the_core_schema() {
        let value = |text: &str| {
            let (root, notes) = parse(&format!("v: {text}\n")).unwrap();
            (root.get("v").cloned(), notes.len())
        };
        assert_eq!(value("~"), (Some(Json::Null), 0));
        assert_eq!(value("true"), (Some(Json::Bool(true)), 0));
        assert_eq!(value("'true'"), (Some(Json::String("true".into())), 0));
        assert_eq!(value("!!str 12"), (Some(Json::String("12".into())), 0));
        assert_eq!(value("12"), (Some(Json::Number(12.into())), 0));
        assert_eq!(value("0x1f"), (Some(Json::Number(31.into())), 0));
        assert_eq!(
            value("1.5").0.and_then(|v| match v {
                Json::Number(n) => n.as_f64(),
                _ => None,
            }),
            Some(1.5)
        );
        assert_eq!(value("yes"), (Some(Json::String("yes".into())), 0));
        for non_finite in [".inf", "-.inf", ".nan"] {
            assert_eq!(value(non_finite), (Some(Json::Null), 1), "{non_finite}");
        }
    }

    #[test]
    fn syntax_errors_have_a_position_and_never_quote_the_input() {
        for (text, line, column) in [
            ("extensions:\n  a:\n    cmd: \"sk-SECRET\n", 3, 10),
            ("a: b: sk-SECRET\n", 1, 5),
            ("extensions:\n\t- sk-SECRET\n", 2, 2),
            ("a: 'sk-SECRET", 1, 4),
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
                ("YAML", line, column),
                "{text}: {error}"
            );
            let shown = format!("{error} {error:?}");
            assert!(!shown.contains("SECRET"), "{shown}");
            assert!(shown.contains("not valid YAML"), "{shown}");
        }
    }

    #[test]
    fn hostile_documents_are_refused_or_read_without_harm() {
        let big = "sk-".to_owned() + &"x".repeat(10 << 20);
        let doc = parse_doc(&format!(
            "extensions:\n  a:\n    type: stdio\n    cmd: a\n    envs: {{K: '{big}'}}\n    args: 5\n"
        ));
        let error = failure(&doc);
        let shown = format!("{error} {error:?}");
        assert!(shown.len() < 1_000, "{}", shown.len());
        assert!(!shown.contains("sk-"));
        for deep in [
            format!("a: {}{}", "[".repeat(100_000), "]".repeat(100_000)),
            format!("a: {}{}", "{b: ".repeat(100_000), "}".repeat(100_000)),
        ] {
            assert_eq!(read(&deep).unwrap_err().code(), "parse_error");
        }
        let mut nested = String::from("extensions:\n  a:\n    type: stdio\n    cmd: a\n    args:");
        nested.push_str(&" [".repeat(100));
        nested.push_str(&"]".repeat(100));
        let doc = parse_doc(&nested);
        assert_eq!(failure(&doc).diagnostics[0].field, "extensions.a.args[0]");
    }

    #[test]
    fn strings_of_the_command_are_literal_as_in_goose() {
        let doc =
            parse_doc("extensions:\n  a:\n    type: stdio\n    cmd: a\n    args: ['${HOME}']\n");
        let env = std::collections::HashMap::from([("HOME".to_owned(), "/h".to_owned())]);
        assert_eq!(
            crate::expand(&stdio(only(&doc)).args[0], &env).unwrap(),
            "${HOME}"
        );
    }
}

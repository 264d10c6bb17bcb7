//! Readers for the configuration formats (the store's own and each host's file), and the store format's writer.
//!
//! - `{"mcpServers": {name: {...}}}`: Claude Desktop, Claude Code's `.mcp.json`
//!   and AI-Zen. See [`parse_mcp_servers`].
//! - VS Code's `{"servers": {name: {"type": ...}}, "inputs": [...]}`. See
//!   [`parse_vscode`].
//! - The versioned store `{"version": 1, "servers": [...]}`. See
//!   [`parse_store_v1`] and [`write_store_v1`].
//! - Each host's own file, read with [`parse_document_with`] and the
//!   host's [`Format`] (each variant says what it reads): Claude Code's
//!   `~/.claude.json`, Cursor, Windsurf, Gemini CLI, Zed, opencode, Cline.
//!
//! The store is strict JSON. Every other format is read as the hosts
//! write it: JSON with `//` and `/* */` comments and trailing commas (and
//! nothing else of JSON5). A leading byte-order mark is skipped.
//!
//! Every reader returns one result per entry: an entry that does not parse is
//! one [`EntryError`] (with the server name when it is known) and the others
//! load. Only a document that is not JSON at all, or
//! not shaped like its format (the servers key holding something other than
//! an object, for instance), fails whole, with a [`DocumentError`]. Every
//! diagnostic names the field as the file wrote it and carries its line and
//! column. A server field of a host's file that has no meaning here
//! (Gemini's `trust`, Cline's `autoApprove`, unknown keys) is reported once
//! per file as an `ignored_field` warning naming the servers that set it;
//! the store ignores unknown fields, including the legacy `approvalMode`
//! and `toolPolicies`, and never writes them.

mod by_name;
#[cfg(feature = "host-configs")]
mod codex;
#[cfg(feature = "host-configs")]
mod goose;
mod host;
mod mcp_servers;
mod opencode;
mod store_v1;
#[cfg(feature = "host-configs")]
mod tree;
mod zed;

use std::fmt;

use crate::diagnostic::{Code, Diagnostic};
use crate::json::{self, Dialect, Json};
use crate::model::{OAuthConfig, OAuthGrant, ProtocolEra, ServerConfig, TransportKind};

use mcp_servers::Flavor;

pub use store_v1::{
    STORE_VERSION, StoreServer, parse_store_server, server_to_store_json, write_store_v1,
};

/// A configuration file format: the store's own, or a host's file.
///
/// Every format but [`Format::StoreV1`] is read as JSON with comments and
/// trailing commas, and records where each field was written
/// ([`ServerConfig::origins`]), so that validation names fields as the file
/// wrote them. Fields with no meaning here are reported once per file
/// (`ignored_field`); see [`parse_document_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// `{"mcpServers": {name: {...}}}` (Claude Desktop, a project's
    /// `.mcp.json`): `command`, `args`, `env`, `cwd`, `url`, `headers`,
    /// `type` (`stdio`, `http`, `sse`), `disabled`, and this crate's own
    /// `description`, `timeout` (ms, to initialize), `era`, `envVars`,
    /// `envHeaders`, `bearerTokenEnv` and `oauth`. See [`parse_mcp_servers`].
    McpServers,
    /// VS Code's `{"servers": {name: {...}}, "inputs": [...]}`. See
    /// [`parse_vscode`].
    VsCode,
    /// The store: `{"version": 1, "servers": [{id, name, enabled, transport}]}`.
    StoreV1,
    /// Claude Code's `~/.claude.json`: the user's top-level `mcpServers`
    /// and, for the project being read ([`ReadContext::project_dir`], the
    /// key written exactly as that absolute path),
    /// `projects.<dir>.mcpServers`; other projects' entries are not read.
    /// A project entry replaces a top-level one of the same name, as in
    /// Claude Code (no `duplicate_id`: the top-level one is simply not
    /// listed). Entries as in [`Format::McpServers`].
    ClaudeCode,
    /// Cursor's `mcp.json` (`~/.cursor/mcp.json`, `<project>/.cursor/mcp.json`):
    /// `mcpServers` as in [`Format::McpServers`]; `${env:NAME}` is read as
    /// `${NAME}`, `${userHome}`, `${workspaceFolder}` and
    /// `${workspaceFolderBasename}` are substituted from the
    /// [`ReadContext`] (`unresolved_variable` when it lacks the directory);
    /// a static OAuth client `auth: {CLIENT_ID, CLIENT_SECRET: "${env:NAME}",
    /// scopes}` is read as `oauth` (a literal secret is refused); `envFile`
    /// is ignored with an `ignored_env_file` warning.
    Cursor,
    /// Windsurf's `mcp_config.json`: `mcpServers`, with `serverUrl` (or
    /// `url`) for Streamable HTTP servers, `${env:NAME}` read as `${NAME}`,
    /// `disabledTools` into [`ServerConfig::tools`]; `${file:PATH}` is
    /// `unsupported_reference`.
    Windsurf,
    /// Gemini CLI's `settings.json`: `mcpServers`, with `httpUrl`
    /// (Streamable HTTP), `url` (legacy SSE, unless `type` says `http`),
    /// `headers`, `cwd`, `env`, `timeout` (ms, per request:
    /// [`ServerConfig::call_timeout_ms`]), `includeTools` / `excludeTools`
    /// ([`ServerConfig::tools`]) and the top-level `mcp.allowed` /
    /// `mcp.excluded` lists (a server they leave out is disabled). `$NAME`
    /// is read as `${NAME}`. `trust` has no equivalent here and is reported
    /// as ignored; `tcp` (WebSocket) is `unknown_transport`.
    Gemini,
    /// Zed's `settings.json`: `context_servers`, flat `{"command", "args",
    /// "env"}`, the older nested `{"command": {"path", "args", "env"}}`, or
    /// remote `{"url", "headers"}`; `enabled`. A server provided by a Zed
    /// extension (only `settings`) cannot be started here and is an
    /// `unstartable_server` warning naming it.
    Zed,
    /// Codex's `config.toml`: `[mcp_servers.NAME]` tables.
    Codex,
    /// goose's `config.yaml`: `extensions`.
    Goose,
    /// opencode's `opencode.json` / `opencode.jsonc`: `mcp`, with
    /// `type: "local"` (`command` an array whose first element is the
    /// program, `environment`) or `type: "remote"` (`url`, `headers`,
    /// `oauth`: `false`, reported as ignored, or `{clientId, clientSecret:
    /// "{env:NAME}", scope}`), `enabled`, `timeout` (ms, to connect).
    /// `{env:NAME}` is read as `${NAME}`; `{file:PATH}` is
    /// `unsupported_reference`.
    OpenCode,
    /// Cline's `cline_mcp_settings.json`: `mcpServers`, with `disabled`,
    /// `timeout` in seconds (per request: [`ServerConfig::call_timeout_ms`]),
    /// `type` `stdio`, `sse` or `streamableHttp`, and `url` (SSE when no
    /// `type` says otherwise, as Cline reads it). `autoApprove` has no
    /// equivalent here and is reported as ignored.
    Cline,
}

impl Format {
    /// A short name for messages: `mcpServers`, `vscode`, `store-v1`,
    /// `claude-code`, `cursor`, `windsurf`, `gemini`, `zed`, `codex`,
    /// `goose`, `opencode` or `cline`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::McpServers => "mcpServers",
            Format::VsCode => "vscode",
            Format::StoreV1 => "store-v1",
            Format::ClaudeCode => "claude-code",
            Format::Cursor => "cursor",
            Format::Windsurf => "windsurf",
            Format::Gemini => "gemini",
            Format::Zed => "zed",
            Format::Codex => "codex",
            Format::Goose => "goose",
            Format::OpenCode => "opencode",
            Format::Cline => "cline",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a reader may need beyond the text: the project being read for
/// (Claude Code's per-project entries, `${workspaceFolder}`) and the
/// person's home directory (`${userHome}`, `~`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadContext {
    /// The project (workspace) directory, absolute. Default `None`.
    pub project_dir: Option<std::path::PathBuf>,
    /// The home directory. Default `None`.
    pub home_dir: Option<std::path::PathBuf>,
}

impl ReadContext {
    /// A context with neither a project nor a home directory.
    pub fn new() -> Self {
        ReadContext::default()
    }

    /// The same context for the project at `dir`.
    pub fn with_project(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.project_dir = Some(dir.into());
        self
    }

    /// The same context with the home directory `dir`.
    pub fn with_home(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.home_dir = Some(dir.into());
        self
    }
}

/// What a document held: one result per server entry, in document order, and warnings.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ParsedDocument {
    /// The format that was read; `None` for servers a host supplied directly.
    pub format: Option<Format>,
    /// One result per entry.
    pub entries: Vec<ParsedEntry>,
    /// Things that were read but ignored (`envFile`, host fields with no
    /// meaning here) and servers that cannot be started here (a Zed
    /// extension's), each with the written path, line and column.
    pub warnings: Vec<Diagnostic>,
}

impl ParsedDocument {
    /// A document with no servers (what a missing file means).
    pub fn empty(format: Option<Format>) -> Self {
        ParsedDocument {
            format,
            entries: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Servers a host already holds, for a [`crate::ConfigSource`] that does
    /// not read a file.
    pub fn from_servers(servers: impl IntoIterator<Item = ServerConfig>) -> Self {
        ParsedDocument {
            format: None,
            entries: servers.into_iter().map(Ok).collect(),
            warnings: Vec::new(),
        }
    }

    /// The entries that parsed.
    pub fn servers(&self) -> impl Iterator<Item = &ServerConfig> {
        self.entries.iter().filter_map(|entry| entry.as_ref().ok())
    }

    /// The entries that did not.
    pub fn errors(&self) -> impl Iterator<Item = &EntryError> {
        self.entries.iter().filter_map(|entry| entry.as_ref().err())
    }
}

/// One entry of a document: a server, or why it could not be read.
pub type ParsedEntry = Result<ServerConfig, EntryError>;

/// An entry that could not be read. Its diagnostics list every problem found
/// in it; none quotes a value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", describe_entry_error(self))]
#[non_exhaustive]
pub struct EntryError {
    /// The server's name or id, when the entry got that far.
    pub server: Option<String>,
    /// Every problem found in the entry; never empty.
    pub diagnostics: Vec<Diagnostic>,
}

impl EntryError {
    /// An error with these diagnostics.
    pub fn new(server: Option<String>, diagnostics: Vec<Diagnostic>) -> Self {
        EntryError {
            server,
            diagnostics,
        }
    }

    /// The code of the first problem (e.g. `invalid_field`).
    pub fn code(&self) -> &'static str {
        self.diagnostics
            .first()
            .map_or(Code::ParseError.as_str(), Diagnostic::code)
    }
}

fn describe_entry_error(error: &EntryError) -> String {
    let problems: Vec<String> = error
        .diagnostics
        .iter()
        .map(|d| {
            let location = d.location();
            if location.is_empty() {
                format!("{} [{}]", d.message, d.code)
            } else {
                format!("{location}: {} [{}]", d.message, d.code)
            }
        })
        .collect();
    match &error.server {
        Some(server) => format!("server `{server}`: {}", problems.join("; ")),
        None => problems.join("; "),
    }
}

/// A document that cannot be read at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentError {
    /// Not valid JSON (or TOML, or YAML: see `language`). Positions are 1-based.
    #[error("not valid {language} at line {line} column {column}: {message}")]
    Syntax {
        /// The syntax the document was read as: `JSON`, `TOML` or `YAML`.
        language: &'static str,
        /// Line of the error.
        line: usize,
        /// Column of the error.
        column: usize,
        /// What the parser expected (never quotes the input).
        message: String,
    },
    /// Valid JSON, but not shaped like the format.
    #[error("{}", if path.is_empty() { message.clone() } else { format!("{path}: {message}") })]
    Shape {
        /// JSON path of the offending value; empty for the top level.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A store file of a version this build does not read. It must not be
    /// overwritten: a newer build wrote it.
    #[error("store version {found} is not supported; this build reads version 1")]
    UnsupportedVersion {
        /// The version found.
        found: String,
    },
    /// A format whose reader this build leaves out: Codex's TOML and
    /// goose's YAML need the `host-configs` feature.
    #[error("reading {} files needs mcp-config's `host-configs` feature, which this build leaves out", format.as_str())]
    FormatDisabled {
        /// The format asked for.
        format: Format,
    },
}

impl DocumentError {
    /// The stable code: `parse_error`, `invalid_document`,
    /// `unsupported_version` or `format_disabled`.
    pub fn code(&self) -> &'static str {
        match self {
            DocumentError::Syntax { .. } => Code::ParseError.as_str(),
            DocumentError::Shape { .. } => Code::InvalidDocument.as_str(),
            DocumentError::UnsupportedVersion { .. } => Code::UnsupportedVersion.as_str(),
            DocumentError::FormatDisabled { .. } => Code::FormatDisabled.as_str(),
        }
    }

    /// Where the problem is, for a person: `line 3 column 5`, a JSON path, or
    /// `version`.
    pub fn position(&self) -> String {
        match self {
            DocumentError::Syntax { line, column, .. } => format!("line {line} column {column}"),
            DocumentError::Shape { path, .. } if path.is_empty() => String::from("top level"),
            DocumentError::Shape { path, .. } => path.clone(),
            DocumentError::UnsupportedVersion { .. } => String::from("version"),
            DocumentError::FormatDisabled { .. } => String::from("top level"),
        }
    }
}

impl From<json::SyntaxError> for DocumentError {
    fn from(error: json::SyntaxError) -> Self {
        DocumentError::Syntax {
            language: "JSON",
            line: error.line,
            column: error.column,
            message: error.message,
        }
    }
}

/// Reads a document in the given format, or detects the format when `None`.
///
/// Detection: a top-level `mcpServers` means [`Format::McpServers`]; a
/// `servers` array or a `version` means [`Format::StoreV1`]; a `servers`
/// object means [`Format::VsCode`]; any other object is an `mcpServers` file
/// without servers (Claude Code's `~/.claude.json` holds other settings too).
///
/// ```
/// use mcp_config::{parse_document, Format};
///
/// let doc = parse_document(r#"{"servers": {"fs": {"type": "stdio", "command": "mcp-fs"}}}"#, None)?;
/// assert_eq!(doc.format, Some(Format::VsCode));
/// assert_eq!(doc.servers().count(), 1);
/// # Ok::<(), mcp_config::DocumentError>(())
/// ```
pub fn parse_document(text: &str, format: Option<Format>) -> Result<ParsedDocument, DocumentError> {
    parse_document_with(text, format, &ReadContext::default())
}

/// Reads a document as [`parse_document`] does, with what the host formats
/// need to know about the project and the home directory.
///
/// ```
/// use mcp_config::{parse_document_with, Format, ReadContext};
///
/// let text = r#"{
///   "mcpServers": {"docs": {"type": "http", "url": "https://user.example.com/mcp"}},
///   "projects": {
///     "/home/dev/webapp": {"mcpServers": {"docs": {"type": "stdio", "command": "docs-mcp"}}},
///     "/home/dev/other": {"mcpServers": {"other": {"command": "other-mcp"}}}
///   }
/// }"#;
/// let context = ReadContext::new().with_project("/home/dev/webapp");
/// let doc = parse_document_with(text, Some(Format::ClaudeCode), &context)?;
/// // The project's `docs` replaces the user's; the other project is not read.
/// let ids: Vec<_> = doc.servers().map(|s| (s.id.as_str(), s.transport.kind().as_str())).collect();
/// assert_eq!(ids, [("docs", "stdio")]);
/// # Ok::<(), mcp_config::DocumentError>(())
/// ```
pub fn parse_document_with(
    text: &str,
    format: Option<Format>,
    context: &ReadContext,
) -> Result<ParsedDocument, DocumentError> {
    // Codex writes TOML and goose YAML: neither is read as JSON.
    match format {
        Some(Format::Codex) => return read_codex(text),
        Some(Format::Goose) => return read_goose(text),
        _ => {}
    }
    // The store is strict JSON; the hosts' files may hold comments and
    // trailing commas. A document detected as a store is read again, strictly.
    let dialect = match format {
        Some(Format::StoreV1) => Dialect::Strict,
        _ => Dialect::Lenient,
    };
    let mut parsed = json::read(text, dialect)?;
    let format = match format {
        Some(format) => format,
        None => detect(&parsed.root)?,
    };
    if format == Format::StoreV1 && dialect == Dialect::Lenient {
        parsed = json::read(text, Dialect::Strict)?;
    }
    let root = &parsed.root;
    let read = match format {
        Format::McpServers => mcp_servers::read(root, Flavor::McpServers, context),
        Format::VsCode => mcp_servers::read(root, Flavor::VsCode, context),
        Format::ClaudeCode => mcp_servers::read(root, Flavor::ClaudeCode, context),
        Format::Cursor => mcp_servers::read(root, Flavor::Cursor, context),
        Format::Windsurf => mcp_servers::read(root, Flavor::Windsurf, context),
        Format::Gemini => mcp_servers::read(root, Flavor::Gemini, context),
        Format::Cline => mcp_servers::read(root, Flavor::Cline, context),
        Format::Zed => zed::read(root, context),
        Format::OpenCode => opencode::read(root, context),
        Format::StoreV1 => store_v1::read(root),
        // Read above, before the text was parsed as JSON.
        Format::Codex => return read_codex(text),
        Format::Goose => return read_goose(text),
    };
    Ok(locate(read?, &parsed.positions))
}

/// Codex's TOML, with the `host-configs` feature.
fn read_codex(text: &str) -> Result<ParsedDocument, DocumentError> {
    #[cfg(feature = "host-configs")]
    return codex::read(text);
    #[cfg(not(feature = "host-configs"))]
    {
        let _ = text;
        Err(DocumentError::FormatDisabled {
            format: Format::Codex,
        })
    }
}

/// goose's YAML, with the `host-configs` feature.
fn read_goose(text: &str) -> Result<ParsedDocument, DocumentError> {
    #[cfg(feature = "host-configs")]
    return goose::read(text);
    #[cfg(not(feature = "host-configs"))]
    {
        let _ = text;
        Err(DocumentError::FormatDisabled {
            format: Format::Goose,
        })
    }
}

/// Puts the line and column of each reported field, and of each server's
/// field origins, on a document read from JSON text.
fn locate(mut document: ParsedDocument, positions: &json::Positions) -> ParsedDocument {
    let place = |diagnostic: &mut Diagnostic| {
        if let Some(position) = positions.locate(&diagnostic.field) {
            diagnostic.line = Some(position.line);
            diagnostic.column = Some(position.column);
        }
    };
    document.warnings.iter_mut().for_each(place);
    for entry in &mut document.entries {
        match entry {
            Ok(config) => config.origins.locate(positions),
            Err(error) => error.diagnostics.iter_mut().for_each(place),
        }
    }
    document
}

/// Reads an `{"mcpServers": {...}}` document (Claude Desktop, `.mcp.json`).
///
/// `type` / `transport` / `transportType` choose the transport when present
/// (`stdio`, `http`, `streamable-http`, `sse`); otherwise `command` means
/// stdio and `url` means HTTP. `disabled: true` keeps the entry but disables
/// it. `description`, `timeout` (ms), `era` (`auto`, `modern` or `legacy`:
/// see [`crate::ProtocolEra`]; any other value is `invalid_era`), `envVars`
/// (passthrough names), `envHeaders` (header to variable) and
/// `bearerTokenEnv` are read too.
///
/// ```
/// use mcp_config::{parse_mcp_servers, TransportConfig};
///
/// let doc = parse_mcp_servers(r#"{
///   "mcpServers": {
///     "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
///                "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}, "description": "GitHub"},
///     "broken": {"command": 42}
///   }
/// }"#)?;
/// let github = doc.entries[0].as_ref().unwrap();
/// assert!(matches!(github.transport, TransportConfig::Stdio(_)));
/// assert_eq!(github.description.as_deref(), Some("GitHub"));
/// // One bad entry is one error; the others load.
/// assert_eq!(doc.entries[1].as_ref().unwrap_err().code(), "invalid_field");
/// # Ok::<(), mcp_config::DocumentError>(())
/// ```
pub fn parse_mcp_servers(text: &str) -> Result<ParsedDocument, DocumentError> {
    parse_document(text, Some(Format::McpServers))
}

/// Reads a VS Code `{"servers": {...}}` document (the user's `mcp.json`
/// or a project's `.vscode/mcp.json`).
///
/// Entries are spelled as in [`parse_mcp_servers`], `era` included, with
/// `type` `stdio`, `http` or `sse`. `inputs` (`{"type": "promptString",
/// "id", "description", "password", "default"}`) are read: each server
/// gets, in [`ServerConfig::inputs`], the inputs its strings reference as
/// `${input:ID}`, and the references stay verbatim for the host to ask
/// when the server connects; a reference to an input the file does not
/// declare is `undeclared_input`, naming it. `${env:NAME}` is read as
/// `${NAME}`; `${workspaceFolder}`, `${workspaceFolderBasename}`,
/// `${userHome}` and `${pathSeparator}` are substituted from the
/// [`ReadContext`] given to [`parse_document_with`] (this function gives
/// none: such a reference is `unresolved_variable`). `envFile` is ignored
/// with an `ignored_env_file` warning; `dev` and other VS Code fields with
/// an `ignored_field` warning.
///
/// ```
/// use mcp_config::parse_vscode;
///
/// let doc = parse_vscode(r#"{
///   // VS Code writes comments and trailing commas.
///   "inputs": [{"id": "token", "type": "promptString", "password": true},],
///   "servers": {"api": {"type": "http", "url": "https://example.com/mcp",
///                       "headers": {"Authorization": "Bearer ${input:token}"}}}
/// }"#)?;
/// let api = doc.servers().next().unwrap();
/// assert_eq!(api.inputs[0].id, "token");
/// assert!(api.inputs[0].password);
/// assert!(doc.warnings.is_empty());
/// # Ok::<(), mcp_config::DocumentError>(())
/// ```
pub fn parse_vscode(text: &str) -> Result<ParsedDocument, DocumentError> {
    parse_document(text, Some(Format::VsCode))
}

/// Reads a store document (`mcp.json`, version 1).
///
/// A row `{"key": K, "value": "", "saved": true}` reads as
/// [`crate::SecretValue::Saved`]: "keep the saved value". A server's
/// optional `era` sits beside its `timeout`, outside `transport`, with the
/// values of [`crate::ProtocolEra`].
///
/// ```
/// use mcp_config::parse_store_v1;
///
/// let doc = parse_store_v1(r#"{"version": 1, "servers": [
///   {"id": "docs", "name": "Docs", "enabled": false, "approvalMode": "always",
///    "transport": {"type": "http", "url": "https://example.com/mcp"}}
/// ]}"#)?;
/// let docs = doc.servers().next().unwrap();
/// assert_eq!((docs.name.as_str(), docs.enabled), ("Docs", false));
/// # Ok::<(), mcp_config::DocumentError>(())
/// ```
pub fn parse_store_v1(text: &str) -> Result<ParsedDocument, DocumentError> {
    parse_document(text, Some(Format::StoreV1))
}

fn detect(root: &Json) -> Result<Format, DocumentError> {
    let Some(members) = root.as_object() else {
        return Err(top_level_not_object(root));
    };
    let has = |key: &str| members.iter().any(|(k, _)| k == key);
    if has("mcpServers") {
        return Ok(Format::McpServers);
    }
    match root.get("servers") {
        Some(Json::Array(_)) => Ok(Format::StoreV1),
        Some(Json::Object(_)) => Ok(Format::VsCode),
        Some(other) => Err(DocumentError::Shape {
            path: String::from("servers"),
            message: format!(
                "`servers` must be an object (VS Code) or an array (store), not {}",
                other.type_name()
            ),
        }),
        None if has("version") => Ok(Format::StoreV1),
        None => Ok(Format::McpServers),
    }
}

fn top_level_not_object(root: &Json) -> DocumentError {
    DocumentError::Shape {
        path: String::new(),
        message: format!(
            "the document must be a JSON object, not {}",
            root.type_name()
        ),
    }
}

/// Reads the optional `oauth` object of an HTTP server, shared by every
/// format. A literal client secret (`clientSecret`, `client_secret`) is
/// refused without being read: secrets are only named by variable.
fn read_oauth(r: &mut json::FieldReader<'_>) -> Option<OAuthConfig> {
    let fields = match r.raw("oauth")? {
        Json::Null => return None,
        Json::Object(fields) => fields,
        other => {
            let field = r.field_path("oauth");
            let message = format!("`oauth` must be an object, not {}", other.type_name());
            r.problem(Code::InvalidField, field, message);
            return None;
        }
    };
    let mut o = json::FieldReader::new(fields, r.field_path("oauth"), r.server());
    for key in ["clientSecret", "client_secret"] {
        if o.has(key) {
            let field = o.field_path(key);
            o.problem(
                Code::OAuthLiteralSecret,
                field,
                "a client secret cannot be written in a configuration file; put it in an \
                 environment variable and name the variable in `oauth.clientSecretEnv`",
            );
        }
    }
    let mut oauth = OAuthConfig::new();
    oauth.client_id = o.string("clientId");
    oauth.client_secret_env = o.string("clientSecretEnv");
    oauth.scopes = o.string_array("scopes");
    oauth.client_metadata_url = o.string("clientMetadataUrl");
    oauth.assertion_file = o.string("assertionFile");
    oauth.assertion_env = o.string("assertionEnv");
    oauth.redirect_port = match o.raw("redirectPort") {
        None | Some(Json::Null) => None,
        Some(Json::Number(n)) if n.as_u64().is_some_and(|p| p <= u64::from(u16::MAX)) => {
            n.as_u64().and_then(|p| u16::try_from(p).ok())
        }
        Some(_) => {
            let field = o.field_path("redirectPort");
            o.problem(
                Code::InvalidField,
                field,
                "`redirectPort` must be a port number from 1 to 65535",
            );
            None
        }
    };
    // `grant` names the OAuth grant (RFC 6749 `grant_type` values); absent
    // means the authorization code grant, what every file meant before the
    // field existed.
    let grant = match o.raw("grant") {
        None | Some(Json::Null) => Some(OAuthGrant::default()),
        Some(Json::String(name)) => OAuthGrant::from_name(name),
        Some(_) => None,
    };
    match grant {
        Some(grant) => oauth.grant = grant,
        None => {
            // The value itself is not quoted: values stay out of messages.
            let field = o.field_path("grant");
            let accepted: Vec<String> = OAuthGrant::ALL
                .iter()
                .map(|grant| format!("`{grant}`"))
                .collect();
            let list = match accepted.split_last() {
                Some((last, [])) => last.clone(),
                Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                None => String::new(),
            };
            o.problem(Code::InvalidField, field, format!("`grant` must be {list}"));
        }
    }
    r.problems.append(&mut o.problems);
    Some(oauth)
}

/// Reads a server's optional `era`, shared by every format: absent or
/// `null` is [`ProtocolEra::Auto`]; names are matched exactly, as
/// [`ProtocolEra::as_str`] spells them. Anything else is `invalid_era`,
/// naming the value (shortened), the accepted names and the field.
fn read_era(r: &mut json::FieldReader<'_>) -> ProtocolEra {
    let (kind, found) = match r.raw("era") {
        None | Some(Json::Null) => return ProtocolEra::default(),
        Some(Json::String(name)) => match ProtocolEra::from_name(name) {
            Some(era) => return era,
            None => ("", format!("`{}`", shorten(name))),
        },
        Some(other) => ("a string: ", other.type_name().to_owned()),
    };
    let accepted: Vec<String> = ProtocolEra::ALL
        .iter()
        .map(|era| format!("`{era}`"))
        .collect();
    let field = r.field_path("era");
    r.problem(
        Code::InvalidEra,
        field,
        format!(
            "`era` must be {kind}{} or {}, not {found}",
            accepted[..accepted.len() - 1].join(", "),
            accepted[accepted.len() - 1],
        ),
    );
    ProtocolEra::default()
}

/// At most [`SHORTENED_CHARS`] characters of `text`, control characters
/// escaped, with `…` when something was cut: a misspelled name fits in a
/// message, a pasted paragraph does not.
fn shorten(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().take(SHORTENED_CHARS) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if text.chars().nth(SHORTENED_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// How many characters of a misspelled name a message quotes.
const SHORTENED_CHARS: usize = 24;

/// Reads a transport name as the formats spell it.
fn transport_kind_from_name(name: &str) -> Option<TransportKind> {
    match name.to_ascii_lowercase().as_str() {
        "stdio" => Some(TransportKind::Stdio),
        "http" | "streamable-http" | "streamable_http" | "streamablehttp" => {
            Some(TransportKind::Http)
        }
        "sse" => Some(TransportKind::Sse),
        _ => None,
    }
}

/// The error of a server entry that is not an object: `what` names it as
/// the format does (`a server entry`, `a context server`).
fn entry_not_an_object(name: &str, path: &str, what: &str, value: &Json) -> EntryError {
    let server = Some(name.to_owned());
    EntryError::new(
        server.clone(),
        vec![Diagnostic::new(
            Code::InvalidField,
            server,
            path,
            format!("{what} must be an object, not {}", value.type_name()),
        )],
    )
}

/// Replaces every entry whose id occurs more than once with one
/// `duplicate_id` error at the first occurrence: which definition was meant
/// is unknowable, and guessing would connect the wrong server.
fn reject_duplicate_ids(entries: Vec<(String, ParsedEntry)>, what: &str) -> Vec<ParsedEntry> {
    let id_of = |entry: &ParsedEntry| -> Option<String> {
        match entry {
            Ok(config) => Some(config.id.clone()),
            Err(error) => error.server.clone(),
        }
    };
    let ids: Vec<Option<String>> = entries.iter().map(|(_, entry)| id_of(entry)).collect();
    let mut out = Vec::with_capacity(entries.len());
    for (index, (path, entry)) in entries.into_iter().enumerate() {
        let Some(id) = &ids[index] else {
            out.push(entry);
            continue;
        };
        let count = ids
            .iter()
            .filter(|other| other.as_ref() == Some(id))
            .count();
        if count == 1 {
            out.push(entry);
        } else if ids[..index].iter().all(|other| other.as_ref() != Some(id)) {
            out.push(Err(EntryError::new(
                Some(id.clone()),
                vec![Diagnostic::new(
                    Code::DuplicateId,
                    Some(id.clone()),
                    path,
                    format!("{what} `{id}` is defined {count} times in this file; keep one"),
                )],
            )));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortened_names_are_bounded_and_on_one_line() {
        assert_eq!(shorten("modern"), "modern");
        assert_eq!(shorten("a\nb\u{7}c"), "a\\nb\\u{7}c");
        let long = "é".repeat(SHORTENED_CHARS + 1);
        assert_eq!(shorten(&long), format!("{}…", "é".repeat(SHORTENED_CHARS)));
        assert_eq!(
            shorten(&long[..2 * SHORTENED_CHARS]),
            "é".repeat(SHORTENED_CHARS)
        );
    }

    #[test]
    fn every_format_reads_every_era_and_refuses_others_with_invalid_era() {
        let documents = |era: &str| {
            [
                format!(r#"{{"mcpServers": {{"s": {{"command": "c", "era": {era}}}}}}}"#),
                format!(
                    r#"{{"servers": {{"s": {{"type": "http", "url": "https://e.com", "era": {era}}}}}}}"#
                ),
                format!(
                    r#"{{"version": 1, "servers": [{{"id": "s", "era": {era}, "transport": {{"type": "stdio", "command": "c"}}}}]}}"#
                ),
            ]
        };
        for era in ProtocolEra::ALL {
            for text in documents(&format!("\"{era}\"")) {
                let doc = parse_document(&text, None).unwrap();
                assert_eq!(doc.servers().next().map(|s| s.era), Some(era), "{text}");
            }
        }
        for text in documents("\"classic\"") {
            let doc = parse_document(&text, None).unwrap();
            let error = doc.errors().next().expect(&text);
            assert_eq!(error.code(), "invalid_era", "{text}");
            let message = &error.diagnostics[0].message;
            for part in ["`classic`", "`auto`", "`modern`", "`legacy`", "`era`"] {
                assert!(message.contains(part), "{part}: {message}");
            }
            assert!(error.diagnostics[0].field.ends_with("era"), "{error:?}");
        }
    }

    /// A build without `host-configs` has no TOML or YAML reader: Codex's
    /// and goose's files are refused with a code naming the feature, while
    /// `mcpServers` files (comments and all) and the store still read.
    #[cfg(not(feature = "host-configs"))]
    #[test]
    fn without_host_configs_codex_and_goose_are_format_disabled() {
        for (format, text) in [
            (Format::Codex, "[mcp_servers.fs]\ncommand = \"mcp-fs\"\n"),
            (Format::Goose, "extensions:\n  fs:\n    cmd: mcp-fs\n"),
        ] {
            let Err(error) = parse_document(text, Some(format)) else {
                panic!("{format:?} was read without its parser");
            };
            assert_eq!(error, DocumentError::FormatDisabled { format });
            assert_eq!(error.code(), "format_disabled");
            assert!(error.to_string().contains("`host-configs`"), "{error}");
        }
        let text = "{\n  // a comment\n  \"mcpServers\": {\"fs\": {\"command\": \"mcp-fs\"},},\n}";
        let doc = parse_document(text, None).unwrap();
        assert_eq!(doc.format, Some(Format::McpServers));
        assert_eq!(doc.servers().count(), 1);
        let store = r#"{"version": 1, "servers": []}"#;
        assert_eq!(
            parse_document(store, None).unwrap().format,
            Some(Format::StoreV1)
        );
    }
}

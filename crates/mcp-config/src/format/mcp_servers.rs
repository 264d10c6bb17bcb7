//! The map formats, servers keyed by name: `{"mcpServers": {...}}` (Claude Desktop, `.mcp.json`, Claude Code, Cursor, Windsurf, Gemini CLI, Cline) and VS Code's `{"servers": {...}}`.
//!
//! Every host spells an entry much the same way (`command`, `args`, `env`,
//! `url`, `headers`); the [`Flavor`] says what differs: the key of the
//! server map, the spelling of references, the unit of `timeout`, and the
//! host's own fields.

use crate::diagnostic::{Code, Diagnostic};
use crate::json::{FieldReader, Json, join_index, join_key};
use crate::model::{
    EnvHeader, HttpConfig, InputPrompt, OAuthConfig, SecretEntry, ServerConfig, StdioConfig,
    TransportConfig, TransportKind,
};
use crate::origins::Origins;

use super::host::{Ignored, TextRules};
use super::{
    DocumentError, EntryError, Format, ParsedDocument, ParsedEntry, ReadContext,
    entry_not_an_object, read_era, read_oauth, reject_duplicate_ids, top_level_not_object,
    transport_kind_from_name,
};

/// Which host's spelling of the map format a document uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flavor {
    /// Claude Desktop, `.mcp.json` and AI-Zen: our own fields, `timeout` in ms.
    McpServers,
    /// VS Code: `servers`, `inputs`, `${env:NAME}`, `${workspaceFolder}`.
    VsCode,
    /// Claude Code's `~/.claude.json`: `mcpServers` at the top and per project.
    ClaudeCode,
    /// Cursor: `${env:NAME}`, `${userHome}`, `${workspaceFolder}`.
    Cursor,
    /// Windsurf: `serverUrl`, `${env:NAME}`.
    Windsurf,
    /// Gemini CLI: `httpUrl` / `url`, `timeout` per request, `$NAME`.
    Gemini,
    /// Cline: `timeout` in seconds per request, `url` alone is SSE.
    Cline,
}

impl Flavor {
    fn format(self) -> Format {
        match self {
            Flavor::McpServers => Format::McpServers,
            Flavor::VsCode => Format::VsCode,
            Flavor::ClaudeCode => Format::ClaudeCode,
            Flavor::Cursor => Format::Cursor,
            Flavor::Windsurf => Format::Windsurf,
            Flavor::Gemini => Format::Gemini,
            Flavor::Cline => Format::Cline,
        }
    }

    fn servers_key(self) -> &'static str {
        match self {
            Flavor::VsCode => "servers",
            _ => "mcpServers",
        }
    }

    /// The host's name, for messages; none for the shared format, whose
    /// extra fields are nobody's in particular.
    fn host(self) -> &'static str {
        match self {
            Flavor::McpServers => "",
            Flavor::VsCode => "VS Code",
            Flavor::ClaudeCode => "Claude Code",
            Flavor::Cursor => "Cursor",
            Flavor::Windsurf => "Windsurf",
            Flavor::Gemini => "Gemini CLI",
            Flavor::Cline => "Cline",
        }
    }

    fn text_rules(self, context: &ReadContext) -> TextRules {
        let mut rules = TextRules::new(context);
        match self {
            Flavor::VsCode => {
                rules.env_prefix = true;
                rules.host_variables = true;
                rules.inputs = true;
            }
            Flavor::Cursor => {
                rules.env_prefix = true;
                rules.host_variables = true;
            }
            Flavor::Windsurf => {
                rules.env_prefix = true;
                rules.file_reference = Some("${file:");
            }
            Flavor::Gemini => rules.bare_dollar = true,
            Flavor::McpServers | Flavor::ClaudeCode | Flavor::Cline => {}
        }
        rules
    }

    /// The kind a URL means when no `type` says.
    fn url_kind(self) -> TransportKind {
        match self {
            // Gemini's `url` is the legacy SSE transport (`httpUrl` is
            // Streamable HTTP); Cline reads a bare `url` as SSE.
            Flavor::Gemini | Flavor::Cline => TransportKind::Sse,
            _ => TransportKind::Http,
        }
    }

    /// What a note about an ignored field adds, for fields with a known meaning.
    fn note(self, key: &str) -> Option<&'static str> {
        match (self, key) {
            (Flavor::Gemini, "trust") => Some(
                "Gemini CLI skips its confirmations for a trusted server; tool calls are \
                 treated as for any other server",
            ),
            (Flavor::Cline, "autoApprove" | "alwaysAllow") => Some(
                "Cline runs these tools without asking; here they are treated as any other tool",
            ),
            (Flavor::VsCode, "dev") => {
                Some("VS Code's development mode (watch, debug) is not run here")
            }
            _ => None,
        }
    }
}

/// Entry fields that only a stdio server has (validation: "fields that
/// belong to the other transport").
const STDIO_FIELDS: [&str; 5] = ["command", "args", "env", "envVars", "cwd"];

/// Entry fields that only an HTTP server has, in this flavor.
fn http_fields(flavor: Flavor) -> Vec<&'static str> {
    let mut fields = vec!["url", "headers", "envHeaders", "bearerTokenEnv", "oauth"];
    match flavor {
        Flavor::Windsurf => fields.push("serverUrl"),
        Flavor::Gemini => fields.push("httpUrl"),
        _ => {}
    }
    fields
}

/// Reads a whole document of the map family.
pub(super) fn read(
    root: &Json,
    flavor: Flavor,
    context: &ReadContext,
) -> Result<ParsedDocument, DocumentError> {
    let Some(members) = root.as_object() else {
        return Err(top_level_not_object(root));
    };
    let mut reader = MapReader::new(flavor, context);
    if flavor == Flavor::McpServers && members.iter().any(|(k, _)| k == "servers") {
        reader.warnings.push(Diagnostic::new(
            Code::IgnoredField,
            None,
            "servers",
            "`servers` is ignored because this file has `mcpServers`",
        ));
    }
    if flavor == Flavor::VsCode {
        reader.declared_inputs = Some(read_inputs(root.get("inputs"), &mut reader.warnings));
    }
    if flavor == Flavor::Gemini {
        reader.gemini_lists = GeminiLists::read(root.get("mcp"), &mut reader.warnings);
    }
    let key = flavor.servers_key();
    let servers = servers_object(root.get(key), key)?;
    let mut entries = Vec::new();
    if flavor == Flavor::ClaudeCode {
        let project = project_servers(root, context, &mut entries);
        // The project's entry replaces a user-level one of the same name:
        // Claude Code's own order (local scope over user scope).
        let shadowed = |name: &str| {
            project
                .as_ref()
                .is_some_and(|(_, servers)| servers.iter().any(|(n, _)| n == name))
        };
        for (name, value) in servers.iter().filter(|(name, _)| !shadowed(name)) {
            let path = join_key(key, name);
            entries.push((path.clone(), reader.entry(name, value, &path)));
        }
        if let Some((base, servers)) = project {
            for (name, value) in servers {
                let path = join_key(&base, name);
                entries.push((path.clone(), reader.entry(name, value, &path)));
            }
        }
    } else {
        for (name, value) in servers {
            let path = join_key(key, name);
            entries.push((path.clone(), reader.entry(name, value, &path)));
        }
    }
    let mut warnings = reader.warnings;
    warnings.extend(
        reader
            .ignored
            .into_warnings(flavor.host(), |key| flavor.note(key)),
    );
    Ok(ParsedDocument {
        format: Some(flavor.format()),
        entries: reject_duplicate_ids(entries, "server"),
        warnings,
    })
}

/// The members of the server map at `key`: absent or `null` is none; any
/// other type is not understood, and says so.
pub(super) fn servers_object<'a>(
    value: Option<&'a Json>,
    key: &str,
) -> Result<&'a [(String, Json)], DocumentError> {
    match value {
        None | Some(Json::Null) => Ok(&[]),
        Some(Json::Object(servers)) => Ok(servers),
        Some(other) => Err(DocumentError::Shape {
            path: key.to_owned(),
            message: format!(
                "`{key}` must be an object keyed by server name, not {}",
                other.type_name()
            ),
        }),
    }
}

/// Claude Code's entries for the project being read:
/// `projects.<absolute dir>.mcpServers`, as its written path and members.
/// Other projects' entries are not read. A section of the wrong type is one
/// error entry; the user-level servers still load.
fn project_servers<'a>(
    root: &'a Json,
    context: &ReadContext,
    entries: &mut Vec<(String, ParsedEntry)>,
) -> Option<(String, &'a [(String, Json)])> {
    let dir = context.project_dir.as_ref()?.to_string_lossy().into_owned();
    let mut broken = |path: String, message: String| {
        entries.push((
            path.clone(),
            Err(EntryError::new(
                None,
                vec![Diagnostic::new(Code::InvalidField, None, path, message)],
            )),
        ));
        None
    };
    let projects = match root.get("projects")? {
        Json::Object(projects) => projects,
        Json::Null => return None,
        other => {
            let message = format!(
                "`projects` must be an object keyed by project directory, not {}",
                other.type_name()
            );
            return broken(String::from("projects"), message);
        }
    };
    let project_path = join_key("projects", &dir);
    let project = projects
        .iter()
        .find(|(key, _)| *key == dir)
        .map(|(_, v)| v)?;
    let servers = match project {
        Json::Object(_) => project.get("mcpServers"),
        Json::Null => return None,
        other => {
            let message = format!(
                "the project's settings must be an object, not {}",
                other.type_name()
            );
            return broken(project_path, message);
        }
    };
    let base = join_key(&project_path, "mcpServers");
    match servers_object(servers, "mcpServers") {
        Ok(servers) => Some((base, servers)),
        Err(DocumentError::Shape { message, .. }) => broken(base, message),
        Err(error) => broken(base, error.to_string()),
    }
}

/// Reads VS Code's `inputs`: `[{"type": "promptString", "id", "description",
/// "password", "default"}]`. Malformed items are warnings; a server that
/// references one fails with `undeclared_input`.
fn read_inputs(inputs: Option<&Json>, warnings: &mut Vec<Diagnostic>) -> Vec<InputPrompt> {
    let items = match inputs {
        None | Some(Json::Null) => return Vec::new(),
        Some(Json::Array(items)) => items,
        Some(other) => {
            warnings.push(Diagnostic::new(
                Code::InvalidField,
                None,
                "inputs",
                format!(
                    "`inputs` must be an array of input objects, not {}",
                    other.type_name()
                ),
            ));
            return Vec::new();
        }
    };
    let mut out: Vec<InputPrompt> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let path = join_index("inputs", index);
        let Some(members) = item.as_object() else {
            warnings.push(Diagnostic::new(
                Code::InvalidField,
                None,
                path,
                format!("an input must be an object, not {}", item.type_name()),
            ));
            continue;
        };
        let mut r = FieldReader::new(members, path, None);
        let id = r.required_string("id");
        let mut prompt = InputPrompt::new(id.clone().unwrap_or_default());
        prompt.description = r.string("description");
        prompt.password = r.bool("password").unwrap_or(false);
        prompt.default = r.string("default");
        let kind = r.string("type");
        warnings.append(&mut r.problems);
        // A `pickString` (or any other kind) is asked as typed text: its
        // `options` have no equivalent here.
        if let (Some(kind), Some(id)) = (kind.filter(|k| k != "promptString"), &id) {
            let _ = r.raw("options");
            warnings.push(Diagnostic::new(
                Code::IgnoredField,
                None,
                r.field_path("type"),
                format!(
                    "input `{id}` is a `{}` input; it is asked for as typed text, and its \
                     `options` are not offered",
                    super::shorten(&kind)
                ),
            ));
        }
        for key in r.unread() {
            warnings.push(Diagnostic::new(
                Code::IgnoredField,
                None,
                r.field_path(key),
                format!("`{key}` of a VS Code input has no equivalent here and was ignored"),
            ));
        }
        if let Some(id) = id {
            if out.iter().any(|seen| seen.id == id) {
                warnings.push(Diagnostic::new(
                    Code::InvalidField,
                    None,
                    r.field_path("id"),
                    format!("input `{id}` is declared more than once; the first is used"),
                ));
            } else {
                out.push(prompt);
            }
        }
    }
    out
}

/// Gemini CLI's top-level `mcp.allowed` / `mcp.excluded` server lists.
#[derive(Debug, Default)]
struct GeminiLists {
    allowed: Option<Vec<String>>,
    excluded: Vec<String>,
}

impl GeminiLists {
    fn read(mcp: Option<&Json>, warnings: &mut Vec<Diagnostic>) -> Self {
        let Some(Json::Object(members)) = mcp else {
            return GeminiLists::default();
        };
        let mut r = FieldReader::new(members, "mcp", None);
        let allowed = r.has("allowed").then(|| r.string_array("allowed"));
        let excluded = r.string_array("excluded");
        warnings.append(&mut r.problems);
        GeminiLists { allowed, excluded }
    }

    fn enabled(&self, name: &str) -> bool {
        let allowed = self
            .allowed
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|n| n == name));
        allowed && !self.excluded.iter().any(|n| n == name)
    }
}

/// Reads the entries of one document.
struct MapReader {
    flavor: Flavor,
    rules: TextRules,
    declared_inputs: Option<Vec<InputPrompt>>,
    gemini_lists: GeminiLists,
    warnings: Vec<Diagnostic>,
    ignored: Ignored,
}

impl MapReader {
    fn new(flavor: Flavor, context: &ReadContext) -> Self {
        MapReader {
            flavor,
            rules: flavor.text_rules(context),
            declared_inputs: None,
            gemini_lists: GeminiLists::default(),
            warnings: Vec::new(),
            ignored: Ignored::default(),
        }
    }

    fn entry(&mut self, name: &str, value: &Json, path: &str) -> ParsedEntry {
        let Some(members) = value.as_object() else {
            return Err(entry_not_an_object(name, path, "a server entry", value));
        };
        let flavor = self.flavor;
        let mut e = Entry::new(
            FieldReader::new(members, path, Some(name.to_owned())),
            &self.rules,
        );
        let (kind, url_key) = read_kind(&mut e.r, flavor);
        let description = e.r.string("description");
        let (timeout_ms, call_timeout_ms) = match flavor {
            Flavor::Gemini => (None, e.r.millis("timeout")),
            Flavor::Cline => (None, seconds(&mut e.r, "timeout")),
            _ => (e.r.millis("timeout"), None),
        };
        if timeout_ms.is_some() {
            e.origins.insert("timeout", e.r.field_path("timeout"));
        }
        let era = read_era(&mut e.r);
        let disabled = e.r.bool("disabled").unwrap_or(false);
        let mut tools = crate::model::ToolFilter::default();
        if flavor == Flavor::Gemini {
            if e.r.has("includeTools") {
                tools.include = Some(e.r.string_array("includeTools"));
            }
            tools.exclude = e.r.string_array("excludeTools");
            if e.r.has("tcp") {
                let field = e.r.field_path("tcp");
                e.r.problem(
                    Code::UnknownTransport,
                    field,
                    "Gemini CLI's `tcp` (WebSocket) transport is not supported; use `httpUrl`",
                );
            }
        }
        if flavor == Flavor::Windsurf {
            tools.exclude = e.r.string_array("disabledTools");
        }
        if matches!(flavor, Flavor::VsCode | Flavor::Cursor) && e.r.has("envFile") {
            self.warnings.push(Diagnostic::new(
                Code::IgnoredEnvFile,
                Some(name.to_owned()),
                e.r.field_path("envFile"),
                "`envFile` is not supported and was ignored; list the variables in `env`",
            ));
        }
        let transport = match kind {
            Some(TransportKind::Stdio) => {
                let mut stdio = StdioConfig::new(e.text("command", "transport.command"));
                stdio.args = e.texts("args", "transport.args");
                stdio.env = e.secret_map("env", "transport.env");
                stdio.env_passthrough = e.r.string_array("envVars");
                let env_vars = e.r.field_path("envVars");
                for index in 0..stdio.env_passthrough.len() {
                    e.origins.insert(
                        join_index("transport.envVars", index),
                        join_index(&env_vars, index),
                    );
                }
                stdio.cwd = e
                    .optional_text("cwd", "transport.cwd")
                    .filter(|cwd| !cwd.is_empty());
                Some(TransportConfig::Stdio(stdio))
            }
            Some(kind @ (TransportKind::Http | TransportKind::Sse)) => {
                let mut http = HttpConfig::new(e.text(url_key, "transport.url"));
                http.headers = e.secret_map("headers", "transport.headers");
                let env_headers_path = e.r.field_path("envHeaders");
                http.env_headers =
                    e.r.string_map("envHeaders")
                        .into_iter()
                        .enumerate()
                        .map(|(index, (header, var))| {
                            e.origins.insert(
                                format!("transport.envHeaders[{index}]"),
                                join_key(&env_headers_path, &header),
                            );
                            EnvHeader::new(header, var)
                        })
                        .collect();
                http.bearer_token_env = e.r.string("bearerTokenEnv").filter(|v| !v.is_empty());
                e.origins
                    .insert("transport.bearerTokenEnv", e.r.field_path("bearerTokenEnv"));
                http.oauth = read_oauth(&mut e.r);
                if let Some(oauth) = &http.oauth {
                    e.oauth_origins(oauth.scopes.len());
                }
                if flavor == Flavor::Cursor && http.oauth.is_none() {
                    http.oauth = cursor_auth(&mut e);
                }
                Some(if kind == TransportKind::Sse {
                    TransportConfig::Sse(http)
                } else {
                    TransportConfig::Http(http)
                })
            }
            None => None,
        };
        let foreign: Vec<&str> = match kind {
            Some(TransportKind::Stdio) => http_fields(flavor),
            Some(_) => STDIO_FIELDS.to_vec(),
            None => Vec::new(),
        };
        let mut misplaced_fields = Vec::new();
        for key in foreign.into_iter().filter(|key| e.r.has(key)) {
            let store = match key {
                "serverUrl" | "httpUrl" => String::from("transport.url"),
                other => format!("transport.{other}"),
            };
            if !misplaced_fields.contains(&store) {
                e.origins.insert(store.clone(), e.r.field_path(key));
                misplaced_fields.push(store);
            }
        }
        let inputs = self.inputs_of(&mut e);
        let mut config = e.finish(name, path, transport, &mut self.ignored)?;
        config.enabled = !disabled && (flavor != Flavor::Gemini || self.gemini_lists.enabled(name));
        config.description = description;
        config.timeout_ms = timeout_ms;
        config.call_timeout_ms = call_timeout_ms;
        config.tools = tools;
        config.era = era;
        config.inputs = inputs;
        config.misplaced_fields = misplaced_fields;
        Ok(config)
    }

    /// The declared inputs the entry's strings reference, in the order
    /// first referenced; an undeclared one is `undeclared_input`.
    fn inputs_of(&self, e: &mut Entry<'_, '_>) -> Vec<InputPrompt> {
        let Some(declared) = &self.declared_inputs else {
            return Vec::new();
        };
        let mut out: Vec<InputPrompt> = Vec::new();
        for (id, field) in std::mem::take(&mut e.input_refs) {
            if out.iter().any(|prompt| prompt.id == id) {
                continue;
            }
            match declared.iter().find(|prompt| prompt.id == id) {
                Some(prompt) => out.push(prompt.clone()),
                None => e.r.problem(
                    Code::UndeclaredInput,
                    field,
                    format!(
                        "`${{input:{id}}}` names an input that `inputs` does not declare; add \
                         {{\"type\": \"promptString\", \"id\": \"{id}\"}} to `inputs`"
                    ),
                ),
            }
        }
        out
    }
}

/// One entry being read: its fields, where each landed, and the inputs its
/// strings reference.
pub(super) struct Entry<'a, 'r> {
    pub(super) r: FieldReader<'a>,
    pub(super) origins: Origins,
    rules: &'r TextRules,
    /// (input id, written path of the string referencing it).
    input_refs: Vec<(String, String)>,
}

impl<'a, 'r> Entry<'a, 'r> {
    pub(super) fn new(r: FieldReader<'a>, rules: &'r TextRules) -> Self {
        Entry {
            r,
            origins: Origins::new(),
            rules,
            input_refs: Vec::new(),
        }
    }

    /// Ends reading one entry at `path`: the fields nobody read are noted
    /// as ignored (only when the transport is known: an entry whose
    /// transport is unknown was not read through, and the entry itself is
    /// the problem), `id`, `name` and `transport` are placed at `path`, and
    /// the server is built on `transport` with those origins, or the
    /// entry's problems are its error.
    pub(super) fn finish(
        self,
        name: &str,
        path: &str,
        transport: Option<TransportConfig>,
        ignored: &mut Ignored,
    ) -> ParsedEntry {
        if transport.is_some() {
            ignored.note_unread(&self.r, name);
        }
        let Entry { r, mut origins, .. } = self;
        origins.insert("id", path);
        origins.insert("name", path);
        origins.insert("transport", path);
        match transport {
            Some(transport) if r.problems.is_empty() => {
                let mut config = ServerConfig::new(name, transport);
                config.origins = origins;
                Ok(config)
            }
            _ => Err(EntryError::new(Some(name.to_owned()), r.problems)),
        }
    }

    /// Records where the fields of an `oauth` object spelled as ours
    /// (`clientId`, `scopes`, ...) came from.
    pub(super) fn oauth_origins(&mut self, scopes: usize) {
        let base = self.r.field_path("oauth");
        for key in [
            "clientId",
            "clientSecretEnv",
            "clientMetadataUrl",
            "redirectPort",
            "grant",
            "assertionFile",
            "assertionEnv",
        ] {
            self.origins
                .insert(format!("transport.oauth.{key}"), join_key(&base, key));
        }
        let scopes_path = join_key(&base, "scopes");
        for index in 0..scopes {
            self.origins.insert(
                format!("transport.oauth.scopes[{index}]"),
                join_index(&scopes_path, index),
            );
        }
        self.origins.insert("transport.oauth", base);
    }

    /// `text` in our reference syntax; a problem is reported at `field`.
    pub(super) fn convert(&mut self, text: String, field: &str) -> String {
        match self.rules.apply(&text) {
            Ok((converted, inputs)) => {
                for id in inputs {
                    self.input_refs.push((id, field.to_owned()));
                }
                converted
            }
            Err(problem) => {
                self.r
                    .problem(problem.code, field.to_owned(), problem.message);
                text
            }
        }
    }

    /// The string at `key` (empty when absent), converted, recorded as
    /// the origin of `store`.
    pub(super) fn text(&mut self, key: &str, store: &str) -> String {
        self.optional_text(key, store).unwrap_or_default()
    }

    pub(super) fn optional_text(&mut self, key: &str, store: &str) -> Option<String> {
        let field = self.r.field_path(key);
        self.origins.insert(store, field.clone());
        let value = self.r.string(key)?;
        Some(self.convert(value, &field))
    }

    /// The array of strings at `key`, converted; item `i` is recorded as
    /// the origin of `store[i]`.
    pub(super) fn texts(&mut self, key: &str, store: &str) -> Vec<String> {
        let base = self.r.field_path(key);
        let items = self.r.string_array(key);
        items
            .into_iter()
            .enumerate()
            .map(|(index, item)| {
                let field = join_index(&base, index);
                self.origins.insert(join_index(store, index), field.clone());
                self.convert(item, &field)
            })
            .collect()
    }

    /// The object of string values at `key` (env, headers), values
    /// converted; entry `i` is recorded as the origin of `store[i]`.
    pub(super) fn secret_map(&mut self, key: &str, store: &str) -> Vec<SecretEntry> {
        let base = self.r.field_path(key);
        let members = self.r.string_map(key);
        members
            .into_iter()
            .enumerate()
            .map(|(index, (name, value))| {
                let field = join_key(&base, &name);
                self.origins.insert(join_index(store, index), field.clone());
                let value = self.convert(value, &field);
                SecretEntry::new(name, value)
            })
            .collect()
    }
}

/// Cursor's static OAuth client, `"auth": {"CLIENT_ID", "CLIENT_SECRET",
/// "scopes"}`. The secret must be a `${env:NAME}` reference, read as
/// `clientSecretEnv`; a literal secret is refused.
fn cursor_auth(e: &mut Entry<'_, '_>) -> Option<OAuthConfig> {
    let field = e.r.field_path("auth");
    let members = match e.r.raw("auth")? {
        Json::Null => return None,
        Json::Object(members) => members,
        other => {
            let message = format!("`auth` must be an object, not {}", other.type_name());
            e.r.problem(Code::InvalidField, field, message);
            return None;
        }
    };
    let mut a = FieldReader::new(members, field.clone(), e.r.server());
    let mut oauth = OAuthConfig::new();
    oauth.client_id = a.string("CLIENT_ID");
    oauth.client_secret_env = secret_reference(&mut a, "CLIENT_SECRET", "${env:");
    oauth.scopes = a.string_array("scopes");
    e.origins
        .insert("transport.oauth.clientId", a.field_path("CLIENT_ID"));
    e.origins.insert(
        "transport.oauth.clientSecretEnv",
        a.field_path("CLIENT_SECRET"),
    );
    let scopes = a.field_path("scopes");
    for index in 0..oauth.scopes.len() {
        e.origins.insert(
            format!("transport.oauth.scopes[{index}]"),
            join_index(&scopes, index),
        );
    }
    e.origins.insert("transport.oauth", field);
    e.r.problems.append(&mut a.problems);
    Some(oauth)
}

/// The variable the client secret at `key` names, written as one
/// environment reference opening with `opening` (`${env:` or `{env:`). Any
/// other text is a literal secret: refused with `oauth_literal_secret`,
/// never kept and never quoted.
pub(super) fn secret_reference(
    o: &mut FieldReader<'_>,
    key: &str,
    opening: &str,
) -> Option<String> {
    let secret = o.string(key)?;
    let var = env_reference(&secret, opening);
    if var.is_none() {
        let field = o.field_path(key);
        o.problem(
            Code::OAuthLiteralSecret,
            field,
            format!(
                "a client secret cannot be written in a configuration file; put it in an \
                 environment variable and write `{opening}NAME}}`"
            ),
        );
    }
    var
}

/// The variable a string that is exactly one environment reference names:
/// `${env:NAME}` (opening `${env:`) or `{env:NAME}` (opening `{env:`).
pub(super) fn env_reference(text: &str, opening: &str) -> Option<String> {
    let name = text.trim().strip_prefix(opening)?.strip_suffix('}')?.trim();
    let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    plain.then(|| name.to_owned())
}

/// An optional whole number of seconds, as milliseconds.
fn seconds(r: &mut FieldReader<'_>, key: &str) -> Option<u64> {
    match r.raw(key)? {
        Json::Null => None,
        Json::Number(n) if n.as_u64().is_some() => n.as_u64().map(|s| s.saturating_mul(1000)),
        other => {
            let field = r.field_path(key);
            let found = if matches!(other, Json::Number(_)) {
                String::from("a negative or fractional number")
            } else {
                other.type_name().to_owned()
            };
            r.problem(
                Code::InvalidField,
                field,
                format!("`{key}` must be a whole number of seconds, not {found}"),
            );
            None
        }
    }
}

/// Decides the transport, and which key holds the URL: `type`,
/// `transport` or `transportType` when given (they must agree), else
/// `command` means stdio and a URL key means HTTP (or SSE, as the flavor
/// reads a bare `url`).
fn read_kind(r: &mut FieldReader<'_>, flavor: Flavor) -> (Option<TransportKind>, &'static str) {
    let url_key = url_key(r, flavor);
    let mut declared: Vec<(&str, TransportKind)> = Vec::new();
    let mut unknown = false;
    for key in ["type", "transport", "transportType"] {
        let Some(name) = r.string(key) else {
            unknown |= r.has(key) && !matches!(r.raw(key), Some(Json::Null));
            continue;
        };
        match transport_kind_from_name(&name) {
            Some(kind) => declared.push((key, kind)),
            None => {
                unknown = true;
                let field = r.field_path(key);
                r.problem(
                    Code::UnknownTransport,
                    field,
                    format!(
                        "unknown transport `{}`; use `stdio`, `http` or `sse`",
                        super::shorten(&name)
                    ),
                );
            }
        }
    }
    if unknown {
        return (None, url_key);
    }
    let kind = match declared.as_slice() {
        [] if r.has("command") => Some(TransportKind::Stdio),
        // Reported as `unknown_transport` by the Gemini reader.
        [] if flavor == Flavor::Gemini && r.has("tcp") => None,
        [] if r.has(url_key) => Some(match (flavor, url_key) {
            (Flavor::Gemini, "httpUrl") => TransportKind::Http,
            _ => flavor.url_kind(),
        }),
        [] => {
            let field = r.path().to_owned();
            let url = match flavor {
                Flavor::Windsurf => "`serverUrl`",
                Flavor::Gemini => "`httpUrl` (or `url` for SSE)",
                _ => "`url`",
            };
            r.problem(
                Code::MissingTransport,
                field,
                format!("set `command` for a stdio server or {url} for an HTTP server"),
            );
            None
        }
        [(_, first), rest @ ..] => {
            if let Some((key, other)) = rest.iter().find(|(_, kind)| kind != first) {
                let field = r.field_path(key);
                let (first_key, _) = declared[0];
                r.problem(
                    Code::ConflictingTransport,
                    field,
                    format!(
                        "`{first_key}` says {} but `{key}` says {}; keep one",
                        first.as_str(),
                        other.as_str()
                    ),
                );
                return (None, url_key);
            }
            Some(*first)
        }
    };
    (kind, url_key)
}

/// Which key holds the URL: Windsurf's `serverUrl`, Gemini's `httpUrl`, or
/// `url`. Two of them at once is a problem: which one was meant is unknowable.
fn url_key(r: &mut FieldReader<'_>, flavor: Flavor) -> &'static str {
    let other = match flavor {
        Flavor::Windsurf => "serverUrl",
        Flavor::Gemini => "httpUrl",
        _ => return "url",
    };
    let (has_other, has_url) = (r.has(other), r.has("url"));
    if has_other && has_url {
        let field = r.field_path("url");
        r.problem(
            Code::ConflictingTransport,
            field,
            format!("both `{other}` and `url` are set; keep one"),
        );
    }
    if has_other || !has_url { other } else { "url" }
}

//! Discovery: collecting servers from the user file, the project file and host sources, with source metadata.
//!
//! Discovery:
//!
//! - Sources are read in order: the user-level file, the project-level file
//!   (`<project>/.mcp.json`), then every source the host added through
//!   [`ConfigSource`] (for other applications' files, see
//!   [`crate::HostSources`]). Every entry keeps its [`SourceMeta`] (level,
//!   path, provider label for display, the [`crate::Host`] whose file it is).
//!   Every source looked at is listed in [`DiscoveryReport::sources`] with
//!   what was found there.
//! - With [`DiscoveryOptions::project_configs`] off, project-level sources
//!   are not even read (their files may come from an untrusted checkout).
//! - Precedence: when several sources define the same server id, the one at
//!   the more specific level wins: **project over user over host**, as
//!   Claude Code lets a project's `.mcp.json` override the user's servers.
//!   Between sources of the same level, the one added first wins (for host
//!   files, the order of [`crate::Host::ALL`]). Every losing definition is
//!   reported in [`DiscoveryReport::shadowed`], naming the source that
//!   shadows it. A losing definition identical to the winner (same
//!   transport, command, args, env, cwd, URL, headers, OAuth settings, era,
//!   tool filter, VS Code inputs and enabled flag; the display name, description and
//!   timeouts do not count) is not a shadow: it is the same server
//!   configured in several places, listed once with every other source in
//!   [`DiscoveredServer::also_in`]; losers identical to each other are one
//!   shadowed definition, the others in its entry's `also_in`. An entry
//!   that failed to parse still takes part when its name is known, so a
//!   broken project override fails loudly instead of silently falling back.
//! - Disabled entries are set aside ([`DiscoveryEntry::Disabled`]) before
//!   anything could connect to them.
//! - A [`NativeHook`] can take entries the host serves natively out of the
//!   list (Exa case, see [`ExaHook`]), receiving the entry and
//!   its API key.
//! - Every remaining server is validated; an invalid one becomes an error
//!   entry with all its diagnostics.
//! - With a [`TrustGate`] ([`Discovery::trust`]), a valid project server
//!   whose definition the person has not approved becomes
//!   [`DiscoveryEntry::Untrusted`] unless the gate's prompt approves it
//!   (see [`crate::trust`]). Without a gate nothing is held back: a host
//!   that reads project files should set one.
//! - A source that cannot be read at all becomes one synthetic error entry
//!   naming the file. [`Discovery::discover`] itself never fails, so a
//!   host's startup never does either (discovery errors are
//!   best-effort).
//!
//! Discovery reads files synchronously; they are small, but a tokio host
//! should call it from `spawn_blocking`. `${VAR}` references are not
//! resolved here: that happens when a server connects ([`crate::resolve`]).

use std::cmp::Reverse;
use std::fmt;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use mcp_proto::text::ErrorChain;

use crate::diagnostic::{Code, Diagnostic};
use crate::format::{
    DocumentError, Format, ParsedDocument, ParsedEntry, ReadContext, parse_document_with,
};
use crate::host::Host;
use crate::model::{SecretEntry, ServerConfig, TransportConfig};
use crate::secret::Secret;
use crate::trust::{TrustGate, UntrustedServer};
use crate::validate::validate;

/// Which level a source configures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigLevel {
    /// The user's own configuration, for every project.
    User,
    /// A project's configuration (`<project>/.mcp.json`); may be turned off.
    Project,
    /// Servers the host itself supplies (built-in defaults); the user's and
    /// the project's definitions override them.
    Host,
}

impl ConfigLevel {
    /// `user`, `project` or `host`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigLevel::User => "user",
            ConfigLevel::Project => "project",
            ConfigLevel::Host => "host",
        }
    }

    /// Higher wins when two sources define the same id.
    fn precedence(self) -> u8 {
        match self {
            ConfigLevel::Project => 2,
            ConfigLevel::User => 1,
            ConfigLevel::Host => 0,
        }
    }
}

/// Where an entry came from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceMeta {
    /// The level the source configures.
    pub level: ConfigLevel,
    /// The file, when the source is one.
    pub path: Option<PathBuf>,
    /// A name for display, e.g. `Claude Desktop` (`mcp:<server> via <provider>`).
    pub provider_label: String,
    /// The application whose file this is, for another host's file
    /// ([`crate::HostSources`]); `None` for the host's own sources.
    pub host: Option<Host>,
}

impl SourceMeta {
    /// Metadata for a source.
    pub fn new(
        level: ConfigLevel,
        path: Option<PathBuf>,
        provider_label: impl Into<String>,
    ) -> Self {
        SourceMeta {
            level,
            path,
            provider_label: provider_label.into(),
            host: None,
        }
    }

    /// Metadata for another application's file: labelled with the host's
    /// name ([`Host::label`]).
    pub fn for_host(host: Host, level: ConfigLevel, path: impl Into<PathBuf>) -> Self {
        SourceMeta {
            host: Some(host),
            ..SourceMeta::new(level, Some(path.into()), host.label())
        }
    }
}

impl SourceMeta {
    /// The project a project-level source belongs to: the directory that
    /// holds its file or, for a file in a dot-directory of the project
    /// (`.vscode/mcp.json`, `.cursor/mcp.json`, `.zed/settings.json`), that
    /// directory's parent. `None` for the other levels and without a path.
    pub fn project_root(&self) -> Option<&Path> {
        if self.level != ConfigLevel::Project {
            return None;
        }
        let dir = self.path.as_deref()?.parent()?;
        let dotted = dir
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with('.') && name.len() > 1);
        match dir.parent() {
            Some(parent) if dotted => Some(parent),
            _ => Some(dir),
        }
    }

    /// Whether a session working in `workspace` may see this source's
    /// servers: a project's servers only from inside that project (they
    /// come from its checkout, and a session elsewhere must not get them);
    /// servers of every other level from everywhere.
    pub fn visible_from(&self, workspace: &Path) -> bool {
        match self.project_root() {
            Some(project) => workspace.starts_with(project),
            None => true,
        }
    }
}

impl fmt::Display for SourceMeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{} ({})", self.provider_label, path.display()),
            None => f.write_str(&self.provider_label),
        }
    }
}

/// A place servers are configured. Implement it to add a host-specific
/// source (another tool's config file, a settings database, built-ins).
pub trait ConfigSource: fmt::Debug + Send + Sync {
    /// Where this source's entries come from.
    fn meta(&self) -> SourceMeta;

    /// Reads the source. A missing source should return an empty document;
    /// an error here becomes one error entry naming the source.
    fn load(&self) -> Result<ParsedDocument, SourceError>;

    /// Whether the source is there at all (a file source: whether its file
    /// exists), for [`DiscoveryReport::sources`] to tell "not found" from
    /// "found, no servers". Default `true`.
    fn exists(&self) -> bool {
        true
    }
}

/// Why a source could not be read at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The file exists but could not be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The file is not a readable document.
    #[error(transparent)]
    Document(#[from] DocumentError),
    /// A host source's own failure, described for a person.
    #[error("{message}")]
    Other {
        /// What went wrong; must not contain secret values.
        message: String,
    },
}

impl SourceError {
    /// The stable code: `unreadable_source`, or the document error's code.
    pub fn code(&self) -> &'static str {
        match self {
            SourceError::Io { .. } | SourceError::Other { .. } => Code::UnreadableSource.as_str(),
            SourceError::Document(error) => error.code(),
        }
    }

    fn diagnostic_code(&self) -> Code {
        match self {
            SourceError::Io { .. } | SourceError::Other { .. } => Code::UnreadableSource,
            SourceError::Document(DocumentError::Syntax { .. }) => Code::ParseError,
            SourceError::Document(DocumentError::UnsupportedVersion { .. }) => {
                Code::UnsupportedVersion
            }
            SourceError::Document(_) => Code::InvalidDocument,
        }
    }
}

/// A configuration file. A missing file has no servers.
#[derive(Clone, Debug)]
pub struct FileSource {
    meta: SourceMeta,
    path: PathBuf,
    format: Option<Format>,
    context: ReadContext,
}

impl FileSource {
    /// A file at `path`, its format told by its name ([`Format::from_path`])
    /// or, failing that, by its content when read.
    pub fn new(
        path: impl Into<PathBuf>,
        level: ConfigLevel,
        provider_label: impl Into<String>,
    ) -> Self {
        let path = path.into();
        FileSource {
            meta: SourceMeta::new(level, Some(path.clone()), provider_label),
            path,
            format: None,
            context: ReadContext::default(),
        }
    }

    /// Another application's file, labelled with the host's name and read
    /// in the host's format.
    pub fn for_host(
        host: Host,
        level: ConfigLevel,
        path: impl Into<PathBuf>,
        format: Format,
    ) -> Self {
        let path = path.into();
        FileSource {
            meta: SourceMeta::for_host(host, level, path.clone()),
            path,
            format: Some(format),
            context: ReadContext::default(),
        }
    }

    /// Reads the file with `context`: the project and home directory the
    /// host formats need (Claude Code's per-project entries,
    /// `${workspaceFolder}`, `${userHome}`).
    pub fn with_context(mut self, context: ReadContext) -> Self {
        self.context = context;
        self
    }

    /// The format the file is read in; `None`: detected.
    pub fn format(&self) -> Option<Format> {
        self.format
    }

    /// Reads the file in `format` instead of detecting it.
    pub fn with_format(mut self, format: Format) -> Self {
        self.format = Some(format);
        self
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl ConfigSource for FileSource {
    fn meta(&self) -> SourceMeta {
        self.meta.clone()
    }

    fn load(&self) -> Result<ParsedDocument, SourceError> {
        // A host's file is told by its name (Codex's TOML, goose's YAML, ...);
        // any other file by its content.
        let format = self.format.or_else(|| Format::from_path(&self.path));
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Ok(ParsedDocument::empty(format));
            }
            Err(source) => {
                return Err(SourceError::Io {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let text = String::from_utf8(bytes).map_err(|_| SourceError::Io {
            path: self.path.clone(),
            source: io::Error::new(io::ErrorKind::InvalidData, "the file is not valid UTF-8"),
        })?;
        Ok(parse_document_with(&text, format, &self.context)?)
    }

    fn exists(&self) -> bool {
        self.path.exists()
    }
}

/// Discovery's options. Build with `DiscoveryOptions::default()` and set fields.
#[derive(Clone, Debug, PartialEq, Eq, derive_setters::Setters)]
#[non_exhaustive]
pub struct DiscoveryOptions {
    /// Read project-level sources. Default `true`; the
    /// `mcp.enableProjectConfig: false` turns it off.
    pub project_configs: bool,
    /// The file looked up in the project root. Default `.mcp.json`.
    pub project_file_name: String,
}

impl Default for DiscoveryOptions {
    fn default() -> Self {
        DiscoveryOptions {
            project_configs: true,
            project_file_name: String::from(".mcp.json"),
        }
    }
}

/// A server that discovery found, with where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiscoveredServer {
    /// The configuration.
    pub config: ServerConfig,
    /// Its source: the one whose definition is used.
    pub source: SourceMeta,
    /// Other sources holding an identical definition of the same server
    /// (the same server configured in several hosts), in precedence order;
    /// empty when `source` is the only one.
    pub also_in: Vec<SourceMeta>,
}

/// One result of discovery.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DiscoveryEntry {
    /// A valid, enabled server, ready to be resolved and connected.
    Server(DiscoveredServer),
    /// A disabled server: listed, never connected.
    Disabled(DiscoveredServer),
    /// A project server the person has not approved (stable code
    /// `untrusted`, [`UntrustedServer::diagnostic`]): listed with what
    /// approving it means, never connected.
    Untrusted(Box<UntrustedServer>),
    /// An entry that could not be used, or a source that could not be read.
    Error {
        /// The source the problem is in.
        source: SourceMeta,
        /// The server, when known; `None` for a source that failed whole.
        server: Option<String>,
        /// Every problem found.
        diagnostics: Vec<Diagnostic>,
    },
}

impl DiscoveryEntry {
    /// The server id this entry is about, if known.
    pub fn server_id(&self) -> Option<&str> {
        match self {
            DiscoveryEntry::Server(server) | DiscoveryEntry::Disabled(server) => {
                Some(&server.config.id)
            }
            DiscoveryEntry::Untrusted(untrusted) => Some(&untrusted.server.config.id),
            DiscoveryEntry::Error { server, .. } => server.as_deref(),
        }
    }

    /// The entry's source.
    pub fn source(&self) -> &SourceMeta {
        match self {
            DiscoveryEntry::Server(server) | DiscoveryEntry::Disabled(server) => &server.source,
            DiscoveryEntry::Untrusted(untrusted) => &untrusted.server.source,
            DiscoveryEntry::Error { source, .. } => source,
        }
    }
}

/// A definition that lost to another, different definition of the same id:
/// `entry` (from [`Shadowed::source`]) is shadowed by the definition in
/// `winner`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Shadowed {
    /// The server id.
    pub id: String,
    /// The source whose definition is used instead: the one that shadows.
    pub winner: SourceMeta,
    /// The definition that is not used; when other sources hold the same
    /// definition, they are in its [`DiscoveredServer::also_in`].
    pub entry: DiscoveryEntry,
}

impl Shadowed {
    /// The source of the definition that is not used: the shadowed one.
    pub fn source(&self) -> &SourceMeta {
        self.entry.source()
    }
}

impl fmt::Display for Shadowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` in {} is shadowed by the definition in {}",
            self.id,
            self.source(),
            self.winner
        )
    }
}

/// What discovery found in one source it looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceReport {
    /// The source.
    pub source: SourceMeta,
    /// What was found there.
    pub status: SourceStatus,
}

/// What one source held, for a listing of every source looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SourceStatus {
    /// The source is there and was read: `servers` entries (valid or not,
    /// before precedence).
    Found {
        /// How many server entries it holds.
        servers: usize,
    },
    /// The source is not there (no such file).
    NotFound,
    /// The source is there but could not be read.
    Error {
        /// The stable code (see [`SourceError::code`]).
        code: &'static str,
        /// What went wrong, for a person; no secret.
        message: String,
    },
    /// Not read: a project-level source with
    /// [`DiscoveryOptions::project_configs`] off.
    Skipped,
}

/// A warning about something a source held but that is not used.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceWarning {
    /// The source.
    pub source: SourceMeta,
    /// What was ignored.
    pub diagnostic: Diagnostic,
}

/// What a [`NativeHook`] takes from an entry it claims.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NativeClaim {
    /// Who serves it natively, e.g. `exa`.
    pub provider: String,
    /// The API key found in the entry, if any. It is the configured text,
    /// which may contain `${VAR}` references: resolve it with
    /// [`crate::expand`] before use.
    pub api_key: Option<Secret>,
}

impl NativeClaim {
    /// A claim.
    pub fn new(provider: impl Into<String>, api_key: Option<Secret>) -> Self {
        NativeClaim {
            provider: provider.into(),
            api_key,
        }
    }
}

/// A server taken out of discovery because the host serves it natively.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NativeServer {
    /// The entry as configured.
    pub server: DiscoveredServer,
    /// What the hook extracted.
    pub claim: NativeClaim,
}

/// Lets a host take entries it serves natively out of MCP discovery.
pub trait NativeHook: fmt::Debug + Send + Sync {
    /// Returns a claim to take `server` out of the list.
    fn claim(&self, server: &DiscoveredServer) -> Option<NativeClaim>;
}

/// The Exa filter: claims Exa's MCP server (`npx exa-mcp-server`, or
/// an `https://mcp.exa.ai/...` URL) and hands over its API key (the
/// `EXA_API_KEY` env value, the URL's `exaApiKey` parameter, or an
/// `x-api-key` header). The URL form needs the `http` feature.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExaHook;

impl NativeHook for ExaHook {
    fn claim(&self, server: &DiscoveredServer) -> Option<NativeClaim> {
        match &server.config.transport {
            TransportConfig::Stdio(stdio) => {
                let is_exa = std::iter::once(&stdio.command)
                    .chain(&stdio.args)
                    .any(|part| part.contains("exa-mcp-server"));
                if !is_exa {
                    return None;
                }
                let key = stdio
                    .env
                    .iter()
                    .find(|entry| entry.key == "EXA_API_KEY")
                    .and_then(|entry| entry.value.as_literal().cloned());
                Some(NativeClaim::new("exa", key))
            }
            // Reading the URL's host and query needs the `http` feature's
            // parser; a build without it connects no HTTP server and claims none.
            #[cfg(feature = "http")]
            TransportConfig::Http(http) | TransportConfig::Sse(http) => {
                let url = url::Url::parse(&http.url).ok()?;
                let host = url.host_str()?;
                if host != "exa.ai" && !host.ends_with(".exa.ai") {
                    return None;
                }
                let key = url
                    .query_pairs()
                    .find(|(name, _)| name == "exaApiKey")
                    .map(|(_, value)| Secret::new(value.into_owned()))
                    .or_else(|| {
                        http.headers
                            .iter()
                            .find(|h| h.key.eq_ignore_ascii_case("x-api-key"))
                            .and_then(|h| h.value.as_literal().cloned())
                    });
                Some(NativeClaim::new("exa", key))
            }
            #[cfg(not(feature = "http"))]
            TransportConfig::Http(_) | TransportConfig::Sse(_) => None,
        }
    }
}

/// Everything discovery found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiscoveryReport {
    /// One entry per server id (after precedence), plus one per source that
    /// failed whole, in source order.
    pub entries: Vec<DiscoveryEntry>,
    /// Definitions overridden by a higher-precedence source.
    pub shadowed: Vec<Shadowed>,
    /// Entries a [`NativeHook`] took out.
    pub native: Vec<NativeServer>,
    /// Things sources held that are ignored (VS Code `inputs`, ...).
    pub warnings: Vec<SourceWarning>,
    /// Every source looked at, in the order read, found or not.
    pub sources: Vec<SourceReport>,
}

impl DiscoveryReport {
    /// The valid, enabled servers: what a manager connects.
    pub fn servers(&self) -> impl Iterator<Item = &DiscoveredServer> {
        self.entries.iter().filter_map(|entry| match entry {
            DiscoveryEntry::Server(server) => Some(server),
            _ => None,
        })
    }

    /// The disabled servers.
    pub fn disabled(&self) -> impl Iterator<Item = &DiscoveredServer> {
        self.entries.iter().filter_map(|entry| match entry {
            DiscoveryEntry::Disabled(server) => Some(server),
            _ => None,
        })
    }

    /// The project servers waiting for the person's approval.
    pub fn untrusted(&self) -> impl Iterator<Item = &UntrustedServer> {
        self.entries.iter().filter_map(|entry| match entry {
            DiscoveryEntry::Untrusted(untrusted) => Some(untrusted.as_ref()),
            _ => None,
        })
    }

    /// The error entries.
    pub fn errors(&self) -> impl Iterator<Item = &DiscoveryEntry> {
        self.entries
            .iter()
            .filter(|entry| matches!(entry, DiscoveryEntry::Error { .. }))
    }
}

/// Finds servers. See the module documentation for the rules.
///
/// ```
/// use mcp_config::{Discovery, DiscoveryEntry, DiscoveryOptions, ExaHook};
///
/// let dir = tempfile::tempdir()?;
/// let user = dir.path().join("user.json");
/// std::fs::write(&user, r#"{"mcpServers": {
///     "fs": {"command": "mcp-fs"},
///     "exa": {"command": "npx", "args": ["-y", "exa-mcp-server"], "env": {"EXA_API_KEY": "k"}}
/// }}"#)?;
/// let project = dir.path().join("repo");
/// std::fs::create_dir(&project)?;
/// std::fs::write(project.join(".mcp.json"), r#"{"mcpServers": {"fs": {"command": "mcp-fs", "args": ["--ro"]}}}"#)?;
///
/// let report = Discovery::new(DiscoveryOptions::default())
///     .user_file(&user)
///     .project_root(&project)
///     .native_hook(ExaHook)
///     .discover();
///
/// let fs = report.servers().next().unwrap();
/// assert_eq!(fs.source.level.as_str(), "project"); // project overrides user
/// assert_eq!(report.shadowed[0].id, "fs");
/// assert_eq!(report.native[0].claim.provider, "exa");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct Discovery {
    options: DiscoveryOptions,
    user_file: Option<PathBuf>,
    project_root: Option<PathBuf>,
    sources: Vec<Box<dyn ConfigSource>>,
    hooks: Vec<Box<dyn NativeHook>>,
    trust: Option<TrustGate>,
}

impl Discovery {
    /// Discovery with no sources yet.
    pub fn new(options: DiscoveryOptions) -> Self {
        Discovery {
            options,
            ..Discovery::default()
        }
    }

    /// The user-level file (any supported format), read first.
    pub fn user_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.user_file = Some(path.into());
        self
    }

    /// The project root; `<root>/.mcp.json` is read second.
    pub fn project_root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.project_root = Some(dir.into());
        self
    }

    /// Adds a host source, read after the user and project files.
    pub fn source(mut self, source: impl ConfigSource + 'static) -> Self {
        self.sources.push(Box::new(source));
        self
    }

    /// Adds a hook; the first hook that claims an entry takes it.
    pub fn native_hook(mut self, hook: impl NativeHook + 'static) -> Self {
        self.hooks.push(Box::new(hook));
        self
    }

    /// Holds back project servers the person has not approved (see
    /// [`crate::trust`]).
    pub fn trust(mut self, gate: TrustGate) -> Self {
        self.trust = Some(gate);
        self
    }

    /// Reads every source and applies the rules. Never fails: problems
    /// become error entries.
    pub fn discover(&self) -> DiscoveryReport {
        let user = self
            .user_file
            .as_ref()
            .map(|path| FileSource::new(path.clone(), ConfigLevel::User, "user"));
        let project = self.project_root.as_ref().map(|root| {
            FileSource::new(
                root.join(&self.options.project_file_name),
                ConfigLevel::Project,
                "project",
            )
        });
        let sources = user
            .iter()
            .chain(project.iter())
            .map(|source| source as &dyn ConfigSource)
            .chain(self.sources.iter().map(|source| source.as_ref()));

        let mut report = DiscoveryReport::default();
        let mut slots: Vec<Slot> = Vec::new();
        for (source_index, source) in sources.enumerate() {
            // A host source that panics must not take the host's startup
            // down with it: the design turns a throwing discovery into an
            // error entry, and so does this.
            let Ok(meta) = catch_unwind(AssertUnwindSafe(|| source.meta())) else {
                slots.push(Slot::Failed(source_failure(
                    SourceMeta::new(ConfigLevel::Host, None, format!("source #{source_index}")),
                    Code::UnreadableSource,
                    String::new(),
                    "the source failed (panicked) while describing itself".into(),
                )));
                continue;
            };
            if meta.level == ConfigLevel::Project && !self.options.project_configs {
                report.sources.push(SourceReport {
                    source: meta,
                    status: SourceStatus::Skipped,
                });
                continue;
            }
            let loaded = catch_unwind(AssertUnwindSafe(|| source.load()));
            report.sources.push(SourceReport {
                source: meta.clone(),
                status: match &loaded {
                    Ok(Ok(document)) => {
                        // A missing source loads as empty; `exists` tells
                        // the two apart (a panic there is "not found").
                        let exists = catch_unwind(AssertUnwindSafe(|| source.exists()));
                        if document.entries.is_empty() && !exists.unwrap_or(false) {
                            SourceStatus::NotFound
                        } else {
                            SourceStatus::Found {
                                servers: document.entries.len(),
                            }
                        }
                    }
                    Ok(Err(error)) => SourceStatus::Error {
                        code: error.code(),
                        message: ErrorChain(error).to_string(),
                    },
                    Err(_) => SourceStatus::Error {
                        code: Code::UnreadableSource.as_str(),
                        message: "the source failed (panicked) while loading".into(),
                    },
                },
            });
            match loaded {
                Ok(Ok(document)) => {
                    report
                        .warnings
                        .extend(
                            document
                                .warnings
                                .into_iter()
                                .map(|diagnostic| SourceWarning {
                                    source: meta.clone(),
                                    diagnostic,
                                }),
                        );
                    slots.extend(document.entries.into_iter().map(|entry| {
                        Slot::Entry(Candidate {
                            source_index,
                            meta: meta.clone(),
                            entry,
                        })
                    }));
                }
                Ok(Err(error)) => {
                    let field = match &error {
                        SourceError::Document(document) => document.position(),
                        _ => String::new(),
                    };
                    let message = format!(
                        "{meta}: {}; none of its servers were loaded",
                        ErrorChain(&error)
                    );
                    slots.push(Slot::Failed(source_failure(
                        meta,
                        error.diagnostic_code(),
                        field,
                        message,
                    )));
                }
                Err(_) => {
                    let message = format!("{meta}: the source failed (panicked) while loading");
                    slots.push(Slot::Failed(source_failure(
                        meta,
                        Code::UnreadableSource,
                        String::new(),
                        message,
                    )));
                }
            }
        }
        self.resolve_slots(slots, &mut report);
        report
    }

    /// Applies precedence, then, to each winning entry, the disabled
    /// filter, the native hooks and validation, in that order.
    fn resolve_slots(&self, slots: Vec<Slot>, report: &mut DiscoveryReport) {
        let ids: Vec<Option<String>> = slots.iter().map(Slot::id).collect();
        let metas: Vec<Option<SourceMeta>> = slots
            .iter()
            .map(|slot| match slot {
                Slot::Entry(candidate) => Some(candidate.meta.clone()),
                Slot::Failed(_) => None,
            })
            .collect();
        // Higher level first, then the earlier source, then the earlier entry.
        let rank = |index: usize| match &slots[index] {
            Slot::Entry(candidate) => Some((
                candidate.meta.level.precedence(),
                Reverse(candidate.source_index),
                Reverse(index),
            )),
            Slot::Failed(_) => None,
        };
        let winners: Vec<Option<usize>> = (0..slots.len())
            .map(|index| {
                let id = ids[index].as_ref()?;
                (0..slots.len())
                    .filter(|&other| ids[other].as_ref() == Some(id))
                    .max_by_key(|&other| rank(other))
            })
            .collect();
        let same = |a: usize, b: usize| match (&slots[a], &slots[b]) {
            (Slot::Entry(x), Slot::Entry(y)) => match (&x.entry, &y.entry) {
                (Ok(x), Ok(y)) => same_definition(x, y),
                _ => false,
            },
            _ => false,
        };
        // A loser identical to its winner is the same server configured in
        // another place: listed with the winner, not as a shadow. Losers
        // identical to each other (but not to the winner) are one shadowed
        // definition, listed with the best-ranked of them.
        let merged_into: Vec<Option<usize>> = (0..slots.len())
            .map(|index| {
                let winner = winners[index].filter(|&winner| winner != index)?;
                if same(winner, index) {
                    return Some(winner);
                }
                let first = (0..slots.len())
                    .filter(|&other| {
                        winners[other] == Some(winner)
                            && other != winner
                            && !same(winner, other)
                            && same(other, index)
                    })
                    .max_by_key(|&other| rank(other))?;
                (first != index).then_some(first)
            })
            .collect();
        let mut also_in: Vec<Vec<SourceMeta>> = vec![Vec::new(); slots.len()];
        let mut merged: Vec<usize> = (0..slots.len())
            .filter(|&i| merged_into[i].is_some())
            .collect();
        merged.sort_by_key(|&index| Reverse(rank(index)));
        for index in merged {
            if let (Some(into), Some(meta)) = (merged_into[index], &metas[index]) {
                also_in[into].push(meta.clone());
            }
        }

        for (index, slot) in slots.into_iter().enumerate() {
            let candidate = match slot {
                Slot::Failed(entry) => {
                    report.entries.push(entry);
                    continue;
                }
                Slot::Entry(candidate) => candidate,
            };
            if merged_into[index].is_some() {
                continue;
            }
            if let (Some(winner), Some(id)) = (winners[index], &ids[index])
                && winner != index
            {
                let winner_meta = metas[winner]
                    .clone()
                    .unwrap_or_else(|| candidate.meta.clone());
                report.shadowed.push(Shadowed {
                    id: id.clone(),
                    winner: winner_meta,
                    entry: candidate.into_entry(std::mem::take(&mut also_in[index])),
                });
                continue;
            }
            let server = match candidate.entry {
                Err(error) => {
                    report.entries.push(DiscoveryEntry::Error {
                        source: candidate.meta,
                        server: error.server,
                        diagnostics: error.diagnostics,
                    });
                    continue;
                }
                Ok(config) => DiscoveredServer {
                    config,
                    source: candidate.meta,
                    also_in: std::mem::take(&mut also_in[index]),
                },
            };
            if !server.config.enabled {
                report.entries.push(DiscoveryEntry::Disabled(server));
                continue;
            }
            if let Some(claim) = self.hooks.iter().find_map(|hook| hook.claim(&server)) {
                report.native.push(NativeServer { server, claim });
                continue;
            }
            let problems = validate(&server.config);
            report.entries.push(if problems.is_empty() {
                match &self.trust {
                    Some(gate) => {
                        gate.admit(server, self.project_root.as_deref(), &mut report.warnings)
                    }
                    None => DiscoveryEntry::Server(server),
                }
            } else {
                DiscoveryEntry::Error {
                    server: Some(server.config.id),
                    source: server.source,
                    diagnostics: problems,
                }
            });
        }
    }
}

#[derive(Debug)]
struct Candidate {
    source_index: usize,
    meta: SourceMeta,
    entry: ParsedEntry,
}

#[derive(Debug)]
enum Slot {
    Entry(Candidate),
    Failed(DiscoveryEntry),
}

impl Candidate {
    /// The entry as read, without hooks or validation (for shadowed definitions).
    fn into_entry(self, also_in: Vec<SourceMeta>) -> DiscoveryEntry {
        match self.entry {
            Ok(config) => {
                let server = DiscoveredServer {
                    config,
                    source: self.meta,
                    also_in,
                };
                if server.config.enabled {
                    DiscoveryEntry::Server(server)
                } else {
                    DiscoveryEntry::Disabled(server)
                }
            }
            Err(error) => DiscoveryEntry::Error {
                source: self.meta,
                server: error.server,
                diagnostics: error.diagnostics,
            },
        }
    }
}

impl Slot {
    fn id(&self) -> Option<String> {
        match self {
            Slot::Entry(candidate) => match &candidate.entry {
                Ok(config) => Some(config.id.clone()),
                Err(error) => error.server.clone(),
            },
            Slot::Failed(_) => None,
        }
    }
}

/// Whether two definitions describe the same server: everything that
/// decides where and how it connects and what it offers, with env and
/// headers compared as sets (header names ignoring case); not the display
/// name, description or timeouts.
fn same_definition(a: &ServerConfig, b: &ServerConfig) -> bool {
    fn sorted(entries: &[SecretEntry], fold_case: bool) -> Vec<(String, &SecretEntry)> {
        let mut keyed: Vec<(String, &SecretEntry)> = entries
            .iter()
            .map(|entry| {
                let key = if fold_case {
                    entry.key.to_ascii_lowercase()
                } else {
                    entry.key.clone()
                };
                (key, entry)
            })
            .collect();
        keyed.sort_by(|x, y| x.0.cmp(&y.0));
        keyed
    }
    let same_transport = match (&a.transport, &b.transport) {
        (TransportConfig::Stdio(x), TransportConfig::Stdio(y)) => {
            let mut passthrough = (x.env_passthrough.clone(), y.env_passthrough.clone());
            passthrough.0.sort();
            passthrough.1.sort();
            x.command == y.command
                && x.args == y.args
                && x.cwd == y.cwd
                && passthrough.0 == passthrough.1
                && sorted(&x.env, false)
                    .iter()
                    .map(|(k, e)| (k, &e.value))
                    .eq(sorted(&y.env, false).iter().map(|(k, e)| (k, &e.value)))
        }
        (TransportConfig::Http(x), TransportConfig::Http(y))
        | (TransportConfig::Sse(x), TransportConfig::Sse(y)) => {
            let mut env_headers = (x.env_headers.clone(), y.env_headers.clone());
            env_headers.0.sort_by(|p, q| p.header.cmp(&q.header));
            env_headers.1.sort_by(|p, q| p.header.cmp(&q.header));
            x.url == y.url
                && x.bearer_token_env == y.bearer_token_env
                && x.oauth == y.oauth
                && env_headers.0 == env_headers.1
                && sorted(&x.headers, true)
                    .iter()
                    .map(|(k, e)| (k, &e.value))
                    .eq(sorted(&y.headers, true).iter().map(|(k, e)| (k, &e.value)))
        }
        _ => false,
    };
    same_transport
        && a.enabled == b.enabled
        && a.era == b.era
        && a.tools == b.tools
        && a.inputs == b.inputs
}

fn source_failure(meta: SourceMeta, code: Code, field: String, message: String) -> DiscoveryEntry {
    DiscoveryEntry::Error {
        source: meta,
        server: None,
        diagnostics: vec![Diagnostic::new(code, None, field, message)],
    }
}

//! MCP server configuration: formats, discovery, validation, `${VAR}` references, the safe store and fingerprints.
//!
//! This crate describes how to reach MCP servers, as data; it never connects
//! (`mcp-manager` turns a [`ResolvedConfig`] into a transport). It depends on
//! no other crate of the workspace.
//!
//! The path of a server from a file to a connection:
//!
//! 1. **Read** a document: [`parse_mcp_servers`] (Claude Desktop, `.mcp.json`,
//!    AI-Zen), [`parse_vscode`], [`parse_store_v1`], or [`parse_document`]
//!    to detect the format. One bad entry is one [`EntryError`]; the others load.
//! 2. **Discover** across sources with [`Discovery`]: user file, project
//!    `.mcp.json`, host [`ConfigSource`]s, and the files other applications
//!    keep ([`HostSources`]: Claude Code, Claude Desktop, Cursor, VS Code,
//!    Windsurf, Codex, Gemini CLI, Zed, goose, opencode, Cline, at their
//!    standard places for the OS). Precedence: project over user; between
//!    sources of one level, the one added first (for host files, the order
//!    of [`Host::ALL`]). A definition that loses is reported as shadowed,
//!    naming the source that shadows it; an identical definition in several
//!    places is one server listing every source. Disabled entries and
//!    entries a [`NativeHook`] claims are set aside; a broken source is one
//!    error entry, never a failed startup. [`DiscoveryReport::sources`]
//!    lists every source looked at, found or not.
//! 3. **Validate** with [`validate`] / [`validate_all`]: every problem, each a
//!    [`Diagnostic`] with a stable [`Code`] and a field path.
//! 4. **Resolve** with [`resolve`] when the server connects: `${VAR}` and
//!    `${VAR:-default}` ([`expand`]) from an injectable [`Environment`];
//!    a missing variable fails that server with `missing_env`. The result
//!    carries the server's [`ProtocolEra`] (`era`: detected, or pinned to the
//!    2026-07-28 era or to the handshake era) for the connection to use.
//! 5. **Fingerprint** the result with [`fingerprint`] to recognise the same
//!    server across saves and caches.
//!
//! [`Store`] keeps servers a person adds in `mcp.json`: atomic,
//! owner-only, serialized writes, write-only secrets.
//!
//! Secret values (literal env and header values, tokens) are held in
//! [`Secret`], whose `Debug` prints `<redacted>`; no error, diagnostic or
//! `Debug` output of this crate contains one.

#![warn(missing_docs)]
mod diagnostic;
mod discovery;
mod expand;
mod fingerprint;
mod format;
mod hosts;
mod json;
mod model;
mod resolve;
mod secret;
mod store;
mod validate;

pub use diagnostic::{Code, Diagnostic};
pub use discovery::{
    ConfigLevel, ConfigSource, DiscoveredServer, Discovery, DiscoveryEntry, DiscoveryOptions,
    DiscoveryReport, ExaHook, FileSource, NativeClaim, NativeHook, NativeServer, Shadowed,
    SourceError, SourceMeta, SourceReport, SourceStatus, SourceWarning,
};
pub use expand::{Environment, ExpandError, ProcessEnv, check_references, expand};
pub use fingerprint::fingerprint;
pub use format::{
    DocumentError, EntryError, Format, ParsedDocument, ParsedEntry, ReadContext, STORE_VERSION,
    parse_document, parse_document_with, parse_mcp_servers, parse_store_server, parse_store_v1,
    parse_vscode, server_to_store_json, write_store_v1,
};
pub use hosts::{Host, HostDirs, HostFile, HostSources, Os};
pub use model::{
    EnvHeader, HttpConfig, InputPrompt, OAuthConfig, OAuthGrant, ProtocolEra, SecretEntry,
    ServerConfig, StdioConfig, ToolFilter, TransportConfig, TransportKind,
};
pub use resolve::{
    ResolveError, ResolvedConfig, ResolvedHttp, ResolvedOAuth, ResolvedStdio, ResolvedTransport,
    resolve,
};
pub use secret::{Secret, SecretValue};
pub use store::{
    DATA_DIR_ENV, DropReason, DroppedSecret, STORE_FILE_NAME, SaveOutcome, Store, StoreError,
    StoreLocation,
};
pub use validate::{validate, validate_all};

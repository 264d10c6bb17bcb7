//! MCP server configuration: formats, discovery, validation, `${VAR}` references, the safe store and fingerprints.
//!
#![doc = include_str!("../README.md")]
//!
//! ## From a file to a connection
//!
//! This crate describes how to reach MCP servers, as data; it never connects
//! (`mcp-manager` turns a [`ResolvedConfig`] into a transport). Of the
//! workspace it depends only on `mcp-proto`, for the [`Secret`] string type.
//!
//! The path of a server from a file to a connection:
//!
//! 1. **Read** a document: [`parse_mcp_servers`] (Claude Desktop, `.mcp.json`,
//!    AI-Zen), [`parse_vscode`], [`parse_store_v1`], [`parse_document`]
//!    to detect the format, or [`parse_document_with`] for a host's own file
//!    ([`Format`] says what each reads: Claude Code, Cursor, Windsurf,
//!    Gemini CLI, Zed, opencode, Cline). Hosts' files may hold comments and
//!    trailing commas. One bad entry is one [`EntryError`]; the others load.
//!    Each server records where its fields were written ([`Origins`]), and
//!    every diagnostic carries the written path, line and column.
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
//!    lists every source looked at, found or not. A [`TrustGate`] holds
//!    back project servers the person has not approved ([`trust`]).
//! 3. **Validate** with [`validate`] / [`validate_all`]: every problem, each a
//!    [`Diagnostic`] with a stable [`Code`] and a field path: the key as the
//!    file wrote it (`mcpServers.github.env.GITHUB_TOKEN`, line and column)
//!    for a server read from a host's file, the store path otherwise.
//! 4. **Resolve** with [`resolve`] when the server connects: `${VAR}` and
//!    `${VAR:-default}` ([`expand`]) from an injectable [`Environment`];
//!    a missing variable fails that server with `missing_env`. `${input:ID}`
//!    prompts are answered by the host's [`InputProvider`] ([`WithInputs`]),
//!    else the server fails with `missing_input`; [`InputStore`] keeps the
//!    answers a person chose to save. The result
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

#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod diagnostic;
mod discovery;
mod expand;
mod fingerprint;
mod format;
mod host;
mod hosts;
mod json;
mod model;
mod origins;
mod private_file;
mod resolve;
mod saved_inputs;
mod secret;
mod store;
pub mod trust;
mod validate;

pub use diagnostic::{Code, Diagnostic};
pub use discovery::{
    ConfigLevel, ConfigSource, DiscoveredServer, Discovery, DiscoveryEntry, DiscoveryOptions,
    DiscoveryReport, ExaHook, FileSource, NativeClaim, NativeHook, NativeServer, Shadowed,
    SourceError, SourceMeta, SourceReport, SourceStatus, SourceWarning,
};
pub use expand::{
    Environment, ExpandError, InputProvider, ProcessEnv, WithInputs, check_references, expand,
};
pub use fingerprint::fingerprint;
pub use format::{
    DocumentError, EntryError, Format, ParsedDocument, ParsedEntry, ReadContext, STORE_VERSION,
    StoreServer, parse_document, parse_document_with, parse_mcp_servers, parse_store_server,
    parse_store_v1, parse_vscode, server_to_store_json, write_store_v1,
};
pub use host::Host;
pub use hosts::Os;
#[cfg(feature = "host-configs")]
#[cfg_attr(docsrs, doc(cfg(feature = "host-configs")))]
pub use hosts::{HostDirs, HostFile, HostSources};
pub use model::{
    EnvHeader, HttpConfig, InputPrompt, OAuthConfig, OAuthGrant, ProtocolEra, SecretEntry,
    ServerConfig, StdioConfig, ToolFilter, TransportConfig, TransportKind,
};
pub use origins::{Origin, Origins};
pub use private_file::PrivateFileError;
pub use resolve::{
    AssertionSource, ResolveError, ResolvedConfig, ResolvedHttp, ResolvedOAuth, ResolvedStdio,
    ResolvedTransport, input_prompts, resolve,
};
pub use saved_inputs::{INPUTS_FILE_NAME, InputStore};
pub use secret::{Secret, SecretValue};
pub use store::{
    DATA_DIR_ENV, DropReason, DroppedSecret, LEGACY_HOME_SUBDIR, STORE_FILE_NAME, SaveOutcome,
    Store, StoreError, StoreLocation,
};
pub use trust::{
    Approval, TRUST_FILE_NAME, TrustDecision, TrustGate, TrustPrompt, TrustRequest, TrustStore,
    TrustSubject, UntrustedServer,
};
pub use validate::{validate, validate_all};

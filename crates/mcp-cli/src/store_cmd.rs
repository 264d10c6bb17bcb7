//! `add`, `remove`, `enable` and `disable`: editing the store (`mcp.json`) through mcp-config's `Store`.
//!
//! The store does the safe part: validation with stable codes, atomic
//! owner-only writes, write-only secrets, and refusing to overwrite a
//! malformed file. This module turns flags into a `ServerConfig` and
//! reports what happened. When the id is not in the store but comes from
//! another source (`--config`, the project's `.mcp.json`, the built-in
//! default), the error says which file to edit instead.

use std::path::Path;

use mcp_config::{
    HttpConfig, OAuthConfig, OAuthGrant, ProtocolEra, SecretEntry, ServerConfig, StdioConfig,
    Store, StoreError, TransportConfig,
};
use serde_json::json;

use crate::cli::{AddArgs, EraArg, OAuthGrantArg};
use crate::exit::{CliError, Exit};
use crate::output::Output;
use crate::sources::{self, SourceOptions};

/// `mcpctl add`.
/// `timeout` (`--timeout SECS`) is stored as the server's `timeout`.
pub(crate) fn add(
    args: AddArgs,
    timeout: Option<std::time::Duration>,
    output: &Output,
) -> Result<Exit, CliError> {
    let mut config = server_config(args)?;
    config.timeout_ms = timeout.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1));
    if let Some(problem) = mcp_config::Store::id_problems(&config.id).first() {
        return Err(CliError::usage(format!(
            "`{}` cannot be a server id: {} [{}]",
            crate::output::line(&config.id),
            problem.message,
            problem.code()
        )));
    }
    let store = open()?;
    let transport = config.transport.kind().as_str();
    let id = config.id.clone();
    let not_found = command_not_found(&config);
    store.create(config).map_err(|error| match error {
        StoreError::DuplicateId { id } => CliError::usage(format!(
            "a server with id `{id}` is already in {}",
            store.path().display()
        ))
        .hint(format!(
            "run `mcpctl remove {id}` first, or pick another name"
        )),
        other => other.into(),
    })?;
    if let Some(reason) = not_found {
        eprintln!(
            "mcpctl: warning: {} [missing_command]; `{id}` is saved all the same and fails to \
             start until the command is installed (or `mcpctl remove {id}`)",
            crate::output::line(&reason)
        );
    }
    report(output, &store, &id, "added", true, || {
        format!(
            "added {transport} server `{id}` to {}",
            store.path().display()
        )
    })
}

/// Why a stdio server's command cannot be started as it is written, when
/// it cannot: looked for as the server's start will look (the working
/// directory, the `PATH` the child gets, a `PATH` set in its `env`), so
/// that `add` can warn before anyone starts it. A command or `PATH` with a
/// `${VAR}` reference is left to the start, which expands it.
fn command_not_found(config: &ServerConfig) -> Option<String> {
    let TransportConfig::Stdio(stdio) = &config.transport else {
        return None;
    };
    if stdio.command.contains("${") {
        return None;
    }
    #[cfg(unix)]
    {
        let mut options = mcp_transport::StdioOptions::new(stdio.command.clone());
        options.cwd = stdio
            .cwd
            .as_deref()
            .filter(|cwd| !cwd.is_empty())
            .map(std::path::PathBuf::from);
        options.env_passthrough = stdio.env_passthrough.clone();
        for entry in stdio.env.iter().filter(|entry| entry.key == "PATH") {
            // A saved (write-only) value cannot be read here either.
            let value = entry.value.as_literal().map(|secret| secret.expose())?;
            if value.contains("${") {
                return None;
            }
            options.env.push((entry.key.clone(), value.to_owned()));
        }
        options.find_command().err().map(|error| error.to_string())
    }
    #[cfg(not(unix))]
    None
}

/// `mcpctl remove`.
pub(crate) fn remove(id: &str, sources: &SourceOptions, output: &Output) -> Result<Exit, CliError> {
    let store = open()?;
    store
        .remove(id)
        .map_err(|error| not_in_store(error, id, sources))?;
    report(output, &store, id, "removed", true, || {
        format!("removed `{id}` from {}", store.path().display())
    })
}

/// `mcpctl enable` and `mcpctl disable`.
pub(crate) fn set_enabled(
    id: &str,
    enabled: bool,
    sources: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    let store = open()?;
    let changed = store
        .set_enabled(id, enabled)
        .map_err(|error| not_in_store(error, id, sources))?;
    let action = if enabled { "enabled" } else { "disabled" };
    report(output, &store, id, action, changed, || {
        if changed {
            format!("{action} `{id}` in {}", store.path().display())
        } else {
            format!("`{id}` was already {action}; nothing changed")
        }
    })
}

fn open() -> Result<Store, CliError> {
    Ok(Store::open(sources::store_path()?))
}

/// Prints the outcome: a sentence, or `{"id", "action", "changed", "store"}`.
fn report(
    output: &Output,
    store: &Store,
    id: &str,
    action: &str,
    changed: bool,
    sentence: impl FnOnce() -> String,
) -> Result<Exit, CliError> {
    let printed = if output.json {
        output.json(&json!({
            "id": id,
            "action": action,
            "changed": changed,
            "store": store.path(),
        }))
    } else {
        output.text(&format!("{}\n", sentence()))
    };
    printed.map_err(|e| CliError::usage(format!("cannot write to stdout: {e}")))?;
    Ok(Exit::Success)
}

/// A `not_found` from the store, explained: the server may come from a
/// file the store does not own.
fn not_in_store(error: StoreError, id: &str, options: &SourceOptions) -> CliError {
    let StoreError::NotFound { .. } = error else {
        return error.into();
    };
    let elsewhere = sources::gather(options).ok().and_then(|sources| {
        let report = sources.discovery.discover();
        report
            .entries
            .iter()
            .find(|entry| entry.server_id() == Some(id))
            .map(|entry| entry.source().clone())
    });
    let store = sources::store_path()
        .map(|path| path.display().to_string())
        .unwrap_or_else(|_| "the store".to_owned());
    match elsewhere {
        Some(source) if source.path.is_some() => {
            CliError::usage(format!("`{id}` is not in {store}; it comes from {source}"))
                .hint("edit that file instead")
        }
        Some(_) => CliError::usage(format!(
            "`{id}` is the built-in default server, not a stored one"
        ))
        .hint("add a server with `mcpctl add` and the default is no longer used"),
        None => CliError::usage(format!("no server with id `{id}` in {store}"))
            .hint("`mcpctl servers` lists the configured servers"),
    }
}

/// Turns `add`'s flags into a config; the store validates it.
fn server_config(args: AddArgs) -> Result<ServerConfig, CliError> {
    // Flags of the other transport are refused rather than dropped: a
    // header or OAuth setting that silently vanished would surprise.
    if args.url.is_none() {
        let http_only = [
            ("--header", !args.headers.is_empty()),
            ("--bearer-env", args.bearer_env.is_some()),
        ]
        .into_iter()
        .chain(oauth_flags(&args));
        if let Some((flag, _)) = http_only.into_iter().find(|(_, given)| *given) {
            return Err(CliError::usage(format!(
                "{flag} is for HTTP servers: give --url URL, not a command"
            )));
        }
    }
    let transport = match (&args.url, args.command.split_first()) {
        (Some(url), _) => {
            let mut http = HttpConfig::new(url.clone());
            http.bearer_token_env = args.bearer_env.clone();
            http.headers = pairs("--header", &args.headers)?;
            http.oauth = oauth_config(&args);
            TransportConfig::Http(http)
        }
        (None, Some((command, rest))) => {
            let mut stdio = StdioConfig::new(command.clone());
            stdio.args = rest.to_vec();
            stdio.env = pairs("--env", &args.env)?;
            stdio.cwd = match &args.cwd {
                // The store wants an absolute directory; a relative one
                // means "from here", as it does everywhere on a command line.
                Some(dir) => Some(absolute(dir)?),
                None => None,
            };
            TransportConfig::Stdio(stdio)
        }
        (None, None) => {
            return Err(CliError::usage(
                "give the server's command after `--`, or --url URL",
            ));
        }
    };
    let mut config = ServerConfig::new(args.name, transport);
    if let Some(name) = args.display_name {
        config.name = name;
    }
    config.enabled = !args.disabled;
    config.era = match args.era {
        Some(EraArg::Modern) => ProtocolEra::Modern,
        Some(EraArg::Legacy) => ProtocolEra::Legacy,
        Some(EraArg::Auto) | None => ProtocolEra::Auto,
    };
    Ok(config)
}

/// The `oauth` section from the `--oauth-*` flags; `None` when none is
/// given (the server still gets OAuth on demand, with the defaults). The
/// store validates it (for example a secret variable without a client id).
fn oauth_config(args: &AddArgs) -> Option<OAuthConfig> {
    if !oauth_flags(args).into_iter().any(|(_, given)| given) {
        return None;
    }
    let mut oauth = OAuthConfig::new();
    oauth.client_id.clone_from(&args.oauth_client_id);
    oauth
        .client_secret_env
        .clone_from(&args.oauth_client_secret_env);
    oauth.scopes.clone_from(&args.oauth_scopes);
    oauth
        .client_metadata_url
        .clone_from(&args.oauth_client_metadata_url);
    oauth.redirect_port = args.oauth_redirect_port;
    oauth.grant = match args.oauth_grant {
        Some(OAuthGrantArg::ClientCredentials) => OAuthGrant::ClientCredentials,
        Some(OAuthGrantArg::JwtBearer) => OAuthGrant::JwtBearer,
        Some(OAuthGrantArg::AuthorizationCode) | None => OAuthGrant::AuthorizationCode,
    };
    // Stored as given; the store checks that the grant has exactly one.
    oauth.assertion_file = args
        .oauth_assertion_file
        .as_ref()
        .map(|path| path.to_string_lossy().into_owned());
    oauth.assertion_env.clone_from(&args.oauth_assertion_env);
    Some(oauth)
}

/// The `--oauth-*` flags and whether each was given.
fn oauth_flags(args: &AddArgs) -> [(&'static str, bool); 8] {
    [
        ("--oauth-client-id", args.oauth_client_id.is_some()),
        (
            "--oauth-client-secret-env",
            args.oauth_client_secret_env.is_some(),
        ),
        ("--oauth-scope", !args.oauth_scopes.is_empty()),
        (
            "--oauth-client-metadata-url",
            args.oauth_client_metadata_url.is_some(),
        ),
        ("--oauth-redirect-port", args.oauth_redirect_port.is_some()),
        ("--oauth-grant", args.oauth_grant.is_some()),
        (
            "--oauth-assertion-file",
            args.oauth_assertion_file.is_some(),
        ),
        ("--oauth-assertion-env", args.oauth_assertion_env.is_some()),
    ]
}

/// `K=V` flags as secret rows. The message names the flag and the key,
/// never the value.
fn pairs(flag: &str, values: &[String]) -> Result<Vec<SecretEntry>, CliError> {
    values
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => Ok(SecretEntry::new(key.trim(), value)),
            _ => Err(CliError::usage(format!(
                "{flag} takes KEY=VALUE; one of them has no `=` or no key"
            ))),
        })
        .collect()
}

fn absolute(dir: &Path) -> Result<String, CliError> {
    let dir = std::path::absolute(dir)
        .map_err(|e| CliError::usage(format!("--cwd {}: {e}", dir.display())))?;
    dir.into_os_string()
        .into_string()
        .map_err(|_| CliError::usage("--cwd: the directory's path is not valid UTF-8"))
}

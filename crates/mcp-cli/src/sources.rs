//! Where `mcpctl` finds servers: `--config` files, the store, the project's `.mcp.json`, or the embedded default.
//!
//! Sources, in precedence order for a server id defined more than once
//! (mcp-config's discovery rules: project over user, then the first source
//! of a level):
//!
//! 1. the project's `.mcp.json` (`--project DIR`, default the current
//!    directory; `--no-project` skips it);
//! 2. every `--config FILE`, in the order given (any supported format);
//! 3. the store, `mcp.json` (`$LOOP_DATA_DIR/mcp.json`, else
//!    `~/.loop/mcp.json`), which `add`, `remove`, `enable` and `disable` edit.
//!
//! The embedded default: when none of these exists (no store file, no
//! project `.mcp.json`, no `--config`), the one server is `demo`, which runs
//! this same executable as `mcpctl demo-server`.

use std::path::{Path, PathBuf};

use mcp_config::{
    ConfigLevel, ConfigSource, Discovery, DiscoveryOptions, FileSource, Format, ParsedDocument,
    ProcessEnv, ServerConfig, SourceError, SourceMeta, StdioConfig, StoreLocation, TransportConfig,
};

use crate::exit::CliError;

/// The id of the embedded default server.
pub(crate) const DEMO_ID: &str = "demo";

/// The global options that choose sources.
#[derive(Clone, Debug, Default)]
pub(crate) struct SourceOptions {
    /// `--config FILE`, repeatable.
    pub(crate) configs: Vec<PathBuf>,
    /// `--project DIR`.
    pub(crate) project: Option<PathBuf>,
    /// `--no-project`.
    pub(crate) no_project: bool,
    /// Whether this command may ask on a terminal before it starts a
    /// project server nobody approved, or needs an `${input:ID}` answer.
    pub(crate) ask: bool,
}

/// The sources this run reads, ready to discover.
#[derive(Debug)]
pub(crate) struct Sources {
    /// Discovery over every source.
    pub(crate) discovery: Discovery,
}

/// The store file, or why there is none.
pub(crate) fn store_path() -> Result<PathBuf, CliError> {
    Ok(StoreLocation::default().store_path(&ProcessEnv)?)
}

/// Builds discovery over the sources `options` name. A `--config` file that
/// does not exist is a usage error (a missing store or project file is
/// simply empty).
pub(crate) fn gather(options: &SourceOptions) -> Result<Sources, CliError> {
    for config in &options.configs {
        if !config.is_file() {
            return Err(CliError::usage(format!(
                "--config {}: no such file",
                config.display()
            )));
        }
    }
    let project_file = if options.no_project {
        None
    } else {
        let dir = match &options.project {
            Some(dir) => {
                if !dir.is_dir() {
                    return Err(CliError::usage(format!(
                        "--project {}: no such directory",
                        dir.display()
                    )));
                }
                dir.clone()
            }
            None => std::env::current_dir().map_err(|e| {
                CliError::usage(format!("cannot read the current directory: {e}"))
                    .hint("pass --project DIR or --no-project")
            })?,
        };
        Some(dir.join(DiscoveryOptions::default().project_file_name))
    };
    // Listings work without a store location; only the store commands need one.
    let store = match store_path() {
        Ok(path) => Some(path),
        Err(error) => {
            tracing::warn!("no store: {}", error.message);
            None
        }
    };

    let mut discovery_options = DiscoveryOptions::default();
    discovery_options.project_configs = !options.no_project;
    let mut discovery = Discovery::new(discovery_options);
    if let Some(project_file) = &project_file {
        discovery = discovery.source(FileSource::new(
            project_file.clone(),
            ConfigLevel::Project,
            "project",
        ));
    }
    for config in &options.configs {
        // Absolute, so listings say exactly which file a server came from.
        let path = std::path::absolute(config).unwrap_or_else(|_| config.clone());
        discovery = discovery.source(FileSource::new(path, ConfigLevel::User, "--config"));
    }
    if let Some(store) = &store {
        discovery = discovery.source(
            FileSource::new(store.clone(), ConfigLevel::User, "store").with_format(Format::StoreV1),
        );
    }
    let exists = |path: &Option<PathBuf>| path.as_deref().is_some_and(Path::exists);
    let embedded_default = options.configs.is_empty() && !exists(&store) && !exists(&project_file);
    if embedded_default {
        discovery = discovery.source(EmbeddedDefault);
    }
    Ok(Sources { discovery })
}

/// The embedded default server: this executable as `mcpctl demo-server`.
pub(crate) fn demo_config() -> ServerConfig {
    // `current_exe` fails only on exotic platforms; `mcpctl` on PATH is the
    // best guess there.
    let command = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.into_os_string().into_string().ok())
        .unwrap_or_else(|| "mcpctl".to_owned());
    let mut stdio = StdioConfig::new(command);
    stdio.args = vec!["demo-server".to_owned()];
    let mut config = ServerConfig::new(DEMO_ID, TransportConfig::Stdio(stdio));
    config.name = "Demo".to_owned();
    config.description = Some("mcpctl's built-in demo server".to_owned());
    config
}

/// The source of the embedded default.
#[derive(Debug)]
struct EmbeddedDefault;

impl ConfigSource for EmbeddedDefault {
    fn meta(&self) -> SourceMeta {
        SourceMeta::new(ConfigLevel::Host, None, "built-in")
    }

    fn load(&self) -> Result<ParsedDocument, SourceError> {
        Ok(ParsedDocument::from_servers([demo_config()]))
    }
}

//! Discovery across real files and host sources: precedence, project switch, disabled entries, native hooks, broken sources.

use std::fs;
use std::path::Path;

use mcp_config::{
    ConfigLevel, ConfigSource, DiscoveredServer, Discovery, DiscoveryEntry, DiscoveryOptions,
    DiscoveryReport, ExaHook, FileSource, NativeClaim, NativeHook, ParsedDocument, ServerConfig,
    SourceError, SourceMeta, StdioConfig, TransportConfig,
};
use tempfile::TempDir;

/// A user file and a project directory in a scratch dir.
struct Setup {
    dir: TempDir,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("project")).unwrap();
        Setup { dir }
    }

    fn user(&self, text: &str) -> &Self {
        fs::write(self.user_path(), text).unwrap();
        self
    }

    fn project(&self, text: &str) -> &Self {
        fs::write(self.project_dir().join(".mcp.json"), text).unwrap();
        self
    }

    fn user_path(&self) -> std::path::PathBuf {
        self.dir.path().join("user.json")
    }

    fn project_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("project")
    }

    fn discovery(&self, options: DiscoveryOptions) -> Discovery {
        Discovery::new(options)
            .user_file(self.user_path())
            .project_root(self.project_dir())
    }
}

fn label(source: &SourceMeta) -> String {
    let file = source
        .path
        .as_deref()
        .and_then(Path::file_name)
        .map(|name| format!(" {}", name.to_string_lossy()))
        .unwrap_or_default();
    format!("{}/{}{file}", source.level.as_str(), source.provider_label)
}

fn entry_line(entry: &DiscoveryEntry) -> String {
    match entry {
        DiscoveryEntry::Server(server) => {
            format!("server {} from {}", server.config.id, label(&server.source))
        }
        DiscoveryEntry::Disabled(server) => {
            format!(
                "disabled {} from {}",
                server.config.id,
                label(&server.source)
            )
        }
        DiscoveryEntry::Error {
            source,
            server,
            diagnostics,
        } => {
            let codes: Vec<String> = diagnostics
                .iter()
                .map(|d| format!("{}@{}", d.code(), d.field))
                .collect();
            format!(
                "error {} from {}: {}",
                server.as_deref().unwrap_or("-"),
                label(source),
                codes.join(", ")
            )
        }
        _ => panic!("unexpected entry kind: {entry:?}"),
    }
}

/// The one function that turns a report into comparable lines.
fn summary(report: &DiscoveryReport) -> Vec<String> {
    let mut lines: Vec<String> = report.entries.iter().map(entry_line).collect();
    for shadowed in &report.shadowed {
        lines.push(format!(
            "shadowed [{}] by {}",
            entry_line(&shadowed.entry),
            label(&shadowed.winner)
        ));
    }
    for native in &report.native {
        lines.push(format!(
            "native {} by {} key={}",
            native.server.config.id,
            native.claim.provider,
            native
                .claim
                .api_key
                .as_ref()
                .map_or("none", |key| key.expose())
        ));
    }
    for warning in &report.warnings {
        lines.push(format!(
            "warning {} from {}",
            warning.diagnostic.code(),
            label(&warning.source)
        ));
    }
    lines
}

#[test]
fn project_overrides_user_and_reports_the_shadowed_entry() {
    let setup = Setup::new();
    setup
        .user(r#"{"mcpServers": {"fs": {"command": "user-fs"}, "only-user": {"command": "u"}}}"#)
        .project(r#"{"mcpServers": {"fs": {"command": "project-fs"}, "only-project": {"url": "https://e.com/mcp"}}}"#);
    let report = setup.discovery(DiscoveryOptions::default()).discover();
    assert_eq!(
        summary(&report),
        [
            "server only-user from user/user user.json",
            "server fs from project/project .mcp.json",
            "server only-project from project/project .mcp.json",
            "shadowed [server fs from user/user user.json] by project/project .mcp.json",
        ]
    );
    let fs_server = report.servers().find(|s| s.config.id == "fs").unwrap();
    let TransportConfig::Stdio(stdio) = &fs_server.config.transport else {
        panic!("stdio expected")
    };
    assert_eq!(stdio.command, "project-fs");
}

#[test]
fn project_configs_off_ignores_the_project_file_entirely() {
    let setup = Setup::new();
    setup
        .user(r#"{"mcpServers": {"fs": {"command": "user-fs"}}}"#)
        .project("{ this is not even JSON");
    let mut options = DiscoveryOptions::default();
    options.project_configs = false;
    let report = setup.discovery(options).discover();
    assert_eq!(summary(&report), ["server fs from user/user user.json"]);
}

#[test]
fn a_broken_source_is_one_error_entry_naming_the_file_and_the_rest_loads() {
    let setup = Setup::new();
    setup
        .user(r#"{"mcpServers": {"fs": {"command": "user-fs"}}}"#)
        .project("{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"y\"}\n    \"z\": {}\n}");
    let report = setup.discovery(DiscoveryOptions::default()).discover();
    assert_eq!(
        summary(&report),
        [
            "server fs from user/user user.json",
            "error - from project/project .mcp.json: parse_error@line 4 column 5",
        ]
    );
    let DiscoveryEntry::Error { diagnostics, .. } = report.errors().next().unwrap() else {
        unreachable!()
    };
    let message = &diagnostics[0].message;
    assert!(message.contains(".mcp.json"), "{message}");
    assert!(message.contains("line 4 column 5"), "{message}");
}

#[test]
fn missing_files_mean_no_servers_and_unreadable_ones_are_errors() {
    let setup = Setup::new();
    let report = setup.discovery(DiscoveryOptions::default()).discover();
    let mut without_sources = report.clone();
    let looked_at = std::mem::take(&mut without_sources.sources);
    assert_eq!(without_sources, DiscoveryReport::default());
    // Both files were looked at and reported as not there.
    assert_eq!(looked_at.len(), 2);
    assert!(
        looked_at
            .iter()
            .all(|source| source.status == mcp_config::SourceStatus::NotFound)
    );

    // A directory where the user file should be cannot be read.
    fs::create_dir(setup.user_path()).unwrap();
    let report = setup.discovery(DiscoveryOptions::default()).discover();
    assert_eq!(
        summary(&report),
        ["error - from user/user user.json: unreadable_source@"]
    );

    let not_utf8 = setup.dir.path().join("latin1.json");
    fs::write(&not_utf8, b"{\"mcpServers\": {\"caf\xe9\": {}}}").unwrap();
    let report = Discovery::new(DiscoveryOptions::default())
        .source(FileSource::new(&not_utf8, ConfigLevel::User, "latin1"))
        .discover();
    assert_eq!(
        summary(&report),
        ["error - from user/latin1 latin1.json: unreadable_source@"]
    );
}

#[test]
fn disabled_entries_are_set_aside_before_validation_and_hooks() {
    let setup = Setup::new();
    setup.user(
        r#"{"mcpServers": {
            "off": {"command": "", "disabled": true},
            "exa-off": {"command": "npx", "args": ["exa-mcp-server"], "disabled": true},
            "on": {"command": "x"}
        }}"#,
    );
    let report = setup
        .discovery(DiscoveryOptions::default())
        .native_hook(ExaHook)
        .discover();
    assert_eq!(
        summary(&report),
        [
            "disabled off from user/user user.json",
            "disabled exa-off from user/user user.json",
            "server on from user/user user.json",
        ]
    );
    assert_eq!(report.disabled().count(), 2);
}

#[test]
fn a_project_can_disable_a_user_server() {
    let setup = Setup::new();
    setup
        .user(r#"{"mcpServers": {"fs": {"command": "user-fs"}}}"#)
        .project(r#"{"mcpServers": {"fs": {"command": "user-fs", "disabled": true}}}"#);
    let report = setup.discovery(DiscoveryOptions::default()).discover();
    assert_eq!(
        summary(&report),
        [
            "disabled fs from project/project .mcp.json",
            "shadowed [server fs from user/user user.json] by project/project .mcp.json",
        ]
    );
}

#[test]
fn invalid_and_unparsable_entries_fail_alone() {
    let setup = Setup::new();
    setup
        .user(r#"{"mcpServers": {"fs": {"command": "user-fs"}, "ok": {"command": "ok"}}}"#)
        .project(
            r#"{"mcpServers": {
                "fs": {"command": 1},
                "rel": {"command": "x", "cwd": "rel"},
                "fine": {"command": "fine"}
            }}"#,
        );
    let report = setup.discovery(DiscoveryOptions::default()).discover();
    // The broken project definition of `fs` still wins: falling back to the
    // user's would silently run a different server than the project asked for.
    assert_eq!(
        summary(&report),
        [
            "server ok from user/user user.json",
            "error fs from project/project .mcp.json: invalid_field@mcpServers.fs.command",
            "error rel from project/project .mcp.json: relative_cwd@mcpServers.rel.cwd",
            "server fine from project/project .mcp.json",
            "shadowed [server fs from user/user user.json] by project/project .mcp.json",
        ]
    );
}

// The URL form (`https://mcp.exa.ai/...`) needs the `http` feature.
#[cfg(feature = "http")]
#[test]
fn exa_entries_are_handed_to_the_host_with_their_key() {
    let setup = Setup::new();
    setup.user(
        r#"{"mcpServers": {
            "exa": {"command": "npx", "args": ["-y", "exa-mcp-server@latest"], "env": {"EXA_API_KEY": "exa-key-1"}},
            "exa-remote": {"url": "https://mcp.exa.ai/mcp?exaApiKey=exa-key-2"},
            "exa-header": {"url": "https://mcp.exa.ai/mcp", "headers": {"X-Api-Key": "exa-key-3"}},
            "exa-nokey": {"command": "exa-mcp-server"},
            "not-exa": {"url": "https://notexa.ai/mcp"}
        }}"#,
    );
    let report = setup
        .discovery(DiscoveryOptions::default())
        .native_hook(ExaHook)
        .discover();
    assert_eq!(
        summary(&report),
        [
            "server not-exa from user/user user.json",
            "native exa by exa key=exa-key-1",
            "native exa-remote by exa key=exa-key-2",
            "native exa-header by exa key=exa-key-3",
            "native exa-nokey by exa key=none",
        ]
    );
}

/// A host source serving fixed servers at a chosen level.
#[derive(Debug)]
struct Fixed {
    level: ConfigLevel,
    label: &'static str,
    servers: Vec<(&'static str, &'static str)>,
}

impl ConfigSource for Fixed {
    fn meta(&self) -> SourceMeta {
        SourceMeta::new(self.level, None, self.label)
    }

    fn load(&self) -> Result<ParsedDocument, SourceError> {
        Ok(ParsedDocument::from_servers(self.servers.iter().map(
            |(id, command)| {
                ServerConfig::new(*id, TransportConfig::Stdio(StdioConfig::new(*command)))
            },
        )))
    }
}

#[derive(Debug)]
struct Failing;

impl ConfigSource for Failing {
    fn meta(&self) -> SourceMeta {
        SourceMeta::new(ConfigLevel::Host, None, "settings-db")
    }

    fn load(&self) -> Result<ParsedDocument, SourceError> {
        Err(SourceError::Other {
            message: "the settings database is locked".into(),
        })
    }
}

#[derive(Debug)]
struct Panicking;

impl ConfigSource for Panicking {
    fn meta(&self) -> SourceMeta {
        SourceMeta::new(ConfigLevel::User, None, "plugin")
    }

    fn load(&self) -> Result<ParsedDocument, SourceError> {
        panic!("plugin bug")
    }
}

#[test]
fn host_sources_take_part_by_level_and_never_fail_discovery() {
    let setup = Setup::new();
    setup.user(r#"{"mcpServers": {"shared": {"command": "user"}}}"#);
    let report = setup
        .discovery(DiscoveryOptions::default())
        .source(Fixed {
            level: ConfigLevel::Host,
            label: "built-in",
            servers: vec![("shared", "builtin"), ("demo", "mcpctl")],
        })
        .source(Failing)
        .source(Panicking)
        .source(Fixed {
            level: ConfigLevel::User,
            label: "cursor",
            servers: vec![("shared", "cursor"), ("cursor-only", "c")],
        })
        .discover();
    assert_eq!(
        summary(&report),
        [
            "server shared from user/user user.json",
            "server demo from host/built-in",
            "error - from host/settings-db: unreadable_source@",
            "error - from user/plugin: unreadable_source@",
            "server cursor-only from user/cursor",
            "shadowed [server shared from host/built-in] by user/user user.json",
            "shadowed [server shared from user/cursor] by user/user user.json",
        ]
    );
}

#[test]
fn project_level_host_sources_obey_the_project_switch() {
    let source = || Fixed {
        level: ConfigLevel::Project,
        label: "cursor-project",
        servers: vec![("p", "p")],
    };
    let report = Discovery::new(DiscoveryOptions::default())
        .source(source())
        .discover();
    assert_eq!(summary(&report), ["server p from project/cursor-project"]);
    let mut options = DiscoveryOptions::default();
    options.project_configs = false;
    let report = Discovery::new(options).source(source()).discover();
    assert!(report.entries.is_empty());
}

#[test]
fn warnings_keep_their_source() {
    let setup = Setup::new();
    let vscode = setup.dir.path().join("mcp.json");
    fs::write(
        &vscode,
        r#"{"servers": {"a": {"type": "stdio", "command": "a", "envFile": ".env"}}}"#,
    )
    .unwrap();
    let report = Discovery::new(DiscoveryOptions::default())
        .source(FileSource::new(&vscode, ConfigLevel::Project, "VS Code"))
        .discover();
    assert_eq!(
        summary(&report),
        [
            "server a from project/VS Code mcp.json",
            "warning ignored_env_file from project/VS Code mcp.json",
        ]
    );
}

/// A host hook that claims by id, to show hooks see the final entry.
#[derive(Debug)]
struct ClaimById(&'static str);

impl NativeHook for ClaimById {
    fn claim(&self, server: &DiscoveredServer) -> Option<NativeClaim> {
        (server.config.id == self.0).then(|| NativeClaim::new("native-search", None))
    }
}

#[test]
fn the_first_claiming_hook_wins_and_invalid_entries_can_be_claimed() {
    let setup = Setup::new();
    setup.user(
        r#"{"mcpServers": {"search": {"command": ""}, "exa": {"command": "exa-mcp-server"}}}"#,
    );
    let report = setup
        .discovery(DiscoveryOptions::default())
        .native_hook(ClaimById("search"))
        .native_hook(ExaHook)
        .native_hook(ClaimById("exa"))
        .discover();
    assert_eq!(
        summary(&report),
        [
            "native search by native-search key=none",
            "native exa by exa key=none",
        ]
    );
}

#[test]
fn explicit_formats_and_store_files_are_sources_too() {
    let setup = Setup::new();
    let store = setup.dir.path().join("store.json");
    fs::write(
        &store,
        r#"{"version": 1, "servers": [{"id": "s", "name": "S", "transport": {"type": "stdio", "command": "s"}}]}"#,
    )
    .unwrap();
    let report = Discovery::new(DiscoveryOptions::default())
        .source(
            FileSource::new(&store, ConfigLevel::User, "Loop")
                .with_format(mcp_config::Format::StoreV1),
        )
        .discover();
    assert_eq!(summary(&report), ["server s from user/Loop store.json"]);
}

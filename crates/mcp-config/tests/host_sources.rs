//! Host files found under a temporary home and project: precedence between hosts and levels, shadowing, identical definitions merged, and the status of every source.
#![cfg(feature = "host-configs")]

use std::path::{Path, PathBuf};

use mcp_config::{
    ConfigLevel, Discovery, DiscoveryOptions, DiscoveryReport, Host, HostDirs, HostSources, Os,
    SourceMeta, SourceStatus, TransportConfig,
};
use tempfile::TempDir;

/// A temporary home and project, with host files written into them.
struct Setup {
    home: TempDir,
    project: TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            home: tempfile::tempdir().unwrap(),
            project: tempfile::tempdir().unwrap(),
        }
    }

    fn write(root: &Path, relative: &str, text: &str) -> PathBuf {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn home_file(&self, relative: &str, text: &str) -> PathBuf {
        Setup::write(self.home.path(), relative, text)
    }

    fn project_file(&self, relative: &str, text: &str) -> PathBuf {
        Setup::write(self.project.path(), relative, text)
    }

    fn sources(&self) -> HostSources {
        HostSources::new(HostDirs::new(self.home.path(), Os::Linux)).project(self.project.path())
    }

    fn discover(&self, options: DiscoveryOptions) -> DiscoveryReport {
        self.sources().add_to(Discovery::new(options)).discover()
    }
}

const CLAUDE_DESKTOP: &str = ".config/Claude/claude_desktop_config.json";
const VSCODE_USER: &str = ".config/Code/User/mcp.json";

fn command(report: &DiscoveryReport, id: &str) -> (String, Vec<String>) {
    let server = report
        .servers()
        .find(|server| server.config.id == id)
        .unwrap_or_else(|| panic!("no server {id}: {report:#?}"));
    match &server.config.transport {
        TransportConfig::Stdio(stdio) => (stdio.command.clone(), stdio.args.clone()),
        other => panic!("not stdio: {other:?}"),
    }
}

fn who(meta: &SourceMeta) -> (Option<Host>, ConfigLevel) {
    (meta.host, meta.level)
}

#[test]
fn a_project_file_wins_over_every_user_file_and_says_what_it_shadows() {
    let setup = Setup::new();
    let desktop = setup.home_file(
        CLAUDE_DESKTOP,
        r#"{"mcpServers": {"fs": {"command": "mcp-fs", "args": ["/home"]}}}"#,
    );
    let project = setup.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"fs": {"command": "mcp-fs", "args": ["."]}}}"#,
    );
    let report = setup.discover(DiscoveryOptions::default());
    assert_eq!(command(&report, "fs").1, ["."]);
    let fs = report.servers().next().unwrap();
    assert_eq!(
        who(&fs.source),
        (Some(Host::ClaudeCode), ConfigLevel::Project)
    );
    assert_eq!(fs.source.path.as_deref(), Some(project.as_path()));
    assert_eq!(fs.source.provider_label, "Claude Code");
    assert!(fs.also_in.is_empty());

    assert_eq!(report.shadowed.len(), 1, "{report:#?}");
    let shadowed = &report.shadowed[0];
    assert_eq!(shadowed.id, "fs");
    assert_eq!(
        who(shadowed.source()),
        (Some(Host::ClaudeDesktop), ConfigLevel::User)
    );
    assert_eq!(shadowed.source().path.as_deref(), Some(desktop.as_path()));
    assert_eq!(
        who(&shadowed.winner),
        (Some(Host::ClaudeCode), ConfigLevel::Project)
    );
    let text = shadowed.to_string();
    assert!(text.starts_with("`fs` in Claude Desktop ("), "{text}");
    assert!(
        text.contains("is shadowed by the definition in Claude Code ("),
        "{text}"
    );
}

#[test]
fn between_hosts_at_one_level_the_order_of_host_all_decides() {
    let setup = Setup::new();
    // VS Code comes after Claude Desktop in Host::ALL at user level, and
    // after Claude Code at project level, even though its files are written
    // first here.
    setup.home_file(
        VSCODE_USER,
        r#"{"servers": {"db": {"type": "stdio", "command": "db-vscode"}}}"#,
    );
    setup.home_file(
        CLAUDE_DESKTOP,
        r#"{"mcpServers": {"db": {"command": "db-desktop"}}}"#,
    );
    setup.project_file(
        ".vscode/mcp.json",
        r#"{"servers": {"web": {"type": "http", "url": "https://vscode.example/mcp"}}}"#,
    );
    setup.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"web": {"type": "http", "url": "https://claude.example/mcp"}}}"#,
    );
    let report = setup.discover(DiscoveryOptions::default());
    assert_eq!(command(&report, "db").0, "db-desktop");
    let web = report.servers().find(|s| s.config.id == "web").unwrap();
    match &web.config.transport {
        TransportConfig::Http(http) => assert_eq!(http.url, "https://claude.example/mcp"),
        other => panic!("{other:?}"),
    }
    let mut shadows: Vec<(String, Option<Host>, Option<Host>)> = report
        .shadowed
        .iter()
        .map(|s| (s.id.clone(), s.source().host, s.winner.host))
        .collect();
    shadows.sort();
    assert_eq!(
        shadows,
        [
            ("db".into(), Some(Host::VsCode), Some(Host::ClaudeDesktop)),
            ("web".into(), Some(Host::VsCode), Some(Host::ClaudeCode)),
        ]
    );
    // Host::ALL is the documented order.
    assert_eq!(Host::ALL[0], Host::ClaudeCode);
    assert!(
        Host::ALL.iter().position(|h| *h == Host::ClaudeDesktop)
            < Host::ALL.iter().position(|h| *h == Host::VsCode)
    );
}

#[test]
fn an_identical_definition_in_several_hosts_is_one_server_with_every_source() {
    let setup = Setup::new();
    // The same server, env written in another order, in three files.
    setup.home_file(
        CLAUDE_DESKTOP,
        r#"{"mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "GITHUB_HOST": "github.com"}}}}"#,
    );
    let vscode = setup.home_file(
        VSCODE_USER,
        r#"{"servers": {"github": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_HOST": "github.com", "GITHUB_TOKEN": "${GITHUB_TOKEN}"}}}}"#,
    );
    let project = setup.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "GITHUB_HOST": "github.com"}}}}"#,
    );
    let report = setup.discover(DiscoveryOptions::default());
    let servers: Vec<_> = report.servers().collect();
    assert_eq!(servers.len(), 1, "{report:#?}");
    assert!(report.shadowed.is_empty(), "{:#?}", report.shadowed);
    let github = servers[0];
    assert_eq!(github.source.path.as_deref(), Some(project.as_path()));
    let also: Vec<_> = github.also_in.iter().map(who).collect();
    assert_eq!(
        also,
        [
            (Some(Host::ClaudeDesktop), ConfigLevel::User),
            (Some(Host::VsCode), ConfigLevel::User),
        ]
    );
    assert_eq!(github.also_in[1].path.as_deref(), Some(vscode.as_path()));

    // One env value different: a shadow, not the same server.
    setup.home_file(
        VSCODE_USER,
        r#"{"servers": {"github": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_HOST": "ghe.example", "GITHUB_TOKEN": "${GITHUB_TOKEN}"}}}}"#,
    );
    let report = setup.discover(DiscoveryOptions::default());
    let github = report.servers().next().unwrap();
    assert_eq!(
        github.also_in.iter().map(who).collect::<Vec<_>>(),
        [(Some(Host::ClaudeDesktop), ConfigLevel::User)]
    );
    assert_eq!(report.shadowed.len(), 1);
    assert_eq!(report.shadowed[0].source().host, Some(Host::VsCode));

    // Two identical definitions that both lose to a different one: one
    // shadowed definition, listing both sources.
    setup.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}}}"#,
    );
    setup.home_file(
        VSCODE_USER,
        r#"{"servers": {"github": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_HOST": "github.com", "GITHUB_TOKEN": "${GITHUB_TOKEN}"}}}}"#,
    );
    let report = setup.discover(DiscoveryOptions::default());
    assert_eq!(report.servers().count(), 1);
    assert!(report.servers().next().unwrap().also_in.is_empty());
    assert_eq!(report.shadowed.len(), 1, "{:#?}", report.shadowed);
    let shadowed = &report.shadowed[0];
    assert_eq!(shadowed.source().host, Some(Host::ClaudeDesktop));
    assert_eq!(shadowed.winner.host, Some(Host::ClaudeCode));
    match &shadowed.entry {
        mcp_config::DiscoveryEntry::Server(server) => {
            assert_eq!(
                server.also_in.iter().map(who).collect::<Vec<_>>(),
                [(Some(Host::VsCode), ConfigLevel::User)]
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_source_looked_at_is_listed_with_what_it_held() {
    let setup = Setup::new();
    setup.home_file(
        CLAUDE_DESKTOP,
        r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}, "c": {"url": "https://c.example/mcp"}}}"#,
    );
    setup.home_file(VSCODE_USER, r#"{"servers": {"#);
    setup.project_file(".mcp.json", r#"{"mcpServers": {}}"#);

    let report = setup.discover(DiscoveryOptions::default());
    let files = setup.sources().files();
    assert_eq!(report.sources.len(), files.len());
    for (listed, file) in report.sources.iter().zip(&files) {
        assert_eq!(listed.source.path.as_deref(), Some(file.path.as_path()));
        assert_eq!(listed.source.host, Some(file.host));
        assert_eq!(listed.source.level, file.level);
    }
    let status = |host: Host, level: ConfigLevel| {
        report
            .sources
            .iter()
            .find(|s| s.source.host == Some(host) && s.source.level == level)
            .map(|s| s.status.clone())
            .unwrap()
    };
    assert_eq!(
        status(Host::ClaudeDesktop, ConfigLevel::User),
        SourceStatus::Found { servers: 3 }
    );
    assert_eq!(
        status(Host::ClaudeCode, ConfigLevel::Project),
        SourceStatus::Found { servers: 0 }
    );
    assert_eq!(
        status(Host::Cursor, ConfigLevel::User),
        SourceStatus::NotFound
    );
    match status(Host::VsCode, ConfigLevel::User) {
        SourceStatus::Error { code, message } => {
            assert_eq!(code, "parse_error");
            assert!(message.contains("line 1"), "{message}");
        }
        other => panic!("{other:?}"),
    }

    // Project files off: listed as skipped, never read.
    let mut options = DiscoveryOptions::default();
    options.project_configs = false;
    let report = setup.discover(options);
    let project: Vec<_> = report
        .sources
        .iter()
        .filter(|s| s.source.level == ConfigLevel::Project)
        .collect();
    assert!(!project.is_empty());
    assert!(project.iter().all(|s| s.status == SourceStatus::Skipped));
}

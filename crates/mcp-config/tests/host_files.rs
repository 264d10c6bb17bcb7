//! Host files read from disk without a format: Codex's TOML and goose's YAML are told by their names, found through `FileSource` and `Discovery` as `--config` finds them.
#![cfg(feature = "host-configs")]

use std::fs;
use std::path::{Path, PathBuf};

use mcp_config::{
    ConfigLevel, ConfigSource, Discovery, DiscoveryEntry, DiscoveryOptions, FileSource, Format,
    SourceError, TransportConfig, TransportKind,
};

const CODEX: &str = r#"
# Written by `codex mcp add`.
model = "gpt-5-codex"

[mcp_servers.docs]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
startup_timeout_sec = 20

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"
tool_timeout_sec = 30
"#;

const GOOSE: &str = "\
GOOSE_PROVIDER: openai
extensions:
  developer:
    enabled: true
    name: developer
    type: builtin
  github:
    cmd: npx
    args: [-y, '@modelcontextprotocol/server-github']
    enabled: true
    env_keys: [GITHUB_PERSONAL_ACCESS_TOKEN]
    name: GitHub
    timeout: 300
    type: stdio
  linear:
    enabled: true
    headers:
      Authorization: Bearer ${LINEAR_API_KEY}
    name: Linear
    type: streamable_http
    uri: https://mcp.linear.app/mcp
";

fn write(dir: &Path, relative: &str, text: &str) -> PathBuf {
    let path = dir.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    path
}

fn kinds(source: &FileSource) -> Vec<(String, TransportKind)> {
    let doc = source.load().unwrap_or_else(|e| panic!("{e}"));
    doc.servers()
        .map(|s| (s.id.clone(), s.transport.kind()))
        .collect()
}

#[test]
fn codex_toml_is_read_by_its_name() {
    let home = tempfile::tempdir().unwrap();
    let path = write(home.path(), ".codex/config.toml", CODEX);
    let source = FileSource::new(&path, ConfigLevel::User, "--config");
    let doc = source.load().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(doc.format, Some(Format::Codex));
    assert_eq!(
        kinds(&source),
        [
            ("docs".to_owned(), TransportKind::Stdio),
            ("figma".to_owned(), TransportKind::Http)
        ]
    );
    let figma = doc.servers().nth(1).unwrap();
    assert_eq!(figma.call_timeout_ms, Some(30_000));
    let TransportConfig::Http(http) = &figma.transport else {
        panic!("{figma:?}")
    };
    assert_eq!(http.bearer_token_env.as_deref(), Some("FIGMA_OAUTH_TOKEN"));
}

#[test]
fn goose_yaml_is_read_by_its_name_and_names_what_goose_serves_itself() {
    let home = tempfile::tempdir().unwrap();
    let path = write(home.path(), ".config/goose/config.yaml", GOOSE);
    let source = FileSource::new(&path, ConfigLevel::User, "--config");
    assert_eq!(
        kinds(&source),
        [
            ("github".to_owned(), TransportKind::Stdio),
            ("linear".to_owned(), TransportKind::Http)
        ]
    );
    let doc = source.load().unwrap();
    assert_eq!(doc.format, Some(Format::Goose));
    assert_eq!(doc.warnings.len(), 1, "{:?}", doc.warnings);
    assert!(doc.warnings[0].message.contains("`developer`"));
}

#[test]
fn a_format_given_wins_over_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "servers.toml",
        r#"{"mcpServers": {"a": {"command": "a"}}}"#,
    );
    let source = FileSource::new(&path, ConfigLevel::User, "x").with_format(Format::McpServers);
    assert_eq!(kinds(&source), [("a".to_owned(), TransportKind::Stdio)]);
    // Without it, the name says TOML, and the JSON is not TOML.
    let error = FileSource::new(&path, ConfigLevel::User, "x")
        .load()
        .unwrap_err();
    let SourceError::Document(error) = error else {
        panic!("{error}")
    };
    assert!(error.to_string().contains("not valid TOML"), "{error}");
}

#[test]
fn a_missing_host_file_has_no_servers_and_keeps_its_format() {
    let dir = tempfile::tempdir().unwrap();
    let source = FileSource::new(dir.path().join("config.yaml"), ConfigLevel::User, "x");
    let doc = source.load().unwrap();
    assert_eq!((doc.format, doc.entries.len()), (Some(Format::Goose), 0));
}

#[test]
fn other_names_are_still_told_by_their_content() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mine.json",
        r#"{"servers": {"a": {"type": "stdio", "command": "a"}}}"#,
    );
    let doc = FileSource::new(&path, ConfigLevel::User, "x")
        .load()
        .unwrap();
    assert_eq!(doc.format, Some(Format::VsCode));
}

#[test]
fn discovery_lists_servers_from_codex_and_goose_files_side_by_side() {
    let home = tempfile::tempdir().unwrap();
    let codex = write(home.path(), ".codex/config.toml", CODEX);
    let goose = write(home.path(), ".config/goose/config.yaml", GOOSE);
    let report = Discovery::new(DiscoveryOptions::default())
        .source(FileSource::new(codex, ConfigLevel::User, "Codex"))
        .source(FileSource::new(goose, ConfigLevel::User, "goose"))
        .discover();
    let mut ids: Vec<String> = report
        .entries
        .iter()
        .filter_map(|entry| match entry {
            DiscoveryEntry::Server(server) => Some(server.config.id.clone()),
            _ => None,
        })
        .collect();
    ids.sort();
    assert_eq!(ids, ["docs", "figma", "github", "linear"]);
    // goose's own extension is named, with the file it came from.
    let named: Vec<(&str, Option<&Path>)> = report
        .warnings
        .iter()
        .map(|w| (w.diagnostic.field.as_str(), w.source.path.as_deref()))
        .collect();
    assert_eq!(named.len(), 1, "{named:?}");
    assert_eq!(named[0].0, "extensions.developer.type");
    assert!(named[0].1.is_some_and(|p| p.ends_with("goose/config.yaml")));
}

//! The rules of the hosts' file readers, one test each: what each host's spelling means, and that nothing is read silently wrong.

use mcp_config::{
    Diagnostic, DocumentError, Format, ParsedDocument, ReadContext, ServerConfig, TransportConfig,
    TransportKind, parse_document, parse_document_with, validate,
};

fn context() -> ReadContext {
    ReadContext::new()
        .with_project("/home/dev/projects/webapp")
        .with_home("/home/dev")
}

fn read(text: &str, format: Format) -> ParsedDocument {
    parse_document_with(text, Some(format), &context()).unwrap_or_else(|e| panic!("{e}"))
}

fn server<'d>(doc: &'d ParsedDocument, id: &str) -> &'d ServerConfig {
    doc.servers()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("no server `{id}` in {doc:#?}"))
}

fn stdio(config: &ServerConfig) -> &mcp_config::StdioConfig {
    match &config.transport {
        TransportConfig::Stdio(stdio) => stdio,
        other => panic!("stdio expected, not {other:?}"),
    }
}

fn http(config: &ServerConfig) -> &mcp_config::HttpConfig {
    match &config.transport {
        TransportConfig::Http(http) | TransportConfig::Sse(http) => http,
        other => panic!("HTTP expected, not {other:?}"),
    }
}

fn codes(diagnostics: &[Diagnostic]) -> Vec<(&'static str, &str)> {
    diagnostics
        .iter()
        .map(|d| (d.code(), d.field.as_str()))
        .collect()
}

#[test]
fn a_bad_env_name_in_a_claude_file_is_named_as_written_with_its_position() {
    let text = "{\n  \"mcpServers\": {\n    \"github\": {\n      \"command\": \"npx\",\n      \"env\": {\"GITHUB_TOKEN\": \"${GITHUB_TOKEN}\", \"BAD=NAME\": \"x\"}\n    }\n  }\n}";
    for format in [Format::McpServers, Format::ClaudeCode] {
        let doc = read(text, format);
        let problems = validate(server(&doc, "github"));
        assert_eq!(problems.len(), 1, "{problems:#?}");
        let problem = &problems[0];
        assert_eq!(problem.code(), "invalid_env_key");
        assert_eq!(problem.field, "mcpServers.github.env[\"BAD=NAME\"]");
        assert_eq!((problem.line, problem.column), (Some(5), Some(62)));
        let shown = problem.to_string();
        assert!(
            shown.contains("mcpServers.github.env[\"BAD=NAME\"] at line 5 column 62: "),
            "{shown}"
        );
        assert!(!shown.contains("transport.env"), "{shown}");
    }
}

#[test]
fn store_servers_keep_store_paths() {
    let doc = parse_document(
        r#"{"version": 1, "servers": [{"id": "s", "transport": {"type": "stdio", "command": "x",
            "env": [{"key": "BAD=NAME", "value": "x"}]}}]}"#,
        Some(Format::StoreV1),
    )
    .unwrap();
    let config = doc.servers().next().unwrap();
    assert!(config.origins.is_empty());
    let problems = validate(config);
    assert_eq!(
        codes(&problems),
        [("invalid_env_key", "transport.env[0].key")]
    );
    assert_eq!((problems[0].line, problems[0].column), (None, None));
}

#[test]
fn messages_that_name_a_second_field_name_it_as_written_too() {
    let doc = read(
        r#"{"servers": {"api": {"type": "http", "url": "https://e.com/mcp",
            "headers": {"X-Key": "a", "x-key": "b"}}}}"#,
        Format::VsCode,
    );
    let problems = validate(server(&doc, "api"));
    assert_eq!(
        codes(&problems),
        [("duplicate_header", "servers.api.headers.x-key")]
    );
    assert!(
        problems[0].message.contains("servers.api.headers.X-Key"),
        "{}",
        problems[0].message
    );
}

#[test]
fn the_store_is_strict_json_and_the_hosts_files_are_jsonc() {
    let store = "{\"version\": 1, // a comment\n \"servers\": []}";
    for format in [None, Some(Format::StoreV1)] {
        let error = parse_document(store, format).unwrap_err();
        assert!(
            matches!(&error, DocumentError::Syntax { line: 1, column: 16, message, .. } if message.contains("comment")),
            "{error:?}"
        );
    }
    let host = "{\n  // mine\n  \"mcpServers\": {\"a\": {\"command\": \"x\",},},\n}";
    for format in [
        Format::McpServers,
        Format::ClaudeCode,
        Format::Cursor,
        Format::Windsurf,
        Format::Gemini,
        Format::Cline,
    ] {
        assert_eq!(read(host, format).servers().count(), 1, "{format}");
    }
}

#[test]
fn a_recognised_file_whose_servers_key_is_not_understood_says_so() {
    for (format, key) in [
        (Format::McpServers, "mcpServers"),
        (Format::ClaudeCode, "mcpServers"),
        (Format::Cursor, "mcpServers"),
        (Format::VsCode, "servers"),
        (Format::Windsurf, "mcpServers"),
        (Format::Gemini, "mcpServers"),
        (Format::Zed, "context_servers"),
        (Format::OpenCode, "mcp"),
        (Format::Cline, "mcpServers"),
    ] {
        let text = format!(r#"{{"{key}": 7}}"#);
        let error = parse_document_with(&text, Some(format), &context()).unwrap_err();
        assert_eq!(error.code(), "invalid_document", "{format}");
        assert_eq!(error.position(), key, "{format}");
        assert!(error.to_string().contains("not a number"), "{error}");
    }
}

#[test]
fn claude_code_reads_the_current_projects_entries_and_they_win_over_the_users() {
    let text = r#"{
      "mcpServers": {"docs": {"type": "http", "url": "https://user.example.com/mcp"},
                     "mine": {"command": "mine"}},
      "projects": {
        "/home/dev/projects/webapp": {"mcpServers": {"docs": {"type": "stdio", "command": "docs-mcp"}}},
        "/home/dev/projects/webapp-old": {"mcpServers": {"old": {"command": "old"}}}
      }
    }"#;
    let doc = read(text, Format::ClaudeCode);
    let ids: Vec<&str> = doc.servers().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["mine", "docs"]);
    assert_eq!(stdio(server(&doc, "docs")).command, "docs-mcp");
    assert!(doc.errors().next().is_none());
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    let origin = server(&doc, "docs")
        .origins
        .translate("transport.command")
        .unwrap();
    assert_eq!(
        origin.path,
        "projects[\"/home/dev/projects/webapp\"].mcpServers.docs.command"
    );
    // Without a project, only the user's entries.
    let doc = parse_document_with(text, Some(Format::ClaudeCode), &ReadContext::new()).unwrap();
    let ids: Vec<&str> = doc.servers().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["docs", "mine"]);
    assert_eq!(server(&doc, "docs").transport.kind(), TransportKind::Http);
}

#[test]
fn cursor_substitutes_its_variables_and_says_when_one_is_unknown() {
    let text = r#"{"mcpServers": {"fs": {"command": "npx",
        "args": ["${userHome}/notes", "${workspaceFolder}", "${workspaceFolderBasename}"],
        "env": {"KEY": "${env:FS_KEY}"}, "envFile": ".env"}}}"#;
    let doc = read(text, Format::Cursor);
    let fs = stdio(server(&doc, "fs"));
    assert_eq!(
        fs.args,
        ["/home/dev/notes", "/home/dev/projects/webapp", "webapp"]
    );
    assert_eq!(
        fs.env[0].value,
        mcp_config::SecretValue::literal("${FS_KEY}")
    );
    assert_eq!(
        codes(&doc.warnings),
        [("ignored_env_file", "mcpServers.fs.envFile")]
    );

    let doc = parse_document_with(text, Some(Format::Cursor), &ReadContext::new()).unwrap();
    let error = doc.errors().next().expect("unknown directories are errors");
    assert_eq!(
        codes(&error.diagnostics),
        [
            ("unresolved_variable", "mcpServers.fs.args[0]"),
            ("unresolved_variable", "mcpServers.fs.args[1]"),
            ("unresolved_variable", "mcpServers.fs.args[2]"),
        ]
    );
    assert!(error.diagnostics[0].message.contains("`${userHome}`"));
}

#[test]
fn vscode_inputs_go_to_the_servers_that_reference_them() {
    let text = r#"{
      "inputs": [{"type": "promptString", "id": "pat", "description": "Token", "password": true},
                 {"type": "promptString", "id": "unused"}],
      "servers": {
        "gh": {"type": "http", "url": "https://api.example.com/mcp",
               "headers": {"Authorization": "Bearer ${input:pat}"}},
        "plain": {"type": "stdio", "command": "x", "dev": {"watch": "src"}},
        "typo": {"type": "stdio", "command": "x", "args": ["${input:path}"]}
      }
    }"#;
    let doc = read(text, Format::VsCode);
    let gh = server(&doc, "gh");
    assert_eq!(gh.inputs.len(), 1);
    assert_eq!(
        (
            gh.inputs[0].id.as_str(),
            gh.inputs[0].description.as_deref(),
            gh.inputs[0].password
        ),
        ("pat", Some("Token"), true)
    );
    // Left verbatim: answering the prompt happens when the server connects.
    assert_eq!(
        http(gh).headers[0].value,
        mcp_config::SecretValue::literal("Bearer ${input:pat}")
    );
    assert!(server(&doc, "plain").inputs.is_empty());
    let error = doc.errors().next().unwrap();
    assert_eq!(
        codes(&error.diagnostics),
        [("undeclared_input", "servers.typo.args[0]")]
    );
    assert!(error.diagnostics[0].message.contains("`${input:path}`"));
    assert_eq!(
        codes(&doc.warnings),
        [("ignored_field", "servers.plain.dev")]
    );
    assert!(!doc.warnings.iter().any(|w| w.code() == "ignored_inputs"));

    // A pick list is asked as typed text, and says so.
    let doc = read(
        r#"{"inputs": [{"type": "pickString", "id": "env", "options": ["dev", "prod"], "default": "dev"}],
            "servers": {"s": {"type": "stdio", "command": "x", "args": ["${input:env}"]}}}"#,
        Format::VsCode,
    );
    assert_eq!(server(&doc, "s").inputs[0].default.as_deref(), Some("dev"));
    assert_eq!(codes(&doc.warnings), [("ignored_field", "inputs[0].type")]);
    assert!(doc.warnings[0].message.contains("`options`"));
}

#[test]
fn windsurf_reads_server_url_and_its_env_references() {
    let doc = read(
        r#"{"mcpServers": {"s": {"serverUrl": "https://s.example.com/mcp",
            "headers": {"Authorization": "Bearer ${env:S_TOKEN}"}},
           "u": {"url": "https://u.example.com/mcp"}}}"#,
        Format::Windsurf,
    );
    let s = server(&doc, "s");
    assert_eq!(s.transport.kind(), TransportKind::Http);
    assert_eq!(http(s).url, "https://s.example.com/mcp");
    assert_eq!(
        http(s).headers[0].value,
        mcp_config::SecretValue::literal("Bearer ${S_TOKEN}")
    );
    assert_eq!(server(&doc, "u").transport.kind(), TransportKind::Http);
    assert_eq!(
        server(&doc, "s")
            .origins
            .translate("transport.url")
            .unwrap()
            .path,
        "mcpServers.s.serverUrl"
    );
}

#[test]
fn gemini_maps_its_urls_deadline_tool_lists_and_exclusions() {
    let doc = read(
        r#"{"mcp": {"excluded": ["off"]},
           "mcpServers": {
             "h": {"httpUrl": "https://h.example.com/mcp", "timeout": 2500, "includeTools": ["a"],
                   "excludeTools": ["b"], "trust": true},
             "s": {"url": "https://s.example.com/sse", "trust": false},
             "t": {"type": "http", "url": "https://t.example.com/mcp"},
             "off": {"command": "x", "env": {"A": "$HOME/x", "B": "${C}"}}
           }}"#,
        Format::Gemini,
    );
    let h = server(&doc, "h");
    assert_eq!(h.transport.kind(), TransportKind::Http);
    assert_eq!((h.call_timeout_ms, h.timeout_ms), (Some(2500), None));
    assert!(h.tools.allows("a") && !h.tools.allows("b") && !h.tools.allows("c"));
    assert_eq!(server(&doc, "s").transport.kind(), TransportKind::Sse);
    assert_eq!(server(&doc, "t").transport.kind(), TransportKind::Http);
    let off = server(&doc, "off");
    assert!(!off.enabled);
    let values: Vec<_> = stdio(off).env.iter().map(|e| e.value.clone()).collect();
    assert_eq!(
        values,
        [
            mcp_config::SecretValue::literal("${HOME}/x"),
            mcp_config::SecretValue::literal("${C}")
        ]
    );
    // `trust` is reported once for the file, naming both servers.
    assert_eq!(
        codes(&doc.warnings),
        [("ignored_field", "mcpServers.h.trust")]
    );
    assert!(
        doc.warnings[0].message.contains("`h`, `s`"),
        "{}",
        doc.warnings[0]
    );
}

#[test]
fn zed_reads_its_three_forms_and_names_extension_servers() {
    let doc = read(
        r#"{"context_servers": {
            "flat": {"source": "custom", "command": "npx", "args": ["a"], "env": {"K": "v"}},
            "nested": {"command": {"path": "uvx", "args": ["b"], "env": {"L": "w"}}, "settings": {}},
            "remote": {"url": "https://r.example.com/mcp", "headers": {"X": "y"}},
            "ext": {"source": "extension", "enabled": true, "settings": {"key": "v"}},
            "off": {"command": "z", "enabled": false}
        }}"#,
        Format::Zed,
    );
    let ids: Vec<&str> = doc.servers().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["flat", "nested", "remote", "off"]);
    assert_eq!(stdio(server(&doc, "flat")).args, ["a"]);
    let nested = stdio(server(&doc, "nested"));
    assert_eq!(
        (nested.command.as_str(), nested.args.as_slice()),
        ("uvx", &["b".to_owned()][..])
    );
    assert_eq!(nested.env[0].key, "L");
    assert_eq!(
        server(&doc, "nested")
            .origins
            .translate("transport.env[0].value")
            .unwrap()
            .path,
        "context_servers.nested.command.env.L"
    );
    assert_eq!(http(server(&doc, "remote")).headers[0].key, "X");
    assert!(!server(&doc, "off").enabled);
    let unstartable: Vec<_> = doc
        .warnings
        .iter()
        .filter(|w| w.code() == "unstartable_server")
        .collect();
    assert_eq!(unstartable.len(), 1);
    assert_eq!(unstartable[0].field, "context_servers.ext");
    assert!(unstartable[0].message.contains("`ext`"));
}

#[test]
fn opencode_reads_command_arrays_environment_and_oauth() {
    let doc = read(
        r#"{"mcp": {
            "local": {"type": "local", "command": ["npx", "-y", "pkg"],
                      "environment": {"K": "{env:MY_K}"}, "enabled": false, "timeout": 3000},
            "remote": {"type": "remote", "url": "https://r.example.com/mcp",
                       "headers": {"Authorization": "Bearer {env:R_TOKEN}"},
                       "oauth": {"clientId": "id", "clientSecret": "{env:R_SECRET}", "scope": "a b"}}
        }}"#,
        Format::OpenCode,
    );
    let local = server(&doc, "local");
    assert!(!local.enabled);
    assert_eq!(local.timeout_ms, Some(3000));
    let command = stdio(local);
    assert_eq!(
        (command.command.as_str(), command.args.as_slice()),
        ("npx", &["-y".to_owned(), "pkg".to_owned()][..])
    );
    assert_eq!(
        command.env[0].value,
        mcp_config::SecretValue::literal("${MY_K}")
    );
    assert_eq!(
        local.origins.translate("transport.args[1]").unwrap().path,
        "mcp.local.command[2]"
    );
    let remote = http(server(&doc, "remote"));
    assert_eq!(
        remote.headers[0].value,
        mcp_config::SecretValue::literal("Bearer ${R_TOKEN}")
    );
    let oauth = remote.oauth.as_ref().unwrap();
    assert_eq!(oauth.client_id.as_deref(), Some("id"));
    assert_eq!(oauth.client_secret_env.as_deref(), Some("R_SECRET"));
    assert_eq!(oauth.scopes, ["a", "b"]);
}

#[test]
fn cline_reads_seconds_and_its_transport_names() {
    let doc = read(
        r#"{"mcpServers": {
            "s": {"command": "node", "timeout": 90, "disabled": true, "autoApprove": ["x"]},
            "h": {"type": "streamableHttp", "url": "https://h.example.com/mcp"},
            "e": {"url": "https://e.example.com/sse", "autoApprove": []}
        }}"#,
        Format::Cline,
    );
    let s = server(&doc, "s");
    assert_eq!(
        (s.call_timeout_ms, s.timeout_ms, s.enabled),
        (Some(90_000), None, false)
    );
    assert_eq!(server(&doc, "h").transport.kind(), TransportKind::Http);
    assert_eq!(server(&doc, "e").transport.kind(), TransportKind::Sse);
    assert_eq!(
        codes(&doc.warnings),
        [("ignored_field", "mcpServers.s.autoApprove")]
    );
}

//! No secret value (literal env and header values, tokens) appears in `list()`, in any `Debug` or `Display` output, or in any error.
//!
//! Every test plants one recognisable canary in secret positions and checks
//! every rendering it can reach. URLs and arguments are readable
//! configuration (the store format's rule: credentials never go in command
//! arguments or URLs), but servers' own instructions often put an API key
//! on the command line or a token in a URL's query, so `Debug` shows
//! neither: how many arguments, and the URL's scheme and host.

use std::collections::HashMap;
use std::fs;

use mcp_config::{
    ConfigLevel, Discovery, DiscoveryOptions, ExaHook, FileSource, HttpConfig, SecretEntry,
    ServerConfig, StdioConfig, Store, TransportConfig, expand, parse_document, parse_store_server,
    resolve, server_to_store_json, validate,
};

const CANARY: &str = "sk-CANARY-7f3a9c";

/// Fails if any rendering contains the canary.
#[track_caller]
fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(CANARY), "{what} leaks the secret:\n{text}");
    assert!(
        !text.contains("CANARY"),
        "{what} leaks part of the secret:\n{text}"
    );
}

/// `Debug`, pretty `Debug` and `Display` of an error or diagnostic.
#[track_caller]
fn assert_clean_error(what: &str, error: &(impl std::fmt::Debug + std::fmt::Display)) {
    assert_clean(what, &format!("{error}"));
    assert_clean(what, &format!("{error:?}"));
    assert_clean(what, &format!("{error:#?}"));
}

fn secret_stdio() -> ServerConfig {
    let mut stdio = StdioConfig::new("srv");
    stdio.env = vec![
        SecretEntry::new("TOKEN", CANARY),
        SecretEntry::new("MIXED", format!("prefix-{CANARY}-${{HOME:-x}}")),
    ];
    ServerConfig::new("stdio", TransportConfig::Stdio(stdio))
}

fn secret_http() -> ServerConfig {
    let mut http = HttpConfig::new("https://api.example.com/mcp");
    http.headers = vec![SecretEntry::new("X-Api-Key", CANARY)];
    ServerConfig::new("http", TransportConfig::Http(http))
}

#[test]
fn list_and_its_json_carry_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("mcp.json"));
    store.create(secret_stdio()).unwrap();
    store.create(secret_http()).unwrap();
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 2);
    for server in &listed {
        assert_clean("list() Debug", &format!("{server:#?}"));
        let json = server_to_store_json(server).to_string();
        assert_clean("list() JSON", &json);
        assert!(json.contains(r#""saved":true"#), "{json}");
    }
    // The values are on disk (plaintext, as the store format says) and come back from load().
    assert!(fs::read_to_string(store.path()).unwrap().contains(CANARY));
    let loaded = store.load().unwrap();
    assert_clean("load() Debug", &format!("{loaded:?}"));
}

#[test]
fn debug_of_configs_resolved_configs_and_reports_is_redacted() {
    assert_clean(
        "ServerConfig",
        &format!("{:?} {:#?}", secret_stdio(), secret_http()),
    );

    let mut bearer = HttpConfig::new("https://api.example.com/mcp");
    bearer.bearer_token_env = Some("API_TOKEN".into());
    bearer.headers = vec![SecretEntry::new("X-Key", "${KEY}")];
    let mut passthrough = StdioConfig::new("srv");
    passthrough.env_passthrough = vec!["PASSED".into()];
    let env = HashMap::from([
        ("API_TOKEN".to_owned(), CANARY.to_owned()),
        ("KEY".to_owned(), CANARY.to_owned()),
        ("PASSED".to_owned(), CANARY.to_owned()),
        ("HOME".to_owned(), "/home/u".to_owned()),
    ]);
    for config in [
        ServerConfig::new("bearer", TransportConfig::Http(bearer)),
        ServerConfig::new("passthrough", TransportConfig::Stdio(passthrough)),
        secret_stdio(),
        secret_http(),
    ] {
        let resolved = resolve(&config, &env).unwrap();
        assert_clean("ResolvedConfig", &format!("{resolved:?} {resolved:#?}"));
    }

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mcp.json");
    fs::write(
        &file,
        format!(
            r#"{{"mcpServers": {{
                "a": {{"command": "x", "env": {{"T": "{CANARY}"}}}},
                "b": {{"url": "https://e.com/mcp", "headers": {{"Authorization": "Bearer {CANARY}"}}}},
                "exa": {{"command": "exa-mcp-server", "env": {{"EXA_API_KEY": "{CANARY}"}}}},
                "bad": {{"command": "x", "env": {{"T": "{CANARY}\r\n"}}, "cwd": "rel"}}
            }}}}"#
        ),
    )
    .unwrap();
    let report = Discovery::new(DiscoveryOptions::default())
        .source(FileSource::new(&file, ConfigLevel::User, "file"))
        .native_hook(ExaHook)
        .discover();
    assert_eq!(report.servers().count(), 2);
    assert_eq!(report.native.len(), 1);
    assert_eq!(
        report.native[0].claim.api_key.as_ref().unwrap().expose(),
        CANARY
    );
    assert_clean("DiscoveryReport", &format!("{report:?} {report:#?}"));
}

#[test]
fn debug_shows_no_argument_and_no_url_path_or_query() {
    let mut stdio = StdioConfig::new("npx");
    stdio.args = vec!["-y".into(), "server".into(), format!("--api-key={CANARY}")];
    let mut http = HttpConfig::new(format!("https://api.example.com/mcp/{CANARY}?key={CANARY}"));
    http.bearer_token_env = Some("API_TOKEN".into());
    assert_clean("StdioConfig", &format!("{stdio:?} {stdio:#?}"));
    assert_clean("HttpConfig", &format!("{http:?} {http:#?}"));
    assert!(format!("{stdio:?}").contains("<3 arguments, redacted>"));
    assert!(format!("{http:?}").contains("https://api.example.com/…"));
    let env = HashMap::from([("API_TOKEN".to_owned(), "t".to_owned())]);
    for config in [
        ServerConfig::new("args", TransportConfig::Stdio(stdio)),
        ServerConfig::new("query", TransportConfig::Http(http.clone())),
        ServerConfig::new("sse", TransportConfig::Sse(http)),
    ] {
        assert_clean("ServerConfig", &format!("{config:?}"));
        let resolved = resolve(&config, &env).unwrap();
        assert_clean("ResolvedConfig", &format!("{resolved:?} {resolved:#?}"));
    }
}

#[test]
fn validation_and_resolution_errors_name_no_secret() {
    let with_value = |value: &str| {
        let mut http = HttpConfig::new(format!("https://user:{CANARY}@example.com/#{CANARY}"));
        http.headers = vec![
            SecretEntry::new("X-A", value),
            SecretEntry::new(format!("{CANARY}: injected"), "v"),
        ];
        ServerConfig::new("s", TransportConfig::Http(http))
    };
    let config = with_value(&format!("{CANARY}\r\nX-Evil: 1 ${{UNTERMINATED"));
    let problems = validate(&config);
    // The URL's user info and fragment are reported by the `http`
    // feature's URL checks; the headers are checked in every build.
    let least = if cfg!(feature = "http") { 4 } else { 2 };
    assert!(problems.len() >= least, "{problems:#?}");
    for problem in &problems {
        assert_clean_error("validation diagnostic", problem);
    }
    let error = resolve(&config, &HashMap::<String, String>::new()).unwrap_err();
    assert_clean_error("ResolveError (validation)", &error);

    // Problems only resolution can see: a missing variable next to a
    // secret, and a secret from the environment that breaks a header.
    let mut http = HttpConfig::new("https://${HOST}/mcp");
    http.headers = vec![
        SecretEntry::new("X-A", format!("{CANARY}-${{MISSING}}")),
        SecretEntry::new("X-B", "${BROKEN}"),
    ];
    let config = ServerConfig::new("s", TransportConfig::Http(http));
    let env = HashMap::from([
        ("HOST".to_owned(), format!("user:{CANARY}@example.com")),
        ("BROKEN".to_owned(), format!("{CANARY}\nX-Evil: 1")),
    ]);
    let error = resolve(&config, &env).unwrap_err();
    let codes: Vec<&str> = error.problems.iter().map(|p| p.code()).collect();
    let expected: &[&str] = if cfg!(feature = "http") {
        &["url_userinfo", "missing_env", "invalid_header_value"]
    } else {
        &["missing_env", "invalid_header_value"]
    };
    assert_eq!(codes, expected);
    assert_clean_error("ResolveError (resolution)", &error);

    let error = expand(
        &format!("{CANARY}${{NOPE}}"),
        &HashMap::<String, String>::new(),
    )
    .unwrap_err();
    assert_clean_error("ExpandError", &error);
    let error = expand(
        &format!("{CANARY}${{{CANARY}}}"),
        &HashMap::<String, String>::new(),
    )
    .unwrap_err();
    assert_clean_error("ExpandError (invalid name)", &error);
}

#[test]
fn parse_errors_name_no_secret() {
    let documents = [
        // Secrets where another type is expected.
        format!(
            r#"{{"mcpServers": {{"s": {{"command": "x", "timeout": "{CANARY}", "args": [{{"k": "{CANARY}"}}], "env": {{"T": ["{CANARY}"]}}}}}}}}"#
        ),
        format!(
            r#"{{"mcpServers": {{"s": {{"type": "stdio", "transport": "http", "command": "x", "env": {{"T": "{CANARY}"}}}}}}}}"#
        ),
        format!(r#"{{"mcpServers": {{"s": "{CANARY}"}}}}"#),
        format!(r#"{{"servers": {{"s": {{"type": 1, "headers": {{"A": "{CANARY}"}}}}}}}}"#),
        format!(
            r#"{{"version": 1, "servers": [{{"id": "s", "transport": {{"type": "stdio", "env": [{{"value": "{CANARY}"}}, "{CANARY}", {{"key": "K", "value": ["{CANARY}"]}}]}}}}]}}"#
        ),
        format!(r#"{{"version": "{CANARY}"}}"#),
        format!(r#"{{"version": 1, "servers": "{CANARY}"}}"#),
        // Syntax errors right next to a secret.
        format!(r#"{{"mcpServers": {{"s": {{"env": {{"T": "{CANARY}" "U": 1}}}}}}}}"#),
        format!("{{\"mcpServers\": {{\"s\": {{\"env\": {{\"T\": \"{CANARY}\u{1}\"}}}}}}}}"),
        format!(r#"{{"mcpServers": {{"s": {{"env": {{"T": "{CANARY}\q"}}}}}}}}"#),
        format!(r#"{{"mcpServers": {{"s": {{"env": {{"T": "{CANARY}"#),
    ];
    for document in &documents {
        match parse_document(document, None) {
            Err(error) => assert_clean_error("DocumentError", &error),
            Ok(parsed) => {
                assert!(
                    parsed.errors().count() > 0,
                    "{document} should not parse cleanly"
                );
                for error in parsed.errors() {
                    assert_clean_error("EntryError", error);
                }
                assert_clean("ParsedDocument", &format!("{parsed:?}"));
            }
        }
    }
    let error = parse_store_server(&format!(
        r#"{{"id": "s", "transport": {{"type": "stdio", "command": "{CANARY}"#
    ))
    .unwrap_err();
    assert_clean_error("EntryError (single server)", &error);
}

#[test]
fn store_errors_name_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let store = Store::open(&path);

    // Invalid config: the canary in a header value with a line break.
    let mut http = HttpConfig::new("https://e.com/mcp");
    http.headers = vec![SecretEntry::new("X-A", format!("{CANARY}\r\n"))];
    let error = store
        .create(ServerConfig::new("s", TransportConfig::Http(http)))
        .unwrap_err();
    assert_eq!(error.code(), "invalid_config");
    assert_clean_error("StoreError::Invalid", &error);

    store.create(secret_stdio()).unwrap();
    let error = store.create(secret_stdio()).unwrap_err();
    assert_clean_error("StoreError::DuplicateId", &error);

    // A malformed file with the canary right at the error.
    fs::write(&path, format!("{{\"version\": 1, \"servers\": [{{\"id\": \"s\", \"transport\": {{\"type\": \"stdio\", \"env\": [{{\"key\": \"T\", \"value\": \"{CANARY}\" oops")).unwrap();
    let error = store.list().unwrap_err();
    assert_eq!(error.code(), "malformed_store");
    assert_clean_error("StoreError::Malformed (syntax)", &error);

    // A bad entry with the canary in a wrongly typed field.
    fs::write(
        &path,
        format!(r#"{{"version": 1, "servers": [{{"id": "s", "timeout": "{CANARY}", "transport": {{"type": "stdio", "command": "x", "env": [{{"key": "T", "value": 1}}, {{"value": "{CANARY}"}}]}}}}]}}"#),
    )
    .unwrap();
    let error = store.save(secret_http()).unwrap_err();
    assert_eq!(error.code(), "malformed_store");
    assert_clean_error("StoreError::Malformed (entry)", &error);
}

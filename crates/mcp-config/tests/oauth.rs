//! The `oauth` section of HTTP servers: store round trips, resolution of the secret's variable, the grant, fingerprints, and that the secret is never shown.

use std::collections::HashMap;

use mcp_config::{
    Code, HttpConfig, OAuthConfig, OAuthGrant, ResolvedTransport, ServerConfig, Store,
    TransportConfig, fingerprint, parse_mcp_servers, resolve, validate,
};

const SECRET: &str = "cs-RECOGNISABLE-CLIENT-SECRET";

fn server() -> ServerConfig {
    let mut oauth = OAuthConfig::new();
    oauth.client_id = Some("mcpctl".into());
    oauth.client_secret_env = Some("TRACKER_SECRET".into());
    oauth.scopes = vec!["read".into(), "write".into()];
    oauth.redirect_port = Some(8765);
    let mut http = HttpConfig::new("https://tracker.example.com/mcp");
    http.oauth = Some(oauth);
    ServerConfig::new("tracker", TransportConfig::Http(http))
}

fn env() -> HashMap<String, String> {
    HashMap::from([("TRACKER_SECRET".to_owned(), SECRET.to_owned())])
}

fn oauth_of(config: &ServerConfig) -> &OAuthConfig {
    let TransportConfig::Http(http) = &config.transport else {
        panic!("not http");
    };
    http.oauth.as_ref().expect("oauth kept")
}

#[test]
fn the_store_keeps_the_oauth_section_through_save_and_list() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("mcp.json"));
    store.save(server()).unwrap();
    let listed = store.list().unwrap();
    assert_eq!(oauth_of(&listed[0]), oauth_of(&server()));
    let loaded = store.load().unwrap();
    assert_eq!(loaded[0], server());
    // Saving what `list()` handed out (a UI's round trip) keeps it too.
    store.save(listed[0].clone()).unwrap();
    assert_eq!(store.load().unwrap()[0], server());
}

#[test]
fn the_secret_is_read_from_its_variable_and_never_shown() {
    let resolved = resolve(&server(), &env()).unwrap();
    let ResolvedTransport::Http(http) = &resolved.transport else {
        panic!("not http");
    };
    let oauth = http.oauth.as_ref().unwrap();
    assert_eq!(oauth.client_secret.as_ref().unwrap().expose(), SECRET);
    assert_eq!(oauth.redirect_port, Some(8765));
    for text in [
        format!("{resolved:?}"),
        format!("{:?}", server()),
        format!("{:?}", server().redacted()),
    ] {
        assert!(!text.contains(SECRET), "{text}");
    }

    let error = resolve(&server(), &HashMap::new()).unwrap_err();
    assert_eq!(error.code(), "missing_env");
    assert_eq!(error.missing_variables(), ["TRACKER_SECRET"]);
    assert_eq!(error.problems[0].field, "transport.oauth.clientSecretEnv");
}

#[test]
fn the_fingerprint_covers_the_client_but_not_the_redirect_port() {
    let base = fingerprint(&resolve(&server(), &env()).unwrap());

    let mut plain = server();
    let TransportConfig::Http(http) = &mut plain.transport else {
        unreachable!()
    };
    http.oauth = None;
    let without = fingerprint(&resolve(&plain, &env()).unwrap());
    assert_ne!(base, without);
    // A server without `oauth` keeps the fingerprint it always had.
    let bare = ServerConfig::new(
        "other",
        TransportConfig::Http(HttpConfig::new("https://tracker.example.com/mcp")),
    );
    assert_eq!(without, fingerprint(&resolve(&bare, &env()).unwrap()));

    let mut changed = server();
    let TransportConfig::Http(http) = &mut changed.transport else {
        unreachable!()
    };
    let oauth = http.oauth.as_mut().unwrap();
    oauth.redirect_port = Some(9999);
    oauth.scopes.reverse();
    assert_eq!(base, fingerprint(&resolve(&changed, &env()).unwrap()));

    let other_secret = HashMap::from([("TRACKER_SECRET".to_owned(), "other".to_owned())]);
    assert_ne!(
        base,
        fingerprint(&resolve(&server(), &other_secret).unwrap())
    );

    // Switching the grant changes whose credentials reach the server: a new
    // connection (and cache key), not the old one kept as "unchanged".
    assert_ne!(base, fingerprint(&resolve(&machine(), &env()).unwrap()));
}

#[test]
fn a_literal_secret_is_refused_without_being_quoted() {
    let doc = parse_mcp_servers(&format!(
        r#"{{"mcpServers": {{"t": {{"url": "https://x.example.com/mcp",
            "oauth": {{"clientId": "a", "clientSecret": "{SECRET}"}}}}}}}}"#
    ))
    .unwrap();
    let error = doc.errors().next().unwrap();
    assert_eq!(error.code(), "oauth_literal_secret");
    assert!(!error.to_string().contains(SECRET));
    assert!(!format!("{error:?}").contains(SECRET));
}

/// A machine-to-machine server: the client credentials grant.
fn machine() -> ServerConfig {
    let mut config = server();
    let TransportConfig::Http(http) = &mut config.transport else {
        unreachable!()
    };
    http.oauth.as_mut().unwrap().grant = OAuthGrant::ClientCredentials;
    config
}

#[test]
fn the_grant_survives_the_store_and_resolution() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let store = Store::open(&path);
    store.save(machine()).unwrap();
    let mut code = server();
    code.id = "code".into();
    store.save(code).unwrap();
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        written["servers"][0]["transport"]["oauth"]["grant"],
        "client_credentials"
    );
    // The default is not written: older stores read back unchanged.
    assert!(
        written["servers"][1]["transport"]["oauth"]
            .get("grant")
            .is_none(),
        "{written}"
    );
    let loaded = store.load().unwrap();
    assert_eq!(oauth_of(&loaded[0]).grant, OAuthGrant::ClientCredentials);
    assert_eq!(oauth_of(&loaded[1]).grant, OAuthGrant::AuthorizationCode);

    let resolved = resolve(&machine(), &env()).unwrap();
    let ResolvedTransport::Http(http) = &resolved.transport else {
        panic!("not http");
    };
    let oauth = http.oauth.as_ref().unwrap();
    assert_eq!(oauth.grant, OAuthGrant::ClientCredentials);
    assert_eq!(oauth.client_secret.as_ref().unwrap().expose(), SECRET);
    let resolved = resolve(&server(), &env()).unwrap();
    let ResolvedTransport::Http(http) = &resolved.transport else {
        panic!("not http");
    };
    assert_eq!(
        http.oauth.as_ref().unwrap().grant,
        OAuthGrant::AuthorizationCode
    );
}

#[test]
fn the_client_credentials_grant_needs_a_client_id_and_a_secret_variable() {
    assert!(
        validate(&machine()).is_empty(),
        "{:?}",
        validate(&machine())
    );
    for (clear_id, clear_secret, fields) in [
        (true, false, vec!["transport.oauth.clientId"]),
        (false, true, vec!["transport.oauth.clientSecretEnv"]),
        (
            true,
            true,
            vec![
                "transport.oauth.clientId",
                "transport.oauth.clientSecretEnv",
            ],
        ),
    ] {
        let mut config = machine();
        let TransportConfig::Http(http) = &mut config.transport else {
            unreachable!()
        };
        let oauth = http.oauth.as_mut().unwrap();
        if clear_id {
            oauth.client_id = None;
        }
        if clear_secret {
            oauth.client_secret_env = None;
        }
        let problems = validate(&config);
        let incomplete: Vec<&str> = problems
            .iter()
            .filter(|d| d.code() == "oauth_client_credentials_incomplete")
            .map(|d| d.field.as_str())
            .collect();
        assert_eq!(incomplete, fields);
        // The store refuses it, and resolution does too.
        let dir = tempfile::tempdir().unwrap();
        let refused = Store::open(dir.path().join("mcp.json")).save(config.clone());
        assert!(refused.is_err(), "{refused:?}");
        let error = resolve(&config, &env()).unwrap_err();
        assert!(
            error
                .problems
                .iter()
                .any(|d| d.code == Code::OAuthClientCredentialsIncomplete),
            "{error}"
        );
        assert!(!error.to_string().contains(SECRET));
    }
    // The same section with the default grant is fine without a secret.
    let mut config = server();
    let TransportConfig::Http(http) = &mut config.transport else {
        unreachable!()
    };
    http.oauth.as_mut().unwrap().client_secret_env = None;
    assert!(validate(&config).is_empty());
}

#[test]
fn an_unknown_grant_is_an_invalid_field_that_names_the_accepted_values() {
    for grant in [r#""password""#, "true", r#""CLIENT_CREDENTIALS""#, "{}"] {
        let doc = parse_mcp_servers(&format!(
            r#"{{"mcpServers": {{
                "t": {{"url": "https://x.example.com/mcp", "oauth": {{"grant": {grant}}}}},
                "ok": {{"url": "https://y.example.com/mcp"}}}}}}"#
        ))
        .unwrap();
        let error = doc.errors().next().unwrap();
        assert_eq!(error.code(), "invalid_field");
        let problem = &error.diagnostics[0];
        assert_eq!(problem.field, "mcpServers.t.oauth.grant");
        assert!(
            problem.message.contains("`authorization_code`"),
            "{problem}"
        );
        assert!(
            problem.message.contains("`client_credentials`"),
            "{problem}"
        );
        assert!(!problem.message.contains("password"), "{problem}");
        // The file's other servers still load.
        assert_eq!(doc.servers().count(), 1);
    }
}

/// A workload: the JWT bearer grant, its token in a file the platform mounts.
fn workload() -> ServerConfig {
    let mut oauth = OAuthConfig::new();
    oauth.client_id = Some("workload".into());
    oauth.grant = OAuthGrant::JwtBearer;
    oauth.assertion_file = Some("/var/run/secrets/mcp/token".into());
    let mut http = HttpConfig::new("https://tracker.example.com/mcp");
    http.oauth = Some(oauth);
    ServerConfig::new("workload", TransportConfig::Http(http))
}

#[test]
fn a_jwt_bearer_section_is_read_stored_and_resolved_to_where_its_token_is() {
    let doc = parse_mcp_servers(
        r#"{"mcpServers": {
            "f": {"url": "https://x.example.com/mcp", "oauth": {"grant": "jwt_bearer",
                  "clientId": "w", "assertionFile": "/run/token"}},
            "e": {"url": "https://y.example.com/mcp", "oauth": {"grant": "jwt_bearer",
                  "assertionEnv": "WORKLOAD_JWT"}}}}"#,
    )
    .unwrap();
    let servers: Vec<&ServerConfig> = doc.servers().collect();
    assert_eq!(servers.len(), 2, "{:?}", doc.errors().collect::<Vec<_>>());
    let by_id = |id: &str| *servers.iter().find(|s| s.id == id).unwrap();
    assert_eq!(oauth_of(by_id("f")).grant, OAuthGrant::JwtBearer);
    assert_eq!(
        oauth_of(by_id("f")).assertion_file.as_deref(),
        Some("/run/token")
    );
    assert_eq!(
        oauth_of(by_id("e")).assertion_env.as_deref(),
        Some("WORKLOAD_JWT")
    );
    assert!(validate(by_id("e")).is_empty());

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let store = Store::open(&path);
    store.save(workload()).unwrap();
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let section = &written["servers"][0]["transport"]["oauth"];
    assert_eq!(section["grant"], "jwt_bearer");
    assert_eq!(section["assertionFile"], "/var/run/secrets/mcp/token");
    assert_eq!(store.load().unwrap()[0], workload());

    // Resolution names the file; it reads nothing (the JWT is read when a
    // token is asked for).
    let resolved = resolve(&workload(), &HashMap::new()).unwrap();
    let ResolvedTransport::Http(http) = &resolved.transport else {
        panic!("not http");
    };
    assert_eq!(
        http.oauth.as_ref().unwrap().assertion,
        Some(mcp_config::AssertionSource::File(
            "/var/run/secrets/mcp/token".into()
        ))
    );
    // Where the token is read is part of what the server is.
    let mut moved = workload();
    let TransportConfig::Http(http) = &mut moved.transport else {
        unreachable!()
    };
    http.oauth.as_mut().unwrap().assertion_file = Some("/elsewhere/token".into());
    let fingerprint_of =
        |config: &ServerConfig| fingerprint(&resolve(config, &HashMap::new()).unwrap());
    assert_ne!(fingerprint_of(&workload()), fingerprint_of(&moved));
    // A project's server that reads a file or variable of the person's
    // needs their approval, naming it.
    let subject = mcp_config::TrustSubject::of(&workload()).unwrap();
    assert_eq!(subject.reads(), ["file:/var/run/secrets/mcp/token"]);
}

#[test]
fn the_jwt_bearer_grant_needs_exactly_one_absolute_token_source_and_others_none() {
    assert!(
        validate(&workload()).is_empty(),
        "{:?}",
        validate(&workload())
    );
    let cases: [(Option<&str>, Option<&str>, OAuthGrant, &str); 5] = [
        (None, None, OAuthGrant::JwtBearer, "transport.oauth"),
        (
            Some("/run/token"),
            Some("JWT"),
            OAuthGrant::JwtBearer,
            "transport.oauth.assertionEnv",
        ),
        (
            Some("token.jwt"),
            None,
            OAuthGrant::JwtBearer,
            "transport.oauth.assertionFile",
        ),
        (
            None,
            Some(" "),
            OAuthGrant::JwtBearer,
            "transport.oauth.assertionEnv",
        ),
        (
            Some("/run/token"),
            None,
            OAuthGrant::AuthorizationCode,
            "transport.oauth.assertionFile",
        ),
    ];
    for (file, env, grant, field) in cases {
        let mut config = workload();
        let TransportConfig::Http(http) = &mut config.transport else {
            unreachable!()
        };
        let oauth = http.oauth.as_mut().unwrap();
        oauth.assertion_file = file.map(str::to_owned);
        oauth.assertion_env = env.map(str::to_owned);
        oauth.grant = grant;
        let problems = validate(&config);
        let incomplete: Vec<&str> = problems
            .iter()
            .filter(|d| d.code() == "oauth_jwt_bearer_incomplete")
            .map(|d| d.field.as_str())
            .collect();
        assert_eq!(incomplete, [field], "{file:?} {env:?} {grant}");
        let error = resolve(&config, &HashMap::new()).unwrap_err();
        assert!(
            error
                .problems
                .iter()
                .any(|d| d.code == Code::OAuthJwtBearerIncomplete),
            "{error}"
        );
    }
}

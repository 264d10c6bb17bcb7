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

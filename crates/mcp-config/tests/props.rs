//! Property tests: store format round trips, fingerprint invariance and sensitivity, `${VAR}` expansion, and readers that never panic.

use std::collections::HashMap;

use mcp_config::{
    EnvHeader, Format, HttpConfig, ProtocolEra, SecretEntry, SecretValue, ServerConfig,
    StdioConfig, Store, TransportConfig, check_references, expand, fingerprint, parse_document,
    parse_mcp_servers, parse_store_v1, resolve, validate, write_store_v1,
};
use proptest::prelude::*;
use proptest::sample::Index;

fn text() -> impl Strategy<Value = String> {
    "\\PC{0,10}"
}

fn nonempty_text() -> impl Strategy<Value = String> {
    "\\PC{1,10}"
}

fn secret_value() -> impl Strategy<Value = SecretValue> {
    prop_oneof![
        4 => text().prop_map(SecretValue::literal),
        1 => Just(SecretValue::Saved),
    ]
}

fn secret_entries() -> impl Strategy<Value = Vec<SecretEntry>> {
    prop::collection::vec((text(), secret_value()), 0..4).prop_map(|rows| {
        rows.into_iter()
            .map(|(key, value)| {
                let mut entry = SecretEntry::saved(key);
                entry.value = value;
                entry
            })
            .collect()
    })
}

/// Any transport the store can hold, valid or not. Empty `cwd` and
/// `bearerTokenEnv` are written as `""` and read back as `None`, so only
/// nonempty ones are generated as `Some`.
fn transport() -> impl Strategy<Value = TransportConfig> {
    let stdio = (
        text(),
        prop::collection::vec(text(), 0..4),
        secret_entries(),
        prop::collection::vec(text(), 0..3),
        prop::option::of(nonempty_text()),
    )
        .prop_map(|(command, args, env, passthrough, cwd)| {
            let mut stdio = StdioConfig::new(command);
            stdio.args = args;
            stdio.env = env;
            stdio.env_passthrough = passthrough;
            stdio.cwd = cwd;
            TransportConfig::Stdio(stdio)
        });
    let http = (
        any::<bool>(),
        text(),
        prop::option::of(nonempty_text()),
        secret_entries(),
        prop::collection::vec((text(), text()), 0..3),
    )
        .prop_map(|(sse, url, bearer, headers, env_headers)| {
            let mut http = HttpConfig::new(url);
            http.bearer_token_env = bearer;
            http.headers = headers;
            http.env_headers = env_headers
                .into_iter()
                .map(|(header, var)| EnvHeader::new(header, var))
                .collect();
            if sse {
                TransportConfig::Sse(http)
            } else {
                TransportConfig::Http(http)
            }
        });
    prop_oneof![stdio, http]
}

fn server(index: usize) -> impl Strategy<Value = ServerConfig> {
    (
        text(),
        text(),
        any::<bool>(),
        prop::option::of(text()),
        prop::option::of(any::<u64>()),
        prop::sample::select(ProtocolEra::ALL.to_vec()),
        transport(),
    )
        .prop_map(
            move |(id, name, enabled, description, timeout_ms, era, transport)| {
                // Ids must be unique within a document; the index makes them so.
                let mut config = ServerConfig::new(format!("{id}#{index}"), transport);
                config.name = name;
                config.enabled = enabled;
                config.description = description;
                config.timeout_ms = timeout_ms;
                config.era = era;
                config
            },
        )
}

fn servers() -> impl Strategy<Value = Vec<ServerConfig>> {
    (0usize..5).prop_flat_map(|count| (0..count).map(server).collect::<Vec<_>>())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn store_format_round_trips(servers in servers()) {
        let text = write_store_v1(&servers);
        let document = parse_store_v1(&text).unwrap();
        let back: Vec<ServerConfig> = document.entries.into_iter().map(Result::unwrap).collect();
        prop_assert_eq!(&back, &servers);
        // And the text is a fixed point: writing what was read changes nothing.
        prop_assert_eq!(write_store_v1(&back), text);
    }

    #[test]
    fn the_store_loads_what_was_written(servers in servers()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(&path, write_store_v1(&servers)).unwrap();
        prop_assert_eq!(Store::open(&path).load().unwrap(), servers);
    }

    #[test]
    fn readers_never_panic_on_arbitrary_text(text in "\\PC{0,200}") {
        for format in [None, Some(Format::McpServers), Some(Format::VsCode), Some(Format::StoreV1)] {
            let _ = parse_document(&text, format);
        }
    }

    #[test]
    fn readers_never_panic_on_arbitrary_json(value in json_value()) {
        let text = value.to_string();
        for format in [None, Some(Format::McpServers), Some(Format::VsCode), Some(Format::StoreV1)] {
            let _ = parse_document(&text, format);
        }
        for wrapped in [
            serde_json::json!({"mcpServers": {"s": value.clone()}}),
            serde_json::json!({"servers": {"s": value.clone()}}),
            serde_json::json!({"version": 1, "servers": [value.clone()]}),
            serde_json::json!({"version": 1, "servers": [{"id": "s", "transport": value.clone()}]}),
        ] {
            let _ = parse_document(&wrapped.to_string(), None);
        }
    }

    #[test]
    fn validation_and_resolution_never_panic(servers in servers()) {
        let env = |name: &str| name.len().is_multiple_of(2).then(|| format!("v-{name}"));
        for server in &servers {
            let problems = validate(server);
            if let Ok(resolved) = resolve(server, &env) {
                prop_assert!(problems.is_empty());
                prop_assert_eq!(fingerprint(&resolved).len(), 64);
            }
        }
    }
}

/// Arbitrary JSON, nested a few levels.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        "\\PC{0,8}".prop_map(serde_json::Value::from),
        prop::sample::select(vec!["stdio", "http", "sse", "command", "url", "", "${X}"])
            .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        let keys = prop::sample::select(vec![
            "type",
            "transport",
            "transportType",
            "command",
            "args",
            "env",
            "envVars",
            "cwd",
            "url",
            "headers",
            "envHeaders",
            "bearerTokenEnv",
            "id",
            "name",
            "enabled",
            "disabled",
            "timeout",
            "description",
            "key",
            "value",
            "saved",
            "inputs",
            "x",
        ]);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::from),
            prop::collection::vec((keys, inner), 0..6).prop_map(|members| {
                serde_json::Value::Object(
                    members
                        .into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect(),
                )
            }),
        ]
    })
}

// Fingerprints.

/// A valid server as the fields of an `mcpServers` entry (JSON text per
/// field), so tests can write it in any key order.
#[derive(Clone, Debug)]
struct Entry {
    fields: Vec<(String, String)>,
}

impl Entry {
    fn to_document(&self, order: &[usize]) -> String {
        let body: Vec<String> = order
            .iter()
            .map(|&i| format!("{:?}: {}", self.fields[i].0, self.fields[i].1))
            .collect();
        format!("{{\"mcpServers\": {{\"s\": {{{}}}}}}}", body.join(", "))
    }
}

fn object(pairs: &[(String, String)], order: &[usize]) -> String {
    let members: Vec<String> = order
        .iter()
        .filter(|&&i| i < pairs.len())
        .map(|&i| format!("{}: {}", json(&pairs[i].0), json(&pairs[i].1)))
        .collect();
    format!("{{{}}}", members.join(", "))
}

fn json(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// Distinct keys: a map with repeated keys is ambiguous and rejected.
fn unique_pairs(pairs: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (key, value) in pairs {
        if !out.iter().any(|(k, _)| k.eq_ignore_ascii_case(&key)) {
            out.push((key, value));
        }
    }
    out
}

/// A valid stdio or HTTP entry plus shuffles of every object in it.
fn entry_and_orders() -> impl Strategy<Value = (Entry, Vec<usize>, Vec<usize>, Entry)> {
    let env_pairs =
        prop::collection::vec(("[A-Z][A-Z0-9_]{0,6}", "[^$]{0,8}"), 0..5).prop_map(unique_pairs);
    let header_pairs =
        prop::collection::vec(("X-[A-Za-z]{1,6}", "[ -#%-~]{0,8}"), 0..5).prop_map(unique_pairs);
    let stdio = (
        "[a-z/]{1,8}",
        prop::collection::vec("[a-z0-9-]{0,6}", 0..4),
        env_pairs,
        prop::option::of("/[a-z]{0,6}"),
    )
        .prop_map(|(command, args, env, cwd)| {
            let mut fields = vec![
                ("command".to_owned(), json(&command)),
                ("args".to_owned(), serde_json::to_string(&args).unwrap()),
                ("env".to_owned(), String::new()),
            ];
            if let Some(cwd) = cwd {
                fields.push(("cwd".to_owned(), json(&cwd)));
            }
            (fields, env)
        });
    let http = ("[a-z]{1,8}", "[a-z/]{0,8}", header_pairs, any::<bool>()).prop_map(
        |(host, path, headers, sse)| {
            let mut fields = vec![
                (
                    "url".to_owned(),
                    json(&format!("https://{host}.example/{path}")),
                ),
                ("headers".to_owned(), String::new()),
            ];
            if sse {
                fields.push(("type".to_owned(), json("sse")));
            }
            (fields, headers)
        },
    );
    prop_oneof![stdio, http].prop_flat_map(|(fields, pairs)| {
        let field_order: Vec<usize> = (0..fields.len() + 2).collect();
        let pair_order: Vec<usize> = (0..pairs.len()).collect();
        (
            Just(fields),
            Just(pairs),
            Just(field_order.clone()).prop_shuffle(),
            Just(pair_order.clone()).prop_shuffle(),
        )
            .prop_map(move |(fields, pairs, shuffled_fields, shuffled_pairs)| {
                let identity: Vec<usize> = (0..pairs.len()).collect();
                let build = |pair_order: &[usize], with_extras: bool| {
                    let mut fields = fields.clone();
                    for field in &mut fields {
                        if field.1.is_empty() {
                            field.1 = object(&pairs, pair_order);
                        }
                    }
                    // Fields that do not affect the connection, present in
                    // the shuffled copy only.
                    if with_extras {
                        fields.push(("description".to_owned(), json("shuffled")));
                        fields.push(("timeout".to_owned(), "1234".to_owned()));
                    }
                    Entry { fields }
                };
                let plain = build(&identity, false);
                let shuffled = build(&shuffled_pairs, true);
                let plain_order: Vec<usize> = (0..plain.fields.len()).collect();
                let shuffled_order: Vec<usize> = shuffled_fields
                    .iter()
                    .copied()
                    .filter(|&i| i < shuffled.fields.len())
                    .collect();
                (plain, plain_order, shuffled_order, shuffled)
            })
    })
}

fn fingerprint_of(document: &str) -> String {
    let parsed = parse_mcp_servers(document).unwrap();
    let config = parsed.entries[0].as_ref().unwrap();
    fingerprint(&resolve(config, &HashMap::<String, String>::new()).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn fingerprints_ignore_key_order_and_identity_fields(
        (plain, plain_order, shuffled_order, shuffled) in entry_and_orders()
    ) {
        prop_assert_eq!(
            fingerprint_of(&plain.to_document(&plain_order)),
            fingerprint_of(&shuffled.to_document(&shuffled_order))
        );
    }

    #[test]
    fn fingerprints_change_with_every_connection_field(
        (plain, order, _, _) in entry_and_orders(),
        mutation in any::<Index>(),
    ) {
        let before = fingerprint_of(&plain.to_document(&order));
        let mut changed = plain.clone();
        let is_stdio = changed.fields.iter().any(|(k, _)| k == "command");
        let mutations: &[&str] = if is_stdio {
            &["command", "args+", "args-order", "env+", "cwd", "to-http"]
        } else {
            &["url", "headers+", "transport", "to-stdio"]
        };
        let chosen = mutations[mutation.index(mutations.len())];
        let set = |fields: &mut Vec<(String, String)>, key: &str, value: String| {
            fields.retain(|(k, _)| k != key);
            fields.push((key.to_owned(), value));
        };
        let get = |fields: &[(String, String)], key: &str| {
            fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
        };
        match chosen {
            "command" => {
                let command = get(&changed.fields, "command").unwrap();
                set(&mut changed.fields, "command", json(&format!("{}x", serde_json::from_str::<String>(&command).unwrap())));
            }
            "args+" | "args-order" => {
                let mut args: Vec<String> = serde_json::from_str(&get(&changed.fields, "args").unwrap()).unwrap();
                if chosen == "args+" || args.len() < 2 || args[0] == args[1] {
                    args.push("--extra".to_owned());
                } else {
                    args.swap(0, 1);
                }
                set(&mut changed.fields, "args", serde_json::to_string(&args).unwrap());
            }
            "env+" => {
                let env = get(&changed.fields, "env").unwrap();
                let mut map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&env).unwrap();
                let value = map.get("EXTRA_ZZ").and_then(|v| v.as_str()).map_or(String::new(), |v| format!("{v}!"));
                map.insert("EXTRA_ZZ".to_owned(), value.into());
                set(&mut changed.fields, "env", serde_json::Value::Object(map).to_string());
            }
            "cwd" => {
                let cwd = get(&changed.fields, "cwd").map_or("/".to_owned(), |c| format!("{}/sub", serde_json::from_str::<String>(&c).unwrap().trim_end_matches('/')));
                set(&mut changed.fields, "cwd", json(&cwd));
            }
            "to-http" => {
                changed.fields = vec![("url".to_owned(), json("https://example.com/mcp"))];
            }
            "url" => {
                let url = serde_json::from_str::<String>(&get(&changed.fields, "url").unwrap()).unwrap();
                set(&mut changed.fields, "url", json(&format!("{url}/more")));
            }
            "headers+" => {
                let headers = get(&changed.fields, "headers").unwrap();
                let mut map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&headers).unwrap();
                let value = map.get("X-Extra-Zz").and_then(|v| v.as_str()).map_or(String::new(), |v| format!("{v}!"));
                map.insert("X-Extra-Zz".to_owned(), value.into());
                set(&mut changed.fields, "headers", serde_json::Value::Object(map).to_string());
            }
            "transport" => {
                let sse = get(&changed.fields, "type").is_some();
                changed.fields.retain(|(k, _)| k != "type");
                if !sse {
                    changed.fields.push(("type".to_owned(), json("sse")));
                }
            }
            "to-stdio" => {
                changed.fields = vec![("command".to_owned(), json("srv"))];
            }
            other => unreachable!("{other}"),
        }
        let order: Vec<usize> = (0..changed.fields.len()).collect();
        prop_assert_ne!(before, fingerprint_of(&changed.to_document(&order)), "mutation {}", chosen);
    }
}

// Expansion.

/// One piece of a template and what it expands to.
fn piece() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        // Literal text without `$`.
        "[^$]{0,6}".prop_map(|s| (s.clone(), s)),
        // A lone `$` followed by something other than `{` or `$`.
        "\\$[a-z ]".prop_map(|s| (s.clone(), s)),
        // A set variable.
        prop::sample::select(vec!["A", "B_2", "_c"])
            .prop_map(|name| { (format!("${{{name}}}"), format!("value-of-{name}")) }),
        // A set variable with a default: the value wins.
        (prop::sample::select(vec!["A", "B_2"]), "[^$}]{0,5}").prop_map(|(name, default)| {
            (
                format!("${{{name}:-{default}}}"),
                format!("value-of-{name}"),
            )
        }),
        // A missing variable with a default.
        "[^$}]{0,5}".prop_map(|default| (format!("${{MISSING:-{default}}}"), default)),
        // An escaped reference.
        "[A-Z]{1,4}".prop_map(|name| (format!("$${{{name}}}"), format!("${{{name}}}"))),
    ]
}

fn env() -> HashMap<String, String> {
    ["A", "B_2", "_c"]
        .into_iter()
        .map(|name| (name.to_owned(), format!("value-of-{name}")))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn expansion_never_panics(input in "\\PC{0,40}", dollar_heavy in "[${}:\\-A-Z_a]{0,30}") {
        let _ = expand(&input, &env());
        let _ = expand(&dollar_heavy, &env());
        let _ = check_references(&input);
        let _ = check_references(&dollar_heavy);
    }

    #[test]
    fn text_without_references_is_unchanged(input in "\\PC{0,40}") {
        prop_assume!(!input.contains("${"));
        prop_assert_eq!(expand(&input, &env()).unwrap(), input.clone());
        prop_assert!(check_references(&input).is_ok());
    }

    #[test]
    fn templates_expand_piece_by_piece(pieces in prop::collection::vec(piece(), 0..8)) {
        let template: String = pieces.iter().map(|(t, _)| t.as_str()).collect();
        let expected: String = pieces.iter().map(|(_, e)| e.as_str()).collect();
        prop_assert_eq!(expand(&template, &env()).unwrap(), expected);
    }

    #[test]
    fn a_missing_variable_is_named(prefix in "[^$]{0,6}", name in "[A-Z][A-Z0-9_]{0,6}") {
        prop_assume!(!env().contains_key(&name));
        let error = expand(&format!("{prefix}${{{name}}}"), &env()).unwrap_err();
        prop_assert_eq!(error.code(), "missing_env");
        prop_assert!(error.to_string().contains(&name));
    }
}

//! A call the server took and failed without a usable result (an unknown `resultType`) is not a connection failure: `mcpctl call` exits 1 with the code `call_failed`, not 3 with `connection_failed`.

mod support;

use serde_json::json;
use support::Env;

#[test]
fn an_unknown_result_type_exits_1_with_call_failed() {
    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fixture": {
            "command": support::fixture_server(),
            "args": ["--bad-result-type"],
        }}}),
    );
    let config = config.to_str().unwrap();
    let args = [
        "--json",
        "--no-host-configs",
        "--config",
        config,
        "call",
        "fixture",
        "echo",
        r#"{"text":"hi"}"#,
    ];
    let run = env.run(&args);
    assert_eq!(run.code, 1, "{run:#?}");
    let document = support::parse_one_document(&run.stdout);
    assert_eq!(document["error"]["code"], "call_failed", "{run:#?}");
    assert_eq!(document["error"]["server"], "fixture", "{run:#?}");
    let message = document["error"]["message"].as_str().unwrap();
    assert!(message.contains("resultType \"mystery\""), "{message}");

    // The text form says the same on stderr.
    let run = env.run(&args[1..]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stderr.contains("failed: invalid tools/call result"),
        "{run:#?}"
    );
}

//! `mcpctl serve` with renamed tools (`--names plain`, `--names model`): a server's JSON-RPC error for a call reaches the client (this workspace's, over stdio) as a JSON-RPC error, with its code and `data`, never as a failed tool result.

mod support;

use mcp_proto::EraPolicy;
use mcp_transport::{Client, ClientError, ClientOptions, StdioTransport};
use serde_json::json;
use support::Env;

/// Calls the fixture's `hostile_error` (a -32603 with `data.detail`)
/// through `mcpctl serve --names NAMING`, by the name it is served under
/// (`tool`), from a client of `era`.
fn servers_error_through(naming: &str, tool: &str, era: EraPolicy) {
    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {
            "command": support::fixture_server(),
            "args": ["--era", "legacy", "--hostile-text"],
            "era": "legacy",
        }}}),
    );
    let stdio = env.serve_options(&[
        "--no-host-configs",
        "--config",
        config.to_str().unwrap(),
        "serve",
        "--names",
        naming,
    ]);
    let runtime = support::runtime();
    runtime.block_on(async {
        let transport = StdioTransport::spawn(stdio).expect("mcpctl serve starts");
        let mut options = ClientOptions::default();
        options.session.era = era;
        let (client, driver) = Client::new(transport, options);
        tokio::spawn(driver.run());
        client.initialize().await.expect("initialize");
        let outcome = client.call_tool(tool, None).await;
        let Err(ClientError::Rpc(error)) = outcome else {
            panic!("{naming}: {tool}: not a JSON-RPC error: {outcome:?}");
        };
        assert_eq!(error.code, -32603, "{naming}: {error}");
        let data: serde_json::Value = error.data_as().expect("the server's data");
        assert!(data.get("detail").is_some(), "{naming}: {data}");
        client.close().await;
    });
}

#[test]
fn with_plain_names_a_servers_error_stays_an_error() {
    servers_error_through("plain", "fx__hostile_error", EraPolicy::Legacy);
    servers_error_through("plain", "fx__hostile_error", EraPolicy::Modern);
}

#[test]
fn with_model_names_a_servers_error_stays_an_error() {
    servers_error_through("model", "mcp_fx_hostile_error", EraPolicy::Legacy);
    servers_error_through("model", "mcp_fx_hostile_error", EraPolicy::Modern);
}

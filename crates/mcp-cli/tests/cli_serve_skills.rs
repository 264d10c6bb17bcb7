//! `mcpctl serve --names keep` forwards the Skills extension: with the fixture publishing skills (`--skills`) behind it, a client of either era (this workspace's, over stdio) sees the extension declared, lists the skills, gets one the listing leaves out, loads a skill whose files verify and is refused the tampered one.

mod support;

use mcp_proto::EraPolicy;
use mcp_transport::{Client, ClientOptions, StdioTransport};
use serde_json::json;
use support::Env;

fn skills_through_the_gateway(era: EraPolicy) {
    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {
            "command": support::fixture_server(),
            "args": ["--era", "legacy", "--skills"],
            "era": "legacy",
        }}}),
    );
    let stdio = env.serve_options(&[
        "--no-host-configs",
        "--config",
        config.to_str().unwrap(),
        "serve",
        "--names",
        "keep",
    ]);
    let runtime = support::runtime();
    runtime.block_on(async {
        let transport = StdioTransport::spawn(stdio).expect("mcpctl serve starts");
        let mut options = ClientOptions::default();
        options.session.era = era;
        let (client, driver) = Client::new(transport, options);
        tokio::spawn(driver.run());
        let negotiated = client.initialize().await.expect("initialize");
        let declared = negotiated.result.capabilities.skills();
        assert!(declared.is_some(), "{:?}", negotiated.result.capabilities);

        let listed = client.list_all_skills(4).await.expect("skills/list");
        let uris: Vec<&str> = listed.iter().map(|s| s.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "skill://pdf-processing/SKILL.md",
                "skill://tampered/SKILL.md"
            ],
            "{era:?}"
        );
        let hidden = client
            .get_skill("skill://hidden/SKILL.md")
            .await
            .expect("skills/get of a skill the listing leaves out");
        assert_eq!(hidden.skill.uri, "skill://hidden/SKILL.md");

        let loaded = client
            .load_skill(&listed[0])
            .await
            .expect("the skill's SKILL.md, read through the gateway, verifies");
        assert!(
            format!("{loaded:?}").contains("pdf-processing"),
            "{loaded:?}"
        );
        let tampered = client.load_skill(&listed[1]).await;
        assert!(tampered.is_err(), "{tampered:?}");
        client.close().await;
    });
}

#[test]
fn a_handshake_era_client_gets_the_servers_skills() {
    skills_through_the_gateway(EraPolicy::Legacy);
}

#[test]
fn a_2026_07_28_client_gets_the_servers_skills() {
    skills_through_the_gateway(EraPolicy::Modern);
}

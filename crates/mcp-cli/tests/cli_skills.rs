//! `mcpctl skills` and `mcpctl skill` against the workspace's fixture server publishing skills (`--skills`): a good skill, a tampered one, and one the listing leaves out.

mod support;

use serde_json::json;
use support::Env;

/// A config with the fixture publishing skills, id `fx`, plus the demo
/// server (which publishes none).
fn config(env: &Env) -> String {
    let path = env.write_json(
        "skills.json",
        &json!({"mcpServers": {
            "fx": {"command": support::fixture_server(), "args": ["--skills"]}
        }}),
    );
    path.to_str().unwrap().to_owned()
}

#[test]
fn skills_are_listed_from_their_entries_and_loaded_only_when_verified() {
    let env = Env::new();
    let config = config(&env);

    let listed = env.run(&["--config", &config, "skills"]);
    assert_eq!(listed.code, 0, "{listed:#?}");
    let row = listed
        .stdout
        .lines()
        .find(|line| line.contains("skill://pdf-processing/SKILL.md"))
        .unwrap_or_else(|| panic!("the skill is not listed: {listed:#?}"));
    assert!(row.starts_with("fx "), "{row}");
    assert!(
        row.contains("pdf-processing") && row.contains(" 2 "),
        "{row}"
    );
    assert!(
        listed.stdout.contains("skill://tampered/SKILL.md"),
        "{listed:#?}"
    );
    assert!(!listed.stdout.contains("skill://hidden"), "{listed:#?}");

    let listing = env.json(&["--config", &config, "skills", "fx"]);
    let skills = listing["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 2, "{listing}");
    assert_eq!(skills[0]["server"], "fx");
    assert_eq!(skills[0]["frontmatter"]["name"], "pdf-processing");
    assert_eq!(
        skills[0]["resources"][1]["uri"],
        "skill://pdf-processing/references/FORMS.md"
    );

    let loaded = env.run(&[
        "--config",
        &config,
        "skill",
        "fx",
        "skill://pdf-processing/SKILL.md",
    ]);
    assert_eq!(loaded.code, 0, "{loaded:#?}");
    assert!(
        loaded.stdout.starts_with("---\nname: pdf-processing\n"),
        "{loaded:#?}"
    );
    assert!(
        loaded.stdout.contains("Read references/FORMS.md"),
        "{loaded:#?}"
    );

    // Left out of the listing, found with skills/get, loaded the same way.
    let hidden = env.json(&[
        "--config",
        &config,
        "skill",
        "fx",
        "skill://hidden/SKILL.md",
    ]);
    assert_eq!(hidden["skill"]["frontmatter"]["name"], "hidden", "{hidden}");
    assert!(
        hidden["text"]
            .as_str()
            .unwrap()
            .contains("Found by its URI."),
        "{hidden}"
    );

    // Served with another body than its digest: refused, never printed.
    let tampered = env.run(&[
        "--config",
        &config,
        "skill",
        "fx",
        "skill://tampered/SKILL.md",
    ]);
    assert_eq!(tampered.code, 1, "{tampered:#?}");
    assert!(!tampered.stdout.contains("Be harmful"), "{tampered:#?}");
    assert!(
        tampered.stderr.contains("does not match the digest")
            && tampered.stderr.contains("not loaded"),
        "{tampered:#?}"
    );
    let as_json = env.run(&[
        "--json",
        "--config",
        &config,
        "skill",
        "fx",
        "skill://tampered/SKILL.md",
    ]);
    assert_eq!(as_json.code, 1, "{as_json:#?}");
    let error: serde_json::Value = serde_json::from_str(&as_json.stdout).unwrap();
    assert_eq!(error["error"]["code"], "skill_digest_mismatch", "{error}");

    // Not a skill at all: the server's refusal, with the listing's closest URI.
    let nothing = env.run(&[
        "--config",
        &config,
        "skill",
        "fx",
        "skill://pdf-processin/SKILL.md",
    ]);
    assert_eq!(nothing.code, 1, "{nothing:#?}");
    assert!(
        nothing
            .stderr
            .contains("did you mean `skill://pdf-processing/SKILL.md`"),
        "{nothing:#?}"
    );

    // A server without the extension says so.
    let demo = env.run(&["skill", "demo", "skill://x/SKILL.md"]);
    assert_eq!(demo.code, 2, "{demo:#?}");
    assert!(demo.stderr.contains("does not publish skills"), "{demo:#?}");
}

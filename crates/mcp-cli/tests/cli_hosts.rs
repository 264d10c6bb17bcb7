//! Other applications' MCP files, read by the real `mcpctl` with a temporary HOME and project: `servers`, `sources`, `import`, `--no-host-configs`, and every host's file found without flags.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{Env, Run};

/// A recognisable secret that must never be printed.
const SECRET: &str = "SECRET-host-files-never-print";

const CLAUDE_DESKTOP: &str = ".config/Claude/claude_desktop_config.json";
const VSCODE_USER: &str = ".config/Code/User/mcp.json";

/// A loopback URL nothing listens on: the server is listed, its connection
/// refused at once.
const CLOSED_URL: &str = "http://127.0.0.1:9/mcp";

fn write(root: &Path, relative: &str, text: &str) -> PathBuf {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn demo() -> Value {
    json!({"command": support::MCPCTL, "args": ["demo-server"]})
}

fn rows_of<'a>(rows: &'a Value, id: &str) -> Vec<&'a Value> {
    rows.as_array()
        .unwrap()
        .iter()
        .filter(|row| row["id"] == id)
        .collect()
}

fn one<'a>(rows: &'a Value, id: &str) -> &'a Value {
    let found = rows_of(rows, id);
    assert_eq!(found.len(), 1, "{id}: {rows:#}");
    found[0]
}

fn run_with(env: &Env, vars: &[(&str, &str)], args: &[&str]) -> Run {
    let mut command = env.command(args);
    command.envs(vars.iter().copied());
    support::run_to_end(command, args)
}

#[test]
fn servers_shows_each_hosts_label_shadowed_definitions_and_merged_identical_ones() {
    let env = Env::new();
    let desktop = write(
        &env.home(),
        CLAUDE_DESKTOP,
        &json!({"mcpServers": {
            "shared": demo(),
            "dup": {"command": "/nonexistent/dup-server"},
        }})
        .to_string(),
    );
    let vscode = write(
        &env.home(),
        VSCODE_USER,
        &json!({"servers": {"shared": {"type": "stdio", "command": support::MCPCTL, "args": ["demo-server"]}}})
            .to_string(),
    );
    let project = write(
        &env.work_dir(),
        ".mcp.json",
        &json!({"mcpServers": {"dup": demo()}}).to_string(),
    );

    // The project's server runs a command nobody here approved: it is
    // listed as untrusted, with what it would run, and not started.
    let before = env.json(&["servers", "--allow-failures"]);
    let held = rows_of(&before, "dup")[0];
    assert_eq!(held["status"], "untrusted", "{before:#}");
    assert_eq!(held["transport"], "stdio", "{before:#}");
    assert_eq!(held["source"]["level"], "project");
    let trusted = env.run(&["trust", "dup"]);
    assert_eq!(trusted.code, 0, "{trusted:#?}");

    let rows = env.json(&["servers", "--allow-failures"]);
    assert_eq!(rows.as_array().unwrap().len(), 3, "{rows:#}");
    // The same server in Claude Desktop and VS Code: one row, both sources.
    let shared = one(&rows, "shared");
    assert_eq!(shared["status"], "ready");
    assert_eq!(shared["source"]["label"], "Claude Desktop");
    assert_eq!(shared["source"]["host"], "claude-desktop");
    assert_eq!(shared["source"]["path"], desktop.to_str().unwrap());
    assert_eq!(shared["also_in"].as_array().unwrap().len(), 1);
    assert_eq!(shared["also_in"][0]["label"], "VS Code");
    assert_eq!(shared["also_in"][0]["path"], vscode.to_str().unwrap());
    assert_eq!(shared["shadows"], json!([]));

    // A different `dup` in the project wins; Claude Desktop's is shadowed
    // (and never started: its command does not exist).
    let dups = rows_of(&rows, "dup");
    assert_eq!(dups.len(), 2, "{rows:#}");
    let (used, shadowed) = (dups[0], dups[1]);
    assert_eq!(used["status"], "ready");
    assert_eq!(used["source"]["label"], "Claude Code");
    assert_eq!(used["source"]["level"], "project");
    assert_eq!(used["source"]["path"], project.to_str().unwrap());
    assert_eq!(used["shadows"][0]["path"], desktop.to_str().unwrap());
    assert_eq!(used["shadowed_by"], json!(null));
    assert_eq!(shadowed["status"], "shadowed");
    assert_eq!(shadowed["source"]["label"], "Claude Desktop");
    assert_eq!(shadowed["shadowed_by"]["label"], "Claude Code");
    assert_eq!(shadowed["shadowed_by"]["path"], project.to_str().unwrap());

    // For people: the label and the marks in the table.
    let run = env.run(&["servers", "--allow-failures"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let shadowed_line = run
        .stdout
        .lines()
        .find(|line| line.contains("shadowed "))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(shadowed_line.starts_with("dup "), "{shadowed_line}");
    assert!(
        shadowed_line.contains("Claude Desktop (")
            && shadowed_line.ends_with("shadowed by Claude Code"),
        "{shadowed_line}"
    );
    assert!(run.stdout.contains("also in VS Code"), "{}", run.stdout);
}

#[test]
fn the_store_and_config_files_win_over_other_hosts_and_no_host_configs_turns_them_off() {
    let env = Env::new();
    write(
        &env.home(),
        CLAUDE_DESKTOP,
        &json!({"mcpServers": {
            "mine": {"command": "/nonexistent/desktop-version"},
            "desktop-only": demo(),
        }})
        .to_string(),
    );
    let add = env.run(&["add", "mine", "--", support::MCPCTL, "demo-server"]);
    assert_eq!(add.code, 0, "{add:#?}");

    let rows = env.json(&["servers", "--allow-failures"]);
    let mine = rows_of(&rows, "mine");
    assert_eq!(mine[0]["source"]["label"], "store", "{rows:#}");
    assert_eq!(mine[0]["status"], "ready");
    assert_eq!(mine[1]["status"], "shadowed");
    assert_eq!(mine[1]["source"]["label"], "Claude Desktop");
    assert_eq!(
        one(&rows, "desktop-only")["source"]["label"],
        "Claude Desktop"
    );

    // --config adds to the host files, and wins over them too.
    let config = env.write_json(
        "extra.json",
        &json!({"mcpServers": {"desktop-only": {"command": "/nonexistent/other"}, "extra": demo()}}),
    );
    let config = config.to_str().unwrap();
    let rows = env.json(&["--config", config, "servers", "--allow-failures"]);
    assert_eq!(one(&rows, "extra")["source"]["label"], "--config");
    let desktop_only = rows_of(&rows, "desktop-only");
    assert_eq!(desktop_only[0]["source"]["label"], "--config");
    assert_eq!(desktop_only[1]["status"], "shadowed");

    // Off by flag and by setting: only the store is read.
    let ids = |rows: &Value| -> Vec<String> {
        let mut ids: Vec<String> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row["id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(
        ids(&env.json(&["--no-host-configs", "servers", "--allow-failures"])),
        ["mine"]
    );
    let off = run_with(
        &env,
        &[("MCPCTL_NO_HOST_CONFIGS", "1")],
        &["--json", "servers", "--allow-failures"],
    );
    assert_eq!(off.code, 0, "{off:#?}");
    assert_eq!(ids(&support::parse_one_document(&off.stdout)), ["mine"]);
    let on = run_with(
        &env,
        &[("MCPCTL_NO_HOST_CONFIGS", "0")],
        &["--json", "servers", "--allow-failures"],
    );
    assert_eq!(
        ids(&support::parse_one_document(&on.stdout)),
        ["desktop-only", "mine", "mine"]
    );
    let help = env.run(&["--help"]);
    assert!(help.stdout.contains("--no-host-configs"), "{}", help.stdout);
    assert!(
        help.stdout.contains("MCPCTL_NO_HOST_CONFIGS"),
        "{}",
        help.stdout
    );
}

#[test]
fn the_demo_server_stays_only_while_no_source_has_a_file() {
    let env = Env::new();
    assert_eq!(
        one(&env.json(&["servers", "--allow-failures"]), "demo")["source"]["label"],
        "built-in"
    );
    // A host file without servers is still a file: no demo.
    write(&env.home(), CLAUDE_DESKTOP, r#"{"mcpServers": {}}"#);
    assert_eq!(env.json(&["servers", "--allow-failures"]), json!([]));
    // ... unless host files are off.
    assert_eq!(
        one(
            &env.json(&["--no-host-configs", "servers", "--allow-failures"]),
            "demo"
        )["id"],
        "demo"
    );
}

#[test]
fn sources_lists_every_file_looked_at_found_or_not() {
    let env = Env::new();
    let desktop = write(
        &env.home(),
        CLAUDE_DESKTOP,
        &json!({"mcpServers": {"a": demo(), "b": demo(), "c": {"url": CLOSED_URL}}}).to_string(),
    );
    let broken = write(&env.home(), VSCODE_USER, "{\"servers\": {");
    let project = write(
        &env.work_dir(),
        ".mcp.json",
        r#"{"mcpServers": {"p": {"command": "p"}}}"#,
    );

    let listed = env.json(&["sources"]);
    let listed = listed.as_array().unwrap();
    let find = |path: &Path| {
        listed
            .iter()
            .find(|row| row["path"] == path.to_str().unwrap())
            .unwrap_or_else(|| panic!("{} not listed: {listed:#?}", path.display()))
    };
    let desktop_row = find(&desktop);
    assert_eq!(desktop_row["label"], "Claude Desktop");
    assert_eq!(desktop_row["host"], "claude-desktop");
    assert_eq!(desktop_row["level"], "user");
    assert_eq!(desktop_row["status"], "found");
    assert_eq!(desktop_row["servers"], 3);
    let broken_row = find(&broken);
    assert_eq!(broken_row["status"], "error");
    assert_eq!(broken_row["error"]["code"], "parse_error");
    let project_row = find(&project);
    assert_eq!(project_row["label"], "Claude Code");
    assert_eq!(project_row["level"], "project");
    assert_eq!(project_row["servers"], 1);
    let cursor = find(&env.home().join(".cursor/mcp.json"));
    assert_eq!(cursor["status"], "not_found");
    assert_eq!(cursor["servers"], json!(null));
    let store = find(&env.store());
    assert_eq!(store["label"], "store");
    assert_eq!(store["status"], "not_found");
    // Every host has at least one file listed.
    for host in [
        "claude-code",
        "claude-desktop",
        "cursor",
        "vscode",
        "windsurf",
        "codex",
        "gemini",
        "zed",
        "goose",
        "opencode",
        "cline",
    ] {
        assert!(listed.iter().any(|row| row["host"] == host), "{host}");
    }
    // Project files come first, then --config and the store, then the user's.
    let levels: Vec<&str> = listed
        .iter()
        .map(|row| row["level"].as_str().unwrap())
        .collect();
    let first_user = levels.iter().position(|level| *level == "user").unwrap();
    assert!(
        levels[first_user..].iter().all(|level| *level == "user"),
        "{levels:?}"
    );
    assert_eq!(listed[first_user]["label"], "store");

    let run = env.run(&["sources"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let line_of = |path: &Path| {
        run.stdout
            .lines()
            .find(|line| line.contains(path.to_str().unwrap()))
            .unwrap_or_else(|| panic!("{}", run.stdout))
            .to_owned()
    };
    assert!(line_of(&desktop).starts_with("Claude Desktop "));
    assert!(
        line_of(&desktop).ends_with("found: 3 servers"),
        "{}",
        run.stdout
    );
    assert!(
        line_of(&project).ends_with("found: 1 server"),
        "{}",
        run.stdout
    );
    assert!(
        line_of(&broken).contains("error: parse_error "),
        "{}",
        run.stdout
    );
    assert!(line_of(&env.home().join(".cursor/mcp.json")).ends_with("not found"));

    // Without host files, only mcpctl's own sources are looked at.
    let own = env.json(&["--no-host-configs", "sources"]);
    let labels: Vec<&str> = own
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["project", "store"]);
}

#[test]
fn import_copies_a_hosts_servers_into_the_store_and_keeps_what_is_there() {
    let env = Env::new();
    write(
        &env.home(),
        VSCODE_USER,
        &json!({"servers": {
            "tools": {"type": "stdio", "command": support::MCPCTL, "args": ["demo-server"],
                      "env": {"API_KEY": SECRET}},
            "remote": {"type": "http", "url": CLOSED_URL,
                       "headers": {"Authorization": format!("Bearer {SECRET}")}},
        }})
        .to_string(),
    );
    write(
        &env.work_dir(),
        ".vscode/mcp.json",
        &json!({"servers": {"workspace": {"type": "stdio", "command": support::MCPCTL, "args": ["demo-server"]}}})
            .to_string(),
    );
    // Another host's file is not imported.
    write(
        &env.home(),
        CLAUDE_DESKTOP,
        &json!({"mcpServers": {"desktop": demo()}}).to_string(),
    );
    // Already in the store: a conflict, kept as it is.
    let add = env.run(&[
        "add",
        "tools",
        "--",
        support::MCPCTL,
        "demo-server",
        "--stored",
    ]);
    assert_eq!(add.code, 0, "{add:#?}");

    let run = env.run(&["import", "vscode"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        !run.stdout.contains(SECRET) && !run.stderr.contains(SECRET),
        "{run:#?}"
    );
    assert!(
        run.stdout
            .contains("imported http server `remote` from VS Code (")
            && run
                .stdout
                .contains("(headers Authorization; values stored as secrets)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("imported stdio server `workspace`"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("conflict: `tools` from VS Code ("),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("2 of VS Code's servers imported"),
        "{}",
        run.stdout
    );

    // The store holds them now, with the secret; the stored `tools` kept.
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(env.store()).unwrap()).unwrap();
    let ids: Vec<&str> = stored["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["tools", "workspace", "remote"]);
    assert_eq!(
        stored["servers"][0]["transport"]["args"],
        json!(["demo-server", "--stored"])
    );
    let remote = &stored["servers"][2]["transport"];
    assert_eq!(remote["url"], CLOSED_URL);
    assert_eq!(remote["headers"][0]["key"], "Authorization");
    assert_eq!(remote["headers"][0]["value"], format!("Bearer {SECRET}"));
    // Listings never show it.
    let servers = env.run(&["--json", "servers", "--allow-failures"]);
    assert!(!servers.stdout.contains(SECRET), "{servers:#?}");

    // Again: everything is a conflict, nothing imported, exit 2.
    let again = env.run(&["--json", "import", "vscode"]);
    assert_eq!(again.code, 2, "{again:#?}");
    let report = support::parse_one_document(&again.stdout);
    assert_eq!(report["imported"], json!([]));
    assert_eq!(
        report["conflicts"].as_array().unwrap().len(),
        3,
        "{report:#}"
    );
    assert!(
        again.stderr.contains("nothing imported from VS Code"),
        "{again:#?}"
    );

    // A host with no file: nothing to import, exit 2, the files named.
    let none = env.run(&["import", "cursor"]);
    assert_eq!(none.code, 2, "{none:#?}");
    assert!(
        none.stderr.contains("no servers found in Cursor's files"),
        "{none:#?}"
    );
    assert!(none.stderr.contains(".cursor/mcp.json"), "{none:#?}");
    // An unknown host is a usage error naming the known ones.
    let unknown = env.run(&["import", "notepad"]);
    assert_eq!(unknown.code, 2, "{unknown:#?}");
    assert!(unknown.stderr.contains("claude-desktop"), "{unknown:#?}");
}

/// What a host file's server must be found as: id, transport, env names,
/// header names.
struct Expected {
    id: &'static str,
    transport: &'static str,
    env: &'static [&'static str],
    headers: &'static [&'static str],
}

const fn stdio(id: &'static str, env: &'static [&'static str]) -> Expected {
    Expected {
        id,
        transport: "stdio",
        env,
        headers: &[],
    }
}

const fn http(id: &'static str, headers: &'static [&'static str]) -> Expected {
    Expected {
        id,
        transport: "http",
        env: &[],
        headers,
    }
}

/// Every host's files, as those hosts write them: one stdio and one HTTP
/// server each (Claude Code: at the top level and for this project).
fn write_every_hosts_files(env: &Env) -> Vec<Expected> {
    let home = env.home();
    let project = env.work_dir();
    let exe = support::MCPCTL;
    let project_key = project.to_str().unwrap();

    write(
        &home,
        CLAUDE_DESKTOP,
        &format!(
            r#"{{
  "mcpServers": {{
    "desktop-files": {{
      "command": "{exe}",
      "args": ["demo-server"],
      "env": {{ "FILES_ROOT": "/home/ada/Documents" }}
    }},
    "desktop-remote": {{
      "type": "http",
      "url": "{CLOSED_URL}",
      "headers": {{ "X-Api-Key": "{SECRET}" }}
    }}
  }},
  "preferences": {{ "menuBarEnabled": false }}
}}"#
        ),
    );

    write(
        &home,
        ".claude.json",
        &format!(
            r#"{{
  "numStartups": 42,
  "installMethod": "native",
  "autoUpdates": true,
  "hasCompletedOnboarding": true,
  "mcpServers": {{
    "cc-github": {{
      "type": "stdio",
      "command": "{exe}",
      "args": ["demo-server"],
      "env": {{ "GITHUB_PERSONAL_ACCESS_TOKEN": "{SECRET}" }}
    }},
    "cc-sentry": {{
      "type": "http",
      "url": "{CLOSED_URL}",
      "headers": {{ "Authorization": "Bearer ${{SENTRY_TOKEN}}" }}
    }}
  }},
  "projects": {{
    "{project_key}": {{
      "allowedTools": [],
      "mcpContextUris": [],
      "mcpServers": {{
        "cc-local-db": {{
          "type": "stdio",
          "command": "{exe}",
          "args": ["demo-server"],
          "env": {{ "DATABASE_URL": "postgres://localhost/dev" }}
        }}
      }},
      "enabledMcpjsonServers": [],
      "disabledMcpjsonServers": [],
      "hasTrustDialogAccepted": true
    }},
    "/home/ada/elsewhere": {{
      "mcpServers": {{
        "cc-other-project": {{ "type": "stdio", "command": "{exe}", "args": ["demo-server"] }}
      }}
    }}
  }}
}}"#
        ),
    );

    write(
        &project,
        ".mcp.json",
        &format!(
            r#"{{
  "mcpServers": {{
    "proj-search": {{
      "command": "{exe}",
      "args": ["demo-server"],
      "env": {{ "SEARCH_API_KEY": "${{SEARCH_API_KEY}}" }}
    }},
    "proj-docs": {{
      "type": "http",
      "url": "{CLOSED_URL}",
      "headers": {{ "Authorization": "Bearer ${{DOCS_TOKEN}}" }}
    }}
  }}
}}"#
        ),
    );

    write(
        &home,
        ".cursor/mcp.json",
        &format!(
            r#"{{
  "mcpServers": {{
    "cursor-browser": {{
      "command": "{exe}",
      "args": ["demo-server"],
      "env": {{ "BROWSER_KEY": "${{env:BROWSER_KEY}}" }}
    }},
    "cursor-linear": {{
      "url": "{CLOSED_URL}",
      "headers": {{ "Authorization": "Bearer ${{env:LINEAR_TOKEN}}" }}
    }}
  }}
}}"#
        ),
    );
    write(
        &project,
        ".cursor/mcp.json",
        &format!(
            r#"{{
  "mcpServers": {{
    "cursor-proj-lint": {{
      "type": "stdio",
      "command": "{exe}",
      "args": ["demo-server"],
      "env": {{ "LINT_ROOT": "${{workspaceFolder}}" }}
    }},
    "cursor-proj-api": {{
      "url": "{CLOSED_URL}",
      "headers": {{ "X-Project": "demo" }}
    }}
  }}
}}"#
        ),
    );

    write(
        &home,
        VSCODE_USER,
        &format!(
            r#"{{
  // MCP servers for every workspace
  "servers": {{
    "vscode-playwright": {{
      "type": "stdio",
      "command": "{exe}",
      "args": ["demo-server"],
      "env": {{ "PLAYWRIGHT_BROWSERS": "${{env:PLAYWRIGHT_BROWSERS}}" }},
    }},
    "vscode-github": {{
      "type": "http",
      "url": "{CLOSED_URL}",
      "headers": {{ "Authorization": "Bearer ${{env:GH_TOKEN}}" }},
    }},
  }},
}}"#
        ),
    );
    write(
        &project,
        ".vscode/mcp.json",
        &format!(
            r#"{{
  "servers": {{
    // The workspace's own servers
    "vscode-proj-tests": {{
      "type": "stdio",
      "command": "{exe}",
      "args": ["demo-server"],
      "env": {{ "TEST_DIR": "${{workspaceFolder}}/tests" }}
    }},
    "vscode-proj-api": {{
      "type": "http",
      "url": "{CLOSED_URL}",
      "headers": {{ "X-Workspace": "${{workspaceFolder}}" }}
    }}
  }}
}}"#
        ),
    );

    write(
        &home,
        ".codeium/windsurf/mcp_config.json",
        &format!(
            r#"{{
  "mcpServers": {{
    "windsurf-memory": {{
      "command": "{exe}",
      "args": ["demo-server"],
      "env": {{ "MEMORY_FILE": "/home/ada/memory.json" }}
    }},
    "windsurf-figma": {{
      "serverUrl": "{CLOSED_URL}",
      "headers": {{ "Authorization": "Bearer ${{env:FIGMA_TOKEN}}" }}
    }}
  }}
}}"#
        ),
    );

    write(
        &home,
        ".codex/config.toml",
        &format!(
            r#"model = "gpt-5-codex"
approval_policy = "on-request"

[mcp_servers.codex-docs]
command = "{exe}"
args = ["demo-server"]
env = {{ "DOCS_API_KEY" = "{SECRET}" }}
startup_timeout_sec = 20
tool_timeout_sec = 60

[mcp_servers.codex-figma]
url = "{CLOSED_URL}"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"
http_headers = {{ "X-Figma-Region" = "us-east-1" }}
"#
        ),
    );

    write(
        &home,
        ".gemini/settings.json",
        &format!(
            r#"{{
  "theme": "GitHub",
  "selectedAuthType": "oauth-personal",
  "mcpServers": {{
    "gemini-weather": {{
      "command": "{exe}",
      "args": ["demo-server"],
      "env": {{ "WEATHER_API_KEY": "$WEATHER_API_KEY" }},
      "timeout": 30000,
      "trust": false
    }},
    "gemini-remote": {{
      "httpUrl": "{CLOSED_URL}",
      "headers": {{ "Authorization": "Bearer {SECRET}" }},
      "timeout": 5000
    }}
  }}
}}"#
        ),
    );

    write(
        &home,
        ".config/zed/settings.json",
        &format!(
            r#"// Zed settings
//
// For information on how to configure Zed, see the Zed
// documentation: https://zed.dev/docs/configuring-zed
{{
  "theme": "One Dark",
  "context_servers": {{
    "zed-postgres": {{
      "source": "custom",
      "command": "{exe}",
      "args": ["demo-server"],
      "env": {{ "PGPASSWORD": "{SECRET}" }},
    }},
    "zed-remote": {{
      "source": "custom",
      "url": "{CLOSED_URL}",
      "headers": {{ "Authorization": "Bearer {SECRET}" }},
    }},
  }},
}}"#
        ),
    );

    write(
        &home,
        ".config/goose/config.yaml",
        &format!(
            r#"GOOSE_PROVIDER: anthropic
GOOSE_MODEL: claude-sonnet-4
extensions:
  developer:
    bundled: true
    display_name: Developer
    enabled: true
    name: developer
    timeout: 300
    type: builtin
  goose-fetch:
    args:
    - demo-server
    bundled: null
    cmd: {exe}
    description: Fetches web pages
    enabled: true
    env_keys: []
    envs:
      FETCH_USER_AGENT: goose
    name: goose-fetch
    timeout: 300
    type: stdio
  goose-remote:
    enabled: true
    name: goose-remote
    type: streamable_http
    uri: {CLOSED_URL}
    headers:
      Authorization: Bearer {SECRET}
    timeout: 300
"#
        ),
    );

    write(
        &home,
        ".config/opencode/opencode.json",
        &format!(
            r#"{{
  "$schema": "https://opencode.ai/config.json",
  "mcp": {{
    "opencode-local": {{
      "type": "local",
      "command": ["{exe}", "demo-server"],
      "enabled": true,
      "environment": {{ "LOCAL_TOKEN": "{SECRET}" }}
    }},
    "opencode-remote": {{
      "type": "remote",
      "url": "{CLOSED_URL}",
      "enabled": true,
      "headers": {{ "Authorization": "Bearer {{env:REMOTE_TOKEN}}" }}
    }}
  }}
}}"#
        ),
    );

    write(
        &home,
        ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        &format!(
            r#"{{
  "mcpServers": {{
    "cline-files": {{
      "command": "{exe}",
      "args": ["demo-server"],
      "env": {{ "FILES_TOKEN": "{SECRET}" }},
      "disabled": false,
      "autoApprove": [],
      "timeout": 60,
      "type": "stdio"
    }},
    "cline-remote": {{
      "url": "{CLOSED_URL}",
      "headers": {{ "Authorization": "Bearer {SECRET}" }},
      "disabled": false,
      "autoApprove": [],
      "type": "streamableHttp"
    }}
  }}
}}"#
        ),
    );

    vec![
        stdio("desktop-files", &["FILES_ROOT"]),
        http("desktop-remote", &["X-Api-Key"]),
        stdio("cc-github", &["GITHUB_PERSONAL_ACCESS_TOKEN"]),
        http("cc-sentry", &["Authorization"]),
        stdio("cc-local-db", &["DATABASE_URL"]),
        stdio("proj-search", &["SEARCH_API_KEY"]),
        http("proj-docs", &["Authorization"]),
        stdio("cursor-browser", &["BROWSER_KEY"]),
        http("cursor-linear", &["Authorization"]),
        stdio("cursor-proj-lint", &["LINT_ROOT"]),
        http("cursor-proj-api", &["X-Project"]),
        stdio("vscode-playwright", &["PLAYWRIGHT_BROWSERS"]),
        http("vscode-github", &["Authorization"]),
        stdio("vscode-proj-tests", &["TEST_DIR"]),
        http("vscode-proj-api", &["X-Workspace"]),
        stdio("windsurf-memory", &["MEMORY_FILE"]),
        http("windsurf-figma", &["Authorization"]),
        stdio("codex-docs", &["DOCS_API_KEY"]),
        http("codex-figma", &["Authorization", "X-Figma-Region"]),
        stdio("gemini-weather", &["WEATHER_API_KEY"]),
        http("gemini-remote", &["Authorization"]),
        stdio("zed-postgres", &["PGPASSWORD"]),
        http("zed-remote", &["Authorization"]),
        stdio("goose-fetch", &["FETCH_USER_AGENT"]),
        http("goose-remote", &["Authorization"]),
        stdio("opencode-local", &["LOCAL_TOKEN"]),
        http("opencode-remote", &["Authorization"]),
        stdio("cline-files", &["FILES_TOKEN"]),
        http("cline-remote", &["Authorization"]),
    ]
}

#[test]
fn every_hosts_files_are_found_without_flags() {
    let env = Env::new();
    let expected = write_every_hosts_files(&env);
    let vars = [
        ("SENTRY_TOKEN", "t"),
        ("SEARCH_API_KEY", "t"),
        ("DOCS_TOKEN", "t"),
        ("BROWSER_KEY", "t"),
        ("LINEAR_TOKEN", "t"),
        ("PLAYWRIGHT_BROWSERS", "t"),
        ("GH_TOKEN", "t"),
        ("FIGMA_TOKEN", "t"),
        ("FIGMA_OAUTH_TOKEN", "t"),
        ("WEATHER_API_KEY", "t"),
        ("REMOTE_TOKEN", "t"),
    ];
    let run = run_with(&env, &vars, &["--json", "servers", "--allow-failures"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!run.stdout.contains(SECRET), "a secret was printed");
    let rows = support::parse_one_document(&run.stdout);
    let mut missing = Vec::new();
    for want in &expected {
        let Some(row) = rows_of(&rows, want.id)
            .into_iter()
            .find(|row| row["status"] != "shadowed")
        else {
            missing.push(want.id);
            continue;
        };
        assert_eq!(row["transport"], want.transport, "{}: {row:#}", want.id);
        let names = |key: &str| -> Vec<String> {
            let mut names: Vec<String> = row[key]
                .as_array()
                .unwrap_or_else(|| panic!("{}: {row:#}", want.id))
                .iter()
                .map(|name| name.as_str().unwrap().to_owned())
                .collect();
            names.sort();
            names
        };
        assert_eq!(names("env"), want.env, "{}: {row:#}", want.id);
        assert_eq!(names("headers"), want.headers, "{}: {row:#}", want.id);
    }
    assert!(missing.is_empty(), "not found: {missing:?}\n{rows:#}");
    // Another project's Claude Code entry is not this project's.
    assert!(rows_of(&rows, "cc-other-project").is_empty(), "{rows:#}");
    // No file failed to read.
    let unreadable: Vec<&Value> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["id"].is_null())
        .collect();
    assert!(unreadable.is_empty(), "{unreadable:#?}");
}

#[test]
fn what_a_hosts_file_holds_and_is_not_used_is_reported_with_its_file_and_key() {
    let env = Env::new();
    let gemini = write(
        &env.home(),
        ".gemini/settings.json",
        // Gemini's `trust` has no meaning here; the entry still loads.
        "{\n  \"mcpServers\": {\n    \"files\": {\"command\": \"/nonexistent/files\", \"trust\": true}\n  }\n}\n",
    );
    let run = env.run(&["servers", "--allow-failures"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let warning = run
        .stderr
        .lines()
        .find(|line| line.contains("warning:"))
        .unwrap_or_else(|| panic!("no warning: {run:#?}"));
    assert!(warning.contains(gemini.to_str().unwrap()), "{warning}");
    assert!(warning.contains("trust"), "{warning}");
    assert!(warning.contains("[ignored_field]"), "{warning}");

    let sources = env.json(&["sources"]);
    let row = sources
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["path"] == gemini.to_str().unwrap())
        .expect("the Gemini file is a source");
    assert_eq!(row["status"], "found");
    assert_eq!(row["warnings"][0]["code"], "ignored_field", "{row:#}");
    assert!(
        row["warnings"][0]["field"]
            .as_str()
            .unwrap()
            .contains("trust"),
        "{row:#}"
    );
    let table = env.run(&["sources"]);
    assert!(table.stdout.contains("warning:"), "{table:#?}");
}

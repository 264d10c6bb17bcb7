//! `mcpctl skills [SERVER]` and `mcpctl skill SERVER URI`: the skills servers publish (the Skills extension, `io.modelcontextprotocol/skills`), and loading one, verified.
//!
//! `skills` shows the entries each ready server listed when it connected
//! (the manager lists them with the resources; no skill file is read):
//! server, the `SKILL.md` URI, the name and description from its
//! frontmatter, and how many files its manifest lists (`dynamic` when the
//! server publishes no digests). `--json` prints `{"skills": [...]}`, each
//! entry as the server sent it with its `server`.
//!
//! `skill` loads one through the client's skill-loading path: the entry
//! (from the listing, or `skills/get` for a URI the listing leaves out) is
//! checked, the `SKILL.md` is read and verified against the entry (size,
//! SHA-256 digest, frontmatter field by field), and only then printed,
//! control characters escaped. Content that fails verification is not
//! shown: the error names the rule (`skill_digest_mismatch`, ...), exit 1.
//! `--json` prints `{"skill": ENTRY, "text": "..."}`.
//!
//! Exit status: 2 for an unknown server, a server without the extension or
//! a usage error, 3 when the server could not be reached, 1 when the server
//! refused the request or its content failed verification, 130 on Ctrl-C.

use mcp_proto::types::{Skill, SkillFiles};
use serde::Serialize;
use serde_json::Value;

use crate::exit::{CliError, Exit};
use crate::output::{self, Output, Paint, Table, line};
use crate::runtime::{Runtime, Select};
use crate::sources::SourceOptions;

/// `mcpctl skills`.
pub(crate) async fn list(
    server: Option<&str>,
    allow_failures: bool,
    options: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    Runtime::run(options, Select::of(server), output, async |runtime| {
        let ready = crate::ready::catalogs(runtime, server, "skills are")?;
        let mut rows: Vec<(String, Skill)> = Vec::new();
        for (id, catalog) in &ready.catalogs {
            for skill in catalog.skills().unwrap_or_default() {
                rows.push((id.clone(), skill.clone()));
            }
        }
        let printed = if output.json {
            let skills: Vec<Value> = rows
                .iter()
                .map(|(id, skill)| {
                    let mut value = serde_json::to_value(skill).unwrap_or(Value::Null);
                    if let Some(object) = value.as_object_mut() {
                        object.insert("server".into(), Value::String(id.clone()));
                    }
                    value
                })
                .collect();
            output.json(&serde_json::json!({ "skills": skills }))
        } else if rows.is_empty() {
            output.text("no skills to list\n")
        } else {
            let mut table = Table::new(&["server", "uri", "name", "files", "description"]);
            for (id, skill) in &rows {
                let files = match &skill.resources {
                    SkillFiles::Listed(files) => files.len().to_string(),
                    SkillFiles::Dynamic => "dynamic".to_owned(),
                    SkillFiles::Invalid(_) => "invalid".to_owned(),
                };
                table.painted_row(vec![
                    (id.clone(), None),
                    (skill.uri.clone(), Some(Paint::Bold)),
                    (skill.name().unwrap_or("-").to_owned(), None),
                    (files, Some(Paint::Dim)),
                    (skill.description().unwrap_or("").to_owned(), None),
                ]);
            }
            output.text(&table.render(output))
        };
        printed.map_err(stdout_error)?;
        Ok(ready.exit(allow_failures))
    })
    .await
}

/// What `skill --json` prints.
#[derive(Serialize)]
struct Loaded<'a> {
    skill: &'a Skill,
    text: &'a str,
}

/// `mcpctl skill`.
pub(crate) async fn load(
    server: &str,
    uri: &str,
    options: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    Runtime::run(options, Select::One(server), output, async |runtime| {
        let (client, catalog, _) = crate::ready::server(runtime, server)?;
        let Some(listed) = catalog.skills() else {
            return Err(CliError::usage(format!(
                "server `{server}` does not publish skills (no Skills extension in its capabilities)"
            ))
            .code("unsupported")
            .server(server));
        };
        let entry = match listed.iter().find(|skill| skill.uri == uri) {
            Some(entry) => entry.clone(),
            None => {
                let what = format!("get the skill `{}`", line(uri));
                let got = client
                    .get_skill(uri)
                    .await
                    .map_err(|error| {
                        let mut cli = crate::ready::handle_error(server, &what, &error);
                        let known = listed.iter().map(|s| s.uri.as_str());
                        let guess = crate::suggest::closest(uri, known).map_or_else(
                            String::new,
                            |known| format!("did you mean `{}`? ", line(known)),
                        );
                        cli = cli.hint(format!(
                            "{guess}`mcpctl skills {server}` lists what it publishes"
                        ));
                        cli
                    })?;
                got.skill
            }
        };
        // Ctrl-C drops this future with the command, which cancels the read
        // on the wire (see `crate::interrupt`).
        let what = format!("read the skill `{}`", line(uri));
        let loaded = client
            .load_skill_with(&entry, mcp_transport::CallOptions::default())
            .await
            .map_err(|error| match error {
            mcp_manager::HandleError::Request(mcp_transport::SkillLoadError::Client(error)) => {
                crate::ready::request_error(server, &what, &error)
            }
            mcp_manager::HandleError::Request(mcp_transport::SkillLoadError::Verification(error)) => {
                let mut cli = CliError::usage(format!(
                    "server `{server}`: {}; the skill was not loaded",
                    line(&error.to_string())
                ))
                .code(error.code())
                .server(server);
                cli.exit = Exit::ToolError;
                cli
            }
            stale => crate::ready::stale_handle(server, &what, &stale),
        })?;
        let printed = if output.json {
            output.json(&Loaded {
                skill: &loaded.entry,
                text: &loaded.text,
            })
        } else {
            let shown = output::block(&loaded.text);
            let newline = if shown.ends_with('\n') { "" } else { "\n" };
            output.text(&format!("{shown}{newline}"))
        };
        printed.map_err(stdout_error)?;
        Ok(Exit::Success)
    })
    .await
}

fn stdout_error(e: std::io::Error) -> CliError {
    CliError::usage(format!("cannot write to stdout: {e}"))
}

//! `mcpctl prompts [SERVER]`, `mcpctl prompt SERVER NAME [KEY=VALUE...]` and `mcpctl complete`: the prompts servers offer (MCP "Server/Prompts"), getting one, and completing its arguments (MCP "Server/Utilities/Completion").
//!
//! `prompts` shows the prompts each ready server listed when it connected:
//! server, name, arguments (`name`, `style?` for one not required) and
//! description. `--json` prints an array:
//!
//! ```json
//! {"server": "demo", "name": "try_tool", "title": "Try a demo tool",
//!  "description": "...", "arguments": [{"name": "tool", "description": "...", "required": true}]}
//! ```
//!
//! `prompt` checks the arguments against the listed prompt before
//! anything is sent (an unknown prompt or argument gets a "did you mean",
//! a missing required one is named), gets it (`prompts/get`) and prints
//! each message under its role, text with control characters escaped
//! (line breaks and tabs kept), other content as a note or JSON. `--json`
//! prints the result as the server sent it.
//!
//! `complete SERVER PROMPT ARG [PREFIX]` prints the values the server
//! suggests for the argument, one per line, escaped (`--json`:
//! `{"values", "total", "has_more"}`); a server that does not declare the
//! `completions` capability is told apart with the code `unsupported`.
//!
//! Exit status as for `call`: 2 for usage errors and unknown names, 3 when
//! the server could not be reached, 1 when it answered with an error, 130
//! on Ctrl-C.

use std::collections::BTreeMap;

use mcp_proto::types::{
    CompleteArgument, CompleteContext, CompleteRequestParams, ContentBlock, GetPromptRequestParams,
    Prompt, PromptReference, Reference, ResourceTemplateReference, Role,
};
use serde::Serialize;

use crate::exit::{CliError, Exit};
use crate::output::{self, Output, Paint, Table, line, one_line};
use crate::runtime::{Runtime, Select};
use crate::sources::SourceOptions;

/// One prompt's row.
#[derive(Debug, Serialize)]
struct PromptRow {
    server: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    arguments: Vec<ArgumentRow>,
}

/// One argument of a prompt.
#[derive(Debug, Serialize)]
struct ArgumentRow {
    name: String,
    description: Option<String>,
    required: bool,
}

/// `mcpctl prompts`.
pub(crate) async fn list(
    server: Option<&str>,
    allow_failures: bool,
    options: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    Runtime::run(options, Select::of(server), output, async |runtime| {
        list_ready(runtime, server, allow_failures, output)
    })
    .await
}

fn list_ready(
    runtime: &Runtime,
    only: Option<&str>,
    allow_failures: bool,
    output: &Output,
) -> Result<Exit, CliError> {
    let ready = crate::ready::catalogs(runtime, only, "prompts are")?;
    let mut rows = Vec::new();
    for (id, catalog) in &ready.catalogs {
        for prompt in catalog.prompts().unwrap_or_default() {
            rows.push(PromptRow {
                server: id.clone(),
                name: prompt.name.clone(),
                title: prompt.title.clone(),
                description: prompt.description.clone(),
                arguments: prompt
                    .arguments
                    .iter()
                    .flatten()
                    .map(|argument| ArgumentRow {
                        name: argument.name.clone(),
                        description: argument.description.clone(),
                        required: argument.required == Some(true),
                    })
                    .collect(),
            });
        }
    }
    let printed = if output.json {
        output.json(&rows)
    } else if rows.is_empty() {
        output.text("no prompts to list\n")
    } else {
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
        let mut table = Table::new(&["server", "prompt", "arguments", "description"]);
        for row in &rows {
            let arguments: Vec<String> = row
                .arguments
                .iter()
                .map(|a| format!("{}{}", a.name, if a.required { "" } else { "?" }))
                .collect();
            let description = row.description.as_deref().unwrap_or("");
            let description = if terminal {
                one_line(description, 72)
            } else {
                description.split_whitespace().collect::<Vec<_>>().join(" ")
            };
            table.painted_row(vec![
                (row.server.clone(), None),
                (row.name.clone(), Some(Paint::Bold)),
                (arguments.join(", "), None),
                (description, Some(Paint::Dim)),
            ]);
        }
        output.text(&table.render(output))
    };
    printed.map_err(stdout_error)?;
    Ok(ready.exit(allow_failures))
}

/// `key=value` words as a map; a word without `=` or a key given twice is
/// a usage error.
fn pairs(words: &[String], server: &str) -> Result<BTreeMap<String, String>, CliError> {
    let mut map = BTreeMap::new();
    for word in words {
        let Some((key, value)) = word.split_once('=').filter(|(key, _)| !key.is_empty()) else {
            return Err(
                CliError::usage(format!("`{}` is not KEY=VALUE", line(word)))
                    .code("invalid_arguments")
                    .server(server),
            );
        };
        if map.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(
                CliError::usage(format!("argument `{}` is given twice", line(key)))
                    .code("invalid_arguments")
                    .server(server),
            );
        }
    }
    Ok(map)
}

/// The listed prompt `name`, or the error with a "did you mean". `None`
/// when the server's prompts were not listed (then the server decides).
fn find_prompt<'a>(
    prompts: Option<&'a [Prompt]>,
    server: &str,
    name: &str,
) -> Result<Option<&'a Prompt>, CliError> {
    let Some(prompts) = prompts else {
        return Ok(None);
    };
    if let Some(prompt) = prompts.iter().find(|p| p.name == name) {
        return Ok(Some(prompt));
    }
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    let hint = if names.is_empty() {
        format!("server `{server}` lists no prompts")
    } else {
        let guess = crate::suggest::closest(name, names.iter().copied())
            .map_or_else(String::new, |known| {
                format!("did you mean `{}`? ", line(known))
            });
        let names: Vec<_> = names.iter().map(|n| line(n)).collect();
        format!("{guess}its prompts: {}", names.join(", "))
    };
    Err(
        CliError::usage(format!("server `{server}` has no prompt `{}`", line(name)))
            .hint(hint)
            .code("unknown_prompt")
            .server(server),
    )
}

/// Checks that every name in `keys` is one of `prompt`'s arguments.
fn check_known<'k>(
    prompt: &Prompt,
    keys: impl IntoIterator<Item = &'k str>,
    server: &str,
) -> Result<(), CliError> {
    let declared: Vec<&str> = prompt
        .arguments
        .iter()
        .flatten()
        .map(|a| a.name.as_str())
        .collect();
    for key in keys {
        if declared.contains(&key) {
            continue;
        }
        let guess = crate::suggest::closest(key, declared.iter().copied())
            .map_or_else(String::new, |known| {
                format!("did you mean `{}`? ", line(known))
            });
        let names = if declared.is_empty() {
            "none".to_owned()
        } else {
            declared
                .iter()
                .map(|n| line(n))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(CliError::usage(format!(
            "prompt `{}` has no argument `{}`; nothing was sent",
            line(&prompt.name),
            line(key)
        ))
        .hint(format!("{guess}its arguments: {names}"))
        .code("invalid_arguments")
        .server(server));
    }
    Ok(())
}

/// Checks `arguments` against what `prompt` declares: every key is one of
/// its arguments, every required one is given.
fn check_arguments(
    prompt: &Prompt,
    arguments: &BTreeMap<String, String>,
    server: &str,
) -> Result<(), CliError> {
    check_known(prompt, arguments.keys().map(String::as_str), server)?;
    let missing: Vec<String> = prompt
        .arguments
        .iter()
        .flatten()
        .filter(|a| a.required == Some(true) && !arguments.contains_key(&a.name))
        .map(|a| format!("`{}`", line(&a.name)))
        .collect();
    if !missing.is_empty() {
        return Err(CliError::usage(format!(
            "prompt `{}` needs {}; nothing was sent",
            line(&prompt.name),
            missing.join(", ")
        ))
        .hint(format!(
            "`mcpctl prompt {server} {} {}=VALUE`",
            line(&prompt.name),
            missing.first().map_or("KEY", |m| m.trim_matches('`'))
        ))
        .code("invalid_arguments")
        .server(server));
    }
    Ok(())
}

/// `mcpctl prompt`.
pub(crate) async fn get(
    server: &str,
    name: &str,
    words: &[String],
    options: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    // Malformed pairs are found before anything starts.
    let arguments = pairs(words, server)?;
    Runtime::run(options, Select::One(server), output, async |runtime| {
        get_ready(runtime, server, name, arguments, output).await
    })
    .await
}

async fn get_ready(
    runtime: &Runtime,
    server: &str,
    name: &str,
    arguments: BTreeMap<String, String>,
    output: &Output,
) -> Result<Exit, CliError> {
    let (client, catalog, options) = crate::ready::server(runtime, server)?;
    if let Some(prompt) = find_prompt(catalog.prompts(), server, name)? {
        check_arguments(prompt, &arguments, server)?;
    }
    let params = GetPromptRequestParams {
        name: name.to_owned(),
        arguments: (!arguments.is_empty()).then_some(arguments),
        ..GetPromptRequestParams::default()
    };
    // Ctrl-C drops this future with the command, which cancels the request
    // on the wire (see `crate::interrupt`).
    let result = client
        .get_prompt_with(&params, options)
        .await
        .map_err(|error| {
            crate::ready::handle_error(server, &format!("get prompt `{}`", line(name)), &error)
        })?;
    if output.json {
        output.json(&result).map_err(stdout_error)?;
        return Ok(Exit::Success);
    }
    let mut text = String::new();
    if let Some(description) = &result.description {
        text.push_str(&output.paint(Paint::Dim, &format!("# {}", line(description))));
        text.push('\n');
    }
    for message in &result.messages {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        text.push_str(&output.paint(Paint::Bold, &format!("{role}:")));
        text.push('\n');
        let shown = match &message.content {
            ContentBlock::Text(t) => output::block(&t.text).into_owned(),
            ContentBlock::Image(image) => {
                output.paint(Paint::Dim, &format!("[image: {}]", line(&image.mime_type)))
            }
            ContentBlock::Audio(audio) => {
                output.paint(Paint::Dim, &format!("[audio: {}]", line(&audio.mime_type)))
            }
            other => output::to_json(other).unwrap_or_default(),
        };
        text.push_str(&shown);
        if !shown.ends_with('\n') {
            text.push('\n');
        }
    }
    output.text(&text).map_err(stdout_error)?;
    Ok(Exit::Success)
}

/// What `complete` was asked.
#[derive(Debug)]
pub(crate) struct CompleteRequest<'a> {
    /// The server's id.
    pub(crate) server: &'a str,
    /// The prompt's name.
    pub(crate) prompt: &'a str,
    /// The argument being completed.
    pub(crate) argument: &'a str,
    /// What is typed so far.
    pub(crate) prefix: &'a str,
    /// `key=value` arguments already chosen.
    pub(crate) context: &'a [String],
}

/// The values of a completion, for `--json`.
#[derive(Debug, Serialize)]
struct Completed<'a> {
    values: &'a [String],
    total: Option<u64>,
    has_more: Option<bool>,
}

/// `mcpctl complete`.
pub(crate) async fn complete(
    request: CompleteRequest<'_>,
    options: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    let context = pairs(request.context, request.server)?;
    Runtime::run(
        options,
        Select::One(request.server),
        output,
        async |runtime| complete_ready(runtime, &request, context, output).await,
    )
    .await
}

async fn complete_ready(
    runtime: &Runtime,
    request: &CompleteRequest<'_>,
    context: BTreeMap<String, String>,
    output: &Output,
) -> Result<Exit, CliError> {
    let server = request.server;
    let (client, catalog, options) = crate::ready::server(runtime, server)?;
    // A URI template names a resource template's variable (its scheme or
    // braces give it away; a prompt's name has neither).
    let template = request.prompt.contains("://") || request.prompt.contains('{');
    if !template && let Some(prompt) = find_prompt(catalog.prompts(), server, request.prompt)? {
        let names = std::iter::once(request.argument).chain(context.keys().map(String::as_str));
        check_known(prompt, names, server)?;
    }
    let reference = if template {
        Reference::Resource(ResourceTemplateReference {
            uri: request.prompt.to_owned(),
            ..ResourceTemplateReference::default()
        })
    } else {
        Reference::Prompt(PromptReference {
            name: request.prompt.to_owned(),
            ..PromptReference::default()
        })
    };
    let params = CompleteRequestParams {
        reference,
        argument: CompleteArgument {
            name: request.argument.to_owned(),
            value: request.prefix.to_owned(),
            ..CompleteArgument::default()
        },
        context: (!context.is_empty()).then(|| CompleteContext {
            arguments: Some(context),
            ..CompleteContext::default()
        }),
        meta: None,
        extra: Default::default(),
    };
    let result = client
        .complete_with(&params, options)
        .await
        .map_err(|error| {
            let what = format!(
                "complete argument `{}` of {} `{}`",
                line(request.argument),
                if template {
                    "resource template"
                } else {
                    "prompt"
                },
                line(request.prompt)
            );
            crate::ready::handle_error(server, &what, &error)
        })?;
    let completion = &result.completion;
    if output.json {
        output
            .json(&Completed {
                values: &completion.values,
                total: completion.total,
                has_more: completion.has_more,
            })
            .map_err(stdout_error)?;
        return Ok(Exit::Success);
    }
    let mut text = String::new();
    for value in &completion.values {
        text.push_str(&line(value));
        text.push('\n');
    }
    output.text(&text).map_err(stdout_error)?;
    if completion.has_more == Some(true) {
        let more = completion
            .total
            .map_or_else(|| "more".to_owned(), |total| format!("{total} in all"));
        eprintln!(
            "mcpctl: {}",
            output.paint_err(Paint::Dim, &format!("({more}; type more to narrow)"))
        );
    }
    Ok(Exit::Success)
}

fn stdout_error(e: std::io::Error) -> CliError {
    CliError::usage(format!("cannot write to stdout: {e}"))
}

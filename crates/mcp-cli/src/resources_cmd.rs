//! `mcpctl resources [SERVER]` and `mcpctl read SERVER URI`: what servers offer to read (MCP "Server/Resources"), and reading it.
//!
//! `resources` shows the resources each ready server listed when it
//! connected (the manager lists them with the tools): server, URI, name
//! and MIME type, every server's text escaped. `--json` prints an array:
//!
//! ```json
//! {"server": "demo", "uri": "demo://about", "name": "about", "title": "About the demo server",
//!  "description": "...", "mime_type": "text/plain", "size": 212}
//! ```
//!
//! `read` asks the server (`resources/read`) through its client. Text
//! contents are printed with control characters escaped (line breaks and
//! tabs kept); binary contents (base64 `blob`s) are decoded and written
//! raw to a pipe or to `--output FILE`, and refused on a terminal, which
//! they could drive, unless their MIME type says text and they are UTF-8:
//! those are printed as text is. `--output` writes every part exactly as read (text
//! unescaped) and takes a resource of one part. `--json` prints the
//! result as the server sent it, `{"contents": [...]}`.
//!
//! Exit status as for `tools` and `call`: 2 for an unknown server or a
//! usage error, 3 when the server could not be reached, 1 when the server
//! answered the read with an error (an unknown URI: a "did you mean"
//! names the closest listed one), 130 on Ctrl-C.

use std::io::{IsTerminal, Write};
use std::path::Path;

use base64::Engine;
use mcp_manager::{ManagerEvent, ServerStatus};
use mcp_proto::types::{ReadResourceRequestParams, ResourceContents};
use serde::Serialize;

use crate::exit::{CliError, Exit};
use crate::output::{self, Output, Paint, Table, line};
use crate::runtime::{Runtime, Select};
use crate::sources::SourceOptions;

/// One resource's row.
#[derive(Debug, Serialize)]
struct ResourceRow {
    server: String,
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
    size: Option<u64>,
}

/// One resource template's row.
#[derive(Debug, Serialize)]
struct TemplateRow {
    server: String,
    uri_template: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
}

/// The `--json` document of `resources`.
#[derive(Debug, Serialize)]
struct Listing {
    resources: Vec<ResourceRow>,
    templates: Vec<TemplateRow>,
}

/// At most this many pages of `resources/templates/list` per server.
const TEMPLATE_PAGES: usize = 20;

/// `mcpctl resources`.
pub(crate) async fn list(
    server: Option<&str>,
    allow_failures: bool,
    options: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    Runtime::run(options, Select::of(server), output, async |runtime| {
        list_ready(runtime, server, allow_failures, output).await
    })
    .await
}

async fn list_ready(
    runtime: &Runtime,
    only: Option<&str>,
    allow_failures: bool,
    output: &Output,
) -> Result<Exit, CliError> {
    let ready = crate::ready::catalogs(runtime, only, "resources are")?;
    let mut listing = Listing {
        resources: Vec::new(),
        templates: Vec::new(),
    };
    for (id, catalog) in &ready.catalogs {
        for resource in catalog.resources().unwrap_or_default() {
            listing.resources.push(ResourceRow {
                server: id.clone(),
                uri: resource.uri.clone(),
                name: resource.name.clone(),
                title: resource.title.clone(),
                description: resource.description.clone(),
                mime_type: resource.mime_type.clone(),
                size: resource.size,
            });
        }
        if catalog.capabilities().resources.is_some() {
            for template in templates(runtime, id).await? {
                listing.templates.push(TemplateRow {
                    server: id.clone(),
                    uri_template: template.uri_template,
                    name: template.name,
                    title: template.title,
                    description: template.description,
                    mime_type: template.mime_type,
                });
            }
        }
    }
    let printed = if output.json {
        output.json(&listing)
    } else if listing.resources.is_empty() && listing.templates.is_empty() {
        output.text("no resources to list\n")
    } else {
        let resources = listing
            .resources
            .iter()
            .map(|row| (&row.server, &row.uri, &row.name, row.mime_type.as_ref()));
        let templates = listing.templates.iter().map(|row| {
            (
                &row.server,
                &row.uri_template,
                &row.name,
                row.mime_type.as_ref(),
            )
        });
        let tables = [
            table(&["server", "uri", "name", "mime type"], resources, output),
            table(
                &["server", "uri template", "name", "mime type"],
                templates,
                output,
            ),
        ];
        let text = tables.into_iter().flatten().collect::<Vec<_>>().join("\n");
        output.text(&text)
    };
    printed.map_err(stdout_error)?;
    Ok(ready.exit(allow_failures))
}

/// A table of `(server, uri, name, mime type)` rows; `None` without rows.
fn table<'a>(
    headers: &[&str],
    rows: impl Iterator<Item = (&'a String, &'a String, &'a String, Option<&'a String>)>,
    output: &Output,
) -> Option<String> {
    let mut table = Table::new(headers);
    let mut any = false;
    for (server, uri, name, mime) in rows {
        any = true;
        table.painted_row(vec![
            (server.clone(), None),
            (uri.clone(), Some(Paint::Bold)),
            (name.clone(), None),
            (
                mime.cloned().unwrap_or_else(|| "-".to_owned()),
                Some(Paint::Dim),
            ),
        ]);
    }
    any.then(|| table.render(output))
}

/// `id`'s resource templates (MCP "Server/Resources" §Resource Templates),
/// every page up to [`TEMPLATE_PAGES`]. A server that does not know the
/// method has none; a repeated cursor ends the listing.
pub(crate) async fn templates(
    runtime: &Runtime,
    id: &str,
) -> Result<Vec<mcp_proto::types::ResourceTemplate>, CliError> {
    let (client, _, options) = crate::ready::server(runtime, id)?;
    let mut templates = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..TEMPLATE_PAGES {
        let params = mcp_proto::types::PaginatedRequestParams::page(cursor.take());
        let page = match client
            .list_resource_templates_with(&params, options.clone())
            .await
        {
            Ok(page) => page,
            Err(mcp_manager::HandleError::Request(mcp_transport::ClientError::Rpc(rpc)))
                if rpc.code == mcp_proto::jsonrpc::error_codes::METHOD_NOT_FOUND =>
            {
                break;
            }
            Err(error) => {
                return Err(crate::ready::handle_error(
                    id,
                    "list resource templates",
                    &error,
                ));
            }
        };
        templates.extend(page.resource_templates);
        match page.next_cursor {
            Some(next) if seen.insert(next.clone()) => cursor = Some(next),
            _ => break,
        }
    }
    Ok(templates)
}

/// `mcpctl read`.
pub(crate) async fn read(
    server: &str,
    uri: &str,
    file: Option<&Path>,
    follow: bool,
    options: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    Runtime::run(options, Select::One(server), output, async |runtime| {
        if follow {
            return follow_ready(runtime, server, uri, output).await;
        }
        read_ready(runtime, server, uri, file, output).await
    })
    .await
}

/// `read --follow`: subscribes to `uri` (`resources/subscribe`, MCP
/// "Server/Resources", "Subscriptions"), prints it, and prints it again
/// after each `notifications/resources/updated` for it, until Ctrl-C or
/// the connection ends. With `--json`, each read is one JSON line.
async fn follow_ready(
    runtime: &Runtime,
    server: &str,
    uri: &str,
    output: &Output,
) -> Result<Exit, CliError> {
    let (client, _, _) = crate::ready::server(runtime, server)?;
    // Taken before subscribing, so no update is missed.
    let mut events = runtime.manager.events();
    client.subscribe_resource(uri).await.map_err(|error| {
        crate::ready::handle_error(server, &format!("subscribe to `{}`", line(uri)), &error)
    })?;
    let show = async |updates: u64| -> Result<Exit, CliError> {
        if output.json {
            let (client, _, options) = crate::ready::server(runtime, server)?;
            let params = ReadResourceRequestParams {
                uri: uri.to_owned(),
                ..ReadResourceRequestParams::default()
            };
            let result = client
                .read_resource_with(&params, options)
                .await
                .map_err(|e| {
                    crate::ready::handle_error(server, &format!("read `{}`", line(uri)), &e)
                })?;
            let line = serde_json::json!({"server": server, "uri": uri, "updates": updates, "result": result});
            let mut stdout = std::io::stdout().lock();
            writeln!(stdout, "{}", output::to_json_line(&line)).map_err(stdout_error)?;
            stdout.flush().map_err(stdout_error)?;
            return Ok(Exit::Success);
        }
        if updates > 0 {
            eprintln!(
                "mcpctl: {}",
                output.paint_err(
                    Paint::Dim,
                    &format!("`{}` changed (update {updates})", line(uri))
                )
            );
        }
        read_ready(runtime, server, uri, None, output).await
    };
    show(0).await?;
    let mut updates = 0;
    loop {
        match events.recv().await {
            Ok(ManagerEvent::ResourceUpdated { id, uri: changed })
                if id == server && changed == uri =>
            {
                updates += 1;
                show(updates).await?;
            }
            Ok(ManagerEvent::StatusChanged { id, status, .. })
                if id == server
                    && !matches!(status, ServerStatus::Ready | ServerStatus::Refreshing) =>
            {
                return Err(CliError::connection(format!(
                    "server `{server}` is {} now; stopped following `{}`",
                    status.as_str(),
                    line(uri)
                ))
                .code("closed")
                .server(server));
            }
            Ok(_) => {}
            Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "events were dropped; reading again");
                updates += 1;
                show(updates).await?;
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(Exit::Success),
        }
    }
}

async fn read_ready(
    runtime: &Runtime,
    server: &str,
    uri: &str,
    file: Option<&Path>,
    output: &Output,
) -> Result<Exit, CliError> {
    let (client, catalog, options) = crate::ready::server(runtime, server)?;
    let params = ReadResourceRequestParams {
        uri: uri.to_owned(),
        ..ReadResourceRequestParams::default()
    };
    // Ctrl-C drops this future with the command, which cancels the read on
    // the wire (see `crate::interrupt`).
    let result = client
        .read_resource_with(&params, options)
        .await
        .map_err(|error| {
            let what = format!("read `{}`", line(uri));
            let mut cli = crate::ready::handle_error(server, &what, &error);
            let listed: Vec<&str> = catalog
                .resources()
                .unwrap_or_default()
                .iter()
                .map(|r| r.uri.as_str())
                .collect();
            if !listed.contains(&uri) {
                let guess = crate::suggest::closest(uri, listed.iter().copied())
                    .map_or_else(String::new, |known| {
                        format!("did you mean `{}`? ", line(known))
                    });
                cli = cli.hint(format!(
                    "{guess}`mcpctl resources {server}` lists what it offers"
                ));
            }
            cli
        })?;

    if output.json {
        output.json(&result).map_err(stdout_error)?;
        return Ok(Exit::Success);
    }
    if let Some(file) = file {
        let [only] = result.contents.as_slice() else {
            return Err(CliError::usage(format!(
                "`{}` has {} parts; --output writes a resource of one part",
                line(uri),
                result.contents.len()
            ))
            .hint(format!(
                "`mcpctl --json read {server} URI` shows every part"
            ))
            .code("invalid_arguments")
            .server(server));
        };
        let bytes = raw_bytes(only, server)?;
        std::fs::write(file, &bytes).map_err(|e| {
            CliError::usage(format!("cannot write {}: {e}", file.display())).code("write_failed")
        })?;
        eprintln!("mcpctl: wrote {} bytes to {}", bytes.len(), file.display());
        return Ok(Exit::Success);
    }

    let terminal = std::io::stdout().is_terminal();
    if terminal
        && let Some(blob) = result
            .contents
            .iter()
            .filter_map(blob_of)
            .find(|blob| text_of_blob(blob).is_none())
    {
        return Err(CliError::usage(format!(
            "`{}` is binary ({}); it is not written to a terminal",
            line(uri),
            line(blob.mime_type.as_deref().unwrap_or("no MIME type"))
        ))
        .hint(format!(
            "save it with `mcpctl read {server} {} --output FILE`, or pipe it",
            line(uri)
        ))
        .code("binary_contents")
        .server(server));
    }
    let mut stdout = std::io::stdout().lock();
    for contents in &result.contents {
        match contents {
            ResourceContents::Text(text) => {
                let shown = output::block(&text.text);
                stdout.write_all(shown.as_bytes()).map_err(stdout_error)?;
                if !shown.ends_with('\n') {
                    stdout.write_all(b"\n").map_err(stdout_error)?;
                }
            }
            ResourceContents::Blob(blob) => match text_of_blob(blob).filter(|_| terminal) {
                // Text sent as a blob is text to a person.
                Some(text) => {
                    let shown = output::block(&text);
                    stdout.write_all(shown.as_bytes()).map_err(stdout_error)?;
                    if !shown.ends_with('\n') {
                        stdout.write_all(b"\n").map_err(stdout_error)?;
                    }
                }
                None => {
                    let bytes = raw_bytes(contents, server)?;
                    stdout.write_all(&bytes).map_err(stdout_error)?;
                }
            },
        }
    }
    stdout.flush().map_err(stdout_error)?;
    if terminal && result.contents.is_empty() {
        eprintln!(
            "mcpctl: {}",
            output.paint_err(Paint::Dim, "the resource is empty")
        );
    }
    Ok(Exit::Success)
}

fn blob_of(contents: &ResourceContents) -> Option<&mcp_proto::types::BlobResourceContents> {
    match contents {
        ResourceContents::Blob(blob) => Some(blob),
        ResourceContents::Text(_) => None,
    }
}

/// A blob whose MIME type says text (`text/*`, JSON, XML, YAML,
/// JavaScript) and whose bytes are UTF-8, as that text; `None` for any
/// other blob.
fn text_of_blob(blob: &mcp_proto::types::BlobResourceContents) -> Option<String> {
    let mime = blob.mime_type.as_deref()?;
    let essence = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let texty = essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || matches!(
            essence.as_str(),
            "application/json"
                | "application/xml"
                | "application/yaml"
                | "application/x-yaml"
                | "application/javascript"
                | "application/toml"
        );
    if !texty {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob.blob.trim())
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// The bytes of one part, exactly as read: text as UTF-8, a blob decoded
/// from base64 (a blob that is not base64 is the server's error).
fn raw_bytes(contents: &ResourceContents, server: &str) -> Result<Vec<u8>, CliError> {
    match contents {
        ResourceContents::Text(text) => Ok(text.text.clone().into_bytes()),
        ResourceContents::Blob(blob) => base64::engine::general_purpose::STANDARD
            .decode(blob.blob.trim())
            .map_err(|e| {
                CliError::connection(format!(
                    "server `{server}` sent a blob that is not base64: {e}"
                ))
                .code("invalid_result")
                .server(server)
            }),
    }
}

fn stdout_error(e: std::io::Error) -> CliError {
    CliError::usage(format!("cannot write to stdout: {e}"))
}

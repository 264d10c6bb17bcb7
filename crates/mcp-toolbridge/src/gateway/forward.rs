//! The gateway's resources and prompts: every usable server's, listed together under names given as tools' are and forwarded to the server they came from.
//!
//! - Prompts ("Server/Prompts") are listed as `mcp_<server>_<prompt>`,
//!   named by the same rules as tools ([`crate::names`]: a name two
//!   prompts would share, such as server `a`'s `b_c` and server `a_b`'s
//!   `c`, or one over the length limit, ends with a hash of its pair, so
//!   each listed name is one server's prompt); `prompts/get` of such a
//!   name asks that server for its prompt. With plain names
//!   ([`ToolNaming::Plain`](super::ToolNaming::Plain)) prompts,
//!   resources and templates are named as tools are there:
//!   `<server>__<name>`.
//! - Resources ("Server/Resources") keep their URIs (a client may open a
//!   `file://` URI itself), with names given as prompts' are (resources
//!   and templates each named among their own kind);
//!   `resources/read` goes to the server that listed the URI, or else to
//!   the server with the resource template whose fixed beginning (the text
//!   before its first `{`) is the longest match, or else to the one server
//!   that has resources, when only one has (it knows its unlisted URIs and
//!   answers for them). A URI no server claims is "resource not found",
//!   with the URI in `data.uri`: -32002 in the handshake era, -32602 in
//!   2026-07-28. Templates are listed from each server on request (they are
//!   not part of a catalog), at most [`TEMPLATE_PAGES`] pages per server.
//!
//! - Completions ("Utilities/Completion") go to the server of the prompt
//!   (by its prefixed name) or of the resource template (by its URI
//!   template) they complete an argument of.
//!
//! A server is usable when it is connected (ready or refreshing) and the
//! session allows it (allowed servers, and a project's servers only from
//! inside that project); its lists are those of its current catalog.
//! Every forwarded request keeps the server's call deadline and the
//! client's own `_meta` keys (not the protocol's `io.modelcontextprotocol/*`
//! ones, which belong to the client's connection to the gateway, nor its
//! `progressToken`), and a server's error is passed on with its code and
//! `data` (its message bounded).

use std::borrow::Cow;
use std::sync::Arc;

use mcp_manager::Catalog;
use mcp_manager::{HandleError, ServerHandle};
use mcp_proto::ErrorObject;
use mcp_proto::jsonrpc::error_codes;
use mcp_proto::types::meta::{CLIENT_CAPABILITIES, LOG_LEVEL};
use mcp_proto::types::{
    CompleteRequestParams, GetPromptRequestParams, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, LoggingLevel, Meta, PaginatedRequestParams, Prompt,
    ReadResourceRequestParams, Reference, Resource, ResourceTemplate,
};
use mcp_transport::{CallOptions, ClientError};
use serde_json::value::RawValue;

use super::Gateway;
use super::keep::{self, NameCollision};
use crate::names::{NameOptions, ToolNames};

/// At most this many pages of `resources/templates/list` per server.
pub(super) const TEMPLATE_PAGES: usize = 10;

/// One usable server.
pub(super) struct Usable {
    pub(super) id: String,
    catalog: Arc<Catalog>,
}

impl Usable {
    /// What the server declared.
    pub(super) fn capabilities(&self) -> &mcp_proto::types::ServerCapabilities {
        self.catalog.capabilities()
    }

    /// The skills it listed (the Skills extension), if any.
    pub(super) fn skills(&self) -> &[mcp_proto::types::Skill] {
        self.catalog.skills().unwrap_or_default()
    }
}

/// The server `uri` belongs to: the one that lists it (with kept names,
/// the one: two are an error), else the one with the longest matching
/// template, else the one server that has resources at all (it knows its
/// own URIs, listed or not, and answers for them); "resource not found"
/// in the client's era when none. `subscribing`: only servers that offer
/// subscriptions count in the last step.
pub(super) async fn resource_server(
    gateway: &Gateway,
    uri: &str,
    modern: bool,
    subscribing: bool,
) -> Result<String, ErrorObject> {
    let servers = usable(gateway);
    let owner =
        resource_owner(&servers, naming(gateway), uri).map_err(|collision| collision.to_error())?;
    if let Some(server) = owner {
        return Ok(server);
    }
    let templates = templates(gateway, &servers).await;
    if let Some(server) = template_target(&templates, uri) {
        return Ok(server);
    }
    let mut with_resources = servers.iter().filter(|server| {
        server
            .capabilities()
            .resources
            .as_ref()
            .is_some_and(|r| !subscribing || r.subscribe == Some(true))
    });
    match (with_resources.next(), with_resources.next()) {
        (Some(only), None) => Ok(only.id.clone()),
        _ => Err(resource_not_found(uri, modern)),
    }
}

/// The usable servers, in the manager's order.
pub(super) fn usable(gateway: &Gateway) -> Vec<Usable> {
    let inner = &gateway.session.inner;
    gateway
        .manager
        .servers()
        .into_iter()
        .filter(|server| server.status.is_connected() && inner.allows(&server.id))
        .filter_map(|server| {
            let catalog = gateway.manager.catalog(&server.id)?;
            Some(Usable {
                id: server.id,
                catalog,
            })
        })
        .collect()
}

/// The names every `(server, name)` pair of one kind (prompts, resources
/// or templates) is listed under: the tools' rules ([`ToolNames::assign`]),
/// so two pairs never share a name. A pair that gets none (an empty name,
/// a name a server lists twice) is not listed.
fn assign<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    options: &NameOptions,
) -> ToolNames {
    ToolNames::assign(pairs, options)
}

/// How the gateway names prompts, resources and templates.
#[derive(Clone, Copy)]
pub(super) enum Naming<'a> {
    /// As tools are (`mcp_<server>_<name>`), with the session's naming
    /// options (its length limit and suffix rule).
    Assigned(&'a NameOptions),
    /// As tools are with [`ToolNaming::Plain`](super::ToolNaming::Plain):
    /// `<server>__<name>`, the server's id and its own name.
    Plain,
    /// The servers' own names ([`ToolNaming::Keep`](super::ToolNaming::Keep)).
    Keep,
}

/// The gateway's naming of prompts, resources and templates.
pub(super) fn naming(gateway: &Gateway) -> Naming<'_> {
    match gateway.options.naming {
        super::ToolNaming::Keep => Naming::Keep,
        super::ToolNaming::Plain => Naming::Plain,
        _ => Naming::Assigned(&gateway.session.inner.options.names),
    }
}

/// The name `<server>__<name>` ([`Naming::Plain`]).
fn plain_name(server: &str, name: &str) -> String {
    format!("{server}__{name}")
}

/// The `(server, name)` pair whose plain name ([`Naming::Plain`]) is
/// `served`: the first, in listing order, as tools are found.
fn plain_owner<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    served: &str,
) -> Option<(&'a str, &'a str)> {
    pairs.into_iter().find(|(server, name)| {
        served
            .strip_prefix(server)
            .and_then(|rest| rest.strip_prefix("__"))
            .is_some_and(|rest| rest == *name)
    })
}

/// Every usable server's prompts, each with its server.
fn prompts(servers: &[Usable]) -> impl Iterator<Item = (&str, &Prompt)> {
    servers.iter().flat_map(|server| {
        let prompts = server.catalog.prompts().unwrap_or_default();
        prompts
            .iter()
            .map(move |prompt| (server.id.as_str(), prompt))
    })
}

/// Every usable server's resources, each with its server.
fn resources(servers: &[Usable]) -> impl Iterator<Item = (&str, &Resource)> {
    servers.iter().flat_map(|server| {
        let resources = server.catalog.resources().unwrap_or_default();
        resources
            .iter()
            .map(move |resource| (server.id.as_str(), resource))
    })
}

/// `prompts/list`: every usable server's prompts, under their assigned
/// names, or their own when kept (refused when two servers share one).
pub(super) fn list_prompts(
    servers: &[Usable],
    naming: Naming<'_>,
) -> Result<ListPromptsResult, NameCollision> {
    let prompts = match naming {
        Naming::Keep => {
            if let Some(collision) = keep::collision(
                "prompt",
                prompts(servers).map(|(server, p)| (server, p.name.as_str())),
            ) {
                return Err(collision);
            }
            prompts(servers).map(|(_, prompt)| prompt.clone()).collect()
        }
        Naming::Plain => prompts(servers)
            .map(|(server, prompt)| Prompt {
                name: plain_name(server, &prompt.name),
                ..prompt.clone()
            })
            .collect(),
        Naming::Assigned(options) => {
            let names = assign(
                prompts(servers).map(|(server, p)| (server, p.name.as_str())),
                options,
            );
            prompts(servers)
                .filter_map(|(server, prompt)| {
                    Some(Prompt {
                        name: names.name(server, &prompt.name)?.to_owned(),
                        ..prompt.clone()
                    })
                })
                .collect()
        }
    };
    Ok(ListPromptsResult {
        prompts,
        ..ListPromptsResult::default()
    })
}

/// `resources/list`: every usable server's resources, under their
/// assigned names, or their own when kept (refused when two servers list
/// the same URI).
pub(super) fn list_resources(
    servers: &[Usable],
    naming: Naming<'_>,
) -> Result<ListResourcesResult, NameCollision> {
    let resources = match naming {
        Naming::Keep => {
            if let Some(collision) = keep::collision(
                "resource",
                resources(servers).map(|(server, r)| (server, r.uri.as_str())),
            ) {
                return Err(collision);
            }
            resources(servers).map(|(_, r)| r.clone()).collect()
        }
        Naming::Plain => resources(servers)
            .map(|(server, resource)| Resource {
                name: plain_name(server, &resource.name),
                ..resource.clone()
            })
            .collect(),
        Naming::Assigned(options) => {
            let names = assign(
                resources(servers).map(|(server, r)| (server, r.name.as_str())),
                options,
            );
            resources(servers)
                .filter_map(|(server, resource)| {
                    Some(Resource {
                        name: names.name(server, &resource.name)?.to_owned(),
                        ..resource.clone()
                    })
                })
                .collect()
        }
    };
    Ok(ListResourcesResult {
        resources,
        ..ListResourcesResult::default()
    })
}

/// The URIs of every usable server's resources, in listing order.
pub(super) fn resource_uris(servers: &[Usable]) -> Vec<String> {
    resources(servers).map(|(_, r)| r.uri.clone()).collect()
}

/// The server and the server's own name behind a listed prompt name:
/// `Ok(None)` when no server has it, an error when, with kept names, two
/// do.
pub(super) fn prompt_target(
    servers: &[Usable],
    naming: Naming<'_>,
    name: &str,
) -> Result<Option<(String, String)>, NameCollision> {
    match naming {
        Naming::Keep => {
            let owner = keep::owner(
                "prompt",
                prompts(servers).map(|(server, p)| (server, p.name.as_str())),
                name,
            )?;
            Ok(owner.map(|server| (server.to_owned(), name.to_owned())))
        }
        Naming::Plain => Ok(plain_owner(
            prompts(servers).map(|(server, p)| (server, p.name.as_str())),
            name,
        )
        .map(|(server, name)| (server.to_owned(), name.to_owned()))),
        Naming::Assigned(options) => {
            let names = assign(
                prompts(servers).map(|(server, p)| (server, p.name.as_str())),
                options,
            );
            Ok(names
                .resolve(name)
                .map(|key| (key.server.clone(), key.tool.clone())))
        }
    }
}

/// The server that listed `uri` as a resource, if one did.
pub(super) fn listed_resource(servers: &[Usable], uri: &str) -> Option<String> {
    servers
        .iter()
        .find(|server| {
            server
                .catalog
                .resources()
                .unwrap_or_default()
                .iter()
                .any(|resource| resource.uri == uri)
        })
        .map(|server| server.id.clone())
}

/// The server to read `uri` from among those that list it: the first, or
/// with kept names the one (an error when two list it).
pub(super) fn resource_owner(
    servers: &[Usable],
    naming: Naming<'_>,
    uri: &str,
) -> Result<Option<String>, NameCollision> {
    match naming {
        Naming::Keep => Ok(keep::owner(
            "resource",
            resources(servers).map(|(server, r)| (server, r.uri.as_str())),
            uri,
        )?
        .map(str::to_owned)),
        Naming::Assigned(_) | Naming::Plain => Ok(listed_resource(servers, uri)),
    }
}

/// The first name two servers share, of any kind, with kept names:
/// tools (`tools`: the bound tools' `(server, name)`), prompts, resource
/// URIs, then resource template URIs (listed from each server).
pub(super) async fn kept_name_collision<'a>(
    gateway: &Gateway,
    tools: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Option<NameCollision> {
    if let Some(collision) = keep::collision("tool", tools) {
        return Some(collision);
    }
    let servers = usable(gateway);
    if let Err(collision) = list_prompts(&servers, Naming::Keep) {
        return Some(collision);
    }
    if let Err(collision) = list_resources(&servers, Naming::Keep) {
        return Some(collision);
    }
    list_templates(templates(gateway, &servers).await, Naming::Keep).err()
}

/// What the forwarding needs of one server: its connection and deadline.
pub(super) struct Upstream {
    pub(super) client: ServerHandle,
    pub(super) options: CallOptions,
    /// Whether the server speaks 2026-07-28 and its input rounds are
    /// relayed to the client ([`Upstream::rounds`]).
    relays: bool,
    /// Whether the server negotiated 2026-07-28.
    modern: bool,
    /// The log level the request is made for ([`Upstream::log_level`]).
    log_level: Option<LoggingLevel>,
}

impl Upstream {
    /// The connection to `server`, with its call deadline (or the
    /// session's), counted as a use.
    pub(super) fn of(gateway: &Gateway, server: &str) -> Result<Upstream, ErrorObject> {
        let inner = &gateway.session.inner;
        let backend = inner.backend();
        let client = backend.server(server).ok_or_else(|| {
            ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                format!("server {server} is not connected"),
            )
        })?;
        let options = CallOptions::default()
            .timeout(backend.call_timeout(server).or(inner.options.call_timeout));
        Ok(Upstream {
            client,
            options,
            relays: false,
            modern: speaks_modern(gateway, server),
            log_level: None,
        })
    }

    /// The request is made for a client whose log level is `level`: a
    /// 2026-07-28 server gets it in the request's `_meta`
    /// ([`with_log_level`]); a handshake-era one has it from
    /// `logging/setLevel` already.
    pub(super) fn log_level(mut self, level: Option<LoggingLevel>) -> Upstream {
        self.log_level = level.filter(|_| self.modern);
        self
    }

    /// With `rounds` and a 2026-07-28 server, the server's input round
    /// comes back to the gateway to relay
    /// ([`CallOptions::return_input_required`]), and the request's
    /// `inputResponses`, `requestState` and the client's capabilities go
    /// to the server.
    pub(super) fn rounds(mut self, rounds: bool) -> Upstream {
        self.relays = rounds && self.modern;
        self.options.return_input_required = self.relays;
        self
    }
}

/// `prompts/get` of `name` (the server's own) on `upstream`; with
/// [`Upstream::rounds`], a 2026-07-28 server's input round is the result.
pub(super) async fn get_prompt(
    upstream: Upstream,
    mut params: GetPromptRequestParams,
    name: String,
) -> Result<serde_json::Value, ErrorObject> {
    params.name = name;
    params.meta = with_log_level(
        relayed_meta(params.meta.as_ref(), upstream.relays),
        upstream.log_level,
    );
    // A client's input rounds are with the gateway, never the server's,
    // but for the server's own round relayed.
    if !upstream.relays {
        params.input_responses = None;
        params.request_state = None;
    }
    match upstream
        .client
        .get_prompt_with(&params, upstream.options)
        .await
    {
        Ok(result) => to_value(&result),
        Err(error) => round_or_error(error),
    }
}

/// `resources/read` of `params.uri` on `upstream`; with
/// [`Upstream::rounds`], a 2026-07-28 server's input round is the result.
pub(super) async fn read_resource(
    upstream: Upstream,
    mut params: ReadResourceRequestParams,
) -> Result<serde_json::Value, ErrorObject> {
    params.meta = with_log_level(
        relayed_meta(params.meta.as_ref(), upstream.relays),
        upstream.log_level,
    );
    if !upstream.relays {
        params.input_responses = None;
        params.request_state = None;
    }
    match upstream
        .client
        .read_resource_with(&params, upstream.options)
        .await
    {
        Ok(result) => to_value(&result),
        Err(error) => round_or_error(error),
    }
}

/// A server's input round (asked for with [`Upstream::rounds`]) as the
/// result it came as; any other failure as [`upstream_error`].
fn round_or_error(error: HandleError) -> Result<serde_json::Value, ErrorObject> {
    match error {
        HandleError::Request(ClientError::InputRequired { round, .. }) => to_value(&*round),
        other => Err(upstream_error(other)),
    }
}

/// Every usable server's resource templates (a server whose listing fails
/// is left out), names prefixed, each with its server.
pub(super) async fn templates(
    gateway: &Gateway,
    servers: &[Usable],
) -> Vec<(String, ResourceTemplate)> {
    let mut all = Vec::new();
    for server in servers {
        if server.catalog.resources().is_none() {
            continue;
        }
        let Ok(upstream) = Upstream::of(gateway, &server.id) else {
            continue;
        };
        let mut cursor = None;
        for _ in 0..TEMPLATE_PAGES {
            let params = PaginatedRequestParams::page(cursor.take());
            let Ok(page) = upstream
                .client
                .list_resource_templates_with(&params, upstream.options.clone())
                .await
            else {
                break;
            };
            for template in page.resource_templates {
                all.push((server.id.clone(), template));
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next.to_string()),
                None => break,
            }
        }
    }
    all
}

/// `resources/templates/list`: the templates, under their assigned names,
/// or their own when kept (refused when two servers list the same URI
/// template).
pub(super) fn list_templates(
    templates: Vec<(String, ResourceTemplate)>,
    naming: Naming<'_>,
) -> Result<ListResourceTemplatesResult, NameCollision> {
    let resource_templates = match naming {
        Naming::Keep => {
            if let Some(collision) = keep::collision(
                "resource template",
                templates
                    .iter()
                    .map(|(server, t)| (server.as_str(), t.uri_template.as_str())),
            ) {
                return Err(collision);
            }
            templates.into_iter().map(|(_, t)| t).collect()
        }
        Naming::Plain => templates
            .into_iter()
            .map(|(server, template)| ResourceTemplate {
                name: plain_name(&server, &template.name),
                ..template
            })
            .collect(),
        Naming::Assigned(options) => {
            let names = assign(
                templates
                    .iter()
                    .map(|(server, template)| (server.as_str(), template.name.as_str())),
                options,
            );
            templates
                .iter()
                .filter_map(|(server, template)| {
                    let name = names.name(server, &template.name)?;
                    Some(ResourceTemplate {
                        name: name.to_owned(),
                        ..template.clone()
                    })
                })
                .collect()
        }
    };
    Ok(ListResourceTemplatesResult {
        resource_templates,
        ..ListResourceTemplatesResult::default()
    })
}

/// The server whose template's fixed beginning is the longest prefix of
/// `uri`.
pub(super) fn template_target(
    templates: &[(String, ResourceTemplate)],
    uri: &str,
) -> Option<String> {
    templates
        .iter()
        .filter_map(|(server, template)| {
            let fixed = template.uri_template.split('{').next().unwrap_or_default();
            (!fixed.is_empty() && uri.starts_with(fixed)).then_some((fixed.len(), server))
        })
        .max_by_key(|(length, _)| *length)
        .map(|(_, server)| server.clone())
}

/// `completion/complete`, sent to the server whose prompt or template the
/// reference names (a prompt's name as that server knows it).
pub(super) async fn complete(
    gateway: &Gateway,
    mut params: CompleteRequestParams,
) -> Result<serde_json::Value, ErrorObject> {
    let servers = usable(gateway);
    let server = match &mut params.reference {
        Reference::Prompt(prompt) => {
            let (server, name) = prompt_target(&servers, naming(gateway), &prompt.name)
                .map_err(|collision| collision.to_error())?
                .ok_or_else(|| {
                    ErrorObject::invalid_params(format!(
                        "unknown prompt: {}",
                        mcp_proto::text::bound(&prompt.name, 128)
                    ))
                })?;
            prompt.name = name;
            server
        }
        Reference::Resource(resource) => {
            let templates = templates(gateway, &servers).await;
            templates
                .iter()
                .find(|(_, template)| template.uri_template == resource.uri)
                .map(|(server, _)| server.clone())
                .or_else(|| listed_resource(&servers, &resource.uri))
                .ok_or_else(|| {
                    ErrorObject::invalid_params(format!(
                        "no server has the resource template {}",
                        mcp_proto::text::bound(&resource.uri, 256)
                    ))
                })?
        }
        Reference::Unknown(_) => {
            return Err(ErrorObject::invalid_params(
                "a completion reference is ref/prompt or ref/resource",
            ));
        }
    };
    let upstream = Upstream::of(gateway, &server)?;
    params.meta = forwarded_meta(params.meta.as_ref());
    let result = upstream
        .client
        .complete_with(&params, upstream.options)
        .await
        .map_err(upstream_error)?;
    to_value(&result)
}

/// "Resource not found" in the client's era.
pub(super) fn resource_not_found(uri: &str, modern: bool) -> ErrorObject {
    let code = if modern {
        error_codes::INVALID_PARAMS
    } else {
        error_codes::RESOURCE_NOT_FOUND
    };
    ErrorObject {
        // The URI in `data`, as a server's own "not found" carries it
        // (SEP-2164).
        data: serde_json::value::to_raw_value(&serde_json::json!({"uri": uri})).ok(),
        ..ErrorObject::new(
            code,
            format!(
                "resource not found: no server lists {}",
                mcp_proto::text::bound(uri, 256)
            ),
        )
    }
}

/// A server's JSON-RPC error as the client gets it: its code and `data`
/// as they came (a resource-not-found error's `data.uri`, SEP-2164), its
/// message bounded to [`PASSED_MESSAGE_LIMIT`].
pub(super) fn passed_on(error: ErrorObject) -> ErrorObject {
    let message = mcp_proto::text::bound(&error.message, PASSED_MESSAGE_LIMIT).into_owned();
    ErrorObject { message, ..error }
}

/// The bytes of a server's error message the gateway passes on: more than
/// a client shows ([`mcp_proto::text::ERROR_TEXT_LIMIT`]), so a client
/// cuts the message where it would have cut the server's own.
pub(super) const PASSED_MESSAGE_LIMIT: usize = 8 * 1024;

/// The `_meta` of a client's request as it is forwarded to a server: the
/// client's own keys, without the protocol's (`io.modelcontextprotocol/*`,
/// the 2026-07-28 per-request envelope, which is the gateway's to write
/// for its own connection), without `progressToken` (the gateway asks
/// for progress under a token of its own) and without the gateway's own
/// request for failure reports ([`super::report::FAILURE`]); `None` when
/// nothing is left.
pub(super) fn forwarded_meta(meta: Option<&Meta>) -> Option<Meta> {
    relayed_meta(meta, false)
}

/// [`forwarded_meta`], and with `relays` (a 2026-07-28 server whose input
/// rounds the client answers) the client's own
/// `io.modelcontextprotocol/clientCapabilities` kept, so that the server
/// asks only for what the client can give (2026-07-28 "Multi round-trip
/// requests"; the connection's own envelope fills in only what the
/// request's `_meta` lacks).
///
/// The kept members' values are passed on as the text the client wrote
/// ([`super::members`]): nothing is decoded but the keys.
pub(super) fn relayed_meta(meta: Option<&Meta>, relays: bool) -> Option<Meta> {
    RequestMeta::read(meta).relayed(relays, None)
}

/// A client request's `_meta`, its members read once for everything the
/// gateway takes from it: what it forwards ([`RequestMeta::relayed`]),
/// whether it asks for failure reports ([`RequestMeta::failures`]) and
/// the log level it asks for ([`RequestMeta::log_level`]).
///
/// Reading the `_meta` for each of these (and, to add a log level,
/// decoding the forwarded one into a map and writing it again) cost the
/// gateway about 3,300 more instructions of a forwarded 2026-07-28
/// `tools/call` than one reading (callgrind: `prepare_call` 17,500, now
/// 14,200).
pub(super) struct RequestMeta<'a> {
    /// Its members, each value as the client wrote it; `None` without a
    /// `_meta` (or one that is no object).
    members: Option<Vec<(Cow<'a, str>, &'a RawValue)>>,
}

impl<'a> RequestMeta<'a> {
    /// Reads the members of `meta`.
    pub(super) fn read(meta: Option<&'a Meta>) -> RequestMeta<'a> {
        RequestMeta {
            members: meta.and_then(|meta| super::members::of(meta.as_str()).ok()),
        }
    }

    /// The member `key`'s value as written (of a key written twice, the
    /// last).
    fn last(&self, key: &str) -> Option<&'a RawValue> {
        super::members::last(self.members.as_deref()?, key)
    }

    /// Whether the `_meta` asks for every failure as a
    /// [`super::report::FailureReport`] ([`super::report::FAILURE`]
    /// present).
    pub(super) fn failures(&self) -> bool {
        self.last(super::report::FAILURE).is_some()
    }

    /// The `io.modelcontextprotocol/logLevel` a 2026-07-28 request asks
    /// for, if any (one that is no log level counts as none).
    pub(super) fn log_level(&self) -> Option<LoggingLevel> {
        serde_json::from_str(self.last(LOG_LEVEL)?.get()).ok()
    }

    /// The `_meta` forwarded to the server ([`relayed_meta`]), with `level`
    /// as its `io.modelcontextprotocol/logLevel` when there is one (see
    /// [`with_log_level`]); `None` when nothing is left.
    pub(super) fn relayed(self, relays: bool, level: Option<LoggingLevel>) -> Option<Meta> {
        let level = level.and_then(|level| serde_json::value::to_raw_value(level.as_str()).ok());
        let Some(mut members) = self.members else {
            // No `_meta` of the client's: the level alone.
            let level = level?;
            return super::members::write(&[(LOG_LEVEL.into(), &*level)])
                .and_then(|text| Meta::from_text(text).ok());
        };
        let capabilities = relays
            .then(|| super::members::last(&members, CLIENT_CAPABILITIES))
            .flatten();
        members.retain(|(key, _)| {
            key != "progressToken"
                && key != super::report::FAILURE
                && !key.starts_with(PROTOCOL_META_PREFIX)
        });
        if let Some(capabilities) = capabilities {
            members.push((CLIENT_CAPABILITIES.into(), capabilities));
        }
        // No member of the protocol's is left, so the level is not one
        // already there.
        let mut members: Vec<(Cow<'_, str>, &RawValue)> = members;
        if let Some(level) = &level {
            members.push((LOG_LEVEL.into(), level));
        }
        super::members::write(&members).and_then(|text| Meta::from_text(text).ok())
    }
}

/// The `_meta` key by which a 2026-07-28 server names itself in each of
/// its results (2026-07-28 "Lifecycle"): the server's own envelope, not
/// part of what a handshake-era client is given.
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// A server's result `_meta`, for a handshake-era client: without the
/// 2026-07-28 server's `io.modelcontextprotocol/serverInfo` (its
/// envelope; that era names the server in `initialize`), `None` when
/// nothing else is left. The other members pass as written.
pub(super) fn handshake_meta(meta: Option<Meta>) -> Option<Meta> {
    let meta = meta?;
    if !meta.as_str().contains(SERVER_INFO) {
        return Some(meta);
    }
    let Ok(mut members) = super::members::of(meta.as_str()) else {
        return Some(meta);
    };
    members.retain(|(key, _)| key != SERVER_INFO);
    if members.is_empty() {
        return None;
    }
    super::members::write(&members).and_then(|text| Meta::from_text(text).ok())
}

/// A server's result, for a handshake-era client: without the members only
/// 2026-07-28 has (`resultType`, the caching hints `ttlMs` and
/// `cacheScope`, and the server's `_meta` envelope, see
/// [`handshake_meta`]), which a 2026-07-28 server behind the gateway puts
/// on every result.
pub(super) fn to_handshake_era(result: &mut serde_json::Map<String, serde_json::Value>) {
    for key in ["resultType", "ttlMs", "cacheScope"] {
        result.remove(key);
    }
    if let Some(serde_json::Value::Object(meta)) = result.get_mut("_meta") {
        meta.remove(SERVER_INFO);
        if meta.is_empty() {
            result.remove("_meta");
        }
    }
}

/// `meta` with `level` as the request's
/// `io.modelcontextprotocol/logLevel` (2026-07-28 "Utilities/Logging"
/// §Per-request log level), for a request forwarded to a 2026-07-28
/// server: without it that server sends no log messages. `None` leaves
/// `meta` as it is.
pub(super) fn with_log_level(meta: Option<Meta>, level: Option<LoggingLevel>) -> Option<Meta> {
    let Some(level) = level else {
        return meta;
    };
    let mut meta = meta.unwrap_or_default();
    meta.insert(
        LOG_LEVEL,
        serde_json::Value::String(level.as_str().to_owned()),
    );
    Some(meta)
}

/// The `io.modelcontextprotocol/logLevel` a 2026-07-28 request's `_meta`
/// asks for, if any (one that is no log level counts as none).
pub(super) fn requested_log_level(meta: Option<&Meta>) -> Option<LoggingLevel> {
    serde_json::from_value(meta?.get(LOG_LEVEL)?).ok()
}

/// Whether `server` negotiated 2026-07-28.
pub(super) fn speaks_modern(gateway: &Gateway, server: &str) -> bool {
    gateway
        .manager
        .catalog(server)
        .is_some_and(|catalog| catalog.protocol_version().era() == mcp_proto::Era::Modern)
}

/// Whether `server`'s connection can end a call's stream before its
/// answer (Streamable HTTP's SSE polling, MCP "Transports"); one whose
/// catalog is not known yet is taken to. A stdio server cannot, so a call
/// to it needs no [`mcp_transport::CallOptions::stream_paused`] listener.
pub(super) fn can_pause(gateway: &Gateway, server: &str) -> bool {
    gateway
        .manager
        .catalog(server)
        .is_none_or(|catalog| catalog.transport() != mcp_config::TransportKind::Stdio)
}

/// The reserved prefix of the protocol's own `_meta` keys.
const PROTOCOL_META_PREFIX: &str = "io.modelcontextprotocol/";

/// A server's failure as the error the client gets: its own JSON-RPC error
/// (message bounded, `data` kept), or an internal error saying what
/// happened.
pub(super) fn upstream_error(error: HandleError) -> ErrorObject {
    match error {
        HandleError::Request(ClientError::Rpc(error)) => passed_on(error),
        other => ErrorObject::new(
            error_codes::INTERNAL_ERROR,
            mcp_proto::text::bound(&other.to_string(), 512),
        ),
    }
}

fn to_value(result: &impl serde::Serialize) -> Result<serde_json::Value, ErrorObject> {
    serde_json::to_value(result)
        .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_for_a_handshake_era_client_loses_only_the_2026_07_28_envelope() {
        let meta = Meta::from_text(
            r#"{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"},"io.modelcontextprotocol/related-task":{"taskId":"t"},"mine":[1]}"#,
        )
        .unwrap();
        assert_eq!(
            handshake_meta(Some(meta)).unwrap().as_str(),
            r#"{"io.modelcontextprotocol/related-task":{"taskId":"t"},"mine":[1]}"#
        );
        let only = Meta::from_text(r#"{"io.modelcontextprotocol/serverInfo":{}}"#).unwrap();
        assert!(handshake_meta(Some(only)).is_none());
        let mut result = serde_json::json!({
            "messages": [],
            "resultType": "complete",
            "ttlMs": 60000,
            "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s"}},
        });
        to_handshake_era(result.as_object_mut().unwrap());
        assert_eq!(result, serde_json::json!({"messages": []}));
    }

    #[test]
    fn a_relayed_request_carries_the_clients_own_capabilities_and_no_other_protocol_key() {
        let meta = Meta::from_text(
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"progressToken":7}"#,
        )
        .unwrap();
        let relayed = relayed_meta(Some(&meta), true).expect("the capabilities");
        assert_eq!(
            relayed.get(CLIENT_CAPABILITIES),
            Some(serde_json::json!({"roots": {}}))
        );
        assert_eq!(relayed.to_object().len(), 1, "{}", relayed.as_str());
        // Not relayed (a handshake-era server, or a client answered by
        // the gateway's connection): the connection's own envelope only.
        assert!(relayed_meta(Some(&meta), false).is_none());
        assert!(relayed_meta(None, true).is_none());
    }

    #[test]
    fn the_protocols_meta_keys_stay_with_the_clients_connection() {
        let meta = Meta::from_text(
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7,"example.com/trace":"t1"}"#,
        )
        .unwrap();
        let forwarded = forwarded_meta(Some(&meta)).expect("the client's own key");
        assert_eq!(forwarded.to_object().len(), 1, "{}", forwarded.as_str());
        assert_eq!(forwarded.get("example.com/trace").unwrap(), "t1");
        let only_protocol =
            Meta::from_text(r#"{"io.modelcontextprotocol/clientInfo":{},"progressToken":"p"}"#)
                .unwrap();
        assert!(forwarded_meta(Some(&only_protocol)).is_none());
        assert!(forwarded_meta(None).is_none());
    }

    #[test]
    fn one_reading_of_a_requests_meta_gives_what_each_use_needs() {
        let text = r#"{"io.modelcontextprotocol/logLevel":"warning","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"progressToken":7,"example.com/trace":1.0e3}"#;
        let meta = Meta::from_text(text).unwrap();
        let read = RequestMeta::read(Some(&meta));
        assert!(!read.failures());
        assert_eq!(read.log_level(), Some(LoggingLevel::Warning));
        // As relaying and then setting the level did, the values as written.
        let relayed = read.relayed(true, Some(LoggingLevel::Debug)).unwrap();
        assert_eq!(
            relayed.as_str(),
            r#"{"example.com/trace":1.0e3,"io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/logLevel":"debug"}"#
        );
        assert_eq!(
            relayed,
            with_log_level(relayed_meta(Some(&meta), true), Some(LoggingLevel::Debug)).unwrap()
        );
        let read = RequestMeta::read(Some(&meta));
        assert_eq!(read.relayed(false, None), relayed_meta(Some(&meta), false));

        let asking = Meta::from_text(format!(
            r#"{{"{}":true,"io.modelcontextprotocol/logLevel":"loud"}}"#,
            super::super::report::FAILURE
        ))
        .unwrap();
        let read = RequestMeta::read(Some(&asking));
        assert!(read.failures());
        assert_eq!(read.log_level(), None, "no log level");
        assert!(read.relayed(true, None).is_none());

        // No `_meta`: the level alone, as `with_log_level` writes it.
        let read = RequestMeta::read(None);
        assert!(!read.failures());
        assert_eq!(read.log_level(), None);
        assert_eq!(
            read.relayed(true, Some(LoggingLevel::Error))
                .unwrap()
                .as_str(),
            r#"{"io.modelcontextprotocol/logLevel":"error"}"#
        );
        assert!(RequestMeta::read(None).relayed(true, None).is_none());
    }

    #[test]
    fn a_servers_error_keeps_its_code_and_data() {
        let error = ErrorObject {
            data: serde_json::value::to_raw_value(&serde_json::json!({"uri": "test://gone"})).ok(),
            ..ErrorObject::new(error_codes::RESOURCE_NOT_FOUND, "x".repeat(20_000))
        };
        let passed = passed_on(error);
        assert_eq!(passed.code, error_codes::RESOURCE_NOT_FOUND);
        assert!(passed.message.len() < PASSED_MESSAGE_LIMIT + 100, "bounded");
        assert_eq!(
            passed.data_as::<serde_json::Value>().unwrap()["uri"],
            "test://gone"
        );
    }
}

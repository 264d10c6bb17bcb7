//! The Skills extension through the gateway (`io.modelcontextprotocol/skills`, SEP-2640): declared when a usable server declares it, `skills/list` answered from the servers' catalogs, `skills/get` forwarded to the server the skill is from.
//!
//! A skill's entry keeps its server's URI (its files are resources, read
//! through the gateway's `resources/read`, which finds their server), so
//! the listing is every usable server's entries as listed; with kept names
//! a URI two servers list is refused, naming both. `skills/get` goes to the
//! server that lists the URI, or else to the one server with skills, when
//! only one has (it knows skills its listing leaves out). The gateway does
//! not declare `directoryRead`: it does not forward
//! `resources/directory/read`.

use mcp_proto::ErrorObject;
use mcp_proto::types::{
    GetSkillRequestParams, ListSkillsResult, SKILLS_EXTENSION, ServerCapabilities,
};

use super::Gateway;
use super::forward::{self, Naming, Upstream, Usable};
use super::keep::{self, NameCollision};

/// Declares the extension (with no settings) when a usable server does.
pub(super) fn add_capability(gateway: &Gateway, capabilities: &mut ServerCapabilities) {
    if forward::usable(gateway)
        .iter()
        .any(|server| server.capabilities().skills().is_some())
    {
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(
                SKILLS_EXTENSION.to_owned(),
                serde_json::Value::Object(Default::default()),
            );
    }
}

/// Every usable server's skill entries, each with its server.
fn entries(servers: &[Usable]) -> impl Iterator<Item = (&str, &mcp_proto::types::Skill)> {
    servers.iter().flat_map(|server| {
        server
            .skills()
            .iter()
            .map(move |skill| (server.id.as_str(), skill))
    })
}

/// `skills/list`: every usable server's entries, as listed (with kept
/// names, refused when two servers list one URI).
pub(super) fn list(
    servers: &[Usable],
    naming: Naming<'_>,
) -> Result<ListSkillsResult, NameCollision> {
    if let Naming::Keep = naming
        && let Some(collision) = keep::collision(
            "skill",
            entries(servers).map(|(server, skill)| (server, skill.uri.as_str())),
        )
    {
        return Err(collision);
    }
    Ok(ListSkillsResult {
        skills: entries(servers).map(|(_, skill)| skill.clone()).collect(),
        ..ListSkillsResult::default()
    })
}

/// `skills/get` of `params.uri`, on the server that lists it, or the one
/// server with skills.
pub(super) async fn get(
    gateway: Gateway,
    params: GetSkillRequestParams,
) -> Result<serde_json::Value, ErrorObject> {
    let servers = forward::usable(&gateway);
    let listed = entries(&servers).map(|(server, skill)| (server, skill.uri.as_str()));
    let owner = match forward::naming(&gateway) {
        Naming::Keep => keep::owner("skill", listed, &params.uri)
            .map_err(|collision| collision.to_error())?
            .map(str::to_owned),
        Naming::Assigned(_) | Naming::Plain => listed
            .into_iter()
            .find(|(_, uri)| *uri == params.uri)
            .map(|(server, _)| server.to_owned()),
    };
    let server = match owner {
        Some(server) => server,
        None => {
            let mut with_skills = servers
                .iter()
                .filter(|server| server.capabilities().skills().is_some());
            match (with_skills.next(), with_skills.next()) {
                (Some(only), None) => only.id.clone(),
                _ => {
                    return Err(ErrorObject::invalid_params(format!(
                        "no server of the gateway lists the skill {}",
                        mcp_proto::text::bound(&params.uri, 256)
                    )));
                }
            }
        }
    };
    let upstream = Upstream::of(&gateway, &server)?;
    let result = upstream
        .client
        .get_skill(&params.uri)
        .await
        .map_err(forward::upstream_error)?;
    serde_json::to_value(result).map_err(|e| {
        ErrorObject::new(
            mcp_proto::jsonrpc::error_codes::INTERNAL_ERROR,
            e.to_string(),
        )
    })
}

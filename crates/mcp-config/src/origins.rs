//! Where each field of a server read from a host's file was written: so that validation names the key as the person wrote it, with its line and column.

use crate::json::Positions;

/// Where one field of a server was written: the path in its file as the
/// person wrote it (`mcpServers.github.env.GITHUB_TOKEN`), and the 1-based
/// line and column of its value when known.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Origin {
    /// The written path, built as the readers build paths: `.key` for plain
    /// keys, `["my key"]` otherwise, `[index]` for array items.
    pub path: String,
    /// The line of the value, 1-based.
    pub line: Option<usize>,
    /// The column of the value, 1-based, counted in characters.
    pub column: Option<usize>,
}

impl Origin {
    /// An origin at `path`, position unknown.
    pub fn new(path: impl Into<String>) -> Self {
        Origin {
            path: path.into(),
            line: None,
            column: None,
        }
    }
}

/// For one server, where each of its fields came from, keyed by the field's
/// path in the store's vocabulary (`transport.command`, `transport.env[0]`,
/// `timeout`): what [`crate::validate`] reports, translated to what the
/// person wrote.
///
/// Readers of the hosts' files fill it; the store format leaves it empty, so
/// store paths stay. Where a definition was written is not part of what it
/// defines: two `Origins` always compare equal, so a server read from two
/// files compares equal to itself.
///
/// ```
/// use mcp_config::{parse_document, Format};
///
/// let doc = parse_document(
///     "{\"mcpServers\": {\"github\": {\n  \"command\": \"npx\",\n  \"env\": {\"BAD=NAME\": \"x\"}}}}",
///     Some(Format::McpServers),
/// )?;
/// let github = doc.servers().next().unwrap();
/// let origin = github.origins.translate("transport.env[0].key").unwrap();
/// assert_eq!(origin.path, "mcpServers.github.env[\"BAD=NAME\"]");
/// assert_eq!((origin.line, origin.column), (Some(3), Some(23)));
/// # Ok::<(), mcp_config::DocumentError>(())
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Origins {
    entries: Vec<(String, Origin)>,
}

impl PartialEq for Origins {
    fn eq(&self, _: &Origins) -> bool {
        true
    }
}

impl Eq for Origins {}

impl Origins {
    /// No origins: every field keeps its store path.
    pub fn new() -> Self {
        Origins::default()
    }

    /// Records that the field at `store_path` was written at `written_path`
    /// (replacing an earlier record of the same field).
    pub fn insert(&mut self, store_path: impl Into<String>, written_path: impl Into<String>) {
        let store_path = store_path.into();
        let origin = Origin::new(written_path);
        match self
            .entries
            .iter_mut()
            .find(|(path, _)| *path == store_path)
        {
            Some((_, existing)) => *existing = origin,
            None => self.entries.push((store_path, origin)),
        }
    }

    /// The origin recorded for exactly `store_path`.
    pub fn get(&self, store_path: &str) -> Option<&Origin> {
        self.entries
            .iter()
            .find(|(path, _)| path == store_path)
            .map(|(_, origin)| origin)
    }

    /// Whether nothing is recorded (a server from the store, or built in code).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every record: store path and origin, in the order recorded.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Origin)> {
        self.entries
            .iter()
            .map(|(path, origin)| (path.as_str(), origin))
    }

    /// What the person wrote for the store field `field`: the record with
    /// the longest store path that is `field` or encloses it. The rest of
    /// `field` is appended to the written path, except `.key` and `.value`
    /// of a map entry (`transport.env[0].key`), which both name the entry's
    /// written key: a file writes `"NAME": "value"` as one member. With a
    /// rest appended, the position is the enclosing record's. `None` when
    /// nothing encloses `field`.
    pub fn translate(&self, field: &str) -> Option<Origin> {
        let (store_path, origin) = self
            .entries
            .iter()
            .filter(|(path, _)| encloses(path, field))
            .max_by_key(|(path, _)| path.len())?;
        let rest = &field[store_path.len()..];
        let mut out = origin.clone();
        if !matches!(rest, "" | ".key" | ".value") {
            out.path.push_str(rest);
        }
        Some(out)
    }

    /// Fills in the line and column of every record from the document's
    /// positions.
    pub(crate) fn locate(&mut self, positions: &Positions) {
        for (_, origin) in &mut self.entries {
            if let Some(position) = positions.locate(&origin.path) {
                origin.line = Some(position.line);
                origin.column = Some(position.column);
            }
        }
    }
}

/// Whether the store path `outer` is `inner` or one of its enclosing fields.
fn encloses(outer: &str, inner: &str) -> bool {
    inner
        .strip_prefix(outer)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_enclosing_record_wins_and_map_entries_are_their_key() {
        let mut origins = Origins::new();
        origins.insert("transport", "mcp.x");
        origins.insert("transport.env[0]", "mcp.x.environment.TOKEN");
        origins.insert("transport.env[1]", "mcp.x.environment[\"A B\"]");
        origins.insert("transport.oauth", "mcp.x.oauth");
        let path = |field: &str| origins.translate(field).map(|origin| origin.path);
        assert_eq!(
            path("transport.env[0].key").as_deref(),
            Some("mcp.x.environment.TOKEN")
        );
        assert_eq!(
            path("transport.env[0].value").as_deref(),
            Some("mcp.x.environment.TOKEN")
        );
        assert_eq!(
            path("transport.env[1]").as_deref(),
            Some("mcp.x.environment[\"A B\"]")
        );
        assert_eq!(
            path("transport.oauth.scopes[2]").as_deref(),
            Some("mcp.x.oauth.scopes[2]")
        );
        // `transport.env[10]` is not inside `transport.env[1]`.
        assert_eq!(path("transport.env[10]").as_deref(), Some("mcp.x.env[10]"));
        assert_eq!(path("transportation"), None);
        assert_eq!(path("timeout"), None);
    }

    #[test]
    fn origins_never_make_two_definitions_differ() {
        let mut origins = Origins::new();
        origins.insert("transport.command", "mcpServers.a.command");
        assert_eq!(origins, Origins::new());
    }
}

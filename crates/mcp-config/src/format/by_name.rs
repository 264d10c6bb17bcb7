//! The format of a host's file told by its name, for a file read without a format.

use std::path::Path;

use super::Format;

impl Format {
    /// The format a host's file is written in, told by its name: `*.toml` is
    /// Codex's `config.toml`, `*.yaml` / `*.yml` goose's `config.yaml`,
    /// `opencode.json` / `opencode.jsonc` opencode's, `settings.json` in a
    /// `zed` (or `.zed`) directory Zed's, `.gemini/settings.json` Gemini
    /// CLI's, `mcp_config.json` Windsurf's, `cline_mcp_settings.json`
    /// Cline's and `.claude.json` Claude Code's. `None` for any other
    /// name: its content decides (see [`crate::parse_document`]).
    ///
    /// ```
    /// use std::path::Path;
    /// use mcp_config::Format;
    ///
    /// assert_eq!(Format::from_path(Path::new("/home/me/.codex/config.toml")), Some(Format::Codex));
    /// assert_eq!(Format::from_path(Path::new("/home/me/.config/zed/settings.json")), Some(Format::Zed));
    /// assert_eq!(Format::from_path(Path::new("/work/app/.mcp.json")), None);
    /// ```
    pub fn from_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?;
        let parent = path
            .parent()
            .and_then(Path::file_name)
            .and_then(|dir| dir.to_str());
        let extension = path.extension().and_then(|ext| ext.to_str());
        if let Some(extension) = extension {
            if extension.eq_ignore_ascii_case("toml") {
                return Some(Format::Codex);
            }
            if extension.eq_ignore_ascii_case("yaml") || extension.eq_ignore_ascii_case("yml") {
                return Some(Format::Goose);
            }
        }
        match (name, parent) {
            ("opencode.json" | "opencode.jsonc", _) => Some(Format::OpenCode),
            ("settings.json", Some("zed" | ".zed")) => Some(Format::Zed),
            ("settings.json", Some(".gemini")) => Some(Format::Gemini),
            ("mcp_config.json", _) => Some(Format::Windsurf),
            ("cline_mcp_settings.json", _) => Some(Format::Cline),
            (".claude.json", _) => Some(Format::ClaudeCode),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_files_are_told_by_their_names() {
        for (path, format) in [
            ("/h/.codex/config.toml", Some(Format::Codex)),
            ("/p/.codex/config.toml", Some(Format::Codex)),
            ("CONFIG.TOML", Some(Format::Codex)),
            ("/h/.config/goose/config.yaml", Some(Format::Goose)),
            ("goose.yml", Some(Format::Goose)),
            ("/p/opencode.json", Some(Format::OpenCode)),
            ("/h/.config/opencode/opencode.jsonc", Some(Format::OpenCode)),
            ("/h/.config/zed/settings.json", Some(Format::Zed)),
            ("/p/.zed/settings.json", Some(Format::Zed)),
            ("/h/.gemini/settings.json", Some(Format::Gemini)),
            (
                "/h/.codeium/windsurf/mcp_config.json",
                Some(Format::Windsurf),
            ),
            (
                "/h/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
                Some(Format::Cline),
            ),
            ("/h/.claude.json", Some(Format::ClaudeCode)),
            // Content decides for everything else.
            ("/p/.vscode/settings.json", None),
            ("/h/.config/Code/User/settings.json", None),
            ("settings.json", None),
            ("/p/.mcp.json", None),
            ("/h/.cursor/mcp.json", None),
            ("/h/claude_desktop_config.json", None),
            ("/h/mcp.json", None),
            ("/", None),
            ("", None),
        ] {
            assert_eq!(Format::from_path(Path::new(path)), format, "{path}");
        }
    }
}

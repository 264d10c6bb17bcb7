//! The applications whose MCP configuration files this crate reads, as names: [`Host`] with its label, command-line id, format and precedence order.
//!
//! Where each host keeps its files is [`crate::HostSources`]'s business.

use std::fmt;

use crate::format::Format;

/// An application whose MCP server configuration files are read, so that
/// servers a person already configured there are found without flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Host {
    /// Claude Desktop: `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Claude Code: `~/.claude.json` and a project's `.mcp.json`.
    ClaudeCode,
    /// Cursor: `~/.cursor/mcp.json` and `<project>/.cursor/mcp.json`.
    Cursor,
    /// VS Code: the user's `mcp.json` and `<project>/.vscode/mcp.json`.
    VsCode,
    /// Windsurf: `~/.codeium/windsurf/mcp_config.json`.
    Windsurf,
    /// Codex: `~/.codex/config.toml`.
    Codex,
    /// Gemini CLI: `~/.gemini/settings.json` and `<project>/.gemini/settings.json`.
    GeminiCli,
    /// Zed: `settings.json` `context_servers`.
    Zed,
    /// goose: `~/.config/goose/config.yaml` `extensions`.
    Goose,
    /// opencode: `opencode.json` `mcp`.
    OpenCode,
    /// Cline: `cline_mcp_settings.json`.
    Cline,
}

impl Host {
    /// Every host, in the fixed order that decides between two hosts'
    /// definitions of one server at the same level (the first wins).
    pub const ALL: [Host; 11] = [
        Host::ClaudeCode,
        Host::ClaudeDesktop,
        Host::Cursor,
        Host::VsCode,
        Host::Windsurf,
        Host::Codex,
        Host::GeminiCli,
        Host::Zed,
        Host::Goose,
        Host::OpenCode,
        Host::Cline,
    ];

    /// The name people know the host by: `Claude Code`, `VS Code`, ...
    pub fn label(self) -> &'static str {
        match self {
            Host::ClaudeDesktop => "Claude Desktop",
            Host::ClaudeCode => "Claude Code",
            Host::Cursor => "Cursor",
            Host::VsCode => "VS Code",
            Host::Windsurf => "Windsurf",
            Host::Codex => "Codex",
            Host::GeminiCli => "Gemini CLI",
            Host::Zed => "Zed",
            Host::Goose => "goose",
            Host::OpenCode => "opencode",
            Host::Cline => "Cline",
        }
    }

    /// The host's id on a command line (`mcpctl import claude-code`).
    pub fn id(self) -> &'static str {
        match self {
            Host::ClaudeDesktop => "claude-desktop",
            Host::ClaudeCode => "claude-code",
            Host::Cursor => "cursor",
            Host::VsCode => "vscode",
            Host::Windsurf => "windsurf",
            Host::Codex => "codex",
            Host::GeminiCli => "gemini",
            Host::Zed => "zed",
            Host::Goose => "goose",
            Host::OpenCode => "opencode",
            Host::Cline => "cline",
        }
    }

    /// The host an id names, as [`Host::id`] spells it (any case).
    pub fn from_id(id: &str) -> Option<Host> {
        Host::ALL
            .into_iter()
            .find(|host| host.id().eq_ignore_ascii_case(id))
    }

    /// The format of the host's user-level file.
    pub fn format(self) -> Format {
        match self {
            Host::ClaudeDesktop => Format::McpServers,
            Host::ClaudeCode => Format::ClaudeCode,
            Host::Cursor => Format::Cursor,
            Host::VsCode => Format::VsCode,
            Host::Windsurf => Format::Windsurf,
            Host::Codex => Format::Codex,
            Host::GeminiCli => Format::Gemini,
            Host::Zed => Format::Zed,
            Host::Goose => Format::Goose,
            Host::OpenCode => Format::OpenCode,
            Host::Cline => Format::Cline,
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_unique() {
        for host in Host::ALL {
            assert_eq!(Host::from_id(host.id()), Some(host));
            assert_eq!(Host::ALL.iter().filter(|h| h.id() == host.id()).count(), 1);
        }
        assert_eq!(Host::from_id("VSCode"), Some(Host::VsCode));
        assert_eq!(Host::from_id("nope"), None);
    }
}

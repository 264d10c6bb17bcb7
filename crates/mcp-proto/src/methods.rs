//! MCP method names as constants.

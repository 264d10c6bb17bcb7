//! Every MCP request, result, notification and data type a client meets.

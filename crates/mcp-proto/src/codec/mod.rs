//! Incremental decoders and encoders for the byte streams MCP travels over.

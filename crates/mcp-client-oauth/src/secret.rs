//! `Secret`: tokens, client secrets and keys are held in the workspace's one secret string type, whose `Debug` prints `<redacted>`.

pub use mcp_proto::secret::Secret;

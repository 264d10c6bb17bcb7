//! The session's two MCP tool adapters: live tools, which call a ready server's connection, and deferred tools, offered from the tool cache, which wait for their server first.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_proto::types::{JsonObject, Tool};

use super::{BoundTool, Inner, Target};
use crate::result::ToolOutcome;
use crate::tool::{ModelTool, ToolCall};

/// An MCP tool of a ready server: calls go straight to its connection, and
/// fail at once, with the server's status, if it is no longer ready.
pub struct LiveTool {
    pub(crate) session: Arc<Inner>,
    pub(crate) bound: Arc<BoundTool>,
}

/// An MCP tool offered from the tool cache while its server connects: a
/// call waits for the server (up to
/// [`SessionOptions::connect_wait`](crate::SessionOptions::connect_wait)),
/// then runs against the live catalog. When the server turns out ready the
/// session rebinds its tools on its own (late-connection path).
pub struct DeferredTool {
    pub(crate) session: Arc<Inner>,
    pub(crate) bound: Arc<BoundTool>,
}

/// What the two adapters share: they differ only in the call target.
macro_rules! bound_tool {
    ($ty:ident, $target:ident) => {
        impl $ty {
            /// The server's id.
            pub fn server(&self) -> &str {
                &self.bound.server
            }

            /// The tool as the server listed it.
            pub fn tool(&self) -> &Tool {
                self.bound.tool()
            }
        }

        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("name", &self.bound.model_name)
                    .field("server", &self.bound.server)
                    .field("tool", &self.bound.tool().name)
                    .finish()
            }
        }

        #[async_trait]
        impl ModelTool for $ty {
            fn name(&self) -> &str {
                &self.bound.model_name
            }

            fn description(&self) -> &str {
                &self.bound.description
            }

            fn input_schema(&self) -> &JsonObject {
                &self.bound.tool().input_schema
            }

            async fn call(&self, call: ToolCall) -> ToolOutcome {
                self.session
                    .run_call(Target::$target(self.bound.clone()), call)
                    .await
            }
        }
    };
}

bound_tool!(LiveTool, Live);
bound_tool!(DeferredTool, Deferred);

//! The session's two MCP tool adapters: live tools, which call a ready server's connection, and deferred tools, offered from the tool cache, which wait for their server first; and the declarations of their schemas in the session's dialect.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_proto::types::{JsonText, Tool};

use super::{BoundTool, Inner, Target, ToolSet};
use crate::dialect::{self, Declared, Fidelity, SchemaDialect};
use crate::result::ToolOutcome;
use crate::tool::{ModelTool, ToolCall};

/// An MCP tool of a ready server: calls go straight to its connection, and
/// fail at once, with the server's status, if it is no longer ready.
pub struct LiveTool {
    pub(crate) session: Arc<Inner>,
    pub(crate) bound: Arc<BoundTool>,
    /// The schema in the session's dialect; `None` when declared as is.
    pub(crate) declared: Option<Arc<Declared>>,
}

/// An MCP tool offered from the tool cache while its server connects: a
/// call waits for the server (up to
/// [`SessionOptions::connect_wait`](crate::SessionOptions::connect_wait)),
/// then runs against the live catalog. When the server turns out ready the
/// session rebinds its tools on its own (late-connection path).
pub struct DeferredTool {
    pub(crate) session: Arc<Inner>,
    pub(crate) bound: Arc<BoundTool>,
    /// The schema in the session's dialect; `None` when declared as is.
    pub(crate) declared: Option<Arc<Declared>>,
}

/// What the two adapters share: they differ only in the call target.
macro_rules! bound_tool {
    ($ty:ident, $target:ident) => {
        impl $ty {
            /// The server's id.
            pub fn server(&self) -> &str {
                &self.bound.server
            }

            /// The tool as the server listed it; its `input_schema` is the
            /// one calls are checked against.
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
                self.bound.description()
            }

            fn input_schema(&self) -> &JsonText {
                match &self.declared {
                    Some(declared) => declared.schema_text(),
                    None => &self.bound.tool().input_schema,
                }
            }

            fn fidelity(&self) -> &Fidelity {
                match &self.declared {
                    Some(declared) => &declared.fidelity,
                    None => &Fidelity::Exact,
                }
            }

            async fn call(&self, mut call: ToolCall) -> ToolOutcome {
                if let Some(declared) = &self.declared {
                    call.arguments = declared.restore_arguments(call.arguments);
                }
                self.session
                    .run_call(Target::$target(self.bound.clone()), call)
                    .await
            }
        }
    };
}

bound_tool!(LiveTool, Live);
bound_tool!(DeferredTool, Deferred);

/// Which declaration a bound tool uses: a live tool's is its catalog
/// lifetime's; a deferred tool's is its cached schema's (by content, as
/// the tool cache can change under the same server).
#[derive(Clone, PartialEq, Eq, Hash)]
struct DeclarationKey {
    server: Arc<str>,
    lifetime: Option<u64>,
    tool: String,
    cached: u64,
}

impl DeclarationKey {
    fn of(bound: &BoundTool) -> Self {
        let cached = match bound.lifetime {
            Some(_) => 0,
            None => {
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                bound.tool().input_schema.as_str().hash(&mut hasher);
                hasher.finish()
            }
        };
        DeclarationKey {
            server: bound.server.clone(),
            lifetime: bound.lifetime,
            tool: bound.tool().name.clone(),
            cached,
        }
    }
}

/// The declarations of the bound tools' schemas in the session's dialect:
/// each computed once per catalog lifetime (and logged once when loosened),
/// and forgotten when its tool leaves the binding.
#[derive(Default)]
pub(crate) struct Declarations {
    cells: Mutex<HashMap<DeclarationKey, Arc<Declared>>>,
}

impl Declarations {
    /// The declaration of each of `tools` in `dialect` (`None` each for
    /// [`SchemaDialect::AsIs`]); those of tools not among them are dropped.
    pub(crate) fn for_binding(
        &self,
        tools: &[Arc<BoundTool>],
        dialect: SchemaDialect,
    ) -> Vec<Option<Arc<Declared>>> {
        if dialect == SchemaDialect::AsIs {
            return vec![None; tools.len()];
        }
        let mut cells = mcp_proto::sync::lock(&self.cells);
        let mut used = HashSet::new();
        let declared = tools
            .iter()
            .map(|bound| {
                let key = DeclarationKey::of(bound);
                let declared = cells
                    .entry(key.clone())
                    .or_insert_with(|| {
                        let declared = dialect::declare(&bound.tool().input_schema, dialect);
                        if let Fidelity::Loosened { reasons } = &declared.fidelity {
                            tracing::warn!(
                                server = %bound.server,
                                tool = %bound.tool().name,
                                dialect = dialect.name(),
                                reasons = %reasons.join("; "),
                                "a tool's input schema is declared loosened for the model's provider; calls are still checked against the server's schema"
                            );
                        }
                        Arc::new(declared)
                    })
                    .clone();
                used.insert(key);
                Some(declared)
            })
            .collect();
        cells.retain(|key, _| used.contains(key));
        declared
    }
}

/// A tool of a [`ToolSet`] whose declared schema is not exact, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeclarationNote {
    /// The tool's model name.
    pub tool: String,
    /// What its declaration could not express (see [`Fidelity::Loosened`]).
    pub reasons: Vec<String>,
}

impl ToolSet {
    /// The tools whose declared schema is loosened in the session's
    /// [`SchemaDialect`], with the reasons, sorted by model name; empty for
    /// [`SchemaDialect::AsIs`]. A host may show them, or declare those
    /// tools differently (OpenAI: without `strict`).
    pub fn declaration_notes(&self) -> Vec<DeclarationNote> {
        self.tools
            .iter()
            .filter(|tool| !tool.fidelity().is_exact())
            .map(|tool| DeclarationNote {
                tool: tool.name().to_owned(),
                reasons: tool.fidelity().reasons().to_vec(),
            })
            .collect()
    }
}

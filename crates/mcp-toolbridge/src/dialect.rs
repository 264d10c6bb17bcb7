//! Schemas a model provider accepts: a tool's input schema rewritten into
//! the subset of JSON Schema one provider takes for function parameters.
//!
//! MCP servers describe their tools' arguments in full JSON Schema
//! (2020-12 by default, MCP 2025-11-25 "JSON Schema usage"). Providers
//! accept less, and refuse a whole request over one keyword they do not
//! take. [`declare`] turns a server's schema into one a provider accepts,
//! and says how faithful the result is ([`Fidelity`]). The declaration is
//! only what the model sees: calls are always checked against the
//! server's original schema before dispatch
//! ([`ArgumentSchema`](crate::ArgumentSchema)), so a declaration looser
//! than the original never lets a call through that the server's schema
//! refuses.
//!
//! # The dialects
//!
//! [`SchemaDialect::AsIs`] (the default) is the server's schema unchanged:
//! for Anthropic's Messages API, whose tool `input_schema` is a JSON Schema
//! object, and any provider that takes full JSON Schema.
//!
//! [`SchemaDialect::OpenAiStrict`] follows OpenAI's Structured Outputs
//! guide, section "Supported schemas", which strict function calling
//! (`"strict": true`) shares:
//!
//! - "Root objects must not be anyOf and must be an object": a root union
//!   is declared as one object with every branch's properties, and a root
//!   that is not an object as an object without properties.
//! - "All fields must be required", with optional fields emulated by "a
//!   union type with null": every property is listed in `required`, and
//!   one the server's schema did not require becomes nullable (`"type":
//!   ["string", "null"]`, or `anyOf` with `{"type": "null"}`). A call's
//!   `null` for such a property is removed before validation
//!   ([`Declared::restore_arguments`]), so the server sees it absent.
//! - "additionalProperties: false must always be set in objects": every
//!   object is closed. An object with free-form keys (`additionalProperties`
//!   a schema or `true`, `patternProperties`, or a nested object that lists
//!   no properties) has no strict form; it is declared with its listed
//!   properties only, and the loss is reported.
//! - The supported types (string, number, boolean, integer, object, array,
//!   enum, anyOf) and the documented constraints: `pattern` and `format`
//!   (date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid)
//!   for strings; `multipleOf`, `maximum`, `exclusiveMaximum`, `minimum`,
//!   `exclusiveMinimum` for numbers; `minItems` and `maxItems` for arrays;
//!   `const`, `description` and `title`. "Definitions" and "recursive
//!   schemas": `$defs` (and draft-07 `definitions`) are kept under `$defs`
//!   with references to them, and `#` for the root; other local
//!   references are inlined.
//! - "Some type-specific keywords are not yet supported", naming the
//!   composition keywords `allOf`, `not`, `dependentRequired`,
//!   `dependentSchemas`, `if`, `then`, `else`: `allOf` is merged into one
//!   schema, `oneOf` becomes `anyOf` (exact when its branches are disjoint
//!   by type or by value), and the others are removed and reported, as are
//!   `minLength`, `maxLength`, `uniqueItems`, `contains`, `propertyNames`,
//!   `minProperties`, `maxProperties` and tuple items.
//! - The limits: "up to 5000 object properties total, with up to 10 levels
//!   of nesting" (levels count objects along `properties`; deeper objects
//!   are declared without properties).
//! - A value the server leaves free (`{}`, `true`) has no strict form
//!   either; it is declared as a string, number, boolean or null.
//!
//! [`SchemaDialect::Gemini`] follows the Gemini API's `FunctionDeclaration`
//! reference, whose `parameters` is a `Schema`, "a select subset of an
//! OpenAPI 3.0 schema object":
//!
//! - The fields it lists are kept: `type` (one name, not a list),
//!   `format`, `title`, `description`, `nullable`, `enum`, `items`,
//!   `minItems`, `maxItems`, `properties`, `required`, `minProperties`,
//!   `maxProperties`, `minLength`, `maxLength`, `pattern`, `minimum`,
//!   `maximum` and `anyOf`. Everything else is removed (and reported when
//!   it constrains a value): `additionalProperties`, `const`, `not`,
//!   `if`/`then`/`else`, `exclusiveMinimum`, `multipleOf`, `uniqueItems`…
//! - No references: local `$ref`s are inlined (up to 16 deep); a recursive
//!   reference is declared as a loose value of the referenced type (an
//!   object without properties).
//! - `nullable` instead of a `"null"` type: `["string", "null"]` becomes
//!   `"type": "string"` with `"nullable": true`; other unions of types
//!   become `anyOf`.
//! - `enum` is "possible values of the element of primitive type with enum
//!   format", a list of strings: a string `const` becomes a one-value
//!   `enum`, and enums of other types are removed and reported.
//! - `format`: "for NUMBER type: float, double; for INTEGER type: int32,
//!   int64; for STRING type: enum, date-time"; other formats are removed.
//! - Parameter names (the root's properties) "must start with a letter or
//!   an underscore and must only contain chars a-z, A-Z, 0-9, or
//!   underscores with a maximum length of 64" (Vertex AI's
//!   `FunctionDeclaration` reference): another one is declared under such
//!   a name (other characters become `_`, a suffix keeps it unique), and a
//!   call's arguments get the server's name back
//!   ([`Declared::restore_arguments`]).
//!
//! In both, OpenAPI's `nullable` in a server's schema is an annotation, as
//! JSON Schema validation (which calls go through) reads it, and `allOf`,
//! `oneOf` and references are rewritten as in strict mode where the
//! dialect lacks them.
//!
//! # Fidelity
//!
//! A declaration is [`Fidelity::Exact`] when it accepts exactly the calls
//! the server's schema accepts (up to annotations such as `default` and
//! `examples`, which are dropped silently, and extra keys of objects that
//! did not set `additionalProperties`, which strict mode closes). Otherwise
//! it is [`Fidelity::Loosened`], and each reason names the place (a JSON
//! pointer into the server's schema) and what was lost; reasons are
//! bounded (12 of at most 200 characters, then a count).
//!
//! The two meta-schemas under `src/dialect/` describe, as JSON Schema
//! documents, what each dialect accepts; the crate's tests validate
//! declarations of random schemas against them.

use std::collections::{BTreeMap, HashMap, HashSet};

use mcp_proto::types::{JsonObject, JsonText, json_kind};
use serde_json::{Map, Value, json};

use crate::text::truncate_chars;

mod order;

use order::KeyOrder;

/// The subset of JSON Schema a model provider accepts for a tool's
/// parameters (see the [module docs](crate::dialect) for each one's rules).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SchemaDialect {
    /// The server's schema unchanged: Anthropic, and any provider that
    /// takes full JSON Schema. The default.
    #[default]
    AsIs,
    /// OpenAI strict function schemas (Structured Outputs' subset).
    OpenAiStrict,
    /// Gemini function declarations (a subset of the OpenAPI 3.0 schema
    /// object).
    Gemini,
}

impl SchemaDialect {
    /// The dialect's name, for logs.
    pub fn name(self) -> &'static str {
        match self {
            SchemaDialect::AsIs => "as-is",
            SchemaDialect::OpenAiStrict => "openai-strict",
            SchemaDialect::Gemini => "gemini",
        }
    }

    /// The dialect's meta-schema: a JSON Schema (2020-12) document that
    /// describes what a declaration in this dialect may hold, for a host
    /// that wants to check declarations itself. `None` for
    /// [`SchemaDialect::AsIs`], which is full JSON Schema. Two rules are
    /// beyond JSON Schema and not in it: strict mode's `required` names
    /// every property and there are at most 5,000 properties in all, and
    /// Gemini's `required` names declared properties only.
    pub fn meta_schema(self) -> Option<&'static str> {
        match self {
            SchemaDialect::AsIs => None,
            SchemaDialect::OpenAiStrict => Some(include_str!("dialect/openai_strict.schema.json")),
            SchemaDialect::Gemini => Some(include_str!("dialect/gemini.schema.json")),
        }
    }
}

/// How faithfully a [`Declared`] schema says what the server's does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Fidelity {
    /// The declaration accepts the calls the server's schema accepts.
    #[default]
    Exact,
    /// Something could not be expressed in the dialect. The declaration
    /// may let the model send a call the server's schema refuses (it is
    /// then refused before dispatch, with the reason), or, in strict mode,
    /// offer no way to send some value the server accepts.
    Loosened {
        /// What was lost and where, bounded.
        reasons: Vec<String>,
    },
}

impl Fidelity {
    /// Whether the declaration is exact.
    pub fn is_exact(&self) -> bool {
        matches!(self, Fidelity::Exact)
    }

    /// The reasons of a loosened declaration; empty when exact.
    pub fn reasons(&self) -> &[String] {
        match self {
            Fidelity::Exact => &[],
            Fidelity::Loosened { reasons } => reasons,
        }
    }
}

/// A tool's input schema as one dialect declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct Declared {
    /// The schema to declare to the model: a transformed copy.
    pub schema: JsonObject,
    /// How faithful it is.
    pub fidelity: Fidelity,
    /// `schema` written as JSON once, as [`ModelTool::input_schema`](crate::ModelTool::input_schema) gives it.
    text: JsonText,
    /// Strict mode: per object of the declaration (a JSON pointer into
    /// `schema`), the properties made nullable because they were optional,
    /// whose `null` means "absent".
    optional_nulls: HashMap<String, Vec<String>>,
    /// Gemini: parameters declared under another name, as (declared,
    /// original).
    renames: Vec<(String, String)>,
}

impl Declared {
    /// [`Declared::schema`] as JSON text, written once.
    pub fn schema_text(&self) -> &JsonText {
        &self.text
    }

    /// The arguments a model sent against this declaration, as the
    /// server's schema expects them: in strict mode, a `null` given for a
    /// property the server's schema made optional (and does not allow to
    /// be null) is removed, since strict mode makes the model send every
    /// property; in Gemini, a parameter declared under another name (see
    /// the [module docs](crate::dialect)) gets its own name back. Anything
    /// else is unchanged; validation against the server's schema follows.
    pub fn restore_arguments(&self, mut arguments: Value) -> Value {
        if !self.optional_nulls.is_empty() {
            self.restore(&mut arguments, "", 0);
        }
        if let Value::Object(members) = &mut arguments {
            for (declared, original) in &self.renames {
                if let Some(value) = members.remove(declared) {
                    members.insert(original.clone(), value);
                }
            }
        }
        arguments
    }

    fn node_at(&self, pointer: &str) -> Option<&Map<String, Value>> {
        if pointer.is_empty() {
            return Some(&self.schema);
        }
        let rest = pointer.strip_prefix('/')?;
        let (first, tail) = rest.split_once('/').map_or((rest, ""), |(a, b)| (a, b));
        let first = unescape(first);
        let value = self.schema.get(&first)?;
        let value = if tail.is_empty() {
            value
        } else {
            value.pointer(&format!("/{tail}"))?
        };
        value.as_object()
    }

    fn restore(&self, value: &mut Value, pointer: &str, depth: usize) {
        if depth > MAX_NESTING {
            return;
        }
        let Some(schema) = self.node_at(pointer) else {
            return;
        };
        if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
            if let Some(target) = target.strip_prefix('#') {
                self.restore(value, target, depth + 1);
            }
            return;
        }
        if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
            let fitting: Vec<String> = branches
                .iter()
                .enumerate()
                .filter(|(_, branch)| self.fits(branch, value, depth))
                .map(|(i, _)| format!("{pointer}/anyOf/{i}"))
                .collect();
            // The first branch the value fits: its nulls, its shape.
            if let Some(first) = fitting.first() {
                self.restore(value, first, depth + 1);
            }
            return;
        }
        match value {
            Value::Object(members) => {
                if let Some(optional) = self.optional_nulls.get(pointer) {
                    members.retain(|k, v| !(v.is_null() && optional.contains(k)));
                }
                for (key, member) in members.iter_mut() {
                    let child = format!("{pointer}/properties/{}", escape(key));
                    self.restore(member, &child, depth + 1);
                }
            }
            Value::Array(items) => {
                let child = format!("{pointer}/items");
                for item in items {
                    self.restore(item, &child, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// Whether `value` fits the declared `branch` by its types, constants,
    /// bounds and shape (formats and patterns aside): how a union's branch
    /// is chosen.
    fn fits(&self, branch: &Value, value: &Value, depth: usize) -> bool {
        match branch {
            Value::Object(branch) => self.fits_map(branch, value, depth),
            Value::Bool(accepts) => *accepts,
            _ => true,
        }
    }

    fn fits_map(&self, branch: &Map<String, Value>, value: &Value, depth: usize) -> bool {
        if depth > MAX_NESTING {
            return false;
        }
        if let Some(target) = branch.get("$ref").and_then(Value::as_str) {
            return match target.strip_prefix('#').and_then(|p| self.node_at(p)) {
                Some(target) => self.fits_map(target, value, depth + 1),
                None => true,
            };
        }
        if let Some(Value::Array(branches)) = branch.get("anyOf") {
            return branches.iter().any(|b| self.fits(b, value, depth + 1));
        }
        let kind = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let allows = |t: &str| t == kind || (t == "number" && kind == "integer");
        let typed = match branch.get("type") {
            Some(Value::String(t)) => allows(t),
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).any(allows),
            _ => true,
        };
        if !typed {
            return false;
        }
        if branch.get("const").is_some_and(|c| c != value) {
            return false;
        }
        if let Some(Value::Array(values)) = branch.get("enum")
            && !values.contains(value)
        {
            return false;
        }
        if let Some(n) = value.as_f64() {
            let bound = |key: &str| branch.get(key).and_then(Value::as_f64);
            if bound("minimum").is_some_and(|b| n < b)
                || bound("maximum").is_some_and(|b| n > b)
                || bound("exclusiveMinimum").is_some_and(|b| n <= b)
                || bound("exclusiveMaximum").is_some_and(|b| n >= b)
            {
                return false;
            }
        }
        if let Value::Array(items) = value {
            let count = |key: &str| branch.get(key).and_then(Value::as_u64);
            let len = items.len() as u64;
            if count("minItems").is_some_and(|b| len < b)
                || count("maxItems").is_some_and(|b| len > b)
            {
                return false;
            }
        }
        match value {
            Value::Object(members) => {
                let Some(Value::Object(properties)) = branch.get("properties") else {
                    return true;
                };
                let closed = branch.get("additionalProperties") == Some(&Value::Bool(false));
                let required_present =
                    branch
                        .get("required")
                        .and_then(Value::as_array)
                        .is_none_or(|r| {
                            r.iter()
                                .filter_map(Value::as_str)
                                .all(|k| members.contains_key(k))
                        });
                required_present
                    && members
                        .iter()
                        .all(|(key, member)| match properties.get(key) {
                            Some(schema) => self.fits(schema, member, depth + 1),
                            None => !closed,
                        })
            }
            Value::Array(items) => branch
                .get("items")
                .is_none_or(|schema| items.iter().all(|item| self.fits(schema, item, depth + 1))),
            _ => true,
        }
    }
}

/// Declares `schema` (a tool's `inputSchema`, as the server wrote it) in
/// `dialect`: a transformed copy the provider accepts, and how faithful it
/// is. Properties are declared, and the declaration's text written, in the
/// order of the schema's text. Pure; never panics on anything a server sends.
///
/// ```
/// use mcp_proto::types::JsonText;
/// use mcp_toolbridge::{Fidelity, SchemaDialect, declare};
/// use serde_json::json;
///
/// let schema = JsonText::from_text(r#"{"type": "object",
///     "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
///     "required": ["path"]}"#)?;
/// let declared = declare(&schema, SchemaDialect::OpenAiStrict);
/// assert_eq!(declared.fidelity, Fidelity::Exact);
/// assert_eq!(
///     serde_json::Value::Object(declared.schema.clone()),
///     json!({
///         "type": "object",
///         "properties": {"path": {"type": "string"}, "limit": {"type": ["integer", "null"]}},
///         "required": ["path", "limit"],
///         "additionalProperties": false
///     })
/// );
/// assert_eq!(
///     declared.schema_text().as_str(),
///     r#"{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":["integer","null"]}},"required":["path","limit"],"additionalProperties":false}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn declare(schema: &JsonText, dialect: SchemaDialect) -> Declared {
    if dialect == SchemaDialect::AsIs {
        return Declared {
            text: schema.clone(),
            schema: schema.to_object().unwrap_or_default(),
            fidelity: Fidelity::Exact,
            optional_nulls: HashMap::new(),
            renames: Vec::new(),
        };
    }
    let order = KeyOrder::of(schema);
    let root = Value::Object(schema.to_object().unwrap_or_default());
    let mut ctx = Ctx {
        order,
        written: Vec::new(),
        strict: dialect == SchemaDialect::OpenAiStrict,
        root: &root,
        reasons: Vec::new(),
        seen: HashSet::new(),
        places: HashSet::new(),
        more: 0,
        stack: vec![String::new()],
        expansions: 0,
        properties: 0,
        defs: BTreeMap::new(),
        def_names: HashMap::new(),
        pending: Vec::new(),
        optional_nulls: HashMap::new(),
        renames: Vec::new(),
    };
    let empty = Map::new();
    let mut out = ctx.root_node(root.as_object().unwrap_or(&empty));
    if ctx.strict {
        while let Some((name, pointer)) = ctx.pending.pop() {
            let target = root.pointer(&pointer).cloned().unwrap_or(Value::Bool(true));
            ctx.stack = vec![pointer.clone()];
            let out_pointer = format!("/$defs/{}", escape(&name));
            let declared = ctx.node(&target, &pointer, &out_pointer, 1, 1);
            ctx.defs.insert(name, declared);
        }
        if !ctx.defs.is_empty() {
            let defs: Map<String, Value> = std::mem::take(&mut ctx.defs).into_iter().collect();
            out.insert("$defs".into(), Value::Object(defs));
        }
    }
    let mut reasons = ctx.reasons;
    if ctx.more > 0 {
        reasons.push(format!("and {} more", ctx.more));
    }
    let mut order = ctx.order;
    for (at, keys) in ctx.written {
        order.set(at, keys);
    }
    Declared {
        text: JsonText::encode(&order.write_object(&out)).unwrap_or_else(|_| JsonText::from(&out)),
        schema: out,
        fidelity: if reasons.is_empty() {
            Fidelity::Exact
        } else {
            Fidelity::Loosened { reasons }
        },
        optional_nulls: ctx.optional_nulls,
        renames: ctx.renames,
    }
}

/// How many reasons a declaration lists; the rest are counted.
const MAX_REASONS: usize = 12;
/// The longest reason, in characters.
const MAX_REASON_CHARS: usize = 200;
/// How deep the transform follows a schema; deeper parts are loose.
const MAX_NESTING: usize = 64;
/// How many references one declaration inlines at most.
const MAX_EXPANSIONS: usize = 256;
/// How many references deep inlining goes.
const MAX_REF_DEPTH: usize = 16;
/// Strict mode: levels of nested objects.
const STRICT_MAX_LEVELS: usize = 10;
/// Strict mode: object properties in all.
const STRICT_MAX_PROPERTIES: usize = 5000;

const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords that constrain a value, each either handled below or lost.
const ASSERTIONS: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "additionalItems",
];

const TYPES: &[&str] = &[
    "object", "array", "string", "number", "integer", "boolean", "null",
];

struct Ctx<'a> {
    /// The key order of the server's schema text: properties are declared,
    /// and every object written, in it.
    order: KeyOrder,
    /// The properties objects of the declaration (JSON pointers into it)
    /// with their keys in the order they were declared.
    written: Vec<(String, Vec<String>)>,
    strict: bool,
    root: &'a Value,
    reasons: Vec<String>,
    seen: HashSet<String>,
    /// The places (pointers into the server's schema) with a reason.
    places: HashSet<String>,
    more: usize,
    /// The references being inlined (JSON pointers; `""` is the root).
    stack: Vec<String>,
    expansions: usize,
    properties: usize,
    /// Strict mode: declared definitions by name.
    defs: BTreeMap<String, Value>,
    /// Strict mode: definition name by the pointer it came from.
    def_names: HashMap<String, String>,
    /// Strict mode: definitions referenced and not declared yet.
    pending: Vec<(String, String)>,
    optional_nulls: HashMap<String, Vec<String>>,
    renames: Vec<(String, String)>,
}

impl<'a> Ctx<'a> {
    fn lose(&mut self, at: &str, what: impl AsRef<str>) {
        self.places.insert(at.to_owned());
        let place = if at.is_empty() { "(root)" } else { at };
        let reason = truncate_chars(
            &format!("at {}: {}", truncate_chars(place, 80), what.as_ref()),
            MAX_REASON_CHARS,
        );
        if !self.seen.insert(reason.clone()) {
            return;
        }
        if self.reasons.len() < MAX_REASONS {
            self.reasons.push(reason);
        } else {
            self.more += 1;
        }
    }

    fn dialect(&self) -> &'static str {
        if self.strict {
            "OpenAI strict mode"
        } else {
            "Gemini"
        }
    }

    /// A value the server leaves free.
    fn any(&mut self, at: &str, annotations: &Map<String, Value>) -> Value {
        let mut out = if self.strict {
            if !self.places.contains(at) {
                self.lose(
                at,
                "a free value is declared as a string, number, boolean or null (strict mode has no free value)",
            );
            }
            let mut out = Map::new();
            out.insert(
                "anyOf".into(),
                json!([{"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}]),
            );
            out
        } else {
            Map::new()
        };
        copy_annotations(annotations, &mut out);
        Value::Object(out)
    }

    /// An object without properties: open in Gemini, closed (empty) in
    /// strict mode.
    fn empty_object(&self, annotations: &Map<String, Value>) -> Value {
        let mut out = Map::new();
        out.insert("type".into(), "object".into());
        if self.strict {
            out.insert("properties".into(), Value::Object(Map::new()));
            out.insert("required".into(), Value::Array(Vec::new()));
            out.insert("additionalProperties".into(), Value::Bool(false));
        }
        copy_annotations(annotations, &mut out);
        Value::Object(out)
    }

    fn root_node(&mut self, schema: &JsonObject) -> Map<String, Value> {
        let mut schema = schema.clone();
        // A root without a type (`{}`, or only properties) takes objects,
        // the only arguments MCP sends; a nullable root's null is the
        // bridge's `{}` anyway.
        match schema.get("type") {
            None if !["$ref", "anyOf", "oneOf", "allOf"]
                .iter()
                .any(|k| schema.contains_key(*k)) =>
            {
                schema.insert("type".into(), "object".into());
            }
            Some(Value::Array(types)) if types.iter().any(|t| t == "object") => {
                schema.insert("type".into(), "object".into());
            }
            _ => {}
        }
        let out = self.node(&Value::Object(schema.clone()), "", "", 1, 0);
        match out {
            Value::Object(map) if map.get("type") == Some(&Value::from("object")) => map,
            _ => {
                self.lose(
                    "",
                    format!(
                        "the root is not an object schema, which {} requires; declared as an object without properties",
                        self.dialect()
                    ),
                );
                // Nothing of the discarded declaration remains: its
                // nulls and the definitions it referenced.
                self.optional_nulls.clear();
                self.renames.clear();
                self.pending.clear();
                self.def_names.clear();
                match self.empty_object(&schema) {
                    Value::Object(map) => map,
                    _ => Map::new(),
                }
            }
        }
    }

    fn node(&mut self, schema: &Value, at: &str, out: &str, level: usize, depth: usize) -> Value {
        let map = match schema {
            Value::Object(map) => map,
            Value::Bool(true) => return self.any(at, &Map::new()),
            Value::Bool(false) => {
                self.lose(
                    at,
                    "a schema that accepts nothing is declared as a free value",
                );
                return self.any(at, &Map::new());
            }
            other => {
                self.lose(
                    at,
                    format!(
                        "{} where a schema belongs is declared as a free value",
                        json_kind(other)
                    ),
                );
                return self.any(at, &Map::new());
            }
        };
        if depth > MAX_NESTING {
            self.lose(at, "nested too deeply; declared as a free value");
            return self.any(at, map);
        }
        if let Some(reference) = map.get("$ref") {
            return self.reference(map, reference, at, out, level, depth);
        }
        if let Some(all) = map.get("allOf") {
            let merged = self.merge_all_of(map, all, at);
            return self.node(&Value::Object(merged), at, out, level, depth + 1);
        }
        if map.contains_key("anyOf") || map.contains_key("oneOf") {
            return self.union(map, at, out, level, depth);
        }
        self.typed(map, at, out, level, depth)
    }

    /// The schema a local reference points to, if it resolves.
    fn resolve(&mut self, reference: &str, at: &str) -> Option<(String, &'a Value)> {
        let Some(pointer) = reference.strip_prefix('#') else {
            self.lose(
                at,
                format!(
                    "the reference {:?} is not local and is never fetched; declared as a free value",
                    truncate_chars(reference, 60)
                ),
            );
            return None;
        };
        let pointer = pointer.to_owned();
        let root = self.root;
        match root.pointer(&pointer) {
            Some(target) => Some((pointer, target)),
            None => {
                self.lose(
                    at,
                    format!(
                        "the reference {:?} does not resolve; declared as a free value",
                        truncate_chars(reference, 60)
                    ),
                );
                None
            }
        }
    }

    fn reference(
        &mut self,
        map: &Map<String, Value>,
        reference: &Value,
        at: &str,
        out: &str,
        level: usize,
        depth: usize,
    ) -> Value {
        let mut siblings = map.clone();
        siblings.remove("$ref");
        for key in [
            "$defs",
            "definitions",
            "$schema",
            "$id",
            "$anchor",
            "$comment",
        ] {
            siblings.remove(key);
        }
        let Some(reference) = reference.as_str() else {
            self.lose(at, "a $ref that is not a string is ignored");
            return self.node(&Value::Object(siblings), at, out, level, depth + 1);
        };
        let Some((pointer, target)) = self.resolve(reference, at) else {
            return self.any(at, &siblings);
        };
        let target = target.clone();
        let constrained = siblings.keys().any(|k| !is_annotation(k));
        if self.strict && !out.is_empty() && !constrained && is_definition(&pointer) {
            let target_name = if pointer.is_empty() {
                "#".to_owned()
            } else {
                format!("#/$defs/{}", escape(&self.def_name(&pointer)))
            };
            let mut declared = Map::new();
            declared.insert("$ref".into(), target_name.into());
            return Value::Object(declared);
        }
        if self.stack.contains(&pointer)
            || self.stack.len() > MAX_REF_DEPTH
            || self.expansions >= MAX_EXPANSIONS
        {
            let kind = primary_type(&target);
            self.lose(
                at,
                format!(
                    "the recursive reference {:?} is declared as {}",
                    truncate_chars(reference, 60),
                    if kind == Some("object") {
                        "an object without properties"
                    } else {
                        "a value without structure"
                    }
                ),
            );
            return match kind {
                Some("object") => self.empty_object(&siblings),
                Some(t) if t != "array" && t != "null" => {
                    let mut loose = siblings.clone();
                    loose.retain(|k, _| is_annotation(k));
                    loose.insert("type".into(), t.into());
                    Value::Object(loose)
                }
                _ => self.any(at, &siblings),
            };
        }
        self.expansions += 1;
        self.stack.push(pointer);
        let combined = if constrained {
            let mut wrapper = Map::new();
            wrapper.insert(
                "allOf".into(),
                Value::Array(vec![target, Value::Object(siblings)]),
            );
            Value::Object(wrapper)
        } else {
            match target {
                Value::Object(mut target) => {
                    for (k, v) in siblings {
                        target.insert(k, v);
                    }
                    Value::Object(target)
                }
                other => other,
            }
        };
        let declared = self.node(&combined, at, out, level, depth + 1);
        self.stack.pop();
        declared
    }

    /// Strict mode: the `$defs` name of the definition at `pointer`,
    /// queued for declaration on first use.
    fn def_name(&mut self, pointer: &str) -> String {
        if let Some(name) = self.def_names.get(pointer) {
            return name.clone();
        }
        let raw = pointer.rsplit('/').next().map(unescape).unwrap_or_default();
        let mut base: String = raw
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        if base.is_empty() {
            base = "def".into();
        }
        let mut name = base.clone();
        let mut n = 2;
        while self.def_names.values().any(|v| *v == name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.def_names.insert(pointer.to_owned(), name.clone());
        self.pending.push((name.clone(), pointer.to_owned()));
        name
    }

    fn merge_all_of(
        &mut self,
        map: &Map<String, Value>,
        all: &Value,
        at: &str,
    ) -> Map<String, Value> {
        let mut merged = map.clone();
        merged.remove("allOf");
        let Some(branches) = all.as_array() else {
            self.lose(at, "allOf is not an array and is ignored");
            return merged;
        };
        for branch in branches {
            let branch = match branch {
                Value::Object(b) if b.contains_key("$ref") => {
                    let reference = b.get("$ref").and_then(Value::as_str).unwrap_or("");
                    match self.resolve(reference, at) {
                        Some((pointer, target))
                            if !self.stack.contains(&pointer) && target.is_object() =>
                        {
                            let mut target = target.as_object().cloned().unwrap_or_default();
                            for (k, v) in b {
                                if k != "$ref" {
                                    target.insert(k.clone(), v.clone());
                                }
                            }
                            target
                        }
                        _ => {
                            self.lose(at, "an allOf branch that is a recursive or unresolvable reference is ignored");
                            continue;
                        }
                    }
                }
                Value::Object(b) => b.clone(),
                Value::Bool(true) => continue,
                _ => {
                    self.lose(at, "an allOf branch that is not a schema object is ignored");
                    continue;
                }
            };
            for (key, value) in branch {
                self.merge_keyword(&mut merged, key, value, at);
            }
        }
        merged
    }

    fn merge_keyword(
        &mut self,
        into: &mut Map<String, Value>,
        key: String,
        value: Value,
        at: &str,
    ) {
        let Some(existing) = into.get_mut(&key) else {
            into.insert(key, value);
            return;
        };
        if *existing == value {
            return;
        }
        match key.as_str() {
            "properties" => {
                if let (Value::Object(a), Value::Object(b)) = (existing, value) {
                    for (name, schema) in b {
                        match a.get_mut(&name) {
                            Some(current) if *current != schema => {
                                let both = json!({"allOf": [current.clone(), schema]});
                                *current = both;
                            }
                            Some(_) => {}
                            None => {
                                a.insert(name, schema);
                            }
                        }
                    }
                }
            }
            "required" => {
                if let (Value::Array(a), Value::Array(b)) = (existing, value) {
                    for name in b {
                        if !a.contains(&name) {
                            a.push(name);
                        }
                    }
                }
            }
            "type" => {
                let a = type_set(existing);
                let b = type_set(&value);
                let both: Vec<Value> = a
                    .iter()
                    .filter_map(|t| {
                        if b.contains(t) {
                            Some(*t)
                        } else if (*t == "number" && b.contains(&"integer"))
                            || (*t == "integer" && b.contains(&"number"))
                        {
                            Some("integer")
                        } else {
                            None
                        }
                    })
                    .map(Value::from)
                    .collect();
                if both.is_empty() {
                    self.lose(
                        at,
                        "allOf branches allow no common type; the first branch's type is kept",
                    );
                } else {
                    *existing = if both.len() == 1 {
                        both[0].clone()
                    } else {
                        Value::Array(both)
                    };
                }
            }
            "minimum" | "exclusiveMinimum" | "minLength" | "minItems" | "minProperties" => {
                if let (Some(a), Some(b)) = (existing.as_f64(), value.as_f64())
                    && b > a
                {
                    *existing = value;
                }
            }
            "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" | "maxProperties" => {
                if let (Some(a), Some(b)) = (existing.as_f64(), value.as_f64())
                    && b < a
                {
                    *existing = value;
                }
            }
            "enum" => {
                if let (Value::Array(a), Value::Array(b)) = (&*existing, &value) {
                    let both: Vec<Value> = a.iter().filter(|v| b.contains(v)).cloned().collect();
                    *existing = Value::Array(both);
                }
            }
            k if is_annotation(k) => {}
            k => self.lose(
                at,
                format!(
                    "allOf branches set {:?} differently; the first one is kept",
                    truncate_chars(k, 40)
                ),
            ),
        }
    }

    fn union(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        out: &str,
        level: usize,
        depth: usize,
    ) -> Value {
        let mut base = map.clone();
        let any_of = base.remove("anyOf");
        let one_of = base.remove("oneOf");
        let (branches, from_one_of, keyword) = match (any_of, one_of) {
            (Some(any), Some(_)) => {
                self.lose(at, "oneOf next to anyOf is ignored");
                (any, false, "anyOf")
            }
            (Some(any), None) => (any, false, "anyOf"),
            (None, Some(one)) => (one, true, "oneOf"),
            (None, None) => return self.typed(map, at, out, level, depth),
        };
        let Some(branches) = branches.as_array().filter(|b| !b.is_empty()) else {
            self.lose(
                at,
                format!("{keyword} is not a non-empty array and is ignored"),
            );
            return self.node(&Value::Object(base), at, out, level, depth + 1);
        };
        let branches: Vec<Value> = branches.clone();
        if from_one_of && !disjoint(&branches) {
            self.lose(
                at,
                "oneOf is declared as anyOf: a value that fits several branches is refused when called",
            );
        }
        let mut annotations = Map::new();
        copy_annotations(&base, &mut annotations);
        base.retain(|k, _| !is_annotation(k));
        let (nulls, rest): (Vec<Value>, Vec<Value>) = branches.into_iter().partition(|b| {
            b.get("type") == Some(&Value::from("null"))
                && b.as_object()
                    .is_some_and(|m| m.keys().all(|k| k == "type" || is_annotation(k)))
        });
        let nullable = !nulls.is_empty();
        // The branches, each with the keywords next to the union (A and
        // (B or C) is (A and B) or (A and C)).
        let combined: Vec<Value> = rest
            .into_iter()
            .map(|branch| {
                if base.is_empty() {
                    branch
                } else {
                    json!({"allOf": [Value::Object(base.clone()), branch]})
                }
            })
            .collect();
        if out.is_empty() {
            return self.root_union(combined, &annotations, at, level, depth);
        }
        let mut nullable = nullable;
        let mut declared = if combined.is_empty() {
            // Only null.
            let mut null = Map::new();
            null.insert("type".into(), "null".into());
            return self.typed(&null, at, out, level, depth);
        } else {
            let declared: Vec<Value> = combined
                .iter()
                .enumerate()
                .map(|(i, b)| self.node(b, at, &format!("{out}/anyOf/{i}"), level, depth + 1))
                .collect();
            let mut declared = self.flatten_union(declared, out);
            if declared.len() > 1 && declared.last() == Some(&json!({"type": "null"})) {
                declared.pop();
                nullable = true;
            }
            if declared.len() == 1 {
                let mut one = match declared.remove(0) {
                    Value::Object(one) => one,
                    _ => Map::new(),
                };
                self.relocate(&format!("{out}/anyOf/0"), out);
                // A reference stands alone.
                if !one.contains_key("$ref") {
                    for (k, v) in &annotations {
                        one.entry(k.clone()).or_insert(v.clone());
                    }
                }
                one
            } else {
                let mut wrapper = Map::new();
                wrapper.insert("anyOf".into(), Value::Array(declared));
                copy_annotations(&annotations, &mut wrapper);
                wrapper
            }
        };
        if nullable {
            declared = match self.nullable(Value::Object(declared), out) {
                Value::Object(map) => map,
                _ => Map::new(),
            };
        }
        Value::Object(declared)
    }

    /// A root union: the providers want one object, so the branches' properties
    /// are merged into one (each optional unless every branch requires it).
    fn root_union(
        &mut self,
        branches: Vec<Value>,
        annotations: &Map<String, Value>,
        at: &str,
        level: usize,
        depth: usize,
    ) -> Value {
        self.lose(
            at,
            format!(
                "a root union is declared as one object with every branch's properties ({} takes no root anyOf); the branches are checked when called",
                self.dialect()
            ),
        );
        let mut properties = Map::new();
        let mut required: Option<Vec<Value>> = None;
        for branch in branches {
            let branch = match &branch {
                Value::Object(b) if b.contains_key("allOf") => {
                    self.merge_all_of(b, &b["allOf"], at)
                }
                Value::Object(b) => b.clone(),
                _ => Map::new(),
            };
            if let Some(Value::Object(props)) = branch.get("properties") {
                for (k, v) in props {
                    properties.entry(k.clone()).or_insert(v.clone());
                }
            }
            let names: Vec<Value> = match branch.get("required") {
                Some(Value::Array(names)) => names.clone(),
                _ => Vec::new(),
            };
            required = Some(match required {
                None => names,
                Some(previous) => previous.into_iter().filter(|n| names.contains(n)).collect(),
            });
        }
        let mut merged = annotations.clone();
        merged.insert("type".into(), "object".into());
        merged.insert("properties".into(), Value::Object(properties));
        merged.insert(
            "required".into(),
            Value::Array(required.unwrap_or_default()),
        );
        self.typed(&merged, at, "", level, depth + 1)
    }

    /// Declared union branches with nested plain unions spliced in and
    /// duplicates dropped (the strict nulls they hold move along).
    fn flatten_union(&mut self, declared: Vec<Value>, out: &str) -> Vec<Value> {
        let base = format!("{out}/anyOf/");
        let taken: Vec<(String, Vec<String>)> = {
            let keys: Vec<String> = self
                .optional_nulls
                .keys()
                .filter(|k| k.starts_with(&base))
                .cloned()
                .collect();
            keys.into_iter()
                .filter_map(|k| self.optional_nulls.remove(&k).map(|v| (k, v)))
                .collect()
        };
        let mut result: Vec<Value> = Vec::new();
        let mut moves: Vec<(String, String)> = Vec::new();
        // Null goes last, as `nullable` puts it.
        let null_type = json!({"type": "null"});
        let mut has_null = false;
        for (i, branch) in declared.into_iter().enumerate() {
            let nested = match &branch {
                Value::Object(map) if map.len() == 1 => {
                    map.get("anyOf").and_then(Value::as_array).cloned()
                }
                _ => None,
            };
            let parts: Vec<(String, Value)> = match nested {
                Some(inner) => inner
                    .into_iter()
                    .enumerate()
                    .map(|(j, b)| (format!("{base}{i}/anyOf/{j}"), b))
                    .collect(),
                None => vec![(format!("{base}{i}"), branch)],
            };
            for (from, part) in parts {
                if is_null_branch(&part) {
                    has_null = true;
                } else if !result.contains(&part) {
                    moves.push((from, format!("{base}{}", result.len())));
                    result.push(part);
                }
            }
        }
        for (key, names) in taken {
            let target = moves
                .iter()
                .find(|(from, _)| key == *from || key.starts_with(&format!("{from}/")));
            if let Some((from, to)) = target {
                self.optional_nulls
                    .insert(format!("{to}{}", &key[from.len()..]), names);
            }
        }
        if has_null {
            result.push(null_type);
        }
        result
    }

    /// Moves the strict nulls recorded under `from` to `to`.
    fn relocate(&mut self, from: &str, to: &str) {
        let moved: Vec<String> = self
            .optional_nulls
            .keys()
            .filter(|k| *k == from || k.starts_with(&format!("{from}/")))
            .cloned()
            .collect();
        for key in moved {
            if let Some(names) = self.optional_nulls.remove(&key) {
                self.optional_nulls
                    .insert(format!("{to}{}", &key[from.len()..]), names);
            }
        }
    }

    /// `schema` made to accept null too.
    fn nullable(&mut self, schema: Value, out: &str) -> Value {
        let Value::Object(mut map) = schema else {
            return schema;
        };
        if !self.strict {
            // A free value takes null already.
            if map.contains_key("type") || map.contains_key("anyOf") {
                map.insert("nullable".into(), Value::Bool(true));
            }
            return Value::Object(map);
        }
        let null_type = json!({"type": "null"});
        if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
            if !branches.contains(&null_type) {
                branches.push(null_type);
            }
            return Value::Object(map);
        }
        let plain = !map.contains_key("$ref") && !map.contains_key("const");
        match map.get("type").cloned() {
            Some(Value::String(t)) if plain => {
                if t != "null" {
                    map.insert("type".into(), json!([t, "null"]));
                    if let Some(Value::Array(values)) = map.get_mut("enum")
                        && !values.contains(&Value::Null)
                    {
                        values.push(Value::Null);
                    }
                }
                Value::Object(map)
            }
            _ => {
                // Wrapped: whatever the object held moves one level down.
                self.relocate(out, &format!("{out}/anyOf/0"));
                let mut wrapper = Map::new();
                copy_annotations(&map, &mut wrapper);
                map.retain(|k, _| !is_annotation(k));
                wrapper.insert("anyOf".into(), json!([Value::Object(map), null_type]));
                Value::Object(wrapper)
            }
        }
    }

    fn types_of(&mut self, map: &Map<String, Value>, at: &str) -> Vec<&'static str> {
        let mut types: Vec<&'static str> = match map.get("type") {
            Some(Value::String(t)) => match TYPES.iter().find(|k| *k == t) {
                Some(t) => vec![t],
                None => {
                    self.lose(
                        at,
                        format!(
                            "the unknown type {:?} is declared as a free value",
                            truncate_chars(t, 40)
                        ),
                    );
                    Vec::new()
                }
            },
            Some(Value::Array(list)) => {
                let known: Vec<&'static str> = list
                    .iter()
                    .filter_map(|t| TYPES.iter().find(|k| Some(**k) == t.as_str()).copied())
                    .collect();
                if known.len() != list.len() {
                    self.lose(at, "unknown entries of a type list are ignored");
                }
                known
            }
            Some(other) => {
                self.lose(
                    at,
                    format!("a type that is {} is ignored", json_kind(other)),
                );
                Vec::new()
            }
            None => {
                let mut inferred = Vec::new();
                let has = |keys: &[&str]| keys.iter().any(|k| map.contains_key(*k));
                if has(&[
                    "properties",
                    "additionalProperties",
                    "required",
                    "patternProperties",
                ]) {
                    inferred.push("object");
                }
                if has(&["items", "prefixItems", "minItems", "maxItems"]) {
                    inferred.push("array");
                }
                for key in ["enum", "const"] {
                    let values: Vec<&Value> = match map.get(key) {
                        Some(Value::Array(values)) if key == "enum" => values.iter().collect(),
                        Some(value) if key == "const" => vec![value],
                        _ => Vec::new(),
                    };
                    for value in values {
                        let t = value_type(value);
                        if !inferred.contains(&t) {
                            inferred.push(t);
                        }
                    }
                }
                // No value fits an empty enum; a dialect cannot say so, and
                // the free value declared instead takes more than the server.
                if matches!(map.get("enum"), Some(Value::Array(values)) if values.is_empty()) {
                    self.lose(
                        at,
                        "an empty enum, which no value fits, is declared as a free value",
                    );
                }
                if inferred.is_empty() {
                    if has(&["minLength", "maxLength", "pattern"]) {
                        inferred.push("string");
                    } else if has(&[
                        "minimum",
                        "maximum",
                        "multipleOf",
                        "exclusiveMinimum",
                        "exclusiveMaximum",
                    ]) {
                        inferred.push("number");
                    }
                }
                inferred
            }
        };
        if types.contains(&"number") {
            types.retain(|t| *t != "integer");
        }
        let mut unique = Vec::new();
        for t in types {
            if !unique.contains(&t) {
                unique.push(t);
            }
        }
        unique
    }

    fn typed(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        out: &str,
        level: usize,
        depth: usize,
    ) -> Value {
        for key in map.keys() {
            if ASSERTIONS.contains(&key.as_str()) && !self.supports(key) {
                self.lose(
                    at,
                    format!(
                        "{key} is not declared ({} does not take it)",
                        self.dialect()
                    ),
                );
            }
        }
        let types = self.types_of(map, at);
        let is_root = out.is_empty();
        let nullable = types.contains(&"null") && !is_root;
        let mut concrete: Vec<&'static str> =
            types.iter().copied().filter(|t| *t != "null").collect();
        if is_root && concrete.contains(&"object") {
            concrete = vec!["object"];
        }
        if concrete.is_empty() {
            if types.contains(&"null") {
                if self.strict {
                    let mut null = Map::new();
                    null.insert("type".into(), "null".into());
                    copy_annotations(map, &mut null);
                    return Value::Object(null);
                }
                self.lose(
                    at,
                    "a value that can only be null is declared as a free value",
                );
            }
            return self.any(at, map);
        }
        let declared = if concrete.len() == 1 {
            let mut one = self.single(map, concrete[0], at, out, level, depth);
            copy_annotations(map, &mut one);
            Value::Object(one)
        } else {
            let branches: Vec<Value> = concrete
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    Value::Object(self.single(
                        map,
                        t,
                        at,
                        &format!("{out}/anyOf/{i}"),
                        level,
                        depth,
                    ))
                })
                .collect();
            let mut wrapper = Map::new();
            wrapper.insert("anyOf".into(), Value::Array(branches));
            copy_annotations(map, &mut wrapper);
            Value::Object(wrapper)
        };
        if nullable {
            self.nullable(declared, out)
        } else {
            declared
        }
    }

    fn supports(&self, keyword: &str) -> bool {
        let strict = [
            "pattern",
            "format",
            "multipleOf",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "minItems",
            "maxItems",
            "patternProperties",
        ];
        let gemini = [
            "minLength",
            "maxLength",
            "pattern",
            "format",
            "minimum",
            "maximum",
            "minItems",
            "maxItems",
            "minProperties",
            "maxProperties",
            "patternProperties",
        ];
        // patternProperties is reported where objects are declared.
        if self.strict {
            strict.contains(&keyword)
        } else {
            gemini.contains(&keyword)
        }
    }

    fn single(
        &mut self,
        map: &Map<String, Value>,
        t: &'static str,
        at: &str,
        out: &str,
        level: usize,
        depth: usize,
    ) -> Map<String, Value> {
        let mut o = Map::new();
        o.insert("type".into(), t.into());
        match t {
            "object" => self.object(map, at, out, level, depth, &mut o),
            "array" => self.array(map, at, out, level, depth, &mut o),
            "string" => {
                if let Some(Value::String(p)) = map.get("pattern") {
                    o.insert("pattern".into(), p.clone().into());
                }
                if !self.strict {
                    for key in ["minLength", "maxLength"] {
                        self.copy_count(map, key, at, &mut o);
                    }
                }
                self.format(map, t, at, &mut o);
            }
            "number" | "integer" => {
                let keys: &[&str] = if self.strict {
                    &[
                        "minimum",
                        "maximum",
                        "exclusiveMinimum",
                        "exclusiveMaximum",
                        "multipleOf",
                    ]
                } else {
                    &["minimum", "maximum"]
                };
                for key in keys {
                    match map.get(*key) {
                        Some(Value::Number(n)) => {
                            o.insert((*key).into(), Value::Number(n.clone()));
                        }
                        Some(_) => self.lose(at, format!("{key} is not a number and is ignored")),
                        None => {}
                    }
                }
                self.format(map, t, at, &mut o);
            }
            _ => {}
        }
        self.values(map, t, at, &mut o);
        o
    }

    fn copy_count(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        at: &str,
        o: &mut Map<String, Value>,
    ) {
        match map.get(key) {
            Some(Value::Number(n)) if n.as_u64().is_some() => {
                o.insert(key.into(), Value::Number(n.clone()));
            }
            Some(_) => self.lose(at, format!("{key} is not a count and is ignored")),
            None => {}
        }
    }

    fn format(&mut self, map: &Map<String, Value>, t: &str, at: &str, o: &mut Map<String, Value>) {
        let Some(format) = map.get("format") else {
            return;
        };
        let Some(format) = format.as_str() else {
            self.lose(at, "a format that is not a string is ignored");
            return;
        };
        let allowed: &[&str] = match (self.strict, t) {
            (true, "string") => STRICT_FORMATS,
            (true, _) => &[],
            (false, "string") => &["enum", "date-time"],
            (false, "number") => &["float", "double"],
            (false, "integer") => &["int32", "int64"],
            _ => &[],
        };
        if allowed.contains(&format) {
            o.insert("format".into(), format.into());
        } else if self.strict && t != "string" {
            // Formats of numbers are annotations the strict subset omits.
        } else {
            self.lose(
                at,
                format!(
                    "the format {:?} is not declared ({} does not take it)",
                    truncate_chars(format, 40),
                    self.dialect()
                ),
            );
        }
    }

    /// `enum` and `const` for one type.
    fn values(&mut self, map: &Map<String, Value>, t: &str, at: &str, o: &mut Map<String, Value>) {
        let fits = |v: &Value| {
            let vt = value_type(v);
            vt == t || (t == "number" && vt == "integer")
        };
        if let Some(values) = map.get("enum") {
            let Some(values) = values.as_array() else {
                self.lose(at, "an enum that is not an array is ignored");
                return;
            };
            let kept: Vec<Value> = values.iter().filter(|v| fits(v)).cloned().collect();
            if kept.is_empty() {
                self.lose(at, format!("an enum with no {t} value is ignored"));
            } else if self.strict || t == "string" {
                o.insert("enum".into(), Value::Array(kept));
            } else {
                self.lose(
                    at,
                    format!(
                        "an enum of {t} values is not declared (Gemini takes enums of strings only)"
                    ),
                );
            }
        }
        if let Some(value) = map.get("const") {
            if !fits(value) {
                self.lose(
                    at,
                    format!("a const that is not {t} is ignored for {t} values"),
                );
                return;
            }
            if self.strict {
                o.insert("const".into(), value.clone());
            } else if t == "string" {
                o.insert("enum".into(), Value::Array(vec![value.clone()]));
            } else {
                self.lose(at, format!("a const {t} is not declared (Gemini takes constants of strings only, as enum)"));
            }
        }
    }

    fn object(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        out: &str,
        level: usize,
        depth: usize,
        o: &mut Map<String, Value>,
    ) {
        let empty = Map::new();
        let properties = match map.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(other) => {
                self.lose(
                    at,
                    format!("properties that are {} are ignored", json_kind(other)),
                );
                &empty
            }
        };
        let required: Vec<String> = match map.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => {
                if names.iter().any(|n| !n.is_string()) {
                    self.lose(at, "required entries that are not strings are ignored");
                }
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            }
            Some(other) => {
                self.lose(
                    at,
                    format!("a required that is {} is ignored", json_kind(other)),
                );
                Vec::new()
            }
        };
        let mut properties: Vec<(&String, &Value)> = properties.iter().collect();
        self.order
            .sort(&format!("{at}/properties"), &mut properties);
        if self.strict && level > STRICT_MAX_LEVELS && !properties.is_empty() {
            self.lose(at, "an object nested deeper than 10 levels is declared without properties (strict mode's limit)");
            properties.clear();
        }
        let mut declared = Map::new();
        let mut declared_order = Vec::new();
        let mut names = Vec::new();
        let mut optional = Vec::new();
        for (name, schema) in properties {
            if self.strict && self.properties >= STRICT_MAX_PROPERTIES {
                self.lose(
                    at,
                    "properties beyond 5,000 in all are not declared (strict mode's limit)",
                );
                break;
            }
            self.properties += 1;
            let child_at = format!("{at}/properties/{}", escape(name));
            let original = name;
            let renamed;
            let name = if !self.strict && out.is_empty() && !is_parameter_name(name) {
                renamed = parameter_name(name, |n| {
                    properties_named(map, n) || declared.contains_key(n)
                });
                self.renames.push((renamed.clone(), original.clone()));
                self.lose(
                    &child_at,
                    format!(
                        "declared as {renamed:?} (Gemini's parameter names); a call's {renamed:?} is sent under the server's name"
                    ),
                );
                &renamed
            } else {
                original
            };
            let child_out = format!("{out}/properties/{}", escape(name));
            let mut child = self.node(schema, &child_at, &child_out, level + 1, depth + 1);
            let is_required = required.contains(original);
            if self.strict && !is_required {
                if !accepts_null(schema) {
                    optional.push(name.clone());
                }
                if !declared_accepts_null(&child) {
                    child = self.nullable(child, &child_out);
                }
            }
            if self.strict || is_required {
                names.push(Value::from(name.clone()));
            }
            declared_order.push(name.clone());
            declared.insert(name.clone(), child);
        }
        self.written
            .push((format!("{out}/properties"), declared_order));
        for name in &required {
            let renamed = self.renames.iter().any(|(_, o)| o == name) && out.is_empty();
            if !(declared.contains_key(name)
                || renamed
                || (self.strict && level > STRICT_MAX_LEVELS))
            {
                self.lose(
                    at,
                    format!(
                        "the required property {:?} has no schema and is not declared",
                        truncate_chars(name, 40)
                    ),
                );
            }
        }
        let free = match map.get("additionalProperties") {
            Some(Value::Bool(false)) => {
                if !self.strict {
                    self.lose(at, "additionalProperties: false is not declared (Gemini does not take it); extra keys are refused when called");
                }
                false
            }
            Some(Value::Bool(true)) => self.strict,
            Some(Value::Object(_)) => true,
            Some(_) => {
                self.lose(
                    at,
                    "an additionalProperties that is not a schema is ignored",
                );
                false
            }
            None => {
                self.strict
                    && declared.is_empty()
                    && !out.is_empty()
                    && map.get("properties").is_none()
            }
        };
        if free {
            self.lose(
                at,
                if self.strict {
                    "keys beyond the listed properties cannot be declared in strict mode; the object is closed"
                } else {
                    "the schema of keys beyond the listed properties is not declared (Gemini does not take it)"
                },
            );
        }
        if map.contains_key("patternProperties") {
            self.lose(
                at,
                format!(
                    "patternProperties is not declared ({} does not take it)",
                    self.dialect()
                ),
            );
        }
        if self.strict {
            o.insert("properties".into(), Value::Object(declared));
            o.insert("required".into(), Value::Array(names));
            o.insert("additionalProperties".into(), Value::Bool(false));
            if !optional.is_empty() {
                self.optional_nulls.insert(out.to_owned(), optional);
            }
        } else {
            if !declared.is_empty() {
                o.insert("properties".into(), Value::Object(declared));
            }
            if !names.is_empty() {
                o.insert("required".into(), Value::Array(names));
            }
            for key in ["minProperties", "maxProperties"] {
                self.copy_count(map, key, at, o);
            }
        }
    }

    fn array(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        out: &str,
        level: usize,
        depth: usize,
        o: &mut Map<String, Value>,
    ) {
        let mut tuple: Vec<Value> = Vec::new();
        let mut rest: Option<&Value> = None;
        match map.get("prefixItems") {
            Some(Value::Array(p)) => tuple.extend(p.iter().cloned()),
            Some(_) => self.lose(at, "prefixItems that are not an array are ignored"),
            None => {}
        }
        match map.get("items") {
            Some(Value::Array(p)) => tuple.extend(p.iter().cloned()),
            Some(items) => rest = Some(items),
            None => {}
        }
        let child_at = format!("{at}/items");
        let child_out = format!("{out}/items");
        let items = if tuple.is_empty() {
            match rest {
                Some(items) => self.node(items, &child_at, &child_out, level, depth + 1),
                None => {
                    if self.strict {
                        self.any(&child_at, &Map::new())
                    } else {
                        Value::Object(Map::new())
                    }
                }
            }
        } else {
            self.lose(
                at,
                format!(
                    "a tuple's positions are declared as one item schema ({} takes no tuples)",
                    self.dialect()
                ),
            );
            let mut branches = tuple;
            if let Some(rest) = rest
                && rest != &Value::Bool(false)
            {
                branches.push(rest.clone());
            }
            let union = if branches.len() == 1 {
                branches.remove(0)
            } else {
                json!({"anyOf": branches})
            };
            self.node(&union, &child_at, &child_out, level, depth + 1)
        };
        o.insert("items".into(), items);
        for key in ["minItems", "maxItems"] {
            self.copy_count(map, key, at, o);
        }
    }
}

/// Whether `name` is a Gemini parameter name: "must start with a letter
/// or an underscore and must only contain chars a-z, A-Z, 0-9, or
/// underscores with a maximum length of 64".
fn is_parameter_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 64
}

/// A Gemini parameter name for `name`, not one `taken` says is in use.
fn parameter_name(name: &str, taken: impl Fn(&str) -> bool) -> String {
    let mut base: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(60)
        .collect();
    if !base.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        base.insert(0, '_');
        base.truncate(60);
    }
    let mut candidate = base.clone();
    let mut n = 2;
    while taken(&candidate) {
        candidate = format!("{base}_{n}");
        n += 1;
    }
    candidate
}

/// Whether the server's object schema has a property `name`.
fn properties_named(map: &Map<String, Value>, name: &str) -> bool {
    map.get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key(name))
}

/// Whether a declared branch takes null only.
fn is_null_branch(branch: &Value) -> bool {
    branch.get("type") == Some(&Value::from("null"))
        && branch.as_object().is_some_and(|m| {
            m.keys()
                .all(|k| k == "type" || k == "title" || k == "description")
        })
}

/// Whether `pointer` names a definition strict mode keeps under `$defs`
/// (or is the root).
fn is_definition(pointer: &str) -> bool {
    if pointer.is_empty() {
        return true;
    }
    for prefix in ["/$defs/", "/definitions/"] {
        if let Some(name) = pointer.strip_prefix(prefix) {
            return !name.is_empty() && !name.contains('/');
        }
    }
    false
}

fn is_annotation(key: &str) -> bool {
    matches!(
        key,
        "description"
            | "title"
            | "default"
            | "examples"
            | "example"
            | "$comment"
            | "deprecated"
            | "readOnly"
            | "writeOnly"
            | "$schema"
            | "$id"
            | "$anchor"
            | "$defs"
            | "definitions"
            | "contentEncoding"
            | "contentMediaType"
    ) || !is_keyword(key)
}

/// Keywords of JSON Schema the transform reads; other keys are
/// annotations (OpenAPI's `nullable` among them: JSON Schema validation,
/// which is what calls go through, ignores it).
fn is_keyword(key: &str) -> bool {
    ASSERTIONS.contains(&key)
        || matches!(
            key,
            "type"
                | "properties"
                | "required"
                | "additionalProperties"
                | "items"
                | "prefixItems"
                | "enum"
                | "const"
                | "anyOf"
                | "oneOf"
                | "allOf"
                | "$ref"
        )
}

fn copy_annotations(from: &Map<String, Value>, to: &mut Map<String, Value>) {
    for key in ["title", "description"] {
        if let Some(Value::String(text)) = from.get(key) {
            to.insert(key.into(), text.clone().into());
        }
    }
}

fn value_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_set(value: &Value) -> Vec<&'static str> {
    match value {
        Value::String(t) => TYPES.iter().filter(|k| *k == t).copied().collect(),
        Value::Array(list) => TYPES
            .iter()
            .filter(|k| list.iter().any(|t| t == **k))
            .copied()
            .collect(),
        _ => Vec::new(),
    }
}

/// The type a schema is mostly about, for a loose stand-in.
fn primary_type(schema: &Value) -> Option<&'static str> {
    let map = schema.as_object()?;
    let types = map.get("type").map(type_set).unwrap_or_default();
    let concrete: Vec<&'static str> = types.into_iter().filter(|t| *t != "null").collect();
    match concrete.as_slice() {
        [one] => Some(one),
        [] if map.contains_key("properties") => Some("object"),
        _ => None,
    }
}

/// Whether the server's schema lets a property be null (then a `null`
/// is a value, not an absence).
fn accepts_null(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else {
        return schema == &Value::Bool(true);
    };
    if map.get("const") == Some(&Value::Null) {
        return true;
    }
    if let Some(Value::Array(values)) = map.get("enum")
        && values.contains(&Value::Null)
    {
        return true;
    }
    match map.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        None => {
            let branches = ["anyOf", "oneOf"]
                .iter()
                .filter_map(|k| map.get(*k))
                .filter_map(Value::as_array)
                .flatten();
            let mut any = false;
            for branch in branches {
                any = true;
                if accepts_null(branch) {
                    return true;
                }
            }
            !any && !map.contains_key("$ref") && !map.keys().any(|k| is_keyword(k))
        }
        _ => false,
    }
}

/// Whether a declared (strict) schema already takes null.
fn declared_accepts_null(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    let null = Value::from("null");
    match map.get("type") {
        Some(Value::String(t)) if t == "null" => true,
        Some(Value::Array(ts)) => ts.contains(&null),
        _ => map
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|b| b.iter().any(declared_accepts_null)),
    }
}

/// Whether one value can fit at most one of `branches`: they are disjoint
/// by type, or all constants or enums without a shared value.
fn disjoint(branches: &[Value]) -> bool {
    let types: Vec<Vec<&'static str>> = branches
        .iter()
        .map(|b| b.get("type").map(type_set).unwrap_or_default())
        .collect();
    if types.iter().all(|t| !t.is_empty()) {
        let overlap = |a: &[&str], b: &[&str]| {
            a.iter().any(|x| {
                b.iter().any(|y| {
                    x == y || matches!((*x, *y), ("number", "integer") | ("integer", "number"))
                })
            })
        };
        let mut pairwise = true;
        for i in 0..types.len() {
            for j in i + 1..types.len() {
                if overlap(&types[i], &types[j]) {
                    pairwise = false;
                }
            }
        }
        if pairwise {
            return true;
        }
    }
    let values: Option<Vec<Vec<&Value>>> = branches
        .iter()
        .map(|b| {
            let b = b.as_object()?;
            if let Some(c) = b.get("const") {
                Some(vec![c])
            } else {
                b.get("enum")
                    .and_then(Value::as_array)
                    .map(|e| e.iter().collect())
            }
        })
        .collect();
    let Some(values) = values else {
        return false;
    };
    let mut all = HashSet::new();
    let count: usize = values.iter().map(Vec::len).sum();
    for v in values.iter().flatten() {
        all.insert(v.to_string());
    }
    all.len() == count
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

#[cfg(test)]
pub(crate) mod tests;

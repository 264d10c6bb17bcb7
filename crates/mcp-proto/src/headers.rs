//! The request headers of the 2026-07-28 Streamable HTTP transport: the standard `Mcp-Method` and `Mcp-Name` headers, the `Mcp-Param-{Name}` headers a tool's `x-mcp-header` annotations ask for, and the Base64 sentinel encoding of their values.
//!
//! Everything here is pure: it reads method names, JSON params and tool
//! schemas and returns header names and values; the transport sets them.
//! Nothing panics on any input (tool schemas and params come from peers).
//!
//! - [`encode_value`] / [`decode_value`]: the value encoding every `Mcp-Name`
//!   and `Mcp-Param-{Name}` value goes through.
//! - [`name_value`]: the `Mcp-Name` value of a request ([`request_name`]
//!   the name itself, [`call_arguments`] a call's arguments: each read
//!   without decoding the rest of the params).
//! - [`tool_param_headers`]: checks a tool's `inputSchema` annotations once
//!   (a tool whose annotations are invalid must be left out of `tools/list`);
//!   [`ToolParamHeaders::values`] then mirrors each call's arguments.
//!
//! A server that finds a header missing or disagreeing with the body answers
//! `400 Bad Request` with the JSON-RPC error
//! [`HEADER_MISMATCH`](crate::jsonrpc::error_codes::HEADER_MISMATCH) (-32020);
//! the client should then list the tools again and retry.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use base64::Engine as _;
use base64::alphabet;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use serde::Deserialize;
use serde_json::Value;

use crate::jsonrpc::RawJson;
use crate::methods;
use crate::types::JsonObject;

/// `MCP-Protocol-Version`: the negotiated protocol version, on every POST
/// (MCP 2026-07-28 Transports §Streamable HTTP, Protocol Version Header).
///
/// Header names compare case-insensitively (§Case Sensitivity); these
/// constants use the spec's spelling.
pub const MCP_PROTOCOL_VERSION: &str = "MCP-Protocol-Version";

/// `Mcp-Method`: the request's `method`, on every request
/// (MCP 2026-07-28 Transports §Streamable HTTP, Standard Request Headers).
pub const MCP_METHOD: &str = "Mcp-Method";

/// `Mcp-Name`: `params.name` or `params.uri` of `tools/call`, `prompts/get`
/// and `resources/read`, encoded with [`encode_value`]; see [`name_value`]
/// (MCP 2026-07-28 Transports §Streamable HTTP, Standard Request Headers).
pub const MCP_NAME: &str = "Mcp-Name";

/// `Mcp-Param-`: the prefix of the header an `x-mcp-header: "{Name}"`
/// annotation asks for, `Mcp-Param-{Name}`
/// (MCP 2026-07-28 Transports §Streamable HTTP, Custom Headers from Tool Parameters).
pub const MCP_PARAM_PREFIX: &str = "Mcp-Param-";

/// `=?base64?`: the opening marker of a Base64-encoded header value,
/// case-sensitive (MCP 2026-07-28 Transports §Streamable HTTP, Value Encoding).
pub const BASE64_PREFIX: &str = "=?base64?";

/// `?=`: the closing marker of a Base64-encoded header value
/// (MCP 2026-07-28 Transports §Streamable HTTP, Value Encoding).
pub const BASE64_SUFFIX: &str = "?=";

/// The schema keyword that asks for a parameter header
/// (MCP 2026-07-28 Transports §Streamable HTTP, Schema Extension).
pub const X_MCP_HEADER: &str = "x-mcp-header";

// ---------------------------------------------------------------------------
// Value encoding

/// Encodes a `Mcp-Name` or `Mcp-Param-{Name}` header value
/// (MCP 2026-07-28 Transports §Streamable HTTP, Value Encoding).
///
/// A value goes out as is (borrowed) when it is safe as a plain header
/// value: every character is printable ASCII (`0x20`-`0x7E`: visible ASCII,
/// and spaces, which RFC 9110 allows inside a field value), it neither starts
/// nor ends with a space, and it does not look like the sentinel form (start
/// with `=?base64?` and end with `?=`). Anything else (non-ASCII, control
/// characters including tab, CR and LF, leading or trailing whitespace, a
/// sentinel look-alike) goes out as `=?base64?{B}?=`, where `{B}` is the
/// standard Base64 alphabet (RFC 4648 §4, `+` and `/`) with `=` padding over
/// the value's UTF-8 bytes. The result is always a valid HTTP field value.
///
/// The empty string is sent as is: RFC 9110 allows an empty field value.
pub fn encode_value(value: &str) -> Cow<'_, str> {
    if is_plain(value) {
        return Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(
        BASE64_PREFIX.len() + value.len().div_ceil(3) * 4 + BASE64_SUFFIX.len(),
    );
    out.push_str(BASE64_PREFIX);
    STANDARD.encode_string(value.as_bytes(), &mut out);
    out.push_str(BASE64_SUFFIX);
    Cow::Owned(out)
}

/// Decodes a `Mcp-Name` or `Mcp-Param-{Name}` header value, the inverse of
/// [`encode_value`] (MCP 2026-07-28 Transports §Streamable HTTP, Value
/// Encoding; servers decode before comparing with the body, §Server
/// Validation).
///
/// A value that starts with `=?base64?` and ends with `?=` is Base64 (standard
/// alphabet; padding optional) of UTF-8 text and comes back owned. Any other
/// value comes back borrowed, provided it holds only characters RFC 9110
/// allows in a field value (visible ASCII, space, tab); leading and trailing
/// whitespace is kept (HTTP parsers normally strip it before this).
pub fn decode_value(value: &str) -> Result<Cow<'_, str>, HeaderValueError> {
    if looks_like_sentinel(value) {
        let payload = value
            .get(BASE64_PREFIX.len()..value.len().saturating_sub(BASE64_SUFFIX.len()))
            .filter(|_| value.len() >= BASE64_PREFIX.len() + BASE64_SUFFIX.len())
            .ok_or(HeaderValueError::InvalidBase64)?;
        let bytes = LENIENT
            .decode(payload)
            .map_err(|_| HeaderValueError::InvalidBase64)?;
        return String::from_utf8(bytes)
            .map(Cow::Owned)
            .map_err(|_| HeaderValueError::NotUtf8);
    }
    match value
        .bytes()
        .position(|b| !(b == b'\t' || (0x20..=0x7e).contains(&b)))
    {
        Some(position) => Err(HeaderValueError::InvalidCharacter { position }),
        None => Ok(Cow::Borrowed(value)),
    }
}

/// Why [`decode_value`] refused a header value
/// (MCP 2026-07-28 Transports §Streamable HTTP, Value Encoding and Server Validation).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderValueError {
    /// A plain value holds a byte RFC 9110 does not allow in a field value
    /// (a control character other than tab, DEL, or non-ASCII).
    #[error(
        "the header value has a character not allowed in an HTTP field value at byte {position}"
    )]
    InvalidCharacter {
        /// The byte offset of the first such character.
        position: usize,
    },
    /// The value has the `=?base64?...?=` form but what is inside is not Base64.
    #[error("the header value is marked as Base64 but is not valid Base64")]
    InvalidBase64,
    /// The Base64 inside `=?base64?...?=` decodes to bytes that are not UTF-8.
    #[error("the header value's Base64 does not decode to UTF-8 text")]
    NotUtf8,
}

/// Standard alphabet, padding optional: what [`decode_value`] accepts.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

fn looks_like_sentinel(value: &str) -> bool {
    value.starts_with(BASE64_PREFIX) && value.ends_with(BASE64_SUFFIX)
}

fn is_plain(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.iter().all(|b| (0x20..=0x7e).contains(b))
        && bytes.first() != Some(&b' ')
        && bytes.last() != Some(&b' ')
        && !looks_like_sentinel(value)
}

// ---------------------------------------------------------------------------
// Mcp-Name

/// The `Mcp-Name` header value of a request, already encoded with
/// [`encode_value`]: `params.name` for `tools/call` and `prompts/get`,
/// `params.uri` for `resources/read`, and `None` for every other method (MCP
/// 2026-07-28 Transports §Streamable HTTP, Standard Request Headers).
///
/// `params` is the raw JSON a [`Request`](crate::jsonrpc::Request) carries;
/// see [`request_name`] for how it is read. `None` too when params are
/// missing, not an object, or lack the field as a string.
pub fn name_value(method: &str, params: Option<&RawJson>) -> Option<String> {
    request_name(method, params).map(|name| encode_value(&name).into_owned())
}

/// The name `Mcp-Name` carries, not yet encoded: `params.name` for
/// `tools/call` and `prompts/get`, `params.uri` for `resources/read`
/// (MCP 2026-07-28 Transports §Streamable HTTP, Standard Request Headers);
/// for `tools/call` it is also the tool whose `Mcp-Param-*` headers apply.
///
/// Only the one field is decoded, borrowed from the text unless it has
/// escapes. The params' other members (the stateless era's `_meta`, the
/// arguments) are stepped over by the structural scanner without being
/// decoded; params the scanner cannot step through as they are (escaped
/// keys) are read by serde instead. A field that appears twice, like one
/// that is missing or not a string, gives `None`.
pub fn request_name<'a>(method: &str, params: Option<&'a RawJson>) -> Option<Cow<'a, str>> {
    let params = params?.get();
    let field = match method {
        methods::TOOLS_CALL | methods::PROMPTS_GET => "name",
        methods::RESOURCES_READ => "uri",
        _ => return None,
    };
    match member_text(params, field) {
        Some(Some(value)) => string_text(value),
        Some(None) => None,
        None if field == "uri" => serde_json::from_str::<UriField<'_>>(params)
            .ok()?
            .uri
            .map(|u| u.0),
        None => serde_json::from_str::<NameField<'_>>(params)
            .ok()?
            .name
            .map(|n| n.0),
    }
}

/// A `tools/call`'s `arguments` object, decoded alone (the rest of the
/// params is stepped over as [`request_name`] does): what
/// [`ToolParamHeaders::values`] mirrors. `None` when the params have no
/// arguments or they are not an object.
pub fn call_arguments(params: &RawJson) -> Option<JsonObject> {
    #[derive(Deserialize)]
    struct Arguments {
        arguments: Option<JsonObject>,
    }
    let params = params.get();
    match member_text(params, "arguments") {
        Some(Some(value)) => serde_json::from_str(value).ok(),
        Some(None) => None,
        None => serde_json::from_str::<Arguments>(params).ok()?.arguments,
    }
}

/// The text of the value of `params`' one member named `field`:
/// `Some(None)` when there is no such member, `None` when the scanner
/// cannot tell (then serde decides) or the member is repeated.
fn member_text<'a>(params: &'a str, field: &str) -> Option<Option<&'a str>> {
    let bytes = params.as_bytes();
    let start = crate::scan::skip_space(bytes, 0);
    let range = crate::scan::sole_member(bytes, start, field.as_bytes())?;
    match range {
        Some((start, end)) => params.get(start..end).map(Some),
        None => Some(None),
    }
}

/// A JSON string's contents, borrowed when it has no escapes; `None` for
/// any other value.
fn string_text(value: &str) -> Option<Cow<'_, str>> {
    match crate::jsonrpc::plain_string(value) {
        Some(plain) => Some(Cow::Borrowed(plain)),
        None => serde_json::from_str::<String>(value).ok().map(Cow::Owned),
    }
}

#[derive(Deserialize)]
struct NameField<'a> {
    #[serde(borrow, default)]
    name: Option<MaybeBorrowed<'a>>,
}

#[derive(Deserialize)]
struct UriField<'a> {
    #[serde(borrow, default)]
    uri: Option<MaybeBorrowed<'a>>,
}

/// A JSON string borrowed from the input when it has no escapes.
struct MaybeBorrowed<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for MaybeBorrowed<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visitor<'a> {
            type Value = MaybeBorrowed<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(MaybeBorrowed(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MaybeBorrowed(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(MaybeBorrowed(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(Visitor(std::marker::PhantomData))
    }
}

// ---------------------------------------------------------------------------
// x-mcp-header

/// The `Mcp-Param-{Name}` headers a tool's `inputSchema` asks for, checked by
/// [`tool_param_headers`], ordered by the property paths they read (the same
/// order whatever map type the schema was decoded into)
/// (MCP 2026-07-28 Transports §Streamable HTTP, Custom Headers from Tool Parameters).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolParamHeaders {
    entries: Vec<ParamHeader>,
}

/// One `x-mcp-header` annotation: the header it names and the property path
/// it reads (MCP 2026-07-28 Transports §Streamable HTTP, Schema Extension).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamHeader {
    header_name: String,
    path: Vec<String>,
}

impl ParamHeader {
    /// The full header name, `Mcp-Param-{Name}` with `{Name}` as the schema
    /// spells it (MCP 2026-07-28 Transports §Streamable HTTP, Schema Extension).
    pub fn header_name(&self) -> &str {
        &self.header_name
    }

    /// The chain of `properties` keys from the schema root to the annotated
    /// property: one key for a top-level property (MCP 2026-07-28 Transports
    /// §Streamable HTTP, Schema Extension: header extraction).
    pub fn path(&self) -> &[String] {
        &self.path
    }

    /// The argument at [`path`](Self::path), if present.
    fn lookup<'a>(&self, arguments: &'a JsonObject) -> Option<&'a Value> {
        let (first, rest) = self.path.split_first()?;
        let mut value = arguments.get(first)?;
        for key in rest {
            value = value.as_object()?.get(key)?;
        }
        Some(value)
    }
}

impl ToolParamHeaders {
    /// Whether the tool asks for no parameter headers
    /// (MCP 2026-07-28 Transports §Streamable HTTP, Custom Headers from Tool Parameters).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many parameter headers the tool asks for
    /// (MCP 2026-07-28 Transports §Streamable HTTP, Custom Headers from Tool Parameters).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The annotations, ordered by their property paths
    /// (MCP 2026-07-28 Transports §Streamable HTTP, Schema Extension).
    pub fn iter(&self) -> impl Iterator<Item = &ParamHeader> {
        self.entries.iter()
    }

    /// The `(header name, encoded value)` pairs a `tools/call` with these
    /// `arguments` must carry (MCP 2026-07-28 Transports §Streamable HTTP,
    /// Value Encoding and Client Behavior).
    ///
    /// Each value is read at the annotation's exact property path and turned
    /// into text: a string as is, an integer in decimal (`42`, `-7`; a float
    /// with no fractional part within ±(2^53−1) counts as an integer), a
    /// boolean as `true` or `false`; then encoded with [`encode_value`]. The
    /// header is omitted when the value is missing or `null`, and also when it
    /// is of another kind (an object, an array, a fractional number), which
    /// the schema's primitive `type` does not allow anyway.
    pub fn values<'a>(
        &'a self,
        arguments: Option<&'a JsonObject>,
    ) -> impl Iterator<Item = (&'a str, String)> + 'a {
        self.entries.iter().filter_map(move |entry| {
            let text = match entry.lookup(arguments?)? {
                Value::String(s) => encode_value(s).into_owned(),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => integer_text(n)?,
                Value::Null | Value::Array(_) | Value::Object(_) => return None,
            };
            Some((entry.header_name.as_str(), text))
        })
    }
}

impl<'a> IntoIterator for &'a ToolParamHeaders {
    type Item = &'a ParamHeader;
    type IntoIter = std::slice::Iter<'a, ParamHeader>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

/// 2^53 − 1: the largest integer a double holds exactly.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

fn integer_text(n: &serde_json::Number) -> Option<String> {
    if let Some(i) = n.as_i64() {
        return Some(i.to_string());
    }
    if let Some(u) = n.as_u64() {
        return Some(u.to_string());
    }
    let f = n.as_f64()?;
    // In range, so the cast is exact.
    (f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER).then(|| (f as i64).to_string())
}

/// Why a tool's `x-mcp-header` annotations are invalid; the client must then
/// leave the tool out of `tools/list` and should log this with the tool's
/// name (MCP 2026-07-28 Transports §Streamable HTTP, Schema Extension).
///
/// `property` is the chain of `properties` keys to the annotated property,
/// joined with `.`; `location` is a JSON Pointer into the `inputSchema`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidParamHeader {
    /// The annotation's value is not a string.
    #[error("the x-mcp-header of property `{property}` is not a string")]
    NotAString {
        /// The annotated property.
        property: String,
    },
    /// The annotation is the empty string.
    #[error("the x-mcp-header of property `{property}` is empty")]
    Empty {
        /// The annotated property.
        property: String,
    },
    /// The name is not an HTTP token (RFC 9110 §5.6.2 `1*tchar`): it holds a
    /// space, a control character, a delimiter such as `:` or `/`, or non-ASCII.
    #[error(
        "the x-mcp-header {name:?} of property `{property}` is not a valid HTTP header name (only letters, digits and !#$%&'*+-.^_`|~ are allowed)"
    )]
    NotAToken {
        /// The annotated property.
        property: String,
        /// The annotation's value.
        name: String,
    },
    /// Two annotations name the same header, ignoring ASCII case.
    #[error(
        "the x-mcp-header {name:?} of property `{property}` repeats the one of property `{first}` (header names ignore case)"
    )]
    Duplicate {
        /// The property annotated second (in schema order).
        property: String,
        /// Its annotation's value.
        name: String,
        /// The property annotated first.
        first: String,
    },
    /// The annotated property's `type` is not one of `string`, `integer`,
    /// `boolean` (a type list may add `null`); `number`, `object`, `array`
    /// and a missing `type` are refused.
    #[error(
        "the x-mcp-header {name:?} is on property `{property}` of type {found}, but only string, integer and boolean properties may have one"
    )]
    NotPrimitive {
        /// The annotated property.
        property: String,
        /// The annotation's value.
        name: String,
        /// The property's `type` as found, or `no type`.
        found: String,
    },
    /// The annotation sits somewhere not reachable from the schema root
    /// through `properties` keys alone: under `items`, `prefixItems`,
    /// `oneOf`/`anyOf`/`allOf`/`not`, `if`/`then`/`else`, `$defs` (what a
    /// `$ref` reaches), `additionalProperties` and the like, or on the root.
    #[error(
        "an x-mcp-header at {location} is not on a property reachable from the schema root through `properties` alone"
    )]
    NotReachable {
        /// JSON Pointer of the schema holding the annotation.
        location: String,
    },
}

/// Checks a tool's `inputSchema` for `x-mcp-header` annotations and returns
/// the headers they ask for (MCP 2026-07-28 Transports §Streamable HTTP,
/// Custom Headers from Tool Parameters: Schema Extension; Tools
/// §x-mcp-header).
///
/// An annotation must sit on a property schema reached from the root through
/// a chain of `properties` keys only (nested object properties are allowed);
/// its value must be a non-empty HTTP token (`1*tchar`, so no control
/// characters), unique among the schema's annotations ignoring case; and the
/// property's `type` must be `string`, `integer` or `boolean` (never
/// `number`). An annotation anywhere else in the schema (under any array,
/// composition, conditional or definitions keyword) makes the whole tool
/// invalid. The first violation, in schema order, is returned.
///
/// Only the standard JSON Schema keywords that hold subschemas are searched;
/// an `x-mcp-header` key inside `default`, `const`, `enum`, `examples` or an
/// unknown keyword is data, not an annotation. `$ref` is not followed: what
/// it points to inside the schema (`$defs`, `definitions`) is searched where
/// it is. The walk uses no recursion, so no schema depth overflows the stack.
pub fn tool_param_headers(
    input_schema: &JsonObject,
) -> Result<ToolParamHeaders, InvalidParamHeader> {
    let mut walk = Walk {
        segments: Vec::new(),
        entries: Vec::new(),
        seen: HashMap::new(),
    };
    walk.run(input_schema)?;
    let mut entries = walk.entries;
    // A map's key order is serde_json's choice (sorted, or as written under
    // its `preserve_order` feature); the paths give one order for every host.
    entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Ok(ToolParamHeaders { entries })
}

/// The state of [`tool_param_headers`]'s walk. Locations are kept as a tree
/// of segments (each node names its parent), so a node costs the same at any
/// depth and paths are only spelled out for annotations and errors.
struct Walk<'a> {
    segments: Vec<Segment<'a>>,
    entries: Vec<ParamHeader>,
    /// Lower-cased name → the property that first used it.
    seen: HashMap<String, String>,
}

/// One step of a JSON Pointer: `parent` indexes `Walk::segments`.
struct Segment<'a> {
    parent: Option<usize>,
    token: Token<'a>,
}

enum Token<'a> {
    Key(&'a str),
    Index(usize),
}

/// A schema to visit: `at` is its location (`None`: the root).
struct Node<'a> {
    schema: &'a JsonObject,
    at: Option<usize>,
    /// Reached from the root through `properties` keys alone.
    reachable: bool,
}

impl<'a> Walk<'a> {
    fn run(&mut self, root: &'a JsonObject) -> Result<(), InvalidParamHeader> {
        let mut stack = vec![Node {
            schema: root,
            at: None,
            reachable: true,
        }];
        let mut children = Vec::new();
        while let Some(node) = stack.pop() {
            if let Some(annotation) = node.schema.get(X_MCP_HEADER) {
                self.annotation(&node, annotation)?;
            }
            for (keyword, value) in node.schema {
                match keyword.as_str() {
                    "properties" | "patternProperties" | "$defs" | "definitions"
                    | "dependentSchemas" | "dependencies" => {
                        let Some(map) = value.as_object() else {
                            continue;
                        };
                        let base = self.push(node.at, Token::Key(keyword));
                        let reachable = node.reachable && keyword == "properties";
                        for (key, sub) in map {
                            if let Some(schema) = sub.as_object() {
                                let at = Some(self.push(Some(base), Token::Key(key)));
                                children.push(Node {
                                    schema,
                                    at,
                                    reachable,
                                });
                            }
                        }
                    }
                    "items"
                    | "prefixItems"
                    | "additionalItems"
                    | "contains"
                    | "allOf"
                    | "anyOf"
                    | "oneOf"
                    | "not"
                    | "if"
                    | "then"
                    | "else"
                    | "additionalProperties"
                    | "propertyNames"
                    | "unevaluatedItems"
                    | "unevaluatedProperties"
                    | "contentSchema" => match value {
                        Value::Object(schema) => {
                            let at = Some(self.push(node.at, Token::Key(keyword)));
                            children.push(Node {
                                schema,
                                at,
                                reachable: false,
                            });
                        }
                        Value::Array(list) => {
                            let base = self.push(node.at, Token::Key(keyword));
                            for (i, sub) in list.iter().enumerate() {
                                if let Some(schema) = sub.as_object() {
                                    let at = Some(self.push(Some(base), Token::Index(i)));
                                    children.push(Node {
                                        schema,
                                        at,
                                        reachable: false,
                                    });
                                }
                            }
                        }
                        _ => {}
                    },
                    _ => {}
                }
            }
            // Depth first, in document order.
            stack.extend(children.drain(..).rev());
        }
        Ok(())
    }

    fn push(&mut self, parent: Option<usize>, token: Token<'a>) -> usize {
        self.segments.push(Segment { parent, token });
        self.segments.len() - 1
    }

    /// The tokens from the root to `at`.
    fn tokens(&self, mut at: Option<usize>) -> Vec<&Token<'a>> {
        let mut tokens = Vec::new();
        while let Some(segment) = at.and_then(|i| self.segments.get(i)) {
            tokens.push(&segment.token);
            at = segment.parent;
        }
        tokens.reverse();
        tokens
    }

    fn annotation(
        &mut self,
        node: &Node<'a>,
        annotation: &Value,
    ) -> Result<(), InvalidParamHeader> {
        if !node.reachable || node.at.is_none() {
            let mut location = String::new();
            for token in self.tokens(node.at) {
                location.push('/');
                match token {
                    Token::Key(key) => location.push_str(&escape_pointer(key)),
                    Token::Index(i) => location.push_str(&i.to_string()),
                }
            }
            return Err(InvalidParamHeader::NotReachable {
                location: display_pointer(&location),
            });
        }
        // A reachable location alternates `properties` and a property name.
        let path: Vec<String> = self
            .tokens(node.at)
            .into_iter()
            .skip(1)
            .step_by(2)
            .map(|token| match token {
                Token::Key(key) => (*key).to_owned(),
                Token::Index(i) => i.to_string(),
            })
            .collect();
        let property = path.join(".");
        let name = check_annotation(annotation, node.schema, &property)?;
        let key = name.to_ascii_lowercase();
        if let Some(first) = self.seen.get(&key) {
            return Err(InvalidParamHeader::Duplicate {
                property,
                name: name.to_owned(),
                first: first.clone(),
            });
        }
        self.seen.insert(key, property);
        self.entries.push(ParamHeader {
            header_name: format!("{MCP_PARAM_PREFIX}{name}"),
            path,
        });
        Ok(())
    }
}

/// Checks one reachable annotation and returns its name.
fn check_annotation<'a>(
    annotation: &'a Value,
    schema: &JsonObject,
    property: &str,
) -> Result<&'a str, InvalidParamHeader> {
    let Value::String(name) = annotation else {
        return Err(InvalidParamHeader::NotAString {
            property: property.to_owned(),
        });
    };
    if name.is_empty() {
        return Err(InvalidParamHeader::Empty {
            property: property.to_owned(),
        });
    }
    if !name.bytes().all(is_tchar) {
        return Err(InvalidParamHeader::NotAToken {
            property: property.to_owned(),
            name: name.clone(),
        });
    }
    if let Some(found) = non_primitive_type(schema.get("type")) {
        return Err(InvalidParamHeader::NotPrimitive {
            property: property.to_owned(),
            name: name.clone(),
            found,
        });
    }
    Ok(name)
}

/// `None` when `type` is `string`, `integer` or `boolean`, or a list of those
/// plus perhaps `null`; otherwise how to describe what was found.
fn non_primitive_type(ty: Option<&Value>) -> Option<String> {
    fn primitive(t: &str) -> bool {
        matches!(t, "string" | "integer" | "boolean")
    }
    match ty {
        None => Some("no type".to_owned()),
        Some(Value::String(t)) if primitive(t) => None,
        Some(Value::Array(list))
            if list.iter().any(|t| t.as_str().is_some_and(primitive))
                && list
                    .iter()
                    .all(|t| t.as_str().is_some_and(|t| primitive(t) || t == "null")) =>
        {
            None
        }
        Some(other) => Some(other.to_string()),
    }
}

/// RFC 9110 §5.6.2 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// RFC 6901 escaping of one reference token.
fn escape_pointer(token: &str) -> Cow<'_, str> {
    if token.contains(['~', '/']) {
        Cow::Owned(token.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(token)
    }
}

fn display_pointer(pointer: &str) -> String {
    if pointer.is_empty() {
        "the schema root".to_owned()
    } else {
        format!("`{pointer}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    }

    fn headers(schema: Value) -> Result<ToolParamHeaders, InvalidParamHeader> {
        tool_param_headers(&obj(schema))
    }

    fn raw(text: &str) -> RawJson {
        RawJson::from_text(text).unwrap()
    }

    // --- value encoding -----------------------------------------------------

    #[test]
    fn spec_encoding_examples() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn plain_values_are_borrowed() {
        for plain in [
            "",
            "a",
            "Seattle, WA",
            "file:///projects/myapp/config.json",
            "~!@#",
        ] {
            assert!(
                matches!(encode_value(plain), Cow::Borrowed(s) if s == plain),
                "{plain:?}"
            );
            assert!(matches!(decode_value(plain), Ok(Cow::Borrowed(s)) if s == plain));
        }
    }

    #[test]
    fn whitespace_and_controls_are_encoded() {
        for value in [" a", "a ", "\ta", "a\tb", "a\rb", "\u{0}", "\u{7f}", "é"] {
            let encoded = encode_value(value);
            assert!(encoded.starts_with(BASE64_PREFIX), "{value:?}");
            assert_eq!(decode_value(&encoded).unwrap(), value);
        }
    }

    #[test]
    fn sentinel_look_alikes_are_encoded() {
        for value in ["=?base64??=", "=?base64?=", "=?base64?abc?="] {
            assert!(matches!(encode_value(value), Cow::Owned(_)), "{value:?}");
            assert_eq!(decode_value(&encode_value(value)).unwrap(), value);
        }
        // Only the exact lowercase markers count.
        assert_eq!(encode_value("=?BASE64?abc?="), "=?BASE64?abc?=");
        assert_eq!(encode_value("=?base64?abc"), "=?base64?abc");
    }

    #[test]
    fn decode_accepts_missing_padding_and_empty_payload() {
        assert_eq!(decode_value("=?base64?IHBhZGRlZCA?=").unwrap(), " padded ");
        assert_eq!(decode_value("=?base64??=").unwrap(), "");
    }

    #[test]
    fn decode_errors() {
        assert_eq!(
            decode_value("=?base64?=").unwrap_err(),
            HeaderValueError::InvalidBase64
        );
        assert_eq!(
            decode_value("=?base64?not base64!?=").unwrap_err(),
            HeaderValueError::InvalidBase64
        );
        // URL-safe alphabet is not the spec's.
        assert_eq!(
            decode_value("=?base64?PT9iYXNlNjQ_bGl0ZXJhbD89?=").unwrap_err(),
            HeaderValueError::InvalidBase64
        );
        // 0xFF 0xFE
        assert_eq!(
            decode_value("=?base64?//4=?=").unwrap_err(),
            HeaderValueError::NotUtf8
        );
        assert_eq!(
            decode_value("a\nb").unwrap_err(),
            HeaderValueError::InvalidCharacter { position: 1 }
        );
        assert_eq!(
            decode_value("é").unwrap_err(),
            HeaderValueError::InvalidCharacter { position: 0 }
        );
        assert_eq!(decode_value("a\tb").unwrap(), "a\tb");
    }

    // --- Mcp-Name -----------------------------------------------------------

    #[test]
    fn name_value_per_method() {
        let params =
            raw(r#"{"name":"get_weather","uri":"file:///x","arguments":{"a":[1,{"b":2}]}}"#);
        assert_eq!(
            name_value(methods::TOOLS_CALL, Some(&params)).as_deref(),
            Some("get_weather")
        );
        assert_eq!(
            name_value(methods::PROMPTS_GET, Some(&params)).as_deref(),
            Some("get_weather")
        );
        assert_eq!(
            name_value(methods::RESOURCES_READ, Some(&params)).as_deref(),
            Some("file:///x")
        );
        assert_eq!(name_value(methods::TOOLS_LIST, Some(&params)), None);
        assert_eq!(name_value("tools/call/", Some(&params)), None);
        assert_eq!(name_value(methods::TOOLS_CALL, None), None);
    }

    #[test]
    fn name_value_encodes_and_unescapes() {
        let params = raw(r#"{"name":"caf\u00e9"}"#);
        assert_eq!(
            name_value(methods::TOOLS_CALL, Some(&params)).as_deref(),
            Some("=?base64?Y2Fmw6k=?=")
        );
        let params = raw(r#"{"uri":"file:///a%20b\/c"}"#);
        assert_eq!(
            name_value(methods::RESOURCES_READ, Some(&params)).as_deref(),
            Some("file:///a%20b/c")
        );
    }

    #[test]
    fn name_value_none_on_bad_params() {
        for text in [
            r#"{"name":1}"#,
            r#"{"name":null}"#,
            "[]",
            r#""name""#,
            "{}",
            r#"{"uri":"x"}"#,
        ] {
            assert_eq!(
                name_value(methods::TOOLS_CALL, Some(&raw(text))),
                None,
                "{text}"
            );
        }
        // An unrelated field of the wrong type does not matter.
        let params = raw(r#"{"name":"t","uri":5}"#);
        assert_eq!(
            name_value(methods::TOOLS_CALL, Some(&params)).as_deref(),
            Some("t")
        );
    }

    #[test]
    fn the_name_is_read_past_meta_and_arguments_and_never_guessed() {
        let params = raw(
            r#"{"_meta":{"name":"no","io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"echo","arguments":{"name":"no"}}"#,
        );
        assert_eq!(
            request_name(methods::TOOLS_CALL, Some(&params)),
            Some(Cow::Borrowed("echo"))
        );
        // An escaped key is read by serde, which unescapes it.
        let params = raw(r#"{"n\u0061me":"echo"}"#);
        assert_eq!(
            request_name(methods::TOOLS_CALL, Some(&params)).as_deref(),
            Some("echo")
        );
        // A repeated name has no one value: no header rather than a guess.
        let params = raw(r#"{"name":"a","name":"b"}"#);
        assert_eq!(request_name(methods::TOOLS_CALL, Some(&params)), None);
        let params = raw(r#" {"uri" : "file:///x"} "#);
        assert_eq!(
            request_name(methods::RESOURCES_READ, Some(&params)).as_deref(),
            Some("file:///x")
        );
    }

    #[test]
    fn a_calls_arguments_are_decoded_alone() {
        let params = raw(r#"{"_meta":{"arguments":1},"name":"t","arguments":{"a":[1,{"b":2}]}}"#);
        let arguments = call_arguments(&params).unwrap();
        assert_eq!(Value::Object(arguments), json!({"a": [1, {"b": 2}]}));
        for text in [
            r#"{"name":"t"}"#,
            r#"{"arguments":[1]}"#,
            r#"{"arguments":{},"arguments":{}}"#,
        ] {
            assert_eq!(call_arguments(&raw(text)), None, "{text}");
        }
        let params = raw(r#"{"\u0061rguments":{"a":1}}"#);
        assert_eq!(
            call_arguments(&params).map(Value::Object),
            Some(json!({"a": 1}))
        );
    }

    // --- x-mcp-header -------------------------------------------------------

    #[test]
    fn spec_example_tool() {
        let h = headers(json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "description": "d", "x-mcp-header": "Region"},
                "query": {"type": "string"}
            },
            "required": ["region", "query"]
        }))
        .unwrap();
        assert_eq!(h.len(), 1);
        let args = obj(json!({"region": "us-west1", "query": "SELECT * FROM users"}));
        let values: Vec<_> = h.values(Some(&args)).collect();
        assert_eq!(values, vec![("Mcp-Param-Region", "us-west1".to_owned())]);
    }

    #[test]
    fn no_annotations() {
        let h = headers(json!({"type": "object"})).unwrap();
        assert!(h.is_empty());
        assert_eq!(h.values(None).count(), 0);
    }

    #[test]
    fn values_mirror_arguments() {
        let h = headers(json!({
            "type": "object",
            "properties": {
                "s": {"type": "string", "x-mcp-header": "S"},
                "i": {"type": "integer", "x-mcp-header": "I"},
                "b": {"type": "boolean", "x-mcp-header": "B"},
                "n": {"type": ["integer", "null"], "x-mcp-header": "N"},
                "m": {"type": "string", "x-mcp-header": "M"},
                "u": {"type": "string", "x-mcp-header": "U"},
                "f": {"type": "integer", "x-mcp-header": "F"},
                "big": {"type": "integer", "x-mcp-header": "Big"},
                "o": {"type": "string", "x-mcp-header": "O"}
            }
        }))
        .unwrap();
        let names: Vec<_> = h.iter().map(ParamHeader::header_name).collect();
        assert_eq!(
            names,
            [
                "Mcp-Param-B",
                "Mcp-Param-Big",
                "Mcp-Param-F",
                "Mcp-Param-I",
                "Mcp-Param-M",
                "Mcp-Param-N",
                "Mcp-Param-O",
                "Mcp-Param-S",
                "Mcp-Param-U"
            ]
        );
        let args = obj(json!({
            "s": "Hello, 世界", "i": -7, "b": false, "n": null, "u": "plain",
            "f": 42.0, "big": u64::MAX, "o": {"x": 1}
        }));
        let values: Vec<_> = h.values(Some(&args)).collect();
        assert_eq!(
            values,
            vec![
                ("Mcp-Param-B", "false".to_owned()),
                ("Mcp-Param-Big", u64::MAX.to_string()),
                ("Mcp-Param-F", "42".to_owned()),
                ("Mcp-Param-I", "-7".to_owned()),
                ("Mcp-Param-S", "=?base64?SGVsbG8sIOS4lueVjA==?=".to_owned()),
                ("Mcp-Param-U", "plain".to_owned()),
            ]
        );
        let args = obj(json!({"b": true, "f": 1.5, "i": 1e300}));
        let values: Vec<_> = h.values(Some(&args)).collect();
        assert_eq!(values, vec![("Mcp-Param-B", "true".to_owned())]);
    }

    #[test]
    fn nested_properties_are_reachable() {
        let h = headers(json!({
            "type": "object",
            "properties": {
                "target": {
                    "type": "object",
                    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}
                }
            }
        }))
        .unwrap();
        let entry = h.iter().next().unwrap();
        assert_eq!(entry.path(), ["target", "region"]);
        let args = obj(json!({"target": {"region": "eu"}}));
        assert_eq!(
            h.values(Some(&args)).collect::<Vec<_>>(),
            vec![("Mcp-Param-Region", "eu".to_owned())]
        );
        for args in [
            json!({}),
            json!({"target": "eu"}),
            json!({"target": {"region": null}}),
            json!({"region": "eu"}),
        ] {
            assert_eq!(h.values(Some(&obj(args))).count(), 0);
        }
    }

    #[test]
    fn token_characters() {
        let ok = "Az09!#$%&'*+-.^_`|~";
        let h =
            headers(json!({"properties": {"p": {"type": "string", "x-mcp-header": ok}}})).unwrap();
        assert_eq!(
            h.iter().next().unwrap().header_name(),
            format!("Mcp-Param-{ok}")
        );
        for bad in [
            "a b",
            "a:b",
            "a/b",
            "a\r\nX-Evil: 1",
            "a\u{0}",
            "é",
            "(a)",
            "a\"",
            "a,b",
            "a\u{7f}",
        ] {
            let err =
                headers(json!({"properties": {"p": {"type": "string", "x-mcp-header": bad}}}))
                    .unwrap_err();
            assert_eq!(
                err,
                InvalidParamHeader::NotAToken {
                    property: "p".into(),
                    name: bad.into()
                },
                "{bad:?}"
            );
        }
    }

    #[test]
    fn empty_and_non_string_names() {
        let err = headers(json!({"properties": {"p": {"type": "string", "x-mcp-header": ""}}}))
            .unwrap_err();
        assert_eq!(
            err,
            InvalidParamHeader::Empty {
                property: "p".into()
            }
        );
        for bad in [json!(1), json!(null), json!(["A"]), json!({"A": 1})] {
            let err =
                headers(json!({"properties": {"p": {"type": "string", "x-mcp-header": bad}}}))
                    .unwrap_err();
            assert_eq!(
                err,
                InvalidParamHeader::NotAString {
                    property: "p".into()
                }
            );
        }
    }

    #[test]
    fn duplicates_ignore_case() {
        let err = headers(json!({"properties": {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "string"},
            "c": {"type": "object", "properties": {"d": {"type": "string", "x-mcp-header": "REGION"}}}
        }}))
        .unwrap_err();
        assert_eq!(
            err,
            InvalidParamHeader::Duplicate {
                property: "c.d".into(),
                name: "REGION".into(),
                first: "a".into()
            }
        );
    }

    #[test]
    fn types_must_be_primitive() {
        for (ty, found) in [
            (json!("number"), "\"number\""),
            (json!("object"), "\"object\""),
            (json!("array"), "\"array\""),
            (json!("null"), "\"null\""),
            (json!(["integer", "number"]), "[\"integer\",\"number\"]"),
            (json!(["null"]), "[\"null\"]"),
            (json!([]), "[]"),
            (json!(7), "7"),
        ] {
            let err = headers(json!({"properties": {"p": {"type": ty, "x-mcp-header": "P"}}}))
                .unwrap_err();
            assert_eq!(
                err,
                InvalidParamHeader::NotPrimitive {
                    property: "p".into(),
                    name: "P".into(),
                    found: found.into()
                }
            );
        }
        let err = headers(json!({"properties": {"p": {"x-mcp-header": "P"}}})).unwrap_err();
        assert!(
            matches!(err, InvalidParamHeader::NotPrimitive { found, .. } if found == "no type")
        );
        for ty in [
            json!("string"),
            json!("integer"),
            json!("boolean"),
            json!(["string", "null"]),
            json!(["integer", "boolean"]),
        ] {
            assert!(
                headers(json!({"properties": {"p": {"type": ty, "x-mcp-header": "P"}}})).is_ok()
            );
        }
    }

    #[test]
    fn annotations_off_the_properties_chain_are_refused() {
        let leaf = json!({"type": "string", "x-mcp-header": "X"});
        let cases = [
            (
                json!({"x-mcp-header": "X", "type": "object"}),
                "the schema root",
            ),
            (
                json!({"properties": {"a": {"type": "array", "items": leaf}}}),
                "`/properties/a/items`",
            ),
            (
                json!({"properties": {"a": {"items": [{"type": "integer"}, leaf]}}}),
                "`/properties/a/items/1`",
            ),
            (
                json!({"properties": {"a": {"prefixItems": [leaf]}}}),
                "`/properties/a/prefixItems/0`",
            ),
            (
                json!({"properties": {"a": {"oneOf": [leaf]}}}),
                "`/properties/a/oneOf/0`",
            ),
            (
                json!({"anyOf": [{"properties": {"a": leaf}}]}),
                "`/anyOf/0/properties/a`",
            ),
            (json!({"allOf": [leaf]}), "`/allOf/0`"),
            (json!({"not": leaf}), "`/not`"),
            (
                json!({"if": {"properties": {"a": leaf}}}),
                "`/if/properties/a`",
            ),
            (
                json!({"then": {"properties": {"a": leaf}}}),
                "`/then/properties/a`",
            ),
            (
                json!({"else": {"properties": {"a": leaf}}}),
                "`/else/properties/a`",
            ),
            (
                json!({"properties": {"a": {"$ref": "#/$defs/r"}}, "$defs": {"r": leaf}}),
                "`/$defs/r`",
            ),
            (
                json!({"definitions": {"r/x~": leaf}}),
                "`/definitions/r~1x~0`",
            ),
            (
                json!({"additionalProperties": leaf}),
                "`/additionalProperties`",
            ),
            (
                json!({"patternProperties": {"^a": leaf}}),
                "`/patternProperties/^a`",
            ),
            (
                json!({"dependentSchemas": {"a": {"properties": {"b": leaf}}}}),
                "`/dependentSchemas/a/properties/b`",
            ),
            (
                json!({"properties": {"a": {"contains": leaf}}}),
                "`/properties/a/contains`",
            ),
            (
                json!({"unevaluatedProperties": leaf}),
                "`/unevaluatedProperties`",
            ),
        ];
        for (schema, location) in cases {
            let err = headers(schema.clone()).unwrap_err();
            assert!(
                matches!(&err, InvalidParamHeader::NotReachable { location: l } if l == location),
                "{schema}: {err:?}"
            );
            assert!(err.to_string().contains(location), "{err}");
        }
    }

    #[test]
    fn data_keywords_and_property_names_are_not_annotations() {
        let h = headers(json!({
            "type": "object",
            "properties": {
                "x-mcp-header": {"type": "string", "default": {"x-mcp-header": "D"}},
                "e": {"type": "object", "const": {"x-mcp-header": "C"}, "examples": [{"x-mcp-header": "E"}]},
                "properties": {"type": "string", "x-mcp-header": "Props"}
            },
            "x-unknown": {"x-mcp-header": "U"}
        }))
        .unwrap();
        let paths: Vec<_> = h.iter().map(|e| e.path().to_vec()).collect();
        assert_eq!(paths, vec![vec!["properties".to_owned()]]);
    }

    #[test]
    fn deep_schema_does_not_overflow() {
        let mut schema = json!({"type": "string", "x-mcp-header": "Deep"});
        for _ in 0..20_000 {
            // Not `json!`, which would copy `schema` recursively.
            let mut properties = JsonObject::new();
            properties.insert("a".into(), schema);
            let mut object = obj(json!({"type": "object"}));
            object.insert("properties".into(), Value::Object(properties));
            schema = Value::Object(object);
        }
        let schema = obj(schema);
        let h = tool_param_headers(&schema).unwrap();
        assert_eq!(h.iter().next().unwrap().path().len(), 20_000);
        // serde_json's `Value` drops recursively: leak the deep tree rather
        // than test its destructor's stack.
        std::mem::forget(schema);
    }

    #[test]
    fn error_messages_are_plain_words() {
        let err = InvalidParamHeader::NotPrimitive {
            property: "p".into(),
            name: "P".into(),
            found: "\"number\"".into(),
        };
        assert_eq!(
            err.to_string(),
            "the x-mcp-header \"P\" is on property `p` of type \"number\", but only string, integer and boolean properties may have one"
        );
    }
}

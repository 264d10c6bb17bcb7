//! Content blocks (tool results, prompt messages, sampling) and resource contents.
//!
//! A [`ContentBlock`] is tagged by `type`. Blocks of a type this crate does
//! not know become [`ContentBlock::Unknown`] holding the object exactly as
//! received, and are written back unchanged; a block of a known type whose
//! body is malformed (a `text` block without `text`) is a decoding error, so
//! protocol bugs are not silently dropped.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::Meta;
use super::de::{deserialize_object, deserialize_tagged};
use super::{Annotations, Icon, JsonObject, Resource};

/// A block of content in a tool result, a prompt message or a resource link
/// list (MCP "Content", `ContentBlock`).
#[derive(Clone, Debug, PartialEq)]
pub enum ContentBlock {
    /// `type: "text"`.
    Text(TextContent),
    /// `type: "image"`: base64 data and a MIME type.
    Image(ImageContent),
    /// `type: "audio"` (2025-03-26).
    Audio(AudioContent),
    /// `type: "resource_link"` (2025-06-18): a resource the client may read.
    ResourceLink(ResourceLink),
    /// `type: "resource"`: a resource embedded with its contents.
    Resource(EmbeddedResource),
    /// Any other `type`, or none: the JSON object exactly as received.
    Unknown(serde_json::Value),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }

    /// The block's `type` tag, if it has a string one.
    pub fn kind(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(_) => Some("text"),
            ContentBlock::Image(_) => Some("image"),
            ContentBlock::Audio(_) => Some("audio"),
            ContentBlock::ResourceLink(_) => Some("resource_link"),
            ContentBlock::Resource(_) => Some("resource"),
            ContentBlock::Unknown(v) => v.get("type").and_then(serde_json::Value::as_str),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Each body type writes its own `type` tag first (`#[serde(tag)]`).
        match self {
            ContentBlock::Text(c) => c.serialize(serializer),
            ContentBlock::Image(c) => c.serialize(serializer),
            ContentBlock::Audio(c) => c.serialize(serializer),
            ContentBlock::ResourceLink(c) => c.serialize(serializer),
            ContentBlock::Resource(c) => c.serialize(serializer),
            ContentBlock::Unknown(v) => v.serialize(serializer),
        }
    }
}

deserialize_tagged!(ContentBlock, "a content block object", "type", {
    "text" => Text(TextContent),
    "image" => Image(ImageContent),
    "audio" => Audio(AudioContent),
    "resource_link" => ResourceLink(ResourceLink),
    "resource" => Resource(EmbeddedResource),
});

impl From<TextContent> for ContentBlock {
    fn from(c: TextContent) -> Self {
        ContentBlock::Text(c)
    }
}

/// Text for or from a model (`type: "text"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "type", rename = "text", rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Block metadata (2025-06-18).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl TextContent {
    /// A text block with no annotations.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            text: text.into(),
            ..TextContent::default()
        }
    }
}

deserialize_object!(TextContent, "a text content block", tag "type" = "text", {
    text: "text" => text,
    annotations: "annotations" => opt,
    meta: "_meta" => opt,
});

/// An image (`type: "image"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "type", rename = "image", rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image data.
    pub data: String,
    /// The image's MIME type, for example `image/png`.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Block metadata (2025-06-18).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_object!(ImageContent, "an image content block", tag "type" = "image", {
    data: "data" => req,
    mime_type: "mimeType" => req,
    annotations: "annotations" => opt,
    meta: "_meta" => opt,
});

/// Audio (`type: "audio"`, 2025-03-26).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "type", rename = "audio", rename_all = "camelCase")]
pub struct AudioContent {
    /// Base64-encoded audio data.
    pub data: String,
    /// The audio's MIME type, for example `audio/wav`.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Block metadata (2025-06-18).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_object!(AudioContent, "an audio content block", tag "type" = "audio", {
    data: "data" => req,
    mime_type: "mimeType" => req,
    annotations: "annotations" => opt,
    meta: "_meta" => opt,
});

/// A link to a resource (`type: "resource_link"`, 2025-06-18): a
/// [`Resource`] with a tag. The resource need not appear in `resources/list`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "type", rename = "resource_link", rename_all = "camelCase")]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Size of the raw content in bytes, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons for display (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Link metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_object!(ResourceLink, "a resource link", tag "type" = "resource_link", {
    uri: "uri" => req,
    name: "name" => req,
    title: "title" => opt,
    description: "description" => opt,
    mime_type: "mimeType" => opt,
    annotations: "annotations" => opt,
    size: "size" => opt,
    icons: "icons" => opt,
    meta: "_meta" => opt,
});

impl From<ResourceLink> for Resource {
    fn from(l: ResourceLink) -> Self {
        Resource {
            uri: l.uri,
            name: l.name,
            title: l.title,
            description: l.description,
            mime_type: l.mime_type,
            annotations: l.annotations,
            size: l.size,
            icons: l.icons,
            meta: l.meta,
            extra: l.extra,
        }
    }
}

impl From<Resource> for ResourceLink {
    fn from(r: Resource) -> Self {
        ResourceLink {
            uri: r.uri,
            name: r.name,
            title: r.title,
            description: r.description,
            mime_type: r.mime_type,
            annotations: r.annotations,
            size: r.size,
            icons: r.icons,
            meta: r.meta,
            extra: r.extra,
        }
    }
}

/// A resource embedded with its contents (`type: "resource"`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename = "resource", rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// The contents: text or a base64 blob.
    pub resource: ResourceContents,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Block metadata (2025-06-18).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_object!(EmbeddedResource, "an embedded resource", tag "type" = "resource", {
    resource: "resource" => req,
    annotations: "annotations" => opt,
    meta: "_meta" => opt,
});

/// The contents of a resource or sub-resource: text or a base64 blob
/// (`TextResourceContents | BlobResourceContents`), told apart by which of
/// `text` and `blob` is present. An object with both or neither is an error.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Contents that are text.
    Text(TextResourceContents),
    /// Binary contents, base64-encoded.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// The URI of these contents.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(t) => &t.uri,
            ResourceContents::Blob(b) => &b.uri,
        }
    }

    /// The MIME type, if known.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(t) => t.mime_type.as_deref(),
            ResourceContents::Blob(b) => b.mime_type.as_deref(),
        }
    }
}

/// Text contents of a resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Contents metadata (2025-06-18).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_object!(TextResourceContents, "text resource contents", {
    uri: "uri" => req,
    mime_type: "mimeType" => opt,
    text: "text" => req,
    meta: "_meta" => opt,
});

/// Binary contents of a resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The bytes, base64-encoded.
    pub blob: String,
    /// Contents metadata (2025-06-18).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_object!(BlobResourceContents, "blob resource contents", {
    uri: "uri" => req,
    mime_type: "mimeType" => opt,
    blob: "blob" => req,
    meta: "_meta" => opt,
});

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ResourceContentsVisitor)
    }
}

struct ResourceContentsVisitor;

impl<'de> Visitor<'de> for ResourceContentsVisitor {
    type Value = ResourceContents;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("resource contents with `text` or `blob`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResourceContents, A::Error> {
        // One pass over the union of both shapes' fields; the shape is
        // decided at the end by which of `text` and `blob` was present.
        let mut uri: Option<String> = None;
        let mut mime_type: Option<Option<String>> = None;
        let mut meta: Option<Option<super::Meta>> = None;
        let mut text: Option<String> = None;
        let mut blob: Option<String> = None;
        let mut extra = JsonObject::new();
        while let Some(key) = map.next_key::<super::de::Key<'de>>()? {
            match key.as_str() {
                "uri" => set_once(&mut uri, map.next_value()?, "uri")?,
                "mimeType" => set_once(&mut mime_type, map.next_value()?, "mimeType")?,
                "_meta" => set_once(&mut meta, map.next_value()?, "_meta")?,
                "text" => set_once(&mut text, map.next_value()?, "text")?,
                "blob" => set_once(&mut blob, map.next_value()?, "blob")?,
                _ => {
                    let value: serde_json::Value = map.next_value()?;
                    extra.insert(key.into_string(), value);
                }
            }
        }
        let uri = uri.ok_or_else(|| de::Error::missing_field("uri"))?;
        let mime_type = mime_type.flatten();
        let meta = meta.flatten();
        match (text, blob) {
            (Some(text), None) => Ok(ResourceContents::Text(TextResourceContents {
                uri,
                mime_type,
                text,
                meta,
                extra,
            })),
            (None, Some(blob)) => Ok(ResourceContents::Blob(BlobResourceContents {
                uri,
                mime_type,
                blob,
                meta,
                extra,
            })),
            (Some(_), Some(_)) => Err(de::Error::custom(
                "resource contents have both `text` and `blob`",
            )),
            (None, None) => Err(de::Error::custom(
                "resource contents have neither `text` nor `blob`",
            )),
        }
    }
}

fn set_once<T, E: de::Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
    match slot.replace(value) {
        Some(_) => Err(E::duplicate_field(name)),
        None => Ok(()),
    }
}

/// A block in a sampling message (`SamplingMessageContentBlock`): text,
/// image, audio, and from 2025-11-25 tool use and tool results.
#[derive(Clone, Debug, PartialEq)]
pub enum SamplingContent {
    /// `type: "text"`.
    Text(TextContent),
    /// `type: "image"`.
    Image(ImageContent),
    /// `type: "audio"` (2025-03-26).
    Audio(AudioContent),
    /// `type: "tool_use"` (2025-11-25): the model asks for a tool call.
    ToolUse(ToolUseContent),
    /// `type: "tool_result"` (2025-11-25): the result of a tool call.
    ToolResult(ToolResultContent),
    /// Any other `type`, or none: the JSON object exactly as received.
    Unknown(serde_json::Value),
}

impl Serialize for SamplingContent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SamplingContent::Text(c) => c.serialize(serializer),
            SamplingContent::Image(c) => c.serialize(serializer),
            SamplingContent::Audio(c) => c.serialize(serializer),
            SamplingContent::ToolUse(c) => c.serialize(serializer),
            SamplingContent::ToolResult(c) => c.serialize(serializer),
            SamplingContent::Unknown(v) => v.serialize(serializer),
        }
    }
}

deserialize_tagged!(SamplingContent, "a sampling content block object", "type", {
    "text" => Text(TextContent),
    "image" => Image(ImageContent),
    "audio" => Audio(AudioContent),
    "tool_use" => ToolUse(ToolUseContent),
    "tool_result" => ToolResult(ToolResultContent),
});

/// A tool call the model asks for (`type: "tool_use"`, 2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "type", rename = "tool_use", rename_all = "camelCase")]
pub struct ToolUseContent {
    /// Identifies this tool use; the matching result carries it as `toolUseId`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, conforming to the tool's input schema.
    pub input: JsonObject,
    /// Metadata to keep when the block is sent again (caching).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_object!(ToolUseContent, "a tool use block", tag "type" = "tool_use", {
    id: "id" => req,
    name: "name" => req,
    input: "input" => req,
    meta: "_meta" => opt,
});

/// The result of a tool call (`type: "tool_result"`, 2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "type", rename = "tool_result", rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The `id` of the [`ToolUseContent`] this answers.
    pub tool_use_id: String,
    /// The unstructured result, as in `CallToolResult.content`.
    pub content: Vec<ContentBlock>,
    /// The structured result, if the tool has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<serde_json::Value>,
    /// Whether the tool call failed; missing means `false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata to keep when the block is sent again (caching).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_object!(ToolResultContent, "a tool result block", tag "type" = "tool_result", {
    tool_use_id: "toolUseId" => req,
    content: "content" => req,
    structured_content: "structuredContent" => opt,
    is_error: "isError" => opt,
    meta: "_meta" => opt,
});

/// The content of a sampling message: one block, or (2025-11-25) an array
/// of blocks. The shape received is the shape sent back.
// A single block is the common shape; boxing it to shrink the enum would
// cost an allocation per message to save a few hundred bytes of stack.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum SamplingMessageContent {
    /// A single block (every version).
    One(SamplingContent),
    /// Several blocks (2025-11-25).
    Many(Vec<SamplingContent>),
}

impl SamplingMessageContent {
    /// The blocks, whichever the shape.
    pub fn blocks(&self) -> &[SamplingContent] {
        match self {
            SamplingMessageContent::One(block) => std::slice::from_ref(block),
            SamplingMessageContent::Many(blocks) => blocks,
        }
    }
}

impl From<SamplingContent> for SamplingMessageContent {
    fn from(block: SamplingContent) -> Self {
        SamplingMessageContent::One(block)
    }
}

impl Serialize for SamplingMessageContent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SamplingMessageContent::One(block) => block.serialize(serializer),
            SamplingMessageContent::Many(blocks) => blocks.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for SamplingMessageContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SamplingMessageContentVisitor)
    }
}

struct SamplingMessageContentVisitor;

impl<'de> Visitor<'de> for SamplingMessageContentVisitor {
    type Value = SamplingMessageContent;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block or an array of content blocks")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        SamplingContent::from_map(map).map(SamplingMessageContent::One)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(block) = seq.next_element()? {
            blocks.push(block);
        }
        Ok(SamplingMessageContent::Many(blocks))
    }
}

//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640): skill entries, `skills/list`, `skills/get`, and the host's verification of what it reads.
//!
//! A skill is a directory of files served as resources, minimally a
//! `SKILL.md` that begins with YAML frontmatter. A server that declares the
//! extension (`capabilities.extensions["io.modelcontextprotocol/skills"]`,
//! see [`ServerCapabilities::skills`]) answers `skills/list` and
//! `skills/get` with [`Skill`] entries: the frontmatter verbatim and a
//! complete manifest of the files, each with its SHA-256 digest and size.
//!
//! The rules here are the host's side of "Integrity and Verification":
//! - [`Skill::check_entry`]: an entry a host may load at all (the manifest
//!   is an array or `"dynamic"`, lists the `SKILL.md`, stays within the
//!   skill's directory and the 512-file, 16 MiB limits, and the URI's final
//!   segment is the frontmatter's `name`);
//! - [`Skill::verify_file`]: a file read while acting on the skill is listed,
//!   has the listed size and the listed digest ("MUST NOT use unverified
//!   content");
//! - [`Skill::verify_frontmatter`]: the `SKILL.md` read has frontmatter equal,
//!   field by field, to the entry's.
//!
//! Nothing here reads anything: retrieval is lazy and belongs to the client
//! (`mcp-transport`'s `Client::load_skill`), which fetches a `SKILL.md`
//! only when the skill is loaded and a supporting file only when it is read.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Meta;
use super::{CacheScope, Cursor, JsonObject, ResultType, ServerCapabilities};

/// The extension's identifier, the key under `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The file every skill has at its root.
pub const SKILL_FILE: &str = "SKILL.md";

/// The most files a host must accept in one skill ("Limits").
pub const MAX_SKILL_FILES: usize = 512;

/// The largest total size a host must accept for one skill ("Limits").
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// What a server declares under the extension's key.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillsCapability {
    /// The server answers `resources/directory/read`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory_read: Option<bool>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ServerCapabilities {
    /// The Skills extension's settings when the server declared it (an
    /// object under `extensions["io.modelcontextprotocol/skills"]`); `None`
    /// otherwise, when a client must not send `skills/list` or `skills/get`.
    pub fn skills(&self) -> Option<SkillsCapability> {
        let value = self.extensions.as_ref()?.get(SKILLS_EXTENSION)?;
        serde_json::from_value(value.clone()).ok()
    }
}

/// One file of a skill with the digest and size of its raw bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillResource {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:` and 64 lowercase hexadecimal characters.
    pub digest: String,
    /// The length of the file's raw bytes.
    pub size: u64,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A skill's `resources`: its complete manifest, or `"dynamic"` when its
/// content is generated and has no stable digests.
#[derive(Clone, Debug, PartialEq)]
pub enum SkillFiles {
    /// Every file of the skill, `SKILL.md` included, each exactly once.
    Listed(Vec<SkillResource>),
    /// Generated content: nothing can be verified.
    Dynamic,
    /// Anything else (missing, another string, an array of malformed
    /// entries): the entry is invalid and must not be loaded. Kept as
    /// received.
    Invalid(Value),
}

impl Default for SkillFiles {
    fn default() -> Self {
        SkillFiles::Invalid(Value::Null)
    }
}

impl Serialize for SkillFiles {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillFiles::Listed(files) => files.serialize(serializer),
            SkillFiles::Dynamic => serializer.serialize_str("dynamic"),
            SkillFiles::Invalid(value) => value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for SkillFiles {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(match &value {
            Value::String(text) if text == "dynamic" => SkillFiles::Dynamic,
            Value::Array(_) => match serde_json::from_value(value.clone()) {
                Ok(files) => SkillFiles::Listed(files),
                Err(_) => SkillFiles::Invalid(value),
            },
            _ => SkillFiles::Invalid(value),
        })
    }
}

/// The entry for one skill, from `skills/list` or `skills/get`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Skill {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` frontmatter, verbatim as a JSON object (`name` and
    /// `description` always; every other field the author wrote).
    #[serde(default)]
    pub frontmatter: JsonObject,
    /// The skill's files.
    #[serde(default)]
    pub resources: SkillFiles,
    /// Entry metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `skills/list` parameters: a paginated request.
pub type ListSkillsRequestParams = super::PaginatedRequestParams;

/// `skills/list` result: one page of entries.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// The entries on this page (an entry is never split across pages).
    #[serde(default)]
    pub skills: Vec<Skill>,
    /// The cursor for the next page; `None` on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// How long the listing may be cached, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<serde_json::Number>,
    /// Who may reuse a cached copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// What the result holds; missing means complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `skills/get` parameters: the URI of a skill's `SKILL.md`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillRequestParams {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `skills/get` result: one entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillResult {
    /// The entry.
    pub skill: Skill,
    /// How long the entry may be treated as current, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<serde_json::Number>,
    /// Who may reuse a cached copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// What the result holds; missing means complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

super::common::impl_result_type!(ListSkillsResult, GetSkillResult);
super::common::impl_cacheable!(ListSkillsResult, GetSkillResult);

/// Why a skill entry may not be loaded, or why content read for it may not
/// be used. Each has a stable [`code`](SkillError::code); texts from the
/// server are bounded and escaped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The entry itself breaks a rule (no valid `resources`, no `SKILL.md`
    /// in it, a file outside the skill, a name that does not match).
    #[error("the skill entry {uri} is invalid: {reason}")]
    InvalidEntry {
        /// The entry's URI, bounded and escaped.
        uri: String,
        /// What is wrong, in words.
        reason: String,
    },
    /// More files or bytes than a host must accept.
    #[error("the skill {uri} is too large to load: {reason}")]
    TooLarge {
        /// The entry's URI, bounded and escaped.
        uri: String,
        /// Which limit, in words.
        reason: String,
    },
    /// A file that the entry does not list was to be read for the skill.
    #[error("{file} is not one of the files the skill {uri} lists")]
    Unlisted {
        /// The entry's URI, bounded and escaped.
        uri: String,
        /// The file's URI, bounded and escaped.
        file: String,
    },
    /// The bytes read have another length than the entry lists.
    #[error("{file} has {actual} bytes where the skill's entry lists {expected}: not used")]
    SizeMismatch {
        /// The file's URI, bounded and escaped.
        file: String,
        /// The listed size.
        expected: u64,
        /// The size read.
        actual: u64,
    },
    /// The bytes read have another SHA-256 digest than the entry lists.
    #[error("{file} does not match the digest the skill's entry lists: not used")]
    DigestMismatch {
        /// The file's URI, bounded and escaped.
        file: String,
    },
    /// The `SKILL.md` read has no frontmatter, or frontmatter that differs
    /// from the entry's.
    #[error("the frontmatter of {file} differs from the skill's entry: {reason}")]
    FrontmatterMismatch {
        /// The file's URI, bounded and escaped.
        file: String,
        /// The first difference, in words (values bounded and escaped).
        reason: String,
    },
    /// The read returned nothing usable for the file (no contents with its
    /// URI, or a blob that is not base64).
    #[error("the read of {file} returned no usable content: {reason}")]
    NoContent {
        /// The file's URI, bounded and escaped.
        file: String,
        /// Why, in words.
        reason: String,
    },
}

impl SkillError {
    /// The stable code: `skill_invalid_entry`, `skill_too_large`,
    /// `skill_unlisted_file`, `skill_size_mismatch`,
    /// `skill_digest_mismatch`, `skill_frontmatter_mismatch` or
    /// `skill_no_content`.
    pub fn code(&self) -> &'static str {
        match self {
            SkillError::InvalidEntry { .. } => "skill_invalid_entry",
            SkillError::TooLarge { .. } => "skill_too_large",
            SkillError::Unlisted { .. } => "skill_unlisted_file",
            SkillError::SizeMismatch { .. } => "skill_size_mismatch",
            SkillError::DigestMismatch { .. } => "skill_digest_mismatch",
            SkillError::FrontmatterMismatch { .. } => "skill_frontmatter_mismatch",
            SkillError::NoContent { .. } => "skill_no_content",
        }
    }
}

/// A server's text as it may appear in an error: at most 200 bytes, control
/// characters escaped.
fn shown(text: &str) -> String {
    crate::text::error_text(text, 200).into_owned()
}

impl Skill {
    /// The skill's name as its URI says: the path segment before the final
    /// `/SKILL.md`, or `None` when the URI does not end so.
    pub fn uri_name(&self) -> Option<&str> {
        let dir = self.uri.strip_suffix("/SKILL.md")?;
        let after_scheme = dir.split_once("://").map_or(dir, |(_, rest)| rest);
        after_scheme.rsplit('/').next().filter(|s| !s.is_empty())
    }

    /// The frontmatter's `name`, when it is a string.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// The frontmatter's `description`, when it is a string.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }

    /// The listed files, or `None` for a dynamic or invalid manifest.
    pub fn files(&self) -> Option<&[SkillResource]> {
        match &self.resources {
            SkillFiles::Listed(files) => Some(files),
            _ => None,
        }
    }

    /// Whether the entry may be loaded at all ("Skill Entries",
    /// "Resources", "Limits"): `resources` is an array that lists the
    /// `SKILL.md` and only files within the skill's directory, each once,
    /// at most [`MAX_SKILL_FILES`] files and [`MAX_SKILL_BYTES`] in all, or
    /// `"dynamic"`; the URI ends in `/SKILL.md` with the frontmatter's
    /// `name` as its last directory; `name` and `description` are strings.
    ///
    /// ```
    /// use mcp_proto::types::Skill;
    /// let entry: Skill = serde_json::from_value(serde_json::json!({
    ///     "uri": "skill://pdf/SKILL.md",
    ///     "frontmatter": {"name": "pdf", "description": "PDF forms"},
    ///     "resources": "surprise"
    /// })).unwrap();
    /// assert_eq!(entry.check_entry().unwrap_err().code(), "skill_invalid_entry");
    /// ```
    pub fn check_entry(&self) -> Result<(), SkillError> {
        let invalid = |reason: String| SkillError::InvalidEntry {
            uri: shown(&self.uri),
            reason,
        };
        let Some(uri_name) = self.uri_name() else {
            return Err(invalid("its URI does not end in /SKILL.md".to_owned()));
        };
        let Some(name) = self.name() else {
            return Err(invalid("its frontmatter has no string `name`".to_owned()));
        };
        if self.description().is_none() {
            return Err(invalid(
                "its frontmatter has no string `description`".to_owned(),
            ));
        }
        if name != uri_name {
            return Err(invalid(format!(
                "its URI names the skill {} but its frontmatter says {}",
                shown(uri_name),
                shown(name)
            )));
        }
        let files = match &self.resources {
            SkillFiles::Dynamic => return Ok(()),
            SkillFiles::Invalid(value) => {
                return Err(invalid(format!(
                    "`resources` is {}, neither a list of files nor \"dynamic\"",
                    super::json_kind(value)
                )));
            }
            SkillFiles::Listed(files) => files,
        };
        if files.len() > MAX_SKILL_FILES {
            return Err(SkillError::TooLarge {
                uri: shown(&self.uri),
                reason: format!("{} files, more than {MAX_SKILL_FILES}", files.len()),
            });
        }
        let total: u64 = files.iter().map(|f| f.size).fold(0, u64::saturating_add);
        if total > MAX_SKILL_BYTES {
            return Err(SkillError::TooLarge {
                uri: shown(&self.uri),
                reason: format!("{total} bytes in all, more than {MAX_SKILL_BYTES}"),
            });
        }
        let root = &self.uri[..self.uri.len() - SKILL_FILE.len()];
        let mut seen = std::collections::HashSet::with_capacity(files.len());
        for file in files {
            if !file.uri.starts_with(root) || file.uri.len() == root.len() {
                return Err(invalid(format!(
                    "it lists {}, outside the skill's directory",
                    shown(&file.uri)
                )));
            }
            if !seen.insert(file.uri.as_str()) {
                return Err(invalid(format!("it lists {} twice", shown(&file.uri))));
            }
            if !is_sha256_digest(&file.digest) {
                return Err(invalid(format!(
                    "the digest of {} is not sha256: and 64 lowercase hexadecimal characters",
                    shown(&file.uri)
                )));
            }
        }
        if !seen.contains(self.uri.as_str()) {
            return Err(invalid(
                "its files do not include its own SKILL.md".to_owned(),
            ));
        }
        Ok(())
    }

    /// Whether `bytes`, read from `file` while acting on this skill, may be
    /// used ("Verification on Read", "The Acting Window"): `file` is
    /// listed, and the bytes have its listed size and SHA-256 digest. A
    /// dynamic skill's files cannot be verified and pass.
    ///
    /// ```
    /// use mcp_proto::types::Skill;
    /// let body = "---\nname: pdf\ndescription: PDF forms\n---\nBody.\n";
    /// let digest = mcp_proto::types::sha256_digest(body.as_bytes());
    /// let entry: Skill = serde_json::from_value(serde_json::json!({
    ///     "uri": "skill://pdf/SKILL.md",
    ///     "frontmatter": {"name": "pdf", "description": "PDF forms"},
    ///     "resources": [{"uri": "skill://pdf/SKILL.md", "digest": digest, "size": body.len()}]
    /// })).unwrap();
    /// assert!(entry.verify_file("skill://pdf/SKILL.md", body.as_bytes()).is_ok());
    /// let tampered = body.replace("Body.", "Evil!");
    /// let error = entry.verify_file("skill://pdf/SKILL.md", tampered.as_bytes()).unwrap_err();
    /// assert_eq!(error.code(), "skill_digest_mismatch");
    /// ```
    pub fn verify_file(&self, file: &str, bytes: &[u8]) -> Result<(), SkillError> {
        let Some(listed) = self.listed_file(file)? else {
            return Ok(());
        };
        let actual = bytes.len() as u64;
        if actual != listed.size {
            return Err(SkillError::SizeMismatch {
                file: shown(file),
                expected: listed.size,
                actual,
            });
        }
        if sha256_digest(bytes) != listed.digest {
            return Err(SkillError::DigestMismatch { file: shown(file) });
        }
        Ok(())
    }

    /// The entry's record of `file`, refused when the entry does not list
    /// it ("The Acting Window": an unlisted file is a verification
    /// failure); `None` for a dynamic skill, which lists nothing. A host
    /// checks this before it asks for a file, and [`Skill::verify_file`]
    /// again on what it got.
    pub fn listed_file(&self, file: &str) -> Result<Option<&SkillResource>, SkillError> {
        let files = match &self.resources {
            SkillFiles::Dynamic => return Ok(None),
            SkillFiles::Invalid(_) => return self.check_entry().map(|()| None),
            SkillFiles::Listed(files) => files,
        };
        match files.iter().find(|f| f.uri == file) {
            Some(listed) => Ok(Some(listed)),
            None => Err(SkillError::Unlisted {
                uri: shown(&self.uri),
                file: shown(file),
            }),
        }
    }

    /// The `SKILL.md` text in `result`, a `resources/read` of this entry's
    /// URI, once it passed every check a load makes: size and digest
    /// ([`Skill::verify_file`]), UTF-8, and frontmatter
    /// ([`Skill::verify_frontmatter`]).
    pub fn verified_skill_md(
        &self,
        result: &super::ReadResourceResult,
    ) -> Result<String, SkillError> {
        let bytes = skill_file_bytes(result, &self.uri)?;
        self.verify_file(&self.uri, &bytes)?;
        let text = String::from_utf8(bytes).map_err(|_| SkillError::NoContent {
            file: shown(&self.uri),
            reason: "it is not UTF-8 text".to_owned(),
        })?;
        self.verify_frontmatter(&text)?;
        Ok(text)
    }

    /// `result`, a `resources/read` of `file`, reduced to the one contents
    /// item whose bytes match this entry's record of `file`
    /// ([`Skill::verify_file`]).
    pub fn verified_file(
        &self,
        mut result: super::ReadResourceResult,
        file: &str,
    ) -> Result<super::ReadResourceResult, SkillError> {
        let index = file_item(&result, file)?;
        self.verify_file(file, &contents_bytes(&result.contents[index], file)?)?;
        let verified = result.contents.swap_remove(index);
        result.contents = vec![verified];
        Ok(result)
    }

    /// Whether the `SKILL.md` text read for this entry has frontmatter
    /// equal to the entry's, field by field ("Frontmatter Verification"):
    /// the file begins (after an optional byte order mark) with a `---`
    /// line, YAML, and a closing `---` line; the YAML is a mapping whose
    /// every field equals the entry's field of that name, and the entry has
    /// no field the file lacks.
    ///
    /// ```
    /// use mcp_proto::types::Skill;
    /// let entry: Skill = serde_json::from_value(serde_json::json!({
    ///     "uri": "skill://pdf/SKILL.md",
    ///     "frontmatter": {"name": "pdf", "description": "PDF forms"},
    ///     "resources": "dynamic"
    /// })).unwrap();
    /// assert!(entry.verify_frontmatter("---\nname: pdf\ndescription: PDF forms\n---\nBody\n").is_ok());
    /// let error = entry
    ///     .verify_frontmatter("---\nname: pdf\ndescription: Exfiltrate credentials\n---\n")
    ///     .unwrap_err();
    /// assert_eq!(error.code(), "skill_frontmatter_mismatch");
    /// ```
    pub fn verify_frontmatter(&self, skill_md: &str) -> Result<(), SkillError> {
        let mismatch = |reason: String| SkillError::FrontmatterMismatch {
            file: shown(&self.uri),
            reason,
        };
        let Some(yaml) = frontmatter_block(skill_md) else {
            return Err(mismatch(
                "the file does not begin with a --- delimited YAML block".to_owned(),
            ));
        };
        let file = match parse_yaml_mapping(yaml) {
            Ok(map) => map,
            Err(reason) => return Err(mismatch(reason)),
        };
        for (key, value) in &file {
            match self.frontmatter.get(key) {
                Some(entry) if same_value(entry, value) => {}
                Some(entry) => {
                    return Err(mismatch(format!(
                        "`{}` is {} in the file and {} in the entry",
                        shown(key),
                        shown(&value.to_string()),
                        shown(&entry.to_string())
                    )));
                }
                None if value.is_null() => {}
                None => {
                    return Err(mismatch(format!(
                        "the file has `{}`, the entry does not",
                        shown(key)
                    )));
                }
            }
        }
        for (key, value) in &self.frontmatter {
            if !file.contains_key(key) && !value.is_null() {
                return Err(mismatch(format!(
                    "the entry has `{}`, the file does not",
                    shown(key)
                )));
            }
        }
        Ok(())
    }
}

/// The raw bytes of `file` in a `resources/read` result: the contents item
/// with that URI (or the only item, when there is one), its text as UTF-8
/// or its blob decoded from base64. These are the bytes a skill's digest
/// and size cover.
pub fn skill_file_bytes(
    result: &super::ReadResourceResult,
    file: &str,
) -> Result<Vec<u8>, SkillError> {
    contents_bytes(&result.contents[file_item(result, file)?], file)
}

/// Which contents item of `result` is `file`'s: the one with its URI, or
/// the only one.
fn file_item(result: &super::ReadResourceResult, file: &str) -> Result<usize, SkillError> {
    result
        .contents
        .iter()
        .position(|c| c.uri() == file)
        .or((result.contents.len() == 1).then_some(0))
        .ok_or_else(|| SkillError::NoContent {
            file: shown(file),
            reason: "no contents item has its URI".to_owned(),
        })
}

/// One contents item's raw bytes: text as UTF-8, a blob decoded from base64.
fn contents_bytes(item: &super::ResourceContents, file: &str) -> Result<Vec<u8>, SkillError> {
    use base64::Engine as _;
    match item {
        super::ResourceContents::Text(text) => Ok(text.text.as_bytes().to_vec()),
        super::ResourceContents::Blob(blob) => base64::engine::general_purpose::STANDARD
            .decode(blob.blob.as_bytes())
            .map_err(|_| SkillError::NoContent {
                file: shown(file),
                reason: "its blob is not base64".to_owned(),
            }),
    }
}

/// `sha256:` and the lowercase hexadecimal SHA-256 of `bytes`, the form of
/// a [`SkillResource`]'s `digest`.
///
/// ```
/// assert_eq!(
///     mcp_proto::types::sha256_digest(b""),
///     "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
/// );
/// ```
pub fn sha256_digest(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in hash {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

fn is_sha256_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The YAML between the opening and closing `---` lines, if the text starts
/// with one.
fn frontmatter_block(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.trim_end_matches([' ', '\t']) == "---" {
            let yaml = &rest[..offset];
            return Some(
                yaml.strip_suffix('\n')
                    .map_or(yaml, |y| y.strip_suffix('\r').unwrap_or(y)),
            );
        }
        offset += line.len();
    }
    None
}

/// The frontmatter YAML as a JSON object.
fn parse_yaml_mapping(yaml: &str) -> Result<JsonObject, String> {
    let docs = yaml_rust2::YamlLoader::load_from_str(yaml)
        .map_err(|e| format!("its YAML does not parse: {}", shown(&e.to_string())))?;
    match docs.into_iter().next().map(yaml_to_json) {
        Some(Ok(Value::Object(map))) => Ok(map),
        Some(Ok(other)) => Err(format!(
            "its YAML is {}, not a mapping",
            super::json_kind(&other)
        )),
        Some(Err(reason)) => Err(reason),
        None => Err("its YAML block is empty".to_owned()),
    }
}

fn yaml_to_json(yaml: yaml_rust2::Yaml) -> Result<Value, String> {
    use yaml_rust2::Yaml;
    Ok(match yaml {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(n) => Value::Number(n.into()),
        Yaml::Real(text) => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::String(text), Value::Number),
        Yaml::String(text) => Value::String(text),
        Yaml::Array(items) => Value::Array(
            items
                .into_iter()
                .map(yaml_to_json)
                .collect::<Result<_, _>>()?,
        ),
        Yaml::Hash(hash) => {
            let mut map = JsonObject::new();
            for (key, value) in hash {
                let key = match key {
                    Yaml::String(text) | Yaml::Real(text) => text,
                    Yaml::Integer(n) => n.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    _ => return Err("a frontmatter key is not a scalar".to_owned()),
                };
                map.insert(key, yaml_to_json(value)?);
            }
            Value::Object(map)
        }
        Yaml::Alias(_) | Yaml::BadValue => {
            return Err("its YAML has an alias or a value that does not parse".to_owned());
        }
    })
}

/// JSON equality with numbers compared by value (`1` and `1.0` are equal),
/// as a YAML number and its JSON rendering are.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests;

//! `call --save DIR`: a result's images, audio and embedded blobs written to files, decoded from base64.
//!
//! Each binary block (MCP "Tools / Tool Result": `image`, `audio`, and an
//! embedded `resource` whose contents are a `blob`) becomes one file in
//! DIR named after the tool, the block's index in `content` (from 0, as in
//! `--json`) and an extension for its MIME type:
//! `get-tiny-image-1.png`; within a batch of calls the call's number comes
//! first (`get-tiny-image-2-1.png` for call 2). An existing file is never
//! replaced unless `--force` is given: the save fails and says so. DIR is
//! created when missing. Nothing a server sent chooses the directory: the
//! tool's name is reduced to letters, digits, `-`, `_` and `.`.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use mcp_proto::types::{ContentBlock, ResourceContents};

use crate::exit::CliError;

/// Where and how `--save` writes.
#[derive(Clone, Debug)]
pub(crate) struct Save {
    /// The directory the files go into.
    pub(crate) dir: PathBuf,
    /// Whether an existing file may be replaced (`--force`).
    pub(crate) force: bool,
}

/// The most bytes of the tool's name a file name keeps.
const NAME_LIMIT: usize = 64;

impl Save {
    /// Writes every binary block of `content`; the result holds, by block
    /// index, the file each was written to (`None` for the other blocks).
    /// `call` is the call's number within a batch, `None` for one call.
    pub(crate) fn blocks(
        &self,
        tool: &str,
        call: Option<usize>,
        content: &[ContentBlock],
    ) -> Result<Vec<Option<PathBuf>>, CliError> {
        let mut written = Vec::with_capacity(content.len());
        for (index, block) in content.iter().enumerate() {
            let Some((mime, data)) = binary(block) else {
                written.push(None);
                continue;
            };
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|e| {
                    CliError::connection(format!(
                        "content block {index} is not base64, so it was not saved: {e}"
                    ))
                    .code("invalid_result")
                })?;
            let call = call.map_or_else(String::new, |n| format!("-{n}"));
            let name = format!("{}{call}-{index}.{}", file_stem(tool), extension(mime));
            let path = self.dir.join(name);
            self.write(&path, &bytes)?;
            written.push(Some(path));
        }
        Ok(written)
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> Result<(), CliError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| {
            CliError::usage(format!("--save {}: {e}", self.dir.display())).code("write_failed")
        })?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true);
        if self.force {
            options.create(true).truncate(true);
        } else {
            options.create_new(true);
        }
        let mut file = options.open(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                CliError::usage(format!("{} exists; it was not replaced", path.display()))
                    .hint("pass --force to replace it, or --save another directory")
                    .code("file_exists")
            } else {
                CliError::usage(format!("cannot write {}: {e}", path.display()))
                    .code("write_failed")
            }
        })?;
        file.write_all(bytes).map_err(|e| {
            CliError::usage(format!("cannot write {}: {e}", path.display())).code("write_failed")
        })
    }
}

/// A binary block's MIME type and base64 data.
pub(crate) fn binary(block: &ContentBlock) -> Option<(&str, &str)> {
    match block {
        ContentBlock::Image(image) => Some((&image.mime_type, &image.data)),
        ContentBlock::Audio(audio) => Some((&audio.mime_type, &audio.data)),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::Blob(blob) => {
                Some((blob.mime_type.as_deref().unwrap_or(""), &blob.blob))
            }
            ResourceContents::Text(_) => None,
        },
        _ => None,
    }
}

/// The tool's name as the start of a file name: letters, digits, `-`, `_`
/// and `.` kept, anything else `_`, no leading dot, at most
/// [`NAME_LIMIT`] bytes.
fn file_stem(tool: &str) -> String {
    let stem: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(NAME_LIMIT)
        .collect();
    let stem = stem.trim_start_matches('.');
    if stem.is_empty() {
        "content".to_owned()
    } else {
        stem.to_owned()
    }
}

/// The usual file extension of a MIME type (its parameters ignored);
/// `bin` for one not known here.
fn extension(mime: &str) -> &'static str {
    let essence = mime.split(';').next().unwrap_or("").trim();
    match essence.to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "image/bmp" => "bmp",
        "image/avif" => "avif",
        "image/x-icon" | "image/vnd.microsoft.icon" => "ico",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/ogg" => "ogg",
        "audio/webm" => "weba",
        "audio/flac" | "audio/x-flac" => "flac",
        "audio/aac" => "aac",
        "audio/mp4" => "m4a",
        "application/pdf" => "pdf",
        "application/json" => "json",
        "application/zip" => "zip",
        "application/gzip" | "application/x-gzip" => "gz",
        "text/plain" => "txt",
        "text/html" => "html",
        "text/csv" => "csv",
        "text/markdown" => "md",
        _ => "bin",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_tool_and_the_mime_type_only() {
        assert_eq!(file_stem("get-tiny-image"), "get-tiny-image");
        assert_eq!(file_stem("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(file_stem(".hidden"), "hidden");
        assert_eq!(file_stem(""), "content");
        assert_eq!(file_stem(&"x".repeat(200)).len(), NAME_LIMIT);
        assert_eq!(extension("image/png"), "png");
        assert_eq!(extension("Audio/WAV; rate=8000"), "wav");
        assert_eq!(extension("application/x-unknown"), "bin");
        assert_eq!(extension("../png"), "bin");
    }
}

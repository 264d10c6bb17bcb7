//! The small owner-only JSON files beside the store (approvals, saved inputs): versioned rows, read afresh, written atomically.
//!
//! Each file is `{"version": 1, "<rows>": [ {...}, ... ]}`. Reads and writes
//! take the same two locks as the store (in-process, and an advisory lock
//! on `<file>.lock`), and writes go through the store's atomic owner-only
//! write. A file that is not such a document is an error naming it, and
//! is never overwritten: every write reads it first.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::store::{FileGuard, StoreError, create_parent_dir, lock_file, lock_for, write_private};

/// Why an approvals or saved-inputs file could not be used. Messages name
/// the file and never contain a saved value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrivateFileError {
    /// The data dir is unknown.
    #[error(transparent)]
    Location(#[from] StoreError),
    /// The file exists but cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The file is not what this build writes. It is left as it is and
    /// writes are refused until it is repaired or removed.
    #[error(
        "{} is malformed: {message}; it will not be overwritten, repair or remove it",
        path.display()
    )]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Writing failed; the previous file is intact.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

impl PrivateFileError {
    /// The stable code: the location's code, `unreadable_file`,
    /// `malformed_file` or `write_failed`.
    pub fn code(&self) -> &'static str {
        match self {
            PrivateFileError::Location(error) => error.code(),
            PrivateFileError::Read { .. } => "unreadable_file",
            PrivateFileError::Malformed { .. } => "malformed_file",
            PrivateFileError::Write { .. } => "write_failed",
        }
    }
}

/// One such file: its path, the name of its rows array, and its lock.
#[derive(Clone)]
pub(crate) struct PrivateFile {
    path: PathBuf,
    rows: &'static str,
    lock: Arc<Mutex<()>>,
}

impl fmt::Debug for PrivateFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivateFile")
            .field("path", &self.path)
            .finish()
    }
}

impl PrivateFile {
    /// The file at `path` whose rows are the array `rows`. No I/O.
    pub(crate) fn open(path: PathBuf, rows: &'static str) -> Self {
        let lock = lock_for(&path);
        PrivateFile { path, rows, lock }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Every row; none when the file is missing.
    pub(crate) fn read(&self) -> Result<Vec<Value>, PrivateFileError> {
        let _guard = self.guard()?;
        self.read_unlocked()
    }

    /// Reads the rows, lets `change` edit them and writes them back when it
    /// returns `true`.
    pub(crate) fn update(
        &self,
        change: impl FnOnce(&mut Vec<Value>) -> bool,
    ) -> Result<(), PrivateFileError> {
        let write_error = |source| PrivateFileError::Write {
            path: self.path.clone(),
            source,
        };
        create_parent_dir(&self.path).map_err(write_error)?;
        let _guard = self.guard()?;
        let mut rows = self.read_unlocked()?;
        if !change(&mut rows) {
            return Ok(());
        }
        let document = Document {
            rows_key: self.rows,
            rows: &rows,
        };
        let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
        text.push('\n');
        write_private(&self.path, text.as_bytes()).map_err(write_error)
    }

    /// A malformed-file error for this file.
    pub(crate) fn malformed(&self, message: String) -> PrivateFileError {
        PrivateFileError::Malformed {
            path: self.path.clone(),
            message,
        }
    }

    fn guard(&self) -> Result<FileGuard<'_>, PrivateFileError> {
        lock_file(&self.path, &self.lock)
            .map_err(|(path, source)| PrivateFileError::Write { path, source })
    }

    fn read_unlocked(&self) -> Result<Vec<Value>, PrivateFileError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(PrivateFileError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        // serde_json's messages quote no input, only positions.
        let document: Value = serde_json::from_slice(&bytes)
            .map_err(|e| self.malformed(format!("not valid JSON: {e}")))?;
        match document.get("version").and_then(Value::as_u64) {
            Some(1) => {}
            Some(other) => {
                return Err(self.malformed(format!("version {other}; this build reads version 1")));
            }
            None => return Err(self.malformed("`version` is missing or not a number".into())),
        }
        match document.get(self.rows) {
            Some(Value::Array(rows)) => Ok(rows.clone()),
            _ => Err(self.malformed(format!("`{}` is missing or not an array", self.rows))),
        }
    }
}

/// The string `key` of `row` number `index`, or a malformed-file error naming it.
pub(crate) fn row_text(
    file: &PrivateFile,
    row: &Value,
    index: usize,
    key: &str,
) -> Result<String, PrivateFileError> {
    row.get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            file.malformed(format!(
                "`{}[{index}].{key}` is missing or not a string",
                file.rows
            ))
        })
}

/// A private file's document: `version` first, then the rows under their
/// key, in that order whatever `serde_json::Map` is built with.
struct Document<'a> {
    rows_key: &'a str,
    rows: &'a [Value],
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("version", &1)?;
        map.serialize_entry(self.rows_key, self.rows)?;
        map.end()
    }
}

//! Saved answers to `${input:ID}` prompts: write-only secrets in an owner-only file beside the store, kept only when the person says so.
//!
//! VS Code's `inputs` belong to the file that declares them, so an answer is
//! saved under the canonical path of that file and the input's id. The file,
//! `inputs.json` in the data dir, is written atomically with mode 0600 (see
//! the store) and holds the values in plain JSON there, never in the
//! project. Nothing here lists values: [`InputStore::answer`] hands one out
//! for resolving, as a [`Secret`].

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::expand::Environment;
use crate::private_file::{PrivateFile, PrivateFileError, row_text};
use crate::secret::Secret;
use crate::store::StoreLocation;

/// The saved answers' file name inside the data dir.
pub const INPUTS_FILE_NAME: &str = "inputs.json";

/// The saved answers (see the module documentation).
///
/// ```
/// use mcp_config::{InputStore, Secret};
///
/// let dir = tempfile::tempdir()?;
/// let store = InputStore::open(dir.path().join("inputs.json"));
/// let source = dir.path().join("mcp.json");
/// assert_eq!(store.answer(&source, "token")?, None);
/// store.save(&source, "token", &Secret::new("t0k3n"))?;
/// assert_eq!(store.answer(&source, "token")?.unwrap().expose(), "t0k3n");
/// assert!(store.forget(&source, "token")?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct InputStore {
    file: PrivateFile,
}

impl InputStore {
    /// The file at `path`. Does no I/O; a missing file holds no answers.
    pub fn open(path: impl Into<PathBuf>) -> Self {
        InputStore {
            file: PrivateFile::open(path.into(), "inputs"),
        }
    }

    /// `inputs.json` in the data dir of `location`.
    pub fn open_default<E: Environment + ?Sized>(
        location: &StoreLocation,
        env: &E,
    ) -> Result<Self, PrivateFileError> {
        Ok(InputStore::open(
            location.data_dir(env)?.join(INPUTS_FILE_NAME),
        ))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The saved answer to input `id` of the file `source`, if any.
    pub fn answer(&self, source: &Path, id: &str) -> Result<Option<Secret>, PrivateFileError> {
        let scope = scope(source);
        let rows = self.file.read()?;
        for (index, row) in rows.iter().enumerate() {
            if row_text(&self.file, row, index, "source")? == scope
                && row_text(&self.file, row, index, "id")? == id
            {
                return Ok(Some(Secret::new(row_text(
                    &self.file, row, index, "value",
                )?)));
            }
        }
        Ok(None)
    }

    /// Saves `value` as the answer to input `id` of `source`, replacing an
    /// earlier one.
    pub fn save(&self, source: &Path, id: &str, value: &Secret) -> Result<(), PrivateFileError> {
        let scope = scope(source);
        let mut checked = Ok(());
        self.file.update(|rows| {
            checked = self.check(rows);
            if checked.is_err() {
                return false;
            }
            rows.retain(|row| !same(row, &scope, id));
            rows.push(json!({"source": scope, "id": id, "value": value.expose()}));
            true
        })?;
        checked
    }

    /// Forgets the answer to input `id` of `source`. Returns whether there was one.
    pub fn forget(&self, source: &Path, id: &str) -> Result<bool, PrivateFileError> {
        let scope = scope(source);
        let mut checked = Ok(false);
        self.file.update(|rows| {
            checked = self.check(rows).map(|()| {
                let before = rows.len();
                rows.retain(|row| !same(row, &scope, id));
                rows.len() != before
            });
            matches!(checked, Ok(true))
        })?;
        checked
    }

    fn check(&self, rows: &[Value]) -> Result<(), PrivateFileError> {
        for (index, row) in rows.iter().enumerate() {
            for key in ["source", "id", "value"] {
                row_text(&self.file, row, index, key)?;
            }
        }
        Ok(())
    }
}

fn same(row: &Value, scope: &str, id: &str) -> bool {
    row.get("source").and_then(Value::as_str) == Some(scope)
        && row.get("id").and_then(Value::as_str) == Some(id)
}

/// The canonical path of the declaring file, as a key.
fn scope(source: &Path) -> String {
    std::fs::canonicalize(source)
        .or_else(|_| std::path::absolute(source))
        .unwrap_or_else(|_| source.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn answers_are_owner_only_and_a_corrupt_file_is_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data/inputs.json");
        let store = InputStore::open(&path);
        let source = dir.path().join("a/mcp.json");
        store.save(&source, "t", &Secret::new("one")).unwrap();
        store.save(&source, "t", &Secret::new("two")).unwrap();
        assert_eq!(store.answer(&source, "t").unwrap().unwrap().expose(), "two");
        assert_eq!(store.answer(&dir.path().join("b.json"), "t").unwrap(), None);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);

        std::fs::write(&path, r#"{"version": 1, "inputs": [{"source": 1}]}"#).unwrap();
        let error = store
            .save(&source, "t", &Secret::new("SECRET"))
            .unwrap_err();
        assert_eq!(error.code(), "malformed_file");
        assert!(!error.to_string().contains("SECRET"), "{error}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            r#"{"version": 1, "inputs": [{"source": 1}]}"#
        );
    }
}

//! The store: `mcp.json` (version 1), written atomically and owner-only, with write-only secrets.
//!
//! The rules:
//!
//! - The file is `<data dir>/mcp.json`. The data dir is the application's
//!   directory in the platform's data directory (`$XDG_DATA_HOME/APP`,
//!   `~/.local/share/APP`, ...) unless the application's variable or the
//!   shared `LOOP_DATA_DIR` ([`DATA_DIR_ENV`]) names another; a store left
//!   in the old `~/.loop` is still found. See [`StoreLocation`].
//! - A missing file means no servers. A malformed file is an error naming
//!   the file and the position, and it is never overwritten: every write
//!   re-reads the file first and refuses while it is malformed. Repairing
//!   the file by hand is enough; nothing is cached.
//! - Writes are serialized, within a process and across processes (a host
//!   and `mcpctl` may edit the same store): an in-process lock per file (two
//!   `Store`s opened on the same path share it) plus an advisory exclusive
//!   lock on `mcp.json.lock` beside the store, both held across read, merge
//!   and write, so concurrent saves all land, each on top of the previous
//!   one. The file is written to a temp file in the same directory,
//!   fsynced, renamed over `mcp.json`, and the directory is fsynced; on
//!   POSIX the file is mode 0600 and a directory the store creates is 0700.
//!   A crash leaves the old or the new file, never a mix; a temp file a
//!   killed writer left behind is removed by the next write.
//! - [`Store::list`] never returns secret values: literal env and header
//!   values come back as [`SecretValue::Saved`](crate::SecretValue::Saved) (`"value": "", "saved": true`).
//! - [`Store::save`]: a `Saved` row keeps the stored value of the same key; a
//!   removed row deletes it; a new value replaces it. Changing a stdio
//!   command, args or cwd, an HTTP URL, or the transport drops kept secrets
//!   (they were entered for another program or endpoint) unless re-entered,
//!   and the outcome lists every dropped one.
//! - Legacy `approvalMode` and `toolPolicies` are ignored on read and gone
//!   after the next write.
//!
//! Every operation is synchronous and holds the lock for one small read and
//! at most one fsynced write (milliseconds). A tokio host should call it from
//! `spawn_blocking`; the lock is never held across an `.await` because the
//! API has none.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

use crate::diagnostic::Diagnostic;
use crate::expand::Environment;
use crate::format::{DocumentError, Format, parse_document, write_store_v1};
use crate::hosts::Os;
use crate::model::{SecretEntry, ServerConfig, TransportConfig};
use crate::validate::validate;

/// The shared layout's variable: a data dir every [`StoreLocation`] honours
/// after the application's own variable ("LOOP_DATA_DIR changes the root"),
/// for hosts that keep their files there.
pub const DATA_DIR_ENV: &str = "LOOP_DATA_DIR";

/// The store's file name inside the data dir.
pub const STORE_FILE_NAME: &str = "mcp.json";

/// The data dir under the home directory that stores used before they moved
/// to the platform's data directory: `~/.loop`.
pub const LEGACY_HOME_SUBDIR: &str = ".loop";

/// Where an application's data dir, and so its store (`mcp.json`), lives.
///
/// The data dir is the first of:
///
/// 1. the application's own variable ([`StoreLocation::data_dir_env`], e.g.
///    `MCPCTL_DATA_DIR`), when set and not empty;
/// 2. the shared layout's variable ([`DATA_DIR_ENV`], `LOOP_DATA_DIR`), when
///    set and not empty;
/// 3. the application's directory ([`StoreLocation::app_dir`]) in the
///    platform's data directory: on Linux `$XDG_DATA_HOME` (when absolute,
///    as the XDG base directory rules say), else `~/.local/share`; on macOS
///    `~/Library/Application Support`; on Windows `%APPDATA%`, else
///    `~\AppData\Roaming`.
///
/// A store that still lives in the old place, `~/.loop/mcp.json`, is found
/// by [`StoreLocation::legacy_store_path`]; nothing is moved.
///
/// ```
/// use std::collections::HashMap;
/// use std::path::Path;
/// use mcp_config::{Os, StoreLocation};
///
/// let location = StoreLocation::new("MYAPP_DATA_DIR", "myapp").with_os(Os::Linux);
/// let env = HashMap::from([("HOME".to_owned(), "/home/u".to_owned())]);
/// assert_eq!(location.store_path(&env)?, Path::new("/home/u/.local/share/myapp/mcp.json"));
/// let env = HashMap::from([
///     ("HOME".to_owned(), "/home/u".to_owned()),
///     ("XDG_DATA_HOME".to_owned(), "/data".to_owned()),
/// ]);
/// assert_eq!(location.store_path(&env)?, Path::new("/data/myapp/mcp.json"));
/// let env = HashMap::from([("LOOP_DATA_DIR".to_owned(), "/srv/loop".to_owned())]);
/// assert_eq!(location.store_path(&env)?, Path::new("/srv/loop/mcp.json"));
/// let env = HashMap::from([
///     ("LOOP_DATA_DIR".to_owned(), "/srv/loop".to_owned()),
///     ("MYAPP_DATA_DIR".to_owned(), "/srv/myapp".to_owned()),
/// ]);
/// assert_eq!(location.data_dir(&env)?, Path::new("/srv/myapp"));
/// # Ok::<(), mcp_config::StoreError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreLocation {
    /// The application's own variable naming its data dir, checked first.
    pub data_dir_env: String,
    /// The shared layout's variable, checked second; `None` consults none.
    /// [`StoreLocation::new`] sets [`DATA_DIR_ENV`].
    pub shared_data_dir_env: Option<String>,
    /// The application's directory inside the platform's data directory.
    pub app_dir: String,
    /// The old data dir under the home directory whose `mcp.json`
    /// [`StoreLocation::legacy_store_path`] still finds; `None` looks for
    /// none. [`StoreLocation::new`] sets [`LEGACY_HOME_SUBDIR`].
    pub legacy_home_subdir: Option<String>,
    /// The system whose conventions apply. [`StoreLocation::new`] sets
    /// [`Os::current`].
    pub os: Os,
}

impl StoreLocation {
    /// The location of the application that names its data dir with the
    /// variable `data_dir_env` and calls its directory in the platform's
    /// data directory `app_dir`; `LOOP_DATA_DIR` and the old `~/.loop` are
    /// honoured as described on [`StoreLocation`].
    pub fn new(data_dir_env: impl Into<String>, app_dir: impl Into<String>) -> Self {
        StoreLocation {
            data_dir_env: data_dir_env.into(),
            shared_data_dir_env: Some(DATA_DIR_ENV.to_owned()),
            app_dir: app_dir.into(),
            legacy_home_subdir: Some(LEGACY_HOME_SUBDIR.to_owned()),
            os: Os::current(),
        }
    }

    /// The same location on another system's conventions.
    #[must_use]
    pub fn with_os(mut self, os: Os) -> Self {
        self.os = os;
        self
    }

    /// The data dir, from `env`; fails only when no variable names one and
    /// there is no home directory to find the platform's data directory in.
    pub fn data_dir<E: Environment + ?Sized>(&self, env: &E) -> Result<PathBuf, StoreError> {
        if let Some(dir) = self.dir_from_variables(env) {
            return Ok(dir);
        }
        let var = |name: &str| env.var(name).filter(|value| !value.is_empty());
        let home = || {
            self.home(env).ok_or_else(|| StoreError::NoDataDir {
                var: self.data_dir_env.clone(),
            })
        };
        let base = match self.os {
            Os::Windows => match var("APPDATA") {
                Some(appdata) => PathBuf::from(appdata),
                None => home()?.join("AppData").join("Roaming"),
            },
            Os::MacOs => home()?.join("Library").join("Application Support"),
            Os::Linux => match var("XDG_DATA_HOME").map(PathBuf::from) {
                Some(dir) if dir.is_absolute() => dir,
                _ => home()?.join(".local").join("share"),
            },
        };
        Ok(base.join(&self.app_dir))
    }

    /// The store file, from `env`.
    pub fn store_path<E: Environment + ?Sized>(&self, env: &E) -> Result<PathBuf, StoreError> {
        Ok(self.data_dir(env)?.join(STORE_FILE_NAME))
    }

    /// The store in the old place (`~/.loop/mcp.json`) when it is the one a
    /// person still has: no variable names a data dir, the old file exists,
    /// and the store's own place ([`StoreLocation::store_path`]) has none.
    /// `None` otherwise. Looks at the file system; moves nothing, so a host
    /// can read (or keep writing) the old file and tell the person where it
    /// belongs now.
    pub fn legacy_store_path<E: Environment + ?Sized>(&self, env: &E) -> Option<PathBuf> {
        if self.dir_from_variables(env).is_some() {
            return None;
        }
        let legacy = self
            .home(env)?
            .join(self.legacy_home_subdir.as_ref()?)
            .join(STORE_FILE_NAME);
        let current = self.store_path(env).ok()?;
        (legacy != current && legacy.is_file() && !current.exists()).then_some(legacy)
    }

    /// The data dir a variable names: the application's, then the shared one.
    fn dir_from_variables<E: Environment + ?Sized>(&self, env: &E) -> Option<PathBuf> {
        std::iter::once(&self.data_dir_env)
            .chain(self.shared_data_dir_env.as_ref())
            .find_map(|name| env.var(name).filter(|dir| !dir.is_empty()))
            .map(PathBuf::from)
    }

    /// The home directory: `HOME`, on Windows `USERPROFILE` first.
    fn home<E: Environment + ?Sized>(&self, env: &E) -> Option<PathBuf> {
        let var = |name: &str| env.var(name).filter(|value| !value.is_empty());
        match self.os {
            Os::Windows => var("USERPROFILE").or_else(|| var("HOME")),
            Os::Linux | Os::MacOs => var("HOME"),
        }
        .map(PathBuf::from)
    }
}

/// Why a store operation failed. Messages never contain secret values.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No variable names a data dir and there is no home directory.
    #[error("no data directory: set {var} or HOME")]
    NoDataDir {
        /// The application's data dir variable.
        var: String,
    },
    /// The file exists but cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The store file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The file is malformed. It is left as it is and writes are refused
    /// until it is repaired.
    #[error(
        "{} is malformed at {position}: {message}; it will not be overwritten, repair it and try again",
        path.display()
    )]
    Malformed {
        /// The store file.
        path: PathBuf,
        /// `line L column C`, or the JSON path of the bad entry.
        position: String,
        /// What is wrong.
        message: String,
    },
    /// The file has a version this build does not read; a newer build wrote
    /// it, so it is not overwritten.
    #[error(
        "{} has store version {found}; this build reads version 1 and will not overwrite it",
        path.display()
    )]
    UnsupportedVersion {
        /// The store file.
        path: PathBuf,
        /// The version found.
        found: String,
    },
    /// Writing failed; the previous file is intact.
    #[error("cannot write {}", path.display())]
    Write {
        /// The store file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// `create` with an id that is already stored.
    #[error("a server with id `{id}` already exists")]
    DuplicateId {
        /// The id.
        id: String,
    },
    /// No server has this id.
    #[error("no server with id `{id}`")]
    NotFound {
        /// The id.
        id: String,
    },
    /// The config does not validate; nothing was written.
    #[error("server `{id}` is not valid: {}", Diagnostic::summary(diagnostics))]
    Invalid {
        /// The server's id.
        id: String,
        /// Every problem.
        diagnostics: Vec<Diagnostic>,
    },
}

impl StoreError {
    /// The stable code: `no_data_dir`, `unreadable_source`, `malformed_store`,
    /// `unsupported_version`, `write_failed`, `duplicate_id`, `not_found` or
    /// `invalid_config`.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::NoDataDir { .. } => "no_data_dir",
            StoreError::Read { .. } => "unreadable_source",
            StoreError::Malformed { .. } => "malformed_store",
            StoreError::UnsupportedVersion { .. } => "unsupported_version",
            StoreError::Write { .. } => "write_failed",
            StoreError::DuplicateId { .. } => "duplicate_id",
            StoreError::NotFound { .. } => "not_found",
            StoreError::Invalid { .. } => "invalid_config",
        }
    }
}

/// What a save did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SaveOutcome {
    /// Whether the server is new.
    pub created: bool,
    /// Kept secrets that were dropped instead; the user must enter them again.
    pub dropped_secrets: Vec<DroppedSecret>,
}

/// A "keep the saved value" row that could not be kept.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DroppedSecret {
    /// Where the row was in the submitted config, e.g. `transport.env[1]`.
    pub field: String,
    /// The env variable or header name.
    pub key: String,
    /// Why it was dropped.
    pub reason: DropReason,
}

/// Why a kept secret was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DropReason {
    /// The command, args, cwd, URL or transport changed (the
    /// secret must be entered again for the new program or endpoint).
    ConnectionChanged,
    /// Nothing is stored under that key for this server.
    NotStored,
}

/// The store. Cheap to open; every call reads the file afresh.
///
/// To let [`Discovery`](crate::Discovery) see stored servers, add the same
/// file as a source: `FileSource::new(store.path(), ConfigLevel::User,
/// "Loop").with_format(Format::StoreV1)`. Its atomic writes mean such a
/// reader never sees a half-written file.
///
/// ```
/// use mcp_config::{SecretEntry, SecretValue, ServerConfig, StdioConfig, Store, TransportConfig};
///
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path().join("mcp.json"));
///
/// let mut stdio = StdioConfig::new("gh-mcp");
/// stdio.env.push(SecretEntry::new("GH_TOKEN", "ghp_example"));
/// store.create(ServerConfig::new("gh", TransportConfig::Stdio(stdio)))?;
///
/// // list() hands out no secret values ...
/// let mut listed = store.list()?.remove(0);
/// let TransportConfig::Stdio(stdio) = &mut listed.transport else { unreachable!() };
/// assert_eq!(stdio.env[0].value, SecretValue::Saved);
///
/// // ... and sending the marker back keeps the stored value,
/// listed.name = "GitHub".into();
/// let outcome = store.save(listed.clone())?;
/// assert!(outcome.dropped_secrets.is_empty());
/// let TransportConfig::Stdio(stdio) = &store.load()?[0].transport else { unreachable!() };
/// assert_eq!(stdio.env[0].value, SecretValue::literal("ghp_example"));
///
/// // unless the command line changed: then it must be entered again.
/// let TransportConfig::Stdio(stdio) = &mut listed.transport else { unreachable!() };
/// stdio.args.push("--verbose".into());
/// let outcome = store.save(listed)?;
/// assert_eq!(outcome.dropped_secrets[0].key, "GH_TOKEN");
///
/// store.set_enabled("gh", false)?;
/// assert!(!store.list()?[0].enabled);
/// store.remove("gh")?;
/// assert!(store.list()?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    lock: Arc<Mutex<()>>,
}

impl Store {
    /// A store at `path`. Does no I/O; a missing file is an empty store.
    pub fn open(path: impl Into<PathBuf>) -> Store {
        let path = path.into();
        let lock = lock_for(&path);
        Store { path, lock }
    }

    /// The store at [`StoreLocation::store_path`] (a store still in the old
    /// place is [`StoreLocation::legacy_store_path`]'s to find).
    pub fn open_default<E: Environment + ?Sized>(
        location: &StoreLocation,
        env: &E,
    ) -> Result<Store, StoreError> {
        Ok(Store::open(location.store_path(env)?))
    }

    /// The store file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every stored server, in file order, with literal env and header values
    /// replaced by [`SecretValue::Saved`](crate::SecretValue::Saved). Waits for writes in progress.
    pub fn list(&self) -> Result<Vec<ServerConfig>, StoreError> {
        let _guard = self.guard()?;
        Ok(self.read()?.iter().map(ServerConfig::redacted).collect())
    }

    /// Every stored server with its secret values, for connecting. Never
    /// show these to a person.
    pub fn load(&self) -> Result<Vec<ServerConfig>, StoreError> {
        let _guard = self.guard()?;
        self.read()
    }

    /// The problems of `id` as a new id a person gives for this store: it
    /// must be one or more letters, digits, `_`, `-` and `.` (at most 64),
    /// since it is typed on command lines (`mcpctl call ID`) and becomes
    /// part of tool names. Other applications' files allow any text; their
    /// servers are still copied in as they are ([`Store::create`] does not
    /// apply this rule), so this is for the places a person types an id.
    ///
    /// ```
    /// use mcp_config::Store;
    /// assert!(Store::id_problems("github-2").is_empty());
    /// assert_eq!(Store::id_problems("my server")[0].code(), "invalid_id");
    /// ```
    pub fn id_problems(id: &str) -> Vec<crate::Diagnostic> {
        let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if id.is_empty() || (id.len() <= 64 && id.chars().all(valid)) {
            // An empty id is `missing_id`, `validate`'s.
            return Vec::new();
        }
        vec![crate::Diagnostic::new(
            crate::Code::InvalidId,
            None,
            "id",
            "use only letters, digits, `_`, `-` and `.` (at most 64): the id is typed in commands and names the server's tools",
        )]
    }

    /// Adds a new server; fails with `duplicate_id` if the id is stored.
    pub fn create(&self, config: ServerConfig) -> Result<SaveOutcome, StoreError> {
        self.put(config, true)
    }

    /// Adds or replaces the server with `config.id` (replacing keeps its
    /// position). See the module documentation for kept secrets.
    pub fn save(&self, config: ServerConfig) -> Result<SaveOutcome, StoreError> {
        self.put(config, false)
    }

    /// Sets a server's enabled flag. Returns whether it changed (the file is
    /// not rewritten when it did not).
    pub fn set_enabled(&self, id: &str, enabled: bool) -> Result<bool, StoreError> {
        let _guard = self.write_guard()?;
        let mut servers = self.read()?;
        let server = servers
            .iter_mut()
            .find(|server| server.id == id)
            .ok_or_else(|| StoreError::NotFound { id: id.to_owned() })?;
        if server.enabled == enabled {
            return Ok(false);
        }
        server.enabled = enabled;
        self.write(&servers)?;
        Ok(true)
    }

    /// Removes a server and its secrets.
    pub fn remove(&self, id: &str) -> Result<(), StoreError> {
        let _guard = self.write_guard()?;
        let mut servers = self.read()?;
        let index = servers
            .iter()
            .position(|server| server.id == id)
            .ok_or_else(|| StoreError::NotFound { id: id.to_owned() })?;
        servers.remove(index);
        self.write(&servers)
    }

    fn put(&self, mut config: ServerConfig, create: bool) -> Result<SaveOutcome, StoreError> {
        let _guard = self.write_guard()?;
        let mut servers = self.read()?;
        let existing = servers.iter().position(|server| server.id == config.id);
        if create && existing.is_some() {
            return Err(StoreError::DuplicateId { id: config.id });
        }
        let dropped_secrets =
            merge_kept_secrets(&mut config, existing.map(|index| &servers[index]));
        let diagnostics = validate(&config);
        if !diagnostics.is_empty() {
            return Err(StoreError::Invalid {
                id: config.id,
                diagnostics,
            });
        }
        match existing {
            Some(index) => servers[index] = config,
            None => servers.push(config),
        }
        self.write(&servers)?;
        Ok(SaveOutcome {
            created: existing.is_none(),
            dropped_secrets,
        })
    }

    /// Takes the in-process lock, then the cross-process lock file. For a
    /// read of a store whose directory does not exist yet there is nothing
    /// to lock against (and nothing to read); writes create the directory.
    fn guard(&self) -> Result<FileGuard<'_>, StoreError> {
        lock_file(&self.path, &self.lock).map_err(|(lock_path, source)| StoreError::Write {
            path: lock_path,
            source,
        })
    }

    /// Like [`Store::guard`], creating the store's directory first so the
    /// lock file can exist before the first write.
    fn write_guard(&self) -> Result<FileGuard<'_>, StoreError> {
        create_private_dir(&store_dir(&self.path)).map_err(|source| StoreError::Write {
            path: self.path.clone(),
            source,
        })?;
        self.guard()
    }

    /// Reads and parses the file. Any entry that does not parse makes the
    /// whole file malformed here: writing the others back would delete it.
    fn read(&self) -> Result<Vec<ServerConfig>, StoreError> {
        let text = match fs::read(&self.path) {
            Ok(bytes) => String::from_utf8(bytes).map_err(|_| StoreError::Malformed {
                path: self.path.clone(),
                position: String::from("line 1 column 1"),
                message: String::from("the file is not valid UTF-8"),
            })?,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(StoreError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let document =
            parse_document(&text, Some(Format::StoreV1)).map_err(|error| match error {
                DocumentError::UnsupportedVersion { found } => StoreError::UnsupportedVersion {
                    path: self.path.clone(),
                    found,
                },
                other => StoreError::Malformed {
                    path: self.path.clone(),
                    position: other.position(),
                    message: match &other {
                        DocumentError::Syntax { message, .. } => {
                            format!("not valid JSON: {message}")
                        }
                        DocumentError::Shape { message, .. } => message.clone(),
                        _ => other.to_string(),
                    },
                },
            })?;
        let mut servers = Vec::with_capacity(document.entries.len());
        for entry in document.entries {
            match entry {
                Ok(server) => servers.push(server),
                Err(error) => {
                    return Err(StoreError::Malformed {
                        path: self.path.clone(),
                        position: error
                            .diagnostics
                            .first()
                            .map(|d| d.field.clone())
                            .unwrap_or_default(),
                        message: error.to_string(),
                    });
                }
            }
        }
        Ok(servers)
    }

    /// Writes the file atomically and owner-only ([`write_private`]).
    fn write(&self, servers: &[ServerConfig]) -> Result<(), StoreError> {
        write_private(&self.path, write_store_v1(servers).as_bytes()).map_err(|source| {
            StoreError::Write {
                path: self.path.clone(),
                source,
            }
        })
    }
}

/// Takes the in-process `lock` of `path`, then the advisory lock on
/// `<path>.lock` beside it, and holds both until the guard drops. When the
/// directory does not exist yet there is nothing to lock against (nor to
/// read), and only the in-process lock is taken. An error names the lock file.
pub(crate) fn lock_file<'a>(
    path: &Path,
    lock: &'a Mutex<()>,
) -> Result<FileGuard<'a>, (PathBuf, io::Error)> {
    // The mutex guards no data, only the file; a panic elsewhere while
    // holding it leaves nothing inconsistent in memory.
    let thread = mcp_proto::sync::lock(lock);
    let dir = store_dir(path);
    if !dir.exists() {
        return Ok(FileGuard {
            _thread: thread,
            _process: None,
        });
    }
    let lock_path = lock_path(path);
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .and_then(|file| {
            restrict_to_owner(&file)?;
            file.lock()?;
            Ok(file)
        })
        .map_err(|source| (lock_path, source))?;
    Ok(FileGuard {
        _thread: thread,
        _process: Some(file),
    })
}

/// Creates the directory of `path` owner-only (0700 on POSIX) when it is missing.
pub(crate) fn create_parent_dir(path: &Path) -> io::Result<()> {
    create_private_dir(&store_dir(path))
}

/// Replaces `path` with `bytes` atomically and owner-only: a temp file in
/// the same directory (so the rename cannot cross file systems), mode 0600
/// on POSIX, fsynced, renamed over `path`, then the directory fsynced so the
/// rename itself survives a power cut. A crash leaves the old or the new
/// file, never a mix; temp files a killed writer left behind are removed.
/// Call it with [`lock_file`]'s guard held.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = store_dir(path);
    create_private_dir(&dir)?;
    let file_name = path
        .file_name()
        .map_or_else(|| STORE_FILE_NAME.into(), |name| name.to_string_lossy());
    let prefix = format!(".{file_name}.");
    remove_stale_temps(&dir, &prefix);
    let mut temp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    restrict_to_owner(temp.as_file())?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|error| error.error)?;
    sync_dir(&dir)
}

/// Removes temp files a writer left behind when it was killed between
/// creating its temp file and renaming it (SIGKILL, a power cut): they hold
/// a whole copy of the store, secrets included. Called with both locks held,
/// so no live writer owns one. Best effort: a file that cannot be removed
/// stays, and the write goes on.
fn remove_stale_temps(dir: &Path, prefix: &str) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let stale = name.starts_with(prefix)
            && name.ends_with(".tmp")
            && entry.file_type().is_ok_and(|kind| kind.is_file());
        if stale {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Both locks of a file operation; dropping it releases them (closing the
/// lock file releases the advisory lock).
pub(crate) struct FileGuard<'a> {
    _thread: MutexGuard<'a, ()>,
    _process: Option<fs::File>,
}

/// The directory that holds the store file.
fn store_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The advisory lock file beside the store: `mcp.json.lock`. It is never
/// renamed over, unlike the store itself, so every process locks the same
/// inode.
fn lock_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map_or_else(|| STORE_FILE_NAME.into(), |n| n.to_os_string());
    name.push(".lock");
    store_dir(path).join(name)
}

/// Kept-secret rules, applied to `config` against the stored
/// `previous` version. Returns the rows that were dropped.
fn merge_kept_secrets(
    config: &mut ServerConfig,
    previous: Option<&ServerConfig>,
) -> Vec<DroppedSecret> {
    let changed =
        previous.is_some_and(|previous| connection_changed(&previous.transport, &config.transport));
    let previous_rows: &[SecretEntry] = match previous.map(|p| &p.transport) {
        Some(TransportConfig::Stdio(stdio)) => &stdio.env,
        Some(TransportConfig::Http(http) | TransportConfig::Sse(http)) => &http.headers,
        None => &[],
    };
    // Env names are case-sensitive; header names are not (RFC 9110 §5.1).
    let (rows, list, case_insensitive) = match &mut config.transport {
        TransportConfig::Stdio(stdio) => (&mut stdio.env, "env", false),
        TransportConfig::Http(http) | TransportConfig::Sse(http) => {
            (&mut http.headers, "headers", true)
        }
    };
    let mut dropped = Vec::new();
    let mut kept = Vec::with_capacity(rows.len());
    for (index, row) in std::mem::take(rows).into_iter().enumerate() {
        if !row.value.is_saved() {
            kept.push(row);
            continue;
        }
        let stored = previous_rows.iter().find(|old| {
            if case_insensitive {
                old.key.eq_ignore_ascii_case(&row.key)
            } else {
                old.key == row.key
            }
        });
        let reason = match stored {
            _ if changed => DropReason::ConnectionChanged,
            Some(old) => {
                kept.push(SecretEntry {
                    key: row.key,
                    value: old.value.clone(),
                });
                continue;
            }
            None => DropReason::NotStored,
        };
        dropped.push(DroppedSecret {
            field: format!("transport.{list}[{index}]"),
            key: row.key,
            reason,
        });
    }
    *rows = kept;
    dropped
}

/// The rule: "Changing a STDIO command, arguments or cwd, or an HTTP URL,
/// requires re-entering preserved secrets." A different transport is a
/// different connection too.
fn connection_changed(old: &TransportConfig, new: &TransportConfig) -> bool {
    let cwd = |cwd: &Option<String>| cwd.clone().filter(|cwd| !cwd.is_empty());
    match (old, new) {
        (TransportConfig::Stdio(old), TransportConfig::Stdio(new)) => {
            old.command != new.command || old.args != new.args || cwd(&old.cwd) != cwd(&new.cwd)
        }
        (TransportConfig::Http(old), TransportConfig::Http(new))
        | (TransportConfig::Sse(old), TransportConfig::Sse(new)) => old.url != new.url,
        _ => true,
    }
}

/// One lock per store file in this process, so that two `Store`s opened on
/// the same path still serialize their writes.
pub(crate) fn lock_for(path: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Weak<Mutex<()>>>>> = OnceLock::new();
    let key = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut locks = LOCKS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(lock) = locks.get(&key).and_then(Weak::upgrade) {
        return lock;
    }
    locks.retain(|_, lock| lock.strong_count() > 0);
    let lock = Arc::new(Mutex::new(()));
    locks.insert(key, Arc::downgrade(&lock));
    lock
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)
}

/// Owner-only file mode on POSIX. The temp file is created 0600
/// already; setting it again makes the guarantee independent of that.
#[cfg(unix)]
fn restrict_to_owner(file: &fs::File) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(fs::Permissions::from_mode(0o600))
}

/// On Windows the protection follows the directory's ACL.
#[cfg(not(unix))]
fn restrict_to_owner(_file: &fs::File) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

/// Windows cannot open a directory as a file; `MoveFileEx` (used by the
/// rename) is durable enough there.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(vars: &[(&str, &str)]) -> HashMap<String, String> {
        vars.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn app(os: Os) -> StoreLocation {
        StoreLocation::new("APP_DATA_DIR", "app").with_os(os)
    }

    #[test]
    fn the_apps_variable_wins_then_the_shared_one_then_the_platform_dir() {
        let all = [
            ("APP_DATA_DIR", "/a"),
            ("LOOP_DATA_DIR", "/l"),
            ("XDG_DATA_HOME", "/x"),
            ("HOME", "/h"),
        ];
        let location = app(Os::Linux);
        assert_eq!(location.data_dir(&env(&all)).unwrap(), Path::new("/a"));
        assert_eq!(location.data_dir(&env(&all[1..])).unwrap(), Path::new("/l"));
        assert_eq!(
            location.data_dir(&env(&all[2..])).unwrap(),
            Path::new("/x/app")
        );
        assert_eq!(
            location.data_dir(&env(&all[3..])).unwrap(),
            Path::new("/h/.local/share/app")
        );
        // Empty means unset, at every step.
        let empty = [
            ("APP_DATA_DIR", ""),
            ("LOOP_DATA_DIR", ""),
            ("XDG_DATA_HOME", ""),
            ("HOME", "/h"),
        ];
        assert_eq!(
            location.store_path(&env(&empty)).unwrap(),
            Path::new("/h/.local/share/app/mcp.json")
        );
    }

    #[test]
    fn a_relative_xdg_data_home_is_ignored() {
        let vars = env(&[("XDG_DATA_HOME", "data"), ("HOME", "/h")]);
        assert_eq!(
            app(Os::Linux).data_dir(&vars).unwrap(),
            Path::new("/h/.local/share/app")
        );
    }

    #[test]
    fn macos_and_windows_use_their_own_data_directories() {
        let vars = env(&[("XDG_DATA_HOME", "/x"), ("HOME", "/Users/u")]);
        assert_eq!(
            app(Os::MacOs).data_dir(&vars).unwrap(),
            Path::new("/Users/u/Library/Application Support/app")
        );
        let vars = env(&[("APPDATA", "/roaming"), ("USERPROFILE", "/p")]);
        assert_eq!(
            app(Os::Windows).data_dir(&vars).unwrap(),
            Path::new("/roaming").join("app")
        );
        let vars = env(&[("USERPROFILE", "/p"), ("HOME", "/h")]);
        assert_eq!(
            app(Os::Windows).data_dir(&vars).unwrap(),
            Path::new("/p").join("AppData").join("Roaming").join("app")
        );
    }

    #[test]
    fn no_variable_and_no_home_names_the_apps_variable() {
        let error = app(Os::Linux).data_dir(&env(&[])).unwrap_err();
        assert_eq!(error.code(), "no_data_dir");
        assert_eq!(
            error.to_string(),
            "no data directory: set APP_DATA_DIR or HOME"
        );
        // XDG_DATA_HOME alone is enough on Linux.
        let vars = env(&[("XDG_DATA_HOME", "/x")]);
        assert_eq!(app(Os::Linux).data_dir(&vars).unwrap(), Path::new("/x/app"));
    }

    #[test]
    fn the_old_store_is_found_only_while_it_is_the_only_one() {
        let home = tempfile::tempdir().unwrap();
        let home_str = home.path().to_str().unwrap();
        let location = app(Os::Linux);
        let vars = env(&[("HOME", home_str)]);
        assert_eq!(location.legacy_store_path(&vars), None, "no old file");

        let legacy = home.path().join(".loop").join("mcp.json");
        fs::create_dir_all(legacy.parent().unwrap()).unwrap();
        fs::write(&legacy, "{}").unwrap();
        assert_eq!(location.legacy_store_path(&vars), Some(legacy.clone()));

        // A variable naming a data dir means the person chose a place.
        for var in ["APP_DATA_DIR", "LOOP_DATA_DIR"] {
            let vars = env(&[("HOME", home_str), (var, "/elsewhere")]);
            assert_eq!(location.legacy_store_path(&vars), None, "{var}");
        }
        // No old place to look in.
        let mut without = location.clone();
        without.legacy_home_subdir = None;
        assert_eq!(without.legacy_store_path(&vars), None);

        // Once the store's own place has a file, that one is the store.
        let current = location.store_path(&vars).unwrap();
        fs::create_dir_all(current.parent().unwrap()).unwrap();
        fs::write(&current, "{}").unwrap();
        assert_eq!(location.legacy_store_path(&vars), None);
    }
}

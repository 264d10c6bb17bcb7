//! Project trust: a project's servers start only once the person approved exactly what they run or read.
//!
//! A stdio server defined by a project-level source ([`ConfigLevel::Project`],
//! e.g. a checkout's `.mcp.json`) runs a command the person did not write.
//! An HTTP project server that references the person's environment
//! (`${VAR}` in its URL or headers, `envHeaders`, `bearerTokenEnv`,
//! `oauth.clientSecretEnv`, `oauth.assertionEnv`) or a file of the person's
//! (`oauth.assertionFile`, listed as `file:PATH`) would send those values to
//! an endpoint the project chose. Either needs the person's approval before it starts, and
//! again after any change of what was approved:
//!
//! - stdio: the command, the args, the cwd and the env NAMES (the literal
//!   `env` keys, the `envVars` passed through, the variables the env
//!   values reference), never the values;
//! - HTTP: the names of the variables (and files) it reads.
//!
//! Those parts, and nothing else, make the [`TrustSubject`], whose SHA-256
//! ([`TrustSubject::hash`]) keys the approval together with the canonical
//! project directory and the server id. Renaming, describing, retiming or
//! disabling a server keeps its approval; changing what it runs drops it.
//! An HTTP project server that reads no variable, and every user-level or
//! host-level server, needs no approval.
//!
//! Approvals live outside the project, in `trust.json` beside the store
//! ([`TrustStore`]): written atomically and owner-only like the store, and a
//! malformed file is an error that is never overwritten.
//!
//! [`Discovery::trust`](crate::Discovery::trust) applies a [`TrustGate`]: a
//! project server that is not approved becomes
//! [`DiscoveryEntry::Untrusted`] (listed with what a person needs to
//! decide, never handed to a manager) unless the gate's [`TrustPrompt`]
//! approves it. [`TrustGate::apply`] asks later, for the servers a host is
//! about to start.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::diagnostic::{Code, Diagnostic};
use crate::discovery::{
    ConfigLevel, DiscoveredServer, DiscoveryEntry, DiscoveryReport, SourceWarning,
};
use crate::expand::{Environment, referenced_variables};
use crate::model::{HttpConfig, ServerConfig, TransportConfig};
use crate::private_file::{PrivateFile, PrivateFileError, row_text};
use crate::secret::SecretValue;
use crate::store::StoreLocation;

/// The approvals file's name inside the data dir (beside the store's `mcp.json`).
pub const TRUST_FILE_NAME: &str = "trust.json";

/// What approving a project server approves: the parts of its definition
/// that decide what runs, or what is read from the person's environment.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TrustSubject {
    /// A stdio server: the process it starts.
    Command {
        /// The program, as written (references unexpanded).
        command: String,
        /// The arguments, as written.
        args: Vec<String>,
        /// The working directory, as written; `None` when unset or empty.
        cwd: Option<String>,
        /// The literal `env` keys, sorted.
        env: Vec<String>,
        /// The person's variables it receives: `envVars` and those the
        /// command, args and env values reference; sorted, each once.
        reads: Vec<String>,
    },
    /// An HTTP server: the person's variables it puts into requests.
    Environment {
        /// The variables, sorted, each once.
        reads: Vec<String>,
    },
}

impl TrustSubject {
    /// What `config` asks the person to approve; `None` when it needs no
    /// approval (an HTTP server that reads no variable).
    pub fn of(config: &ServerConfig) -> Option<TrustSubject> {
        match &config.transport {
            TransportConfig::Stdio(stdio) => {
                let mut reads: Vec<String> = stdio.env_passthrough.clone();
                reads.extend(referenced_variables(&stdio.command));
                for arg in &stdio.args {
                    reads.extend(referenced_variables(arg));
                }
                for entry in &stdio.env {
                    if let SecretValue::Literal(value) = &entry.value {
                        reads.extend(referenced_variables(value.expose()));
                    }
                }
                let mut env: Vec<String> = stdio.env.iter().map(|e| e.key.clone()).collect();
                env.sort();
                env.dedup();
                Some(TrustSubject::Command {
                    command: stdio.command.clone(),
                    args: stdio.args.clone(),
                    cwd: stdio.cwd.clone().filter(|cwd| !cwd.is_empty()),
                    env,
                    reads: sorted(reads),
                })
            }
            TransportConfig::Http(http) | TransportConfig::Sse(http) => {
                let reads = sorted(http_reads(http));
                (!reads.is_empty()).then_some(TrustSubject::Environment { reads })
            }
        }
    }

    /// `sha256:` and the hex SHA-256 of the subject's canonical JSON: the
    /// key an approval is stored under.
    ///
    /// ```
    /// use mcp_config::{ServerConfig, StdioConfig, TransportConfig, TrustSubject};
    ///
    /// let mut stdio = StdioConfig::new("npx");
    /// stdio.args = vec!["-y".into(), "foo".into()];
    /// let config = ServerConfig::new("foo", TransportConfig::Stdio(stdio.clone()));
    /// let before = TrustSubject::of(&config).unwrap().hash();
    /// assert!(before.starts_with("sha256:"));
    ///
    /// stdio.args.push("--bar".into());
    /// let changed = ServerConfig::new("foo", TransportConfig::Stdio(stdio));
    /// assert_ne!(TrustSubject::of(&changed).unwrap().hash(), before);
    /// ```
    pub fn hash(&self) -> String {
        // A JSON array is an unambiguous encoding of the parts: no choice of
        // strings can make two different subjects encode alike.
        let canonical = match self {
            TrustSubject::Command {
                command,
                args,
                cwd,
                env,
                reads,
            } => json!(["mcp-trust/1", "stdio", command, args, cwd, env, reads]),
            TrustSubject::Environment { reads } => json!(["mcp-trust/1", "http", reads]),
        };
        let digest = Sha256::digest(canonical.to_string().as_bytes());
        let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        format!("sha256:{hex}")
    }

    /// The command line, words joined by spaces (for stdio), or `None`.
    /// Raw text from the project: escape it before showing it.
    pub fn command_line(&self) -> Option<String> {
        match self {
            TrustSubject::Command { command, args, .. } => Some(
                std::iter::once(command)
                    .chain(args)
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            TrustSubject::Environment { .. } => None,
        }
    }

    /// The names of the person's variables the server would receive or send.
    pub fn reads(&self) -> &[String] {
        match self {
            TrustSubject::Command { reads, .. } | TrustSubject::Environment { reads } => reads,
        }
    }
}

fn http_reads(http: &HttpConfig) -> Vec<String> {
    let mut reads = referenced_variables(&http.url);
    for header in &http.headers {
        if let SecretValue::Literal(value) = &header.value {
            reads.extend(referenced_variables(value.expose()));
        }
    }
    reads.extend(http.env_headers.iter().map(|header| header.var.clone()));
    reads.extend(http.bearer_token_env.iter().cloned());
    if let Some(oauth) = &http.oauth {
        reads.extend(oauth.client_secret_env.iter().cloned());
        reads.extend(oauth.assertion_env.iter().cloned());
        reads.extend(
            oauth
                .assertion_file
                .iter()
                .map(|path| format!("file:{path}")),
        );
    }
    reads
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names.dedup();
    names
}

/// What a person needs to decide about one project server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TrustRequest {
    /// The server id.
    pub server: String,
    /// The project directory, canonical: the approval's key.
    pub project: PathBuf,
    /// The file that defines the server, when it is one.
    pub source_file: Option<PathBuf>,
    /// What is approved.
    pub subject: TrustSubject,
    /// [`TrustSubject::hash`] of `subject`.
    pub hash: String,
    /// The command that approves it, when the host gave the gate one
    /// ([`TrustGate::approve_command`]), e.g. `mcpctl trust x --project /p`.
    pub approve_command: Option<String>,
}

/// A project server that is not approved: listed, never started.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UntrustedServer {
    /// The server as configured.
    pub server: DiscoveredServer,
    /// What approving it means.
    pub request: TrustRequest,
}

impl UntrustedServer {
    /// The `untrusted` diagnostic for this server, naming what it runs or reads
    /// and how to approve it. The text is raw: escape it before showing it.
    pub fn diagnostic(&self) -> Diagnostic {
        let request = &self.request;
        let what = match request.subject.command_line() {
            Some(line) => format!("it runs `{line}`"),
            None => format!(
                "it sends the values of {} from your environment",
                names(request.subject.reads())
            ),
        };
        let approve = request.approve_command.as_ref().map_or_else(
            || String::from("approve it to start it"),
            |command| format!("run `{command}` to approve it"),
        );
        Diagnostic::new(
            Code::Untrusted,
            Some(request.server.clone()),
            "",
            format!(
                "project server `{}` is not approved: {what}; {approve}",
                request.server
            ),
        )
    }
}

fn names(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A person's answer to a [`TrustRequest`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrustDecision {
    /// Start it this time; ask again next time.
    ApproveOnce,
    /// Start it, and remember the approval for this definition.
    ApproveAndRemember,
    /// Do not start it.
    Refuse,
}

/// How a host asks the person about a project server (a terminal question,
/// a dialog). Called synchronously, from discovery or [`TrustGate::apply`].
pub trait TrustPrompt: Send + Sync {
    /// The person's answer to `request`.
    fn decide(&self, request: &TrustRequest) -> TrustDecision;
}

impl<F: Fn(&TrustRequest) -> TrustDecision + Send + Sync> TrustPrompt for F {
    fn decide(&self, request: &TrustRequest) -> TrustDecision {
        self(request)
    }
}

type CommandFormatter = dyn Fn(&TrustRequest) -> String + Send + Sync;

/// The rule that keeps unapproved project servers from starting; set it on
/// [`Discovery::trust`](crate::Discovery::trust). See the module documentation.
///
/// ```
/// use mcp_config::{Discovery, DiscoveryEntry, DiscoveryOptions, TrustDecision, TrustGate, TrustStore};
///
/// let dir = tempfile::tempdir()?;
/// let project = dir.path().join("repo");
/// std::fs::create_dir(&project)?;
/// std::fs::write(project.join(".mcp.json"), r#"{"mcpServers": {"foo": {"command": "npx", "args": ["-y", "foo"]}}}"#)?;
/// let gate = || TrustGate::new(TrustStore::open(dir.path().join("data/trust.json")))
///     .approve_command(|request| format!("mcpctl trust {}", request.server));
///
/// // Not approved, and nobody to ask: listed as untrusted, with the command that approves it.
/// let report = Discovery::new(DiscoveryOptions::default()).project_root(&project).trust(gate()).discover();
/// let DiscoveryEntry::Untrusted(untrusted) = &report.entries[0] else { panic!() };
/// assert_eq!(untrusted.request.subject.command_line().as_deref(), Some("npx -y foo"));
/// assert_eq!(untrusted.request.approve_command.as_deref(), Some("mcpctl trust foo"));
/// assert_eq!(report.servers().count(), 0);
///
/// // The person approves and the approval is remembered ...
/// let asking = gate().prompt(|_: &_| TrustDecision::ApproveAndRemember);
/// let report = Discovery::new(DiscoveryOptions::default()).project_root(&project).trust(asking).discover();
/// assert_eq!(report.servers().count(), 1);
/// // ... so it starts next time without asking.
/// let report = Discovery::new(DiscoveryOptions::default()).project_root(&project).trust(gate()).discover();
/// assert_eq!(report.servers().count(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct TrustGate {
    store: TrustStore,
    project: Option<PathBuf>,
    prompt: Option<Arc<dyn TrustPrompt>>,
    approve_command: Option<Arc<CommandFormatter>>,
}

impl fmt::Debug for TrustGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrustGate")
            .field("store", &self.store)
            .field("project", &self.project)
            .field("prompt", &self.prompt.is_some())
            .field("approve_command", &self.approve_command.is_some())
            .finish()
    }
}

impl TrustGate {
    /// A gate over the approvals in `store`, with nobody to ask.
    pub fn new(store: TrustStore) -> Self {
        TrustGate {
            store,
            project: None,
            prompt: None,
            approve_command: None,
        }
    }

    /// The project directory approvals are keyed by. Default: the
    /// discovery's project root, else the directory of the server's file.
    pub fn project(mut self, dir: impl Into<PathBuf>) -> Self {
        self.project = Some(dir.into());
        self
    }

    /// Who is asked about a server that is not approved. Default: nobody,
    /// so such servers stay untrusted.
    pub fn prompt(mut self, prompt: impl TrustPrompt + 'static) -> Self {
        self.prompt = Some(Arc::new(prompt));
        self
    }

    /// How the host spells the command that approves a server, for
    /// [`TrustRequest::approve_command`].
    pub fn approve_command(
        mut self,
        format: impl Fn(&TrustRequest) -> String + Send + Sync + 'static,
    ) -> Self {
        self.approve_command = Some(Arc::new(format));
        self
    }

    /// The approvals file.
    pub fn store(&self) -> &TrustStore {
        &self.store
    }

    /// What approving `server` would mean; `None` when it needs no
    /// approval (not from a project source, or an HTTP server that reads no
    /// variable). `project_root` is the discovery's, for the key.
    pub fn request(
        &self,
        server: &DiscoveredServer,
        project_root: Option<&Path>,
    ) -> Option<TrustRequest> {
        if server.source.level != ConfigLevel::Project {
            return None;
        }
        let subject = TrustSubject::of(&server.config)?;
        let project = self
            .project
            .clone()
            .or_else(|| project_root.map(Path::to_path_buf))
            .or_else(|| {
                server
                    .source
                    .path
                    .as_deref()
                    .and_then(Path::parent)
                    .map(Path::to_path_buf)
            })
            .unwrap_or_default();
        let mut request = TrustRequest {
            server: server.config.id.clone(),
            project: canonical(&project),
            source_file: server.source.path.clone(),
            hash: subject.hash(),
            subject,
            approve_command: None,
        };
        request.approve_command = self.approve_command.as_ref().map(|format| format(&request));
        Some(request)
    }

    /// Lets `server` through when it needs no approval or is approved; asks
    /// the gate's prompt otherwise. Problems with the approvals file are
    /// pushed to `warnings`, and the server then stays untrusted.
    pub(crate) fn admit(
        &self,
        server: DiscoveredServer,
        project_root: Option<&Path>,
        warnings: &mut Vec<SourceWarning>,
    ) -> DiscoveryEntry {
        let Some(request) = self.request(&server, project_root) else {
            return DiscoveryEntry::Server(server);
        };
        match self.store.is_approved(&request) {
            Ok(true) => return DiscoveryEntry::Server(server),
            Ok(false) => {}
            Err(error) => {
                warnings.push(store_warning(&server, &error));
                return DiscoveryEntry::Untrusted(Box::new(UntrustedServer { server, request }));
            }
        }
        let untrusted = UntrustedServer { server, request };
        match &self.prompt {
            Some(prompt) => self.decide(untrusted, prompt.as_ref(), warnings),
            None => DiscoveryEntry::Untrusted(Box::new(untrusted)),
        }
    }

    /// Asks `prompt` about an untrusted server and records a remembered
    /// approval. A remembered approval that cannot be written still starts
    /// the server this time, with a warning.
    pub fn decide(
        &self,
        untrusted: UntrustedServer,
        prompt: &dyn TrustPrompt,
        warnings: &mut Vec<SourceWarning>,
    ) -> DiscoveryEntry {
        match prompt.decide(&untrusted.request) {
            TrustDecision::ApproveOnce => DiscoveryEntry::Server(untrusted.server),
            TrustDecision::ApproveAndRemember => {
                if let Err(error) = self.store.approve(&untrusted.request) {
                    warnings.push(store_warning(&untrusted.server, &error));
                }
                DiscoveryEntry::Server(untrusted.server)
            }
            TrustDecision::Refuse => DiscoveryEntry::Untrusted(Box::new(untrusted)),
        }
    }

    /// Asks `prompt` about every untrusted entry of `report` (a host calls
    /// this for the servers it is about to start) and turns approved ones
    /// into servers; warnings go to the report.
    pub fn apply(&self, report: &mut DiscoveryReport, prompt: &dyn TrustPrompt) {
        let mut warnings = Vec::new();
        for entry in &mut report.entries {
            if !matches!(entry, DiscoveryEntry::Untrusted(_)) {
                continue;
            }
            let placeholder = DiscoveryEntry::Error {
                source: entry.source().clone(),
                server: None,
                diagnostics: Vec::new(),
            };
            let DiscoveryEntry::Untrusted(untrusted) = std::mem::replace(entry, placeholder) else {
                continue;
            };
            *entry = self.decide(*untrusted, prompt, &mut warnings);
        }
        report.warnings.extend(warnings);
    }
}

fn store_warning(server: &DiscoveredServer, error: &PrivateFileError) -> SourceWarning {
    SourceWarning {
        source: server.source.clone(),
        diagnostic: Diagnostic::new(
            Code::TrustStoreUnavailable,
            Some(server.config.id.clone()),
            "",
            format!(
                "{}; the server stays untrusted until its approval can be read or saved",
                mcp_proto::text::ErrorChain(error)
            ),
        ),
    }
}

/// The canonical form of `dir` (symlinks resolved), or its absolute form
/// when it does not exist.
fn canonical(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir)
        .or_else(|_| std::path::absolute(dir))
        .unwrap_or_else(|_| dir.to_path_buf())
}

/// One remembered approval, as [`TrustStore::list`] gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Approval {
    /// The canonical project directory.
    pub project: String,
    /// The server id.
    pub server: String,
    /// The approved definition's [`TrustSubject::hash`].
    pub hash: String,
    /// When it was approved, in seconds since the Unix epoch.
    pub approved_at: u64,
}

/// The approvals file, `trust.json` (see the module documentation). Cheap
/// to open; every call reads the file afresh, under the same locks as the
/// store (in-process and a `trust.json.lock` beside it).
///
/// The file: `{"version": 1, "approvals": [{"project", "server", "hash",
/// "approvedAt"}]}`, one approval per project and server.
#[derive(Clone, Debug)]
pub struct TrustStore {
    file: PrivateFile,
}

impl TrustStore {
    /// The approvals file at `path`. Does no I/O; a missing file holds none.
    pub fn open(path: impl Into<PathBuf>) -> Self {
        TrustStore {
            file: PrivateFile::open(path.into(), "approvals"),
        }
    }

    /// `trust.json` in the data dir of `location` ([`StoreLocation::data_dir`]).
    pub fn open_default<E: Environment + ?Sized>(
        location: &StoreLocation,
        env: &E,
    ) -> Result<Self, PrivateFileError> {
        Ok(TrustStore::open(
            location.data_dir(env)?.join(TRUST_FILE_NAME),
        ))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Whether exactly this definition of this server is approved for this project.
    pub fn is_approved(&self, request: &TrustRequest) -> Result<bool, PrivateFileError> {
        let project = project_key(&request.project);
        Ok(self.list()?.iter().any(|approval| {
            approval.project == project
                && approval.server == request.server
                && approval.hash == request.hash
        }))
    }

    /// Remembers the approval of `request`, replacing an earlier one for the
    /// same project and server.
    pub fn approve(&self, request: &TrustRequest) -> Result<(), PrivateFileError> {
        let project = project_key(&request.project);
        let mut checked = Ok(());
        self.file.update(|rows| {
            checked = self.parse(rows).map(drop);
            if checked.is_err() {
                return false;
            }
            rows.retain(|row| !same(row, &project, &request.server));
            let approved_at = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_secs());
            rows.push(json!({
                "project": project,
                "server": request.server,
                "hash": request.hash,
                "approvedAt": approved_at,
            }));
            true
        })?;
        checked
    }

    /// Forgets the approval of `server` in `project`. Returns whether there was one.
    pub fn revoke(&self, project: &Path, server: &str) -> Result<bool, PrivateFileError> {
        let project = project_key(&canonical(project));
        let mut checked = Ok(false);
        self.file.update(|rows| {
            checked = self.parse(rows).map(|_| {
                let before = rows.len();
                rows.retain(|row| !same(row, &project, server));
                rows.len() != before
            });
            matches!(checked, Ok(true))
        })?;
        checked
    }

    /// Every remembered approval, in file order.
    pub fn list(&self) -> Result<Vec<Approval>, PrivateFileError> {
        self.parse(&self.file.read()?)
    }

    fn parse(&self, rows: &[Value]) -> Result<Vec<Approval>, PrivateFileError> {
        rows.iter()
            .enumerate()
            .map(|(index, row)| {
                Ok(Approval {
                    project: row_text(&self.file, row, index, "project")?,
                    server: row_text(&self.file, row, index, "server")?,
                    hash: row_text(&self.file, row, index, "hash")?,
                    approved_at: row.get("approvedAt").and_then(Value::as_u64).unwrap_or(0),
                })
            })
            .collect()
    }
}

fn same(row: &Value, project: &str, server: &str) -> bool {
    row.get("project").and_then(Value::as_str) == Some(project)
        && row.get("server").and_then(Value::as_str) == Some(server)
}

fn project_key(project: &Path) -> String {
    project.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EnvHeader, HttpConfig, SecretEntry, StdioConfig};

    fn stdio() -> StdioConfig {
        let mut stdio = StdioConfig::new("npx");
        stdio.args = vec!["-y".into(), "foo".into()];
        stdio.env = vec![
            SecretEntry::new("A", "one"),
            SecretEntry::new("B", "${HOME}"),
        ];
        stdio.env_passthrough = vec!["PATH".into()];
        stdio.cwd = Some("/srv".into());
        stdio
    }

    /// One edit of a definition.
    type Change = fn(&mut StdioConfig);

    fn hash_of(stdio: StdioConfig) -> String {
        TrustSubject::of(&ServerConfig::new("s", TransportConfig::Stdio(stdio)))
            .unwrap()
            .hash()
    }

    #[test]
    fn the_hash_covers_what_runs_and_nothing_else() {
        let base = hash_of(stdio());
        let changes: [(&str, Change); 8] = [
            ("command", |s| s.command = "npm".into()),
            ("an arg", |s| s.args[1] = "bar".into()),
            ("one more arg", |s| s.args.push("--bar".into())),
            ("cwd", |s| s.cwd = Some("/other".into())),
            ("an env name", |s| s.env[0].key = "C".into()),
            ("a passthrough name", |s| {
                s.env_passthrough.push("AWS_SECRET".into())
            }),
            ("a variable an env value reads", |s| {
                s.env[1] = SecretEntry::new("B", "${AWS_SECRET}")
            }),
            ("a variable an arg reads", |s| {
                s.args.push("${TOKEN}".into())
            }),
        ];
        for (what, change) in changes {
            let mut changed = stdio();
            change(&mut changed);
            assert_ne!(
                hash_of(changed),
                base,
                "changing {what} must change the hash"
            );
        }
        let same: [(&str, Change); 4] = [
            ("a literal env value", |s| {
                s.env[0] = SecretEntry::new("A", "two")
            }),
            ("the env order", |s| s.env.reverse()),
            ("an empty cwd for none", |s| s.cwd = None),
            ("a value kept as saved", |s| {
                s.env[0] = SecretEntry::saved("A")
            }),
        ];
        let mut no_cwd = stdio();
        no_cwd.cwd = Some(String::new());
        let no_cwd = hash_of(no_cwd);
        for (what, change) in same {
            let mut changed = stdio();
            change(&mut changed);
            let expected = if what.contains("cwd") { &no_cwd } else { &base };
            assert_eq!(
                &hash_of(changed),
                expected,
                "changing {what} must keep the hash"
            );
        }
        // Nothing about the server but its transport counts.
        let mut config = ServerConfig::new("s", TransportConfig::Stdio(stdio()));
        config.name = "Another name".into();
        config.description = Some("described".into());
        config.timeout_ms = Some(5);
        config.enabled = false;
        assert_eq!(TrustSubject::of(&config).unwrap().hash(), base);
        // Fixed, so approvals survive upgrades: a change here needs a new prefix.
        assert_eq!(base.len(), "sha256:".len() + 64);
    }

    #[test]
    fn http_servers_need_approval_only_for_the_variables_they_read() {
        let plain = HttpConfig::new("https://example.com/mcp");
        let config = |http: HttpConfig| ServerConfig::new("h", TransportConfig::Http(http));
        assert_eq!(TrustSubject::of(&config(plain.clone())), None);
        let mut reads = plain.clone();
        reads.url = "https://example.com/${REGION}/mcp".into();
        reads.headers = vec![SecretEntry::new("X-Key", "k-${API_KEY}")];
        reads.env_headers = vec![EnvHeader::new("X-Org", "ORG")];
        reads.bearer_token_env = Some("TOKEN".into());
        let subject = TrustSubject::of(&config(reads.clone())).unwrap();
        assert_eq!(subject.reads(), ["API_KEY", "ORG", "REGION", "TOKEN"]);
        assert_eq!(subject.command_line(), None);
        // A literal header value is no reading of the environment.
        let mut literal = reads.clone();
        literal.headers = vec![SecretEntry::new("X-Key", "other-literal-${API_KEY}")];
        assert_eq!(
            TrustSubject::of(&config(literal)).unwrap().hash(),
            subject.hash()
        );
        let mut more = reads;
        more.env_headers
            .push(EnvHeader::new("X-More", "AWS_SECRET"));
        assert_ne!(
            TrustSubject::of(&config(more)).unwrap().hash(),
            subject.hash()
        );
    }

    fn request(dir: &Path, server: &str, hash: &str) -> TrustRequest {
        TrustRequest {
            server: server.into(),
            project: dir.to_path_buf(),
            source_file: None,
            subject: TrustSubject::Environment { reads: Vec::new() },
            hash: hash.into(),
            approve_command: None,
        }
    }

    #[test]
    fn approvals_are_kept_per_project_server_and_hash() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::open(dir.path().join("data/trust.json"));
        let first = request(dir.path(), "x", "sha256:1");
        assert!(!store.is_approved(&first).unwrap());
        store.approve(&first).unwrap();
        assert!(store.is_approved(&first).unwrap());
        assert!(
            !store
                .is_approved(&request(dir.path(), "x", "sha256:2"))
                .unwrap()
        );
        assert!(
            !store
                .is_approved(&request(dir.path(), "y", "sha256:1"))
                .unwrap()
        );
        assert!(
            !store
                .is_approved(&request(Path::new("/elsewhere"), "x", "sha256:1"))
                .unwrap()
        );
        // A new approval replaces the old one for the same server.
        store
            .approve(&request(dir.path(), "x", "sha256:2"))
            .unwrap();
        assert!(!store.is_approved(&first).unwrap());
        assert_eq!(store.list().unwrap().len(), 1);
        assert!(store.revoke(dir.path(), "x").unwrap());
        assert!(!store.revoke(dir.path(), "x").unwrap());
        assert!(store.list().unwrap().is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_written_atomically_and_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data/trust.json");
        let store = TrustStore::open(&path);
        store
            .approve(&request(dir.path(), "x", "sha256:1"))
            .unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        // A temp file a killed writer left behind is removed by the next write.
        let stale = path.with_file_name(".trust.json.abc.tmp");
        std::fs::write(&stale, "half").unwrap();
        store
            .approve(&request(dir.path(), "y", "sha256:1"))
            .unwrap();
        assert!(!stale.exists());
        let names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let mut names = names;
        names.sort();
        assert_eq!(names, ["trust.json", "trust.json.lock"]);
        let document: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(document["version"], 1);
        assert_eq!(document["approvals"][1]["server"], "y");
    }

    #[test]
    fn a_corrupt_file_is_a_clear_error_and_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.json");
        let store = TrustStore::open(&path);
        for corrupt in [
            "{not json",
            r#"{"version": 2, "approvals": []}"#,
            r#"{"version": 1, "approvals": [{"project": "/p", "server": 3, "hash": "h"}]}"#,
        ] {
            std::fs::write(&path, corrupt).unwrap();
            let error = store
                .is_approved(&request(dir.path(), "x", "sha256:1"))
                .unwrap_err();
            assert_eq!(error.code(), "malformed_file", "{corrupt}");
            assert!(error.to_string().contains("trust.json"), "{error}");
            let error = store
                .approve(&request(dir.path(), "x", "sha256:1"))
                .unwrap_err();
            assert_eq!(error.code(), "malformed_file");
            assert!(store.revoke(dir.path(), "x").is_err());
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                corrupt,
                "kept as it was"
            );
        }
    }

    mod gate {
        use std::sync::atomic::{AtomicUsize, Ordering};

        use super::*;
        use crate::discovery::{Discovery, DiscoveryOptions};

        struct Project {
            dir: tempfile::TempDir,
        }

        impl Project {
            fn new(servers: &str) -> Project {
                let dir = tempfile::tempdir().unwrap();
                std::fs::create_dir(dir.path().join("repo")).unwrap();
                let project = Project { dir };
                project.write(servers);
                project
            }

            fn write(&self, servers: &str) {
                let text = format!(r#"{{"mcpServers": {servers}}}"#);
                std::fs::write(self.root().join(".mcp.json"), text).unwrap();
            }

            fn root(&self) -> PathBuf {
                self.dir.path().join("repo")
            }

            fn gate(&self) -> TrustGate {
                TrustGate::new(TrustStore::open(self.dir.path().join("data/trust.json")))
            }

            fn discover(&self, gate: TrustGate) -> DiscoveryReport {
                let user = self.dir.path().join("user.json");
                std::fs::write(
                    &user,
                    r#"{"mcpServers": {"mine": {"command": "my-server"}}}"#,
                )
                .unwrap();
                Discovery::new(DiscoveryOptions::default())
                    .user_file(user)
                    .project_root(self.root())
                    .trust(gate)
                    .discover()
            }
        }

        fn ids(report: &DiscoveryReport) -> (Vec<&str>, Vec<&str>) {
            (
                report.servers().map(|s| s.config.id.as_str()).collect(),
                report
                    .untrusted()
                    .map(|u| u.request.server.as_str())
                    .collect(),
            )
        }

        const SERVERS: &str = r#"{"foo": {"command": "npx", "args": ["-y", "foo"]},
            "web": {"url": "https://example.com/mcp"},
            "keyed": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}"#;

        #[test]
        fn without_a_prompt_project_servers_wait_and_user_servers_do_not() {
            let project = Project::new(SERVERS);
            let report = project.discover(project.gate());
            assert_eq!(ids(&report), (vec!["mine", "web"], vec!["foo", "keyed"]));
            let foo = report.untrusted().next().unwrap();
            assert_eq!(
                foo.request.project,
                std::fs::canonicalize(project.root()).unwrap()
            );
            assert_eq!(
                foo.request.source_file,
                Some(project.root().join(".mcp.json"))
            );
            let diagnostic = foo.diagnostic();
            assert_eq!(diagnostic.code(), "untrusted");
            assert!(
                diagnostic.message.contains("runs `npx -y foo`"),
                "{diagnostic}"
            );
            let keyed = report.untrusted().nth(1).unwrap();
            assert!(
                keyed.diagnostic().message.contains("`TOKEN`"),
                "{}",
                keyed.diagnostic()
            );
        }

        #[test]
        fn once_is_not_remembered_remember_is_until_the_definition_changes() {
            let project = Project::new(SERVERS);
            let asked = Arc::new(AtomicUsize::new(0));
            let answering = |decision: TrustDecision| {
                let asked = Arc::clone(&asked);
                project.gate().prompt(move |_: &TrustRequest| {
                    asked.fetch_add(1, Ordering::SeqCst);
                    decision
                })
            };
            let refused = project.discover(answering(TrustDecision::Refuse));
            assert_eq!(ids(&refused).1, ["foo", "keyed"]);
            let once = project.discover(answering(TrustDecision::ApproveOnce));
            assert_eq!(ids(&once), (vec!["mine", "foo", "web", "keyed"], vec![]));
            assert_eq!(ids(&project.discover(project.gate())).1, ["foo", "keyed"]);
            project.discover(answering(TrustDecision::ApproveAndRemember));
            assert_eq!(asked.load(Ordering::SeqCst), 6);
            assert_eq!(ids(&project.discover(project.gate())).1, Vec::<&str>::new());
            // Renaming is no change of what runs; new args are.
            project.write(
                r#"{"foo": {"command": "npx", "args": ["-y", "foo"], "description": "d"},
                    "keyed": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}"#,
            );
            assert_eq!(ids(&project.discover(project.gate())).1, Vec::<&str>::new());
            project.write(
                r#"{"foo": {"command": "npx", "args": ["-y", "foo", "--bar"]},
                    "keyed": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${OTHER}"}}}"#,
            );
            assert_eq!(ids(&project.discover(project.gate())).1, ["foo", "keyed"]);
        }

        #[test]
        fn apply_asks_about_the_untrusted_entries_of_a_report() {
            let project = Project::new(SERVERS);
            let mut report = project.discover(project.gate());
            let asked = std::sync::Mutex::new(Vec::new());
            let prompt = |request: &TrustRequest| {
                asked.lock().unwrap().push(request.server.clone());
                if request.server == "foo" {
                    TrustDecision::ApproveOnce
                } else {
                    TrustDecision::Refuse
                }
            };
            project.gate().apply(&mut report, &prompt);
            assert_eq!(*asked.lock().unwrap(), ["foo", "keyed"]);
            assert_eq!(ids(&report), (vec!["mine", "foo", "web"], vec!["keyed"]));
        }

        #[test]
        fn a_corrupt_approvals_file_keeps_project_servers_untrusted_with_a_warning() {
            let project = Project::new(SERVERS);
            let data = project.dir.path().join("data");
            std::fs::create_dir(&data).unwrap();
            std::fs::write(data.join("trust.json"), "{oops").unwrap();
            let report = project.discover(
                project
                    .gate()
                    .prompt(|_: &TrustRequest| TrustDecision::ApproveOnce),
            );
            assert_eq!(ids(&report).1, ["foo", "keyed"]);
            let warning = &report.warnings[0].diagnostic;
            assert_eq!(warning.code(), "trust_store_unavailable");
            assert!(
                warning.message.contains("trust.json is malformed"),
                "{warning}"
            );
            assert_eq!(
                std::fs::read_to_string(data.join("trust.json")).unwrap(),
                "{oops"
            );
        }
    }
}

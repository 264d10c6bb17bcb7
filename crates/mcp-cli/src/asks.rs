//! What servers ask back, answered by the person at the terminal: mcp-transport's `ClientHandler` for mcpctl (elicitation, sampling, roots).
//!
//! mcpctl declares `roots`, `sampling` and `elicitation` (form and URL
//! modes) on every connection it makes for a person, so a server shows the
//! tools that need them; at a terminal also `sampling.tools` (MCP
//! 2025-11-25, "Client/Sampling" §Tools in Sampling), since the person
//! there may answer with a tool use. Questions are asked on stderr and answered on
//! stdin, one at a time, and only when both are a terminal and the run is
//! not `--json`; otherwise each is declined at once with a line on stderr
//! saying why, so a script or CI never hangs on a question.
//!
//! - Form elicitation (MCP "Client/Elicitation", form mode): the form is
//!   checked first (a flat object of strings, numbers, integers, booleans
//!   and enums); a malformed one is declined with a warning naming what is
//!   wrong. The person may fill it in, decline or cancel; then each field
//!   is asked with its type, choices, default (an empty answer keeps it)
//!   and whether it is required.
//! - URL elicitation: the URL is printed (escaped, never opened or
//!   fetched) and mcpctl waits for Enter. When the server says the page's
//!   flow is done (`notifications/elicitation/complete` for its
//!   elicitation id, MCP 2025-11-25), mcpctl says so and stops waiting
//!   (answering `accept`); one that arrives after the answer is printed
//!   as a line on stderr; unknown ids are ignored.
//! - Sampling (MCP "Client/Sampling"): there is no model here. The request
//!   is shown (system prompt, messages with their tool uses and results,
//!   preferences, the tools offered and the tool choice), a page at a
//!   time when it is longer than the terminal, with its size; the person
//!   types the reply, or uses one of the offered tools with a first line
//!   `/tool NAME {JSON input}` (a `tool_use` block, stop reason `toolUse`;
//!   refused when the tool choice is `none`, required when it is
//!   `required`), or declines.
//! - Roots (MCP "Client/Roots"): the `--root DIR` directories, else the
//!   current directory.
//!
//! Everything a server sent is escaped before it is shown
//! ([`crate::output::line`], [`crate::output::block`]) and bounded.

use std::collections::VecDeque;
use std::io::{self, BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use async_trait::async_trait;
use mcp_proto::jsonrpc::ErrorObject;
use mcp_proto::text;
use mcp_proto::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitAction,
    ElicitFormParams, ElicitRequestParams, ElicitResult, ElicitUrlParams, ElicitationCapability,
    ElicitationCompleteNotificationParams, JsonObject, ListRootsResult, Role, Root,
    RootsCapability, SamplingCapability, SamplingContent, SamplingMessageContent, StopReason,
    TextContent, ToolChoiceMode, ToolUseContent,
};
use mcp_transport::ClientHandler;
use serde_json::Value;
use tokio::sync::Mutex;

use crate::output::{block, line};

/// The most bytes of one server text (a message, a description) shown.
const SHOWN_TEXT: usize = 4096;

/// The most bytes of a sampling request shown in all.
const SHOWN_REQUEST: usize = 256 * 1024;

/// The most times one field is asked again after an answer that does not fit.
const TRIES: usize = 5;

/// The most fields one form may ask for; a larger one is malformed.
const MAX_FIELDS: usize = 100;

/// The most choices one enum field may offer; more is malformed.
const MAX_CHOICES: usize = 500;

/// The `model` of a reply the person typed.
const TYPED_MODEL: &str = "mcpctl-human";

/// How mcpctl answers what servers ask, from the command line.
#[derive(Clone, Debug, Default)]
pub(crate) struct AskOptions {
    /// `--root DIR`, repeatable; empty means the current directory.
    pub(crate) roots: Vec<PathBuf>,
    /// Whether questions may be asked: stdin and stderr are a terminal and
    /// the run is not `--json`.
    pub(crate) interactive: bool,
}

impl AskOptions {
    /// The options of a run printing JSON or not, asking only when stdin
    /// and stderr are a terminal.
    pub(crate) fn new(roots: Vec<PathBuf>, json: bool) -> Self {
        AskOptions {
            roots,
            interactive: !json && io::stdin().is_terminal() && io::stderr().is_terminal(),
        }
    }
}

/// mcpctl's answers to server requests.
#[derive(Debug)]
pub(crate) struct TerminalAsks {
    roots: Vec<Root>,
    interactive: bool,
    /// Serializes questions: two must never interleave.
    asking: Mutex<()>,
    /// What the server said of URL-mode elicitations' completion.
    completions: Arc<std::sync::Mutex<Completions>>,
}

/// The most elicitation ids [`CompletionMemory`] keeps of each kind.
pub(crate) const COMPLETIONS_KEPT: usize = 32;

/// What the terminal and the page remember of
/// `notifications/elicitation/complete` (MCP 2025-11-25
/// "Client/Elicitation", URL mode) beside the questions open now: the
/// ids the server said were done before their question came up, and the
/// URL questions that ended already; the last [`COMPLETIONS_KEPT`] of
/// each.
#[derive(Debug, Default)]
pub(crate) struct CompletionMemory {
    /// Completed before their question came up (it may be queued).
    early: VecDeque<String>,
    /// URL questions that ended here (answered, declined, withdrawn).
    ended: VecDeque<String>,
}

/// Keeps `id` at the back of `ids`, at most [`COMPLETIONS_KEPT`] ids.
fn keep(ids: &mut VecDeque<String>, id: String) {
    if ids.len() >= COMPLETIONS_KEPT {
        ids.pop_front();
    }
    ids.push_back(id);
}

impl CompletionMemory {
    /// The question about `id` comes up: whether the server said it is
    /// done already (then it is forgotten, as the question takes it).
    pub(crate) fn take_early(&mut self, id: &str) -> bool {
        match self.early.iter().position(|early| early == id) {
            Some(at) => {
                self.early.remove(at);
                true
            }
            None => false,
        }
    }

    /// The question about `id` ended, however.
    pub(crate) fn ended(&mut self, id: &str) {
        keep(&mut self.ended, id.to_owned());
    }

    /// The server says `id` is done, and no open question is about it.
    /// Returns whether its question ended already; otherwise `id` is
    /// remembered for a question still to come (unknown ids too: they
    /// fall out after [`COMPLETIONS_KEPT`] more).
    pub(crate) fn not_open(&mut self, id: String) -> bool {
        if self.ended.contains(&id) {
            return true;
        }
        keep(&mut self.early, id);
        false
    }
}

/// `notifications/elicitation/complete` as the terminal uses it: the URL
/// elicitation being waited on (its id and what wakes the wait), and the
/// [`CompletionMemory`].
#[derive(Debug, Default)]
struct Completions {
    waiting: Option<(String, Option<Waker>)>,
    memory: CompletionMemory,
}

impl Completions {
    /// The question about `id` is on the terminal now: whether the server
    /// already said it is done, else where the wait's wake-up goes.
    fn wait_for(&mut self, id: &str) -> Result<Option<Wake>, ()> {
        if self.memory.take_early(id) {
            return Err(());
        }
        let (waker, wake) = match wake_pair() {
            Some((waker, wake)) => (Some(waker), Some(wake)),
            None => (None, None),
        };
        self.waiting = Some((id.to_owned(), waker));
        Ok(wake)
    }

    /// The question about `id` was answered.
    fn answered(&mut self, id: &str) {
        if self
            .waiting
            .as_ref()
            .is_some_and(|(waiting, _)| waiting == id)
        {
            self.waiting = None;
        }
        self.memory.ended(id);
    }

    /// The server says `id` is done. Returns whether it was answered here
    /// already (the person should hear of it).
    fn complete(&mut self, id: String) -> bool {
        if let Some((waiting, waker)) = &self.waiting
            && *waiting == id
        {
            if let Some(waker) = waker {
                waker.wake();
            }
            return false;
        }
        self.memory.not_open(id)
    }
}

/// The end of a pipe that wakes a [`Wake`].
#[derive(Debug)]
struct Waker(#[cfg(unix)] std::os::fd::OwnedFd);

impl Waker {
    fn wake(&self) {
        #[cfg(unix)]
        {
            // One byte into an empty pipe never blocks.
            let _ = rustix::io::write(&self.0, b"!");
        }
    }
}

/// Lets a wait for the terminal's input end early: input to read, or a
/// byte on the pipe's other end ([`Waker`]).
struct Wake {
    #[cfg(unix)]
    watched: Box<dyn std::os::fd::AsFd + Send>,
    #[cfg(unix)]
    signal: std::os::fd::OwnedFd,
}

/// Whether a [`Wake`] saw input or its waker.
#[derive(Debug, PartialEq)]
enum Woke {
    Input,
    Waker,
}

impl Wake {
    /// Waits until the watched input can be read or the waker woke it.
    fn wait(&self) -> Woke {
        #[cfg(unix)]
        loop {
            use rustix::event::{PollFd, PollFlags, poll};
            let watched = self.watched.as_fd();
            let mut fds = [
                PollFd::new(&self.signal, PollFlags::IN),
                PollFd::new(&watched, PollFlags::IN),
            ];
            match poll(&mut fds, None) {
                Ok(_) if !fds[0].revents().is_empty() => return Woke::Waker,
                Ok(_) if !fds[1].revents().is_empty() => return Woke::Input,
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                // Unable to wait for both: read as before.
                Err(_) => return Woke::Input,
            }
        }
        #[cfg(not(unix))]
        Woke::Input
    }
}

/// A pipe for waking a wait on stdin; `None` where there is none.
fn wake_pair() -> Option<(Waker, Wake)> {
    #[cfg(unix)]
    {
        let (read, write) = rustix::pipe::pipe().ok()?;
        Some((
            Waker(write),
            Wake {
                watched: Box::new(io::stdin()),
                signal: read,
            },
        ))
    }
    #[cfg(not(unix))]
    None
}

impl TerminalAsks {
    /// The handler for `options`; roots that are not directories are
    /// left out with a warning.
    pub(crate) fn new(options: &AskOptions) -> Arc<Self> {
        Arc::new(TerminalAsks {
            roots: roots(&options.roots),
            interactive: options.interactive,
            asking: Mutex::new(()),
            completions: Arc::default(),
        })
    }

    /// Runs `ask` (which reads the terminal, so blocks) off the async
    /// workers, one question at a time. If the request is withdrawn the
    /// thread finishes its read and its answer is dropped.
    async fn one_at_a_time<T: Send + 'static>(
        &self,
        fallback: T,
        ask: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let _turn = self.asking.lock().await;
        ASKING.store(true, Ordering::SeqCst);
        QUESTIONS.fetch_add(1, Ordering::SeqCst);
        let answer = tokio::task::spawn_blocking(ask).await.unwrap_or(fallback);
        ASKING.store(false, Ordering::SeqCst);
        answer
    }
}

/// Whether a question is on the terminal: progress lines are not drawn
/// then, so they neither erase nor interleave with it.
static ASKING: AtomicBool = AtomicBool::new(false);

/// How many questions were asked at the terminal so far.
static QUESTIONS: AtomicU64 = AtomicU64::new(0);

/// Whether a question is being asked at the terminal now.
pub(crate) fn asking() -> bool {
    ASKING.load(Ordering::SeqCst)
}

/// How many questions have been asked at the terminal: lines drawn before
/// a question are not erased after it.
pub(crate) fn questions() -> u64 {
    QUESTIONS.load(Ordering::SeqCst)
}

/// The roots answered to `roots/list`: the `--root` directories, else the
/// current directory; those that are not directories are left out with a
/// warning on stderr.
pub(crate) fn roots(dirs: &[PathBuf]) -> Vec<Root> {
    let dirs = if dirs.is_empty() {
        std::env::current_dir().into_iter().collect()
    } else {
        dirs.to_vec()
    };
    dirs.iter()
        .filter_map(|dir| match root(dir) {
            Ok(root) => Some(root),
            Err(why) => {
                eprintln!("mcpctl: warning: --root {}: {why}", dir.display());
                None
            }
        })
        .collect()
}

/// The capabilities mcpctl declares wherever a person answers: `roots`,
/// `sampling` (with `tools` when `sampling_tools`: the person can answer
/// with a tool use) and `elicitation` in form and URL modes.
pub(crate) fn capabilities(sampling_tools: bool) -> ClientCapabilities {
    let elicitation = ElicitationCapability {
        form: Some(JsonObject::new()),
        url: Some(JsonObject::new()),
        ..Default::default()
    };
    ClientCapabilities {
        roots: Some(RootsCapability::default()),
        sampling: Some(SamplingCapability {
            tools: sampling_tools.then(JsonObject::new),
            ..Default::default()
        }),
        elicitation: Some(elicitation),
        ..Default::default()
    }
}

/// `dir` as a root: its canonical path as a `file://` URI, named by its
/// last component.
fn root(dir: &std::path::Path) -> Result<Root, String> {
    let path = std::fs::canonicalize(dir).map_err(|e| e.to_string())?;
    if !path.is_dir() {
        return Err("not a directory".into());
    }
    let uri = url::Url::from_directory_path(&path)
        .map_err(|()| "cannot be written as a file:// URI".to_owned())?;
    Ok(Root {
        uri: uri.to_string(),
        name: path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned()),
        ..Default::default()
    })
}

#[async_trait]
impl ClientHandler for TerminalAsks {
    fn capabilities(&self) -> ClientCapabilities {
        capabilities(true)
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Ok(ListRootsResult {
            roots: self.roots.clone(),
            ..Default::default()
        })
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let form = match &params {
            ElicitRequestParams::Form(form) => match fields(form) {
                Ok(fields) => Some(fields),
                Err(malformed) => {
                    eprintln!(
                        "mcpctl: warning: declined a server's form ({}): its schema is malformed: {}",
                        shown(&form.message, 200),
                        shown(&malformed, 400)
                    );
                    return Ok(ElicitResult::new(ElicitAction::Decline));
                }
            },
            ElicitRequestParams::Url(_) => None,
        };
        if !self.interactive {
            eprintln!(
                "mcpctl: declined a server's question ({}): no terminal to ask on \
                 (stdin or stderr is not a terminal, or --json)",
                shown(params.message(), 200)
            );
            return Ok(ElicitResult::new(ElicitAction::Decline));
        }
        let cancel = ElicitResult::new(ElicitAction::Cancel);
        Ok(match (params, form) {
            (ElicitRequestParams::Form(form), Some(fields)) => {
                self.one_at_a_time(cancel, move || {
                    let mut terminal = Terminal::stdio();
                    fill_in(&mut terminal, &form.message, &fields)
                })
                .await
            }
            (ElicitRequestParams::Url(url), _) => {
                let completions = Arc::clone(&self.completions);
                let id = url.elicitation_id.clone();
                let answer = self
                    .one_at_a_time(cancel, move || {
                        let waiting = lock(&completions).wait_for(&url.elicitation_id);
                        let mut terminal = Terminal::stdio();
                        match waiting {
                            Ok(wake) => {
                                terminal.wake = wake;
                                visit(&mut terminal, &url)
                            }
                            Err(()) => {
                                visited(&mut terminal, &url);
                                terminal.say(
                                    "The server says this is done already: nothing to open.\n",
                                );
                                ElicitResult::new(ElicitAction::Accept)
                            }
                        }
                    })
                    .await;
                lock(&self.completions).answered(&id);
                answer
            }
            (ElicitRequestParams::Form(_), None) => cancel,
        })
    }

    fn elicitation_complete(&self, params: ElicitationCompleteNotificationParams) {
        let id = params.elicitation_id;
        let shown_id = shown(&id, 200);
        if lock(&self.completions).complete(id) && self.interactive && !asking() {
            eprintln!(
                "mcpctl: the server says the page you were asked to open is done ({shown_id})"
            );
        }
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        if !self.interactive {
            eprintln!(
                "mcpctl: declined a server's sampling request: mcpctl has no model, and \
                 there is no terminal to type a reply on (stdin or stderr is not a terminal, or --json)"
            );
            return Err(rejected());
        }
        let rows = terminal_rows();
        self.one_at_a_time(Err(rejected()), move || {
            let mut terminal = Terminal::stdio();
            sample(&mut terminal, &params, rows)
        })
        .await
    }
}

fn lock(completions: &std::sync::Mutex<Completions>) -> std::sync::MutexGuard<'_, Completions> {
    completions
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The answer to a sampling request the person declined (the spec's
/// "User rejected sampling request", code -1).
pub(crate) fn rejected() -> ErrorObject {
    ErrorObject::new(-1, "the user declined the sampling request")
}

/// Server text on one line, escaped and cut to `max` bytes.
pub(crate) fn shown(text: &str, max: usize) -> String {
    line(&text::bound(text, max)).into_owned()
}

/// The terminal's height in rows; 24 when it cannot be told.
fn terminal_rows() -> usize {
    #[cfg(unix)]
    if let Ok(size) = rustix::termios::tcgetwinsize(io::stderr())
        && size.ws_row > 0
    {
        return usize::from(size.ws_row);
    }
    24
}

/// Where questions go and answers come from: stderr and stdin, or a
/// script in the unit tests.
pub(crate) struct Terminal<'a> {
    input: Box<dyn BufRead + 'a>,
    output: Box<dyn Write + 'a>,
    /// What may end a wait for input early (a URL elicitation's completion).
    wake: Option<Wake>,
}

/// What [`Terminal::ask_or_woken`] got.
#[derive(Debug, PartialEq)]
enum Asked {
    Line(String),
    End,
    Woken,
}

impl<'a> Terminal<'a> {
    fn stdio() -> Terminal<'static> {
        Terminal {
            input: Box::new(io::stdin().lock()),
            output: Box::new(io::stderr()),
            wake: None,
        }
    }

    /// Shows `text` as it is (the caller escaped what the server sent).
    fn say(&mut self, text: &str) {
        let _ = self.output.write_all(text.as_bytes());
        let _ = self.output.flush();
    }

    /// Shows `prompt` and reads one line, without its line break; `None`
    /// at the end of input.
    fn ask(&mut self, prompt: &str) -> Option<String> {
        self.say(prompt);
        self.read_line()
    }

    /// As [`Terminal::ask`], except that the wait ends early, with
    /// [`Asked::Woken`], when the terminal's [`Wake`] is woken first.
    fn ask_or_woken(&mut self, prompt: &str) -> Asked {
        self.say(prompt);
        if let Some(wake) = &self.wake
            && wake.wait() == Woke::Waker
        {
            self.say("\n");
            return Asked::Woken;
        }
        match self.read_line() {
            Some(line) => Asked::Line(line),
            None => Asked::End,
        }
    }

    /// One line of input without its line break; `None` at the end.
    fn read_line(&mut self) -> Option<String> {
        let mut answer = String::new();
        match self.input.read_line(&mut answer) {
            Ok(0) | Err(_) => {
                self.say("\n");
                None
            }
            Ok(_) => Some(answer.trim_end_matches(['\n', '\r']).to_owned()),
        }
    }
}

/// The kind of one form field (MCP "Client/Elicitation", "Supported
/// Schema Types").
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    Text {
        min: Option<u64>,
        max: Option<u64>,
        format: Option<String>,
    },
    Number {
        integer: bool,
        min: Option<f64>,
        max: Option<f64>,
    },
    Boolean,
    /// One of `values` (shown as `labels`).
    Choice {
        values: Vec<String>,
        labels: Vec<String>,
    },
    /// Any of `values` (a multi-select enum, 2025-11-25), with at least
    /// `min` and at most `max` picked.
    Choices {
        values: Vec<String>,
        labels: Vec<String>,
        min: Option<u64>,
        max: Option<u64>,
    },
}

/// One field of a form.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Field {
    name: String,
    title: Option<String>,
    description: Option<String>,
    kind: Kind,
    default: Option<Value>,
    required: bool,
}

/// The fields of `form`, or what is malformed about its schema.
pub(crate) fn fields(form: &ElicitFormParams) -> Result<Vec<Field>, String> {
    let schema = &form.requested_schema;
    if schema.schema_type != "object" {
        return Err(format!(
            "the schema's type is `{}`, not `object`",
            schema.schema_type
        ));
    }
    if schema.properties.len() > MAX_FIELDS {
        return Err(format!(
            "{} properties; a form asks at most {MAX_FIELDS}",
            schema.properties.len()
        ));
    }
    let required = schema.required.clone().unwrap_or_default();
    if let Some(missing) = required
        .iter()
        .find(|name| !schema.properties.contains_key(*name))
    {
        return Err(format!(
            "`required` names `{missing}`, which is not a property"
        ));
    }
    schema
        .properties
        .iter()
        .map(|(name, property)| {
            field(name, property, required.contains(name))
                .map_err(|why| format!("property `{name}`: {why}"))
        })
        .collect()
}

fn field(name: &str, property: &Value, required: bool) -> Result<Field, String> {
    let Some(property) = property.as_object() else {
        return Err("is not an object".into());
    };
    let text_of = |key: &str| -> Result<Option<String>, String> {
        match property.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("`{key}` is not a string")),
        }
    };
    let kind_name = match property.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(_) => return Err("`type` is not a string".into()),
        None => return Err("has no `type`".into()),
    };
    let kind = match kind_name {
        "string" => match choices(property)? {
            Some((values, labels)) => Kind::Choice { values, labels },
            None => Kind::Text {
                min: unsigned(property, "minLength")?,
                max: unsigned(property, "maxLength")?,
                format: text_of("format")?,
            },
        },
        "number" | "integer" => Kind::Number {
            integer: kind_name == "integer",
            min: number(property, "minimum")?,
            max: number(property, "maximum")?,
        },
        "boolean" => Kind::Boolean,
        "array" => {
            let items = property
                .get("items")
                .and_then(Value::as_object)
                .ok_or("an `array` property needs `items` with the choices")?;
            match choices(items)? {
                Some((values, labels)) => Kind::Choices {
                    values,
                    labels,
                    min: unsigned(property, "minItems")?,
                    max: unsigned(property, "maxItems")?,
                },
                None => return Err("an `array` property's `items` must be an enum".into()),
            }
        }
        other => {
            return Err(format!(
                "type `{other}` is not a primitive (string, number, integer, boolean or an enum)"
            ));
        }
    };
    let default = property.get("default").cloned();
    if let Some(default) = &default
        && check(&kind, default).is_err()
    {
        return Err("its `default` does not fit its type".into());
    }
    Ok(Field {
        name: name.to_owned(),
        title: text_of("title")?,
        description: text_of("description")?,
        kind,
        default,
        required,
    })
}

/// The choices of an enum schema (`enum` with optional `enumNames`, or
/// `oneOf`/`anyOf` of `{const, title}`): values and labels; `None` when it
/// is not an enum.
/// An enum's values and the labels shown for them.
type Choices = (Vec<String>, Vec<String>);

fn choices(schema: &JsonObject) -> Result<Option<Choices>, String> {
    if let Some(values) = schema.get("enum") {
        let values = strings(values).ok_or("`enum` is not a list of strings")?;
        let labels = match schema.get("enumNames") {
            None => values.clone(),
            Some(names) => {
                let names = strings(names).ok_or("`enumNames` is not a list of strings")?;
                if names.len() != values.len() {
                    return Err("`enumNames` and `enum` differ in length".into());
                }
                names
            }
        };
        if values.is_empty() {
            return Err("`enum` is empty".into());
        }
        if values.len() > MAX_CHOICES {
            return Err(format!("`enum` has more than {MAX_CHOICES} choices"));
        }
        return Ok(Some((values, labels)));
    }
    for key in ["oneOf", "anyOf"] {
        let Some(options) = schema.get(key) else {
            continue;
        };
        let options = options
            .as_array()
            .filter(|options| !options.is_empty())
            .ok_or_else(|| format!("`{key}` is not a list of choices"))?;
        if options.len() > MAX_CHOICES {
            return Err(format!("`{key}` has more than {MAX_CHOICES} choices"));
        }
        let mut values = Vec::new();
        let mut labels = Vec::new();
        for option in options {
            let value = option
                .get("const")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("a `{key}` choice has no string `const`"))?;
            values.push(value.to_owned());
            labels.push(
                option
                    .get("title")
                    .and_then(Value::as_str)
                    .unwrap_or(value)
                    .to_owned(),
            );
        }
        return Ok(Some((values, labels)));
    }
    Ok(None)
}

fn strings(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}

fn unsigned(schema: &JsonObject, key: &str) -> Result<Option<u64>, String> {
    match schema.get(key) {
        None => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("`{key}` is not a whole number")),
    }
}

fn number(schema: &JsonObject, key: &str) -> Result<Option<f64>, String> {
    match schema.get(key) {
        None => Ok(None),
        Some(value) => value
            .as_f64()
            .map(Some)
            .ok_or_else(|| format!("`{key}` is not a number")),
    }
}

/// Whether `value` is a valid answer for `kind`; the reason when not.
fn check(kind: &Kind, value: &Value) -> Result<(), String> {
    match (kind, value) {
        (Kind::Text { min, max, format }, Value::String(text)) => {
            if !text.is_empty()
                && let Some(format) = format
                && !formatted(format, text)
            {
                return Err(format!("a valid {format}"));
            }
            let chars = text.chars().count() as u64;
            if min.is_some_and(|min| chars < min) {
                return Err(format!("at least {} characters", min.unwrap_or(0)));
            }
            if max.is_some_and(|max| chars > max) {
                return Err(format!("at most {} characters", max.unwrap_or(0)));
            }
            Ok(())
        }
        (Kind::Number { integer, min, max }, Value::Number(n)) => {
            if *integer && !(n.is_i64() || n.is_u64()) {
                return Err("a whole number".into());
            }
            let n = n.as_f64().unwrap_or(f64::NAN);
            if min.is_some_and(|min| n < min) || max.is_some_and(|max| n > max) {
                return Err(format!(
                    "a number{}{}",
                    min.map(|m| format!(" from {m}")).unwrap_or_default(),
                    max.map(|m| format!(" up to {m}")).unwrap_or_default()
                ));
            }
            Ok(())
        }
        (Kind::Boolean, Value::Bool(_)) => Ok(()),
        (Kind::Choice { values, .. }, Value::String(s)) if values.contains(s) => Ok(()),
        (Kind::Choices { min, max, .. }, Value::Array(items))
            if min.is_some_and(|min| (items.len() as u64) < min)
                || max.is_some_and(|max| items.len() as u64 > max) =>
        {
            Err(format!(
                "from {} to {} choices",
                min.unwrap_or(0),
                max.map_or_else(|| "any number of".to_owned(), |m| m.to_string())
            ))
        }
        (Kind::Choices { values, .. }, Value::Array(items))
            if items
                .iter()
                .all(|item| item.as_str().is_some_and(|s| values.iter().any(|v| v == s))) =>
        {
            Ok(())
        }
        _ => Err("a value of the field's type".into()),
    }
}

/// Whether `text` is in `format` (the formats MCP names for form
/// strings; others are not checked).
fn formatted(format: &str, text: &str) -> bool {
    let digits = |part: &str, n: usize| part.len() == n && part.bytes().all(|b| b.is_ascii_digit());
    let date = |text: &str| {
        let parts: Vec<&str> = text.split('-').collect();
        matches!(parts.as_slice(), [y, m, d] if digits(y, 4) && digits(m, 2) && digits(d, 2))
    };
    match format {
        "email" => text.split_once('@').is_some_and(|(user, host)| {
            !user.is_empty() && host.contains('.') && !text.contains(' ')
        }),
        "uri" => url::Url::parse(text).is_ok(),
        "date" => date(text),
        "date-time" => text
            .split_once(['T', 't'])
            .is_some_and(|(day, time)| date(day) && time.len() >= 8),
        _ => true,
    }
}

/// What one typed answer means for `kind`: the value, or why it does not fit.
fn parse(kind: &Kind, answer: &str) -> Result<Value, String> {
    let answer = answer.trim();
    let value = match kind {
        Kind::Text { .. } => Value::String(answer.to_owned()),
        Kind::Number { integer: true, .. } => answer
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "type a whole number".to_owned())?,
        Kind::Number { .. } => answer
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or("type a number")?,
        Kind::Boolean => match answer.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => return Err("type y or n".into()),
        },
        Kind::Choice { values, labels } => Value::String(pick(values, labels, answer)?),
        Kind::Choices { values, labels, .. } => Value::Array(
            answer
                .split(',')
                .map(str::trim)
                .filter(|part| !part.is_empty())
                .map(|part| pick(values, labels, part).map(Value::String))
                .collect::<Result<_, _>>()?,
        ),
    };
    check(kind, &value).map_err(|why| format!("type {why}"))?;
    Ok(value)
}

/// The choice `answer` names: its number (from 1), its value or its label.
fn pick(values: &[String], labels: &[String], answer: &str) -> Result<String, String> {
    if let Ok(n) = answer.parse::<usize>()
        && (1..=values.len()).contains(&n)
    {
        return Ok(values[n - 1].clone());
    }
    values
        .iter()
        .zip(labels)
        .find(|(value, label)| *value == answer || *label == answer)
        .map(|(value, _)| value.clone())
        .ok_or_else(|| format!("pick one of 1 to {}", values.len()))
}

/// The prompt of one field: its name, type, whether required, its default.
fn prompt(field: &Field) -> String {
    let mut text = String::new();
    if let Some(description) = &field.description {
        text.push_str(&format!("  ({})\n", shown(description, SHOWN_TEXT)));
    }
    let kind = match &field.kind {
        Kind::Text { format, .. } => match format {
            Some(format) => format!("text, {}", shown(format, 40)),
            None => "text".into(),
        },
        Kind::Number { integer: true, .. } => "whole number".into(),
        Kind::Number { .. } => "number".into(),
        Kind::Boolean => "y/n".into(),
        Kind::Choice { labels, .. } | Kind::Choices { labels, .. } => {
            for (n, label) in labels.iter().enumerate() {
                text.push_str(&format!("    {}) {}\n", n + 1, shown(label, 200)));
            }
            if matches!(field.kind, Kind::Choices { .. }) {
                "numbers, separated by commas".into()
            } else {
                "a number".into()
            }
        }
    };
    let name = field.title.as_deref().unwrap_or(&field.name);
    text.push_str(&format!("  {} [{kind}", shown(name, 200)));
    if field.required {
        text.push_str(", required");
    }
    if let Some(default) = &field.default {
        text.push_str(&format!(
            ", default {}",
            crate::output::to_json_line(default)
        ));
    }
    text.push_str("]: ");
    text
}

/// Asks for a form: fill in, decline or cancel; then each field.
fn fill_in(terminal: &mut Terminal<'_>, message: &str, fields: &[Field]) -> ElicitResult {
    terminal.say(&format!(
        "\nA server asks for input:\n  {}\n",
        block(&text::bound(message, SHOWN_TEXT)).replace('\n', "\n  ")
    ));
    loop {
        match terminal
            .ask("[f]ill in the form, [d]ecline or [c]ancel? ")
            .as_deref()
            .map(|a| a.trim().to_ascii_lowercase())
            .as_deref()
        {
            Some("f" | "fill" | "y" | "yes" | "") => break,
            Some("d" | "decline" | "n" | "no") => {
                terminal.say("declined\n");
                return ElicitResult::new(ElicitAction::Decline);
            }
            None | Some("c" | "cancel") => {
                terminal.say("cancelled\n");
                return ElicitResult::new(ElicitAction::Cancel);
            }
            Some(_) => terminal.say("please answer f, d or c\n"),
        }
    }
    terminal.say("(an empty answer keeps the default or leaves an optional field out; end of input cancels)\n");
    let mut content = JsonObject::new();
    for field in fields {
        let mut tries = 0;
        loop {
            tries += 1;
            if tries > TRIES {
                terminal.say("too many answers that do not fit; cancelled\n");
                return ElicitResult::new(ElicitAction::Cancel);
            }
            let Some(answer) = terminal.ask(&prompt(field)) else {
                terminal.say("cancelled\n");
                return ElicitResult::new(ElicitAction::Cancel);
            };
            if answer.trim().is_empty() {
                if let Some(default) = &field.default {
                    content.insert(field.name.clone(), default.clone());
                    break;
                }
                if !field.required {
                    break;
                }
                terminal.say("    this field is required\n");
                continue;
            }
            match parse(&field.kind, &answer) {
                Ok(value) => {
                    content.insert(field.name.clone(), value);
                    break;
                }
                Err(why) => terminal.say(&format!("    {why}\n")),
            }
        }
    }
    terminal.say("sent\n");
    let mut result = ElicitResult::new(ElicitAction::Accept);
    result.content = Some(content);
    result
}

/// Shows the page a URL elicitation asks the person to open: its message,
/// its site and the URL in full, escaped; never opened or fetched.
fn visited(terminal: &mut Terminal<'_>, url: &ElicitUrlParams) {
    let host = url::Url::parse(&url.url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| "(not a valid URL)".into());
    terminal.say(&format!(
        "\nA server asks you to open a page:\n  {}\n  site: {}\n  {}\n",
        block(&text::bound(&url.message, SHOWN_TEXT)).replace('\n', "\n  "),
        shown(&host, 256),
        shown(&url.url, SHOWN_TEXT),
    ));
}

/// Asks the person to open a URL ([`visited`]) and waits for Enter, or for
/// the server to say the page's flow is done (the terminal's [`Wake`]).
fn visit(terminal: &mut Terminal<'_>, url: &ElicitUrlParams) -> ElicitResult {
    visited(terminal, url);
    loop {
        let answer = terminal
            .ask_or_woken("Open it in your browser, then press Enter ([d]ecline, [c]ancel): ");
        let answer = match answer {
            Asked::Woken => {
                terminal.say("The server says this is done.\n");
                return ElicitResult::new(ElicitAction::Accept);
            }
            Asked::End => None,
            Asked::Line(line) => Some(line.trim().to_ascii_lowercase()),
        };
        match answer.as_deref() {
            Some("" | "y" | "yes" | "o" | "ok") => {
                terminal.say("sent\n");
                return ElicitResult::new(ElicitAction::Accept);
            }
            Some("d" | "decline" | "n" | "no") => {
                terminal.say("declined\n");
                return ElicitResult::new(ElicitAction::Decline);
            }
            None | Some("c" | "cancel") => {
                terminal.say("cancelled\n");
                return ElicitResult::new(ElicitAction::Cancel);
            }
            Some(_) => terminal.say("please press Enter, or answer d or c\n"),
        }
    }
}

/// The sampling request as lines a person reads.
pub(crate) fn describe(params: &CreateMessageRequestParams) -> String {
    let mut text = String::new();
    if let Some(system) = &params.system_prompt {
        text.push_str(&format!(
            "system prompt:\n  {}\n",
            block(system).replace('\n', "\n  ")
        ));
    }
    for message in &params.messages {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        text.push_str(&format!("{role}:\n"));
        for content in message.content.blocks() {
            let shown = match content {
                SamplingContent::Text(t) => block(&t.text).into_owned(),
                SamplingContent::ToolUse(used) => format!(
                    "[uses tool {} (id {}) with {}]",
                    shown(&used.name, 200),
                    shown(&used.id, 200),
                    shown(&Value::Object(used.input.clone()).to_string(), 2000)
                ),
                SamplingContent::ToolResult(result) => {
                    let texts: Vec<String> = result
                        .content
                        .iter()
                        .map(|block| match block {
                            mcp_proto::types::ContentBlock::Text(t) => block_text(&t.text),
                            other => {
                                let value = serde_json::to_value(other).unwrap_or_default();
                                let kind =
                                    value.get("type").and_then(Value::as_str).unwrap_or("block");
                                format!("[{} block]", line(kind))
                            }
                        })
                        .collect();
                    format!(
                        "[result of tool use {}{}]\n{}",
                        shown(&result.tool_use_id, 200),
                        if result.is_error == Some(true) {
                            ", an error"
                        } else {
                            ""
                        },
                        texts.join("\n")
                    )
                }
                other => {
                    let value = serde_json::to_value(other).unwrap_or_default();
                    let kind = value.get("type").and_then(Value::as_str).unwrap_or("block");
                    let size = serde_json::to_string(&value).map_or(0, |s| s.len());
                    format!("[{} block, {size} bytes]", line(kind))
                }
            };
            text.push_str(&format!("  {}\n", shown.replace('\n', "\n  ")));
        }
    }
    let mut wants = vec![format!("at most {} tokens", params.max_tokens)];
    if let Some(t) = params.temperature {
        wants.push(format!("temperature {t}"));
    }
    if let Some(stops) = &params.stop_sequences {
        let stops: Vec<String> = stops
            .iter()
            .map(|s| format!("`{}`", shown(s, 80)))
            .collect();
        wants.push(format!("stop at {}", stops.join(", ")));
    }
    if let Some(context) = &params.include_context {
        wants.push(format!("include context {}", line(context.as_str())));
    }
    if let Some(preferences) = &params.model_preferences {
        let hints: Vec<String> = preferences
            .hints
            .iter()
            .flatten()
            .filter_map(|hint| hint.name.as_deref().map(|n| shown(n, 80)))
            .collect();
        if !hints.is_empty() {
            wants.push(format!("models like {}", hints.join(", ")));
        }
        for (name, value) in [
            ("cost", preferences.cost_priority),
            ("speed", preferences.speed_priority),
            ("intelligence", preferences.intelligence_priority),
        ] {
            if let Some(value) = value {
                wants.push(format!("{name} priority {value}"));
            }
        }
    }
    text.push_str(&format!("wants: {}\n", wants.join("; ")));
    if let Some(tools) = &params.tools {
        text.push_str(&format!("tools the model may use ({}):\n", tools.len()));
        for tool in tools {
            let description = tool.description.as_deref().unwrap_or("");
            text.push_str(&format!(
                "  {}  {}\n",
                shown(&tool.name, 200),
                shown(&crate::output::one_line(description, 100), 400)
            ));
            let input = tool
                .input_schema
                .to_object()
                .and_then(|schema| match schema.get("properties") {
                    Some(Value::Object(properties)) => {
                        Some(properties.keys().map(|k| shown(k, 80)).collect::<Vec<_>>())
                    }
                    _ => None,
                })
                .unwrap_or_default();
            if !input.is_empty() {
                text.push_str(&format!("    input: {}\n", input.join(", ")));
            }
        }
    }
    if params.tools.is_some() || params.tool_choice.is_some() {
        text.push_str(&format!(
            "tool choice: {}\n",
            match tool_choice(params) {
                ToolChoiceMode::Required => "required (the reply must use a tool)",
                ToolChoiceMode::None => "none (the reply must not use a tool)",
                _ => "auto (the reply may use a tool)",
            }
        ));
    }
    text
}

/// A server's text that may span lines, escaped and cut to [`SHOWN_TEXT`].
fn block_text(text_: &str) -> String {
    block(&text::bound(text_, SHOWN_TEXT)).into_owned()
}

/// The request's tool choice: `auto` unless it says otherwise (MCP
/// 2025-11-25 "Client/Sampling" §Tools in Sampling); an unknown mode is
/// read as `auto`.
fn tool_choice(params: &CreateMessageRequestParams) -> ToolChoiceMode {
    match params.tool_choice.as_ref().and_then(|c| c.mode.clone()) {
        Some(ToolChoiceMode::Required) => ToolChoiceMode::Required,
        Some(ToolChoiceMode::None) => ToolChoiceMode::None,
        _ => ToolChoiceMode::Auto,
    }
}

/// The tool use a person typed as `/tool NAME {JSON input}`: one of the
/// offered tools, with a JSON object (or nothing, `{}`) as its input.
fn typed_tool_use(
    params: &CreateMessageRequestParams,
    rest: &str,
) -> Result<ToolUseContent, String> {
    static USES: AtomicU64 = AtomicU64::new(1);
    let rest = rest.trim();
    let (name, input) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let offered = params.tools.as_deref().unwrap_or_default();
    if !offered.iter().any(|tool| tool.name == name) {
        let names: Vec<String> = offered.iter().map(|t| shown(&t.name, 80)).collect();
        return Err(format!(
            "`{}` is not one of the offered tools ({})",
            shown(name, 80),
            names.join(", ")
        ));
    }
    let input = match input.trim() {
        "" => JsonObject::new(),
        text => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(input)) => input,
            Ok(_) => return Err("the input must be a JSON object".into()),
            Err(e) => return Err(format!("the input is not JSON: {e}")),
        },
    };
    Ok(ToolUseContent {
        id: format!("mcpctl-use-{}", USES.fetch_add(1, Ordering::Relaxed)),
        name: name.to_owned(),
        input,
        meta: None,
        extra: JsonObject::new(),
    })
}

/// Shows a sampling request a page at a time and reads the person's reply.
fn sample(
    terminal: &mut Terminal<'_>,
    params: &CreateMessageRequestParams,
    rows: usize,
) -> Result<CreateMessageResult, ErrorObject> {
    let full = describe(params);
    let bytes = full.len();
    let request = text::bound(&full, SHOWN_REQUEST);
    let lines: Vec<&str> = request.lines().collect();
    let page = rows.saturating_sub(4).max(5);
    terminal.say("\nA server asks for a model's reply (sampling/createMessage):\n");
    if lines.len() > page {
        terminal.say(&format!(
            "(the request is {} lines, {bytes} bytes; shown {page} lines at a time)\n",
            lines.len()
        ));
    }
    let mut at = 0;
    while at < lines.len() {
        let end = (at + page).min(lines.len());
        terminal.say(&format!("{}\n", lines[at..end].join("\n")));
        at = end;
        if at < lines.len() {
            let more = terminal.ask(&format!(
                "-- {} more lines: Enter for the next page, [s]kip to the reply --",
                lines.len() - at
            ));
            match more.as_deref().map(str::trim) {
                None => return Err(rejected()),
                Some("s" | "q") => break,
                Some(_) => {}
            }
        }
    }
    let choice = tool_choice(params);
    let tools =
        params.tools.as_ref().is_some_and(|t| !t.is_empty()) && choice != ToolChoiceMode::None;
    terminal.say(
        "mcpctl has no model: type the reply yourself, ending with an empty line \
         (or [d]ecline with a first line of just `d`):\n",
    );
    if tools {
        terminal.say(if choice == ToolChoiceMode::Required {
            "The reply must use a tool: a first line `/tool NAME {JSON input}` uses one.\n"
        } else {
            "A first line `/tool NAME {JSON input}` uses one of the tools instead.\n"
        });
    }
    let mut reply: Vec<String> = Vec::new();
    while let Some(answer) = terminal.ask(if reply.is_empty() { "> " } else { "| " }) {
        if reply.is_empty() && matches!(answer.trim(), "d" | "decline") {
            terminal.say("declined\n");
            return Err(rejected());
        }
        if reply.is_empty()
            && let Some(rest) = answer.trim_start().strip_prefix("/tool")
            && (rest.is_empty() || rest.starts_with(char::is_whitespace))
        {
            if !tools {
                terminal.say("this request offers no tool to use; type a reply, or d\n");
                continue;
            }
            match typed_tool_use(params, rest) {
                Ok(used) => {
                    terminal.say("sent\n");
                    return Ok(tool_use_reply(used));
                }
                Err(why) => {
                    terminal.say(&format!("{why}; try again, or d\n"));
                    continue;
                }
            }
        }
        if reply.is_empty() && choice == ToolChoiceMode::Required && tools && !answer.is_empty() {
            terminal.say("this request requires a tool use: `/tool NAME {JSON input}`, or d\n");
            continue;
        }
        if answer.is_empty() {
            if reply.is_empty() {
                continue;
            }
            break;
        }
        reply.push(answer);
    }
    if reply.is_empty() {
        terminal.say("declined\n");
        return Err(rejected());
    }
    terminal.say("sent\n");
    Ok(typed_reply(reply.join("\n")))
}

/// A sampling answer in which the person used a tool (its `model` says
/// a person answered; stop reason `toolUse`).
fn tool_use_reply(used: ToolUseContent) -> CreateMessageResult {
    CreateMessageResult {
        role: Role::Assistant,
        content: SamplingMessageContent::One(SamplingContent::ToolUse(used)),
        model: TYPED_MODEL.into(),
        stop_reason: Some(StopReason::ToolUse),
        meta: None,
        extra: JsonObject::new(),
    }
}

/// A sampling answer whose text a person typed (its `model` says so).
pub(crate) fn typed_reply(text: String) -> CreateMessageResult {
    CreateMessageResult {
        role: Role::Assistant,
        content: SamplingMessageContent::One(SamplingContent::Text(TextContent::new(text))),
        model: TYPED_MODEL.into(),
        stop_reason: Some(StopReason::EndTurn),
        meta: None,
        extra: JsonObject::new(),
    }
}

/// The fields of a form as the settings page draws them: name, label,
/// help, type (`text`, `number`, `integer`, `boolean`, `choice`,
/// `choices`), format, bounds, choices with labels, default and whether
/// required. Every text the server sent is escaped and bounded as on the
/// terminal.
pub(crate) fn form_json(fields: &[Field]) -> Value {
    let choices = |values: &[String], labels: &[String]| -> Value {
        values
            .iter()
            .zip(labels)
            .map(|(value, label)| serde_json::json!({"value": value, "label": shown(label, 200)}))
            .collect()
    };
    fields
        .iter()
        .map(|field| {
            let mut shape = serde_json::json!({
                "name": field.name,
                "label": shown(field.title.as_deref().unwrap_or(&field.name), 200),
                "description": field.description.as_deref().map(|d| shown(d, SHOWN_TEXT)),
                "default": field.default,
                "required": field.required,
            });
            let extra = match &field.kind {
                Kind::Text { min, max, format } => serde_json::json!({
                    "type": "text", "minLength": min, "maxLength": max,
                    "format": format.as_deref().map(|f| shown(f, 40)),
                }),
                Kind::Number { integer, min, max } => serde_json::json!({
                    "type": if *integer { "integer" } else { "number" },
                    "minimum": min, "maximum": max,
                }),
                Kind::Boolean => serde_json::json!({"type": "boolean"}),
                Kind::Choice { values, labels } => {
                    serde_json::json!({"type": "choice", "choices": choices(values, labels)})
                }
                Kind::Choices {
                    values,
                    labels,
                    min,
                    max,
                } => serde_json::json!({
                    "type": "choices", "choices": choices(values, labels),
                    "minItems": min, "maxItems": max,
                }),
            };
            if let (Some(shape), Value::Object(extra)) = (shape.as_object_mut(), extra) {
                shape.extend(extra);
            }
            shape
        })
        .collect()
}

/// Whether `content`, a filled-in form from the page, answers `fields`:
/// every value of its field's type and bounds, every required field
/// there, no field the form did not ask for. The reason when not, naming
/// the field.
pub(crate) fn check_answer(fields: &[Field], content: &JsonObject) -> Result<(), String> {
    if let Some(extra) = content
        .keys()
        .find(|key| !fields.iter().any(|field| &field.name == *key))
    {
        return Err(format!("the form has no field `{}`", shown(extra, 64)));
    }
    for field in fields {
        match content.get(&field.name) {
            None if field.required => {
                return Err(format!("`{}` is required", shown(&field.name, 64)));
            }
            None => {}
            Some(value) => check(&field.kind, value)
                .map_err(|why| format!("`{}` needs {why}", shown(&field.name, 64)))?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(schema: Value) -> ElicitFormParams {
        serde_json::from_value(json!({"message": "Tell me", "requestedSchema": schema})).unwrap()
    }

    fn run(fields: &[Field], typed: &str) -> (ElicitResult, String) {
        let mut shown = Vec::new();
        let result = {
            let mut terminal = Terminal {
                input: Box::new(typed.as_bytes()),
                output: Box::new(&mut shown),
                wake: None,
            };
            fill_in(&mut terminal, "Tell me", fields)
        };
        (result, String::from_utf8(shown).unwrap())
    }

    #[test]
    fn a_form_is_asked_field_by_field_with_types_defaults_and_retries() {
        let fields = fields(&form(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 2},
                "age": {"type": "integer", "minimum": 0, "default": 30},
                "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
                "ok": {"type": "boolean"},
                "note": {"type": "string"}
            },
            "required": ["name", "ok"]
        })))
        .unwrap();
        let (result, shown) = run(&fields, "f\nA\nAda\n\n2\nmaybe\ny\n\n");
        assert_eq!(result.action, ElicitAction::Accept);
        assert_eq!(
            Value::Object(result.content.unwrap()),
            json!({"name": "Ada", "age": 30, "color": "g", "ok": true})
        );
        assert!(shown.contains("name [text, required]: "), "{shown}");
        assert!(shown.contains("type at least 2 characters"), "{shown}");
        assert!(
            shown.contains("age [whole number, default 30]: "),
            "{shown}"
        );
        assert!(shown.contains("    2) Green\n"), "{shown}");
        assert!(shown.contains("type y or n"), "{shown}");
    }

    #[test]
    fn decline_cancel_and_end_of_input() {
        let fields = fields(&form(
            json!({"type": "object", "properties": {"x": {"type": "string"}}}),
        ))
        .unwrap();
        assert_eq!(run(&fields, "d\n").0.action, ElicitAction::Decline);
        assert_eq!(run(&fields, "c\n").0.action, ElicitAction::Cancel);
        assert_eq!(run(&fields, "f\n").0.action, ElicitAction::Cancel);
    }

    #[test]
    fn malformed_schemas_say_what_is_wrong() {
        for (schema, expected) in [
            (json!({"type": "array", "properties": {}}), "not `object`"),
            (
                json!({"type": "object", "properties": {"a": {"type": "object"}}}),
                "property `a`: type `object` is not a primitive",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}),
                "`required` names `b`",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "enum": [1]}}}),
                "`enum` is not a list of strings",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "integer", "default": "x"}}}),
                "`default` does not fit",
            ),
            (
                json!({"type": "object", "properties": {"a": {}}}),
                "has no `type`",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "enum": vec!["x"; 501]}}}),
                "more than 500 choices",
            ),
        ] {
            let error = fields(&form(schema.clone())).unwrap_err();
            assert!(error.contains(expected), "{schema}: {error}");
        }
    }

    #[test]
    fn a_long_sampling_request_is_paged_and_its_size_shown() {
        let params: CreateMessageRequestParams = serde_json::from_value(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "line\n".repeat(30)}}],
            "systemPrompt": "be \u{1b}[31mred",
            "maxTokens": 50,
            "modelPreferences": {"hints": [{"name": "sonnet"}], "speedPriority": 0.5}
        }))
        .unwrap();
        let mut shown = Vec::new();
        let result = {
            let mut terminal = Terminal {
                input: Box::new("s\nhello\nthere\n\n".as_bytes()),
                output: Box::new(&mut shown),
                wake: None,
            };
            sample(&mut terminal, &params, 14)
        };
        let shown = String::from_utf8(shown).unwrap();
        assert!(!shown.contains('\u{1b}'), "escaped: {shown}");
        assert!(
            shown.contains("be \\u{1b}[31mred")
                || shown.contains("be \\x1b[31mred")
                || shown.contains("be \\e[31mred"),
            "{shown}"
        );
        assert!(shown.contains("lines, "), "the size is shown: {shown}");
        assert!(shown.contains("more lines"), "{shown}");
        assert!(
            !shown.contains("models like sonnet"),
            "skipped to the reply: {shown}"
        );
        let result = result.unwrap();
        assert_eq!(
            serde_json::to_value(&result.content).unwrap(),
            json!({"type": "text", "text": "hello\nthere"})
        );
    }

    /// `sample` on `params` with `input` typed: what was shown, and the answer.
    fn sampled(
        params: &CreateMessageRequestParams,
        input: &str,
    ) -> (String, Result<CreateMessageResult, ErrorObject>) {
        let mut shown = Vec::new();
        let result = {
            let mut terminal = Terminal {
                input: Box::new(input.as_bytes()),
                output: Box::new(&mut shown),
                wake: None,
            };
            sample(&mut terminal, params, 100)
        };
        (String::from_utf8(shown).unwrap(), result)
    }

    fn with_tools(choice: &str) -> CreateMessageRequestParams {
        serde_json::from_value(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}},
                {"role": "assistant", "content": {"type": "tool_use", "id": "u1", "name": "weather",
                    "input": {"city": "Lyon"}}},
                {"role": "user", "content": {"type": "tool_result", "toolUseId": "u1",
                    "content": [{"type": "text", "text": "rain \u{1b}[2J in Lyon"}]}}
            ],
            "maxTokens": 50,
            "tools": [{"name": "weather", "description": "The weather in a city",
                "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
            "toolChoice": {"mode": choice}
        }))
        .unwrap()
    }

    #[test]
    fn the_terminal_declares_tool_use_in_sampling_and_the_page_does_not() {
        let terminal = serde_json::to_value(capabilities(true)).unwrap();
        assert_eq!(terminal["sampling"], json!({"tools": {}}));
        let page = serde_json::to_value(capabilities(false)).unwrap();
        assert_eq!(page["sampling"], json!({}));
    }

    #[test]
    fn a_sampling_request_with_tools_shows_them_and_a_person_may_use_one() {
        let params = with_tools("required");
        // A text reply is refused while a tool use is required, an unknown
        // tool and a malformed input are asked again.
        let (shown, result) = sampled(
            &params,
            "it rains\n/tool umbrella {}\n/tool weather [1]\n/tool weather {\"city\": \"Paris\"}\n",
        );
        for expected in [
            "tools the model may use (1):",
            "weather  The weather in a city",
            "input: city",
            "tool choice: required (the reply must use a tool)",
            "[uses tool weather (id u1) with {\"city\":\"Lyon\"}]",
            "[result of tool use u1]",
            "this request requires a tool use",
            "`umbrella` is not one of the offered tools (weather)",
            "the input must be a JSON object",
        ] {
            assert!(shown.contains(expected), "{expected:?} in {shown}");
        }
        assert!(!shown.contains('\u{1b}'), "escaped: {shown}");
        let result = result.unwrap();
        assert_eq!(result.stop_reason, Some(StopReason::ToolUse));
        let content = serde_json::to_value(&result.content).unwrap();
        assert_eq!(content["type"], "tool_use");
        assert_eq!(content["name"], "weather");
        assert_eq!(content["input"], json!({"city": "Paris"}));
        assert!(content["id"].as_str().unwrap().starts_with("mcpctl-use-"));

        // `auto`: text is a reply; `none`: no tool may be used.
        let (_, auto) = sampled(&with_tools("auto"), "sunny\n\n");
        assert_eq!(auto.unwrap().stop_reason, Some(StopReason::EndTurn));
        let (shown, none) = sampled(&with_tools("none"), "/tool weather\ncloudy\n\n");
        assert!(shown.contains("tool choice: none"), "{shown}");
        assert!(shown.contains("offers no tool to use"), "{shown}");
        assert_eq!(
            serde_json::to_value(&none.unwrap().content).unwrap(),
            json!({"type": "text", "text": "cloudy"})
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_url_question_stops_waiting_when_the_server_says_it_is_done() {
        let url: ElicitUrlParams = serde_json::from_value(json!({
            "mode": "url", "message": "Sign in", "elicitationId": "e-1",
            "url": "https://login.example.org/start"
        }))
        .unwrap();
        // Stdin stays silent (its writer open, nothing written): only the
        // waker can end the wait, from another thread, whenever it runs.
        let (stdin, _silent) = rustix::pipe::pipe().unwrap();
        let (signal, waker) = rustix::pipe::pipe().unwrap();
        let waker = Waker(waker);
        let woken = std::thread::spawn(move || waker.wake());
        let mut shown = Vec::new();
        let result = {
            let mut terminal = Terminal {
                input: Box::new(io::empty()),
                output: Box::new(&mut shown),
                wake: Some(Wake {
                    watched: Box::new(stdin),
                    signal,
                }),
            };
            visit(&mut terminal, &url)
        };
        woken.join().unwrap();
        let shown = String::from_utf8(shown).unwrap();
        assert_eq!(result.action, ElicitAction::Accept);
        assert!(shown.contains("site: login.example.org"), "{shown}");
        assert!(
            shown.ends_with("The server says this is done.\n"),
            "{shown}"
        );
    }

    #[test]
    fn completions_are_matched_to_the_question_by_id_and_bounded() {
        let mut completions = Completions::default();
        // Before its question came up: the question finds it done.
        assert!(!completions.complete("early".into()));
        assert!(completions.wait_for("early").is_err());
        // Waited on: not kept as done; answered: the person hears of a late one.
        assert!(completions.wait_for("e-2").is_ok());
        assert!(!completions.complete("e-2".into()));
        assert!(completions.memory.early.is_empty());
        completions.answered("e-2");
        assert!(completions.waiting.is_none());
        assert!(completions.complete("e-2".into()), "answered here: said");
        // Unknown ids are kept only as the most recent few.
        for n in 0..100 {
            assert!(!completions.complete(format!("unknown-{n}")));
        }
        assert_eq!(completions.memory.early.len(), COMPLETIONS_KEPT);
        assert_eq!(
            completions.memory.early.back().map(String::as_str),
            Some("unknown-99")
        );
    }
}

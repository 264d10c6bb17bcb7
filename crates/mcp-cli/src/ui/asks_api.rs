//! What servers ask back, answered in the page: the page's `ClientHandler` (elicitation, sampling, roots) and the route that answers a question.
//!
//! The settings page's connections declare `roots`, `sampling` and
//! `elicitation` (form and URL modes) as mcpctl does on a terminal
//! ([`crate::asks::capabilities`]), except tool use in sampling
//! (`sampling.tools`): the page's reply is text; the checks of a form's schema, the
//! description of a sampling request and the typed reply are
//! [`crate::asks`]'s, shared with the terminal.
//!
//! - A question (MCP "Client/Elicitation", "Client/Sampling") is put
//!   before the page: every open page receives the list of open
//!   questions over the event stream (`event: asks`) and shows a form
//!   for an elicitation, the URL as text (never opened) for a URL
//!   elicitation, and the request with a reply box for sampling (there
//!   is no model). It waits for the person's answer,
//!   `POST /api/asks/{id}`, at most [`ANSWER_WITHIN`]; unanswered, it
//!   is declined and the page says so.
//! - A URL elicitation's question ends, answered `accept`, when the
//!   server that asked says its flow is done
//!   (`notifications/elicitation/complete` naming its elicitation id, MCP
//!   2025-11-25 "Client/Elicitation"): the page shows it ended, "the
//!   server says this is done". Elicitation ids are each server's own, so
//!   a completion is matched by server and id: it comes from the
//!   manager's events ([`PageAsks::follow`], which name the server), and a
//!   question's server is the one of the Try it is attributed to; a
//!   question of no known server (asked while no Try, or several, ran) is
//!   ended by the person alone. A completion that comes before its
//!   question is remembered (the last [`asks::COMPLETIONS_KEPT`], as on
//!   the terminal: [`asks::CompletionMemory`]) and ends the question of
//!   that server as it comes; one for a question answered already, or for
//!   an id never asked, changes nothing.
//! - A question asked while no page is open is declined at once, with a
//!   line on stderr; so is a form whose schema is malformed (the line
//!   and the page name what is malformed), and one past [`OPEN_LIMIT`]
//!   questions waiting for the same Try.
//! - The page attributes a question to the Try (a tool call from the
//!   page) running when it came; when several run, to none of them (a
//!   server's question does not say which call it belongs to).
//! - Roots (MCP "Client/Roots"): `mcpctl ui --root DIR`, else the
//!   current directory.
//!
//! Everything a server sent is escaped and bounded here, and the page
//! inserts it as text, never as markup.
//!
//! | method | path | what |
//! |---|---|---|
//! | POST | `/api/asks/{id}` | the answer: `{"action": "accept", "content": {...}}` for a form, `{"action": "accept"}` for a URL (done), `{"action": "reply", "text": ...}` for sampling, or `{"action": "decline"}` / `{"action": "cancel"}` |

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use http::StatusCode;
use mcp_manager::ManagerEvent;
use mcp_proto::jsonrpc::ErrorObject;
use mcp_proto::text;
use mcp_proto::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitAction,
    ElicitRequestParams, ElicitResult, ListRootsResult, Root,
};
use mcp_transport::ClientHandler;
use serde_json::{Value, json};
use tokio::sync::{broadcast, oneshot, watch};

use super::response::{ResponseBody, json};
use crate::asks::{self, CompletionMemory, Field};

/// How long a question waits for the person before it is declined.
pub(crate) const ANSWER_WITHIN: Duration = Duration::from_secs(300);

/// The most questions open at once for one Try (and for the questions
/// no single Try is known for); more are declined at once.
pub(crate) const OPEN_LIMIT: usize = 4;

/// How many ended questions the page is told about (for their outcome).
const ENDED_KEPT: usize = 8;

/// The most bytes of a server's message shown.
const MESSAGE_TEXT: usize = 4096;

/// The most bytes of a sampling request shown in all.
const REQUEST_TEXT: usize = 256 * 1024;

/// The outcome of a URL question the server said was done.
const SERVER_DONE: &str = "the server says this is done: answered accept";

/// The outcome of a question the person answered.
const ANSWERED: &str = "answered";

/// The page's answers to server requests (see the module documentation).
#[derive(Debug)]
pub(crate) struct PageAsks {
    roots: Vec<Root>,
    within: Duration,
    state: Mutex<State>,
    /// Bumped at every change of the open or ended questions; each event
    /// stream sends the list again.
    changed: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct State {
    next_question: u64,
    next_try: u64,
    /// Open event streams: pages that can answer.
    pages: usize,
    trys: Vec<Try>,
    open: Vec<Open>,
    ended: VecDeque<Value>,
    /// URL elicitations' completions that matched no open question, by
    /// [`completion_key`].
    completions: CompletionMemory,
}

/// A tool call from the page, running.
#[derive(Debug)]
struct Try {
    id: u64,
    /// The server's id as the manager knows it.
    server_id: String,
    /// What the page shows of the server and the tool.
    server: String,
    tool: String,
}

/// A question waiting for the person.
#[derive(Debug)]
struct Open {
    id: u64,
    /// The Try it belongs to, when one alone was running.
    during: Option<u64>,
    /// That Try's server, which asked.
    server: Option<String>,
    /// What the page shows.
    shown: Value,
    /// The form's fields, to check a filled-in form against.
    fields: Option<Vec<Field>>,
    /// A URL elicitation's id, as the server sent it.
    elicitation: Option<String>,
    /// Where the answer goes, with the outcome the page shows.
    answer: Option<oneshot::Sender<(Answer, &'static str)>>,
}

/// What the person answered.
#[derive(Debug)]
enum Answer {
    Elicit(ElicitResult),
    Sample(Box<Result<CreateMessageResult, ErrorObject>>),
}

/// Why a question was declined without the person.
#[derive(Debug)]
enum Unasked {
    NoPage,
    TooMany,
}

impl PageAsks {
    /// The handler, answering `roots/list` with `roots`.
    pub(crate) fn new(roots: Vec<Root>) -> Arc<Self> {
        PageAsks::with_limit(roots, ANSWER_WITHIN)
    }

    /// [`PageAsks::new`] with questions declined after `within`.
    pub(crate) fn with_limit(roots: Vec<Root>, within: Duration) -> Arc<Self> {
        Arc::new(PageAsks {
            roots,
            within,
            state: Mutex::new(State::default()),
            changed: watch::channel(0).0,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A page opened its event stream: questions are asked while one is
    /// held.
    pub(crate) fn page(self: &Arc<Self>) -> PageGuard {
        self.lock().pages += 1;
        PageGuard(Arc::clone(self))
    }

    /// Told whenever the questions change.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// A Try of `tool` on `server` started; it ends when the guard drops.
    pub(crate) fn trying(self: &Arc<Self>, server: &str, tool: &str) -> TryGuard {
        let mut state = self.lock();
        state.next_try += 1;
        let id = state.next_try;
        // A tool's name is the server's text: escaped and bounded.
        state.trys.push(Try {
            id,
            server_id: server.to_owned(),
            server: asks::shown(server, text::NAME_LIMIT),
            tool: asks::shown(tool, text::NAME_LIMIT),
        });
        TryGuard(Arc::clone(self), id)
    }

    /// The questions for the page: `{open: [...], ended: [...]}`.
    pub(crate) fn snapshot(&self) -> Value {
        let state = self.lock();
        json!({
            "open": state.open.iter().map(|open| open.shown.clone()).collect::<Vec<_>>(),
            "ended": state.ended.iter().cloned().collect::<Vec<_>>(),
            "answerWithinSeconds": self.within.as_secs(),
        })
    }

    /// Puts a question before the page and waits for the answer; `None`
    /// when it was declined without the person (the reason is on stderr
    /// and in the page) or nobody answered in time. A URL elicitation
    /// (`elicitation`, its id) the server said was done already is
    /// answered `accept` at once.
    async fn ask(
        &self,
        kind: &str,
        mut shown: Value,
        fields: Option<Vec<Field>>,
        summary: &str,
        elicitation: Option<String>,
    ) -> Option<Answer> {
        let (sender, receiver) = oneshot::channel();
        let id = {
            let mut state = self.lock();
            state.next_question += 1;
            let id = state.next_question;
            let (during, place) = attribution(&state);
            let server = asking_server(&state);
            // What a completion from that server names it by.
            let key = elicitation
                .as_deref()
                .zip(server.as_deref())
                .map(|(elicitation, server)| completion_key(server, elicitation));
            let unasked = if state.pages == 0 {
                Some(Unasked::NoPage)
            } else if state.open.iter().filter(|o| o.during == during).count() >= OPEN_LIMIT {
                Some(Unasked::TooMany)
            } else {
                None
            };
            let running = state.trys.len();
            if let Some(object) = shown.as_object_mut() {
                object.insert("id".into(), json!(id));
                object.insert("kind".into(), json!(kind));
                object.insert("during".into(), place);
                object.insert("trysRunning".into(), json!(running));
                object.insert("askedAt".into(), json!(now_ms()));
                object.insert(
                    "declineAt".into(),
                    json!(now_ms() + self.within.as_millis()),
                );
            }
            if let Some(unasked) = unasked {
                let (line, outcome) = match unasked {
                    Unasked::NoPage => (
                        "no settings page is open to ask on".to_owned(),
                        "declined at once: no page was open".to_owned(),
                    ),
                    Unasked::TooMany => (
                        format!("{OPEN_LIMIT} questions already wait for an answer"),
                        format!("declined at once: {OPEN_LIMIT} questions already waited"),
                    ),
                };
                eprintln!("mcpctl ui: declined a server's question ({summary}): {line}");
                if let Some(key) = &key {
                    state.completions.ended(key);
                }
                end(&mut state, shown, &outcome);
                drop(state);
                self.bump();
                return None;
            }
            if let Some(key) = &key
                && state.completions.take_early(key)
            {
                state.completions.ended(key);
                end(&mut state, shown, SERVER_DONE);
                drop(state);
                self.bump();
                return Some(Answer::Elicit(ElicitResult::new(ElicitAction::Accept)));
            }
            state.open.push(Open {
                id,
                during,
                server,
                shown,
                fields,
                elicitation,
                answer: Some(sender),
            });
            id
        };
        self.bump();
        // Withdrawn by the server (its request cancelled, the connection
        // gone): the future is dropped, and the guard ends the question.
        let mut guard = Ending {
            asks: self,
            id,
            outcome: "withdrawn by the server",
        };
        match tokio::time::timeout(self.within, receiver).await {
            Ok(Ok((answer, outcome))) => {
                guard.outcome = outcome;
                Some(answer)
            }
            Ok(Err(_)) => None,
            Err(_) => {
                eprintln!(
                    "mcpctl ui: declined a server's question ({summary}): nobody answered within {} s",
                    self.within.as_secs()
                );
                guard.outcome = "declined: nobody answered in time";
                None
            }
        }
    }

    /// `POST /api/asks/{id}`.
    pub(crate) fn answer(&self, id: &str, body: &[u8]) -> http::Response<ResponseBody> {
        let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let Some(action) = request.get("action").and_then(Value::as_str) else {
            return super::api::bad_request(
                "send {\"action\": \"accept\" | \"decline\" | \"cancel\" | \"reply\", ...}",
            );
        };
        let mut state = self.lock();
        let Some(open) = id
            .parse::<u64>()
            .ok()
            .and_then(|id| state.open.iter_mut().find(|o| o.id == id))
        else {
            return error(
                StatusCode::NOT_FOUND,
                "unknown_question",
                "no such open question: it was answered, declined after the time limit, or withdrawn by the server",
            );
        };
        let kind = open.shown["kind"].as_str().unwrap_or_default();
        let answer = match (kind, action) {
            ("sampling", "reply") => {
                let text = request
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if text.trim().is_empty() {
                    return error(
                        StatusCode::BAD_REQUEST,
                        "invalid_answer",
                        "type a reply, or decline",
                    );
                }
                Answer::Sample(Box::new(Ok(asks::typed_reply(text.to_owned()))))
            }
            ("sampling", "decline" | "cancel") => Answer::Sample(Box::new(Err(asks::rejected()))),
            ("form" | "url", "decline") => Answer::Elicit(ElicitResult::new(ElicitAction::Decline)),
            ("form" | "url", "cancel") => Answer::Elicit(ElicitResult::new(ElicitAction::Cancel)),
            ("url", "accept") => Answer::Elicit(ElicitResult::new(ElicitAction::Accept)),
            ("form", "accept") => {
                let Some(content) = request.get("content").and_then(Value::as_object) else {
                    return error(
                        StatusCode::BAD_REQUEST,
                        "invalid_answer",
                        "send the filled-in form as `content`, an object",
                    );
                };
                if let Err(why) = asks::check_answer(open.fields.as_deref().unwrap_or(&[]), content)
                {
                    return error(StatusCode::BAD_REQUEST, "invalid_answer", &why);
                }
                let mut result = ElicitResult::new(ElicitAction::Accept);
                result.content = Some(content.clone());
                Answer::Elicit(result)
            }
            _ => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "invalid_answer",
                    &format!(
                        "`{}` does not answer a {kind} question",
                        text::bound(action, text::NAME_LIMIT)
                    ),
                );
            }
        };
        if let Some(sender) = open.answer.take() {
            let _ = sender.send((answer, ANSWERED));
        }
        drop(state);
        json(StatusCode::OK, &json!({"ok": true}))
    }

    /// Follows the manager's `events` until the manager ends: each
    /// [`ManagerEvent::ElicitationComplete`] (which names the server) is
    /// [`PageAsks::complete`]d.
    pub(crate) async fn follow(self: Arc<Self>, mut events: broadcast::Receiver<ManagerEvent>) {
        loop {
            match events.recv().await {
                Ok(ManagerEvent::ElicitationComplete { id, elicitation_id }) => {
                    self.complete(&id, &elicitation_id);
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// Server `server` says its URL elicitation `id` (as the manager's
    /// event carries it, bounded) is done: that server's open question
    /// about `id`, unless the person answered it first, is answered
    /// `accept`; with none open, [`CompletionMemory::not_open`] decides.
    /// Another server's question about the same id is not this one's.
    fn complete(&self, server: &str, id: &str) {
        let mut state = self.lock();
        if let Some(open) = state.open.iter_mut().find(|open| {
            open.server.as_deref() == Some(server)
                && open.elicitation.as_deref().map(bounded_id).as_deref() == Some(id)
        }) {
            // Answered by the person already: theirs stands.
            if let Some(sender) = open.answer.take() {
                let accept = Answer::Elicit(ElicitResult::new(ElicitAction::Accept));
                let _ = sender.send((accept, SERVER_DONE));
            }
            return;
        }
        let _ = state.completions.not_open(completion_key(server, id));
    }
}

/// An elicitation id as the manager's events carry it.
fn bounded_id(id: &str) -> String {
    text::bound(id, mcp_manager::ELICITATION_ID_LIMIT).into_owned()
}

/// What the completions of server `server` about elicitation `id` are
/// remembered under: the server's id and the (bounded) elicitation id, a
/// line apart (a server id has no line break).
fn completion_key(server: &str, id: &str) -> String {
    format!("{server}\n{}", bounded_id(id))
}

/// The server asking now: the one of the Try running, when one alone
/// runs.
fn asking_server(state: &State) -> Option<String> {
    match state.trys.as_slice() {
        [one] => Some(one.server_id.clone()),
        _ => None,
    }
}

/// The Try a question is attributed to: its id and `{server, tool}` when
/// one alone runs, else none and null.
fn attribution(state: &State) -> (Option<u64>, Value) {
    match state.trys.as_slice() {
        [one] => (
            Some(one.id),
            json!({"server": one.server, "tool": one.tool}),
        ),
        _ => (None, Value::Null),
    }
}

/// Moves a question to the ended ones with its outcome.
fn end(state: &mut State, mut shown: Value, outcome: &str) {
    if let Some(object) = shown.as_object_mut() {
        object.insert("outcome".into(), json!(outcome));
        object.insert("endedAt".into(), json!(now_ms()));
        // The ended list says what happened; the question's body is not
        // needed again.
        object.remove("fields");
        object.remove("request");
    }
    state.ended.push_back(shown);
    while state.ended.len() > ENDED_KEPT {
        state.ended.pop_front();
    }
}

/// Ends a question however its wait ended (answered, timed out, dropped).
struct Ending<'a> {
    asks: &'a PageAsks,
    id: u64,
    outcome: &'static str,
}

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        {
            let mut state = self.asks.lock();
            if let Some(at) = state.open.iter().position(|o| o.id == self.id) {
                let open = state.open.remove(at);
                if let (Some(elicitation), Some(server)) = (&open.elicitation, &open.server) {
                    state
                        .completions
                        .ended(&completion_key(server, elicitation));
                }
                end(&mut state, open.shown, self.outcome);
            }
        }
        self.asks.bump();
    }
}

/// Held while a page's event stream is open.
#[derive(Debug)]
pub(crate) struct PageGuard(Arc<PageAsks>);

impl Drop for PageGuard {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.pages = state.pages.saturating_sub(1);
    }
}

/// Held while a Try runs.
#[derive(Debug)]
pub(crate) struct TryGuard(Arc<PageAsks>, u64);

impl Drop for TryGuard {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.trys.retain(|t| t.id != self.1);
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

fn error(status: StatusCode, code: &str, message: &str) -> http::Response<ResponseBody> {
    json(
        status,
        &json!({"error": {"code": code, "message": message, "diagnostics": []}}),
    )
}

/// A server's text for the page: control characters escaped (line
/// breaks kept) and cut to `max` bytes.
fn block(text_: &str, max: usize) -> String {
    crate::output::block(&text::bound(text_, max)).into_owned()
}

#[async_trait]
impl ClientHandler for PageAsks {
    fn capabilities(&self) -> ClientCapabilities {
        // The page's reply is text: no tool use in sampling.
        asks::capabilities(false)
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Ok(ListRootsResult {
            roots: self.roots.clone(),
            ..Default::default()
        })
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let summary = asks::shown(params.message(), 200);
        let elicitation = match &params {
            ElicitRequestParams::Url(url) => Some(url.elicitation_id.clone()),
            ElicitRequestParams::Form(_) => None,
        };
        let (kind, shown, fields) = match &params {
            ElicitRequestParams::Form(form) => match asks::fields(form) {
                Ok(fields) => (
                    "form",
                    json!({
                        "message": block(&form.message, MESSAGE_TEXT),
                        "fields": asks::form_json(&fields),
                    }),
                    Some(fields),
                ),
                Err(malformed) => {
                    let malformed = asks::shown(&malformed, 400);
                    eprintln!(
                        "mcpctl ui: warning: declined a server's form ({summary}): its schema is malformed: {malformed}"
                    );
                    {
                        let mut state = self.lock();
                        state.next_question += 1;
                        let (_, place) = attribution(&state);
                        let shown = json!({
                            "id": state.next_question,
                            "kind": "form",
                            "message": block(&form.message, MESSAGE_TEXT),
                            "during": place,
                            "trysRunning": state.trys.len(),
                        });
                        end(
                            &mut state,
                            shown,
                            &format!("declined at once: its schema is malformed: {malformed}"),
                        );
                    }
                    self.bump();
                    return Ok(ElicitResult::new(ElicitAction::Decline));
                }
            },
            ElicitRequestParams::Url(url) => {
                let site = url::Url::parse(&url.url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_owned))
                    .map_or_else(|| "(not a valid URL)".to_owned(), |h| asks::shown(&h, 256));
                (
                    "url",
                    json!({
                        "message": block(&url.message, MESSAGE_TEXT),
                        "url": asks::shown(&url.url, MESSAGE_TEXT),
                        "site": site,
                    }),
                    None,
                )
            }
        };
        match self.ask(kind, shown, fields, &summary, elicitation).await {
            Some(Answer::Elicit(result)) => Ok(result),
            _ => Ok(ElicitResult::new(ElicitAction::Decline)),
        }
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        let full = asks::describe(&params);
        let shown = json!({
            "request": text::bound(&full, REQUEST_TEXT),
            "size": full.len(),
        });
        match self
            .ask("sampling", shown, None, "a sampling request", None)
            .await
        {
            Some(Answer::Sample(result)) => *result,
            _ => Err(asks::rejected()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_proto::types::ElicitFormParams;

    fn form() -> ElicitRequestParams {
        let form: ElicitFormParams = serde_json::from_value(json!({
            "message": "Who <b>are</b> you?",
            "requestedSchema": {"type": "object",
                "properties": {"name": {"type": "string", "minLength": 2}},
                "required": ["name"]}
        }))
        .unwrap();
        ElicitRequestParams::Form(form)
    }

    fn url(id: &str) -> ElicitRequestParams {
        ElicitRequestParams::Url(
            serde_json::from_value(json!({
                "mode": "url", "message": "Pay", "elicitationId": id,
                "url": "https://pay.example.org/checkout"
            }))
            .unwrap(),
        )
    }

    /// Server `server` says its elicitation `id` is done.
    fn done(asks: &PageAsks, server: &str, id: &str) {
        asks.complete(server, id);
    }

    fn outcomes(asks: &PageAsks) -> Vec<String> {
        asks.snapshot()["ended"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["outcome"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Starts asking `params` and waits until the question is open.
    async fn asking(
        asks: &Arc<PageAsks>,
        params: ElicitRequestParams,
    ) -> tokio::task::JoinHandle<Result<ElicitResult, ErrorObject>> {
        let before = open_ids(asks).len();
        let mut changes = asks.watch();
        let task = tokio::spawn({
            let asks = Arc::clone(asks);
            async move { asks.elicit(params).await }
        });
        while open_ids(asks).len() == before {
            changes.changed().await.unwrap();
        }
        task
    }

    #[tokio::test]
    async fn a_url_question_ends_answered_when_the_server_says_it_is_done() {
        let asks = PageAsks::new(Vec::new());
        let _page = asks.page();
        let _try = asks.trying("srv", "tool");
        let other = asking(&asks, url("e-other")).await;
        let waiting = asking(&asks, url("e-1")).await;
        let mut changes = asks.watch();
        changes.mark_unchanged();
        // An id no question has changes nothing, nor another server's
        // completion of the same id.
        done(&asks, "srv", "e-unknown");
        done(&asks, "elsewhere", "e-1");
        assert_eq!(open_ids(&asks), vec![1, 2]);
        done(&asks, "srv", "e-1");
        let result = waiting.await.unwrap().unwrap();
        assert_eq!(result.action, ElicitAction::Accept);
        assert!(changes.has_changed().unwrap(), "the page is told");
        assert_eq!(open_ids(&asks), vec![1], "the other question stays");
        assert_eq!(outcomes(&asks), [SERVER_DONE]);
        // Said again after it ended: nothing more.
        done(&asks, "srv", "e-1");
        assert_eq!(outcomes(&asks), [SERVER_DONE]);
        assert_eq!(open_ids(&asks), vec![1]);
        other.abort();
    }

    #[tokio::test]
    async fn a_completion_before_its_question_ends_the_question_as_it_comes() {
        let asks = PageAsks::new(Vec::new());
        let _page = asks.page();
        let _try = asks.trying("srv", "tool");
        done(&asks, "srv", "e-early");
        let result = asks.elicit(url("e-early")).await.unwrap();
        assert_eq!(result.action, ElicitAction::Accept);
        assert_eq!(outcomes(&asks), [SERVER_DONE]);
        // Taken: the same id asked again waits for the person.
        let again = asking(&asks, url("e-early")).await;
        assert_eq!(open_ids(&asks), vec![2]);
        again.abort();
    }

    #[tokio::test]
    async fn the_persons_answer_stands_against_a_later_completion() {
        let asks = PageAsks::new(Vec::new());
        let _page = asks.page();
        let _try = asks.trying("srv", "tool");
        let waiting = asking(&asks, url("e-1")).await;
        let ok = asks.answer("1", br#"{"action":"decline"}"#);
        assert_eq!(ok.status(), StatusCode::OK);
        done(&asks, "srv", "e-1");
        let result = waiting.await.unwrap().unwrap();
        assert_eq!(result.action, ElicitAction::Decline);
        assert_eq!(outcomes(&asks), [ANSWERED]);
        // Not remembered as early: the id asked again is not done.
        done(&asks, "srv", "e-1");
        let again = asking(&asks, url("e-1")).await;
        assert_eq!(open_ids(&asks), vec![2]);
        again.abort();
    }

    #[tokio::test]
    async fn a_completion_ends_only_the_question_of_the_server_that_sent_it() {
        let asks = PageAsks::new(Vec::new());
        let _page = asks.page();
        // Server a's question, then server b's with the same id.
        let try_a = asks.trying("a", "pay");
        let from_a = asking(&asks, url("e-1")).await;
        drop(try_a);
        let try_b = asks.trying("b", "pay");
        let from_b = asking(&asks, url("e-1")).await;
        drop(try_b);
        done(&asks, "b", "e-1");
        assert_eq!(from_b.await.unwrap().unwrap().action, ElicitAction::Accept);
        assert_eq!(open_ids(&asks), vec![1], "server a's question stays");
        // Server b's early word for an id does not end a's question to come.
        done(&asks, "b", "e-2");
        let _try_a = asks.trying("a", "pay");
        let later = asking(&asks, url("e-2")).await;
        assert_eq!(open_ids(&asks), vec![1, 3]);
        // A question of no known server (two Trys ran) waits for the person.
        let _try_c = asks.trying("c", "pay");
        let unknown = asking(&asks, url("e-3")).await;
        done(&asks, "c", "e-3");
        assert_eq!(open_ids(&asks), vec![1, 3, 4]);
        from_a.abort();
        later.abort();
        unknown.abort();
    }

    fn open_ids(asks: &PageAsks) -> Vec<u64> {
        asks.snapshot()["open"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["id"].as_u64().unwrap())
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn an_unanswered_question_is_declined_after_the_limit_and_the_page_told() {
        let asks = PageAsks::with_limit(Vec::new(), Duration::from_secs(60));
        let _page = asks.page();
        let asking = tokio::spawn({
            let asks = Arc::clone(&asks);
            async move { asks.elicit(form()).await }
        });
        tokio::task::yield_now().await;
        assert_eq!(open_ids(&asks), vec![1]);
        // The paused clock runs ahead to the limit once nothing else can.
        let result = asking.await.unwrap().unwrap();
        assert_eq!(result.action, ElicitAction::Decline);
        let snapshot = asks.snapshot();
        assert!(snapshot["open"].as_array().unwrap().is_empty());
        assert_eq!(
            snapshot["ended"][0]["outcome"],
            "declined: nobody answered in time"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_page_a_question_is_declined_at_once() {
        let asks = PageAsks::new(Vec::new());
        let started = tokio::time::Instant::now();
        let result = asks.elicit(form()).await.unwrap();
        assert_eq!(result.action, ElicitAction::Decline);
        assert_eq!(started.elapsed(), Duration::ZERO, "no waiting");
        assert_eq!(
            asks.snapshot()["ended"][0]["outcome"],
            "declined at once: no page was open"
        );
    }

    #[tokio::test]
    async fn a_form_answer_is_checked_against_the_schema_before_it_is_sent() {
        let asks = PageAsks::new(Vec::new());
        let _page = asks.page();
        let _try = asks.trying("srv", "tool");
        let asking = tokio::spawn({
            let asks = Arc::clone(&asks);
            async move { asks.elicit(form()).await }
        });
        let mut changes = asks.watch();
        while open_ids(&asks).is_empty() {
            changes.changed().await.unwrap();
        }
        let shown = asks.snapshot()["open"][0].clone();
        assert_eq!(shown["during"], json!({"server": "srv", "tool": "tool"}));
        assert_eq!(shown["fields"][0]["type"], "text");
        assert_eq!(shown["fields"][0]["required"], true);
        let short = asks.answer("1", br#"{"action":"accept","content":{"name":"A"}}"#);
        assert_eq!(short.status(), StatusCode::BAD_REQUEST);
        let missing = asks.answer("1", br#"{"action":"accept","content":{}}"#);
        assert_eq!(missing.status(), StatusCode::BAD_REQUEST);
        let extra = asks.answer(
            "1",
            br#"{"action":"accept","content":{"name":"Ada","x":1}}"#,
        );
        assert_eq!(extra.status(), StatusCode::BAD_REQUEST);
        let ok = asks.answer("1", br#"{"action":"accept","content":{"name":"Ada"}}"#);
        assert_eq!(ok.status(), StatusCode::OK);
        let result = asking.await.unwrap().unwrap();
        assert_eq!(result.action, ElicitAction::Accept);
        assert_eq!(result.content.unwrap()["name"], "Ada");
        let again = asks.answer("1", br#"{"action":"decline"}"#);
        assert_eq!(again.status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn questions_past_the_limit_for_one_try_are_declined_at_once() {
        let asks = PageAsks::new(Vec::new());
        let _page = asks.page();
        let _try = asks.trying("srv", "tool");
        let mut waiting = Vec::new();
        for _ in 0..OPEN_LIMIT {
            let asks = Arc::clone(&asks);
            waiting.push(tokio::spawn(async move { asks.elicit(form()).await }));
        }
        let mut changes = asks.watch();
        while open_ids(&asks).len() < OPEN_LIMIT {
            changes.changed().await.unwrap();
        }
        let result = asks.elicit(form()).await.unwrap();
        assert_eq!(result.action, ElicitAction::Decline);
        assert_eq!(open_ids(&asks).len(), OPEN_LIMIT);
        for task in waiting {
            task.abort();
        }
    }
}

//! Input rounds for the gateway's 2026-07-28 clients (2026-07-28 "Multi round-trip requests"): a call, prompt or read whose server asks back is answered `input_required`, and goes on when the client retries with its answers.
//!
//! A 2026-07-28 client cannot be sent a request, so when a handshake-era
//! server asks for elicitation, sampling or roots while the gateway works
//! on one of its client's `tools/call`, `prompts/get` or `resources/read`,
//! the work goes on in the background and the client
//! gets an `InputRequiredResult`: the questions asked so far under keys of
//! the gateway's (`inputRequests`), and a `requestState` that names the
//! waiting work. The client's retry (same method and name or URI, a new
//! id) with `inputResponses` and that `requestState` hands each answer to
//! the server's question and waits on the same work again: for its result,
//! or for the next questions. A question left unanswered is asked again
//! ("Error Handling": the server asks again rather than fail).
//!
//! A 2026-07-28 server's own `input_required` is relayed instead: the
//! gateway's connection hands the round back
//! (`CallOptions::return_input_required`) rather than answering it, the
//! client gets the server's `inputRequests` under the server's own keys,
//! and the server's `requestState` stays in the table behind one of the
//! gateway's. The client's retry is sent to the server: the client's
//! `inputResponses` as they came, the server's `requestState`, and a round
//! after that is relayed the same way. Such a server is told the client's
//! own capabilities, so that it asks only what the client can answer.
//!
//! The `requestState` is 128 random bits from the operating system, in
//! hex: an id in a table of the gateway's, so it carries nothing a client
//! could alter and cannot be guessed ("Security Considerations"). It is
//! good for one retry of the request that got it (a retry of another
//! method, tool, prompt or URI is refused and leaves it waiting), for at
//! most [`ROUND_TTL`]: then the work is dropped, which cancels it upstream.
//! At most [`MAX_WAITING`] requests wait on their clients at once; one
//! more is answered with an error and its work cancelled.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use mcp_proto::jsonrpc::error_codes;
use mcp_proto::types::{InputRequiredResult, JsonObject, ResultType};
use mcp_proto::{ErrorObject, RawJson};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle};

/// How long a request's work waits for its client's retry.
pub(super) const ROUND_TTL: Duration = Duration::from_secs(300);

/// At most this many requests wait for their clients' retries at once.
pub(super) const MAX_WAITING: usize = 64;

/// A server's request, waiting for the answer the client will give on its
/// retry.
#[derive(Debug)]
pub(super) struct Ask {
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub(super) method: String,
    pub(super) params: Option<Value>,
    /// Where the client's answer goes.
    pub(super) answer: oneshot::Sender<Value>,
}

/// What a request's work is about: its method and the name or URI it
/// names, which a retry must repeat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Subject {
    pub(super) method: String,
    pub(super) name: String,
}

impl Subject {
    /// The subject of `method` with `params` (its `name`, or for
    /// `resources/read` its `uri`).
    pub(super) fn of(method: &str, params: &JsonObject) -> Subject {
        let field = if method == mcp_proto::methods::RESOURCES_READ {
            "uri"
        } else {
            "name"
        };
        Subject {
            method: method.to_owned(),
            name: params
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        }
    }
}

/// One request's work and the questions it waits on. Dropping it cancels
/// the work (its future is dropped, or its task aborted, which drops the
/// call's future and with it the call upstream).
#[derive(Debug)]
pub(super) struct Work {
    subject: Subject,
    asks: mpsc::UnboundedReceiver<Ask>,
    done: Task,
    /// The questions not answered yet, by the key the client was given.
    pending: BTreeMap<String, Pending>,
    /// The last key given.
    keys: u64,
    /// Set while the work is parked for its client's retry
    /// ([`Work::parking`]).
    parked: Option<Arc<AtomicBool>>,
    /// Where the servers' progress and log messages about the work go:
    /// the request the work now answers to, each retry in turn.
    pub(super) target: Option<super::deliver::Target>,
}

/// A request's work: polled by the request that waits on it until a
/// server asks a question, then a task of its own, which goes on while the
/// client answers ([`Work::detach`]). Most work is never asked anything:
/// it costs no task and no hop between threads.
enum Task {
    Here(Pin<Box<dyn Future<Output = Result<RawJson, ErrorObject>> + Send>>),
    Spawned(JoinHandle<Result<RawJson, ErrorObject>>),
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Task::Here(_) => "Task::Here",
            Task::Spawned(_) => "Task::Spawned",
        })
    }
}

impl Future for Task {
    type Output = Result<RawJson, ErrorObject>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut *self {
            Task::Here(work) => work.as_mut().poll(cx),
            Task::Spawned(task) => Pin::new(task).poll(cx).map(|joined| {
                joined.unwrap_or_else(|error| {
                    Err(ErrorObject::new(
                        error_codes::INTERNAL_ERROR,
                        format!("the request's work ended without an answer: {error}"),
                    ))
                })
            }),
        }
    }
}

#[derive(Debug)]
struct Pending {
    /// `{"method", "params"}` as the client was sent it.
    request: Value,
    answer: oneshot::Sender<Value>,
}

impl Work {
    /// The work `done` (the task answering the request about `subject`),
    /// whose servers' questions arrive on `asks`.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) fn new(
        subject: Subject,
        asks: mpsc::UnboundedReceiver<Ask>,
        done: JoinHandle<Result<RawJson, ErrorObject>>,
    ) -> Work {
        Work {
            subject,
            asks,
            done: Task::Spawned(done),
            pending: BTreeMap::new(),
            keys: 0,
            parked: None,
            target: None,
        }
    }

    /// `parked` is set while the work waits for its client's retry and
    /// cleared when the retry resumes it (see [`super::asks`]: a parked
    /// request is no client waiting on a server).
    pub(super) fn parking(mut self, parked: Arc<AtomicBool>) -> Work {
        self.parked = Some(parked);
        self
    }

    fn set_parked(&self, parked: bool) {
        if let Some(flag) = &self.parked {
            flag.store(parked, Ordering::Release);
        }
    }

    /// The work `done` (the future answering the request about
    /// `subject`), whose servers' questions arrive on `asks`: polled by
    /// [`Rounds::drive`] until a question comes, then a task of its own.
    pub(super) fn here(
        subject: Subject,
        asks: mpsc::UnboundedReceiver<Ask>,
        done: impl Future<Output = Result<RawJson, ErrorObject>> + Send + 'static,
    ) -> Work {
        Work {
            subject,
            asks,
            done: Task::Here(Box::pin(done)),
            pending: BTreeMap::new(),
            keys: 0,
            parked: None,
            target: None,
        }
    }

    /// Moves work polled here onto a task of its own, to go on while its
    /// client answers.
    fn detach(&mut self) {
        if let Task::Here(done) = &mut self.done {
            let done = std::mem::replace(done, Box::pin(std::future::pending()));
            self.done = Task::Spawned(tokio::spawn(done));
        }
    }

    fn add(&mut self, ask: Ask) {
        self.keys += 1;
        let mut request = JsonObject::new();
        request.insert("method".to_owned(), Value::String(ask.method));
        if let Some(params) = ask.params {
            request.insert("params".to_owned(), params);
        }
        self.pending.insert(
            format!("input-{}", self.keys),
            Pending {
                request: Value::Object(request),
                answer: ask.answer,
            },
        );
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        if let Task::Spawned(task) = &self.done {
            task.abort();
        }
    }
}

/// A 2026-07-28 server's own input round, relayed to the client: what the
/// retry must repeat and the server's `requestState` it goes on with.
#[derive(Debug)]
struct Relayed {
    subject: Subject,
    /// The server's, kept here: the client sees only the gateway's.
    state: Option<String>,
}

/// What waits for a client's retry.
#[derive(Debug)]
enum Waiting {
    /// Work the gateway's connection keeps going, its servers' questions
    /// asked under the gateway's keys.
    Work(Work),
    /// A request a 2026-07-28 server answered `input_required`: the retry
    /// is sent to it again.
    Relayed(Relayed),
}

impl Waiting {
    fn subject(&self) -> &Subject {
        match self {
            Waiting::Work(work) => &work.subject,
            Waiting::Relayed(relayed) => &relayed.subject,
        }
    }
}

/// One request waiting for its client's retry.
#[derive(Debug)]
struct Parked {
    waiting: Waiting,
    /// The timer that drops it at [`ROUND_TTL`].
    expiry: AbortHandle,
}

/// What a client's retry goes on with.
#[derive(Debug)]
pub(super) enum Resumed {
    /// The work that waited, each answer handed to its question.
    Work(Work),
    /// A request to send the server again: the client's `inputResponses`
    /// as they came (by the server's keys) and the server's
    /// `requestState`.
    Retry {
        responses: Option<JsonObject>,
        state: Option<String>,
    },
}

/// The gateway's requests waiting for their clients' retries, by
/// `requestState`.
#[derive(Debug, Default)]
pub(super) struct Rounds {
    parked: Mutex<HashMap<String, Parked>>,
}

impl Rounds {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many requests wait for their clients.
    #[cfg(test)]
    pub(super) fn waiting(&self) -> usize {
        self.lock().len()
    }

    /// What a retry of `subject` with `state` goes on with: the work it
    /// resumes, each of `responses` handed to the question with its key
    /// (keys the gateway did not give are ignored), or for a server's own
    /// round the request to send it again with `responses` whole. Refused,
    /// with the request left waiting, when `state` names no waiting
    /// request or another one.
    pub(super) fn resume(
        &self,
        state: &str,
        subject: &Subject,
        responses: Option<Value>,
    ) -> Result<Resumed, ErrorObject> {
        let responses = match responses {
            None | Some(Value::Null) => None,
            Some(Value::Object(responses)) => Some(responses),
            Some(_) => {
                return Err(ErrorObject::invalid_params(
                    "inputResponses must be an object of answers by the keys of inputRequests",
                ));
            }
        };
        let mut parked = self.lock();
        let Some(waiting) = parked.get(state) else {
            return Err(ErrorObject::invalid_params(
                "requestState names no request waiting at this gateway: unknown, expired or \
                 already retried",
            ));
        };
        let waiting_for = waiting.waiting.subject();
        if waiting_for != subject {
            return Err(ErrorObject::invalid_params(format!(
                "requestState belongs to another request ({} of {}), not to this {} of {}",
                waiting_for.method,
                mcp_proto::text::bound(&waiting_for.name, 128),
                subject.method,
                mcp_proto::text::bound(&subject.name, 128),
            )));
        }
        let Some(Parked { waiting, expiry }) = parked.remove(state) else {
            unreachable!("looked up under the same lock");
        };
        drop(parked);
        expiry.abort();
        let mut work = match waiting {
            Waiting::Work(work) => {
                work.set_parked(false);
                work
            }
            Waiting::Relayed(relayed) => {
                return Ok(Resumed::Retry {
                    responses,
                    state: relayed.state,
                });
            }
        };
        for (key, response) in responses.unwrap_or_default() {
            if let Some(pending) = work.pending.remove(&key) {
                // The server may have stopped waiting (its call timed out):
                // then the answer has nowhere to go.
                let _ = pending.answer.send(response);
            }
        }
        Ok(Resumed::Work(work))
    }

    /// Waits on `work` for its result, or for its servers' questions,
    /// which it answers `input_required` with, the work left waiting for
    /// the client's retry. A result that is a 2026-07-28 server's own
    /// `input_required` goes to the client with the server's
    /// `inputRequests` unchanged and a `requestState` of the gateway's, the
    /// server's kept for the retry.
    pub(super) async fn drive(self: &Arc<Self>, mut work: Work) -> Result<RawJson, ErrorObject> {
        loop {
            // A question whose server stopped waiting is not asked.
            work.pending
                .retain(|_, pending| !pending.answer.is_closed());
            if !work.pending.is_empty() {
                let requests = work
                    .pending
                    .iter()
                    .map(|(key, pending)| (key.clone(), pending.request.clone()))
                    .collect();
                work.set_parked(true);
                work.detach();
                return self.park(Waiting::Work(work), Some(requests));
            }
            tokio::select! {
                answer = &mut work.done => {
                    let answer = answer?;
                    if !matches!(answer.result_type(), Ok(ResultType::InputRequired)) {
                        return Ok(answer);
                    }
                    let round: InputRequiredResult = answer.decode().map_err(|error| {
                        ErrorObject::new(
                            error_codes::INTERNAL_ERROR,
                            format!("the server's input_required result is invalid: {error}"),
                        )
                    })?;
                    let relayed = Relayed {
                        subject: work.subject.clone(),
                        state: round.request_state,
                    };
                    return self.park(Waiting::Relayed(relayed), round.input_requests);
                }
                Some(ask) = work.asks.recv() => {
                    work.add(ask);
                    // Questions asked together go to the client together.
                    while let Ok(more) = work.asks.try_recv() {
                        work.add(more);
                    }
                }
            }
        }
    }

    /// Keeps `waiting` for its client's retry and answers
    /// `input_required` with `requests`.
    fn park(
        self: &Arc<Self>,
        waiting: Waiting,
        requests: Option<JsonObject>,
    ) -> Result<RawJson, ErrorObject> {
        let state = new_state()?;
        {
            let mut parked = self.lock();
            if parked.len() >= MAX_WAITING {
                return Err(ErrorObject::new(
                    error_codes::INTERNAL_ERROR,
                    format!(
                        "a server asked for input, but {MAX_WAITING} requests already wait for \
                         their clients' answers at this gateway; try again later"
                    ),
                ));
            }
            let expiry = tokio::spawn(expire(Arc::downgrade(self), state.clone()));
            parked.insert(
                state.clone(),
                Parked {
                    waiting,
                    expiry: expiry.abort_handle(),
                },
            );
        }
        RawJson::encode(&InputRequiredResult {
            input_requests: requests,
            request_state: Some(state),
            result_type: Some(ResultType::InputRequired),
            ..InputRequiredResult::default()
        })
        .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))
    }
}

/// Drops the work waiting under `state` at [`ROUND_TTL`].
async fn expire(rounds: Weak<Rounds>, state: String) {
    tokio::time::sleep(ROUND_TTL).await;
    let expired = rounds
        .upgrade()
        .and_then(|rounds| rounds.lock().remove(&state));
    // Dropped outside the lock: that cancels the work.
    drop(expired);
}

/// A fresh `requestState`: 128 bits from the operating system, in hex.
fn new_state() -> Result<String, ErrorObject> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| {
        ErrorObject::new(
            error_codes::INTERNAL_ERROR,
            format!("no randomness for a requestState: {error}"),
        )
    })?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject() -> Subject {
        Subject {
            method: "tools/call".to_owned(),
            name: "confirm".to_owned(),
        }
    }

    /// Work that asks one question and answers with what it was told.
    fn asking() -> Work {
        let (asks, asked) = mpsc::unbounded_channel();
        let done = tokio::spawn(async move {
            let (answer, answered) = oneshot::channel();
            asks.send(Ask {
                method: "roots/list".to_owned(),
                params: None,
                answer,
            })
            .unwrap();
            let told = answered.await.map_err(|_| {
                ErrorObject::new(error_codes::INTERNAL_ERROR, "the question went unanswered")
            })?;
            RawJson::encode(&told)
                .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))
        });
        Work::new(subject(), asked, done)
    }

    fn asked(raw: &RawJson) -> InputRequiredResult {
        raw.decode().unwrap()
    }

    #[tokio::test]
    async fn a_question_is_answered_input_required_and_the_retry_resumes_the_work() {
        let rounds = Arc::new(Rounds::default());
        let parked = Arc::new(AtomicBool::new(false));
        let first = asked(
            &rounds
                .drive(asking().parking(Arc::clone(&parked)))
                .await
                .unwrap(),
        );
        assert!(parked.load(Ordering::Acquire), "parked for the retry");
        assert_eq!(first.result_type, Some(ResultType::InputRequired));
        let requests = first.input_requests.unwrap();
        assert_eq!(requests.len(), 1);
        let (key, request) = requests.iter().next().unwrap();
        assert_eq!(request["method"], "roots/list");
        let state = first.request_state.unwrap();
        assert_eq!(state.len(), 32, "{state}");

        // Another request may not use it, and leaves it waiting.
        let other = Subject {
            name: "other".to_owned(),
            ..subject()
        };
        let refused = rounds.resume(&state, &other, None).unwrap_err();
        assert_eq!(refused.code, error_codes::INVALID_PARAMS);
        assert!(refused.message.contains("another request"), "{refused}");

        // A retry without the answer is asked the same question again.
        let Resumed::Work(work) = rounds.resume(&state, &subject(), None).unwrap() else {
            panic!("the gateway's own work resumes");
        };
        assert!(!parked.load(Ordering::Acquire), "running again");
        let again = asked(&rounds.drive(work).await.unwrap());
        assert_eq!(
            again.input_requests.as_ref().unwrap().get(key),
            Some(request)
        );
        let state = again.request_state.unwrap();

        let answer = serde_json::json!({"roots": []});
        let responses = serde_json::json!({ key.clone(): answer.clone() });
        let Resumed::Work(work) = rounds.resume(&state, &subject(), Some(responses)).unwrap()
        else {
            panic!("the gateway's own work resumes");
        };
        let done = rounds.drive(work).await.unwrap();
        assert_eq!(done.decode::<Value>().unwrap(), answer);
        // Used once.
        assert!(rounds.resume(&state, &subject(), None).is_err());
        assert_eq!(rounds.waiting(), 0);
    }

    #[tokio::test]
    async fn a_servers_own_round_keeps_its_keys_and_its_state_stays_here() {
        let rounds = Arc::new(Rounds::default());
        let (_asks, questions) = mpsc::unbounded_channel();
        let round = serde_json::json!({"resultType": "input_required",
            "inputRequests": {"server-key": {"method": "roots/list"}},
            "requestState": "the-servers-state"});
        let done = tokio::spawn(async move { Ok(RawJson::encode(&round).unwrap()) });
        let relayed = asked(
            &rounds
                .drive(Work::new(subject(), questions, done))
                .await
                .unwrap(),
        );
        let requests = relayed.input_requests.unwrap();
        assert_eq!(requests["server-key"]["method"], "roots/list");
        let state = relayed.request_state.unwrap();
        assert_ne!(state, "the-servers-state");
        assert_eq!(state.len(), 32, "{state}");

        let answers = serde_json::json!({"server-key": {"roots": []}, "other": 1});
        match rounds
            .resume(&state, &subject(), Some(answers.clone()))
            .unwrap()
        {
            Resumed::Retry { responses, state } => {
                assert_eq!(
                    Value::Object(responses.unwrap()),
                    answers,
                    "passed on whole"
                );
                assert_eq!(state.as_deref(), Some("the-servers-state"));
            }
            Resumed::Work(_) => panic!("a relayed round is sent to its server again"),
        }
        assert!(
            rounds.resume(&state, &subject(), None).is_err(),
            "used once"
        );
        assert_eq!(rounds.waiting(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn work_whose_client_never_retries_is_dropped_when_its_time_is_up() {
        let rounds = Arc::new(Rounds::default());
        let first = asked(&rounds.drive(asking()).await.unwrap());
        let state = first.request_state.unwrap();
        assert_eq!(rounds.waiting(), 1);
        tokio::time::sleep(ROUND_TTL + Duration::from_secs(1)).await;
        assert_eq!(rounds.waiting(), 0);
        let expired = rounds.resume(&state, &subject(), None).unwrap_err();
        assert!(expired.message.contains("unknown, expired"), "{expired}");
        let forged = rounds.resume(&"0".repeat(32), &subject(), None);
        assert!(forged.is_err());
    }
}

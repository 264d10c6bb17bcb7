//! The page's OAuth login: `POST /api/servers/{id}/login` runs the server's grant as `mcpctl login` does, with the page opening the authorization URL.
//!
//! For the authorization code grant (RFC 6749 §4.1 with PKCE, the
//! default), the answer is `{"authorizationUrl": "https://..."}` as soon as
//! the client has discovered the authorization server and registered: the
//! page opens it in a new tab, and mcpctl's loopback listener
//! (`http://127.0.0.1:PORT/callback`, the configured `oauth.redirectPort`,
//! else a free one) waits up to [`BROWSER_WAIT`] for the browser to come
//! back. For the client credentials and JWT bearer grants nobody is
//! needed: the answer is `{"done": true}` once the tokens are stored.
//!
//! Either way the tokens go where every later run finds them
//! (`<data dir>/oauth`), the server is retried, and the listing's `login`
//! field says how it went (`waiting`, `failed` with the reason, `done`);
//! each change is sent to the page at once. Nothing here ever shows a
//! token.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::App;
use super::response::{ResponseBody, json};
use crate::login::{Prompt, Target};

/// How long a login waits for the person's browser to come back.
pub(crate) const BROWSER_WAIT: Duration = Duration::from_secs(300);

/// The longest the page's request waits for the authorization URL (the
/// client first discovers the authorization server and registers with it,
/// each request bounded by the OAuth client's own timeouts).
const URL_WAIT: Duration = Duration::from_secs(60);

/// How a login started from the page is going.
#[derive(Clone, Debug)]
enum State {
    /// Waiting for the browser to come back from this URL.
    Waiting(String),
    /// It failed, for this reason.
    Failed(String),
    /// The tokens are stored.
    Done,
}

/// The logins started from the page, by server id.
#[derive(Clone, Debug, Default)]
pub(crate) struct Logins(Arc<Mutex<HashMap<String, State>>>);

impl Logins {
    /// The listing's `login` field for `id`: `null`, or `{state, message,
    /// authorizationUrl}`.
    pub(crate) fn state(&self, id: &str) -> Value {
        let states = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match states.get(id) {
            None => Value::Null,
            Some(State::Waiting(url)) => json!({"state": "waiting", "authorizationUrl": url}),
            Some(State::Failed(message)) => json!({"state": "failed", "message": message}),
            Some(State::Done) => json!({"state": "done"}),
        }
    }

    fn set(&self, id: &str, state: State) {
        let mut states = self.0.lock().unwrap_or_else(|e| e.into_inner());
        states.insert(id.to_owned(), state);
    }

    fn waiting(&self, id: &str) -> Option<String> {
        let states = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match states.get(id) {
            Some(State::Waiting(url)) => Some(url.clone()),
            _ => None,
        }
    }
}

/// `POST /api/servers/{id}/login`.
pub(crate) async fn start(app: &App, id: &str) -> http::Response<ResponseBody> {
    if let Some(url) = app.logins.waiting(id) {
        // The person clicked again: the same login, the same URL.
        return json(StatusCode::OK, &json!({"authorizationUrl": url}));
    }
    let target = match Target::find(id, &app.sources, false).await {
        Ok(target) => target,
        Err(error) => return refusal(StatusCode::BAD_REQUEST, &error),
    };
    let browser = target.needs_browser();
    let (url_sender, url_receiver) = oneshot::channel();
    let (done_sender, done_receiver) = oneshot::channel();
    let logins = app.logins.clone();
    let manager = app.manager.clone();
    let changed = app.changed.clone();
    let owned = id.to_owned();
    tokio::spawn(async move {
        let prompt = Prompt::Send(Mutex::new(Some(url_sender)));
        let result = target.login(BROWSER_WAIT, prompt).await;
        match &result {
            Ok(_) => {
                logins.set(&owned, State::Done);
                // A fresh connection, with the stored tokens.
                let _ = manager.retry(&owned);
            }
            Err(error) => logins.set(
                &owned,
                State::Failed(crate::output::line(&error.message).into_owned()),
            ),
        }
        let _ = changed.send(());
        let _ = done_sender.send(result.map(|_| ()));
    });
    if !browser {
        return match done_receiver.await {
            Ok(Ok(())) => json(StatusCode::OK, &json!({"done": true})),
            Ok(Err(error)) => refusal(StatusCode::BAD_GATEWAY, &error),
            Err(_) => json(
                StatusCode::INTERNAL_SERVER_ERROR,
                &json!({"error": {"code": "login_failed", "message": "the login ended without an answer"}}),
            ),
        };
    }
    let url = tokio::select! {
        url = tokio::time::timeout(URL_WAIT, url_receiver) => match url {
            Ok(Ok(url)) => url,
            // The grant ended before it needed the browser: its answer says why.
            Ok(Err(_)) => return match done_receiver.await {
                Ok(Err(error)) => refusal(StatusCode::BAD_GATEWAY, &error),
                _ => json(StatusCode::OK, &json!({"done": true})),
            },
            Err(_) => return json(
                StatusCode::GATEWAY_TIMEOUT,
                &json!({"error": {"code": "login_timeout", "message": format!(
                    "the authorization server did not give an authorization URL within {} s",
                    URL_WAIT.as_secs())}}),
            ),
        },
    };
    // Only a web page is opened for the person: never another scheme.
    if !matches!(url.scheme(), "https" | "http") {
        return json(
            StatusCode::BAD_GATEWAY,
            &json!({"error": {"code": "login_failed", "message":
                "the authorization server's authorization URL is not an http(s) URL; it was not opened"}}),
        );
    }
    let url = url.to_string();
    app.logins.set(id, State::Waiting(url.clone()));
    let _ = app.changed.send(());
    json(StatusCode::OK, &json!({"authorizationUrl": url}))
}

/// A CLI error as the page's error: its stable code and its message.
fn refusal(status: StatusCode, error: &crate::exit::CliError) -> http::Response<ResponseBody> {
    json(
        status,
        &json!({"error": {
            "code": error.code.unwrap_or("login_failed"),
            "message": crate::output::line(&error.message),
        }}),
    )
}

//! The page's HTTP layer: the request checks (token, `Host`, `Origin`), routing, embedded assets and the event stream.
//!
//! Routes (every `/api` route needs the token, as the `x-mcpctl-token`
//! header or the `token` query parameter):
//!
//! | method | path | what |
//! |---|---|---|
//! | GET | `/?token=T` | the page (or the malformed-store page) |
//! | GET | `/app.js`, `/app.css` | the embedded script and style |
//! | GET | `/api/servers` | every server of every source, redacted, with status and tools |
//! | POST | `/api/servers` | create a store server |
//! | POST | `/api/servers/validate` | the problems a save would report |
//! | PUT | `/api/servers/{id}` | save (edit) a store server |
//! | DELETE | `/api/servers/{id}` | remove a store server |
//! | POST | `/api/servers/{id}/enabled` | `{"enabled": bool}` |
//! | POST | `/api/servers/{id}/retry` | a fresh connection attempt |
//! | POST | `/api/servers/{id}/copy` | copy another source's server into the store |
//! | POST | `/api/servers/{id}/login` | an OAuth login (see `login_api`) |
//! | POST | `/api/servers/{id}/call` | try a tool (see `use_api`) |
//! | GET | `/api/servers/{id}/offers` | its resources, templates and prompts |
//! | POST | `/api/servers/{id}/read` | read a resource |
//! | POST | `/api/servers/{id}/log-level` | its log level (see `live`) |
//! | POST | `/api/servers/{id}/subscribe`, `.../unsubscribe` | follow a resource's updates (see `live`) |
//! | POST | `/api/asks/{id}` | answer a server's question (see `asks_api`) |
//! | GET | `/api/events` | server-sent events: the list after every change (`servers`), the open questions (`asks`), the log feeds whole (`logs`) and each new line (`log`) |
//! | GET | `/api/trust` | the project servers waiting for approval |
//! | POST | `/api/trust/{id}` | `{"hash": ...}`: approve one (see `trust_api`) |

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Frame, Incoming};
use mcp_config::StoreError;
use mcp_manager::ManagerEvent;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::mpsc;

use super::App;
use super::response::{ResponseBody, set};
use super::{api, login_api, trust_api, use_api};

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

/// The largest request body the API reads (a server config is a few KiB).
const BODY_LIMIT: usize = 256 * 1024;

/// Answers one request, with the headers every answer carries: no MIME
/// sniffing, no `Referer` sent on from the page (its URL holds the token),
/// and, for everything but the two static assets, no caching.
pub(crate) async fn handle(app: &Arc<App>, request: Request<Incoming>) -> Response<ResponseBody> {
    let asset =
        request.method() == Method::GET && matches!(request.uri().path(), "/app.js" | "/app.css");
    let mut response = route(app, request).await;
    set(&mut response, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(&mut response, header::REFERRER_POLICY, "no-referrer");
    if !asset {
        set(&mut response, header::CACHE_CONTROL, "no-store");
    }
    response
}

async fn route(app: &Arc<App>, request: Request<Incoming>) -> Response<ResponseBody> {
    // `Host` must name this listener and `Origin`, when present, this page.
    if let Err(refusal) = crate::loopback::check_host_and_origin(app.port, request.headers()) {
        return text(StatusCode::FORBIDDEN, refusal);
    }
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    match (&method, path.as_str()) {
        (&Method::GET, "/app.js") => asset(APP_JS, "text/javascript; charset=utf-8"),
        (&Method::GET, "/app.css") => asset(APP_CSS, "text/css; charset=utf-8"),
        (&Method::GET, "/favicon.ico") => empty(StatusCode::NO_CONTENT),
        _ if !has_token(app, &request) => text(
            StatusCode::FORBIDDEN,
            "missing or wrong token: open the URL `mcpctl ui` printed",
        ),
        (&Method::GET, "/") => {
            // The page was opened with the token: the `--open` launch
            // file has done its work.
            app.forget_launch_file();
            index(app).await
        }
        (&Method::GET, "/api/events") => events(app).await,
        _ if path.starts_with("/api/") => {
            let body = match read_body(request).await {
                Ok(body) => body,
                Err(response) => return response,
            };
            if path == "/api/trust" || path.starts_with("/api/trust/") {
                return trust_api::route(app, &method, &path, &body).await;
            }
            let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
            match (&method, segments.as_slice()) {
                (&Method::POST, ["api", "servers", id, "login"]) => login_api::start(app, id).await,
                (&Method::POST, ["api", "servers", id, "call"]) => {
                    use_api::call(app, id, &body).await
                }
                (&Method::GET, ["api", "servers", id, "offers"]) => use_api::offers(app, id).await,
                (&Method::POST, ["api", "servers", id, "read"]) => {
                    use_api::read(app, id, &body).await
                }
                (&Method::POST, ["api", "servers", id, "log-level"]) => {
                    let answer = app.live.set_level(&app.manager, id, &body).await;
                    // The listing carries each server's level.
                    let _ = app.changed.send(());
                    answer
                }
                (&Method::POST, ["api", "servers", id, action @ ("subscribe" | "unsubscribe")]) => {
                    app.live
                        .subscribe(&app.manager, id, &body, *action == "subscribe")
                        .await
                }
                (&Method::POST, ["api", "asks", id]) => app.asks.answer(id, &body),
                _ => api::route(app, &method, &path, &body).await,
            }
        }
        _ => text(StatusCode::NOT_FOUND, "not found"),
    }
}

/// Whether the request carries this launch's token.
fn has_token(app: &App, request: &Request<Incoming>) -> bool {
    let header = request
        .headers()
        .get("x-mcpctl-token")
        .and_then(|h| h.to_str().ok());
    let query = request.uri().query().and_then(|query| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("token="))
    });
    header
        .or(query)
        .is_some_and(|given| crate::loopback::same_secret(given, &app.token))
}

/// The page, or, when the store cannot be read, a page naming the file and
/// saying how to repair it (malformed files fail without being
/// overwritten; repair them and restart).
async fn index(app: &App) -> Response<ResponseBody> {
    match app.manager.list().await {
        Err(mcp_manager::ManagerError::Store(
            error @ (StoreError::Malformed { .. }
            | StoreError::UnsupportedVersion { .. }
            | StoreError::Read { .. }),
        )) => {
            let page = store_error_page(&app.store, &error);
            let mut response = html(page);
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            response
        }
        _ => html(INDEX_HTML.to_owned()),
    }
}

fn store_error_page(store: &mcp_config::Store, error: &StoreError) -> String {
    let path = escape(&store.path().display().to_string());
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>MCP settings: the store needs repair</title>\
         <link rel=\"stylesheet\" href=\"/app.css\"></head><body>\
         <main class=\"page\"><section class=\"store-error\" id=\"store-error\">\
         <h1>The MCP server store cannot be read</h1>\
         <p>The file <code id=\"store-path\">{path}</code> is not a valid store ({code}).</p>\
         <p class=\"detail\">{detail}</p>\
         <p><strong>Nothing has been changed or overwritten.</strong> To repair it, \
         open the file in an editor and fix it so that it is a JSON object \
         <code>{{\"version\": 1, \"servers\": [...]}}</code>, or move it aside to \
         start with no servers. Then stop <code>mcpctl ui</code> (Ctrl-C) and \
         start it again.</p></section></main></body></html>",
        code = error.code(),
        detail = escape(&mcp_proto::text::ErrorChain(error).to_string()),
    )
}

/// The event stream: the whole list at once, then again after every change
/// the manager announces (bursts coalesced into one message); the open
/// questions at once and after every change; each server's kept log lines
/// at once, then each new one (all again when the stream fell behind).
/// While it is open, servers' questions are put before the page.
async fn events(app: &Arc<App>) -> Response<ResponseBody> {
    let (sender, receiver) = mpsc::channel::<Bytes>(8);
    let mut events = app.manager.events();
    let mut changed = app.changed.subscribe();
    let mut feed = app.live.lines();
    let mut asks = app.asks.watch();
    let page = app.asks.page();
    let app = Arc::clone(app);
    tokio::spawn(async move {
        // Questions are asked while this stream is open.
        let _page = page;
        let mut send_listing = true;
        let mut send_asks = true;
        let mut send_logs = true;
        let mut seen = 0;
        loop {
            if send_listing {
                let message = format!("event: servers\ndata: {}\n\n", api::listing(&app).await);
                if sender.send(Bytes::from(message)).await.is_err() {
                    return; // The page went away.
                }
            }
            if send_asks {
                asks.mark_unchanged();
                let message = format!("event: asks\ndata: {}\n\n", app.asks.snapshot());
                if sender.send(Bytes::from(message)).await.is_err() {
                    return;
                }
            }
            if send_logs {
                let (feeds, last) = app.live.snapshot();
                seen = last;
                let message = format!("event: logs\ndata: {feeds}\n\n");
                if sender.send(Bytes::from(message)).await.is_err() {
                    return;
                }
            }
            (send_listing, send_asks, send_logs) = (false, false, false);
            // Wait for the next change (the manager's, or one the page
            // made outside it); a lagged receiver only means "look again".
            // Log lines and resource updates are the feed's, not the list's; an
            // elicitation's completion is the questions' (`PageAsks`).
            tokio::select! {
                event = events.recv() => match event {
                    Ok(
                        ManagerEvent::Log { .. }
                        | ManagerEvent::ResourceUpdated { .. }
                        | ManagerEvent::ElicitationComplete { .. },
                    ) => {}
                    Ok(_) | Err(RecvError::Lagged(_)) => send_listing = true,
                    Err(RecvError::Closed) => return,
                },
                _ = changed.recv() => send_listing = true,
                changes = asks.changed() => {
                    if changes.is_err() {
                        return;
                    }
                    send_asks = true;
                }
                line = feed.recv() => match line {
                    Ok(line) => {
                        if line["seq"].as_u64().is_some_and(|seq| seq > seen) {
                            let message = format!("event: log\ndata: {line}\n\n");
                            if sender.send(Bytes::from(message)).await.is_err() {
                                return;
                            }
                        }
                    }
                    Err(RecvError::Lagged(_)) => send_logs = true,
                    Err(RecvError::Closed) => return,
                },
                () = sender.closed() => return,
            }
            if send_listing {
                loop {
                    match events.try_recv() {
                        Ok(_) | Err(TryRecvError::Lagged(_)) => {}
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Closed) => return,
                    }
                }
                while changed.try_recv().is_ok() {}
            }
        }
    });
    let mut response = Response::new(ChannelBody(receiver).boxed());
    set(&mut response, header::CONTENT_TYPE, "text/event-stream");
    set(&mut response, header::CACHE_CONTROL, "no-store");
    response
}

/// A streaming body fed by a channel (the event stream's).
struct ChannelBody(mpsc::Receiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|b| Ok(Frame::data(b))))
    }
}

async fn read_body(request: Request<Incoming>) -> Result<Bytes, Response<ResponseBody>> {
    match Limited::new(request.into_body(), BODY_LIMIT)
        .collect()
        .await
    {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(_) => Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body is too large or was cut off",
        )),
    }
}

fn asset(body: &'static str, content_type: &'static str) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed());
    set(&mut response, header::CONTENT_TYPE, content_type);
    response
}

fn html(body: String) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    set(
        &mut response,
        header::CONTENT_TYPE,
        "text/html; charset=utf-8",
    );
    set(&mut response, header::CACHE_CONTROL, "no-store");
    // The page loads only its own script and style; images are its own
    // or a tool's result, inline (`data:`), never fetched from elsewhere.
    set(
        &mut response,
        header::CONTENT_SECURITY_POLICY,
        "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    );
    response
}

fn text(status: StatusCode, body: &'static str) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed());
    *response.status_mut() = status;
    set(
        &mut response,
        header::CONTENT_TYPE,
        "text/plain; charset=utf-8",
    );
    response
}

fn empty(status: StatusCode) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = status;
    response
}

/// HTML-escapes text for the server-rendered error page.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

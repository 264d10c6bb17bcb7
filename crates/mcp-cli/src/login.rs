//! `mcpctl login SERVER` and `mcpctl logout SERVER`: the interactive OAuth authorization of an HTTP server, and forgetting its tokens.
//!
//! `login` runs mcp-client-oauth's authorization code grant with this module's
//! [`Interaction`]: a callback listener on `127.0.0.1` (the configured
//! `oauth.redirectPort`, else a free port) whose
//! `http://127.0.0.1:PORT/callback` is the redirect URI the client is
//! registered with. It prints the authorization URL for the user to open,
//! waits (bounded by `--timeout`) for the browser to come back, and stores
//! the tokens where mcp-manager looks for them (`<data dir>/oauth`, through
//! [`mcp_manager::DefaultTransportFactory::oauth_options_for`], with the
//! proxy and trusted roots of every other command), so that every later
//! run connects with them. No token is ever printed.
//!
//! A server whose `oauth.grant` is `client_credentials` logs in without a
//! browser: the client authenticates with its own secret (RFC 6749 §4.4)
//! and the tokens are stored the same way. The manager does the same by
//! itself, so this only fetches them ahead of time.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_client_oauth::{FileTokenStore, Grant, Interaction, OAuthError, OAuthProvider};
use mcp_config::{OAuthGrant, ProcessEnv, ResolvedConfig, ResolvedTransport, resolve};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use url::Url;

use crate::exit::{CliError, Exit};
use crate::output::Output;
use crate::sources::SourceOptions;

/// Where OAuth tokens live: `<data dir>/oauth`.
pub(crate) fn oauth_dir() -> Result<PathBuf, CliError> {
    Ok(crate::sources::store_location()
        .data_dir(&ProcessEnv)?
        .join("oauth"))
}

/// `mcpctl login`.
pub(crate) async fn login(
    id: &str,
    timeout: Duration,
    options: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    let target = Target::find(id, options, true).await?;
    let prompt = Prompt::Print { json: output.json };
    let dir = target.login(timeout, prompt).await?;
    if output.json {
        output
            .json(&json!({"server": id, "logged_in": true}))
            .map_err(|e| CliError::connection(format!("cannot write the result: {e}")))?;
    } else {
        output
            .text(&format!(
                "logged in to `{id}`; its tokens are stored in {}\n",
                dir.display()
            ))
            .map_err(|e| CliError::connection(format!("cannot write the result: {e}")))?;
    }
    Ok(Exit::Success)
}

/// Where the person is shown the authorization URL.
#[derive(Debug)]
pub(crate) enum Prompt {
    /// Printed on stdout (stderr with `--json`, so stdout stays one
    /// document), for `mcpctl login`.
    Print {
        /// Whether `--json` was given.
        json: bool,
    },
    /// Handed to a settings page, which opens it in the person's browser.
    Send(std::sync::Mutex<Option<tokio::sync::oneshot::Sender<Url>>>),
}

/// A configured HTTP server to log in to, resolved.
#[derive(Debug)]
pub(crate) struct Target {
    server: ResolvedConfig,
    http: mcp_config::ResolvedHttp,
    url: Url,
}

impl Target {
    /// The configured HTTP or SSE server `id`, through the same discovery,
    /// trust gate and input answers as every command that connects (`ask`:
    /// whether the terminal may be asked).
    pub(crate) async fn find(
        id: &str,
        options: &SourceOptions,
        ask: bool,
    ) -> Result<Target, CliError> {
        let (server, http) = http_server(id, options, ask).await?;
        let url = server_url(&http.url)?;
        Ok(Target { server, http, url })
    }

    /// Whether logging in needs a person in a browser (the authorization
    /// code grant), not only the client's own credentials.
    pub(crate) fn needs_browser(&self) -> bool {
        !matches!(
            self.http.oauth.as_ref().map(|o| o.grant),
            Some(OAuthGrant::ClientCredentials | OAuthGrant::JwtBearer)
        )
    }

    /// Runs the server's grant and stores the tokens where every later run
    /// finds them; returns the token directory. The authorization URL of
    /// the code grant goes to `prompt`; the browser has `timeout` to come
    /// back.
    pub(crate) async fn login(
        &self,
        timeout: Duration,
        prompt: Prompt,
    ) -> Result<PathBuf, CliError> {
        let id = &self.server.id;
        let http = &self.http;
        let dir = oauth_dir()?;
        let grant = match http.oauth.as_ref() {
            // RFC 6749 §4.4: the client authenticates with its own secret; no
            // browser, no redirect listener.
            Some(oauth) if oauth.grant == OAuthGrant::ClientCredentials => Grant::ClientCredentials,
            // SEP-1933: the workload's JWT from its file or variable; nobody
            // either.
            Some(oauth) if oauth.grant == OAuthGrant::JwtBearer => {
                mcp_manager::workload_grant(oauth)
                    .map_err(|e| CliError::usage(format!("cannot set up OAuth for `{id}`: {e}")))?
            }
            _ => Grant::AuthorizationCode(loopback(&self.server, http, timeout, prompt).await?),
        };
        let mut factory = crate::runtime::transport_factory();
        factory.oauth_dir = Some(dir.clone());
        // The proxy and trusted roots of every other command.
        let options = factory
            .oauth_options_for(self.url.clone(), grant, http.oauth.as_ref())
            .map_err(|e| CliError::usage(format!("cannot set up OAuth for `{id}`: {e}")))?;
        let provider = OAuthProvider::new(options)
            .map_err(|e| CliError::connection(format!("cannot set up OAuth for `{id}`: {e}")))?;
        provider.login().await.map_err(|e| {
            CliError::connection(format!("login to `{id}` failed: {e}"))
                .hint(format!("run `mcpctl login {id}` again"))
        })?;
        Ok(dir)
    }
}

/// The authorization code grant's interaction: a listener on the configured
/// redirect port (else a free one) of 127.0.0.1.
async fn loopback(
    server: &ResolvedConfig,
    http: &mcp_config::ResolvedHttp,
    timeout: Duration,
    prompt: Prompt,
) -> Result<Arc<Loopback>, CliError> {
    let port = http
        .oauth
        .as_ref()
        .and_then(|oauth| oauth.redirect_port)
        .unwrap_or(0);
    let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| {
        CliError::usage(format!(
            "cannot listen on 127.0.0.1:{port} for the login redirect: {e}"
        ))
        .hint("free the port, or change `oauth.redirectPort`")
    })?;
    let port = listener
        .local_addr()
        .map_err(|e| CliError::connection(format!("the redirect listener: {e}")))?
        .port();
    let interaction = Arc::new(Loopback {
        server: server.id.clone(),
        redirect_uri: format!("http://127.0.0.1:{port}/callback"),
        listener: tokio::sync::Mutex::new(listener),
        timeout,
        prompt,
    });
    Ok(interaction)
}

/// `mcpctl logout`.
pub(crate) async fn logout(
    id: &str,
    options: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    let (_, http) = http_server(id, options, true).await?;
    let url = server_url(&http.url)?;
    let removed = FileTokenStore::new(oauth_dir()?)
        .remove_server(&url)
        .await
        .map_err(|e| CliError::connection(format!("cannot remove the tokens of `{id}`: {e}")))?;
    let result = if output.json {
        output.json(&json!({"server": id, "removed": removed}))
    } else if removed == 0 {
        output.text(&format!("no stored tokens for `{id}`\n"))
    } else {
        output.text(&format!("logged out of `{id}`\n"))
    };
    result.map_err(|e| CliError::connection(format!("cannot write the result: {e}")))?;
    Ok(Exit::Success)
}

/// The configured HTTP or SSE server `id`, resolved.
async fn http_server(
    id: &str,
    options: &SourceOptions,
    ask: bool,
) -> Result<(ResolvedConfig, mcp_config::ResolvedHttp), CliError> {
    // The same gate and input answers as every command that connects: a
    // project server nobody approved is not logged in to either.
    let discovery = crate::trust_cmd::discovery(options)?;
    let gate = crate::trust_cmd::gate(options)?;
    let selected = id.to_owned();
    let (report, answers) = tokio::task::spawn_blocking(move || {
        let mut report = crate::runtime::only(discovery.discover(), &selected)?;
        let _held = crate::trust_cmd::settle(&mut report, gate.as_ref(), ask);
        let answers = crate::inputs::collect(&report, ask);
        Ok::<_, CliError>((report, answers))
    })
    .await
    .map_err(|e| CliError::usage(format!("discovery failed: {e}")))??;
    let entry = report
        .entries
        .into_iter()
        .next()
        .ok_or_else(|| CliError::usage(format!("no server with id `{id}`")))?;
    let config = match entry {
        mcp_config::DiscoveryEntry::Server(server)
        | mcp_config::DiscoveryEntry::Disabled(server) => server.config,
        mcp_config::DiscoveryEntry::Error { diagnostics, .. } => {
            let first = diagnostics.first().map_or_else(String::new, |d| {
                let field = if d.field.is_empty() {
                    String::new()
                } else {
                    format!("{}: ", d.field)
                };
                format!(": {field}{} [{}]", crate::output::line(&d.message), d.code)
            });
            return Err(CliError::usage(format!(
                "the configuration of `{id}` cannot be used{first}"
            )));
        }
        _ => return Err(CliError::usage(format!("no server with id `{id}`"))),
    };
    let env = mcp_config::WithInputs::new(ProcessEnv, answers);
    let resolved = resolve(&config, &env).map_err(|e| CliError::usage(e.to_string()))?;
    let http = match &resolved.transport {
        ResolvedTransport::Http(http) | ResolvedTransport::Sse(http) => http.clone(),
        _ => {
            return Err(CliError::usage(format!(
                "`{id}` is not an HTTP server; only HTTP and SSE servers log in with OAuth"
            )));
        }
    };
    Ok((resolved, http))
}

fn server_url(url: &str) -> Result<Url, CliError> {
    Url::parse(url).map_err(|_| CliError::usage("the server URL does not parse"))
}

/// The person's part of the grant: print the URL, take the redirect on a
/// loopback listener.
#[derive(Debug)]
struct Loopback {
    server: String,
    redirect_uri: String,
    listener: tokio::sync::Mutex<TcpListener>,
    timeout: Duration,
    /// Where the authorization URL goes.
    prompt: Prompt,
}

#[async_trait]
impl Interaction for Loopback {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    async fn authorize(&self, authorization_url: &Url) -> Result<Url, OAuthError> {
        let prompt = format!(
            "To log in to `{}`, open this URL in a browser:\n\n  {authorization_url}\n\n\
             Waiting up to {} s for the browser to return to {} ...\n",
            self.server,
            self.timeout.as_secs(),
            self.redirect_uri
        );
        match &self.prompt {
            Prompt::Print { json: true } => eprint!("{prompt}"),
            Prompt::Print { json: false } => {
                print!("{prompt}");
                let _ = std::io::Write::flush(&mut std::io::stdout());
            }
            Prompt::Send(sender) => {
                let sender = sender.lock().ok().and_then(|mut s| s.take());
                if let Some(sender) = sender {
                    let _ = sender.send(authorization_url.clone());
                }
            }
        }
        let listener = self.listener.lock().await;
        tokio::time::timeout(self.timeout, self.wait_for_callback(&listener))
            .await
            .map_err(|_| {
                OAuthError::Authorization(format!(
                    "the browser did not return within {} s",
                    self.timeout.as_secs()
                ))
            })?
    }
}

/// The longest request head the callback listener reads.
const MAX_HEAD: usize = 16 * 1024;

impl Loopback {
    /// Answers requests until one for `/callback` arrives, and returns its
    /// full URL. Other paths (a browser's `/favicon.ico`) get a 404.
    async fn wait_for_callback(&self, listener: &TcpListener) -> Result<Url, OAuthError> {
        let base = Url::parse(&self.redirect_uri)
            .map_err(|_| OAuthError::Config("the redirect URI does not parse".to_owned()))?;
        loop {
            let (mut stream, _) = listener
                .accept()
                .await
                .map_err(|e| OAuthError::Authorization(format!("the redirect listener: {e}")))?;
            let mut head = Vec::new();
            let mut buffer = [0u8; 2048];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buffer[..n]),
                }
            }
            let text = String::from_utf8_lossy(&head);
            let target = text
                .lines()
                .next()
                .and_then(|line| line.strip_prefix("GET "))
                .and_then(|rest| rest.split(' ').next())
                .unwrap_or_default()
                .to_owned();
            let url = base.join(&target).ok();
            match url.filter(|url| url.path() == base.path()) {
                Some(url) => {
                    let page = "<!doctype html><title>mcpctl</title>\
                                <p>mcpctl received the authorization. You can close this tab.</p>";
                    respond(&mut stream, "200 OK", page).await;
                    return Ok(url);
                }
                None => respond(&mut stream, "404 Not Found", "not found").await,
            }
        }
    }
}

async fn respond(stream: &mut tokio::net::TcpStream, status: &str, body: &str) {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

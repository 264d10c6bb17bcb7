//! Headless Chromium driven over the DevTools protocol (JSON over one WebSocket), for the settings page's browser tests.
//!
//! Why CDP and not WebDriver: Chromium speaks it itself, so the only
//! dependency is a small blocking WebSocket client (`tungstenite`), with no
//! chromedriver process to match versions with and no async WebDriver stack.
//!
//! Input is a person's: clicks are mouse presses at the element's centre
//! (`Input.dispatchMouseEvent`) and typing is `Input.insertText` into the
//! focused field. Waiting is never a sleep: [`Browser::wait_for`] evaluates
//! a condition on the real page inside the page (a promise that re-checks
//! it every 50 ms) and resolves as soon as it holds, failing after
//! [`WAIT`] with the page's visible text.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;
use tungstenite::{Message, WebSocket};

/// How long a page condition may take to become true.
pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// What installs the browser; a test without it fails with this.
pub(crate) const INSTALL: &str = "apt-get update && apt-get install -y chromium";

/// The flags for a headless Chromium on a closed network: no background
/// traffic, no first-run or sync, software rendering.
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1200,900",
];

/// A headless Chromium with one page, killed (by its handle) when dropped.
#[derive(Debug)]
pub(crate) struct Browser {
    child: Child,
    socket: WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    _profile: TempDir,
}

/// Where Chromium is: `$CHROMIUM`, else Debian's `/usr/bin/chromium`.
/// Missing, it fails the test with the install command.
pub(crate) fn chromium() -> PathBuf {
    let path = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.is_file(),
        "Chromium is not installed at {}: the browser tests need it; run `{INSTALL}` (or set CHROMIUM)",
        path.display()
    );
    path
}

impl Browser {
    /// Starts Chromium with a fresh, empty profile and opens a blank page.
    pub(crate) fn launch() -> Browser {
        let profile = tempfile::tempdir().expect("a profile directory");
        let mut child = Command::new(chromium())
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("Chromium does not start ({e}); run `{INSTALL}`"));
        // Chromium prints its DevTools address on stderr once it listens;
        // the rest of stderr is drained so that it never blocks.
        let mut lines = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
        let mut seen = Vec::new();
        let address = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(at) = line.find("ws://") {
                        break line[at..].trim().to_owned();
                    }
                    seen.push(line);
                }
                _ => panic!("Chromium exited without a DevTools address: {seen:#?}"),
            }
        };
        std::thread::spawn(move || for _ in lines.by_ref() {});
        let host = address
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .expect("host:port")
            .to_owned();
        let stream = TcpStream::connect(&host).expect("connect to DevTools");
        // A little more than WAIT: a page-side wait always answers first.
        stream
            .set_read_timeout(Some(WAIT + Duration::from_secs(30)))
            .expect("a read timeout");
        let (socket, _) =
            tungstenite::client(address.as_str(), stream).expect("DevTools handshake");
        let mut browser = Browser {
            child,
            socket,
            session: String::new(),
            next_id: 0,
            _profile: profile,
        };
        let target = browser.send(None, "Target.createTarget", json!({"url": "about:blank"}));
        let target = target["targetId"].as_str().expect("a target id").to_owned();
        let attached = browser.send(
            None,
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1200, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
        );
        browser
    }

    /// Navigates and waits for the document to load.
    pub(crate) fn goto(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
        self.wait_for("document.readyState === 'complete'", "the page loaded");
    }

    /// Navigates to `url` and waits until the page has moved on by itself
    /// (a redirect, a meta refresh) to a URL starting with `prefix` and
    /// loaded it; fails after the socket's read timeout.
    pub(crate) fn goto_until(&mut self, url: &str, prefix: &str) {
        self.call("Page.enable", json!({}));
        self.call("Page.navigate", json!({"url": url}));
        let mut arrived = false;
        loop {
            let frame = self
                .socket
                .read()
                .unwrap_or_else(|e| panic!("DevTools: the page never reached {prefix}: {e}"));
            let Message::Text(text) = frame else { continue };
            let event: Value = serde_json::from_str(text.as_str()).expect("DevTools JSON");
            match event["method"].as_str() {
                Some("Page.frameNavigated") => {
                    let frame = &event["params"]["frame"];
                    if frame.get("parentId").is_none() {
                        arrived = frame["url"]
                            .as_str()
                            .is_some_and(|url| url.starts_with(prefix));
                    }
                }
                Some("Page.loadEventFired") if arrived => return,
                _ => {}
            }
        }
    }

    /// Evaluates `expression` in the page and returns its value (promises
    /// are awaited). A thrown exception fails the test.
    pub(crate) fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(details) = result.get("exceptionDetails") {
            panic!("page script failed: {expression}\n{details:#}");
        }
        result["result"]["value"].clone()
    }

    /// Waits until `condition` (a JavaScript expression) is true on the
    /// page; fails after [`WAIT`] naming `what` and showing the page text.
    pub(crate) fn wait_for(&mut self, condition: &str, what: &str) {
        let script = format!(
            "new Promise((resolve) => {{
                const limit = Date.now() + {ms};
                const check = () => {{
                    let ok = false;
                    try {{ ok = !!({condition}); }} catch (_) {{ ok = false; }}
                    if (ok) resolve(true);
                    else if (Date.now() > limit) resolve(false);
                    else setTimeout(check, 50);
                }};
                check();
            }})",
            ms = WAIT.as_millis()
        );
        if self.eval(&script) != json!(true) {
            let text = self.eval("document.body ? document.body.innerText : ''");
            panic!(
                "the page did not show {what} within {WAIT:?} ({condition})\npage text:\n{}",
                text.as_str().unwrap_or_default()
            );
        }
    }

    /// Clicks the element `selector` names with the mouse, at its centre,
    /// after scrolling it into view.
    pub(crate) fn click(&mut self, selector: &str) {
        let quoted = serde_json::to_string(selector).unwrap();
        self.wait_for(
            &format!(
                "(() => {{ const e = document.querySelector({quoted}); \
                 return e && e.getClientRects().length > 0 && !e.disabled; }})()"
            ),
            &format!("a clickable {selector}"),
        );
        // A live page may move between measuring the element and the
        // press (a log line arriving above it): the click is checked to
        // have reached an element matching `selector` (by selector, so a
        // redrawn element counts) and made again where it now is.
        for _ in 0..5 {
            let point = self.eval(&format!(
                "(() => {{ const e = document.querySelector({quoted});
                    e.scrollIntoView({{block: 'center'}});
                    window.__clickReached = false;
                    if (window.__clickWatch) document.removeEventListener('click', window.__clickWatch, true);
                    window.__clickWatch = (event) => {{
                        if (event.target instanceof Element && event.target.closest({quoted})) window.__clickReached = true;
                    }};
                    document.addEventListener('click', window.__clickWatch, true);
                    const r = e.getBoundingClientRect();
                    return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
            ));
            let (x, y) = (point[0].as_f64().unwrap(), point[1].as_f64().unwrap());
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": "mouseMoved", "x": x, "y": y}),
            );
            for kind in ["mousePressed", "mouseReleased"] {
                self.call(
                    "Input.dispatchMouseEvent",
                    json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
                );
            }
            let reached = self.eval(
                "(() => { document.removeEventListener('click', window.__clickWatch, true); \
                 return window.__clickReached === true; })()",
            );
            if reached.as_bool() == Some(true) {
                return;
            }
        }
        panic!("five clicks on {selector} landed elsewhere: the page kept moving under them");
    }

    /// Clicks into the field `selector`, selects what it holds and types
    /// `text` over it.
    pub(crate) fn type_into(&mut self, selector: &str, text: &str) {
        self.click(selector);
        let quoted = serde_json::to_string(selector).unwrap();
        self.eval(&format!("document.querySelector({quoted}).select()"));
        self.call("Input.insertText", json!({"text": text}));
    }

    /// Everything the page holds as text: its HTML and every field's
    /// current value (typed values are not in the HTML).
    pub(crate) fn contents(&mut self) -> String {
        self.eval(
            "document.documentElement.outerHTML + '\\n' + \
             [...document.querySelectorAll('input')].map((i) => i.value).join('\\n')",
        )
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    /// Saves a PNG of the viewport to `path`.
    pub(crate) fn screenshot(&mut self, path: &Path) {
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64_decode(shot["data"].as_str().expect("screenshot data"));
        assert!(png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
        std::fs::write(path, png).expect("write the screenshot");
    }

    /// Saves a PNG of the whole page (beyond the viewport) to `path`.
    pub(crate) fn screenshot_full(&mut self, path: &Path) {
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        let png = base64_decode(shot["data"].as_str().expect("screenshot data"));
        assert!(png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
        std::fs::write(path, png).expect("write the screenshot");
    }

    /// Makes the viewport `width` x `height` CSS pixels; `mobile` as a
    /// phone (touch, the meta viewport honoured).
    pub(crate) fn viewport(&mut self, width: u32, height: u32, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}),
        );
    }

    /// Presses Tab (Shift+Tab with `back`), as a keyboard user moves focus.
    pub(crate) fn tab(&mut self, back: bool) {
        let modifiers = if back { 8 } else { 0 };
        for kind in ["rawKeyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({"type": kind, "key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9,
                       "modifiers": modifiers}),
            );
        }
    }

    /// Presses Enter on whatever has the focus.
    pub(crate) fn enter(&mut self) {
        for kind in ["rawKeyDown", "char", "keyUp"] {
            let mut event = json!({"type": kind, "key": "Enter", "code": "Enter",
                                   "windowsVirtualKeyCode": 13});
            if kind == "char" {
                event["text"] = json!("\r");
            }
            self.call("Input.dispatchKeyEvent", event);
        }
    }

    /// A command on the page's session.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(Some(&session), method, params)
    }

    /// Sends one command and reads messages until its answer; events in
    /// between are not needed and are skipped.
    fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .unwrap_or_else(|e| panic!("DevTools: cannot send {method}: {e}"));
        loop {
            let frame = self
                .socket
                .read()
                .unwrap_or_else(|e| panic!("DevTools: no answer to {method}: {e}"));
            let Message::Text(text) = frame else { continue };
            let answer: Value = serde_json::from_str(text.as_str()).expect("DevTools JSON");
            if answer["id"] == id {
                if let Some(error) = answer.get("error") {
                    panic!("DevTools {method} failed: {error}");
                }
                return answer["result"].clone();
            }
        }
    }
}

impl Drop for Browser {
    /// Asks Chromium to close (so that it ends its own helper processes)
    /// and waits for it; the watchdog kills it if it does not end in time.
    fn drop(&mut self) {
        self.next_id += 1;
        let close = json!({"id": self.next_id, "method": "Browser.close"});
        if self.socket.send(Message::text(close.to_string())).is_err() {
            let _ = self.child.kill();
        }
        let watchdog = super::Watchdog::start(&self.child, "chromium".to_owned());
        let _ = self.child.wait();
        watchdog.stop();
    }
}

/// Standard base64 (the screenshot's encoding), without a dependency.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let clean: Vec<u8> = text
        .bytes()
        .filter(|c| *c != b'=' && !c.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= value(*c) << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

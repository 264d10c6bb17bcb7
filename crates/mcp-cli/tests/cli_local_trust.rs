//! The local trust boundaries of mcpctl's own servers against another user of the machine: `mcpctl ui --open` puts its token on no command line and in no environment, every page answer carries its security headers, and the background gateway's clients, daemon and `serve --stop` trust only files, sockets and processes of the user running them.
//!
//! A second user is played without creating one: as root (which CI runs
//! as), the tests hand files and directories to uid 65534 with `lchown`,
//! and run a real `mcpctl` daemon under uid 65534 with `setuid` (the
//! standard library's `Command::uid`). Run as another user, these tests
//! fail at the first `lchown`, saying they need root.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use support::Env;
use support::cdp::Browser;
use support::ui::{DEADLINE, UiServer, request};

/// The other user: `nobody` on most systems, and only a number here.
const OTHER: u32 = 65534;

/// The global flags every daemon command here runs with: no sources but
/// the store, so the daemon starts without servers.
const GLOBAL: [&str; 2] = ["--no-host-configs", "--no-project"];

fn my_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Hands `path` to [`OTHER`], as another user's own file would be.
fn give_away(path: &Path) {
    std::os::unix::fs::lchown(path, Some(OTHER), Some(OTHER)).unwrap_or_else(|e| {
        panic!(
            "cannot chown {} to uid {OTHER} ({e}): this test plays another user as root; run it as root (CI does)",
            path.display()
        )
    });
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .mode()
        & 0o7777
}

/// `mcpctl GLOBAL ARGS` in `env`.
fn run(env: &Env, args: &[&str]) -> support::Run {
    let mut all = GLOBAL.to_vec();
    all.extend_from_slice(args);
    env.run(&all)
}

/// The lines of `stderr` that speak of the background gateway.
fn gateway_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.contains("background gateway"))
        .collect()
}

/// Whether anything connected to `listener` (it is non-blocking).
fn was_connected(listener: &UnixListener) -> bool {
    match listener.accept() {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(e) => panic!("accept: {e}"),
    }
}

/// Every byte of every `/proc/PID/cmdline` and `/proc/PID/environ` this
/// process can read, with the pid (processes that end meanwhile are
/// skipped: they no longer show anything).
fn every_command_line_and_environment() -> Vec<(String, Vec<u8>)> {
    let mut seen = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc is mounted") {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        for file in ["cmdline", "environ"] {
            if let Ok(bytes) = std::fs::read(entry.path().join(file)) {
                seen.push((format!("/proc/{name}/{file}"), bytes));
            }
        }
    }
    seen
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// `mcpctl ui --open` runs the opener (a stand-in `xdg-open` first on
/// `PATH` that reports its arguments and environment and stays running)
/// with the path of an owner-only file, and no process's arguments or
/// environment hold the token while it runs; the file leads to the page,
/// which removes it once loaded.
#[test]
fn ui_open_puts_the_token_on_no_command_line_and_in_no_environment() {
    let env = Env::new();
    let bin = env.home().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let report = env.home().join("opener.report");
    let status = Command::new("mkfifo")
        .arg(&report)
        .status()
        .expect("mkfifo (coreutils) runs");
    assert!(status.success(), "mkfifo {}", report.display());
    let opener = bin.join("xdg-open");
    std::fs::write(
        &opener,
        "#!/bin/sh\n{ echo \"pid $$\"; for a in \"$@\"; do echo \"arg $a\"; done; env | sed 's/^/env /'; } > \"$OPENER_REPORT\"\nexec sleep 120\n",
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );

    // The report is read on a thread, so that an opener that never runs
    // fails the test after the deadline instead of hanging it.
    let (sender, received) = mpsc::channel();
    {
        let report = report.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let read = std::fs::File::open(&report).and_then(|mut f| f.read_to_string(&mut text));
            let _ = sender.send(read.map(|_| text));
        });
    }
    let mut command = env.command(&["ui", "--open"]);
    command.env("PATH", &path).env("OPENER_REPORT", &report);
    let ui = UiServer::start_command(command);
    let text = received
        .recv_timeout(DEADLINE)
        .expect("mcpctl ui --open ran the opener")
        .expect("the opener's report");
    let opener_pid: i32 = text
        .lines()
        .find_map(|line| line.strip_prefix("pid "))
        .and_then(|pid| pid.parse().ok())
        .expect("the opener's pid");
    // The opener is a process mcpctl started for this test: ended by its
    // pid whatever happens below.
    struct EndOpener(i32);
    impl Drop for EndOpener {
        fn drop(&mut self) {
            if let Some(pid) = rustix::process::Pid::from_raw(self.0) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
    let _opener = EndOpener(opener_pid);

    // While the opener runs, no command line and no environment on the
    // machine holds the token (root reads them all; another user reads
    // fewer).
    assert!(
        !text.contains(&ui.token),
        "the opener saw the token: {text}"
    );
    let leaks: Vec<String> = every_command_line_and_environment()
        .into_iter()
        .filter(|(_, bytes)| contains(bytes, ui.token.as_bytes()))
        .map(|(file, _)| file)
        .collect();
    assert!(leaks.is_empty(), "the token is readable in {leaks:?}");

    // Its one argument is an owner-only file in an owner-only directory.
    let args: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("arg "))
        .collect();
    assert_eq!(args.len(), 1, "{text}");
    let file = PathBuf::from(args[0]);
    assert_eq!(file.parent(), Some(env.data_dir().join("ui").as_path()));
    assert_eq!(mode(&file), 0o600, "{}", file.display());
    assert_eq!(mode(&env.data_dir().join("ui")), 0o700);
    assert_eq!(std::fs::metadata(&file).unwrap().uid(), my_uid());

    // The file sends a real browser on to the page, which then removes it.
    let page = std::fs::read_to_string(&file).unwrap();
    let target = format!("url={}\"", ui.url());
    assert!(page.contains(&target), "{page}");
    let mut browser = Browser::launch();
    browser.goto_until(
        &format!("file://{}", file.display()),
        &format!("http://127.0.0.1:{}/", ui.port),
    );
    browser.wait_for("document.body.dataset.loaded === 'true'", "the live list");
    assert_eq!(browser.eval("location.href"), serde_json::json!(ui.url()));
    assert!(
        !file.exists(),
        "the launch file outlived the page's first load"
    );
}

/// Every answer of the page carries `nosniff` and `no-referrer`; the page
/// and the API's answers (refusals too) `no-store`; the page its content
/// security policy.
#[test]
fn every_answer_of_the_page_carries_its_security_headers() {
    let env = Env::new();
    let ui = UiServer::start(&env);
    let token_header = format!("x-mcpctl-token: {}", ui.token);
    let cases = [
        ("GET", format!("/?token={}", ui.token), vec![], 200, true),
        (
            "GET",
            "/api/servers".to_owned(),
            vec![token_header.as_str()],
            200,
            true,
        ),
        ("GET", "/api/servers".to_owned(), vec![], 403, true),
        (
            "GET",
            "/api/nope".to_owned(),
            vec![token_header.as_str()],
            404,
            true,
        ),
        (
            "GET",
            "/api/servers".to_owned(),
            vec!["Host: evil.example", token_header.as_str()],
            403,
            true,
        ),
        ("GET", "/app.js".to_owned(), vec![], 200, false),
        ("GET", "/nope".to_owned(), vec![], 403, true),
    ];
    for (method, path, headers, status, no_store) in cases {
        let answer = request(ui.port, method, &path, &headers, "");
        let head = answer.head.to_ascii_lowercase();
        assert_eq!(answer.status, status, "{method} {path}: {answer:?}");
        assert!(
            head.contains("\r\nx-content-type-options: nosniff"),
            "{path}: {head}"
        );
        assert!(
            head.contains("\r\nreferrer-policy: no-referrer"),
            "{path}: {head}"
        );
        assert_eq!(
            head.contains("\r\ncache-control: no-store"),
            no_store,
            "{path}: {head}"
        );
    }
    let page = request(ui.port, "GET", &format!("/?token={}", ui.token), &[], "");
    assert!(
        page.head
            .to_ascii_lowercase()
            .contains("content-security-policy: default-src 'self'"),
        "{}",
        page.head
    );
}

/// Another user's `gateway/` with a socket that answers and a record: a
/// client never connects to it and runs directly after one warning line;
/// `serve --daemon` and `serve --stop` refuse, and leave its files as they
/// were.
#[test]
fn another_users_gateway_directory_is_never_connected_to_or_changed() {
    let env = Env::new();
    let gateway = env.data_dir().join("gateway");
    std::fs::create_dir(&gateway).unwrap();
    std::fs::set_permissions(&gateway, std::fs::Permissions::from_mode(0o700)).unwrap();
    let socket = gateway.join("gateway.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let record = gateway.join("gateway.json");
    let text = r#"{"pid": 1, "key": "anything", "complete": true, "servers": []}"#;
    std::fs::write(&record, text).unwrap();
    for path in [&socket, &record, &gateway] {
        give_away(path);
    }

    let direct = run(&env, &["tools", "--no-daemon"]);
    let tools = run(&env, &["tools"]);
    let warning = format!(
        "mcpctl: not using the background gateway: {} is owned by uid {OTHER}, not by this user (uid {}); connecting directly",
        gateway.display(),
        my_uid()
    );
    assert_eq!(
        gateway_lines(&tools.stderr),
        [warning.as_str()],
        "{tools:#?}"
    );
    assert_eq!((tools.code, &tools.stdout), (direct.code, &direct.stdout));
    assert!(
        !was_connected(&listener),
        "the client connected to the other user's socket"
    );

    for args in [["serve", "--daemon"], ["serve", "--stop"]] {
        let refused = run(&env, &args);
        assert_eq!(refused.code, 2, "{args:?}: {refused:#?}");
        assert!(
            refused.stderr.contains(&format!(
                "refusing the background gateway's files: {} is owned by uid {OTHER}",
                gateway.display()
            )),
            "{args:?}: {refused:#?}"
        );
    }
    assert!(
        !was_connected(&listener),
        "a command connected to the other user's socket"
    );
    assert_eq!(std::fs::read_to_string(&record).unwrap(), text);
    for path in [&socket, &record, &gateway] {
        assert_eq!(
            std::fs::symlink_metadata(path).unwrap().uid(),
            OTHER,
            "{}",
            path.display()
        );
    }
    assert_eq!(mode(&gateway), 0o700);
}

/// A data directory others can write to, or a `gateway/` that is a
/// symbolic link, is refused before anything is created or followed.
#[test]
fn an_open_data_directory_or_a_linked_gateway_is_refused() {
    let env = Env::new();
    std::fs::set_permissions(env.data_dir(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let started = run(&env, &["serve", "--daemon"]);
    assert_eq!(started.code, 2, "{started:#?}");
    assert!(
        started.stderr.contains(&format!(
            "{} is writable by other users (mode 777)",
            env.data_dir().display()
        )),
        "{started:#?}"
    );
    assert!(!env.data_dir().join("gateway").exists());
    let tools = run(&env, &["tools"]);
    assert_eq!(gateway_lines(&tools.stderr).len(), 1, "{tools:#?}");

    std::fs::set_permissions(env.data_dir(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let elsewhere = env.home().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, env.data_dir().join("gateway")).unwrap();
    let started = run(&env, &["serve", "--daemon"]);
    assert_eq!(started.code, 2, "{started:#?}");
    assert!(
        started.stderr.contains("is a symbolic link"),
        "{started:#?}"
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// A real `mcpctl` daemon running as another user, its files then handed
/// to this user so that only the peer credentials tell: the client refuses
/// it (one warning line, a direct run), the daemon refuses the client,
/// and `serve --stop` signals nothing.
#[test]
fn a_daemon_of_another_user_and_its_clients_refuse_each_other() {
    let env = Env::new();
    // The other user's own place: reachable by it, outside this test's
    // owner-only temporary directory.
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = root.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    give_away(&data);

    let mut command = env.command(&[
        "--no-host-configs",
        "--no-project",
        "serve",
        "--in-background",
    ]);
    command
        .env("LOOP_DATA_DIR", &data)
        .env("HOME", &data)
        .current_dir(&data)
        .uid(OTHER)
        .gid(OTHER)
        .stdout(Stdio::null());
    let mut child = command.spawn().expect("mcpctl starts as uid 65534");
    let stderr = lines_of(child.stderr.take().expect("piped stderr"));
    let daemon = Daemon(child);
    next_line(&stderr, "mcpctl serve: listening on");

    // Everything on disk now looks like this user's; only the process
    // answering on the socket is not.
    let gateway = data.join("gateway");
    for path in [
        data.clone(),
        gateway.clone(),
        gateway.join("gateway.sock"),
        gateway.join("gateway.json"),
    ] {
        std::os::unix::fs::lchown(&path, Some(my_uid()), Some(my_uid())).unwrap();
    }
    let as_me = |args: &[&str]| {
        let mut all = GLOBAL.to_vec();
        all.extend_from_slice(args);
        let mut command = env.command(&all);
        command.env("LOOP_DATA_DIR", &data);
        support::run_to_end(command, &all)
    };
    let tools = as_me(&["tools"]);
    let peer = format!("runs as uid {OTHER}, not as this user (uid {})", my_uid());
    let lines = gateway_lines(&tools.stderr);
    assert_eq!(lines.len(), 1, "{tools:#?}");
    assert!(
        lines[0].contains(&peer) && lines[0].ends_with("connecting directly"),
        "{tools:#?}"
    );
    let refused = next_line(&stderr, "mcpctl serve: refused a connection: ");
    assert!(
        refused.contains(&format!(
            "runs as uid {}, not as this user (uid {OTHER})",
            my_uid()
        )),
        "{refused}"
    );

    let stop = as_me(&["serve", "--stop"]);
    assert_eq!(stop.code, 2, "{stop:#?}");
    assert!(stop.stderr.contains(&peer), "{stop:#?}");
    assert!(
        support::alive(daemon.0.id() as i32),
        "--stop signalled the other user's daemon"
    );
}

/// A daemon started by the test, ended by its handle.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The next line from `lines` that starts with `prefix`; fails after
/// [`DEADLINE`] or when the lines end, naming what it waited for.
fn next_line(lines: &mpsc::Receiver<String>, prefix: &str) -> String {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.starts_with(prefix) => return line,
            Ok(_) => {}
            Err(e) => panic!("no line starting with {prefix:?} ({e})"),
        }
    }
}

/// `serve --stop` with a socket and a record that do not prove a daemon:
/// the record names an unrelated process (here `sleep`), or the process
/// answering is not mcpctl. Nothing is signalled, and it says why.
#[test]
fn serve_stop_signals_only_the_proven_daemon() {
    let env = Env::new();
    let gateway = env.data_dir().join("gateway");
    std::fs::create_dir(&gateway).unwrap();
    std::fs::set_permissions(&gateway, std::fs::Permissions::from_mode(0o700)).unwrap();
    // This test process answers on the socket.
    let _listener = UnixListener::bind(gateway.join("gateway.sock")).unwrap();
    let mut sleeper = Command::new("sleep")
        .arg("300")
        .spawn()
        .expect("sleep runs");
    let record = gateway.join("gateway.json");
    let write_record = |pid: u32| {
        std::fs::write(&record, format!(r#"{{"pid": {pid}, "key": "k"}}"#)).unwrap();
    };

    write_record(sleeper.id());
    let stop = run(&env, &["serve", "--stop"]);
    let unrelated = sleeper.try_wait().expect("sleep's status").is_none();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert!(unrelated, "--stop killed the unrelated process: {stop:#?}");
    assert_eq!(stop.code, 2, "{stop:#?}");
    assert!(
        stop.stderr.contains(&format!(
            "not signalling pid {}: the process answering on {} is pid {}, not the one {} names",
            sleeper.id(),
            gateway.join("gateway.sock").display(),
            std::process::id(),
            record.display()
        )),
        "{stop:#?}"
    );

    write_record(std::process::id());
    let stop = run(&env, &["serve", "--stop"]);
    assert_eq!(stop.code, 2, "{stop:#?}");
    assert!(
        stop.stderr.contains(&format!(
            "not signalling pid {}: it runs ",
            std::process::id()
        )) && stop.stderr.contains(", not this mcpctl"),
        "{stop:#?}"
    );
}

/// The lines `reader` yields, read on a thread.
fn lines_of(reader: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { return };
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    receiver
}

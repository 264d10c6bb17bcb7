//! The approval prompt, driven through a real pseudo-terminal: allow once, deny, allow for this session.

mod support;

use support::Env;
use support::pty::Session;

const PROMPT: &str = "allow [o]nce, allow this tool for this [s]ession, or [d]eny? ";

fn start(env: &Env, preset: &str, documents: &[&str]) -> Session {
    let mut args = vec!["--preset", preset, "call", "demo", "echo"];
    args.extend_from_slice(documents);
    Session::spawn(env.command(&args))
}

#[test]
fn allow_once_asks_for_every_call() {
    let env = Env::new();
    let mut session = start(
        &env,
        "workspace",
        &[r#"{"text":"first"}"#, r#"{"text":"second"}"#],
    );
    session.expect("approval needed: call tool `echo` of server `demo` (Demo)? (preset workspace)");
    session.expect(r#"arguments: {"text":"first"}"#);
    session.expect("the server says: read-only, closed world (a hint, not verified)");
    session.expect(PROMPT);
    session.send_line("o");
    // Allowed once: the second call asks again.
    session.expect(r#"arguments: {"text":"second"}"#);
    session.expect(PROMPT);
    session.send_line("once");
    let (code, stdout, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(stdout, "# call 1\nfirst\n# call 2\nsecond\n");
    assert_eq!(screen.matches("approval needed").count(), 2, "{screen}");
}

#[test]
fn deny_makes_no_call() {
    let env = Env::new();
    let mut session = start(&env, "readonly", &[r#"{"text":"secret plans"}"#]);
    session.expect("(preset readonly)");
    session.expect(PROMPT);
    // An answer that is not one of the choices asks again.
    session.send_line("perhaps");
    session.expect("please answer o, s or d");
    session.expect(PROMPT);
    session.send_line("d");
    session.expect("the user denied it");
    let (code, stdout, screen) = session.finish();
    assert_eq!(code, 2, "{screen}");
    assert!(
        stdout.is_empty(),
        "a denied call prints no result: {stdout:?}"
    );
}

#[test]
fn allow_for_session_covers_later_calls_of_the_same_tool() {
    let env = Env::new();
    let mut session = start(
        &env,
        "workspace",
        &[
            r#"{"text":"one"}"#,
            r#"{"text":"two"}"#,
            r#"{"text":"three"}"#,
        ],
    );
    session.expect(r#"arguments: {"text":"one"}"#);
    session.expect(PROMPT);
    session.send_line("s");
    let (code, stdout, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(stdout, "# call 1\none\n# call 2\ntwo\n# call 3\nthree\n");
    assert_eq!(
        screen.matches("approval needed").count(),
        1,
        "the grant covers the later calls: {screen}"
    );
}

#[test]
fn the_full_preset_never_asks_and_results_show_on_the_terminal() {
    let env = Env::new();
    let session = Session::spawn_all_on_terminal(env.command(&[
        "call",
        "demo",
        "echo",
        r#"{"text":"no questions"}"#,
    ]));
    session.expect("no questions");
    let (code, _, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains("approval needed"), "{screen}");
}

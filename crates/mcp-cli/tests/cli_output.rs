//! Output rules: `--json` puts exactly one document on stdout (logs and notes go to stderr), and colour follows the terminal and `NO_COLOR`.

mod support;

use support::Env;
use support::pty::Session;

#[test]
fn json_output_is_one_document_even_with_logs() {
    let env = Env::new();
    for args in [
        vec!["servers"],
        vec!["tools"],
        vec!["tools", "demo"],
        vec!["call", "demo", "word_count", r#"{"text":"a b c"}"#],
        vec!["retry", "demo"],
        vec!["watch"],
        vec!["add", "x", "--", "srv"],
        vec!["disable", "x"],
        vec!["enable", "x"],
        vec!["remove", "x"],
    ] {
        let mut all = vec!["-vv", "--json"];
        all.extend_from_slice(&args);
        let run = env.run(&all);
        assert_eq!(run.code, 0, "{all:?}: {run:#?}");
        support::parse_one_document(&run.stdout);
        // Commands that connect log what the manager does; the store
        // commands may have nothing to say.
        let connects = matches!(args[0], "servers" | "tools" | "call" | "retry" | "watch");
        if connects {
            assert!(
                run.stderr.contains("INFO") || run.stderr.contains("DEBUG"),
                "{all:?}: -vv logs to stderr: {run:#?}"
            );
        }
    }
    // Without -v, nothing but mcpctl's own messages reaches stderr.
    let run = env.run(&["--json", "servers"]);
    assert!(run.stderr.is_empty(), "{run:#?}");
}

#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let env = Env::new();
    // `Env` sets NO_COLOR: plain even on a terminal.
    let session = Session::spawn_all_on_terminal(env.command(&["servers"]));
    session.expect("demo");
    let (code, _, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains('\x1b'), "{screen:?}");

    let mut command = env.command(&["servers"]);
    command.env_remove("NO_COLOR").env("TERM", "xterm");
    let session = Session::spawn_all_on_terminal(command);
    session.expect("demo");
    let (code, _, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("\x1b[1mID\x1b[0m"), "{screen:?}");
    assert!(screen.contains("\x1b[32mready\x1b[0m"), "{screen:?}");

    // Not a terminal: plain, whatever NO_COLOR says.
    let mut command = env.command(&["servers"]);
    command.env_remove("NO_COLOR");
    let run = support::run_to_end(command, &["servers"]);
    assert!(!run.stdout.contains('\x1b'), "{run:#?}");
}

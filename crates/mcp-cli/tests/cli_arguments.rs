//! Friendly arguments: `key=value` pairs typed by the tool's schema, `key=@file`, `-` for stdin, `server.tool`, "did you mean", and the parameter signatures and schemas `tools` shows.

mod support;

use std::io::Write;
use std::process::Stdio;

use support::Env;

#[test]
fn key_value_pairs_are_typed_by_the_tools_schema() {
    let env = Env::new();
    let run = env.run(&["--json", "call", "demo", "add", "a=2", "b=3.5"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let result = support::parse_one_document(&run.stdout);
    assert_eq!(result["structured_content"]["sum"], 5.5, "{result:#}");
    // A string property keeps what looks like a number as text.
    let run = env.run(&["call", "demo", "echo", "text=42"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "42\n");

    let run = env.run(&["call", "demo", "add", "a=two", "b=1"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr.contains("a=two: the schema wants a number"),
        "{run:#?}"
    );
    assert!(run.stdout.is_empty(), "{run:#?}");
    // Mixed with a JSON document: refused before anything starts.
    let run = env.run(&["call", "demo", "echo", "{}", "text=hi"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("among JSON documents"), "{run:#?}");
}

#[test]
fn a_value_can_come_from_a_file_and_json_from_stdin() {
    let env = Env::new();
    let file = env.root_file("note.txt", "line one\nline two");
    let pair = format!("text=@{}", file.display());
    let run = env.run(&["call", "demo", "echo", &pair]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "line one\nline two\n");

    let run = env.run(&["call", "demo", "echo", "text=@/nonexistent/note.txt"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("cannot read the file"), "{run:#?}");

    let mut command = env.command(&["call", "demo", "echo", "-"]);
    command.stdin(Stdio::piped());
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"text": "from stdin"}"#)
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "from stdin\n");
}

#[test]
fn server_dot_tool_is_accepted_and_typos_get_a_suggestion() {
    let env = Env::new();
    for args in [
        vec!["call", "demo.echo", "text=hi"],
        vec!["call", "demo.echo", r#"{"text": "hi"}"#],
        vec!["call", "demo", "echo", "text=hi"],
    ] {
        let run = env.run(&args);
        assert_eq!(run.code, 0, "{args:?}: {run:#?}");
        assert_eq!(run.stdout, "hi\n", "{args:?}");
    }
    let run = env.run(&["call", "dmeo", "echo"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("did you mean `demo`?"), "{run:#?}");
    let run = env.run(&["call", "demo.ecoh", "text=hi"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("did you mean `echo`?"), "{run:#?}");
    let run = env.run(&["call", "demo", "zzzz"]);
    assert!(!run.stderr.contains("did you mean"), "{run:#?}");
    let run = env.run(&["call", "demo"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("which tool of `demo`?"), "{run:#?}");
}

#[test]
fn tools_shows_signatures_whole_descriptions_when_piped_and_schemas() {
    let env = Env::new();
    let run = env.run(&["tools"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("echo(text: string)"), "{}", run.stdout);
    assert!(
        run.stdout.contains("add(a: number, b: number)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("current_time(timezone?: string)"),
        "{}",
        run.stdout
    );
    // Piped: the description is whole, past 72 characters.
    assert!(
        run.stdout.contains(
            "Returns the current date and time in RFC 3339 form, in UTC or at a fixed offset."
        ),
        "{}",
        run.stdout
    );
    let listing = env.json(&["tools"]);
    assert_eq!(listing[0]["signature"], "echo(text: string)", "{listing:#}");

    let run = env.run(&["tools", "--schema", "demo"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout.starts_with("demo.echo(text: string)\n{\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(r#""additionalProperties": false"#),
        "{}",
        run.stdout
    );
}

#[test]
fn on_a_terminal_descriptions_are_cut_to_fit() {
    let env = Env::new();
    let session = support::pty::Session::spawn_all_on_terminal(env.command(&["tools"]));
    session.expect("current_time(timezone?: string)");
    session.expect("in UTC or at a fixe…");
    let (code, _, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains("fixed offset."), "{screen}");
}

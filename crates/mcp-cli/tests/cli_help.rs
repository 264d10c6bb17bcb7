//! `mcpctl --help` explains every command in one line, and usage errors exit with 2.

mod support;

use support::Env;

#[test]
fn help_has_one_line_per_command() {
    let run = Env::new().run(&["--help"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let commands = [
        "servers",
        "tools",
        "call",
        "add",
        "remove",
        "enable",
        "disable",
        "retry",
        "watch",
        "demo-server",
    ];
    let section: Vec<&str> = run
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .collect();
    for command in commands {
        let lines: Vec<&&str> = section
            .iter()
            .filter(|line| line.split_whitespace().next() == Some(command))
            .collect();
        assert_eq!(lines.len(), 1, "{command}: {section:#?}");
        let explanation = lines[0].trim_start().trim_start_matches(command).trim();
        assert!(
            explanation.len() > 20,
            "{command} has no explanation: {lines:?}"
        );
    }
    for option in [
        "--config",
        "--project",
        "--no-project",
        "--preset",
        "--json",
        "--verbose",
    ] {
        assert!(run.stdout.contains(option), "{option} missing from --help");
    }
}

#[test]
fn usage_errors_exit_with_2() {
    let env = Env::new();
    for args in [
        vec![],
        vec!["frobnicate"],
        vec!["call"],
        vec!["--preset", "sometimes", "servers"],
    ] {
        let run = env.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:#?}");
        assert!(run.stdout.is_empty(), "{args:?}: {run:#?}");
    }
}

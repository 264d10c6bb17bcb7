//! `mcpctl --help` explains every command in one line, a command's help shows only the global flags it uses under their own heading, and usage errors exit with 2.

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
        "completions",
        "man",
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

/// The flags of `--help` text under `heading:`, up to the next heading.
fn flags_under(help: &str, heading: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| line.trim_end() != heading)
        .skip(1)
        .take_while(|line| line.is_empty() || line.starts_with(' '))
        .flat_map(|line| line.split([' ', ',']))
        .filter(|word| word.starts_with("--"))
        .map(|word| word.trim_end_matches("...").to_owned())
        .collect()
}

#[test]
fn a_commands_help_lists_global_flags_apart_from_its_own() {
    let env = Env::new();
    let run = env.run(&["tools", "--help"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let own = flags_under(&run.stdout, "Options:");
    let global = flags_under(&run.stdout, "Global options:");
    for flag in ["--allow-failures", "--schema", "--stdio", "--url"] {
        assert!(own.contains(&flag.to_owned()), "{flag}: {own:?}");
        assert!(!global.contains(&flag.to_owned()), "{flag}: {global:?}");
    }
    for flag in [
        "--config",
        "--project",
        "--no-project",
        "--no-host-configs",
        "--json",
        "--verbose",
    ] {
        assert!(global.contains(&flag.to_owned()), "{flag}: {global:?}");
        assert!(!own.contains(&flag.to_owned()), "{flag}: {own:?}");
    }
    // `tools` never calls a tool: the permission preset does nothing there.
    assert!(!run.stdout.contains("--preset"), "{}", run.stdout);

    let run = env.run(&["call", "--help"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let global = flags_under(&run.stdout, "Global options:");
    assert!(global.contains(&"--preset".to_owned()), "{global:?}");
}

#[test]
fn a_command_that_ignores_the_global_flags_lists_none() {
    let env = Env::new();
    for command in ["completions", "man"] {
        let run = env.run(&[command, "--help"]);
        assert_eq!(run.code, 0, "{run:#?}");
        assert!(!run.stdout.contains("Global options"), "{}", run.stdout);
        for flag in ["--config", "--project", "--preset", "--json", "--verbose"] {
            assert!(!run.stdout.contains(flag), "{command} --help: {flag}");
        }
    }
    // `add` writes the store and reads no other source.
    let run = env.run(&["add", "--help"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let global = flags_under(&run.stdout, "Global options:");
    assert!(global.contains(&"--json".to_owned()), "{global:?}");
    for flag in ["--config", "--project", "--no-host-configs", "--preset"] {
        assert!(!global.contains(&flag.to_owned()), "add --help: {flag}");
    }
}

#[test]
fn a_hidden_global_flag_is_still_accepted() {
    let env = Env::new();
    // Before the command, as scripts put it, and after it.
    let run = env.run(&["--preset", "readonly", "--json", "completions", "bash"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("mcpctl"), "{run:#?}");
    let run = env.run(&["completions", "bash", "--config", "/nonexistent"]);
    assert_eq!(run.code, 0, "{run:#?}");
}

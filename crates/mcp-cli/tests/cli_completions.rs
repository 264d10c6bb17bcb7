//! `mcpctl completions SHELL` prints a script each shell accepts, and `mcpctl man` prints (or writes) man pages naming every command.

mod support;

use std::process::Command;

use support::Env;

/// Every command `mcpctl --help` lists, read from the help itself so a new
/// command is checked without editing this test.
fn commands(env: &Env) -> Vec<String> {
    let run = env.run(&["--help"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let names: Vec<String> = run
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    assert!(names.len() > 20, "too few commands: {names:?}");
    assert!(names.iter().any(|name| name == "completions"), "{names:?}");
    names
}

#[test]
fn bash_completions_name_every_command_and_parse() {
    let env = Env::new();
    let run = env.run(&["completions", "bash"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stderr.is_empty(), "{run:#?}");
    for command in commands(&env) {
        assert!(
            run.stdout
                .contains(&format!("mcpctl__subcmd__{}", command.replace('-', "__")))
                || run.stdout.contains(&format!(" {command} ")),
            "bash completions miss {command}"
        );
    }
    // A command's own flags are offered, too.
    assert!(run.stdout.contains("--allow-failures"));
    let script = env.data_dir().join("mcpctl.bash");
    std::fs::write(&script, &run.stdout).unwrap();
    let check = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(check.status.success(), "bash -n: {check:?}");
}

#[test]
fn zsh_fish_elvish_and_powershell_scripts_name_the_commands() {
    let env = Env::new();
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let run = env.run(&["completions", shell]);
        assert_eq!(run.code, 0, "{shell}: {run:#?}");
        for command in ["servers", "tools", "call", "completions", "man"] {
            assert!(
                run.stdout.contains(command),
                "{shell} completions miss {command}"
            );
        }
    }
    let run = env.run(&["completions", "zsh"]);
    assert!(run.stdout.starts_with("#compdef mcpctl"), "{}", run.stdout);
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let run = Env::new().run(&["completions", "tcsh"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("bash"), "names the shells: {run:#?}");
}

#[test]
fn completions_leave_out_the_flags_a_command_ignores() {
    let run = Env::new().run(&["completions", "fish"]);
    assert_eq!(run.code, 0, "{run:#?}");
    // fish writes one `complete` line per flag and command: --preset is
    // offered for `call` and nowhere else below the top.
    let preset: Vec<&str> = run
        .stdout
        .lines()
        .filter(|line| line.contains("-l preset"))
        .collect();
    assert!(
        preset
            .iter()
            .any(|line| line.contains("__fish_mcpctl_using_subcommand call")),
        "{preset:#?}"
    );
    assert!(
        !preset
            .iter()
            .any(|line| line.contains("__fish_mcpctl_using_subcommand servers")),
        "{preset:#?}"
    );
}

#[test]
fn man_page_has_a_title_and_every_command() {
    let env = Env::new();
    let run = env.run(&["man"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("\n.TH mcpctl 1"), "{}", run.stdout);
    assert!(run.stdout.contains(".SH SUBCOMMANDS"), "{}", run.stdout);
    for command in commands(&env) {
        assert!(
            // roff escapes every hyphen.
            run.stdout
                .contains(&format!("mcpctl\\-{}(1)", command.replace('-', "\\-"))),
            "man page misses {command}"
        );
    }
}

#[test]
fn man_out_writes_one_page_per_command() {
    let env = Env::new();
    let dir = env.data_dir().join("man");
    let run = env.run(&["man", "--out", dir.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.is_empty(), "{run:#?}");
    let top = std::fs::read_to_string(dir.join("mcpctl.1")).unwrap();
    assert!(top.contains(".TH mcpctl 1"));
    for command in commands(&env) {
        let page = std::fs::read_to_string(dir.join(format!("mcpctl-{command}.1")))
            .unwrap_or_else(|e| panic!("mcpctl-{command}.1: {e}"));
        assert!(page.contains(".TH"), "{command}: {page}");
    }
    let tools = std::fs::read_to_string(dir.join("mcpctl-tools.1")).unwrap();
    assert!(tools.contains("allow\\-failures"), "{tools}");
    assert!(!tools.contains("preset"), "tools ignores --preset: {tools}");
}

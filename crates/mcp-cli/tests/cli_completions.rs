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

/// The path of `shell`; fails naming the command that installs it.
fn installed(shell: &str) -> std::path::PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(shell))
                .find(|path| path.is_file())
        })
        .unwrap_or_else(|| {
            panic!("{shell} is not installed: run `apt-get install -y {shell}` (bash .ci/run does)")
        })
}

/// An environment whose sources are one `--config` file with
/// server-everything as `ev` and a server that never starts,
/// `everything-else` (its id is all completion needs); returns the file.
fn completion_env() -> (Env, String) {
    let env = Env::new();
    let entry = support::server_everything();
    let config = env.write_json(
        "servers.json",
        &serde_json::json!({"mcpServers": {
            "ev": {"command": "node", "args": [entry, "stdio"]},
            "everything-else": {"command": "/nonexistent/server"},
        }}),
    );
    (env, config.display().to_string())
}

/// `shell` in `env`, with `mcpctl` on its PATH and only the `--config`
/// files the line names as sources.
fn shell_command(env: &Env, shell: &std::path::Path) -> Command {
    let bin = std::path::Path::new(support::MCPCTL).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut command = Command::new(shell);
    command
        .current_dir(env.work_dir())
        .env("PATH", path)
        .env("HOME", env.home())
        .env("LOOP_DATA_DIR", env.data_dir())
        .env_remove("MCPCTL_DATA_DIR")
        .env_remove("XDG_DATA_HOME")
        .env("MCPCTL_NO_HOST_CONFIGS", "1")
        .env("NO_COLOR", "1");
    command
}

/// The completion script for `shell`, written into `env`.
fn script(env: &Env, shell: &str) -> std::path::PathBuf {
    let run = env.run(&["completions", shell]);
    assert_eq!(run.code, 0, "{run:#?}");
    let path = env.data_dir().join(format!("mcpctl.{shell}"));
    std::fs::write(&path, &run.stdout).unwrap();
    path
}

#[test]
fn bash_completes_servers_tools_and_resource_uris() {
    let bash = installed("bash");
    let (env, config) = completion_env();
    let script = script(&env, "bash");
    // bash's own completion variables, as readline sets them for the
    // line, and the function `complete -p` says is registered.
    let complete = |line: &str| -> Vec<String> {
        let program = r#"source "$1"; COMP_LINE="$2"; COMP_POINT=${#COMP_LINE}
set -- $(complete -p mcpctl); fn="${@: -2:1}"
read -ra COMP_WORDS <<< "$COMP_LINE"
[[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
"$fn" mcpctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}""#;
        let out = shell_command(&env, &bash)
            .arg("-c")
            .arg(program)
            .arg("bash")
            .arg(&script)
            .arg(line)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        complete(&format!("mcpctl --config {config} call ")),
        ["ev", "everything-else"]
    );
    let tools = complete(&format!("mcpctl call --config {config} ev get-s"));
    assert_eq!(tools, ["get-structured-content", "get-sum"]);
    let dotted = complete(&format!("mcpctl --config {config} tools ev.get-su"));
    assert_eq!(dotted, ["ev.get-sum"]);
    // bash splits words at `:`: what follows it replaces the word.
    let uris = complete(&format!(
        "mcpctl --config {config} read ev demo://resource/static/document/f"
    ));
    assert_eq!(uris, ["//resource/static/document/features.md"]);
    // Flags still come from the static script.
    let flags = complete(&format!("mcpctl --config {config} call --sa"));
    assert_eq!(flags, ["--save"]);
}

#[test]
fn fish_completes_servers_tools_and_prompts() {
    let fish = installed("fish");
    let (env, config) = completion_env();
    let script = script(&env, "fish");
    let complete = |line: &str| -> Vec<String> {
        let out = shell_command(&env, &fish)
            .arg("-c")
            .arg("source $argv[1]; complete -C$argv[2]")
            .arg(&script)
            .arg(line)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            // fish adds a description after a tab.
            .map(|line| line.split('\t').next().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        complete(&format!("mcpctl --config {config} prompt e")),
        ["ev", "everything-else"]
    );
    assert_eq!(
        complete(&format!("mcpctl --config {config} call ev get-s")),
        ["get-structured-content", "get-sum"]
    );
    let prompts = complete(&format!("mcpctl --config {config} prompt ev "));
    assert!(prompts.contains(&"simple-prompt".to_owned()), "{prompts:?}");
    assert!(
        complete(&format!("mcpctl --config {config} call --sa")).contains(&"--save".to_owned())
    );
}

#[test]
fn zsh_completes_servers_tools_and_prompts_at_a_terminal() {
    let zsh = installed("zsh");
    let (env, config) = completion_env();
    let script = script(&env, "zsh");
    let mut command = shell_command(&env, &zsh);
    command.args(["-f", "-i"]);
    let mut session = support::pty::Session::spawn_all_on_terminal(command);
    session.send_line(&format!(
        "autoload -Uz compinit; compinit -u -D; source {}; PS1='> '; print READY-$((6*7))",
        script.display()
    ));
    session.expect("READY-42");
    // Two servers start with `e`: the first Tab completes what they
    // share, the second lists both.
    session.type_text(&format!("mcpctl --config {config} call e\t"));
    session.expect("call ev");
    session.type_text("\t");
    session.expect("everything-else");
    // Ctrl-U clears the line.
    session.type_text(&format!("\x15mcpctl --config {config} prompt ev \t"));
    session.expect("completable-prompt");
    session.type_text(&format!("\x15mcpctl --config {config} call ev get-s\t"));
    session.expect("get-structured-content");
    session.type_text("\x15exit\r");
    let (code, _, shown) = session.finish();
    assert_eq!(code, 0, "{shown}");
}

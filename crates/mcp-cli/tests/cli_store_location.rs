//! Where `mcpctl` keeps its store: `$MCPCTL_DATA_DIR`, `$LOOP_DATA_DIR`, the platform's data directory, and an old `~/.loop/mcp.json` still found with a note.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{Env, MCPCTL, Run, parse_one_document, run_to_end};

/// `mcpctl ARGS` with no variable naming a data dir, and `XDG_DATA_HOME`
/// set to `xdg` (or unset).
fn command(env: &Env, xdg: Option<&Path>, args: &[&str]) -> Command {
    let mut command = env.command(args);
    command.env_remove("LOOP_DATA_DIR");
    if let Some(xdg) = xdg {
        command.env("XDG_DATA_HOME", xdg);
    }
    command
}

/// `mcpctl servers` with no variable naming a data dir (`with` adds some).
fn list(env: &Env, with: &[(&str, &Path)]) -> Run {
    let mut listing = command(env, None, &["servers"]);
    for (name, value) in with {
        listing.env(name, value);
    }
    run_to_end(listing, &["servers"])
}

/// Runs an `add` command, expects success and returns the store file
/// `add --json` says it wrote.
fn add(command: Command) -> PathBuf {
    let run = run_to_end(command, &["--json", "add"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stderr.is_empty(), "{run:#?}");
    let added = parse_one_document(&run.stdout);
    PathBuf::from(added["store"].as_str().expect("the store's path"))
}

/// `mcpctl --json add ID -- mcpctl demo-server`: a server that really
/// connects.
fn add_command(env: &Env, xdg: Option<&Path>, id: &str) -> Command {
    command(
        env,
        xdg,
        &["--json", "add", id, "--", MCPCTL, "demo-server"],
    )
}

/// The `servers` table: each row's id and source.
fn servers(run: &Run) -> Vec<(String, String)> {
    assert_eq!(run.code, 0, "{run:#?}");
    run.stdout
        .lines()
        .skip(1)
        .map(|line| {
            let id = line.split_whitespace().next().unwrap().to_owned();
            let source = line
                .split_once("store (")
                .map_or_else(String::new, |(_, rest)| {
                    rest.trim_end().trim_end_matches(')').to_owned()
                });
            (id, source)
        })
        .collect()
}

#[test]
fn the_store_lives_in_xdg_data_home() {
    let env = Env::new();
    let xdg = env.home().with_file_name("xdg");
    let store = add(add_command(&env, Some(&xdg), "mine"));
    let expected = xdg.join("mcpctl").join("mcp.json");
    assert_eq!(store, expected);
    assert!(expected.is_file());
    assert!(!env.store().exists(), "LOOP_DATA_DIR was not set");
    assert!(!env.home().join(".local").exists());

    let run = run_to_end(command(&env, Some(&xdg), &["servers"]), &["servers"]);
    assert_eq!(
        servers(&run),
        [("mine".to_owned(), expected.display().to_string())],
        "{run:#?}"
    );
    assert!(run.stderr.is_empty(), "no note: {run:#?}");
}

#[test]
fn without_xdg_data_home_the_store_is_under_local_share() {
    let env = Env::new();
    let store = add(add_command(&env, None, "mine"));
    let expected = env.home().join(".local/share/mcpctl/mcp.json");
    assert_eq!(store, expected);
    assert!(expected.is_file());

    let run = list(&env, &[]);
    assert_eq!(
        servers(&run),
        [("mine".to_owned(), expected.display().to_string())],
        "{run:#?}"
    );
}

#[test]
fn mcpctl_data_dir_moves_the_store_and_wins_over_loop_data_dir() {
    let env = Env::new();
    let dir = env.home().with_file_name("custom");
    let mut add_cmd = add_command(&env, None, "mine");
    add_cmd
        .env("MCPCTL_DATA_DIR", &dir)
        .env("LOOP_DATA_DIR", env.data_dir());
    assert_eq!(add(add_cmd), dir.join("mcp.json"));
    assert!(!env.store().exists(), "not in LOOP_DATA_DIR");

    let run = list(&env, &[("MCPCTL_DATA_DIR", &dir)]);
    assert_eq!(
        servers(&run),
        [(
            "mine".to_owned(),
            dir.join("mcp.json").display().to_string()
        )],
        "{run:#?}"
    );
}

#[test]
fn an_old_store_in_dot_loop_is_listed_with_a_note_and_left_where_it_is() {
    let env = Env::new();
    let legacy_dir = env.home().join(".loop");
    // Written the way an older mcpctl did: LOOP_DATA_DIR unset meant ~/.loop.
    let mut old = add_command(&env, None, "old");
    old.env("LOOP_DATA_DIR", &legacy_dir);
    let legacy = add(old);
    assert_eq!(legacy, legacy_dir.join("mcp.json"));
    let before = std::fs::read(&legacy).unwrap();
    let new_dir = env.home().join(".local/share/mcpctl");

    let run = list(&env, &[]);
    assert_eq!(
        servers(&run),
        [("old".to_owned(), legacy.display().to_string())],
        "{run:#?}"
    );
    let notes: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(notes.len(), 1, "one line: {run:#?}");
    assert!(
        notes[0].starts_with("mcpctl: note: servers read from ")
            && notes[0].contains(&legacy.display().to_string())
            && notes[0].contains("old location")
            && notes[0].contains(&format!(
                "move it, and the files beside it, to {}/",
                new_dir.display()
            )),
        "{run:#?}"
    );
    // Nothing was moved or copied.
    assert_eq!(std::fs::read(&legacy).unwrap(), before);
    assert!(!new_dir.exists());

    // With --json the note stays on stderr and stdout is one document.
    let args = ["--json", "sources"];
    let run = run_to_end(command(&env, None, &args), &args);
    assert_eq!(run.code, 0, "{run:#?}");
    let sources = parse_one_document(&run.stdout);
    let store = sources
        .as_array()
        .unwrap()
        .iter()
        .find(|source| source["label"] == "store")
        .expect("the store is a source");
    assert_eq!(store["path"], legacy.display().to_string());
    assert_eq!(store["servers"], 1);
    assert_eq!(run.stderr.lines().count(), 1, "{run:#?}");

    // Once the new place has a store, that is the store, without a note.
    let mut fresh = add_command(&env, None, "new");
    fresh.env("MCPCTL_DATA_DIR", &new_dir);
    assert_eq!(add(fresh), new_dir.join("mcp.json"));
    let run = list(&env, &[]);
    assert_eq!(
        servers(&run),
        [(
            "new".to_owned(),
            new_dir.join("mcp.json").display().to_string()
        )],
        "{run:#?}"
    );
    assert!(run.stderr.is_empty(), "{run:#?}");
}

#[test]
fn a_variable_naming_a_data_dir_turns_the_old_store_off() {
    let env = Env::new();
    let legacy_dir = env.home().join(".loop");
    let mut old = add_command(&env, None, "old");
    old.env("LOOP_DATA_DIR", &legacy_dir);
    add(old);
    // The test environment's LOOP_DATA_DIR: an empty store there, the demo.
    let run = env.run(&["servers"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!run.stdout.contains("old"), "{run:#?}");
    assert!(!run.stderr.contains("note"), "{run:#?}");
}

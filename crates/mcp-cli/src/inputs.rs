//! `${input:ID}` prompts (VS Code's `inputs`): asked on the terminal before servers start, remembered for the run, saved only when the person says so.
//!
//! Before a run hands its servers to the manager, every prompt a server's
//! strings reference ([`mcp_config::input_prompts`]) gets an answer:
//!
//! 1. a saved answer (`inputs.json` in the data dir, owner-only, see
//!    [`InputStore`]), else
//! 2. on a terminal (stdin and stderr), for commands that start servers for
//!    the person, the person's answer: typed unseen for a password input,
//!    the prompt's default on an empty line. `Save it? [y/N]` follows; only
//!    a yes writes it to `inputs.json`. Otherwise it lives for this run only.
//! 3. Nobody to ask (no terminal, `servers`): no answer, and the server
//!    fails with `missing_input`, naming the input.
//!
//! Answers of one file's inputs are shared by its servers, as VS Code does.
//! They are [`Secret`]s: never printed, logged or put in an error.

use std::collections::HashMap;
use std::io::{self, BufRead, IsTerminal, Write};

use mcp_config::{
    DiscoveryEntry, DiscoveryReport, InputPrompt, InputProvider, InputStore, ProcessEnv, Secret,
    input_prompts,
};

use crate::output::{Output, Paint, line};

/// The answers of this run, by server and input id.
#[derive(Debug, Default)]
pub(crate) struct RunAnswers {
    answers: HashMap<(String, String), Secret>,
}

impl InputProvider for RunAnswers {
    fn answer(&self, server: &str, prompt: &InputPrompt) -> Option<Secret> {
        self.answers
            .get(&(server.to_owned(), prompt.id.clone()))
            .cloned()
    }
}

/// Answers every prompt the servers of `report` reference, as the module
/// documentation says; `ask` allows asking on a terminal. Blocks on the
/// terminal: call it off the async workers.
pub(crate) fn collect(report: &DiscoveryReport, ask: bool) -> RunAnswers {
    let interactive = ask && io::stdin().is_terminal() && io::stderr().is_terminal();
    let saved = InputStore::open_default(&crate::sources::store_location(), &ProcessEnv).ok();
    let output = Output::new(false);
    // One answer per declaring file (or server, for a source without a file).
    let mut by_scope: HashMap<(String, String), Option<Secret>> = HashMap::new();
    let mut run = RunAnswers::default();
    for entry in &report.entries {
        let DiscoveryEntry::Server(server) = entry else {
            continue;
        };
        for prompt in input_prompts(&server.config) {
            let file = server.source.path.as_deref();
            let scope = file.map_or_else(
                || format!("server:{}", server.config.id),
                |path| path.display().to_string(),
            );
            let key = (scope, prompt.id.clone());
            let answer = by_scope
                .entry(key)
                .or_insert_with(|| {
                    let stored = match (&saved, file) {
                        (Some(store), Some(file)) => {
                            store.answer(file, &prompt.id).unwrap_or_else(|error| {
                                eprintln!(
                                    "mcpctl: saved inputs are not used: {}",
                                    mcp_proto::text::ErrorChain(&error)
                                );
                                None
                            })
                        }
                        _ => None,
                    };
                    if stored.is_some() || !interactive {
                        return stored;
                    }
                    let answer = ask_terminal(&server.config.id, &prompt, &output)?;
                    if let (Some(store), Some(file)) = (&saved, file)
                        && confirm(&format!(
                            "Save it in {} for next time? [y/N] ",
                            store.path().display()
                        ))
                    {
                        match store.save(file, &prompt.id, &answer) {
                            Ok(()) => eprintln!("mcpctl: saved."),
                            Err(error) => eprintln!(
                                "mcpctl: not saved: {}",
                                mcp_proto::text::ErrorChain(&error)
                            ),
                        }
                    }
                    Some(answer)
                })
                .clone();
            if let Some(answer) = answer {
                run.answers
                    .insert((server.config.id.clone(), prompt.id.clone()), answer);
            }
        }
    }
    run
}

/// Asks for one input; `None` when the person gives nothing and there is
/// no default, or the terminal is gone.
fn ask_terminal(server: &str, prompt: &InputPrompt, output: &Output) -> Option<Secret> {
    let about = prompt
        .description
        .as_deref()
        .map_or_else(String::new, |d| format!(": {}", line(d)));
    let default = match (&prompt.default, prompt.password) {
        (Some(default), false) => format!(" [default: {}]", line(default)),
        (Some(_), true) => " [default: the one configured]".to_owned(),
        (None, _) => String::new(),
    };
    let question = format!(
        "{} server `{}` asks for input `{}`{about}\n{}{default}: ",
        output.paint_err(Paint::Yellow, "input needed:"),
        line(server),
        line(&prompt.id),
        if prompt.password {
            "value (not shown)"
        } else {
            "value"
        },
    );
    let mut stderr = io::stderr().lock();
    let _ = stderr.write_all(question.as_bytes());
    let _ = stderr.flush();
    drop(stderr);
    let typed = if prompt.password {
        read_hidden()
    } else {
        read_line()
    }
    .ok()?;
    let typed = typed.trim_end_matches(['\r', '\n']);
    if typed.is_empty() {
        return prompt.default.clone().map(Secret::new);
    }
    Some(Secret::new(typed))
}

fn confirm(question: &str) -> bool {
    let mut stderr = io::stderr().lock();
    let _ = stderr.write_all(question.as_bytes());
    let _ = stderr.flush();
    drop(stderr);
    read_line()
        .is_ok_and(|answer| matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

/// One line from stdin; an error at the end of input.
fn read_line() -> io::Result<String> {
    let mut text = String::new();
    match io::stdin().lock().read_line(&mut text)? {
        0 => Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
        _ => Ok(text),
    }
}

/// One line from the terminal with echo off (the line break still shows),
/// the terminal's modes restored afterwards.
#[cfg(unix)]
fn read_hidden() -> io::Result<String> {
    use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcsetattr};
    let stdin = io::stdin();
    let saved = tcgetattr(&stdin)?;
    let mut quiet = saved.clone();
    quiet.local_modes.remove(LocalModes::ECHO);
    quiet.local_modes.insert(LocalModes::ECHONL);
    tcsetattr(&stdin, OptionalActions::Now, &quiet)?;
    let text = read_line();
    tcsetattr(&stdin, OptionalActions::Now, &saved)?;
    text
}

/// Elsewhere there is no portable way to turn echo off here: refuse to
/// read a password where it would show.
#[cfg(not(unix))]
fn read_hidden() -> io::Result<String> {
    eprintln!("mcpctl: cannot hide what is typed on this terminal; not asking for a password");
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

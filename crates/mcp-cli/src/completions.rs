//! `mcpctl completions SHELL` and `mcpctl man`: completion scripts and man pages generated from the parser itself.
//!
//! Both come from [`crate::cli::documented_command`], the same clap
//! definition `mcpctl` parses its own arguments with, so a script or a page
//! never offers a flag the parser refuses, nor misses one it accepts; a
//! global flag a command ignores is left out of that command's part.

use std::io::Write;
use std::path::Path;

use crate::exit::{CliError, Exit};
use crate::sources::SourceOptions;

/// The name every script and page uses for the program.
const BIN_NAME: &str = "mcpctl";

/// Prints the completion script for `shell` on stdout: clap's static
/// script (commands, flags, flag values) and, for bash, zsh and fish, a
/// hook that first asks `mcpctl __complete` for the server ids, tools,
/// prompts and resource URIs the word under the cursor may be
/// ([`dynamic`]), and falls back to the static script when it offers
/// nothing.
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<Exit, CliError> {
    let mut script = Vec::new();
    clap_complete::generate(
        shell,
        &mut crate::cli::documented_command(),
        BIN_NAME,
        &mut script,
    );
    let script = String::from_utf8_lossy(&script).into_owned();
    let script = match shell {
        clap_complete::Shell::Bash => format!("{script}{BASH_HOOK}"),
        clap_complete::Shell::Zsh => zsh_with_hook(&script),
        clap_complete::Shell::Fish => format!("{script}{FISH_HOOK}"),
        _ => script,
    };
    write_stdout(script.as_bytes())
}

/// bash: the line up to the cursor goes to `mcpctl __complete`; its words
/// replace the current word (after its last `:` or `=`, where bash splits
/// words), else the static `_mcpctl` runs.
const BASH_HOOK: &str = r#"
_mcpctl_dynamic() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    if [[ "$cur" != -* ]]; then
        local found
        found="$(MCPCTL_COMPLETE_LINE="${COMP_LINE:0:COMP_POINT}" command mcpctl __complete --shell bash 2>/dev/null)"
        if [[ -n "$found" ]]; then
            local IFS=$'
'
            COMPREPLY=($found)
            return 0
        fi
    fi
    _mcpctl "$@"
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _mcpctl_dynamic -o nosort -o bashdefault -o default mcpctl
else
    complete -F _mcpctl_dynamic -o bashdefault -o default mcpctl
fi
"#;

/// zsh: the words up to the cursor (as typed) go to `mcpctl __complete`;
/// its words are offered, else the static completion runs.
const ZSH_HOOK: &str = r#"
_mcpctl() {
    local -a found
    found=("${(@f)$(MCPCTL_COMPLETE_LINE="${(j: :)words[1,CURRENT]}" command mcpctl __complete --shell zsh 2>/dev/null)}")
    if [[ -n "${found[1]}" ]]; then
        compadd -- "${found[@]}"
        return 0
    fi
    _mcpctl_static "$@"
}
"#;

/// clap's zsh script with its completion function renamed
/// `_mcpctl_static` and [`ZSH_HOOK`]'s `_mcpctl` in front of it, before
/// the lines that register (or, autoloaded, run) `_mcpctl`.
fn zsh_with_hook(script: &str) -> String {
    let script = script.replacen("\n_mcpctl() {", "\n_mcpctl_static() {", 1);
    match script.rfind("\nif [ \"$funcstack[1]\" = \"_mcpctl\" ]") {
        Some(at) => format!("{}{ZSH_HOOK}{}", &script[..at], &script[at..]),
        None => format!("{script}{ZSH_HOOK}\ncompdef _mcpctl mcpctl\n"),
    }
}

/// fish: the line up to the cursor goes to `mcpctl __complete`; fish
/// offers its words beside the static ones.
const FISH_HOOK: &str = r#"
function __mcpctl_dynamic
    MCPCTL_COMPLETE_LINE=(commandline -cp) command mcpctl __complete --shell fish 2>/dev/null
end
complete -c mcpctl -f -a '(__mcpctl_dynamic)'
"#;

/// Prints the top man page on stdout, or, with `out`, writes `mcpctl.1`
/// and `mcpctl-COMMAND.1` for every command into that directory (created
/// when missing) and names each file on stderr.
pub(crate) fn man(out: Option<&Path>) -> Result<Exit, CliError> {
    let command = crate::cli::documented_command();
    let Some(dir) = out else {
        let mut page = Vec::new();
        clap_mangen::Man::new(command)
            .render(&mut page)
            .map_err(|e| CliError::usage(format!("cannot render the man page: {e}")))?;
        return write_stdout(&page);
    };
    let failed = |e: std::io::Error| {
        CliError::usage(format!("cannot write man pages to {}: {e}", dir.display()))
            .code("write_failed")
    };
    std::fs::create_dir_all(dir).map_err(failed)?;
    clap_mangen::generate_to(command, dir).map_err(failed)?;
    eprintln!("mcpctl: man pages written to {}", dir.display());
    Ok(Exit::Success)
}

/// Writes `bytes` to stdout; a closed pipe (`| head`) is not an error
/// worth a message, anything else is.
fn write_stdout(bytes: &[u8]) -> Result<Exit, CliError> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(Exit::Success),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Exit::Success),
        Err(e) => Err(CliError::usage(format!("cannot write to stdout: {e}"))),
    }
}

/// The variable the completion scripts pass the line being completed in.
pub(crate) const LINE_ENV: &str = "MCPCTL_COMPLETE_LINE";

/// How long completion waits for a server to list its tools, prompts or
/// resources, unless the line being completed has `--timeout`: a shell
/// waits on it.
const COMPLETION_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What a word at a command's positional place names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A server id.
    Server,
    /// A tool of the server before it (or `SERVER.TOOL` in one word).
    Tool,
    /// A prompt of the server before it.
    Prompt,
    /// A resource URI of the server before it.
    Uri,
    /// A prompt or resource template of the server before it.
    PromptOrTemplate,
}

/// The positional places of each command whose words name servers'
/// things, in order.
fn places(command: &str) -> &'static [Kind] {
    match command {
        "tools" | "call" => &[Kind::Server, Kind::Tool],
        "read" | "skill" => &[Kind::Server, Kind::Uri],
        "prompt" => &[Kind::Server, Kind::Prompt],
        "complete" => &[Kind::Server, Kind::PromptOrTemplate],
        "resources" | "skills" | "prompts" | "retry" | "login" | "logout" | "trust" | "untrust"
        | "remove" | "enable" | "disable" => &[Kind::Server],
        _ => &[],
    }
}

/// `mcpctl __complete --shell SHELL` with the line in
/// `$MCPCTL_COMPLETE_LINE` (an environment variable rather than an
/// argument, so that a `--header` or `--bearer-env` on the line is not in
/// the process list), or `-- LINE`: the server ids, tools,
/// prompts or resource URIs that fit the word under the cursor of `line`
/// (the command line up to the cursor, as the shell has it), one per line;
/// nothing when the word is a flag, a flag's value, or a place that names
/// none of them (the static script completes those). The server ids come
/// from the sources alone; the rest from connecting that one server, at
/// most [`COMPLETION_WAIT`]. Nothing is asked, nothing printed on stderr,
/// and a failure of any kind completes nothing.
pub(crate) fn dynamic(shell: crate::cli::DynamicShell, line: &str) -> Result<Exit, CliError> {
    let Some(candidates) = dynamic_words(line) else {
        return Ok(Exit::Success);
    };
    let current = current_word(line).unwrap_or_default();
    // bash puts only what follows its last word break in the word.
    let cut = match shell {
        crate::cli::DynamicShell::Bash => current.rfind([':', '=']).map_or(0, |at| at + 1),
        crate::cli::DynamicShell::Zsh | crate::cli::DynamicShell::Fish => 0,
    };
    let mut text = String::new();
    for candidate in candidates {
        if candidate.starts_with(&current)
            && !candidate.chars().any(char::is_control)
            && !candidate.is_empty()
        {
            text.push_str(&candidate[cut..]);
            text.push('\n');
        }
    }
    write_stdout(text.as_bytes())
}

/// The word under the cursor: what follows the last unquoted space
/// (empty after a space); `None` inside an unclosed quote.
fn current_word(line: &str) -> Option<String> {
    if line.is_empty() || line.ends_with([' ', '\t']) && shlex::split(line).is_some() {
        return Some(String::new());
    }
    shlex::split(line)?.pop()
}

/// The candidates for the word under the cursor of `line`, unfiltered;
/// `None` when dynamic words do not apply there.
fn dynamic_words(line: &str) -> Option<Vec<String>> {
    let mut words = shlex::split(line)?;
    let current = current_word(line)?;
    if !current.is_empty() {
        words.pop();
    }
    if current.starts_with('-') || words.is_empty() {
        return None;
    }
    let command = crate::cli::command();
    if takes_value(&command, &words) {
        return None;
    }
    let matches = command
        .ignore_errors(true)
        .try_get_matches_from(&words)
        .ok()?;
    let (name, sub) = matches.subcommand()?;
    let places = places(name);
    let options = completion_sources(&matches, sub);
    let adhoc = crate::sources::adhoc_ids(&options.adhoc);
    // `call --stdio CMD TOOL`: the one ad-hoc server is the default.
    let default = (name == "call" && adhoc.len() == 1).then(|| adhoc[0].clone());
    let mut given: Vec<String> = ["server", "tool", "uri", "prompt", "name"]
        .iter()
        .filter_map(|id| sub.try_get_one::<String>(id).ok().flatten().cloned())
        .collect();
    if let Some(id) = &default
        && given.first() != Some(id)
    {
        given.insert(0, id.clone());
    }
    if matches!(name, "tools" | "call")
        && let Some((server, _)) = given.first().and_then(|word| word.split_once('.'))
    {
        // `SERVER.TOOL` fills both places.
        given = vec![server.to_owned(), String::new()];
    }
    let kind = *places.get(given.len())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    runtime.block_on(async {
        match kind {
            Kind::Server => {
                let mut ids = server_ids(&options);
                // `SERVER.TOOL` in one word, once a server is typed whole.
                if matches!(name, "tools" | "call")
                    && let Some((server, _)) = current.split_once('.')
                    && ids.iter().any(|id| id == server)
                {
                    ids = offered(&options, server, Kind::Tool)
                        .await
                        .into_iter()
                        .map(|tool| format!("{server}.{tool}"))
                        .collect();
                }
                Some(ids)
            }
            other => Some(offered(&options, &given[0], other).await),
        }
    })
}

/// Whether the last word of `words` is a flag that takes a value (so the
/// word under the cursor is that value).
fn takes_value(command: &clap::Command, words: &[String]) -> bool {
    let Some(last) = words.last() else {
        return false;
    };
    let Some(long) = last.strip_prefix("--").filter(|l| !l.contains('=')) else {
        return false;
    };
    let takes = |cmd: &clap::Command| {
        cmd.get_arguments()
            .find(|arg| arg.get_long() == Some(long))
            .map(|arg| arg.get_action().takes_values())
    };
    let sub = words
        .iter()
        .skip(1)
        .find_map(|word| command.find_subcommand(word));
    sub.and_then(takes)
        .or_else(|| takes(command))
        .unwrap_or(false)
}

/// The sources the line being completed names (`--config`, `--project`,
/// `--stdio`, ...), read from its partial parse; nothing is asked.
fn completion_sources(top: &clap::ArgMatches, sub: &clap::ArgMatches) -> SourceOptions {
    let many = |matches: &clap::ArgMatches, id: &str| -> Vec<String> {
        matches
            .try_get_many::<String>(id)
            .ok()
            .flatten()
            .map(|values| values.cloned().collect())
            .unwrap_or_default()
    };
    let paths = |id: &str| -> Vec<std::path::PathBuf> {
        [top, sub]
            .iter()
            .flat_map(|m| {
                m.try_get_many::<std::path::PathBuf>(id)
                    .ok()
                    .flatten()
                    .map(|values| values.cloned().collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .collect()
    };
    let flag = |id: &str| {
        [top, sub]
            .iter()
            .any(|m| m.try_get_one::<bool>(id).ok().flatten() == Some(&true))
    };
    let timeout = [sub, top].iter().find_map(|m| {
        m.try_get_one::<std::time::Duration>("timeout")
            .ok()
            .flatten()
            .copied()
    });
    let adhoc = crate::cli::AdHocArgs {
        stdio: many(sub, "stdio"),
        url: sub.try_get_one::<String>("url").ok().flatten().cloned(),
        headers: many(sub, "headers"),
        bearer_env: sub
            .try_get_one::<String>("bearer_env")
            .ok()
            .flatten()
            .cloned(),
    };
    // A flag after the command is seen at both levels: each file once.
    let mut configs = paths("configs");
    let mut seen = std::collections::HashSet::new();
    configs.retain(|path| seen.insert(path.clone()));
    SourceOptions {
        configs,
        project: paths("project").pop(),
        no_project: flag("no_project"),
        ask: false,
        no_host_configs: flag("no_host_configs"),
        adhoc,
        timeout: Some(timeout.unwrap_or(COMPLETION_WAIT)),
        // Listings see what a person's run sees; nothing is asked.
        asks: Some(crate::asks::AskOptions::default()),
        gateway_asks: None,
    }
}

/// Every server id the sources define, without connecting any.
fn server_ids(options: &SourceOptions) -> Vec<String> {
    let Ok(discovery) = crate::trust_cmd::discovery(options) else {
        return Vec::new();
    };
    let report = discovery.discover();
    let mut ids: Vec<String> = report
        .entries
        .iter()
        .filter_map(mcp_config::DiscoveryEntry::server_id)
        .map(str::to_owned)
        .collect();
    ids.dedup();
    ids
}

/// The tools, prompts, resource URIs (or prompts and resource templates)
/// `server` offers, from connecting it.
async fn offered(options: &SourceOptions, server: &str, kind: Kind) -> Vec<String> {
    let quiet = crate::output::Output {
        json: true,
        color: false,
        color_stderr: false,
        progress: false,
    };
    let select = crate::runtime::Select::One(server);
    let listed = crate::runtime::Runtime::run(options, select, &quiet, async |runtime| {
        let Some(catalog) = runtime.manager.catalog(server) else {
            return Ok(Vec::new());
        };
        let prompts = || {
            catalog
                .prompts()
                .unwrap_or_default()
                .iter()
                .map(|prompt| prompt.name.clone())
                .collect::<Vec<_>>()
        };
        Ok(match kind {
            Kind::Tool => catalog.tool_names().map(str::to_owned).collect(),
            Kind::Prompt => prompts(),
            Kind::Uri => catalog
                .resources()
                .unwrap_or_default()
                .iter()
                .map(|resource| resource.uri.clone())
                .collect(),
            Kind::PromptOrTemplate | Kind::Server => {
                let mut names = prompts();
                if let Ok(templates) = crate::resources_cmd::templates(runtime, server).await {
                    names.extend(templates.into_iter().map(|t| t.uri_template));
                }
                names
            }
        })
    })
    .await;
    listed.unwrap_or_default()
}

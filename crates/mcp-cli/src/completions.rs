//! `mcpctl completions SHELL` and `mcpctl man`: completion scripts and man pages generated from the parser itself.
//!
//! Both come from [`crate::cli::documented_command`], the same clap
//! definition `mcpctl` parses its own arguments with, so a script or a page
//! never offers a flag the parser refuses, nor misses one it accepts; a
//! global flag a command ignores is left out of that command's part.

use std::io::Write;
use std::path::Path;

use crate::exit::{CliError, Exit};

/// The name every script and page uses for the program.
const BIN_NAME: &str = "mcpctl";

/// Prints the completion script for `shell` on stdout.
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<Exit, CliError> {
    let mut script = Vec::new();
    clap_complete::generate(
        shell,
        &mut crate::cli::documented_command(),
        BIN_NAME,
        &mut script,
    );
    write_stdout(&script)
}

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

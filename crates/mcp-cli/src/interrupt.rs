//! Ctrl-C, one rule for every command: the first press stops the command and closes every server this run started, exit 130; a second press exits at once and kills them.
//!
//! [`run`] wraps each async command. A command that has something better
//! to do with the first press (cancel the call on the wire, print the
//! table so far, stop serving) takes a [`Claim`] while it can: the press
//! is then its own, and it ends as it sees fit. Otherwise the command is
//! dropped where it stands (connecting, listing, asking a question), one
//! line says so on stderr, and every manager this run built is closed
//! politely, which waits until each server process is gone.
//!
//! The second press, claimed or not, ends the wait: every manager is
//! dropped, the runtime is shut down (dropping a stdio connection SIGKILLs
//! its whole process group) and the killed servers are reaped before
//! `mcpctl` exits, so no process it started survives it.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use mcp_manager::McpManager;
use tokio::sync::watch;

use crate::exit::{CliError, Exit};

/// How long the second press waits for the runtime's tasks to be dropped
/// and the killed servers to be reaped. Both take milliseconds; the bound
/// is for a thread blocked on the terminal (a prompt being answered).
const KILL_WAIT: Duration = Duration::from_secs(1);

/// What the presses so far were.
#[derive(Clone, Copy, Debug, Default)]
struct Presses {
    /// How many.
    count: u32,
    /// Whether a command held a [`Claim`] when the first came.
    first_claimed: bool,
}

#[derive(Debug)]
struct Shared {
    presses: watch::Sender<Presses>,
    claims: AtomicUsize,
    managers: Mutex<Vec<McpManager>>,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| Shared {
        presses: watch::Sender::new(Presses::default()),
        claims: AtomicUsize::new(0),
        managers: Mutex::new(Vec::new()),
    })
}

/// Records a manager this run built, so that Ctrl-C closes its servers
/// whatever the command was doing.
pub(crate) fn register(manager: &McpManager) {
    mcp_proto::sync::lock(&shared().managers).push(manager.clone());
}

/// The first press belongs to whoever holds this (taken with [`claim`]).
#[derive(Debug)]
pub(crate) struct Claim {
    seen: u32,
}

/// Takes the next press for the caller, for as long as the claim lives.
pub(crate) fn claim() -> Claim {
    let shared = shared();
    shared.claims.fetch_add(1, Ordering::SeqCst);
    Claim {
        seen: shared.presses.borrow().count,
    }
}

impl Claim {
    /// Resolves at the first press after the claim was taken.
    pub(crate) async fn pressed(&self) {
        let seen = self.seen;
        let mut presses = shared().presses.subscribe();
        // The sender lives in a static: it is never dropped.
        let _ = presses.wait_for(|p| p.count > seen).await;
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        shared().claims.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How a command run under [`run`] ended.
enum Ending {
    /// The command returned (after a claimed press too).
    Returned(Result<Exit, CliError>),
    /// The first press stopped it and its servers were closed.
    Stopped,
    /// A second press: nothing was waited for.
    Killed,
}

/// Runs `command` on `runtime` under the Ctrl-C rule of this module.
pub(crate) fn run<F>(runtime: tokio::runtime::Runtime, command: F) -> Result<Exit, CliError>
where
    F: Future<Output = Result<Exit, CliError>>,
{
    let ending = runtime.block_on(async {
        let listener = tokio::spawn(listen());
        let ending = tokio::select! {
            result = command => Ending::Returned(result),
            () = first_unclaimed() => {
                eprintln!("mcpctl: interrupted; closing the servers (Ctrl-C again to kill them)");
                tokio::select! {
                    () = close_all() => Ending::Stopped,
                    () = second() => Ending::Killed,
                }
            }
            () = second() => Ending::Killed,
        };
        listener.abort();
        ending
    });
    match ending {
        Ending::Returned(result) => {
            // Every command closes its servers before returning. What may
            // be left is a prompt's read of the terminal after Ctrl-C;
            // waiting for it would keep the process alive until someone
            // pressed Enter.
            runtime.shutdown_background();
            result
        }
        Ending::Stopped => {
            runtime.shutdown_background();
            Ok(Exit::Interrupted)
        }
        Ending::Killed => {
            // The managers' last handles: dropping them drops every
            // connection, and shutting the runtime down drops the tasks
            // holding the rest; a dropped stdio connection SIGKILLs its
            // process group.
            drop(std::mem::take(&mut *mcp_proto::sync::lock(
                &shared().managers,
            )));
            runtime.shutdown_timeout(KILL_WAIT);
            reap_children(KILL_WAIT);
            eprintln!("mcpctl: interrupted again; the servers were killed");
            Ok(Exit::Interrupted)
        }
    }
}

/// Counts the presses for as long as the command runs. One stream for the
/// whole run, so that a press between two others is never missed.
async fn listen() {
    let Ok(mut presses) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
    else {
        return;
    };
    while presses.recv().await.is_some() {
        let shared = shared();
        let claimed = shared.claims.load(Ordering::SeqCst) > 0;
        shared.presses.send_modify(|p| {
            if p.count == 0 {
                p.first_claimed = claimed;
            }
            p.count += 1;
        });
    }
}

/// Resolves at a first press nobody claimed.
async fn first_unclaimed() {
    let mut presses = shared().presses.subscribe();
    let _ = presses.wait_for(|p| p.count >= 1 && !p.first_claimed).await;
}

/// Resolves at the second press.
async fn second() {
    let mut presses = shared().presses.subscribe();
    let _ = presses.wait_for(|p| p.count >= 2).await;
}

/// Closes every registered manager: once it returns, their server
/// processes are gone.
async fn close_all() {
    let managers = std::mem::take(&mut *mcp_proto::sync::lock(&shared().managers));
    for manager in &managers {
        manager.close().await;
    }
}

/// Reaps the children left after a kill (the stdio servers, whose reaper
/// tasks were dropped), waiting at most `limit`: an exiting process's
/// zombie would otherwise outlive `mcpctl` wherever nothing adopts and
/// reaps orphans.
fn reap_children(limit: Duration) {
    let (done, finished) = std::sync::mpsc::channel();
    let reaper = std::thread::spawn(move || {
        // Every child was sent SIGKILL: each wait returns promptly, and
        // ECHILD says none is left.
        while rustix::process::wait(rustix::process::WaitOptions::empty())
            .is_ok_and(|r| r.is_some())
        {}
        let _ = done.send(());
    });
    if finished.recv_timeout(limit).is_ok() {
        let _ = reaper.join();
    }
}

//! A pseudo-terminal for driving `mcpctl` as a person at a terminal would: expect text, type answers.
//!
//! The child gets the terminal's slave side as stdin and stderr (where the
//! approval prompt is asked and answered); stdout stays a pipe so a test
//! can check the result exactly. A reader thread collects everything the
//! child writes to the terminal; `expect` waits on a condition variable
//! with a deadline, never by sleeping.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};

/// How long `expect` waits for text.
pub(crate) const EXPECT_DEADLINE: Duration = Duration::from_secs(60);

/// A child process whose stdin and stderr are a terminal.
pub(crate) struct Session {
    /// The child.
    pub(crate) child: Child,
    master: File,
    screen: Arc<(Mutex<Screen>, Condvar)>,
    reader: Option<std::thread::JoinHandle<()>>,
    stdout_reader: Option<std::thread::JoinHandle<String>>,
}

#[derive(Default)]
struct Screen {
    text: String,
    /// Where the next `expect` starts looking.
    consumed: usize,
    closed: bool,
}

impl Session {
    /// Starts `command` with a terminal on stdin and stderr, stdout piped.
    pub(crate) fn spawn(command: Command) -> Session {
        Session::start(command, false)
    }

    /// Starts `command` with a terminal on stdin, stdout and stderr: what
    /// a person running it sees.
    pub(crate) fn spawn_all_on_terminal(command: Command) -> Session {
        Session::start(command, true)
    }

    fn start(mut command: Command, stdout_on_terminal: bool) -> Session {
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("a pseudo-terminal");
        grantpt(&master).expect("grantpt");
        unlockpt(&master).expect("unlockpt");
        let name = ptsname(&master, Vec::new()).expect("the terminal's name");
        let slave: OwnedFd = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name.to_str().expect("a UTF-8 terminal name"))
            .expect("open the terminal")
            .into();
        command
            .stdin(Stdio::from(slave.try_clone().expect("dup the terminal")))
            .stdout(if stdout_on_terminal {
                Stdio::from(slave.try_clone().expect("dup the terminal"))
            } else {
                Stdio::piped()
            })
            .stderr(Stdio::from(slave));
        let mut child = command.spawn().expect("mcpctl starts");
        // The parent's copies of the slave are gone with `command`'s
        // `Stdio`s, so reading the master ends when the child exits.
        drop(command);
        let stdout = child.stdout.take();
        let stdout_reader = std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut stdout) = stdout {
                let _ = stdout.read_to_string(&mut text);
            }
            text
        });
        let master = File::from(master);
        let mut reading = master.try_clone().expect("dup the master");
        let screen = Arc::new((Mutex::new(Screen::default()), Condvar::new()));
        let shared = Arc::clone(&screen);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                // EIO once every slave descriptor is closed: the child exited.
                let n = match reading.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let (lock, wake) = &*shared;
                let mut screen = lock.lock().unwrap();
                screen.text.push_str(&String::from_utf8_lossy(&buf[..n]));
                wake.notify_all();
            }
            let (lock, wake) = &*shared;
            lock.lock().unwrap().closed = true;
            wake.notify_all();
        });
        Session {
            child,
            master,
            screen,
            reader: Some(reader),
            stdout_reader: Some(stdout_reader),
        }
    }

    /// Waits until the terminal shows `needle` after what earlier
    /// `expect`s consumed, and consumes up to its end.
    pub(crate) fn expect(&self, needle: &str) {
        let deadline = Instant::now() + EXPECT_DEADLINE;
        let (lock, wake) = &*self.screen;
        let mut screen = lock.lock().unwrap();
        loop {
            if let Some(at) = screen.text[screen.consumed..].find(needle) {
                screen.consumed += at + needle.len();
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !screen.closed && !left.is_zero(),
                "the terminal never showed {needle:?}; it showed {:?}",
                &screen.text
            );
            screen = wake.wait_timeout(screen, left).unwrap().0;
        }
    }

    /// Everything the terminal has shown so far.
    pub(crate) fn shown(&self) -> String {
        self.screen.0.lock().unwrap().text.clone()
    }

    /// Types `text` (control characters included, a Tab say), without
    /// Enter.
    pub(crate) fn type_text(&mut self, text: &str) {
        self.master
            .write_all(text.as_bytes())
            .expect("type into the terminal");
        self.master.flush().expect("flush the terminal");
    }

    /// Types `text` and Enter.
    pub(crate) fn send_line(&mut self, text: &str) {
        self.master
            .write_all(format!("{text}\r").as_bytes())
            .expect("type into the terminal");
        self.master.flush().expect("flush the terminal");
    }

    /// Waits for the child to exit; returns its exit status, its stdout and
    /// everything the terminal showed.
    pub(crate) fn finish(mut self) -> (i32, String, String) {
        let watchdog = super::Watchdog::start(&self.child, "mcpctl on a terminal".to_owned());
        let status = self.child.wait().expect("wait for mcpctl");
        watchdog.stop();
        let stdout = self.stdout_reader.take().unwrap().join().unwrap();
        // The child is gone, so the terminal closes once its last output is
        // read; wait for that (bounded, in case a stray process holds it).
        let (lock, wake) = &*self.screen;
        let screen = lock.lock().unwrap();
        let (screen, _) = wake
            .wait_timeout_while(screen, Duration::from_secs(10), |s| !s.closed)
            .unwrap();
        let text = screen.text.clone();
        drop(screen);
        if let Some(reader) = self.reader.take().filter(|r| r.is_finished()) {
            let _ = reader.join();
        }
        (status.code().unwrap_or(-1), stdout, text)
    }
}

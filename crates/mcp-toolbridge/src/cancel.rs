//! A cancellation signal the host hands to a call.
//!
//! Dropping a call's future also stops it (the client then sends
//! `notifications/cancelled`), but leaves nothing to report; a
//! [`CancelToken`] lets the call end with
//! [`ToolOutcome::Cancelled`](crate::ToolOutcome::Cancelled), a distinct
//! outcome rather than an error string.

use std::fmt;
use std::sync::Arc;

use tokio::sync::watch;

/// A clonable, one-way cancellation flag. Every clone sees the same flag.
#[derive(Clone)]
pub struct CancelToken {
    flag: Arc<watch::Sender<bool>>,
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        CancelToken {
            flag: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Cancels; idempotent.
    pub fn cancel(&self) {
        self.flag.send_replace(true);
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        *self.flag.borrow()
    }

    /// Resolves once the token is cancelled (at once if it already is).
    pub async fn cancelled(&self) {
        let mut rx = self.flag.subscribe();
        // `wait_for` fails only if the sender is gone; this token holds it.
        let _ = rx.wait_for(|cancelled| *cancelled).await;
    }
}

impl Default for CancelToken {
    fn default() -> Self {
        CancelToken::new()
    }
}

impl fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn clones_share_the_flag() {
        let token = CancelToken::new();
        let clone = token.clone();
        assert!(!clone.is_cancelled());
        let waiter = tokio::spawn(async move { clone.cancelled().await });
        token.cancel();
        waiter.await.unwrap();
        assert!(token.is_cancelled());
        // Already cancelled: resolves at once.
        token.cancelled().await;
    }
}

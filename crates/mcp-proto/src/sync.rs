//! The workspace's one rule for a poisoned lock: keep going with the data as the panicking holder left it.
//!
//! Every critical section in these crates leaves its state consistent
//! before anything that could panic, so a panic elsewhere (a host's
//! callback, a bug in an unrelated task) is no reason to stop serving: the
//! poison is cleared and the guard returned.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, ignoring poison.
///
/// ```
/// use std::sync::Mutex;
/// use mcp_proto::sync::lock;
///
/// let counter = Mutex::new(0);
/// *lock(&counter) += 1;
/// assert_eq!(*lock(&counter), 1);
/// ```
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

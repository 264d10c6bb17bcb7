//! Unit tests of the manager against scripted in-memory servers on a paused clock.

mod catalogs;
// Only a build with a transport compiled out has something to test here.
#[cfg(any(not(feature = "http"), not(feature = "stdio")))]
mod features;
mod handles;
mod lifecycle;
mod on_use;
mod refresh;
mod startup;
mod store;
mod support;

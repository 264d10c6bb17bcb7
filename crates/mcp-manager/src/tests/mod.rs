//! Unit tests of the manager against scripted in-memory servers on a paused clock.

mod catalogs;
mod handles;
mod lifecycle;
mod on_use;
mod refresh;
mod startup;
mod store;
mod support;

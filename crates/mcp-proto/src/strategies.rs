//! Proptest strategies for every message type, for this crate and downstream crates.

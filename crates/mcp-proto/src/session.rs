//! The sans-IO client session.

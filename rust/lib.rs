//! ctxfast core: exact token counting, the per-unit count cache, the eviction engine, the
//! stateful window and the provider rules the adapters share (`payload`).
//!
//! Nothing outside `bindings` knows about Python; the core is tested with `cargo test` alone.

// A panic crossing into Python is a `BaseException` a server's `except Exception` does not catch:
// outside tests, errors are values.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod cache;
pub mod fmt;
pub mod hash;
pub mod limits;
pub mod suggest;
pub mod template;
pub mod engine;
pub mod payload;
pub mod error;
pub mod tokenize;
pub mod window;

#[cfg(feature = "python")]
mod bindings;

pub use error::{CtxError, CtxResult};

/// Name of the cargo profile that compiled this library ("release", "debug", "profiling").
pub const BUILD_PROFILE: &str = env!("CTXFAST_BUILD_PROFILE");

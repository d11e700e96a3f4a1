//! Shared pieces of ctxfast's fuzz targets: a word-counting `TokenSource`, `arbitrary` inputs
//! for segments, budgets and policies, the invariants of one `engine::fit`, and a driver that
//! runs window operations with the window's invariants checked after each.
//!
//! Every check is an `assert!`: a violated invariant is a crash libFuzzer records.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arbitrary::Arbitrary;
use ctxfast::engine::cache::{fingerprint, fit_planned, settle, CacheProfile, Cut};
use ctxfast::engine::policy_format;
use ctxfast::engine::presets;
use ctxfast::engine::{
    fit, Action, Budget, FitOptions, FitOutcome, Filter, Floor, Kept, Layer, LayerSet, Order, Policy, Rung, SegmentData, Taken,
    Target, ToolCall, Until,
};
use ctxfast::error::CtxError;
use ctxfast::limits::{MAX_COUNT, MAX_TOTAL};
use ctxfast::window::ledger::Status;
use ctxfast::window::{Admit, Rewrite, Window};

mod inputs;
mod ladder_checks;
mod mutations;
mod window_driver;
mod window_state;

pub use inputs::*;
pub use ladder_checks::*;
pub use mutations::*;
pub use window_driver::*;
pub use window_state::*;

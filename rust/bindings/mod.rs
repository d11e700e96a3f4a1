//! The Python glue: the only module that uses pyo3. Each binding converts its arguments once,
//! hands the whole batch to the core (releasing the GIL for real work, by the rule in `gil`) and
//! lets `errors` map failures.
//!
//! Modules, in dependency order (each uses only those above it): `errors`, `args`, `gil`,
//! `callable` (a user's counter), `cache_info`, `tokenizer`, `counting` (which tokenizer, and the
//! dispatch that runs core work with it), `layer`, `segment`, `budget`, `policy`, `outcome` and
//! `outcome_build` (the `Fit` objects), then the entry points `fit`, `records` (the adapters'
//! columnar fit), `template_fit` (open models, by their chat template), `rank` and `window`.

mod args;
mod budget;
mod cache_plan;
mod cache_info;
mod callable;
mod chat_fast;
mod counting;
mod errors;
mod framing;
mod fingerprint;
mod fit;
mod fit_columns;
mod gil;
mod layer;
mod models;
mod outcome;
mod outcome_build;
mod records;
mod policy;
mod rank;
mod segment;
mod pyvalue;
mod template;
mod template_fit;
mod tokenizer;
mod tokenizer_backend;
mod tokenizer_batch;
mod tool_meta;
mod window;

use pyo3::prelude::*;

#[pymodule(gil_used = false)]
mod _core {
    #[pymodule_export]
    use super::tokenizer::{approximate_tokens, CacheInfo, Tokenizer};
    #[pymodule_export]
    use super::models::{encoding_for_model, encoding_name_for_model};
    #[pymodule_export]
    use super::template::ChatTemplate;
    #[pymodule_export]
    use super::layer::PromptLayer;
    #[pymodule_export]
    use super::segment::Segment;
    #[pymodule_export]
    use super::budget::Budget;
    #[pymodule_export]
    use super::policy::{Policy, _resolve_policy};
    #[pymodule_export]
    use super::counting::_resolve_tokenizer;
    #[pymodule_export]
    use super::outcome::{Eviction, Fit, FitLedger, Trace, Truncation};
    #[pymodule_export]
    use super::cache_plan::{CacheProfile, CacheReport};
    #[pymodule_export]
    use super::fit::fit;
    #[pymodule_export]
    use super::fit_columns::fit_columns;
    #[pymodule_export]
    use super::records::_fit_records;
    #[pymodule_export]
    use super::chat_fast::_fit_chat_fast;
    #[pymodule_export]
    use super::template_fit::{_fit_template, _reusable_prefix};
    #[pymodule_export]
    use super::fingerprint::_fingerprint;
    #[pymodule_export]
    use super::framing::_framing;
    #[pymodule_export]
    use super::rank::evict_indices;
    #[pymodule_export]
    use super::window::{ContextWindow, WindowLedger, Why};

    #[pymodule_init]
    fn init(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
        use pyo3::types::PyModuleMethods;
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        m.add("build_profile", crate::BUILD_PROFILE)?;
        m.add("default_cache_capacity", crate::cache::DEFAULT_CAPACITY)?;
        Ok(())
    }
}

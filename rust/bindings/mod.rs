//! The Python glue: the only module that uses pyo3. Each binding converts its arguments once,
//! hands the whole batch to the core (releasing the GIL for real work) and maps errors in
//! `errors`.

mod args;
mod errors;
mod fit;
mod policy;
mod segment;
mod tokenizer;
mod window;

use pyo3::prelude::*;

#[pymodule(gil_used = false)]
mod _core {
    #[pymodule_export]
    use super::tokenizer::{approximate_tokens, CacheInfo, Tokenizer};
    #[pymodule_export]
    use super::segment::{Budget, PromptLayer, Segment};
    #[pymodule_export]
    use super::policy::Policy;
    #[pymodule_export]
    use super::fit::{evict_indices, fit, Eviction, Fit, FitLedger, Trace, Truncation};
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

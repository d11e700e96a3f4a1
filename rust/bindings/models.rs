//! tiktoken's model lookups, `ctxfast.encoding_for_model` and `encoding_name_for_model`, over
//! the core's table (`tokenize::models`).

use pyo3::prelude::*;

use super::args;
use super::tokenizer::Tokenizer;
use crate::tokenize::{self, TokenCounter};

/// tiktoken's `encoding_name_for_model`: `"o200k_base"` or `"cl100k_base"`.
#[pyfunction]
pub fn encoding_name_for_model(model: &Bound<'_, PyAny>) -> PyResult<&'static str> {
    Ok(tokenize::require_encoding_for_model(args::text(model, "model")?)?.name())
}

/// tiktoken's `encoding_for_model`: the model's encoding, as a `Tokenizer`.
#[pyfunction]
#[pyo3(signature = (model, *, cache_capacity=None))]
pub fn encoding_for_model(model: &Bound<'_, PyAny>, cache_capacity: Option<&Bound<'_, PyAny>>) -> PyResult<Tokenizer> {
    let model = args::text(model, "model")?;
    let cap = args::opt_count(cache_capacity, "cache_capacity")?;
    Ok(Tokenizer::from_counter(TokenCounter::from_model(model, cap)?))
}

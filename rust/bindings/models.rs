//! tiktoken's model lookups, `ctxfast.encoding_for_model` and `encoding_name_for_model`, over
//! the core's table (`tokenize::models`).

use pyo3::prelude::*;

use super::args;
use super::tokenizer::Tokenizer;
use crate::tokenize::{self, TokenCounter};

/// The name of the embedded encoding an OpenAI model counts with.
#[pyfunction]
pub fn encoding_name_for_model(model: &Bound<'_, PyAny>) -> PyResult<&'static str> {
    Ok(tokenize::require_encoding_for_model(args::text(model, "model")?)?.name())
}

/// The model's encoding as a `Tokenizer`, as `Tokenizer.for_model` gives it.
#[pyfunction]
#[pyo3(signature = (model, *, cache_capacity=None))]
pub fn encoding_for_model(model: &Bound<'_, PyAny>, cache_capacity: Option<&Bound<'_, PyAny>>) -> PyResult<Tokenizer> {
    let model = args::text(model, "model")?;
    let cap = args::opt_count(cache_capacity, "cache_capacity")?;
    Ok(Tokenizer::from_counter(TokenCounter::from_model(model, cap)?))
}

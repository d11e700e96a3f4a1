//! The token budget: the whole window, what is reserved for the answer, and per-layer caps.

use crate::error::{CtxError, CtxResult};
use crate::limits::check_count;

#[derive(Clone, Debug, PartialEq)]
pub struct Budget {
    pub window: usize,
    pub reserve: usize,
    /// A layer's allocation, by `Layer::index`. A fit reports a layer that starts over its cap;
    /// only a policy rung with `until = "cap"` (`Until::Cap`) enforces it.
    pub caps: [Option<usize>; 8],
}

impl Budget {
    pub fn new(window: usize, reserve: usize, caps: [Option<usize>; 8]) -> CtxResult<Self> {
        if window == 0 {
            return Err(CtxError::invalid("window must be > 0 tokens"));
        }
        check_count(window, "window")?;
        for cap in caps.iter().flatten() {
            check_count(*cap, "a cap")?;
        }
        if reserve >= window {
            return Err(CtxError::invalid(format!(
                "reserve ({reserve}) must be smaller than window ({window}): nothing would be left for input"
            )));
        }
        Ok(Self { window, reserve, caps })
    }

    /// The most input tokens a request may carry: output tokens are reserved first.
    pub fn ceiling(&self) -> usize {
        self.window - self.reserve
    }
}

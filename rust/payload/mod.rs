//! Provider payloads as the ladder sees them: what frames a message, and how a chat-style list
//! falls into eviction units. The Python adapters read each provider's shapes; the parts that
//! every request repeats (framing constants, the unit rule, the call/result pairing check) live
//! here, so the adapters' fast path and their full reader agree by construction.

pub mod chat;
pub mod framing;
pub mod prefix;
pub mod rendered;
pub mod rendered_cache;
pub mod rendered_plan;
pub mod rendered_price;

//! Framing constants: the tokens a provider adds around what the caller wrote. One table, read by
//! the Python adapters (`_core._framing`) and by the fast path, so the two never disagree.

/// What a chat-style API adds per message, per name, per tool call, and to prime the reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Framing {
    /// Every message: `<|start|>{role}<|message|>…<|end|>` less the role's own tokens.
    pub per_message: usize,
    /// A message with a `name`.
    pub per_name: usize,
    /// Each tool call in an assistant message (the community-measured figure).
    pub per_tool_call: usize,
    /// Every reply is primed with `<|start|>assistant<|message|>`.
    pub reply_priming: usize,
}

/// OpenAI Chat Completions, as OpenAI's cookbook counts it (and as the API reports it).
pub const OPENAI_CHAT: Framing = Framing { per_message: 3, per_name: 1, per_tool_call: 3, reply_priming: 3 };

/// The tables by name, for the bindings.
pub const TABLES: [(&str, Framing); 1] = [("openai-chat", OPENAI_CHAT)];

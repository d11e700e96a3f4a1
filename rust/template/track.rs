//! A render that also says where each message begins in the output, so the rendered prompt's
//! tokens can be shared out among the messages that produced them.
//!
//! Each message is handed to the template as a map object that notes the output's length
//! whenever the template reads one of its fields. The output is identical to a plain render (the
//! objects are maps with the same keys and values; the parity test renders both ways). Where a
//! message begins is where its `content` was last read (else any field, last): a template reads
//! a message's content as it prints it, and the last read wins over earlier scans (Qwen3 reads
//! every message backwards before its main loop; Mistral compares the last user message with
//! each one). Lookbacks and lookaheads (`messages[loop.index0 - 1].role`) read other fields, so
//! they do not move a message's start. The starts are made non-decreasing; a message the
//! template never reads starts where the one before it does and costs nothing.
//!
//! Nothing here needs the starts to be right for the count to be exact: the count is always of
//! the whole render. The starts only decide which message is charged for which tokens, which
//! guides what the ladder removes; the caller re-renders and re-counts what it keeps.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use minijinja::value::{Enumerator, Object, ObjectRepr, Value};

const UNSEEN: usize = usize::MAX;

/// Output length so far, and per message the output length at its last reads.
#[derive(Debug)]
struct Marks {
    written: AtomicUsize,
    content: Vec<AtomicUsize>,
    any: Vec<AtomicUsize>,
}

impl Marks {
    fn new(n: usize) -> Self {
        let unseen = || (0..n).map(|_| AtomicUsize::new(UNSEEN)).collect();
        Self { written: AtomicUsize::new(0), content: unseen(), any: unseen() }
    }

    fn note(&self, index: usize, is_content: bool) {
        let at = self.written.load(Ordering::Relaxed);
        if let Some(a) = self.any.get(index) {
            a.store(at, Ordering::Relaxed);
        }
        if is_content {
            if let Some(c) = self.content.get(index) {
                c.store(at, Ordering::Relaxed);
            }
        }
    }

    /// Where each message begins in the output: see the module notes.
    fn starts(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.any.len());
        let mut floor = 0;
        for (c, a) in self.content.iter().zip(&self.any) {
            let seen = match c.load(Ordering::Relaxed) {
                UNSEEN => a.load(Ordering::Relaxed),
                at => at,
            };
            if seen != UNSEEN {
                floor = floor.max(seen);
            }
            out.push(floor);
        }
        out
    }
}

/// One message as the template sees it: a map that notes each read.
#[derive(Debug)]
struct Tracked {
    index: usize,
    inner: Value,
    marks: Arc<Marks>,
}

impl Object for Tracked {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.marks.note(self.index, key.as_str() == Some("content"));
        let v = self.inner.get_item(key).ok()?;
        (!v.is_undefined()).then_some(v)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        match self.inner.try_iter() {
            Ok(keys) => Enumerator::Values(keys.collect()),
            Err(_) => Enumerator::Empty,
        }
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        self.inner.len()
    }
}

/// The output, keeping `Marks::written` current as it grows.
struct Sink<'a> {
    buf: Vec<u8>,
    marks: &'a Marks,
}

impl io::Write for Sink<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        self.marks.written.store(self.buf.len(), Ordering::Relaxed);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The messages wrapped for a tracked render, and what reads them.
pub struct TrackedMessages {
    pub values: Value,
    marks: Arc<Marks>,
}

impl TrackedMessages {
    /// Wraps `messages` (each a map value).
    pub fn new(messages: &[Value]) -> Self {
        let marks = Arc::new(Marks::new(messages.len()));
        let values = messages
            .iter()
            .enumerate()
            .map(|(index, m)| Value::from_object(Tracked { index, inner: m.clone(), marks: marks.clone() }))
            .collect::<Vec<_>>();
        Self { values: Value::from(values), marks }
    }
}

/// A render of `template` into a string, with the messages' starts.
pub fn render_tracked(
    template: &minijinja::Template<'_, '_>,
    context: Value,
    tracked: &TrackedMessages,
) -> Result<(String, Vec<usize>), minijinja::Error> {
    let mut sink = Sink { buf: Vec::new(), marks: &tracked.marks };
    template.render_captured_to(context, &mut sink)?;
    let text = String::from_utf8(sink.buf)
        .map_err(|_| minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "the render is not UTF-8"))?;
    Ok((text, tracked.marks.starts()))
}

//! Message tracing as Chrome/Perfetto trace JSON, plus a running SHA-256 of
//! the message log used to prove that two runs were identical.
//!
//! A full trace also keeps the components' [`Note`]s: the state transitions
//! of their protocol machines (with the transactions they open and close)
//! and their operations, each on one of the component's units (a core, a
//! DCU). Notes are not part of the hash: a run with a full trace hashes as a
//! run with the hash only. [`Tracer::events_json`] writes messages and notes
//! as data (integer picoseconds) for exporters such as ccsim's Perfetto
//! writer.
//!
//! Each message becomes a complete (`"ph": "X"`) slice on its sender's track,
//! from the tick it was sent to the tick it arrived, named by the message's
//! label. Open the JSON in the Perfetto UI or `chrome://tracing`. Timestamps
//! are microseconds printed from integer picoseconds, so the text is
//! identical on every machine.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use crate::time::Tick;

/// How much of the message traffic a run records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceMode {
    /// Nothing (the fast default).
    #[default]
    Off,
    /// Only the SHA-256 of the message log.
    Hash,
    /// The hash and the full Chrome trace.
    Full,
}

/// One traced message.
pub(crate) struct Record {
    pub sent: Tick,
    pub arrives: Tick,
    pub src: u32,
    pub dst: u32,
    pub link: u32,
    pub vc: u8,
    pub bytes: u32,
    pub label: String,
}

/// A component's annotation of a full trace ([`crate::sim::Ctx::trace_note`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    /// What it is: a state transition or an operation.
    pub kind: NoteKind,
    /// The component's unit it happened on (a core, a DCU; 0 if it has one).
    pub unit: u32,
    /// When it started.
    pub start: Tick,
    /// When it ended (`start` for an instant).
    pub end: Tick,
    /// The line (protocol address unit) it is about, if any.
    pub line: Option<u64>,
    /// A short name: the event of a transition, the kind of an operation.
    pub name: String,
    /// Named values, in order (`track`: the kind of unit, such as `core`
    /// or `dcu`; `from`, `to`, `sent`, ...).
    pub args: Vec<(&'static str, String)>,
}

/// The kind of a [`Note`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    /// A protocol machine's transition of `line`; `opens` when it leaves a
    /// stable state (a transaction starts), `closes` when it returns to one
    /// (the transaction ends).
    Transition {
        /// Starts a transaction.
        opens: bool,
        /// Ends a transaction.
        closes: bool,
    },
    /// An operation from issue (`start`) to completion (`end`).
    Op,
}

pub(crate) struct Tracer {
    mode: TraceMode,
    hasher: Sha256,
    records: Vec<Record>,
    notes: Vec<(u32, Note)>,
    line: String,
}

fn micros(t: Tick) -> String {
    format!("{}.{:06}", t / 1_000_000, t % 1_000_000)
}

fn json_escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
}

impl Tracer {
    pub fn new(mode: TraceMode) -> Self {
        Tracer {
            mode,
            hasher: Sha256::new(),
            records: Vec::new(),
            notes: Vec::new(),
            line: String::new(),
        }
    }
    #[inline]
    pub fn enabled(&self) -> bool {
        self.mode != TraceMode::Off
    }
    /// Whether the full trace (with notes) is kept.
    #[inline]
    pub fn full(&self) -> bool {
        self.mode == TraceMode::Full
    }
    /// Keeps `note` of `component` (full traces only).
    pub fn note(&mut self, component: u32, note: Note) {
        if self.full() {
            self.notes.push((component, note));
        }
    }
    /// Messages and notes as data, given the component names and, per link,
    /// its name, its A and B components and its virtual channels' names:
    /// `{"components": [..], "links": [{"name", "a", "b", "vcs"}],
    /// "messages": [[sent, arrives, src, dst, link, vc, bytes, label]],
    /// "notes": [{"component", "unit", "kind", "opens", "closes", "start",
    /// "end", "line", "name", "args": [[k, v]]}]}`, times in picoseconds.
    pub fn events_json(
        &self,
        components: &[String],
        links: &[(String, u32, u32, Vec<String>)],
    ) -> Option<String> {
        use serde_json::{json, Value};
        if !self.full() {
            return None;
        }
        let links: Vec<Value> = links
            .iter()
            .map(|(name, a, b, vcs)| json!({"name": name, "a": a, "b": b, "vcs": vcs}))
            .collect();
        let messages: Vec<Value> = self
            .records
            .iter()
            .map(|r| json!([r.sent, r.arrives, r.src, r.dst, r.link, r.vc, r.bytes, r.label]))
            .collect();
        let notes: Vec<Value> = self
            .notes
            .iter()
            .map(|(c, n)| {
                let (kind, opens, closes) = match n.kind {
                    NoteKind::Transition { opens, closes } => ("transition", opens, closes),
                    NoteKind::Op => ("op", false, false),
                };
                let args: Vec<Value> = n.args.iter().map(|(k, v)| json!([k, v])).collect();
                json!({"component": c, "unit": n.unit, "kind": kind, "opens": opens, "closes": closes,
                       "start": n.start, "end": n.end, "line": n.line, "name": n.name, "args": args})
            })
            .collect();
        let doc =
            json!({"components": components, "links": links, "messages": messages, "notes": notes});
        Some(doc.to_string())
    }
    pub fn record(&mut self, r: Record) {
        self.line.clear();
        let _ = writeln!(
            self.line,
            "{} {} {} {} {} {} {} {}",
            r.sent, r.arrives, r.src, r.dst, r.link, r.vc, r.bytes, r.label
        );
        self.hasher.update(self.line.as_bytes());
        if self.mode == TraceMode::Full {
            self.records.push(r);
        }
    }
    pub fn hash_hex(&self) -> Option<String> {
        if !self.enabled() {
            return None;
        }
        let digest = self.hasher.clone().finalize();
        Some(digest.iter().fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        }))
    }
    /// The Chrome trace JSON, given component and link names.
    pub fn chrome_json(
        &self,
        components: &[String],
        links: &[String],
        vcs: &[Vec<String>],
    ) -> Option<String> {
        if self.mode != TraceMode::Full {
            return None;
        }
        let mut out = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
        let mut first = true;
        for (tid, name) in components.iter().enumerate() {
            if !first {
                out.push_str(",\n");
            }
            first = false;
            out.push_str("{\"ph\":\"M\",\"pid\":1,\"tid\":");
            let _ = write!(out, "{tid}");
            out.push_str(",\"name\":\"thread_name\",\"args\":{\"name\":\"");
            json_escape(name, &mut out);
            out.push_str("\"}}");
        }
        for r in &self.records {
            if !first {
                out.push_str(",\n");
            }
            first = false;
            out.push_str("{\"ph\":\"X\",\"pid\":1,\"tid\":");
            let _ = write!(out, "{}", r.src);
            out.push_str(",\"name\":\"");
            json_escape(&r.label, &mut out);
            out.push_str("\",\"cat\":\"");
            json_escape(&links[r.link as usize], &mut out);
            let _ = write!(
                out,
                "\",\"ts\":{},\"dur\":{},\"args\":{{\"to\":\"",
                micros(r.sent),
                micros(r.arrives - r.sent)
            );
            json_escape(&components[r.dst as usize], &mut out);
            out.push_str("\",\"vc\":\"");
            json_escape(&vcs[r.link as usize][r.vc as usize], &mut out);
            let _ = write!(out, "\",\"bytes\":{}}}}}", r.bytes);
        }
        out.push_str("\n]}\n");
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_prints_integer_picoseconds_exactly() {
        assert_eq!(micros(1_234_567), "1.234567");
        assert_eq!(micros(5), "0.000005");
    }

    #[test]
    fn escapes_json() {
        let mut s = String::new();
        json_escape("a\"b\\c\n\u{1}", &mut s);
        assert_eq!(s, "a\\\"b\\\\c\\n\\u0001");
    }
}

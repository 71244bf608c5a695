//! Message tracing as Chrome/Perfetto trace JSON, plus a running SHA-256 of
//! the message log used to prove that two runs were identical.
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

pub(crate) struct Tracer {
    mode: TraceMode,
    hasher: Sha256,
    records: Vec<Record>,
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
            line: String::new(),
        }
    }
    #[inline]
    pub fn enabled(&self) -> bool {
        self.mode != TraceMode::Off
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

//! Message sequence charts of counterexample traces.
//!
//! A chart has one lifeline per agent ([`Model::agents`](crate::Model::agents))
//! and one row per trace step ([`Model::chart_step`](crate::Model::chart_step)):
//! an arrow from the acting agent to the receiving one, or a local step
//! (`from == to`). Agents that a step names but `agents()` does not list are
//! added to the right, in order of first appearance.
//!
//! Two renderings:
//! - [`render_text`]: ASCII lifelines for terminals and logs. Each row is the
//!   step number, the lifelines (`|`), the arrow (`|------>|` or `|<------|`,
//!   passing over lifelines in between) or a local step (`*`), and then the
//!   label to the right of the last lifeline, so labels never break the
//!   columns.
//! - [`render_mermaid`]: a Mermaid `sequenceDiagram`, with arrows as
//!   messages, local steps as notes, and labels prefixed by the step number.
//!
//! ```
//! use ccsim_check::{msc, ChartStep};
//! let agents = vec!["cpu".to_string(), "dir".to_string()];
//! let steps = vec![
//!     ChartStep { from: "cpu".into(), to: "dir".into(), label: "GetS".into() },
//!     ChartStep { from: "dir".into(), to: "dir".into(), label: "lookup".into() },
//!     ChartStep { from: "dir".into(), to: "cpu".into(), label: "Data".into() },
//! ];
//! let text = msc::render_text(&agents, &steps, None);
//! assert_eq!(text, "\
//! step    cpu     dir
//!          |       |
//!    1     |------>|     GetS
//!    2     |       *     lookup
//!    3     |<------|     Data
//!          |       |
//! ");
//! ```

use crate::model::ChartStep;

/// Width of the step-number column.
const STEP_COL: usize = 4;
/// Minimum distance between two lifelines.
const MIN_GAP: usize = 8;

fn all_agents(agents: &[String], steps: &[ChartStep]) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for a in agents {
        if !all.contains(a) {
            all.push(a.clone());
        }
    }
    for s in steps {
        for a in [&s.from, &s.to] {
            if !all.contains(a) {
                all.push(a.clone());
            }
        }
    }
    all
}

/// Renders `steps` as an ASCII message sequence chart with one lifeline per
/// agent. `footer`, if given, is written under the chart prefixed by `!! `
/// (used for the violated property).
pub fn render_text(agents: &[String], steps: &[ChartStep], footer: Option<&str>) -> String {
    let agents = all_agents(agents, steps);
    let name_w = agents.iter().map(|a| a.chars().count()).max().unwrap_or(0);
    let gap = MIN_GAP.max(name_w + 2);
    // Column of each lifeline. The first is far enough right that the first
    // name, centred on it, does not run into the step column.
    let first = STEP_COL + 4 + name_w / 2;
    let cols: Vec<usize> = (0..agents.len()).map(|i| first + i * gap).collect();
    let width = cols.last().map_or(STEP_COL, |&c| c + 1);
    let idx = |name: &str| agents.iter().position(|a| a == name).unwrap_or(0);

    let mut out = String::new();
    // Header: names centred on their lifelines.
    let mut header: Vec<char> = format!("{:<w$}", "step", w = width).chars().collect();
    for (a, &c) in agents.iter().zip(&cols) {
        let n = a.chars().count();
        let start = c + 1 - n.div_ceil(2);
        for (k, ch) in a.chars().enumerate() {
            if start + k >= header.len() {
                header.resize(start + k + 1, ' ');
            }
            header[start + k] = ch;
        }
    }
    push_line(&mut out, &header.iter().collect::<String>());

    let lifelines = || {
        let mut row = vec![' '; width];
        for &c in &cols {
            row[c] = '|';
        }
        row
    };
    push_line(&mut out, &lifelines().iter().collect::<String>());
    for (i, s) in steps.iter().enumerate() {
        let mut row = lifelines();
        let (f, t) = (idx(&s.from), idx(&s.to));
        if f == t {
            row[cols[f]] = '*';
        } else {
            let (lo, hi) = (cols[f.min(t)], cols[f.max(t)]);
            for cell in row.iter_mut().take(hi).skip(lo + 1) {
                *cell = '-';
            }
            if t > f {
                row[hi - 1] = '>';
            } else {
                row[lo + 1] = '<';
            }
        }
        let num = format!("{:>w$}", i + 1, w = STEP_COL);
        for (k, ch) in num.chars().enumerate() {
            row[k] = ch;
        }
        let mut line: String = row.iter().collect();
        line.push_str("     ");
        line.push_str(&one_line(&s.label));
        push_line(&mut out, &line);
    }
    push_line(&mut out, &lifelines().iter().collect::<String>());
    if let Some(f) = footer {
        push_line(&mut out, &format!("!! {}", one_line(f)));
    }
    out
}

fn push_line(out: &mut String, line: &str) {
    out.push_str(line.trim_end());
    out.push('\n');
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// Escapes text for a Mermaid message or note: no line breaks, and `#` and
/// `;` (which Mermaid treats specially) written as entity codes.
fn mermaid_text(s: &str) -> String {
    one_line(s).replace('#', "#35;").replace(';', "#59;")
}

/// Renders `steps` as a Mermaid `sequenceDiagram`. Participants are named
/// `a0`, `a1`, … with the agent names as aliases; arrows are `->>` messages,
/// local steps are notes over the agent, and each label starts with its step
/// number. `footer`, if given, becomes a final note over all participants.
pub fn render_mermaid(agents: &[String], steps: &[ChartStep], footer: Option<&str>) -> String {
    let agents = all_agents(agents, steps);
    let idx = |name: &str| agents.iter().position(|a| a == name).unwrap_or(0);
    let mut out = String::from("sequenceDiagram\n");
    for (i, a) in agents.iter().enumerate() {
        out.push_str(&format!("    participant a{i} as {}\n", mermaid_text(a)));
    }
    for (i, s) in steps.iter().enumerate() {
        let (f, t) = (idx(&s.from), idx(&s.to));
        let label = mermaid_text(&s.label);
        if f == t {
            out.push_str(&format!("    Note over a{f}: {}. {label}\n", i + 1));
        } else {
            out.push_str(&format!("    a{f}->>a{t}: {}. {label}\n", i + 1));
        }
    }
    if let Some(f) = footer {
        let last = agents.len().saturating_sub(1);
        let span = if last == 0 {
            "a0".to_string()
        } else {
            format!("a0,a{last}")
        };
        out.push_str(&format!("    Note over {span}: {}\n", mermaid_text(f)));
    }
    out
}

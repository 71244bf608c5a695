//! What the fuzzing tests share: the case budget and line edits of a
//! shipped text.

use proptest::prelude::*;

/// Cases per property: `PROPTEST_CASES`, else a budget the default suite
/// affords.
pub fn config(default_cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cases);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A line edit: (which line, what to do, a token).
pub type Edit = (usize, u8, String);

/// `text` with `edits` applied: delete a line, duplicate it, replace the
/// value after its `=`, or insert the token as a line.
pub fn mutate(text: &str, edits: &[Edit]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for (at, op, tok) in edits {
        if lines.is_empty() {
            lines.push(tok.clone());
            continue;
        }
        let i = at % lines.len();
        match op % 4 {
            0 => {
                lines.remove(i);
            }
            1 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            2 => {
                if let Some((key, _)) = lines[i].split_once('=') {
                    lines[i] = format!("{key}= {tok}");
                }
            }
            _ => lines.insert(i, tok.clone()),
        }
    }
    lines.join("\n")
}

/// One to four edits, each with a token from `token`.
pub fn edits(token: impl Strategy<Value = String>) -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec((any::<usize>(), any::<u8>(), token), 1..5)
}

//! Golden tests for malformed specs. Each file in `tests/golden/` states its
//! expected outcome in its first line: `# expect: ok` (loads and verifies)
//! or `# expect: <exact error message>` (the CLI prints it and exits 2).
//! Regenerate the expectations after an intended wording change with
//! `CCSIM_BLESS=1 cargo test -p ccsim-protocol --test golden_errors`.

use ccsim_protocol::{check, load_spec, CheckOptions};
use std::path::Path;

#[test]
fn golden_spec_errors() {
    let dir = Path::new("tests/golden");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 8);
    let bless = std::env::var_os("CCSIM_BLESS").is_some();
    let mut failures = Vec::new();
    for f in files {
        let path = f.to_str().unwrap().to_string();
        let text = std::fs::read_to_string(&f).unwrap();
        let (first, rest) = text.split_once('\n').unwrap();
        let expect = first.strip_prefix("# expect: ").expect("header");
        let got = match load_spec(&path) {
            Ok(spec) => {
                let r = check(&spec, &CheckOptions::default()).unwrap();
                if r.verified {
                    "ok".to_string()
                } else {
                    format!("verification failed: {}", r.to_text())
                }
            }
            Err(e) => e.to_string(),
        };
        if bless {
            std::fs::write(&f, format!("# expect: {got}\n{rest}")).unwrap();
        } else if got != expect {
            failures.push(format!("{path}:\n  expected: {expect}\n  got:      {got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The three cases the issue names are among the golden files.
#[test]
fn named_cases_exist() {
    for n in ["unknown-state", "wrong-channel", "missing-reply"] {
        assert!(Path::new(&format!("tests/golden/{n}.toml")).exists());
    }
}

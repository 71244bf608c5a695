//! Exporters: JSON round trip, dot, SystemVerilog (verilator lint) and
//! Murphi (rumur's reachable-state count equals ccsim's).
//!
//! The cross-checks need `rumur`, `cc`, `verilator` and graphviz's `dot`;
//! they fail (they do not skip) when a tool is missing: `.ci/run` installs
//! them with `apt-get install rumur verilator graphviz`.

use ccsim_protocol::export::{export_dot, export_json, export_murphi, export_sv, import_json};
use ccsim_protocol::{check, generate, load_spec, CheckOptions, SystemConfig};
use std::process::Command;

mod common;

/// Fails the test unless `name` runs (`arg` is its version flag).
fn require(name: &str, arg: &str) {
    assert!(
        Command::new(name).arg(arg).output().is_ok(),
        "{name} is not installed: the exporters' cross-checks need it \
         (apt-get install rumur verilator graphviz; .ci/run does this)"
    );
}

fn tmpdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("ccsim-protocol-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn json_round_trips_and_is_deterministic() {
    let spec = load_spec("eci-dc").unwrap();
    let (ir, _) = generate(&spec).unwrap();
    let j = export_json(&ir);
    assert_eq!(import_json(&j).unwrap(), ir);
    let (ir2, _) = generate(&spec).unwrap();
    assert_eq!(export_json(&ir2), j);
}

#[test]
fn dot_has_every_transition() {
    let spec = load_spec("eci-dc").unwrap();
    let (ir, _) = generate(&spec).unwrap();
    let d = export_dot(&ir);
    assert_eq!(d.matches("digraph").count(), 3);
    let edges = d.matches("[label=").count();
    let total: usize = ir.machines().iter().map(|m| m.n_transitions()).sum();
    assert_eq!(edges, total);
}

/// Every role's ROM of every shipped spec lints clean (verilator -Wall).
#[test]
fn sv_lints_clean_with_verilator() {
    require("verilator", "--version");
    let d = tmpdir("sv");
    let mut linted = 0;
    for info in ccsim_protocol::list_specs() {
        let spec = load_spec(info.name).unwrap();
        let (ir, _) = generate(&spec).unwrap();
        assert!(export_sv(&ir).contains(&format!("module {}_rom", ir.roles[0].name)));
        for m in ir.machines() {
            let sv = ccsim_protocol::export::export_sv_machine(&ir, m);
            let module = format!("{}_rom", m.name.to_lowercase());
            let f = d.join(format!("{module}.sv"));
            std::fs::write(&f, &sv).unwrap();
            let out = Command::new("verilator")
                .args(["--lint-only", "-Wall"])
                .arg(&f)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}: verilator: {}{}",
                info.name,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            linted += 1;
        }
    }
    assert!(linted >= 12);
}

/// Runs rumur on the Murphi export and returns the (states, rules fired)
/// it reports.
fn rumur_states(murphi: &str, tag: &str) -> (u64, u64) {
    let (verified, text) = rumur_verify(murphi, tag);
    assert!(verified, "verifier failed:\n{text}");
    let line = text
        .lines()
        .find(|l| l.contains(" states, ") && l.contains(" rules fired in "))
        .unwrap_or_else(|| panic!("no count in:\n{text}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    (w[0].parse().unwrap(), w[2].parse().unwrap())
}

/// Builds the Murphi export with rumur and runs the verifier: whether it
/// verified, and what it printed.
fn rumur_verify(murphi: &str, tag: &str) -> (bool, String) {
    require("rumur", "--version");
    require("cc", "--version");
    let d = tmpdir(tag);
    let m = d.join("model.m");
    let c = d.join("model.c");
    let exe = d.join("model");
    std::fs::write(&m, murphi).unwrap();
    let out = Command::new("rumur")
        .args([
            "--deadlock-detection",
            "stuck",
            "--threads",
            "1",
            "--output",
        ])
        .arg(&c)
        .arg(&m)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rumur: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new("cc")
        .args(["-std=c11", "-O1", "-o"])
        .arg(&exe)
        .arg(&c)
        .arg("-lpthread")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn rumur_agrees(spec_name: &str, cfg: Option<SystemConfig>) {
    rumur_agrees_on(&load_spec(spec_name).unwrap(), spec_name, cfg);
}

/// rumur's and ccsim's counts of `spec` agree (`spec_name` names its files).
fn rumur_agrees_on(spec: &ccsim_protocol::Spec, spec_name: &str, cfg: Option<SystemConfig>) {
    let (ir, _) = generate(spec).unwrap();
    let cfg = cfg.unwrap_or_else(|| (&spec.check).into());
    let r = check(
        spec,
        &CheckOptions {
            config: Some(cfg.clone()),
            max_states: 0,
        },
    )
    .unwrap();
    assert!(r.verified, "{}", r.to_text());
    let tag = format!("{spec_name}-{}", cfg.dcus.len());
    let (states, rules) = rumur_states(&export_murphi(&ir, &cfg), &tag);
    assert_eq!(
        states as usize, r.reachable_states,
        "rumur and ccsim disagree on states"
    );
    assert_eq!(
        rules as usize, r.system_transitions,
        "rumur and ccsim disagree on rules fired"
    );
}

/// The shipped DC, whose CPU uses the data a forward overtook once, as a
/// windowed read (`IS_D_I` + `PSHA` by `check_window`): rumur counts the
/// read window's states as ccsim does (tests/eci.rs, `pinned_counts`).
#[test]
fn rumur_agrees_on_eci_dc() {
    rumur_agrees("eci-dc", None);
}

/// A windowed read in a local row reads the agent's copy, in Murphi as in
/// ccsim (tests/eci.rs, `a_windowed_load_hit_reads_the_agents_copy`).
#[test]
fn rumur_agrees_on_windowed_load_hits() {
    let spec = common::eci_dc_with_windowed_load_hits();
    rumur_agrees_on(&spec, "eci-dc-window-hits", None);
}

/// ... and rumur finds the read that begins after the write and returns
/// the older value (a second load merged into the miss, tests/eci.rs
/// `a_read_that_begins_after_a_write_cannot_return_the_older_value`).
#[test]
fn rumur_finds_a_read_older_than_its_window() {
    let spec = common::with_a_merged_load(load_spec("eci-dc").unwrap());
    let (ir, _) = generate(&spec).unwrap();
    let (verified, text) = rumur_verify(
        &export_murphi(&ir, &(&spec.check).into()),
        "eci-dc-window-merged",
    );
    assert!(!verified, "{text}");
    assert!(text.contains("data-value"), "{text}");
}

#[test]
fn rumur_agrees_on_eci_cc() {
    rumur_agrees("eci-cc", None);
}

/// The role-form MSI protocol: two caches, the directory and the DMA agent
/// (11,486 states, 40,114 rules fired, pinned in `tests/msi.rs`).
#[test]
fn rumur_agrees_on_msi_dma() {
    rumur_agrees("msi-dma", None);
}

/// CXL.cache with one host core, the device and the home: the
/// snoop-behind-GO ordering, the snoop that counts an ack and the
/// role-filtered sends to sharers, all in the export.
#[test]
fn rumur_agrees_on_cxl_cache_one_core() {
    let spec = load_spec("cxl-cache").unwrap();
    let mut cfg: SystemConfig = (&spec.check).into();
    cfg.instances.insert("core".into(), 1);
    rumur_agrees("cxl-cache", Some(cfg));
}

/// CXL.mem with back-invalidation: two host caches, the DCOH and the
/// device's engine (13,858 states, pinned in `tests/cxl.rs`), with the
/// BIConflictAck ordered behind the completions.
#[test]
fn rumur_agrees_on_cxl_mem_bi() {
    rumur_agrees("cxl-mem-bi", None);
}

/// CCIX: three request agents and the home agent (128,754 states, pinned in
/// `tests/ccix.rs`).
#[test]
fn rumur_agrees_on_ccix() {
    rumur_agrees("ccix", None);
}

/// P-Mesh: three L1.5 caches and the L2 slice (92,300 states, pinned in
/// `tests/pmesh.rs`), with NoC2's forward-behind-completion ordering.
#[test]
fn rumur_agrees_on_pmesh() {
    rumur_agrees("pmesh", None);
}

/// The shipped configuration, two host cores and the device (48,680
/// states, pinned in `tests/cxl.rs`). Slow tier (about 3 minutes, most of
/// it compiling rumur's 30 MB of C): `cargo test --release -p
/// ccsim-protocol --test exporters -- --ignored`.
#[test]
#[ignore]
fn rumur_agrees_on_cxl_cache() {
    rumur_agrees("cxl-cache", None);
}

/// Two lines on one DCU: the Murphi export models the serial unit the same
/// way (rumur counted 304,383 states too when the DC was the core subset;
/// the complete DC has more than 5 million, `crates/protocol/README.md`).
/// Slow tier (long): `cargo test -p ccsim-protocol --test exporters -- --ignored`.
#[test]
#[ignore]
fn rumur_agrees_on_two_lines_one_dcu() {
    rumur_agrees(
        "eci-dc",
        Some(SystemConfig {
            dcus: vec![0, 0],
            values: 1,
            max_in_flight: 2,
            instances: Default::default(),
        }),
    );
}

/// The core subset of the DC (`tests/eci.rs`), two lines on one DCU, one
/// value: rumur counts the 319,523 states ccsim does, the CPU's read window
/// included. Slow tier: `cargo test -p ccsim-protocol --test exporters --
/// --ignored`.
#[test]
#[ignore]
fn rumur_agrees_on_the_core_subset_on_two_lines_one_dcu() {
    let cfg = SystemConfig {
        dcus: vec![0, 0],
        values: 1,
        max_in_flight: 2,
        instances: Default::default(),
    };
    rumur_agrees_on(&common::core_subset(), "eci-dc-core", Some(cfg));
}

/// A JSON IR edited by hand into nonsense is rejected, not run.
#[test]
fn corrupt_json_ir_is_rejected() {
    let spec = load_spec("eci-dc").unwrap();
    let (ir, _) = generate(&spec).unwrap();
    let j = export_json(&ir).replacen("\"msg\": \"PSHA\"", "\"msg\": \"PSHX\"", 1);
    let bad = import_json(&j).unwrap();
    let err = ccsim_protocol::system(bad, (&spec.check).into())
        .err()
        .expect("rejected");
    assert!(
        err.message.contains("unknown message PSHX"),
        "{}",
        err.message
    );
    assert!(import_json("{\"name\": 1}").is_err());
}

#[test]
fn text_summary_lists_every_row() {
    let spec = load_spec("eci-dc").unwrap();
    let (ir, stats) = generate(&spec).unwrap();
    let t = ccsim_protocol::export::export_text(&ir, &stats);
    assert!(t.contains("79 states, 304 transitions, 25 message types"));
    assert!(t.contains("E_LOCK_HAKI"));
    let rows: usize = ir.machines().iter().map(|m| m.transitions.len()).sum();
    let mut in_table = false;
    let mut n = 0;
    for l in t.lines() {
        if !l.starts_with("  ") {
            in_table = l == "table:";
        } else if in_table {
            n += 1;
        }
    }
    assert_eq!(n, rows);
}

/// The simulator's view: load the JSON, index the DC, run a read-shared.
#[test]
fn simulator_lookup_from_json() {
    use ccsim_protocol::ir::{Action, IndexedOutcome};
    let spec = load_spec("eci-dc").unwrap();
    let (ir, _) = generate(&spec).unwrap();
    let ir = import_json(&export_json(&ir)).unwrap();
    let dc = ir.generated().unwrap().index().unwrap();
    let (i, wait, s) = (
        dc.state("I").unwrap(),
        dc.state("I_RLDD").unwrap(),
        dc.state("S").unwrap(),
    );
    // RLDD: read memory through AXI, then grant with the data.
    let step = |st: usize, ev: &str| match dc.lookup(st, dc.event(ev).unwrap()) {
        Some(IndexedOutcome::Go { next, actions }) => (*next, actions.clone()),
        other => panic!("{other:?}"),
    };
    assert_eq!(step(i, "RLDD"), (wait, vec![Action::send("AXI_RD")]));
    assert_eq!(step(wait, "AXI_RD_DONE"), (s, vec![Action::send("PSHA")]));
    assert_eq!(
        dc.lookup(dc.state("E").unwrap(), dc.event("RLDD").unwrap()),
        Some(&IndexedOutcome::Stall)
    );
    assert_eq!(dc.lookup(i, dc.event("HAKD").unwrap()), None);
}

/// Graphviz accepts the dot export of every machine.
#[test]
fn dot_renders_with_graphviz() {
    require("dot", "-V");
    let spec = load_spec("eci-dc").unwrap();
    let (ir, _) = generate(&spec).unwrap();
    for m in ir.machines() {
        let mut child = Command::new("dot")
            .arg("-Tsvg")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(ccsim_protocol::export::export_dot_machine(m).as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            m.name,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("<svg"));
    }
}

/// CXL.mem for a type-3 expander: two host threads and the memory
/// controller (pinned in `tests/cxl.rs`).
#[test]
fn rumur_agrees_on_cxl_mem() {
    rumur_agrees("cxl-mem", None);
}

/// CXL type-2 device memory with host/device bias: two host cores, the
/// host's home, the device's DCOH and its cache (81,456 states, pinned in
/// `tests/cxl_type2.rs`), with the M2S requests ordered behind the
/// forwards and the device snoop behind the DCOH's answers.
#[test]
fn rumur_agrees_on_cxl_type2() {
    rumur_agrees("cxl-type2", None);
}

//! # ccsim-protocol: state-equations in, verified transient-state machine out
//!
//! This crate implements CCKit's protocol flow (CCKit §4.1–§4.3) for
//! ccsim. A user writes a MESI-like protocol between a home agent and a
//! remote caching agent as **state-equations** in TOML; the toolkit
//! generates the full machine with transient states, checks the composed
//! system exhaustively and exports it.
//!
//! ```text
//!  protocols/eci-dc.toml ──parse+validate──▶ Spec ──generate──▶ ProtocolIr (table IR, JSON)
//!                                                                   │
//!             ┌──────────────────────────────┬──────────────────────┼──────────────┐
//!             ▼                              ▼                      ▼              ▼
//!   System (ccsim_check::Model)         Murphi export         SystemVerilog ROM   dot
//!   CPU table + generated DC table      (rumur agrees on      (verilator lint)
//!   + app table + unordered network     the state count)
//!   + DCUs, explored breadth-first
//!   by ccsim_check (with its progress check)
//! ```
//!
//! The checker interprets the *same* table it exports as JSON, which the
//! simulator loads: the table that was proved is the table that runs.
//!
//! ## Example
//!
//! ```
//! use ccsim_protocol::{check, generate, load_spec, CheckOptions};
//!
//! let spec = load_spec("eci-dc").unwrap(); // a shipped name or a path
//! let (ir, stats) = generate(&spec).unwrap();
//! assert_eq!(ir.generated().unwrap().name, "dc");
//! assert!(stats.states > stats.stable_states); // transient states were generated
//! let report = check(&spec, &CheckOptions::default()).unwrap();
//! assert!(report.verified, "{}", report.to_text());
//! assert_eq!(report.reachable_states, 12_381); // rumur reports the same
//!
//! // The same table, exported.
//! let json = ccsim_protocol::export::export_json(&ir);
//! assert_eq!(ccsim_protocol::export::import_json(&json).unwrap(), ir);
//! assert!(ccsim_protocol::export::export_sv(&ir).contains("module dc_rom"));
//! ```
//!
//! Errors in a spec name their place:
//!
//! ```
//! let text = ccsim_protocol::builtin_text("eci-dc").unwrap().replace("receive = [\"RLDX\",", "receive = [\"RLDZ\",");
//! let err = ccsim_protocol::Spec::parse(&text, "my.toml").unwrap_err();
//! assert_eq!(err.path, "my.toml: equation[1].receive[0]");
//! assert_eq!(err.message, "unknown message \"RLDZ\"");
//! ```
//!
//! ## Public API (what the CLI and Python call)
//!
//! * [`list_specs`], [`builtin_text`], [`load_spec`] → [`Spec`] or [`SpecError`]
//!   (`path` + `message`; the CLI maps it to exit code 2);
//! * [`generate()`] → ([`ProtocolIr`], [`GenStats`]);
//! * [`check`] → [`CheckReport`] (serializable: states, transitions,
//!   messages, reachable system states, seconds, violations with traces and
//!   charts; exit code 0 when `verified`, 1 otherwise);
//! * [`export::export_json`], [`export::export_dot`], [`export::export_sv`],
//!   [`export::export_murphi`].
//!
//! ## Modules
//!
//! * [`spec`]: the TOML format and its validation;
//! * [`generate`](mod@generate): state-equations → table (§4.2's passes);
//! * [`ir`]: the table IR;
//! * [`system`](mod@system): the composed system (`ccsim_check::Model`);
//! * [`invocation`]: the two-line invocation protocol (PIO paper Fig. 5);
//! * [`mutate`]: single-row mutants of a generated table;
//! * [`export`]: JSON, dot, SystemVerilog, Murphi.

pub mod cc_invocation;
pub mod engine;
pub mod export;
pub mod generate;
pub mod invariants;
pub mod invocation;
pub mod ir;
pub mod mutate;
pub mod spec;
pub mod system;

pub use generate::{generate, GenStats};
pub use ir::ProtocolIr;
pub use spec::{Spec, SpecError};
pub use system::{SysState, System, SystemConfig};

use serde::Serialize;

/// A shipped spec.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct SpecInfo {
    /// Name used on the command line, e.g. `eci-dc`.
    pub name: &'static str,
    /// One-line description.
    pub description: &'static str,
}

const BUILTIN: &[(&str, &str, &str)] = &[
    (
        "eci-dc",
        "ECI directory controller for FPGA-homed lines (CPU LLC remote)",
        include_str!("../../../protocols/eci-dc.toml"),
    ),
    (
        "eci-cc",
        "ECI cache controller for CPU-homed lines (FPGA remote)",
        include_str!("../../../protocols/eci-cc.toml"),
    ),
    (
        "invocation",
        "two-line invocation protocol (PIO paper Fig. 5a/5b) over the ECI DC",
        include_str!("../../../protocols/invocation.toml"),
    ),
    (
        "invocation-shared-dcu",
        "the invocation protocol with A and B on one DCU (deadlocks without not-ready)",
        include_str!("../../../protocols/invocation-shared-dcu.toml"),
    ),
    (
        "msi-dma",
        "MSI directory protocol (Primer §8.2) with caches, a blocking directory and a DMA agent; 64 B lines",
        include_str!("../../../protocols/msi-dma.toml"),
    ),
    (
        "cxl-cache",
        "CXL.cache (CXL 2.0 §3.2): host cores with MESI, a device coherency engine with its host-memory cache, the LLC with an embedded directory as home; 64 B lines",
        include_str!("../../../protocols/cxl-cache.toml"),
    ),
    (
        "cxl-mem-bi",
        "CXL.mem with back-invalidation (CXL 3.0 HDM-DB): host caches of device memory, the device's DCOH as home, BISnpInv/BIRspI with the BIConflict handshake, the device's own engine",
        include_str!("../../../protocols/cxl-mem-bi.toml"),
    ),
    (
        "cxl-type2",
        "CXL 2.0 type-2 device memory (HDM-D) with host/device bias: host cores with MESI and the host's home agent, the device's DCOH with its bias table in front of device memory and the device's cache; RdCurr/ItoMWr/RdOwnNoData answered by MemRdFwd/MemWrFwd, bias flips both ways",
        include_str!("../../../protocols/cxl-type2.toml"),
    ),
    (
        "cxl-mem",
        "CXL.mem for a type-3 memory expander (CXL 2.0 §3.3, HDM-H): the host's MemRd and MemWr, the device's MemData and Cmp, a memory controller without coherence state; 64 B lines",
        include_str!("../../../protocols/cxl-mem.toml"),
    ),
    (
        "ccix",
        "CCIX (Base Spec 1.0, CHI-like): request agents with I/SC/UC/UD caches (the U280 system cache, host clusters) and the N1-SDP's blocking home agent with a directory; ReadShared, ReadUnique, CleanUnique, Evict, WriteBackFull, SnpToS/SnpToI, CompData/Comp/CompAck",
        include_str!("../../../protocols/ccix.toml"),
    ),
    (
        "pmesh",
        "OpenPiton P-Mesh: private L1.5 caches (MESI, silent clean evictions, guarded write-backs) and the distributed L2 as a blocking directory home; LOAD_REQ, STORE_REQ, WB_REQ, the three forwards and their FWDACKs, DATA_ACK, NODATA_ACK",
        include_str!("../../../protocols/pmesh.toml"),
    ),
];

/// The shipped specs, by name.
pub fn list_specs() -> Vec<SpecInfo> {
    BUILTIN
        .iter()
        .map(|(n, d, _)| SpecInfo {
            name: n,
            description: d,
        })
        .collect()
}

/// The TOML text of a shipped spec.
pub fn builtin_text(name: &str) -> Option<&'static str> {
    BUILTIN
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, t)| *t)
}

/// Loads a shipped spec by name, or a TOML file by path.
pub fn load_spec(name_or_path: &str) -> Result<Spec, SpecError> {
    if let Some(t) = builtin_text(name_or_path) {
        return Spec::parse(t, &format!("builtin:{name_or_path}"));
    }
    let text = std::fs::read_to_string(name_or_path).map_err(|e| SpecError {
        path: name_or_path.to_string(),
        message: format!(
            "cannot read spec ({e}); shipped specs are: {}",
            BUILTIN.iter().map(|b| b.0).collect::<Vec<_>>().join(", ")
        ),
    })?;
    Spec::parse(&text, name_or_path)
}

/// Options for [`check`].
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    /// Override the spec's `[check]` configuration.
    pub config: Option<SystemConfig>,
    /// Stop after this many states (0: the default limit).
    pub max_states: usize,
}

/// One violation with its trace.
#[derive(Clone, Debug, Serialize)]
pub struct ViolationReport {
    /// Property: `swmr`, `data-value`, `no-unspecified-reception`,
    /// `network-bound` or `deadlock`.
    pub property: String,
    /// Explanation at the bad state.
    pub message: String,
    /// Steps of the trace (`agent -> agent: label`).
    pub trace: Vec<String>,
    /// The final state, described.
    pub final_state: String,
    /// Text message sequence chart.
    pub chart: String,
    /// Mermaid sequence diagram.
    pub mermaid: String,
}

/// The states the checker explores at most when [`CheckOptions::max_states`]
/// is 0.
pub const DEFAULT_MAX_STATES: usize = 5_000_000;

/// The explorer options every check of this crate uses: stop at the first
/// violation, report dead ends, and check progress (`AG EF quiescent` over
/// [`System::helps`] actions), within `max_states` states (0:
/// [`DEFAULT_MAX_STATES`]).
pub(crate) fn explore_options(max_states: usize) -> ccsim_check::CheckOptions {
    ccsim_check::CheckOptions {
        max_states: Some(if max_states == 0 {
            DEFAULT_MAX_STATES
        } else {
            max_states
        }),
        max_violations: 1,
        check_deadlock: true,
        progress: true,
    }
}

impl ViolationReport {
    /// The report of a violation `ccsim_check` found, with `final_state`
    /// describing the violating state. Both kinds of stuck state are reported
    /// as the property `deadlock`: a dead end (no action enabled while a
    /// transaction is pending) and a state from which no quiescent state is
    /// reachable by helping actions ([`ccsim_check::ViolationKind::NoProgress`]).
    pub(crate) fn new(v: &ccsim_check::Violation, final_state: String) -> Self {
        use ccsim_check::ViolationKind;
        let (property, message) = match &v.kind {
            ViolationKind::Invariant(name) => (name.clone(), v.explanation.clone()),
            ViolationKind::Deadlock => (
                "deadlock".to_string(),
                "no action is enabled but a transaction is pending".to_string(),
            ),
            ViolationKind::NoProgress => (
                "deadlock".to_string(),
                "from this state no quiescent state (all agents stable, network empty) is \
                 reachable by delivering messages and finishing open work"
                    .to_string(),
            ),
        };
        let steps = v.trace.chart_steps();
        ViolationReport {
            property,
            message,
            trace: steps
                .iter()
                .map(|s| format!("{} -> {}: {}", s.from, s.to, s.label))
                .collect(),
            final_state,
            chart: v.trace.msc_text(),
            mermaid: v.trace.msc_mermaid(),
        }
    }
}

/// What `ccsim protocol check --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// Protocol name.
    pub protocol: String,
    /// The machine the counts below describe: `generated machine `dc`` for
    /// the two-node form, `home machine `directory`` for the role form.
    pub machine: String,
    /// States of the generated machine.
    pub states: usize,
    /// Transitions of the generated machine (stalls excluded).
    pub transitions: usize,
    /// Stall rows of the generated machine.
    pub stalls: usize,
    /// Message types the generated machine handles.
    pub messages: usize,
    /// Generator counts.
    pub generator: GenStats,
    /// Configuration checked.
    pub config: SystemConfig,
    /// Reachable system states.
    pub reachable_states: usize,
    /// System transitions fired.
    pub system_transitions: usize,
    /// Whether the exploration finished: not cut off by the state limit
    /// (stopping at the first violation counts as finished).
    pub complete: bool,
    /// Seconds spent exploring.
    pub seconds: f64,
    /// True when complete and no violation was found.
    pub verified: bool,
    /// Violations (at most one: the shortest found first).
    pub violations: Vec<ViolationReport>,
    /// Transitions of the generated machine that no reachable state fires
    /// (`STATE/EVENT`), in table order. Empty when every row is exercised.
    pub unexercised: Vec<String>,
    /// For application protocols: one line per variant checked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<String>,
}

/// How reports name the machine their counts describe.
fn machine_label(ir: &ProtocolIr) -> String {
    match ir.generated() {
        Some(g) => format!("generated machine `{}`", g.name),
        None => format!("home machine `{}`", ir.primary().name),
    }
}

/// Builds the composed system for an IR with a configuration.
pub fn system(ir: ProtocolIr, config: SystemConfig) -> Result<System, SpecError> {
    System::new(ir, config).map_err(|m| SpecError {
        path: "check".into(),
        message: m,
    })
}

/// Generates and checks a spec. A spec with `[check] application =
/// "invocation"` is checked as the two-line invocation protocol in all eight
/// variants (Fig. 5a/5b, Exclusive/Shared return, with and without "not
/// ready yet") on its DCU mapping; otherwise the agents run freely.
pub fn check(spec: &Spec, opts: &CheckOptions) -> Result<CheckReport, SpecError> {
    let (ir, stats) = generate(spec)?;
    let cfg = opts.config.clone().unwrap_or_else(|| (&spec.check).into());
    if spec.check.application.as_deref() == Some("invocation") {
        return check_invocation_variants(ir, stats, cfg);
    }
    check_ir(ir, stats, cfg, opts.max_states)
}

fn check_invocation_variants(
    ir: ProtocolIr,
    stats: GenStats,
    cfg: SystemConfig,
) -> Result<CheckReport, SpecError> {
    use invocation::{check_invocation_ir, InvocationConfig};
    if cfg.dcus.len() != 2 {
        return Err(SpecError {
            path: "check.dcus".into(),
            message: "the invocation protocol uses exactly two lines (A and B)".into(),
        });
    }
    let shared_unit = cfg.dcus[0] == cfg.dcus[1];
    let t0 = std::time::Instant::now();
    let mut total = 0;
    let mut total_transitions = 0;
    let mut violations = Vec::new();
    let mut variants = Vec::new();
    for device_initiated in [false, true] {
        for exclusive_return in [true, false] {
            for not_ready in [false, true] {
                let ic = InvocationConfig {
                    device_initiated,
                    exclusive_return,
                    not_ready,
                    shared_unit,
                    rounds: 2,
                };
                let r = check_invocation_ir(ir.clone(), &ic, cfg.values)?;
                total += r.reachable_states;
                total_transitions += r.transitions;
                let name = ic.name();
                variants.push(format!(
                    "{name}: {} states, {}",
                    r.reachable_states,
                    if r.verified { "completes" } else { "VIOLATION" }
                ));
                if let Some(mut v) = r.violation {
                    if violations.is_empty() {
                        v.message = format!("{name}: {}", v.message);
                        violations.push(v);
                    }
                }
            }
        }
    }
    Ok(CheckReport {
        protocol: ir.name.clone(),
        machine: machine_label(&ir),
        states: stats.states,
        transitions: stats.transitions,
        stalls: stats.stalls,
        messages: stats.messages,
        generator: stats,
        config: cfg,
        reachable_states: total,
        system_transitions: total_transitions,
        complete: true,
        seconds: t0.elapsed().as_secs_f64(),
        verified: violations.is_empty(),
        violations,
        unexercised: Vec::new(),
        variants,
    })
}

/// The rows that fire in `states` (every reachable state of `sys`), as
/// (role index, state, event, guard): the checker's row coverage, and what
/// mutation tests use to leave out mutants of rows that never run.
pub fn fired_rows(sys: &System, states: &[SysState]) -> std::collections::BTreeSet<RowKey> {
    use ccsim_check::model::Model;
    let mut fired = std::collections::BTreeSet::new();
    let mut acts = Vec::new();
    for s in states {
        acts.clear();
        sys.actions(s, &mut acts);
        for a in &acts {
            let (agent, st, ev, guard) = sys.row_of(s, a);
            fired.insert((sys.role_of(agent), st, ev, guard));
        }
    }
    fired
}

/// A table row: (role index, state, event, guard).
pub type RowKey = (usize, String, String, Option<ir::Guard>);

/// The rows that fire in some reachable state of `ir` in `cfg`: (role
/// index, state, event, guard), as [`fired_rows`]. Explores the whole
/// state space (the default state limit).
pub fn exercised(
    ir: ProtocolIr,
    cfg: SystemConfig,
) -> Result<std::collections::BTreeSet<RowKey>, SpecError> {
    let sys = system(ir, cfg)?;
    let mut options = explore_options(0);
    options.progress = false;
    let mut explorer = ccsim_check::Explorer::new(&sys, options);
    explorer.run();
    Ok(fired_rows(&sys, explorer.states()))
}

/// Checks an already generated IR (used by mutation tests).
pub fn check_ir(
    ir: ProtocolIr,
    stats: GenStats,
    cfg: SystemConfig,
    max_states: usize,
) -> Result<CheckReport, SpecError> {
    let name = ir.name.clone();
    let sys = system(ir, cfg.clone())?;
    let mut explorer = ccsim_check::Explorer::new(&sys, explore_options(max_states));
    let r = explorer.run();
    // Row coverage of the generated machine (or the home's).
    let primary = sys.ir.primary();
    let primary_role = sys.ir.role_index(&primary.role).expect("a role");
    let fired = fired_rows(&sys, explorer.states());
    let unexercised: Vec<String> = primary
        .transitions
        .iter()
        .filter(|t| {
            matches!(t.outcome, ir::Outcome::Go { .. })
                && !fired.contains(&(primary_role, t.state.clone(), t.event.clone(), t.guard))
        })
        .map(|t| match t.guard {
            Some(g) => format!("{}/{} [{}]", t.state, t.event, g.as_str()),
            None => format!("{}/{}", t.state, t.event),
        })
        .collect();
    let violations = r
        .violations
        .iter()
        .map(|v| {
            let last = &explorer.states()[v.state_id as usize];
            ViolationReport::new(v, sys.describe(last))
        })
        .collect::<Vec<_>>();
    Ok(CheckReport {
        protocol: name,
        machine: machine_label(&sys.ir),
        states: stats.states,
        transitions: stats.transitions,
        stalls: stats.stalls,
        messages: stats.messages,
        generator: stats,
        config: cfg,
        reachable_states: r.states as usize,
        system_transitions: r.transitions as usize,
        // As before the port to ccsim_check: "finished" means not cut off by
        // the state limit (stopping at the first violation still counts).
        complete: r.outcome != ccsim_check::Outcome::StateLimit,
        seconds: r.seconds,
        verified: r.passed(),
        violations,
        unexercised,
        variants: Vec::new(),
    })
}

impl CheckReport {
    /// Human-readable summary with the counterexample, if any.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "protocol {}: {} {} states, {} transitions, {} stalls, {} message types\n\
             checked {} line(s) on DCUs {:?}, {} data values{}: {} reachable states, {} transitions, {:.3} s\n",
            self.protocol,
            self.machine,
            self.states,
            self.transitions,
            self.stalls,
            self.messages,
            self.config.dcus.len(),
            self.config.dcus,
            self.config.values,
            if self.config.instances.is_empty() {
                String::new()
            } else {
                let v: Vec<String> = self
                    .config
                    .instances
                    .iter()
                    .map(|(r, n)| format!("{n} {r}"))
                    .collect();
                format!(", {}", v.join(", "))
            },
            self.reachable_states,
            self.system_transitions,
            self.seconds
        );
        for v in &self.variants {
            s.push_str(&format!("  {v}\n"));
        }
        if self.verified {
            s.push_str("verified: swmr, data-value, no-unspecified-reception, network-bound, deadlock-freedom\n");
            if !self.unexercised.is_empty() {
                s.push_str(&format!(
                    "note: {} transition(s) of the {} are never exercised by this system: {}\n",
                    self.unexercised.len(),
                    self.machine,
                    self.unexercised.join(" ")
                ));
            }
        } else if !self.complete && self.violations.is_empty() {
            s.push_str("incomplete: state limit reached\n");
        }
        for v in &self.violations {
            s.push_str(&format!("VIOLATION {}: {}\n", v.property, v.message));
            s.push_str(&format!("final state: {}\n", v.final_state));
            s.push_str(&v.chart);
        }
        s
    }
}

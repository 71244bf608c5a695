//! The memory behind a home agent's AXI side: real line data
//! ([`LineStore`]) plus a timing model, either BRAM (fixed latency) or a DDR
//! controller with banks and open rows ([`Ddr`]).
//!
//! The DDR model is what makes the Xilinx MIG lose efficiency under
//! non-sequential access (CCKit §5.2, Fig. 6): with an open-page policy a
//! read that hits the open row costs `tCL`, a read to an idle bank
//! `tRCD + tCL`, and a read that conflicts with another open row
//! `tRP + tRCD + tCL`; sequential lines stay in one row (64 lines of 128 B in
//! an 8 KiB row) while random lines almost always conflict. A closed-page
//! controller (auto-precharge) always pays `tRCD + tCL`.
//!
//! ```
//! use ccsim_coherence::memory::{Ddr, MemTiming};
//! use ccsim_kernel::prelude::*;
//! let mut d = MemTiming::Ddr(Ddr::from_params(&Params::new()).unwrap());
//! let first = d.access(0, 0, false);          // bank idle: activate + read
//! let second = d.access(first, 2, false) - first; // same channel and row: a hit
//! let far = d.access(2 * first, 1 << 20, false) - 2 * first; // other row, same bank
//! assert!(second < first && far > first);
//! ```

use rustc_hash::FxHashMap as HashMap;

use ccsim_kernel::prelude::*;

use crate::util::{complete, div_mod, ns_to_ps};
use crate::{initial_line, initial_line_into, Line, LINE_BYTES};

/// Sparse line storage: only written lines cost memory; others read as
/// [`initial_line`].
#[derive(Debug, Default, Clone)]
pub struct LineStore {
    lines: HashMap<u64, Box<Line>>,
    /// Writes so far (see [`LineStore::generation`]).
    writes: u64,
}

impl LineStore {
    /// The line's current bytes.
    #[inline]
    pub fn read(&self, line: u64) -> Line {
        // Nothing written yet (a read-only run): skip the hash probe.
        if self.lines.is_empty() {
            return initial_line(line);
        }
        match self.lines.get(&line) {
            Some(b) => **b,
            None => initial_line(line),
        }
    }
    /// Writes the line's current bytes into `dst`.
    #[inline]
    pub fn read_into(&self, line: u64, dst: &mut Line) {
        // Nothing written yet (a read-only run): skip the hash probe.
        if !self.lines.is_empty() {
            if let Some(b) = self.lines.get(&line) {
                *dst = **b;
                return;
            }
        }
        initial_line_into(line, dst);
    }
    /// A count that changes with every write: bytes read from the store at
    /// one generation are still what it holds while the generation is the
    /// same (so a copy can stand in for another read).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.writes
    }
    /// Stores a line.
    pub fn write(&mut self, line: u64, data: &Line) {
        self.writes += 1;
        match self.lines.get_mut(&line) {
            Some(held) => **held = *data,
            None => {
                self.lines.insert(line, Box::new(*data));
            }
        }
    }
    /// Lines written so far.
    pub fn written(&self) -> usize {
        self.lines.len()
    }
}

/// Declaration of `coherent_bram`.
pub static COHERENT_BRAM: ComponentSpec = ComponentSpec {
    type_name: "coherent_bram",
    description:
        "FPGA BRAM behind a directory controller's AXI port: fixed latency, one line per cycle.",
    params: &[
        ParamSpec {
            name: "latency_ns",
            kind: ParamKind::Float,
            default: ParamDefault::Float(9.3),
            unit: "ns",
            range: ParamRange::at_least(0.0),
            from: "assumed: 3 cycles of BRAM at 322 MHz",
            description: "AXI read or write of a line, request to response.",
        },
        ParamSpec {
            name: "line_ns",
            kind: ParamKind::Float,
            default: ParamDefault::Float(3.1),
            unit: "ns",
            range: ParamRange::at_least(0.0),
            from: "assumed: one line per 322 MHz cycle",
            description: "Occupancy per line (throughput limit).",
        },
    ],
    ports: &[],
    stats: &[],
    check: None,
};

/// Declaration of `ddr_controller`.
pub static DDR_CONTROLLER: ComponentSpec = ComponentSpec {
    type_name: "ddr_controller",
    description: "A DDR4 channel behind a memory controller (Xilinx MIG or a CPU's controller): banks with open rows, row hits/misses/conflicts, a fixed controller latency.",
    params: &[
        ParamSpec { name: "controller_ns", kind: ParamKind::Float, default: ParamDefault::Float(60.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed", description: "Fixed latency of the controller and its AXI/PHY path, per access." },
        ParamSpec { name: "t_cl_ns", kind: ParamKind::Float, default: ParamDefault::Float(14.16), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: DDR4-2400 CL17 (CCKit §4: 2400 MT/s DIMMs on the FPGA)", description: "CAS latency." },
        ParamSpec { name: "t_rcd_ns", kind: ParamKind::Float, default: ParamDefault::Float(14.16), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: DDR4-2400 17-17-17", description: "Activate to read." },
        ParamSpec { name: "t_rp_ns", kind: ParamKind::Float, default: ParamDefault::Float(14.16), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: DDR4-2400 17-17-17", description: "Precharge." },
        ParamSpec { name: "burst_ns", kind: ParamKind::Float, default: ParamDefault::Float(6.67), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: 128 B on a 64-bit bus at 2400 MT/s", description: "Data bus time of one 128 B line." },
        ParamSpec { name: "banks", kind: ParamKind::Int, default: ParamDefault::Int(16), unit: "banks", range: ParamRange::at_least(1.0), from: "assumed: DDR4, 4 bank groups x 4 banks", description: "Banks per channel." },
        ParamSpec { name: "row_bytes", kind: ParamKind::Int, default: ParamDefault::Int(8192), unit: "bytes", range: ParamRange::at_least(128.0), from: "assumed: 1 KiB page x 8 chips", description: "Row (page) size across the rank, in whole 128 B lines." },
        ParamSpec { name: "channels", kind: ParamKind::Int, default: ParamDefault::Int(2), unit: "channels", range: ParamRange::at_least(1.0), from: "CCKit §5.1: each DCS connects to one DIMM through its own MIG", description: "Channels; line l uses channel l % channels (one DIMM per DC slice, CCKit §5.1)." },
        ParamSpec { name: "page_policy", kind: ParamKind::Enum(&["open", "closed"]), default: ParamDefault::Str("open"), unit: "", range: ParamRange::ANY, from: "assumed: MIG default open-page", description: "open: rows stay open (hits are cheap, conflicts pay tRP); closed: auto-precharge after every access." },
    ],
    ports: &[],
    stats: &[],
    check: Some(check_ddr),
};

/// A row holds whole lines.
fn check_ddr(p: &Params, _: Peers<'_>) -> Result<(), ParamProblem> {
    let row = p.int("row_bytes");
    if row % LINE_BYTES as i64 != 0 {
        return Err(ParamProblem::new(
            "row_bytes",
            format!("must be a multiple of the {LINE_BYTES} B line, got {row}"),
        ));
    }
    Ok(())
}

/// BRAM timing.
#[derive(Debug, Clone)]
pub struct Bram {
    latency: Tick,
    line: Tick,
    free_at: Tick,
}

impl Bram {
    /// From `coherent_bram` parameters.
    pub fn from_params(p: &Params) -> Result<Bram, String> {
        let p = complete(&COHERENT_BRAM, p)?;
        Ok(Bram {
            latency: ns_to_ps(p.float("latency_ns")),
            line: ns_to_ps(p.float("line_ns")),
            free_at: 0,
        })
    }
}

#[derive(Debug, Clone, Default)]
struct Bank {
    open_row: Option<u64>,
    ready_at: Tick,
}

#[derive(Debug, Clone, Default)]
struct Channel {
    banks: Vec<Bank>,
    bus_free: Tick,
}

/// DDR timing with per-bank open rows.
#[derive(Debug, Clone)]
pub struct Ddr {
    controller: Tick,
    t_cl: Tick,
    t_rcd: Tick,
    t_rp: Tick,
    burst: Tick,
    lines_per_row: u64,
    open_page: bool,
    channels: Vec<Channel>,
    /// Row hits, idle-bank activations and row conflicts so far.
    pub outcomes: [u64; 3],
}

impl Ddr {
    /// From `ddr_controller` parameters.
    pub fn from_params(p: &Params) -> Result<Ddr, String> {
        let p = complete(&DDR_CONTROLLER, p)?;
        let f = |n: &str| ns_to_ps(p.float(n));
        let banks = p.uint("banks") as usize;
        let channels = p.uint("channels") as usize;
        Ok(Ddr {
            controller: f("controller_ns"),
            t_cl: f("t_cl_ns"),
            t_rcd: f("t_rcd_ns"),
            t_rp: f("t_rp_ns"),
            burst: f("burst_ns"),
            lines_per_row: p.uint("row_bytes") / LINE_BYTES as u64,
            open_page: p.str("page_policy") == "open",
            channels: vec![
                Channel {
                    banks: vec![Bank::default(); banks],
                    bus_free: 0,
                };
                channels
            ],
            outcomes: [0; 3],
        })
    }

    fn access(&mut self, now: Tick, line: u64) -> Tick {
        let nch = self.channels.len() as u64;
        let (local, ch_i) = div_mod(line, nch);
        let ch = &mut self.channels[ch_i as usize];
        let nb = ch.banks.len() as u64;
        // Open page: column bits lowest, then bank, then row, so sequential
        // lines share an open row. Closed page: bank bits lowest, so
        // sequential lines spread over the banks (the usual address map of
        // a closed-page controller: no row to share, so interleave banks).
        let (bank_i, row) = if self.open_page {
            let (col_row, _) = div_mod(local, self.lines_per_row);
            let (row, bank_i) = div_mod(col_row, nb);
            (bank_i as usize, row)
        } else {
            let (by_bank, bank_i) = div_mod(local, nb);
            (bank_i as usize, div_mod(by_bank, self.lines_per_row).0)
        };
        let bank = &mut ch.banks[bank_i];
        let start = (now + self.controller).max(bank.ready_at);
        let (array, kind) = match bank.open_row {
            Some(r) if r == row && self.open_page => (self.t_cl, 0),
            None => (self.t_rcd + self.t_cl, 1),
            Some(_) => (self.t_rp + self.t_rcd + self.t_cl, 2),
        };
        self.outcomes[kind] += 1;
        let data_start = (start + array).max(ch.bus_free);
        let done = data_start + self.burst;
        ch.bus_free = done;
        bank.open_row = if self.open_page { Some(row) } else { None };
        // The bank takes its next column command one burst after this one
        // (tCCD): row hits pipeline, they do not wait a whole CAS latency.
        let column_command = data_start - self.t_cl;
        bank.ready_at = column_command + self.burst;
        done
    }
}

/// A memory timing model.
#[derive(Debug, Clone)]
pub enum MemTiming {
    /// Fixed-latency BRAM.
    Bram(Bram),
    /// DDR behind a controller.
    Ddr(Ddr),
}

impl MemTiming {
    /// Issues an AXI read or write of `line` at `now`; returns when it
    /// completes (data available for a read, accepted for a write).
    pub fn access(&mut self, now: Tick, line: u64, _write: bool) -> Tick {
        match self {
            MemTiming::Bram(b) => {
                let start = now.max(b.free_at);
                b.free_at = start + b.line;
                start + b.latency
            }
            MemTiming::Ddr(d) => d.access(now, line),
        }
    }
}

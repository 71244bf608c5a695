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
//! With `scheduler = "mig"` the DDR4 model is the Xilinx MIG behind
//! CCKit's DC+DDR (PG150): a ROW_COLUMN_BANK address map, one in-order
//! Group FSM per bank group (a row miss at its head holds the hits behind
//! it), activate spacing (tRRD, tFAW), writes with CWL, write recovery and
//! read/write turnarounds (tWR, tWTR, tRTW), and all-bank refresh (tREFI,
//! tRFC) issued in idle gaps, up to 8 postponed (JESD79-4), closing every
//! row. So serialized reads find their bank closed by a refresh and pay an
//! activate whatever the pattern, while loaded streams pay row conflicts,
//! activate spacing and forced refreshes (`tests/mig.rs`). With
//! `write_response = "accepted"` writes are posted, as the MIG's AXI shim
//! answers them: the write response leaves once the controller has taken
//! the write's command and data into its queue and write FIFO
//! (`write_accept_ns`). Reads go first (PG252 'Read and Write
//! Coalescing'); a queued write goes to the DRAM in a gap of the bus, or
//! with the whole queue once it is full (`write_queue`), and then takes its
//! turn on the Group FSM, the bank and the data bus, where later reads
//! meet it.
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

use std::collections::VecDeque;

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
        ParamSpec { name: "scheduler", kind: ParamKind::Enum(&["simple", "mig"]), default: ParamDefault::Str("simple"), unit: "", range: ParamRange::ANY, from: "assumed: the plain bank model unless a platform names the MIG", description: "simple: banks with open rows and a shared data bus only; mig: the Xilinx DDR4 MIG (PG150) as well: a ROW_COLUMN_BANK address map, in-order Group FSMs (one per bank group), bank-group column spacing (tCCD_L), activate spacing (tRRD, tFAW), writes with CWL, write recovery (tWR) and read/write bus turnarounds (tWTR, tRTW), and all-bank refresh (tREFI, tRFC); the mig_* and t_*_ns keys below apply only here." },
        ParamSpec { name: "bank_groups", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "groups", range: ParamRange::at_least(1.0), from: "JESD79-4 §2.7: DDR4 x4/x8 devices have 4 bank groups of 4 banks", description: "mig: bank groups per channel; the MIG has one Group FSM per bank group (PG353 'Native Interface': transactions map to an mcGroup by bank group and bank bits)." },
        ParamSpec { name: "cwl_ns", kind: ParamKind::Float, default: ParamDefault::Float(10.0), unit: "ns", range: ParamRange::at_least(0.0), from: "JESD79-4 speed bins: DDR4-2400 CWL 12 tCK of 0.833 ns", description: "mig: CAS write latency, write command to first data." },
        ParamSpec { name: "t_ccd_l_ns", kind: ParamKind::Float, default: ParamDefault::Float(5.0), unit: "ns", range: ParamRange::at_least(0.0), from: "JESD79-4 timing table: tCCD_L = max(5 nCK, 5 ns) at DDR4-2400 (6 tCK)", description: "mig: column command to column command in the same bank group (to another group it is the burst, tCCD_S)." },
        ParamSpec { name: "t_rrd_ns", kind: ParamKind::Float, default: ParamDefault::Float(4.9), unit: "ns", range: ParamRange::at_least(0.0), from: "JESD79-4 timing table: tRRD_L = max(4 nCK, 4.9 ns) for a 1 KB page at DDR4-2400 (tRRD_S 3.3 ns; the longer one is used)", description: "mig: activate to activate on the channel." },
        ParamSpec { name: "t_faw_ns", kind: ParamKind::Float, default: ParamDefault::Float(21.0), unit: "ns", range: ParamRange::at_least(0.0), from: "JESD79-4 timing table: tFAW = max(20 nCK, 21 ns) for a 1 KB page at DDR4-2400", description: "mig: at most four activates in any window this long." },
        ParamSpec { name: "t_wr_ns", kind: ParamKind::Float, default: ParamDefault::Float(15.0), unit: "ns", range: ParamRange::at_least(0.0), from: "JESD79-4 timing table: tWR 15 ns", description: "mig: end of write data to a precharge of that bank (write recovery)." },
        ParamSpec { name: "t_wtr_ns", kind: ParamKind::Float, default: ParamDefault::Float(7.5), unit: "ns", range: ParamRange::at_least(0.0), from: "JESD79-4 timing table: tWTR_L = max(4 nCK, 7.5 ns)", description: "mig: end of write data to the next read command on the channel (write-to-read turnaround)." },
        ParamSpec { name: "t_rtw_ns", kind: ParamKind::Float, default: ParamDefault::Float(1.67), unit: "ns", range: ParamRange::at_least(0.0), from: "JESD79-4 §4.x read-to-write: RL + BL/2 + 2 - WL tCK between the commands, i.e. 2 tCK of idle bus (1.67 ns at DDR4-2400) between read data and write data", description: "mig: idle data bus between the end of read data and the start of write data (read-to-write turnaround)." },
        ParamSpec { name: "t_refi_ns", kind: ParamKind::Float, default: ParamDefault::Float(7800.0), unit: "ns", range: ParamRange::at_least(0.0), from: "JESD79-4: tREFI 7.8 us (normal temperature range)", description: "mig: interval between all-bank refreshes of a channel (0: no refresh)." },
        ParamSpec { name: "t_rfc_ns", kind: ParamKind::Float, default: ParamDefault::Float(350.0), unit: "ns", range: ParamRange::at_least(0.0), from: "JESD79-4: tRFC1 350 ns for an 8 Gb device (a 16 GiB DIMM of 8 Gb x8 chips, CCKit §4)", description: "mig: an all-bank refresh blocks the channel this long and closes every row." },
        ParamSpec { name: "write_response", kind: ParamKind::Enum(&["written", "accepted"]), default: ParamDefault::Str("written"), unit: "", range: ParamRange::ANY, from: "assumed: the response waits for the DRAM write unless a platform names the MIG's AXI shim", description: "mig: when a write is answered. written: once its data burst is in the DRAM; accepted: once the controller has taken command and data (write_accept_ns after arrival), as the MIG's AXI shim answers (its write command FSM pushes the write response when the last memory-controller command of the burst is accepted, after that command's write data is in the controller's write FIFO); the write then waits in the controller's queue (write_queue) while reads go first, and goes to the DRAM in a gap or when the queue is full." },
        ParamSpec { name: "write_queue", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "writes", range: ParamRange::at_least(1.0), from: "assumed: a 32-entry write queue per channel", description: "mig, write_response = accepted: posted writes a channel's controller holds; they go to the DRAM in gaps between reads, and all at once when the queue is full." },
        ParamSpec { name: "write_accept_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed", description: "mig, write_response = accepted: arrival of a write's command and data at the controller to its write response." },
        ParamSpec { name: "read_issue_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: off (0); no public source gives a per-transaction cost of the DC slice's single-line read path (CCKit's dcs_2_axi.sv feeds each slice's reads through its own desc-to-AXI read converter, axi_rd_cl, whose source is not public); a what-if for the text's 7.8 GiB/s plain-read rate", description: "mig: the shortest interval between two single-line AXI read transactions a channel's read path issues (a per-transaction cost of the requester's read converter; writes and the lines of a multi-line burst, as the prefetcher's, do not pay it). 0: no such cost." },
    ],
    ports: &[],
    stats: &[],
    check: Some(check_ddr),
};

/// Declaration of `ddr5_controller`: JEDEC DDR5 timing in clock cycles
/// (JESD79-5), as a memory controller behind a CXL type-3 expander or a
/// CPU issues it. A 32-bit subchannel moves a 64 B line in one BL16
/// burst; every subchannel is a channel of its own here.
pub static DDR5_CONTROLLER: ComponentSpec = ComponentSpec {
    type_name: "ddr5_controller",
    description: "DDR5 subchannels behind a memory controller: timing in clock cycles of the data rate (CL, tRCD, tRP, CWL, tCCD_S/L, tWTR), bank groups of banks with open rows, all-bank refresh (tREFI, tRFC), a fixed controller latency; 64 B lines, one BL16 burst each.",
    params: &[
        ParamSpec { name: "controller_ns", kind: ParamKind::Float, default: ParamDefault::Float(20.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: scheduler queue and PHY of a DDR5 controller", description: "Fixed latency of the controller's scheduler and PHY, per access." },
        ParamSpec { name: "data_rate_mts", kind: ParamKind::Float, default: ParamDefault::Float(4800.0), unit: "MT/s", range: ParamRange::positive(), from: "JESD79-5: DDR5-4800", description: "Transfers per second; the clock tCK is 2 / data rate (two transfers per cycle)." },
        ParamSpec { name: "cl", kind: ParamKind::Int, default: ParamDefault::Int(40), unit: "tCK", range: ParamRange::at_least(1.0), from: "JESD79-5 speed bin DDR5-4800B: CL 40", description: "CAS latency: read command to first data." },
        ParamSpec { name: "t_rcd", kind: ParamKind::Int, default: ParamDefault::Int(39), unit: "tCK", range: ParamRange::at_least(1.0), from: "JESD79-5 speed bin DDR5-4800B: tRCD 16 ns = 39 tCK", description: "Activate to read or write." },
        ParamSpec { name: "t_rp", kind: ParamKind::Int, default: ParamDefault::Int(39), unit: "tCK", range: ParamRange::at_least(1.0), from: "JESD79-5 speed bin DDR5-4800B: tRP 16 ns = 39 tCK", description: "Precharge." },
        ParamSpec { name: "cwl", kind: ParamKind::Int, default: ParamDefault::Int(38), unit: "tCK", range: ParamRange::at_least(1.0), from: "JESD79-5: CWL = CL - 2", description: "CAS write latency: write command to first data." },
        ParamSpec { name: "burst_length", kind: ParamKind::Int, default: ParamDefault::Int(16), unit: "beats", range: ParamRange::at_least(1.0), from: "JESD79-5: BL16 (64 B on a 32-bit subchannel)", description: "Beats per burst; a burst takes burst_length / 2 clocks and moves one line." },
        ParamSpec { name: "t_ccd_l", kind: ParamKind::Int, default: ParamDefault::Int(12), unit: "tCK", range: ParamRange::at_least(1.0), from: "JESD79-5: tCCD_L = max(8 tCK, 5 ns) = 12 tCK at 4800", description: "Column command to column command in the same bank group (tCCD_S, to another group, is the burst)." },
        ParamSpec { name: "t_wtr", kind: ParamKind::Int, default: ParamDefault::Int(6), unit: "tCK", range: ParamRange::at_least(0.0), from: "JESD79-5: tWTR_S = max(4 tCK, 2.5 ns) = 6 tCK at 4800", description: "End of write data to the next read command on the subchannel (bus turnaround)." },
        ParamSpec { name: "t_refi_ns", kind: ParamKind::Float, default: ParamDefault::Float(3900.0), unit: "ns", range: ParamRange::at_least(0.0), from: "JESD79-5: tREFI1 3.9 us (normal temperature range)", description: "Interval between all-bank refreshes of a subchannel (0: no refresh)." },
        ParamSpec { name: "t_rfc_ns", kind: ParamKind::Float, default: ParamDefault::Float(295.0), unit: "ns", range: ParamRange::at_least(0.0), from: "JESD79-5: tRFC1 295 ns for a 16 Gb device", description: "All-bank refresh: the subchannel takes no command for this long, and every row is closed after it." },
        ParamSpec { name: "bank_groups", kind: ParamKind::Int, default: ParamDefault::Int(8), unit: "groups", range: ParamRange::at_least(1.0), from: "JESD79-5: 8 bank groups in a 16 Gb x4/x8 device", description: "Bank groups per subchannel." },
        ParamSpec { name: "banks_per_group", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "banks", range: ParamRange::at_least(1.0), from: "JESD79-5: 4 banks per group in a 16 Gb x4/x8 device", description: "Banks per bank group." },
        ParamSpec { name: "row_bytes", kind: ParamKind::Int, default: ParamDefault::Int(8192), unit: "bytes", range: ParamRange::at_least(64.0), from: "assumed: x4 devices (1 KB page, JESD79-5) x 8 on a 32-bit subchannel", description: "Row (page) size across the subchannel, in whole 64 B lines." },
        ParamSpec { name: "channels", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "subchannels", range: ParamRange::at_least(1.0), from: "assumed: two DDR5 channels of two 32-bit subchannels", description: "Independent 32-bit subchannels; line l uses subchannel l % channels." },
        ParamSpec { name: "page_policy", kind: ParamKind::Enum(&["open", "closed"]), default: ParamDefault::Str("open"), unit: "", range: ParamRange::ANY, from: "assumed: open-page", description: "open: rows stay open until a conflict or a refresh; closed: auto-precharge after every access." },
        ParamSpec { name: "write_queue", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "writes", range: ParamRange::at_least(0.0), from: "assumed: a 32-entry write queue per subchannel", description: "Writes a subchannel's queue holds: a write completes once queued (posted), and a full queue drains to the DRAM at once, so the bus turns around once per batch rather than per write (0: every write goes to the DRAM when it arrives)." },
    ],
    ports: &[],
    stats: &[],
    check: Some(check_ddr5),
};

/// A DDR5 row holds whole 64 B lines.
fn check_ddr5(p: &Params, _: Peers<'_>) -> Result<(), ParamProblem> {
    let row = p.int("row_bytes");
    if row % DDR5_LINE_BYTES as i64 != 0 {
        return Err(ParamProblem::new(
            "row_bytes",
            format!("must be a multiple of the {DDR5_LINE_BYTES} B line, got {row}"),
        ));
    }
    Ok(())
}

/// Bytes a DDR5 BL16 burst moves on a 32-bit subchannel (JESD79-5): one
/// 64 B line.
pub const DDR5_LINE_BYTES: usize = 64;

/// A row holds whole lines; the MIG's bank groups split the banks evenly.
fn check_ddr(p: &Params, _: Peers<'_>) -> Result<(), ParamProblem> {
    let row = p.int("row_bytes");
    if row % LINE_BYTES as i64 != 0 {
        return Err(ParamProblem::new(
            "row_bytes",
            format!("must be a multiple of the {LINE_BYTES} B line, got {row}"),
        ));
    }
    let (banks, groups) = (p.int("banks"), p.int("bank_groups"));
    if p.str("scheduler") == "mig" && (groups <= 0 || banks % groups != 0) {
        return Err(ParamProblem::new(
            "bank_groups",
            format!("must divide banks ({banks}) for the MIG's Group FSMs, got {groups}"),
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
    /// MIG: end of the last write's data into this bank (tWR before a
    /// precharge).
    write_end: Tick,
}

#[derive(Debug, Clone, Default)]
struct Channel {
    banks: Vec<Bank>,
    bus_free: Tick,
    /// Per bank group: the earliest next column command (tCCD_L).
    group_ready: Vec<Tick>,
    /// End of the last write's data (a read waits tWTR after it).
    write_end: Tick,
    /// Refreshes done (the k-th starts at k * tREFI).
    refreshes: u64,
    /// Posted writes not yet drained to the DRAM: their lines.
    queued_writes: Vec<u64>,
    /// MIG: per Group FSM, the column command of its last transaction (the
    /// FSM works through its queue in order, and tCCD_L spaces its columns).
    fsm_column: Vec<Tick>,
    /// MIG: the last four activates (tFAW), oldest at `act_next`.
    activates: [Tick; 4],
    act_next: usize,
    /// MIG: end of the last read's data (read-to-write turnaround).
    read_end: Tick,
    /// MIG with posted writes: queued writes (line, arrival), oldest first.
    mig_writes: VecDeque<(u64, Tick)>,
    /// MIG with `read_issue`: when the read path takes its next
    /// single-line read.
    read_issue_free: Tick,
}

/// DDR5's additions to the DDR4 timing: bank groups, write latency and
/// turnaround, refresh.
#[derive(Debug, Clone, Copy)]
struct Ddr5Timing {
    bank_groups: u64,
    t_ccd_l: Tick,
    t_cwl: Tick,
    t_wtr: Tick,
    t_refi: Tick,
    t_rfc: Tick,
    write_queue: usize,
}

/// The Xilinx DDR4 MIG's additions to the plain bank model (PG150; the
/// same controller is documented in PG353 and PG252): in-order Group
/// FSMs, bank-group and activate spacing, write timing and turnarounds,
/// refresh.
#[derive(Debug, Clone, Copy)]
struct MigTiming {
    bank_groups: u64,
    t_cwl: Tick,
    t_ccd_l: Tick,
    t_rrd: Tick,
    t_faw: Tick,
    t_wr: Tick,
    t_wtr: Tick,
    t_rtw: Tick,
    t_refi: Tick,
    t_rfc: Tick,
    /// `Some(latency)`: writes are answered this long after they arrive
    /// (posted by the AXI shim), not when their data is in the DRAM.
    write_accept: Option<Tick>,
    /// Posted writes a channel's controller holds before it must drain
    /// them.
    write_queue: usize,
    /// Shortest interval between two single-line read transactions of a
    /// channel's read path (0: none).
    read_issue: Tick,
}

/// Refreshes a DDR4 controller may owe before it must issue one
/// (JESD79-4: up to 8 REF commands postponed).
const MAX_POSTPONED_REFRESHES: u64 = 8;

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
    ddr5: Option<Ddr5Timing>,
    /// Boxed: most DDR models are not MIGs, and `MemTiming` stays small.
    mig: Option<Box<MigTiming>>,
    /// Row hits, idle-bank activations and row conflicts so far.
    pub outcomes: [u64; 3],
    /// All-bank refreshes that delayed or closed rows under an access.
    pub refreshes: u64,
}

impl Ddr {
    /// From `ddr_controller` parameters.
    pub fn from_params(p: &Params) -> Result<Ddr, String> {
        let p = complete(&DDR_CONTROLLER, p)?;
        let f = |n: &str| ns_to_ps(p.float(n));
        let banks = p.uint("banks") as usize;
        let channels = p.uint("channels") as usize;
        let mig = (p.str("scheduler") == "mig").then(|| MigTiming {
            bank_groups: p.uint("bank_groups"),
            t_cwl: f("cwl_ns"),
            t_ccd_l: f("t_ccd_l_ns"),
            t_rrd: f("t_rrd_ns"),
            t_faw: f("t_faw_ns"),
            t_wr: f("t_wr_ns"),
            t_wtr: f("t_wtr_ns"),
            t_rtw: f("t_rtw_ns"),
            t_refi: f("t_refi_ns"),
            t_rfc: f("t_rfc_ns"),
            write_accept: (p.str("write_response") == "accepted").then(|| f("write_accept_ns")),
            write_queue: p.uint("write_queue").max(1) as usize,
            read_issue: f("read_issue_ns"),
        });
        let groups = mig.map_or(0, |m| m.bank_groups as usize);
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
                    fsm_column: vec![0; groups],
                    ..Channel::default()
                };
                channels
            ],
            ddr5: None,
            mig: mig.map(Box::new),
            outcomes: [0; 3],
            refreshes: 0,
        })
    }

    /// From `ddr5_controller` parameters: every cycle count times tCK =
    /// 2 / data rate (DDR: two transfers per clock).
    ///
    /// ```
    /// use ccsim_coherence::memory::Ddr;
    /// use ccsim_kernel::prelude::*;
    /// let mut d = Ddr::from_ddr5_params(&Params::new()).unwrap();
    /// // Idle bank at DDR5-4800B: controller 20 ns + tRCD 39 + CL 40 clocks
    /// // of 0.4167 ns + a BL16 burst of 8 clocks: 56.25 ns.
    /// assert_eq!(d.access(0, 0, false), 56_250);
    /// ```
    pub fn from_ddr5_params(p: &Params) -> Result<Ddr, String> {
        let p = complete(&DDR5_CONTROLLER, p)?;
        // tCK in ps, exact for the JEDEC rates (4800 MT/s: 416.67 ps).
        let t_ck = 2e6 / p.float("data_rate_mts");
        let ck = |n: &str| (p.int(n) as f64 * t_ck).round() as Tick;
        let groups = p.uint("bank_groups");
        let banks = (groups * p.uint("banks_per_group")) as usize;
        let channels = p.uint("channels") as usize;
        Ok(Ddr {
            controller: ns_to_ps(p.float("controller_ns")),
            t_cl: ck("cl"),
            t_rcd: ck("t_rcd"),
            t_rp: ck("t_rp"),
            burst: (p.int("burst_length") as f64 / 2.0 * t_ck).round() as Tick,
            lines_per_row: p.uint("row_bytes") / DDR5_LINE_BYTES as u64,
            open_page: p.str("page_policy") == "open",
            channels: vec![
                Channel {
                    banks: vec![Bank::default(); banks],
                    group_ready: vec![0; groups as usize],
                    ..Channel::default()
                };
                channels
            ],
            ddr5: Some(Ddr5Timing {
                bank_groups: groups,
                t_ccd_l: ck("t_ccd_l"),
                t_cwl: ck("cwl"),
                t_wtr: ck("t_wtr"),
                t_refi: ns_to_ps(p.float("t_refi_ns")),
                t_rfc: ns_to_ps(p.float("t_rfc_ns")),
                write_queue: p.uint("write_queue") as usize,
            }),
            mig: None,
            outcomes: [0; 3],
            refreshes: 0,
        })
    }

    /// Issues a read or write of `line` at `now`; returns when its data
    /// burst ends (data available for a read, written for a write).
    pub fn access(&mut self, now: Tick, line: u64, write: bool) -> Tick {
        if let Some(m) = self.mig.as_deref().copied() {
            let now = if write {
                now
            } else {
                self.issue_read(now, line, m)
            };
            return self.access_mig(now, line, write, m);
        }
        match self.ddr5 {
            None => self.access_ddr4(now, line),
            Some(t) if write && t.write_queue > 0 => self.post_write(now, line, t),
            Some(t) => self.access_ddr5(now, line, write, t),
        }
    }

    /// A write into its subchannel's queue: complete once queued (after
    /// the controller's latency); the write that fills the queue drains
    /// all of it to the DRAM, back to back, ahead of later reads.
    fn post_write(&mut self, now: Tick, line: u64, t: Ddr5Timing) -> Tick {
        let ch = (line % self.channels.len() as u64) as usize;
        let queue = &mut self.channels[ch].queued_writes;
        queue.push(line);
        if queue.len() >= t.write_queue {
            let batch = std::mem::take(queue);
            for l in batch {
                self.access_ddr5(now, l, true, t);
            }
        }
        now + self.controller
    }

    /// DDR5: the subchannel's bank-group bits lowest (consecutive lines of
    /// a subchannel alternate bank groups, so they pay tCCD_S, the burst,
    /// rather than tCCD_L), then the column, then the bank in its group,
    /// then the row (open page); closed page: groups, then banks lowest.
    fn access_ddr5(&mut self, now: Tick, line: u64, write: bool, t: Ddr5Timing) -> Tick {
        let nch = self.channels.len() as u64;
        let (local, ch_i) = div_mod(line, nch);
        let ch = &mut self.channels[ch_i as usize];
        let per_group = ch.banks.len() as u64 / t.bank_groups;
        let (above_group, group) = div_mod(local, t.bank_groups);
        let (bank_in_group, row) = if self.open_page {
            let (col_row, _) = div_mod(above_group, self.lines_per_row);
            let (row, b) = div_mod(col_row, per_group);
            (b, row)
        } else {
            let (by_bank, b) = div_mod(above_group, per_group);
            (b, div_mod(by_bank, self.lines_per_row).0)
        };
        let bank_i = (group * per_group + bank_in_group) as usize;
        let mut start = (now + self.controller).max(ch.banks[bank_i].ready_at);
        // All-bank refresh every tREFI: an access that falls into one waits
        // for its end, and the refresh leaves every row closed.
        if let Some(due) = start.checked_div(t.t_refi) {
            if due > ch.refreshes {
                ch.refreshes = due;
                self.refreshes += 1;
                for b in &mut ch.banks {
                    b.open_row = None;
                }
                start = start.max(due * t.t_refi + t.t_rfc);
            }
        }
        let bank = &mut ch.banks[bank_i];
        let (activate, kind) = match bank.open_row {
            Some(r) if r == row && self.open_page => (0, 0),
            None => (self.t_rcd, 1),
            Some(_) => (self.t_rp + self.t_rcd, 2),
        };
        self.outcomes[kind] += 1;
        // The column command: after the activation, tCCD_L after the
        // group's last one, tWTR after the last write's data for a read,
        // and so that its data finds the bus free.
        let latency = if write { t.t_cwl } else { self.t_cl };
        let mut column = (start + activate).max(ch.group_ready[group as usize]);
        if !write {
            column = column.max(ch.write_end + t.t_wtr);
        }
        column = column.max(ch.bus_free.saturating_sub(latency));
        let data_start = column + latency;
        let done = data_start + self.burst;
        ch.bus_free = done;
        if write {
            ch.write_end = done;
        }
        ch.group_ready[group as usize] = column + t.t_ccd_l;
        bank.open_row = if self.open_page { Some(row) } else { None };
        // The bank takes its next column command one burst later (tCCD_S).
        bank.ready_at = column + self.burst;
        done
    }

    /// Reads `line` as one line of a multi-line AXI burst (the
    /// prefetcher's): as [`Ddr::access`], but the burst is one transaction
    /// of the read path, so its lines do not pay `read_issue_ns` each.
    pub fn access_burst_line(&mut self, now: Tick, line: u64) -> Tick {
        match self.mig.as_deref().copied() {
            Some(m) => self.access_mig(now, line, false, m),
            None => self.access(now, line, false),
        }
    }

    /// A single-line read through its channel's read path: it leaves no
    /// sooner than `read_issue` after the channel's previous one.
    fn issue_read(&mut self, now: Tick, line: u64, t: MigTiming) -> Tick {
        if t.read_issue == 0 {
            return now;
        }
        let n = self.channels.len() as u64;
        let ch = &mut self.channels[(line % n) as usize];
        let at = now.max(ch.read_issue_free);
        ch.read_issue_free = at + t.read_issue;
        at
    }

    /// The DDR4 MIG (PG150). Address map ROW_COLUMN_BANK, the one PG353
    /// recommends for sequential streams: bank-group bits lowest, then
    /// bank, then column, then row, so consecutive lines of a channel go
    /// to different bank groups and banks and a row spans lines a whole
    /// bank set apart. Each bank group has a Group FSM that works through
    /// its transactions in order: a row miss at its head (precharge,
    /// activate) holds the row hits queued behind it. The page stays open
    /// until a miss or a refresh (PG353 'Autoprecharge').
    fn access_mig(&mut self, now: Tick, line: u64, write: bool, t: MigTiming) -> Tick {
        let Some(accept) = t.write_accept else {
            return self.schedule_mig(now, line, write, t);
        };
        // Posted writes (PG150's AXI shim) wait in the controller's queue,
        // and reads go first (PG252/PG150 'Read and Write Coalescing': with
        // reordering on, a safe read CAS wins over a safe write CAS). A
        // queued write goes to the DRAM in a gap: when, at the next arrival,
        // the bus has been free long enough to fit it (precharge, activate,
        // CWL and its burst) before the new request reaches the DRAM; or all
        // at once when the queue is full (`write_queue`), reads then waiting
        // behind them.
        let ch = (line % self.channels.len() as u64) as usize;
        let reaches_dram = now + self.controller;
        let fit = self.t_rp + self.t_rcd + t.t_cwl + self.burst;
        while let Some(&(w, arrived)) = self.channels[ch].mig_writes.front() {
            let channel = &self.channels[ch];
            let gap_start = channel.bus_free.max(arrived + self.controller);
            if gap_start + fit > reaches_dram {
                break;
            }
            self.channels[ch].mig_writes.pop_front();
            self.schedule_mig(arrived, w, true, t);
        }
        if !write {
            return self.schedule_mig(now, line, false, t);
        }
        self.channels[ch].mig_writes.push_back((line, now));
        if self.channels[ch].mig_writes.len() >= t.write_queue {
            let full = std::mem::take(&mut self.channels[ch].mig_writes);
            for (w, _) in full {
                self.schedule_mig(now, w, true, t);
            }
        }
        now + accept
    }

    /// The MIG's DRAM side: `line`'s transaction through its Group FSM,
    /// bank and the channel's bus, from `now`; returns when its data burst
    /// ends.
    fn schedule_mig(&mut self, now: Tick, line: u64, write: bool, t: MigTiming) -> Tick {
        let nch = self.channels.len() as u64;
        let (local, ch_i) = div_mod(line, nch);
        let ch = &mut self.channels[ch_i as usize];
        let nb = ch.banks.len() as u64;
        let (by_bank, bank_i) = div_mod(local, nb);
        let row = div_mod(by_bank, self.lines_per_row).0;
        let group = div_mod(bank_i, t.bank_groups).1 as usize;
        let mut start = (now + self.controller).max(ch.fsm_column[group]);
        // All-bank refresh, one due every tREFI. JESD79-4 lets a controller
        // postpone up to 8 of them, so it issues owed refreshes in idle
        // gaps of the channel (from its last data, or from the first owed
        // refresh's due time, to this access) and makes an access wait only
        // for those beyond 8. A refresh leaves every row closed.
        if let Some(due) = start.checked_div(t.t_refi) {
            let owed = due.saturating_sub(ch.refreshes);
            if owed > 0 {
                let gap_from = ch.bus_free.max((ch.refreshes + 1) * t.t_refi);
                let fit = start.saturating_sub(gap_from) / t.t_rfc.max(1);
                let forced = owed
                    .saturating_sub(fit)
                    .saturating_sub(MAX_POSTPONED_REFRESHES);
                let done = fit.min(owed) + forced;
                if done > 0 {
                    ch.refreshes += done;
                    self.refreshes += done;
                    for b in &mut ch.banks {
                        b.open_row = None;
                    }
                }
                if forced > 0 {
                    start = start.max(ch.bus_free) + forced * t.t_rfc;
                }
            }
        }
        let bank = &mut ch.banks[bank_i as usize];
        start = start.max(bank.ready_at);
        let (activate, kind) = match bank.open_row {
            Some(r) if r == row && self.open_page => (None, 0),
            None => (Some(start), 1),
            // Precharge once write recovery allows, activate tRP later.
            Some(_) => (Some(start.max(bank.write_end + t.t_wr) + self.t_rp), 2),
        };
        self.outcomes[kind] += 1;
        let mut column = start;
        if let Some(at) = activate {
            // tRRD after the channel's last activate, and no more than four
            // in a tFAW window.
            let last = ch.activates[(ch.act_next + 3) % 4];
            let at = at
                .max(last + t.t_rrd)
                .max(ch.activates[ch.act_next] + t.t_faw);
            ch.activates[ch.act_next] = at;
            ch.act_next = (ch.act_next + 1) % 4;
            column = at + self.t_rcd;
        }
        // tCCD_L after the group's last column command.
        column = column.max(ch.fsm_column[group] + t.t_ccd_l);
        let latency = if write { t.t_cwl } else { self.t_cl };
        if write {
            // Read-to-write: the bus idles t_rtw between read and write data.
            column = column.max((ch.read_end + t.t_rtw).saturating_sub(latency));
        } else {
            // Write-to-read: tWTR after the last write's data.
            column = column.max(ch.write_end + t.t_wtr);
        }
        column = column.max(ch.bus_free.saturating_sub(latency));
        let data_start = column + latency;
        let done = data_start + self.burst;
        ch.bus_free = done;
        if write {
            ch.write_end = done;
            bank.write_end = done;
        } else {
            ch.read_end = done;
        }
        ch.fsm_column[group] = column;
        bank.open_row = if self.open_page { Some(row) } else { None };
        bank.ready_at = column + self.burst;
        done
    }

    fn access_ddr4(&mut self, now: Tick, line: u64) -> Tick {
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
    /// A prefetcher in front of another model (CCKit §5.5).
    Prefetched(Box<crate::prefetch::Prefetcher>),
}

impl MemTiming {
    /// Issues an AXI read or write of `line` at `now`; returns when it
    /// completes (data available for a read, accepted for a write).
    pub fn access(&mut self, now: Tick, line: u64, write: bool) -> Tick {
        match self {
            MemTiming::Bram(b) => {
                let start = now.max(b.free_at);
                b.free_at = start + b.line;
                start + b.latency
            }
            MemTiming::Ddr(d) => d.access(now, line, write),
            MemTiming::Prefetched(p) => p.access(now, line, write),
        }
    }

    /// Reads `line` as one line of a multi-line AXI burst: as
    /// [`MemTiming::access`], except that a DDR read path's per-transaction
    /// cost (`read_issue_ns`) is not paid per line.
    pub fn access_burst_line(&mut self, now: Tick, line: u64) -> Tick {
        match self {
            MemTiming::Ddr(d) => d.access_burst_line(now, line),
            other => other.access(now, line, false),
        }
    }
}

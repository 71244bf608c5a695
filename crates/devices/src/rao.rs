//! Remote atomic operations (RAO) offloaded to a NIC (Cohet §V-A, Figs. 8
//! and 9), on a PCIe-NIC and on a CXL-NIC, with the requests coming from
//! CircusTent's processing elements on remote servers.
//!
//! ```text
//!  remote servers: CircusTent PEs (circustent::PeProgram), each waiting
//!  for its atomic's response before sending the next (so PTRCHASE,
//!  SCATTER... send an atomic only once its predecessor's value is back)
//!        │ request (FAA/CAS, word address, operand), network_ns one way
//!        ▼
//!  RX buffer (rx_depth entries; a full buffer holds requests in the network)
//!        ▼
//!  NIC PEs (pes of them): take the oldest request; a request whose line
//!  another PE holds waits with its PE (other PEs go on)
//!   PCIe-NIC (`PcieRaoNic`)                CXL-NIC (`CxlRaoEngine`)
//!   (each DMA transfer set up by the
//!   engine's descriptor stage, in turn)
//!   MRd of the line ──► CplD               DCOH `store`: HMC hit, or RdOwn
//!   ALU (alu_cycles)                       over CXL.cache to the host LLC
//!   MWr of the line (posted)               line LOCKED (snoops wait) for
//!   zero-length MRd ──► Cpl: the write     the modify and write stages;
//!   is in host memory (the RAW hazard's    the result stays in the HMC
//!   acknowledgement)                       until the host asks (a snoop)
//!        ▼
//!  response (the fetched value) back to the remote PE, network_ns
//! ```
//!
//! [`RaoFrontEnd`] is the network side and the PE pool both NICs share:
//! it hands requests to PEs, records the order in which the NIC commits
//! them, and checks every fetched value against the sequential reference
//! ([`Memory::apply`](crate::circustent::Memory::apply) in that commit
//! order), so an atomicity bug shows as a wrong value.
//!
//! The PCIe-NIC's acknowledgement of a posted write is a zero-length read
//! to the same address: a read request may not pass a posted write (PCIe
//! Base Spec 3.0 §2.4.1, Table 2-34, row B column A: "No"), so its
//! completion returns only once the write is in memory; PCIe defines the
//! zero-length read (a 1 DW MRd with no byte enabled) for this flush
//! (§2.2.5). It is modelled as a 4-byte read, the same TLP on the wire.

use std::collections::{BTreeMap, VecDeque};

use ccsim_coherence::agents::line_engine::{EngineOp, LineEngine, LineRmw};
use ccsim_coherence::Line;
use ccsim_kernel::prelude::*;
use ccsim_pcie::msg::{Msg, Tlp};
use ccsim_pcie::tlp::TlpKind;

use crate::circustent::{Atomic, Memory, PeProgram, Target, Workload};

/// Bytes of a cache line (and of the PCIe-NIC's DMA transfers).
pub const LINE: u64 = 64;

/// Where CircusTent's arrays live in host memory: `ARRAY` from
/// `array_base`, `IDX` from the next 4 KiB page after it, 8 bytes a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrayLayout {
    /// Address of `ARRAY[0]`.
    pub array_base: u64,
    /// Address of `IDX[0]`.
    pub idx_base: u64,
    /// Words of `ARRAY`.
    pub array_words: u64,
    /// Words of `IDX`.
    pub idx_words: u64,
}

impl ArrayLayout {
    /// The arrays of `memory` from `base` (line-aligned).
    pub fn new(memory: &Memory, base: u64) -> ArrayLayout {
        let array_words = memory.array.len() as u64;
        let idx_base = (base + array_words * 8).div_ceil(4096) * 4096;
        ArrayLayout {
            array_base: base,
            idx_base,
            array_words,
            idx_words: memory.idx.len() as u64,
        }
    }

    /// The byte address of a word.
    pub fn addr(&self, target: Target, index: u64) -> u64 {
        match target {
            Target::Array => self.array_base + index * 8,
            Target::Idx => self.idx_base + index * 8,
        }
    }

    /// Every line address the arrays cover, in order.
    pub fn lines(&self) -> Vec<u64> {
        let span = |base: u64, words: u64| base / LINE..(base + words * 8).div_ceil(LINE);
        span(self.array_base, self.array_words)
            .chain(span(self.idx_base, self.idx_words))
            .map(|l| l * LINE)
            .collect()
    }

    /// `memory` as the bytes of the lines [`lines`](Self::lines) names
    /// (bytes between the arrays are zero).
    pub fn line_bytes(&self, memory: &Memory, line_addr: u64) -> [u8; LINE as usize] {
        let mut out = [0u8; LINE as usize];
        for (k, chunk) in out.chunks_exact_mut(8).enumerate() {
            let a = line_addr + 8 * k as u64;
            let word = if a >= self.array_base && a < self.array_base + self.array_words * 8 {
                Some(memory.array[((a - self.array_base) / 8) as usize])
            } else if a >= self.idx_base && a < self.idx_base + self.idx_words * 8 {
                Some(memory.idx[((a - self.idx_base) / 8) as usize])
            } else {
                None
            };
            if let Some(w) = word {
                chunk.copy_from_slice(&w.to_le_bytes());
            }
        }
        out
    }

    /// The arrays read back from `read(line_addr)` (a line's 64 bytes).
    pub fn read_back(&self, mut read: impl FnMut(u64) -> Vec<u8>) -> Memory {
        let mut word = |a: u64| {
            let line = read(a / LINE * LINE);
            let o = (a % LINE) as usize;
            u64::from_le_bytes(line[o..o + 8].try_into().expect("8 bytes"))
        };
        Memory {
            array: (0..self.array_words)
                .map(|i| word(self.array_base + i * 8))
                .collect(),
            idx: (0..self.idx_words)
                .map(|i| word(self.idx_base + i * 8))
                .collect(),
        }
    }
}

/// The network side's and the PE pool's parameters.
#[derive(Debug, Clone, Copy)]
pub struct RaoConfig {
    /// The NIC's RAO processing elements (atomics in flight at once).
    pub pes: usize,
    /// RX buffer entries.
    pub rx_depth: usize,
    /// One-way network latency between a remote PE and the NIC.
    pub network: Tick,
    /// Smallest gap between two requests entering the RX buffer (0: as
    /// fast as they arrive: closed loop).
    pub arrival_gap: Tick,
}

/// One RAO request.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// Sequence number, in the order the remote PEs sent them.
    pub id: u64,
    /// The remote PE that sent it.
    pub remote: usize,
    /// The atomic.
    pub atomic: Atomic,
    /// Its word's byte address in host memory.
    pub addr: u64,
    /// When it entered the RX buffer.
    pub admitted: Tick,
}

impl Request {
    /// The read-modify-write of its word, within its line.
    pub fn rmw(&self) -> LineRmw {
        let offset = (self.addr % LINE) as usize;
        match self.atomic {
            Atomic::Add { add, .. } => LineRmw::Add { offset, add },
            Atomic::Cas { expected, new, .. } => LineRmw::Cas {
                offset,
                expected,
                new,
            },
        }
    }

    /// The address of its line.
    pub fn line_addr(&self) -> u64 {
        self.addr / LINE * LINE
    }
}

/// A NIC PE: idle, or holding a request that waits for its line, or
/// working on it.
#[derive(Debug, Clone, Copy)]
enum PeState {
    Idle,
    Waiting(Request),
    Active(Request),
}

/// The network side and the PE pool of a RAO NIC (see the module docs).
#[derive(Debug)]
pub struct RaoFrontEnd {
    cfg: RaoConfig,
    layout: ArrayLayout,
    remotes: Vec<PeProgram>,
    /// The arrays as the NIC's commits left them: the sequential
    /// reference, and the view the remote PEs' CAS kernels read.
    shadow: Memory,
    /// Requests in the network, by arrival time.
    network: BTreeMap<(Tick, u64), Request>,
    /// Responses in the network, by arrival time: (remote PE, value).
    responses: BTreeMap<(Tick, u64), (usize, u64)>,
    rx: VecDeque<Request>,
    /// The earliest time the next request may enter the RX buffer.
    next_admit: Tick,
    pes: Vec<PeState>,
    /// The value each PE's request fetched.
    fetched: Vec<u64>,
    next_id: u64,
    /// Committed atomics, in commit order, with the value fetched.
    commits: Vec<(Atomic, u64)>,
    /// (admitted, released) of every request, in release order.
    times: Vec<(Tick, Tick)>,
    errors: Vec<String>,
}

impl RaoFrontEnd {
    /// The remote PEs of `workload` (one remote server thread each),
    /// every one sending its first atomic at time 0, its arrays at
    /// `layout`.
    pub fn new(workload: &Workload, layout: ArrayLayout, cfg: RaoConfig) -> RaoFrontEnd {
        let mut f = RaoFrontEnd {
            cfg,
            layout,
            remotes: (0..workload.pes()).map(|p| workload.program(p)).collect(),
            shadow: workload.initial().clone(),
            network: BTreeMap::new(),
            responses: BTreeMap::new(),
            rx: VecDeque::new(),
            next_admit: 0,
            pes: vec![PeState::Idle; cfg.pes.max(1)],
            fetched: vec![0; cfg.pes.max(1)],
            next_id: 0,
            commits: Vec::new(),
            times: Vec::new(),
            errors: Vec::new(),
        };
        for r in 0..f.remotes.len() {
            f.send_next(r, None, 0);
        }
        f
    }

    /// Remote PE `r` got `last` back at `now`: it sends its next atomic.
    fn send_next(&mut self, r: usize, last: Option<u64>, now: Tick) {
        if let Some(atomic) = self.remotes[r].next(&self.shadow, last) {
            let (target, index) = atomic.word();
            let req = Request {
                id: self.next_id,
                remote: r,
                atomic,
                addr: self.layout.addr(target, index),
                admitted: 0,
            };
            self.next_id += 1;
            self.network.insert((now + self.cfg.network, req.id), req);
        }
    }

    /// Delivers the responses and admits the requests that have arrived
    /// by `now`, while the RX buffer has room.
    fn advance(&mut self, now: Tick) {
        while let Some((&(at, seq), _)) = self.responses.first_key_value() {
            if at > now {
                break;
            }
            let (r, v) = self.responses.remove(&(at, seq)).expect("present");
            self.send_next(r, Some(v), at);
        }
        while self.rx.len() < self.cfg.rx_depth.max(1) && self.next_admit <= now {
            let Some((&(at, id), _)) = self.network.first_key_value() else {
                break;
            };
            if at > now {
                break;
            }
            let mut req = self.network.remove(&(at, id)).expect("present");
            req.admitted = now;
            self.next_admit = now + self.cfg.arrival_gap;
            self.rx.push_back(req);
        }
    }

    /// The next request a PE starts at `now`, with the PE's index: first a
    /// waiting PE whose line is no longer `busy` (oldest request first),
    /// then an idle PE takes the RX buffer's oldest request (and waits
    /// with it when its line is busy). `busy` says whether a line address
    /// is held.
    pub fn take(
        &mut self,
        now: Tick,
        busy: &mut dyn FnMut(u64) -> bool,
    ) -> Option<(usize, Request)> {
        self.advance(now);
        let mut waiting: Vec<(u64, usize)> = self
            .pes
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                PeState::Waiting(r) => Some((r.id, i)),
                _ => None,
            })
            .collect();
        waiting.sort_unstable();
        let mut claimed: Vec<u64> = Vec::new();
        for (_, i) in waiting {
            let PeState::Waiting(r) = self.pes[i] else {
                unreachable!()
            };
            // An older waiting request for the same line goes first.
            if claimed.contains(&r.line_addr()) {
                continue;
            }
            claimed.push(r.line_addr());
            if !busy(r.line_addr()) {
                self.pes[i] = PeState::Active(r);
                return Some((i, r));
            }
        }
        while let Some(i) = self.pes.iter().position(|s| matches!(s, PeState::Idle)) {
            let Some(r) = self.rx.pop_front() else {
                break;
            };
            self.advance(now);
            if claimed.contains(&r.line_addr()) || busy(r.line_addr()) {
                claimed.push(r.line_addr());
                self.pes[i] = PeState::Waiting(r);
                continue;
            }
            self.pes[i] = PeState::Active(r);
            return Some((i, r));
        }
        None
    }

    /// PE `pe` read the word's old value `old` and wrote the result: the
    /// commit, checked against the sequential reference. Returns the
    /// value written.
    pub fn commit(&mut self, pe: usize, old: u64, now: Tick) -> u64 {
        let PeState::Active(r) = self.pes[pe] else {
            self.errors.push(format!(
                "at {} ns: PE {pe} committed with no request",
                now / NS
            ));
            return old;
        };
        let want = self.shadow.apply(&r.atomic);
        if want != old {
            self.errors.push(format!(
                "at {} ns: request {} ({:?}) fetched {old:#x}, the sequential reference {want:#x}",
                now / NS,
                r.id,
                r.atomic
            ));
        }
        self.commits.push((r.atomic, old));
        self.fetched[pe] = old;
        let (target, index) = r.atomic.word();
        match target {
            Target::Array => self.shadow.array[index as usize],
            Target::Idx => self.shadow.idx[index as usize],
        }
    }

    /// PE `pe` is done at `now`: the response (the fetched value) leaves
    /// for its remote PE, and the PE is free.
    pub fn release(&mut self, pe: usize, now: Tick) {
        let PeState::Active(r) = self.pes[pe] else {
            self.errors.push(format!(
                "at {} ns: PE {pe} released with no request",
                now / NS
            ));
            return;
        };
        self.pes[pe] = PeState::Idle;
        let value = self.fetched[pe];
        self.times.push((r.admitted, now));
        self.responses
            .insert((now + self.cfg.network, r.id), (r.remote, value));
        self.advance(now);
    }

    /// The earliest time after `now` when something arrives (a request at
    /// the RX buffer with room for it, a response at a remote PE), if any.
    pub fn next_wake(&self, now: Tick) -> Option<Tick> {
        let response = self.responses.keys().next().map(|&(t, _)| t);
        let request = (self.rx.len() < self.cfg.rx_depth.max(1))
            .then(|| {
                self.network
                    .keys()
                    .next()
                    .map(|&(t, _)| t.max(self.next_admit))
            })
            .flatten();
        response
            .into_iter()
            .chain(request)
            .min()
            .map(|t| t.max(now))
    }

    /// Requests in the RX buffer.
    pub fn rx_len(&self) -> usize {
        self.rx.len()
    }

    /// Requests in the network (sent, not yet in the RX buffer).
    pub fn network_len(&self) -> usize {
        self.network.len()
    }

    /// Whether there is work the PEs could start (a waiting PE or a
    /// request in the RX buffer).
    pub fn has_work(&self) -> bool {
        !self.rx.is_empty() || self.pes.iter().any(|s| matches!(s, PeState::Waiting(_)))
    }

    /// Whether every remote PE is done and nothing is in flight.
    pub fn done(&self) -> bool {
        self.network.is_empty()
            && self.responses.is_empty()
            && self.rx.is_empty()
            && self.pes.iter().all(|s| matches!(s, PeState::Idle))
    }

    /// The committed atomics in commit order, with the value each fetched.
    pub fn commits(&self) -> &[(Atomic, u64)] {
        &self.commits
    }

    /// (admitted, released) per request, in release order.
    pub fn times(&self) -> &[(Tick, Tick)] {
        &self.times
    }

    /// Values that differed from the sequential reference.
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// The arrays after every commit: the sequential reference applied in
    /// the NIC's commit order.
    pub fn reference(&self) -> &Memory {
        &self.shadow
    }

    /// The arrays' layout.
    pub fn layout(&self) -> ArrayLayout {
        self.layout
    }

    /// RAOs completed per second, from the first request's admission to
    /// the last release (0 with none).
    pub fn throughput_per_s(&self) -> f64 {
        let first = self.times.iter().map(|t| t.0).min();
        let last = self.times.iter().map(|t| t.1).max();
        match (first, last) {
            (Some(a), Some(b)) if b > a => self.times.len() as f64 / ((b - a) as f64 * 1e-12),
            _ => 0.0,
        }
    }
}

/// The CXL-NIC's RAO PEs on the DCOH (Cohet Fig. 9): a [`LineEngine`]
/// whose operations are the requests' read-modify-writes; each holds its
/// line locked for `hold` after the DCOH delivers it (the modify and write
/// stages).
#[derive(Debug)]
pub struct CxlRaoEngine {
    front: RaoFrontEnd,
    hold: Tick,
}

impl CxlRaoEngine {
    /// PEs behind `front`, each holding its line `hold` after the read.
    pub fn new(front: RaoFrontEnd, hold: Tick) -> CxlRaoEngine {
        CxlRaoEngine { front, hold }
    }

    /// The network side, for results.
    pub fn front(&self) -> &RaoFrontEnd {
        &self.front
    }
}

impl LineEngine for CxlRaoEngine {
    fn poll(&mut self, now: Tick, busy: &mut dyn FnMut(u64) -> bool) -> Option<EngineOp> {
        let (pe, r) = self.front.take(now, &mut |addr| busy(addr / LINE))?;
        Some(EngineOp {
            id: pe as u64,
            line: r.addr / LINE,
            rmw: r.rmw(),
        })
    }

    fn next_wake(&self, now: Tick) -> Option<Tick> {
        self.front.next_wake(now)
    }

    fn acquired(&mut self, id: u64, old: &Line, _new: &Line, now: Tick) -> Tick {
        let pe = id as usize;
        let offset = match self.front.pes[pe] {
            PeState::Active(r) => r.rmw(),
            _ => LineRmw::Add { offset: 0, add: 0 },
        };
        let old_word = offset.word(old);
        self.front.commit(pe, old_word, now);
        self.hold
    }

    fn released(&mut self, id: u64, now: Tick) {
        self.front.release(id as usize, now);
    }

    fn done(&self) -> bool {
        self.front.done()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The declaration of `rao_pcie_nic`.
pub static RAO_PCIE_NIC: ComponentSpec = ComponentSpec {
    type_name: "rao_pcie_nic",
    description: "A PCIe-NIC that offloads remote atomics (Cohet §V-A1, Fig. 8a): each RAO is a DMA read of the word's line from host memory, the ALU operation, a posted DMA write of the line, and a zero-length read whose completion acknowledges the write; a later RAO on the same line waits for that acknowledgement (the RAW hazard). Built by the cohet-rao workload from its parameters, not a platform component.",
    params: &[],
    ports: &[PortSpec {
        name: "pcie",
        description: "TLPs to and from the PCIe link (the NIC is the bus master).",
        required: true,
    }],
    stats: &[
        StatSpec { name: "raos", kind: StatKind::Counter, unit: "RAOs", description: "RAOs completed (write acknowledged)." },
        StatSpec { name: "dma_reads", kind: StatKind::Counter, unit: "TLPs", description: "MRd TLPs of lines." },
        StatSpec { name: "dma_writes", kind: StatKind::Counter, unit: "TLPs", description: "MWr TLPs of lines." },
        StatSpec { name: "flush_reads", kind: StatKind::Counter, unit: "TLPs", description: "Zero-length MRd TLPs acknowledging a write." },
    ],
    check: None,
};

const ST_RAOS: usize = 0;
const ST_READS: usize = 1;
const ST_WRITES: usize = 2;
const ST_FLUSHES: usize = 3;

/// The bytes a zero-length read moves on the wire: one DW with no byte
/// enabled (PCIe 3.0 §2.2.5).
const FLUSH_BYTES: u32 = 4;

/// The PCIe-NIC (see [`RAO_PCIE_NIC`] and the module docs). Tags: PE `p`
/// reads its line with tag `2p` and acknowledges its write with `2p + 1`.
#[derive(Debug)]
pub struct PcieRaoNic {
    front: RaoFrontEnd,
    /// A request's parsing before its read is issued.
    parse: Tick,
    /// The ALU operation.
    alu: Tick,
    /// The DMA engine's setup of one transfer (its descriptor stage),
    /// which every transfer of every PE passes through in turn.
    dma_setup: Tick,
    /// When the descriptor stage is free.
    dma_free_at: Tick,
    /// Lines with a RAO in flight (the hazard table).
    held: Vec<Option<u64>>,
    /// Lines read, by PE, while their completions come in.
    reads: Vec<Vec<u8>>,
    /// Timed steps: (time, sequence) -> (PE, step).
    steps: BTreeMap<(Tick, u64), (usize, Step)>,
    seq: u64,
    /// Whether a RAO waits for the acknowledgement of the last write to
    /// its line (false: a broken NIC, to show the hazard).
    raw_hazard: bool,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    /// Send the line's MRd.
    Read,
    /// The ALU is done: send the MWr and the zero-length MRd.
    Write,
}

impl PcieRaoNic {
    /// A NIC with the PEs and network of `front`; `parse` before each read
    /// and `alu` before each write; each of the two DMA transfers of a RAO
    /// waits for the engine's descriptor stage, `dma_setup` a transfer.
    pub fn new(front: RaoFrontEnd, parse: Tick, alu: Tick, dma_setup: Tick) -> PcieRaoNic {
        let pes = front.pes.len();
        PcieRaoNic {
            front,
            parse,
            alu,
            dma_setup,
            dma_free_at: 0,
            held: vec![None; pes],
            reads: vec![Vec::new(); pes],
            steps: BTreeMap::new(),
            seq: 0,
            raw_hazard: true,
        }
    }

    /// The same NIC without its hazard table: a RAO does not wait for the
    /// acknowledgement of an earlier write to its line, so two RAOs on one
    /// word can read the same old value (a lost update the checks catch).
    pub fn without_raw_hazard(mut self) -> PcieRaoNic {
        self.raw_hazard = false;
        self
    }

    /// The network side, for results.
    pub fn front(&self) -> &RaoFrontEnd {
        &self.front
    }

    /// Schedules a DMA transfer that is ready at `ready`: it leaves once
    /// the descriptor stage has set it up.
    fn transfer(&mut self, ready: Tick, pe: usize, step: Step, ctx: &mut Ctx<'_, Msg>) {
        let at = ready.max(self.dma_free_at) + self.dma_setup;
        self.dma_free_at = at;
        self.later(at, pe, step, ctx);
    }

    fn later(&mut self, at: Tick, pe: usize, step: Step, ctx: &mut Ctx<'_, Msg>) {
        self.steps.insert((at, self.seq), (pe, step));
        self.seq += 1;
        ctx.wake_at(at, 0);
    }

    fn request(&self, pe: usize) -> Request {
        match self.front.pes[pe] {
            PeState::Active(r) => r,
            _ => unreachable!("PE {pe} has a step but no request"),
        }
    }

    /// Runs the steps due, starts what the PEs can take, and wakes for the
    /// next arrival.
    fn step(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let now = ctx.now();
        while let Some((&key, &(pe, step))) = self.steps.first_key_value() {
            if key.0 > now {
                break;
            }
            self.steps.remove(&key);
            let r = self.request(pe);
            match step {
                Step::Read => {
                    ctx.count(ST_READS, 1);
                    self.reads[pe].clear();
                    ctx.send(
                        0,
                        Msg::tlp(Tlp::read(r.line_addr(), LINE as u32, 2 * pe as u16)),
                        0,
                        0,
                    );
                }
                Step::Write => {
                    let mut line: Line = [0; ccsim_coherence::LINE_BYTES];
                    line[..LINE as usize].copy_from_slice(&self.reads[pe]);
                    let rmw = r.rmw();
                    let new = rmw.apply(&line);
                    self.front.commit(pe, rmw.word(&line), now);
                    ctx.count(ST_WRITES, 1);
                    ctx.send(
                        0,
                        Msg::tlp(Tlp::write(r.line_addr(), new[..LINE as usize].to_vec())),
                        0,
                        0,
                    );
                    ctx.count(ST_FLUSHES, 1);
                    ctx.send(
                        0,
                        Msg::tlp(Tlp::read(r.line_addr(), FLUSH_BYTES, 2 * pe as u16 + 1)),
                        0,
                        0,
                    );
                }
            }
        }
        loop {
            let (held, hazard) = (&self.held, self.raw_hazard);
            let Some((pe, r)) = self
                .front
                .take(now, &mut |line| hazard && held.contains(&Some(line)))
            else {
                break;
            };
            self.held[pe] = Some(r.line_addr());
            self.transfer(now + self.parse, pe, Step::Read, ctx);
        }
        if let Some(at) = self.front.next_wake(now) {
            ctx.wake_at(at, 0);
        }
    }
}

impl Component<Msg> for PcieRaoNic {
    fn spec(&self) -> &'static ComponentSpec {
        &RAO_PCIE_NIC
    }

    fn init(&mut self, ctx: &mut Ctx<'_, Msg>) {
        self.step(ctx);
    }

    fn on_message(&mut self, _port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let Msg::Tlp(t) = msg else {
            return;
        };
        if t.kind != TlpKind::CplD {
            return;
        }
        let pe = (t.tag / 2) as usize;
        let now = ctx.now();
        if t.tag % 2 == 0 {
            self.reads[pe].extend_from_slice(&t.data);
            if t.is_last_completion() {
                // The ALU, then the write's transfer (its zero-length read
                // follows it without a setup of its own).
                self.transfer(now + self.alu, pe, Step::Write, ctx);
            }
        } else if t.is_last_completion() {
            // The write is acknowledged: the line is free, the response
            // leaves.
            ctx.count(ST_RAOS, 1);
            self.held[pe] = None;
            self.front.release(pe, now);
            self.step(ctx);
        }
    }

    fn on_wake(&mut self, _token: u64, ctx: &mut Ctx<'_, Msg>) {
        self.step(ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circustent::{Kind, Pattern};

    fn front(pattern: Pattern, pes: usize) -> RaoFrontEnd {
        let w = Workload::new(pattern, Kind::Add, 4, 10, 1024, 1, 3).unwrap();
        let layout = ArrayLayout::new(w.initial(), 1 << 20);
        RaoFrontEnd::new(
            &w,
            layout,
            RaoConfig {
                pes,
                rx_depth: 2,
                network: 100,
                arrival_gap: 0,
            },
        )
    }

    #[test]
    fn the_layout_round_trips_the_arrays() {
        let w = Workload::new(Pattern::Rand, Kind::Add, 2, 10, 100, 1, 3).unwrap();
        let l = ArrayLayout::new(w.initial(), 1 << 20);
        assert_eq!(l.idx_base, (1 << 20) + 4096);
        let mut host = BTreeMap::new();
        for a in l.lines() {
            host.insert(a, l.line_bytes(w.initial(), a).to_vec());
        }
        assert_eq!(&l.read_back(|a| host[&a].clone()), w.initial());
    }

    #[test]
    fn the_rx_buffer_bounds_admission_and_a_busy_line_waits_with_its_pe() {
        let mut f = front(Pattern::Central, 3);
        // Nothing has arrived before the network's latency.
        assert!(f.take(50, &mut |_| false).is_none());
        assert_eq!(f.next_wake(50), Some(100));
        // Four requests arrived, two fit in the RX buffer; every one is on
        // ARRAY[0]'s line: the first PE goes, the next waits with its PE.
        let (pe, r) = f.take(100, &mut |_| false).unwrap();
        assert_eq!((pe, r.id), (0, 0));
        // The PE's take made room for one more: two in the buffer, one
        // still held in the network.
        assert_eq!((f.rx_len(), f.network_len()), (2, 1));
        let line = r.line_addr();
        assert!(f.take(100, &mut |l| l == line).is_none());
        // Both other PEs hold a request for the busy line; the last request
        // entered the buffer as they took theirs.
        assert_eq!((f.rx_len(), f.network_len()), (1, 0));
        // A commit fetches the reference's value; the release frees the
        // line for the waiting PE (oldest first).
        let old = f.reference().array[0];
        assert_eq!(f.commit(pe, old, 110), old + 1);
        f.release(pe, 120);
        let (pe2, r2) = f.take(120, &mut |_| false).unwrap();
        assert_eq!((pe2, r2.id), (1, 1));
        assert!(f.errors().is_empty());
        // A wrong fetched value is an error.
        f.commit(pe2, 0xdead, 130);
        assert_eq!(f.errors().len(), 1);
    }
}

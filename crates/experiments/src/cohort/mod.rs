//! `cohort_accel` — Cohort §5–§6 (Figs. 8–11, Table 3): a core feeds the
//! SHA-256 or AES-128 accelerator x 64-bit words and collects the results,
//! through the Cohort engine on SPSC queues (with a batch), by MMIO, or by
//! coherent DMA through the MAPLE-like unit; the whole benchmark's latency
//! in kilocycles and the core's IPC.
//!
//! * **The SoC** is `ccsim_devices::cohort` built from the platform
//!   (`openpiton`): an `ariane_core`, a `cohort_engine` and a `maple_unit`
//!   instance, and the coherence transactions' cycles measured on the
//!   verified P-Mesh table in `[systems.pmesh]` ([`pmesh_timing`]: a load
//!   the L2 answers, one it forwards to the owner, a store to a line nobody
//!   holds, one that invalidates a sharer, one forwarded to the owner).
//!   Cycles are 10 ns (Cohort §5: 100 MHz).
//! * **The benchmark's own work**, the same in every mode: each input word
//!   is loaded from a plaintext array in memory and each result is stored
//!   into a results array (the core's loads and stores, in time; IPC counts
//!   them as the paper's counters count the whole benchmark, §5.1, §6.2).
//! * **Cohort** (§5.3: "Benchmarks in Cohort initialise the SPSC queues then
//!   push and pop the data in sequence"): `cohort_register`, then per batch
//!   the core pushes `batch` words (publishing the write index at the
//!   batch's end) and pops every result the pushed blocks give as it comes
//!   (each pop whose copy of the write index says empty re-reads the
//!   output queue's control line, which the engine's WCM keeps taking back;
//!   publishing the read index every `batch` results), then
//!   `cohort_unregister`. The queue library's index checks are cached
//!   (FastForward) or every call (`index_check`; see `queue`).
//! * **MMIO**: per block, each input word an MMIO store (posted: the core
//!   goes on, but the next uncached access waits for its acknowledgement,
//!   as Ariane's write buffer makes it), then each result word an MMIO
//!   load (answered when it exists; the core retires nothing while it
//!   waits).
//! * **DMA**: per 256 B, the core copies the words into the source buffer,
//!   calls the API (its instructions and four MMIO stores), polls the
//!   status register (a turn per MMIO round trip, retiring its loop), then
//!   loads the results the unit's non-caching stores (SWAPWB_REQ) left at
//!   the L2.
//! * **Checked**: every digest or ciphertext equals RustCrypto's reference
//!   on the same blocks (the point fails otherwise).

use std::collections::BTreeMap;

use ccsim_devices::accel::Accelerator;
use ccsim_devices::cohort::core::Device;
use ccsim_devices::cohort::maple::{
    Maple, REG_DMA_DST, REG_DMA_GO, REG_DMA_LEN, REG_DMA_SRC, REG_DMA_STATUS, REG_IN, REG_KEY_HI,
    REG_KEY_LO, REG_OUT,
};
use ccsim_devices::cohort::queue::{
    cohort_register, cohort_unregister, fifo_init, pop, publish_read, publish_write, push, Fifo,
    IndexCheck, PublishFences, POLL_INSTRUCTIONS, POP_INSTRUCTIONS, PUSH_INSTRUCTIONS,
};
use ccsim_devices::cohort::{Cycle, Soc, Timing, LINE};
use ccsim_kernel::prelude::*;
use ccsim_platform::{BuildOptions, Platform};

use crate::{werr, whole_number, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// The SoC clock's period (Cohort §5: 100 MHz).
const CYCLE_NS: f64 = 10.0;
/// The AES key the CSR struct carries (FIPS-197 Appendix C.1's).
pub const AES_KEY: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
/// Where the benchmark's buffers live (virtual).
const IN_VA: u64 = 0x10_0000_0000;
const OUT_VA: u64 = 0x20_0000_0000;
const CSR_VA: u64 = 0x30_0000_0000;
/// The benchmark's plaintext array and results array (every mode).
const PLAIN_VA: u64 = 0x60_0000_0000;

/// The declaration of `cohort_accel`.
pub static COHORT_ACCEL: WorkloadInfo = WorkloadInfo {
    name: "cohort_accel",
    description: "Cohort Figs. 8-11: a core streams x 64-bit words through the SHA-256 or AES-128 accelerator and collects the digests or ciphertext: through the Cohort engine on SPSC queues in memory (batched index updates), by MMIO round trips, or by coherent DMA through a MAPLE-like unit; latency in kilocycles and the core's IPC, every output checked against RustCrypto.",
    params: &[
        ParamSpec { name: "accel", kind: ParamKind::Enum(&["sha256", "aes128", "axis_fifo"]), default: ParamDefault::Str("sha256"), unit: "", range: ParamRange::ANY, from: "Cohort §5.2: the SHA-256 and AES-128 accelerators (valid-ready); §4.2: the AXI-Stream FIFO the authors demonstrated AXI-Stream with, as a \"null\" accelerator (packets of 8 words, 2 cycles: assumed)", description: "The accelerator: sha256 or aes128 on valid-ready handshakes, or axis_fifo, the null accelerator on AXI-Stream (TLAST on each 8-word packet, checked by the unit; the words come back unchanged)." },
        ParamSpec { name: "mode", kind: ParamKind::Enum(&["cohort", "mmio", "dma"]), default: ParamDefault::Str("cohort"), unit: "", range: ParamRange::ANY, from: "Cohort Table 2: communication modes Cohort, MMIO, DMA", description: "How the core reaches the accelerator." },
        ParamSpec { name: "batch", kind: ParamKind::Int, default: ParamDefault::Int(64), unit: "elements", range: ParamRange::between(2.0, 64.0), from: "Cohort Table 2: batching factor 2 to 64", description: "Cohort: elements between index publications." },
        ParamSpec { name: "index_check", kind: ParamKind::Enum(&["every_pop", "cached", "every_call"]), default: ParamDefault::Str("every_pop"), unit: "", range: ParamRange::ANY, from: "every_pop: the Cohort authors' C queue and AES benchmark (cohort-project/cohort-soc, piton/verif/diag/assembly/include/riscv/ariane/cohort_fifo.h fifo_pop_64/fifo_push_64, cohort_linux/cohort_aes_base.c); cached is the FastForward discipline, every_call what the Cohort project's public Rust queue (CohortFifo) does", description: "Cohort: every_pop: each pop loads the write index, pushes never check; cached: each side re-reads the other's index only when its copy says empty or full; every_call: each push and pop loads it." },
        ParamSpec { name: "padded", kind: ParamKind::Bool, default: ParamDefault::Bool(true), unit: "", range: ParamRange::ANY, from: "the Cohort authors' C queue (cohort_fifo.h fifo_init): head, tail and descriptor each memalign(128, 128), a line of their own; false: both indices on one line (§6.1's 'false sharing on the read and write pointers' read literally)", description: "Whether each queue's read index has a line of its own." },
    ],
    check: None,
    metrics: &[
        MetricSpec { name: "latency_kcycles", unit: "kcycles", description: "The benchmark from its first instruction to its last result, in thousands of 100 MHz cycles." },
        MetricSpec { name: "ipc", unit: "instructions/cycle", description: "The core's retired instructions over the benchmark's cycles." },
        MetricSpec { name: "instructions", unit: "instructions", description: "Instructions the core retired." },
        MetricSpec { name: "invalidations", unit: "lines", description: "Copies invalidated by coherence." },
    ],
    run,
};

/// The coherence cycles, measured by running the verified P-Mesh table
/// (`protocols/pmesh.toml`) in the platform's `[systems.pmesh]`: tile 1
/// first stores or loads the lines a kind needs held elsewhere, then tile
/// 0's program makes one access of each kind, one at a time, and each
/// access's issue-to-completion time, in cycles (rounded up), is that
/// kind's cost. A NoC crossing (for MMIO and interrupts) is the system's
/// link + mesh hop + link.
pub fn pmesh_timing(platform: &Platform, load_hit: Cycle) -> Result<Timing, RunError> {
    let decl = platform.system("pmesh").map_err(RunError::Config)?;
    let mut s = platform
        .build(
            "pmesh",
            BuildOptions {
                seed: 0,
                trace: TraceMode::Hash,
                checks: true,
                tester: None,
            },
        )
        .map_err(RunError::Config)?;
    let tiles = crate::program_run::role_agents(&s, "l15", "pmesh")?;
    // Tile 0's accesses, each on a line set up for its kind: 0 a cold
    // load, 2 a cold store, 1 a load of a line tile 1 holds M, 3 a store
    // to a line tiles 1 and 2 hold S, 4 a store to a line tile 1 holds M,
    // 0 again a load hit, 6 a load of a line tile 1 holds E, 7 a store to
    // a line tile 1 holds E, 8 a load then a store to a line tile 1 held
    // E (the store invalidates one other sharer, line 3's two).
    s.agent_mut(tiles[1])
        .set_program(
            &[
                (1, "store"),
                (3, "load"),
                (4, "store"),
                (6, "load"),
                (7, "load"),
                (8, "load"),
            ],
            1,
        )
        .map_err(werr)?;
    if let Some(&third) = tiles.get(2) {
        s.agent_mut(third)
            .set_program(&[(3, "load")], 1)
            .map_err(werr)?;
        s.agent_mut(third).start_program_at(5 * US);
    } else {
        return Err(werr("system pmesh: the timing probe needs three l15 tiles"));
    }
    let ops = [
        (0, "load"),
        (2, "store"),
        (1, "load"),
        (3, "store"),
        (4, "store"),
        (0, "load"),
        (6, "load"),
        (7, "store"),
        (8, "load"),
        (8, "store"),
    ];
    s.agent_mut(tiles[0]).set_program(&ops, 1).map_err(werr)?;
    // Tile 0's accesses to the lines the others hold wait until they have them.
    let later = 10 * US;
    let mut release = vec![later; ops.len()];
    release[..2].fill(0);
    s.agent_mut(tiles[0])
        .set_program_release(release)
        .map_err(werr)?;
    s.sim.run();
    crate::program_run::no_violation(&s)?;
    let times = s.agent(tiles[0]).program_times().to_vec();
    if times.iter().any(|&(_, end)| end == 0) {
        return Err(werr(
            "system pmesh: an access of the timing probe never completed",
        ));
    }
    let cyc = |i: usize| {
        ((times[i].1 - times[i].0) as f64 / (CYCLE_NS * 1000.0))
            .ceil()
            .max(1.0) as Cycle
    };
    let ns = |instance: &str, p: &str| -> Result<f64, RunError> {
        Ok(platform
            .component(instance)
            .map_err(RunError::Config)?
            .params
            .float(p))
    };
    let link = decl
        .links
        .first()
        .ok_or_else(|| werr("system pmesh: no links"))?;
    let mesh = decl
        .components
        .first()
        .ok_or_else(|| werr("system pmesh: no mesh"))?;
    let crossing = 2.0 * ns(&link.instance, "latency_ns")? + ns(&mesh.instance, "hop_ns")?;
    Ok(Timing {
        load_hit,
        l15_hit: cyc(5),
        load_miss: cyc(0),
        load_fwd: cyc(2),
        load_fwd_clean: cyc(6),
        store_miss: cyc(1),
        store_inv: cyc(9),
        store_inv_extra: cyc(3).saturating_sub(cyc(9)),
        store_fwd: cyc(4),
        store_fwd_clean: cyc(7),
        noc_one_way: (crossing / CYCLE_NS).ceil().max(1.0) as Cycle,
    })
}

/// What one run gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Cycles from the first instruction to the last result.
    pub cycles: Cycle,
    /// Instructions retired.
    pub instructions: u64,
    /// The results popped, in order.
    pub results: Vec<u64>,
    /// Copies invalidated.
    pub invalidations: u64,
    /// The run's counters, by dotted name (see [`soc_stats`]).
    pub stats: BTreeMap<String, f64>,
}

/// The SoC's counters: coherence transactions by kind, core 0's
/// instructions, stalls and MMIO accesses, each engine's endpoints and
/// MMU, the baseline unit's accesses and transfers.
pub fn soc_stats(soc: &Soc) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    let c = &soc.world.counts;
    for (k, v) in [
        ("hits", c.hits),
        ("load_misses", c.load_misses),
        ("load_fwds", c.load_fwds),
        ("store_misses", c.store_misses),
        ("store_invs", c.store_invs),
        ("store_fwds", c.store_fwds),
        ("invalidations", c.invalidations),
        ("subline_fills", c.subline_fills),
        ("l1d_misses", c.l1d_misses),
        ("l15_evictions", c.l15_evictions),
        ("l15_writebacks", c.l15_writebacks),
        ("l2_evictions", c.l2_evictions),
        ("l2_back_invalidations", c.l2_back_invalidations),
    ] {
        m.insert(format!("coherence.{k}"), v as f64);
    }
    let core = &soc.world.cores[0];
    m.insert("core0.retired".into(), core.retired as f64);
    m.insert("core0.spin_retired".into(), core.spin_retired as f64);
    m.insert("core0.load_stall_cycles".into(), core.load_stall as f64);
    m.insert("core0.wait_cycles".into(), core.wait_cycles as f64);
    m.insert("core0.wait_retired".into(), core.wait_retired as f64);
    m.insert("core0.fence_cycles".into(), core.fence_cycles as f64);
    m.insert("core0.mmio".into(), core.mmio as f64);
    m.insert("core0.accesses".into(), core.accesses as f64);
    for e in &soc.engines {
        let p = format!("engine{}", e.id);
        let st = &e.stats;
        for (k, v) in [
            ("consumed", st.consumed),
            ("produced", st.produced),
            ("rcm_invalidations", st.invalidations),
            ("rereads", st.rereads),
            ("publishes", st.publishes),
            ("republishes", st.republishes),
            ("head_rereads", st.head_rereads),
            ("publish_misses", st.publish_misses),
            ("read_index_misses", st.read_index_misses),
            ("backoff_cycles", st.backoff_cycles),
            ("reread_cycles", st.reread_cycles),
            ("read_index_cycles", st.read_index_cycles),
            ("wcm_data_cycles", st.wcm_data_cycles),
            ("wcm_pointer_cycles", st.wcm_pointer_cycles),
            ("tlb_hits", e.mmu.hits),
            ("walks", e.mmu.walks),
            ("page_faults", e.mmu.faults),
            ("tlb_flushes", e.mmu.flushes),
            ("accel_blocks", e.accel.blocks),
        ] {
            m.insert(format!("{p}.{k}"), v as f64);
        }
    }
    m.insert("maple.accesses".into(), soc.maple.accesses as f64);
    m.insert("maple.transfers".into(), soc.maple.transfers as f64);
    m.insert("maple.accel_blocks".into(), soc.maple.accel.blocks as f64);
    m
}

/// Words in the benchmark's plaintext array, which the input cycles
/// through (the Cohort authors' AES benchmark: `static uint64_t
/// plain[NUM_WORDS]`, `NUM_WORDS 32`, pushed as `plain[i % NUM_WORDS]`;
/// cohort_linux/cohort_aes_base.c in cohort-project/cohort-soc).
pub const PLAIN_WORDS: u64 = 32;

/// The benchmark's input: `n` words, a fixed pattern of
/// [`PLAIN_WORDS`] words repeated.
pub fn input_words(n: u64) -> Vec<u64> {
    (0..n)
        .map(|i| {
            let mut z = (i % PLAIN_WORDS).wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb)
        })
        .collect()
}

/// The reference results of `words` (RustCrypto through the ratchets).
pub fn reference(accel: &str, words: &[u64]) -> Vec<u64> {
    if accel == "axis_fifo" {
        // The null accelerator's output is its input: checked against the
        // words themselves, not against another run of the unit.
        return words.to_vec();
    }
    let mut a = make_accel(accel);
    let mut out = Vec::new();
    for &w in words {
        a.push_word(0, w);
        while let Some(v) = a.pop_word() {
            out.push(v);
        }
    }
    out
}

/// The null AXI-Stream accelerator's packet: one 64 B line of words
/// (assumed; Cohort §4.2 names the FIFO, not its configuration).
const AXIS_FIFO_PACKET_WORDS: usize = 8;
/// The FIFO's cycles from a packet's TLAST to its first word out (assumed).
const AXIS_FIFO_CYCLES: u64 = 2;

fn make_accel(accel: &str) -> Accelerator {
    // One tick a cycle: the accelerator's clock is the SoC's.
    match accel {
        "aes128" => Accelerator::aes128(AES_KEY, 1e6),
        "axis_fifo" => Accelerator::axis_fifo(AXIS_FIFO_PACKET_WORDS, AXIS_FIFO_CYCLES, 1e6),
        _ => Accelerator::sha256(1e6),
    }
}

/// The SoC's parameters from the platform.
#[derive(Debug, Clone)]
pub struct SocParams {
    /// Coherence cycles.
    pub timing: Timing,
    /// Store-buffer entries.
    pub store_buffer: usize,
    /// The engine's loads in flight.
    pub engine_mshrs: usize,
    /// The RCM's backoff.
    pub backoff: Cycle,
    /// MAPLE's cycles per access.
    pub maple_mmio: Cycle,
    /// MAPLE's prefetches in flight.
    pub maple_mshrs: usize,
    /// The DMA API's instructions per block.
    pub dma_api_instructions: u64,
    /// Bytes per DMA.
    pub dma_block_bytes: u64,
    /// The unit's setup of a DMA.
    pub dma_setup: Cycle,
    /// Bytes of a tile's L1.5 line.
    pub l15_line: u64,
    /// The caches' capacities (L1D, L1.5, the L2's slices).
    pub caches: ccsim_devices::cohort::Caches,
}

fn one<'a>(platform: &'a Platform, ty: &str) -> Result<&'a Params, RunError> {
    platform
        .instances_of(ty)
        .first()
        .map(|(_, c)| &c.params)
        .ok_or_else(|| werr(format!("platform {}: no {ty} component", platform.name)))
}

impl SocParams {
    /// From the platform's components.
    pub fn from_platform(platform: &Platform) -> Result<SocParams, RunError> {
        let core = one(platform, "ariane_core")?;
        let engine = one(platform, "cohort_engine")?;
        let maple = one(platform, "maple_unit")?;
        let l15 = one(platform, "pmesh_l15")?;
        let l15_line = l15.uint("line_bytes");
        // Validated here, once, with the parameter's path.
        ccsim_devices::cohort::check_l15_line(l15_line).map_err(|e| {
            werr(format!(
                "platform {}: pmesh_l15.line_bytes: {e}",
                platform.name
            ))
        })?;
        let l2 = one(platform, "pmesh_l2")?;
        let geometry = |bytes: u64, ways: u64, line: u64| ccsim_devices::cohort::cache::Geometry {
            bytes,
            ways,
            line,
        };
        let caches = ccsim_devices::cohort::Caches {
            l1d: geometry(
                core.uint("l1d_bytes"),
                core.uint("l1d_ways"),
                core.uint("l1d_line_bytes"),
            ),
            l15: geometry(l15.uint("capacity_bytes"), l15.uint("ways"), l15_line),
            l2: geometry(l2.uint("slice_bytes"), l2.uint("ways"), LINE),
            slices: l2.uint("slices"),
        };
        caches
            .check()
            .map_err(|e| werr(format!("platform {}: caches: {e}", platform.name)))?;
        Ok(SocParams {
            caches,
            timing: pmesh_timing(platform, core.uint("load_hit_cycles"))?,
            store_buffer: core.uint("store_buffer_entries") as usize,
            engine_mshrs: engine.uint("mshrs") as usize,
            backoff: engine.uint("backoff_cycles"),
            maple_mmio: maple.uint("mmio_cycles"),
            maple_mshrs: maple.uint("mshrs") as usize,
            dma_api_instructions: maple.uint("dma_api_instructions"),
            dma_block_bytes: maple.uint("dma_block_bytes"),
            dma_setup: maple.uint("dma_setup_cycles"),
            l15_line,
        })
    }

    /// A SoC with two cores, one engine and the unit, both hosting `accel`.
    pub fn soc(&self, accel: &str) -> Soc {
        let mut maple = Maple::new(0, make_accel(accel), self.maple_mmio, self.maple_mshrs);
        maple.dma_setup = self.dma_setup;
        let mut soc = Soc::new(
            self.timing.clone(),
            2,
            self.store_buffer,
            vec![make_accel(accel)],
            self.engine_mshrs,
            maple,
        );
        soc.world
            .set_l15_line(self.l15_line)
            .expect("checked by from_platform");
        soc.world
            .set_caches(self.caches)
            .expect("checked by from_platform");
        soc
    }
}

/// Maps the AES engine's CSR struct (its key, the only configuration AES
/// needs: §4.2's CSR pointer) at `CSR_VA`, outside time; returns its
/// address for `cohort_register`.
fn map_aes_csr(soc: &mut Soc) -> u64 {
    soc.map(CSR_VA, 4096);
    for (off, half) in [(0, &AES_KEY[..8]), (8, &AES_KEY[8..])] {
        soc.poke(
            CSR_VA + off,
            u64::from_le_bytes(half.try_into().expect("8 bytes")),
        );
    }
    CSR_VA
}

/// The benchmark's own data, the same in every mode, as the Cohort
/// authors' AES benchmark has it (cohort_linux/cohort_aes_base.c in
/// cohort-project/cohort-soc, l. 53-69, 227, 233-235): a static plaintext
/// array of [`PLAIN_WORDS`] words the core loads each input word from
/// (written with the kernel's hands, before timing starts; after the
/// first pass every load hits), and an accumulator the core adds each
/// result to (a register: no store). Mapped here; the loads are the
/// core's, in time. (The baselines' programs, `dcpn_aes.c` and
/// `dma_aes.c` in the same Makefile, are not in the snapshot: they are
/// assumed to share the frame.)
fn map_benchmark_data(soc: &mut Soc, words: &[u64]) {
    soc.map(PLAIN_VA, 4096);
    for (i, &w) in words.iter().take(PLAIN_WORDS as usize).enumerate() {
        soc.poke(PLAIN_VA + 8 * i as u64, w);
    }
}

/// Core `c` reads input word `i` from the plaintext array (one load).
fn read_input(soc: &mut Soc, c: usize, i: usize) -> u64 {
    soc.load(c, PLAIN_VA + 8 * (i as u64 % PLAIN_WORDS))
}

/// Core `c` adds a result to its accumulator (one instruction).
fn keep_result(soc: &mut Soc, c: usize) {
    soc.exec(c, 1);
}

/// Runs the Cohort benchmark: `n` words, `batch`, with the Cohort authors'
/// C library's index checks (each pop loads the write index; the
/// workload's default).
pub fn run_cohort(p: &SocParams, accel: &str, n: u64, batch: u64, padded: bool) -> Outcome {
    run_cohort_with(p, accel, n, batch, padded, IndexCheck::EveryPop)
}

/// Runs the Cohort benchmark: `n` words, `batch`, index checks `check`,
/// with the authors' C library's fences on both sides of every index
/// store (`fifo_push_sync` / `fifo_pop_sync` in `cohort_fifo.h`).
pub fn run_cohort_with(
    p: &SocParams,
    accel: &str,
    n: u64,
    batch: u64,
    padded: bool,
    check: IndexCheck,
) -> Outcome {
    run_cohort_fenced(p, accel, n, batch, padded, check, PublishFences::Around)
}

/// Runs the Cohort benchmark with the queue library's index stores fenced
/// as `fences` says.
pub fn run_cohort_fenced(
    p: &SocParams,
    accel: &str,
    n: u64,
    batch: u64,
    padded: bool,
    check: IndexCheck,
    fences: PublishFences,
) -> Outcome {
    let mut soc = p.soc(accel);
    let a = make_accel(accel);
    let (win, wout) = (
        a.words_per_block() as u64,
        a.words_per_output_block() as u64,
    );
    let n_out = n / win * wout;
    let mut input = fifo_init(&mut soc, IN_VA, n, batch, padded, &[])
        .with_check(check)
        .with_fences(fences);
    let out_batch = (batch * wout / win).max(1);
    let mut output = fifo_init(&mut soc, OUT_VA, n_out.max(1), out_batch, padded, &[])
        .with_check(check)
        .with_fences(fences);
    let csr = if accel == "aes128" {
        map_aes_csr(&mut soc)
    } else {
        0
    };
    let words = input_words(n);
    map_benchmark_data(&mut soc, &words);
    let (c, start) = (0, soc.world.cores[0].now);
    cohort_register(&mut soc, c, 0, &input, &output, csr, p.backoff);
    let mut results = Vec::with_capacity(n_out as usize);
    for _ in 0..n / batch {
        for _ in 0..batch {
            let w = read_input(&mut soc, c, input.pushed as usize);
            push(&mut soc, c, &mut input, w);
        }
        publish_write(&mut soc, c, &mut input);
        let ready = input.pushed / win * wout;
        while output.popped < ready {
            let v = pop(&mut soc, c, &mut output);
            keep_result(&mut soc, c);
            results.push(v);
        }
    }
    publish_read(&mut soc, c, &mut output);
    soc.fence(c);
    let end = soc.world.cores[c].now;
    cohort_unregister(&mut soc, c, 0);
    soc.run_to_end();
    let mut o = Outcome::of(&soc, c, end - start, results);
    for (name, q) in [("in_queue", &input), ("out_queue", &output)] {
        o.stats
            .insert(format!("core0.{name}.index_loads"), q.index_loads as f64);
        o.stats
            .insert(format!("core0.{name}.index_misses"), q.index_misses as f64);
        // The core's stores to the queue's index (the write index it
        // publishes, or the read index): their transactions' cycles.
        let own_index = if name == "in_queue" {
            q.write_index
        } else {
            q.read_index
        };
        let (stores, cycles) = index_store_cycles(&soc, c, own_index);
        o.stats
            .insert(format!("core0.{name}.index_stores"), stores as f64);
        o.stats
            .insert(format!("core0.{name}.index_store_cycles"), cycles as f64);
        let (index, data) = queue_migrations(&soc, q);
        o.stats
            .insert(format!("lines.{name}.index_migrations"), index as f64);
        o.stats
            .insert(format!("lines.{name}.data_migrations"), data as f64);
    }
    o
}

/// The line migrations of queue `q` (see `World::migrations`): of its
/// index line(s) (the write index's, and the read index's when padding
/// gives it a line of its own), and of its element lines. Per element,
/// they are the pointer and data ping-pong between the core and the
/// engine that Cohort §6.1 blames for AES's lower speedup.
pub fn queue_migrations(soc: &Soc, q: &Fifo) -> (u64, u64) {
    let of_line = |va: u64| {
        soc.aspace
            .translate(&soc.world.mem, va)
            .map_or(0, |pa| soc.world.migrations(pa))
    };
    let mut index = of_line(q.write_index);
    if q.read_index / LINE != q.write_index / LINE {
        index += of_line(q.read_index);
    }
    let data = (q.base..q.base + q.length * 8)
        .step_by(LINE as usize)
        .map(of_line)
        .sum();
    (index, data)
}

/// Core `c`'s stores to the line of virtual address `va` and the cycles
/// their coherence transactions took (`CoreState::store_cycles_by_line`).
pub fn index_store_cycles(soc: &Soc, c: usize, va: u64) -> (u64, Cycle) {
    soc.aspace
        .translate(&soc.world.mem, va)
        .and_then(|pa| {
            soc.world.cores[c]
                .store_cycles_by_line
                .get(&(pa / LINE))
                .copied()
        })
        .unwrap_or((0, 0))
}

/// Core `c` waited from `began` with `retired` instructions retired then:
/// adds the cycles and the instructions since to its wait counters.
fn count_wait(soc: &mut Soc, c: usize, began: Cycle, retired: u64) {
    let core = &mut soc.world.cores[c];
    core.wait_cycles += core.now - began;
    core.wait_retired += core.retired - retired;
}

/// Core `c`'s clock and retired instructions (the start of a wait).
fn wait_start(soc: &Soc, c: usize) -> (Cycle, u64) {
    let core = &soc.world.cores[c];
    (core.now, core.retired)
}

impl Outcome {
    /// The outcome of core `c`'s run that took `cycles`, with its results.
    fn of(soc: &Soc, c: usize, cycles: Cycle, results: Vec<u64>) -> Outcome {
        Outcome {
            cycles,
            instructions: soc.world.cores[c].retired,
            stats: soc_stats(soc),
            results,
            invalidations: soc.world.counts.invalidations,
        }
    }
}

/// Core `c` gives the MAPLE unit the AES key (two uncached stores), when
/// the accelerator is AES.
fn set_maple_key(soc: &mut Soc, c: usize, accel: &str) {
    if accel == "aes128" {
        for (reg, half) in [(REG_KEY_LO, &AES_KEY[..8]), (REG_KEY_HI, &AES_KEY[8..])] {
            let word = u64::from_le_bytes(half.try_into().expect("8 bytes"));
            soc.mmio_store(c, Device::Maple, reg, word);
        }
    }
}

/// Runs the MMIO baseline: `n` words.
pub fn run_mmio(p: &SocParams, accel: &str, n: u64) -> Outcome {
    let mut soc = p.soc(accel);
    let a = make_accel(accel);
    let (win, wout) = (
        a.words_per_block() as u64,
        a.words_per_output_block() as u64,
    );
    let c = 0;
    set_maple_key(&mut soc, c, accel);
    let words = input_words(n);
    map_benchmark_data(&mut soc, &words);
    let mut results = Vec::new();
    for b in 0..n / win {
        for i in b * win..(b + 1) * win {
            let w = read_input(&mut soc, c, i as usize);
            soc.exec(c, PUSH_INSTRUCTIONS);
            soc.mmio_store(c, Device::Maple, REG_IN, w);
        }
        for _ in 0..wout {
            // The core stalls on the uncached load until the word exists.
            let (began, retired) = wait_start(&soc, c);
            let v = soc.mmio_load(c, Device::Maple, REG_OUT);
            count_wait(&mut soc, c, began, retired);
            keep_result(&mut soc, c);
            soc.exec(c, POP_INSTRUCTIONS);
            results.push(v);
        }
    }
    soc.fence(c);
    let end = soc.world.cores[c].now;
    soc.run_to_end();
    Outcome::of(&soc, c, end, results)
}

/// Runs the coherent-DMA baseline: `n` words.
pub fn run_dma(p: &SocParams, accel: &str, n: u64) -> Outcome {
    let mut soc = p.soc(accel);
    let a = make_accel(accel);
    let (win, wout) = (
        a.words_per_block() as u64,
        a.words_per_output_block() as u64,
    );
    soc.map(IN_VA, (n * 8).max(4096));
    soc.map(OUT_VA, (n * 8).max(4096));
    let c = 0;
    set_maple_key(&mut soc, c, accel);
    let words = input_words(n);
    map_benchmark_data(&mut soc, &words);
    let per_dma = (p.dma_block_bytes / 8).max(win);
    let mut results = Vec::new();
    let mut out_at = 0u64;
    for (b, chunk) in words.chunks(per_dma as usize).enumerate() {
        let src = IN_VA + b as u64 * per_dma * 8;
        for i in 0..chunk.len() {
            let w = read_input(&mut soc, c, b * per_dma as usize + i);
            soc.store(c, src + 8 * i as u64, w);
            soc.exec(c, PUSH_INSTRUCTIONS);
        }
        // The API call: its software, then the MMIO writes.
        soc.exec(c, p.dma_api_instructions);
        let dst = OUT_VA + out_at * 8;
        soc.mmio_store(c, Device::Maple, REG_DMA_SRC, src);
        soc.mmio_store(c, Device::Maple, REG_DMA_DST, dst);
        soc.mmio_store(c, Device::Maple, REG_DMA_LEN, chunk.len() as u64 * 8);
        soc.mmio_store(c, Device::Maple, REG_DMA_GO, 1);
        // The driver's polling loop (`ld` of the status register, `beqz`,
        // `j`): one MMIO round trip a turn until the transfer is done.
        let mut polls = 0u64;
        let (began, retired) = wait_start(&soc, c);
        while soc.mmio_load(c, Device::Maple, REG_DMA_STATUS) == 0 {
            soc.exec(c, POLL_INSTRUCTIONS - 1);
            polls += 1;
            assert!(polls < 1 << 24, "the DMA never completes");
        }
        soc.exec(c, POLL_INSTRUCTIONS - 1);
        count_wait(&mut soc, c, began, retired);
        let outs = chunk.len() as u64 / win * wout;
        for k in 0..outs {
            let v = soc.load(c, dst + 8 * k);
            keep_result(&mut soc, c);
            soc.exec(c, POP_INSTRUCTIONS);
            results.push(v);
        }
        out_at += outs;
    }
    let end = soc.world.cores[c].now;
    soc.run_to_end();
    Outcome::of(&soc, c, end, results)
}

fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    if point.x_name != "queue_elements" {
        return Err(werr(format!(
            "workload cohort_accel sweeps queue_elements, not {:?}",
            point.x_name
        )));
    }
    let n = whole_number("queue_elements", point.x, 2.0)?;
    let params = point.params;
    let accel = params.str("accel");
    let mode = params.str("mode");
    let batch = params.uint("batch");
    let win = make_accel(accel).words_per_block() as u64;
    if n % win != 0 || n > 1 << 20 {
        return Err(werr(format!(
            "queue_elements = {n}: must be a multiple of {win} (the {accel} block in words), at most 2^20"
        )));
    }
    if mode == "cohort" && n % batch != 0 {
        return Err(werr(format!(
            "queue_elements = {n}: must be a multiple of batch = {batch}"
        )));
    }
    let p = SocParams::from_platform(point.platform)?;
    let o = match mode {
        "mmio" => run_mmio(&p, accel, n),
        "dma" => run_dma(&p, accel, n),
        _ => {
            let check = match params.str("index_check") {
                "every_call" => IndexCheck::EveryCall,
                "cached" => IndexCheck::Cached,
                _ => IndexCheck::EveryPop,
            };
            run_cohort_with(&p, accel, n, batch, params.bool("padded"), check)
        }
    };
    let expected = reference(accel, &input_words(n));
    if o.results != expected {
        let i = o
            .results
            .iter()
            .zip(&expected)
            .position(|(a, b)| a != b)
            .unwrap_or(o.results.len().min(expected.len()));
        return Err(RunError::Violation {
            message: format!(
                "cohort_accel {mode}: result word {i} of {} differs from RustCrypto's {accel} ({} words came back)",
                expected.len(),
                o.results.len()
            ),
        });
    }
    Ok(point_result(&o))
}

/// The declaration of `cohort_chain`.
pub static COHORT_CHAIN: WorkloadInfo = WorkloadInfo {
    name: "cohort_chain",
    description: "Cohort §3.3, Fig. 5: x 64-bit words encrypted by AES-128 then hashed by SHA-256, two Cohort engines chained through an SPSC queue in memory (the AES engine's output queue is the SHA engine's input queue) or in sequence through software (the core pops the ciphertext and pushes it to the SHA engine's queue); latency in kilocycles, digests checked against RustCrypto.",
    params: &[
        ParamSpec { name: "how", kind: ParamKind::Enum(&["chained", "software"]), default: ParamDefault::Str("chained"), unit: "", range: ParamRange::ANY, from: "Cohort Fig. 5: chaining through a queue", description: "chained: engine to engine through a queue; software: the core moves the ciphertext between the engines' queues." },
        ParamSpec { name: "batch", kind: ParamKind::Int, default: ParamDefault::Int(64), unit: "elements", range: ParamRange::between(8.0, 64.0), from: "Cohort Table 2: batching factor up to 64", description: "Elements between the core's index publications (at least a SHA block)." },
        ParamSpec { name: "backoff_cycles", kind: ParamKind::Int, default: ParamDefault::Int(-1), unit: "cycles", range: ParamRange::between(-1.0, 100_000.0), from: "the platform's cohort_engine.backoff_cycles (-1)", description: "The engines' RCM backoff (-1: the platform's): the SHA engine's wait after the AES engine's pointer store before it re-reads." },
    ],
    check: None,
    metrics: &[
        MetricSpec { name: "latency_kcycles", unit: "kcycles", description: "First instruction to last digest, in thousands of cycles." },
        MetricSpec { name: "ipc", unit: "instructions/cycle", description: "The core's retired instructions over the cycles." },
        MetricSpec { name: "instructions", unit: "instructions", description: "Instructions the core retired." },
    ],
    run: run_chain_point,
};

const MID_VA: u64 = 0x40_0000_0000;
const MID2_VA: u64 = 0x50_0000_0000;

/// Runs AES → SHA over `n` words, chained through a queue or through the
/// core.
pub fn run_chain(p: &SocParams, n: u64, batch: u64, chained: bool) -> Outcome {
    let mut maple = Maple::new(0, make_accel("sha256"), p.maple_mmio, p.maple_mshrs);
    maple.dma_setup = p.dma_setup;
    let engines = vec![make_accel("aes128"), make_accel("sha256")];
    let mut soc = Soc::new(
        p.timing.clone(),
        2,
        p.store_buffer,
        engines,
        p.engine_mshrs,
        maple,
    );
    soc.world
        .set_l15_line(p.l15_line)
        .expect("checked by from_platform");
    let mut input = fifo_init(&mut soc, IN_VA, n, batch, false, &[]);
    let mut cipher = fifo_init(&mut soc, MID_VA, n, batch, false, &[]);
    let mut cipher_in = if chained {
        cipher.clone()
    } else {
        fifo_init(&mut soc, MID2_VA, n, batch, false, &[])
    };
    let mut output = fifo_init(&mut soc, OUT_VA, n / 2, (batch / 2).max(1), false, &[]);
    let csr = map_aes_csr(&mut soc);
    let c = 0;
    cohort_register(&mut soc, c, 0, &input, &cipher, csr, p.backoff);
    cohort_register(&mut soc, c, 1, &cipher_in, &output, 0, p.backoff);
    let start = soc.world.cores[c].now;
    let words = input_words(n);
    let mut results = Vec::new();
    for chunk in words.chunks(batch as usize) {
        for &w in chunk {
            push(&mut soc, c, &mut input, w);
        }
        publish_write(&mut soc, c, &mut input);
        if !chained {
            while cipher.popped < input.pushed {
                let v = pop(&mut soc, c, &mut cipher);
                push(&mut soc, c, &mut cipher_in, v);
            }
            publish_read(&mut soc, c, &mut cipher);
            publish_write(&mut soc, c, &mut cipher_in);
        }
        let ready = input.pushed / 8 * 4;
        while output.popped < ready {
            results.push(pop(&mut soc, c, &mut output));
        }
    }
    publish_read(&mut soc, c, &mut output);
    soc.fence(c);
    let end = soc.world.cores[c].now;
    cohort_unregister(&mut soc, c, 0);
    cohort_unregister(&mut soc, c, 1);
    soc.run_to_end();
    Outcome::of(&soc, c, end - start, results)
}

fn run_chain_point(point: &Point<'_>) -> Result<PointResult, RunError> {
    if point.x_name != "queue_elements" {
        return Err(werr(format!(
            "workload cohort_chain sweeps queue_elements, not {:?}",
            point.x_name
        )));
    }
    let n = whole_number("queue_elements", point.x, 8.0)?;
    let batch = point.params.uint("batch");
    if n % batch != 0 || batch % 8 != 0 || n > 1 << 20 {
        return Err(werr(format!(
            "queue_elements = {n}, batch = {batch}: batch must be a multiple of 8 (a SHA block) and divide queue_elements (at most 2^20)"
        )));
    }
    let mut p = SocParams::from_platform(point.platform)?;
    if let Ok(b) = u64::try_from(point.params.int("backoff_cycles")) {
        p.backoff = b;
    }
    let o = run_chain(&p, n, batch, point.params.str("how") == "chained");
    let expected = reference("sha256", &reference("aes128", &input_words(n)));
    if o.results != expected {
        return Err(RunError::Violation {
            message: format!("cohort_chain: the digests differ from SHA-256 of RustCrypto's AES-128 ({} of {} words came back)", o.results.len(), expected.len()),
        });
    }
    Ok(point_result(&o))
}

fn point_result(o: &Outcome) -> PointResult {
    let mut metrics = BTreeMap::new();
    metrics.insert("latency_kcycles".to_string(), o.cycles as f64 / 1000.0);
    metrics.insert(
        "ipc".to_string(),
        o.instructions as f64 / o.cycles.max(1) as f64,
    );
    metrics.insert("instructions".to_string(), o.instructions as f64);
    metrics.insert("invalidations".to_string(), o.invalidations as f64);
    let mut stats = o.stats.clone();
    stats.insert("core0.cycles".to_string(), o.cycles as f64);
    // The run is a pure function of its inputs: its counts and the result
    // words (FNV-1a) identify it.
    let words = o.results.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &w| {
        (h ^ w).wrapping_mul(0x0100_0000_01b3)
    });
    let hash = format!(
        "{:016x}{:016x}{:016x}{words:016x}",
        o.cycles, o.instructions, o.invalidations
    );
    PointResult {
        metrics,
        stats,
        trace_json: None,
        trace_events: None,
        trace_hash: hash,
    }
}

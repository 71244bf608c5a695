//! The lock-free SPSC queue library the software uses (Cohort §3.2, §4.1),
//! with its descriptor in memory and the Cohort driver's calls.
//!
//! **Layout** (real bytes in the process's memory, `fifo_t` as a
//! hand-rolled C queue lays it out): a control line holding the write
//! index at +0 and the read index at +8 (on one line, as in the paper's
//! queues, whose "false sharing on the read and write pointers" §6.1
//! names; `padded` puts the read index on a line of its own), the
//! descriptor (§4.1.1: write-index address, read-index address, base,
//! element size, length) at +64, and the elements from `base`. Indices
//! count elements since the start; the slot of element `i` is `i mod
//! length`.
//!
//! **Ordering** (the Lamport/FastForward discipline of lock-free SPSC
//! libraries): the producer stores the element, and publishes the write
//! index only after a `fence` has drained the data stores; the consumer
//! reads the write index, then the elements, and publishes its read index
//! after them. **Batching** (§5.3, Table 2: 2–64): each side publishes its
//! index every `batch` elements instead of every one, and re-reads the
//! other side's index only when its cached copy says full (producer) or
//! empty (consumer).
//!
//! **Index checks** ([`IndexCheck`]). A queue library learns the other
//! side's index one of two ways: FastForward-style libraries keep a
//! private copy and re-read the shared index only when the copy says full
//! or empty ([`IndexCheck::Cached`]); simple libraries read it on every
//! call ([`IndexCheck::EveryCall`]: `is_empty()` loads both indices before
//! each pop, `is_full()` before each push). With every-call checks and the
//! two indices on one line, each pop's load of the write index pulls the
//! line from the engine that just published it, and the engine's next
//! publication takes it back: the ping-pong §6.1 blames for AES ("false
//! sharing on the read and write pointers with the Ariane core as it waits
//! to acquire the output data"). Each queue counts its index loads and
//! the ones that missed ([`Fifo::index_loads`], [`Fifo::index_misses`]).
//!
//! **Fences** ([`PublishFences`]). Data before pointer needs a `fence`
//! between a side's element accesses and its index store
//! ([`PublishFences::Before`], the default). The Cohort project's public
//! C queue library (`fifo_push_sync` / `fifo_pop_sync`) puts a
//! `__sync_synchronize()` on both sides of every index store, producer's
//! and consumer's ([`PublishFences::Around`]): the fence after makes the
//! core wait for the index store's own coherence transaction, which takes
//! the index line back from the agent that last read it. On the Ariane
//! OpenPiton builds a `fence` drains the stores and does not touch the
//! write-through L1D ([`core`](super::core)).
//!
//! **Instructions per loop** (for IPC), as a RISC-V compiler emits the
//! loops (assumed counts): a push is 6 instructions (slot address: `and`,
//! `slli`, `add`; the store; the index increment; the batch test branch),
//! a pop 6 (the same with a load), a publish 2 more (`fence`, the index
//! store), a poll turn 3 (`ld`, `bne`, `j`).

use super::core::{Device, Interrupt};
use super::engine::{
    REG_BACKOFF, REG_CSR, REG_IN_DESC, REG_IRQ_CORE, REG_OUT_DESC, REG_RESOLVE_PTE,
    REG_RESOLVE_RETRY, REG_SATP, REG_START, REG_STOP,
};
use super::mmu::{AddressSpace, LEAF_RW, PAGE};
use super::{Soc, LINE};

/// Instructions of a push beside its store.
pub const PUSH_INSTRUCTIONS: u64 = 5;
/// Instructions of a pop beside its load.
pub const POP_INSTRUCTIONS: u64 = 5;
/// Instructions of a poll turn (its load included).
pub const POLL_INSTRUCTIONS: u64 = 3;
/// Instructions of an every-call index check (`ld`, compare, branch; its
/// load included; assumed as the poll turn).
pub const CHECK_INSTRUCTIONS: u64 = 3;
/// Instructions of the page-fault handler beside its stores and MMIO
/// (assumed: trap entry, the driver's handler, the lookup of the VMA and
/// the allocation, `sret`).
pub const FAULT_HANDLER_INSTRUCTIONS: u64 = 200;

/// How push and pop learn the other side's index (module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IndexCheck {
    /// Re-read the shared index only when the private copy says full
    /// (push) or empty (pop).
    #[default]
    Cached,
    /// Read the shared index on every push and pop.
    EveryCall,
    /// The Cohort authors' C library (`cohort_fifo.h` in the
    /// `cohort-project/cohort-soc` snapshot): `fifo_pop_64` loads the
    /// write index on every pop (`while (*tail_ptr <= pos)`), and
    /// `fifo_push_64` never checks (its `fifo_is_full` loop is commented
    /// out; the benchmark's queue holds every element).
    EveryPop,
}

/// Where the queue library fences around its index stores (module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PublishFences {
    /// A `fence` before the producer's write-index store (data before
    /// pointer); the consumer's read-index store follows its loads, which
    /// the in-order core has completed.
    #[default]
    Before,
    /// A `fence` before and after every index store, on both sides (the
    /// Cohort project's C library, `fifo_push_sync` / `fifo_pop_sync`).
    Around,
}

/// A queue as the software holds it: its addresses and each side's private
/// copies of the indices.
#[derive(Debug, Clone, Default)]
pub struct Fifo {
    /// The control line (write index; read index at +8 or +64).
    pub control: u64,
    /// The descriptor.
    pub descriptor: u64,
    /// The write index's address.
    pub write_index: u64,
    /// The read index's address.
    pub read_index: u64,
    /// The elements.
    pub base: u64,
    /// Elements.
    pub length: u64,
    /// Publish an index every `batch` elements.
    pub batch: u64,
    /// Producer: elements pushed, published, and its copy of the read index.
    pub pushed: u64,
    published_write: u64,
    cached_read: u64,
    /// Consumer: elements popped, published, and its copy of the write index.
    pub popped: u64,
    published_read: u64,
    cached_write: u64,
    /// How the other side's index is checked.
    pub check: IndexCheck,
    /// Where the index stores are fenced.
    pub fences: PublishFences,
    /// Loads of the other side's index: every-call checks, and one per
    /// spin (its turns on a held line hit, are not counted; the turn that
    /// ends it is).
    pub index_loads: u64,
    /// Of those, the loads that missed: the line had been taken away by
    /// the other side's index store (or was never held).
    pub index_misses: u64,
}

impl Fifo {
    /// The same queue with index checks `check`.
    pub fn with_check(mut self, check: IndexCheck) -> Fifo {
        self.check = check;
        self
    }

    /// The same queue with its index stores fenced as `fences` says.
    pub fn with_fences(mut self, fences: PublishFences) -> Fifo {
        self.fences = fences;
        self
    }
}

/// Core `c` loads the other side's index at `va` for queue `q`, counting
/// the load and whether it missed (was not a hit in the core's caches).
fn load_index(soc: &mut Soc, c: usize, q: &mut Fifo, va: u64) -> u64 {
    let pa = soc
        .aspace
        .translate(&soc.world.mem, va)
        .expect("a queue index is mapped");
    let agent = soc.world.cores[c].agent;
    q.index_loads += 1;
    if !soc.world.holds(agent, pa) {
        q.index_misses += 1;
    }
    soc.load(c, va)
}

/// `fifo_init`: a queue of `length` 8-byte elements at `va` (page-aligned),
/// mapped in `space` (pages of the element array in `lazy_pages` are only
/// reserved: their first touch faults). The descriptor and indices are
/// written with the kernel's hands (before any timing starts).
pub fn fifo_init(
    soc: &mut Soc,
    va: u64,
    length: u64,
    batch: u64,
    padded: bool,
    lazy_pages: &[u64],
) -> Fifo {
    let base = va + PAGE;
    let bytes = PAGE + length * 8;
    let mut space = soc.aspace.clone();
    space.map_range(&mut soc.world.mem, va, PAGE, &[]);
    let lazy: Vec<u64> = lazy_pages.to_vec();
    space.map_range(&mut soc.world.mem, base, bytes - PAGE, &lazy);
    soc.aspace = space;
    let write_index = va;
    let read_index = if padded { va + LINE } else { va + 8 };
    let descriptor = va + 2 * LINE;
    for (i, v) in [write_index, read_index, base, 8, length]
        .into_iter()
        .enumerate()
    {
        let pa = soc
            .aspace
            .translate(&soc.world.mem, descriptor + 8 * i as u64)
            .expect("mapped");
        soc.world.mem.write_u64(pa, v);
    }
    Fifo {
        control: va,
        descriptor,
        write_index,
        read_index,
        base,
        length,
        batch: batch.max(1),
        ..Fifo::default()
    }
}

/// Pushes `v` from core `c` (the producer), publishing the write index at
/// each batch's end; spins while the queue is full.
pub fn push(soc: &mut Soc, c: usize, q: &mut Fifo, v: u64) {
    if q.check == IndexCheck::EveryCall {
        // is_full(): the consumer's index, loaded (then compared, branched).
        q.cached_read = load_index(soc, c, q, q.read_index);
        soc.exec(c, CHECK_INSTRUCTIONS - 1);
    }
    while q.pushed - q.cached_read >= q.length {
        let seen = q.cached_read;
        q.cached_read = spin_on_index(soc, c, q, q.read_index, seen);
    }
    soc.store(c, q.base + (q.pushed % q.length) * 8, v);
    soc.exec(c, PUSH_INSTRUCTIONS);
    q.pushed += 1;
    if q.pushed - q.published_write >= q.batch {
        publish_write(soc, c, q);
    }
}

/// Publishes the producer's write index (data before pointer: `fence`).
pub fn publish_write(soc: &mut Soc, c: usize, q: &mut Fifo) {
    if q.pushed == q.published_write {
        return;
    }
    soc.fence(c);
    soc.store(c, q.write_index, q.pushed);
    if q.fences == PublishFences::Around {
        soc.fence(c);
    }
    q.published_write = q.pushed;
}

/// Pops an element at core `c` (the consumer), spinning while the queue is
/// empty (taking page-fault interrupts meanwhile), publishing the read
/// index at each batch's end.
pub fn pop(soc: &mut Soc, c: usize, q: &mut Fifo) -> u64 {
    if matches!(q.check, IndexCheck::EveryCall | IndexCheck::EveryPop) {
        // is_empty(): the producer's index, loaded (then compared, branched).
        q.cached_write = load_index(soc, c, q, q.write_index);
        soc.exec(c, CHECK_INSTRUCTIONS - 1);
    }
    while q.popped >= q.cached_write {
        let seen = q.cached_write;
        q.cached_write = spin_on_index(soc, c, q, q.write_index, seen);
    }
    let v = soc.load(c, q.base + (q.popped % q.length) * 8);
    soc.exec(c, POP_INSTRUCTIONS);
    q.popped += 1;
    if q.popped - q.published_read >= q.batch {
        publish_read(soc, c, q);
    }
    v
}

/// Core `c` spins on queue `q`'s index at `va` until it differs from
/// `seen`. The turn that sees the new value always misses: the value
/// changed only because the other side's store took the line away.
fn spin_on_index(soc: &mut Soc, c: usize, q: &mut Fifo, va: u64, seen: u64) -> u64 {
    let v = soc.spin_while_equal(c, va, seen, POLL_INSTRUCTIONS, handle_page_fault);
    q.index_loads += 1;
    q.index_misses += 1;
    v
}

/// Publishes the consumer's read index.
pub fn publish_read(soc: &mut Soc, c: usize, q: &mut Fifo) {
    if q.popped == q.published_read {
        return;
    }
    let around = q.fences == PublishFences::Around;
    if around {
        soc.fence(c);
    }
    soc.store(c, q.read_index, q.popped);
    if around {
        soc.fence(c);
    }
    q.published_read = q.popped;
}

/// `cohort_register(acc, input, output)` from core `c` (§4.1.2, §4.4):
/// the driver writes the process's page-table root, the descriptors'
/// addresses, the CSR struct's (0: none), the backoff and the core for the
/// page-fault interrupts to the engine's registers, then starts it.
pub fn cohort_register(
    soc: &mut Soc,
    c: usize,
    engine: usize,
    input: &Fifo,
    output: &Fifo,
    csr: u64,
    backoff: u64,
) {
    let dev = Device::Engine(engine);
    let root = soc.aspace.root_ppn;
    for (reg, v) in [
        (REG_SATP, root),
        (REG_IN_DESC, input.descriptor),
        (REG_OUT_DESC, output.descriptor),
        (REG_CSR, csr),
        (REG_BACKOFF, backoff),
        (REG_IRQ_CORE, c as u64),
        (REG_START, 1),
    ] {
        soc.mmio_store(c, dev, reg, v);
    }
}

/// `cohort_unregister`: stops the engine (its TLB is flushed).
pub fn cohort_unregister(soc: &mut Soc, c: usize, engine: usize) {
    soc.mmio_store(c, Device::Engine(engine), REG_STOP, 1);
}

/// The driver's page-fault handler (§4.4) on core `c`: maps the faulting
/// page to a fresh frame (the PTE store and a fence), then resolves the
/// fault through the engine's first register (walk again) or, when
/// `soc.fault_writes_tlb`, its second (the PTE straight into the TLB).
pub fn handle_page_fault(soc: &mut Soc, c: usize, irq: Interrupt) {
    soc.exec(c, FAULT_HANDLER_INSTRUCTIONS);
    let page = irq.va / PAGE * PAGE;
    assert!(
        soc.aspace.lazy.contains(&(page / PAGE)),
        "cohort engine {} faulted at {:#x}, which the process never reserved (a segmentation fault)",
        irq.engine,
        irq.va
    );
    let mut space: AddressSpace = soc.aspace.clone();
    let frame = space.alloc_frame();
    space.map(&mut soc.world.mem, page, frame);
    soc.aspace = space;
    // The kernel's PTE store, as a store the walker's copy sees.
    let slot = soc
        .aspace
        .pte_addr(&soc.world.mem, page)
        .expect("just mapped");
    let pte = frame << 10 | LEAF_RW;
    soc.store_physical(c, slot, pte);
    soc.fence(c);
    let dev = Device::Engine(irq.engine);
    if soc.fault_writes_tlb {
        soc.mmio_store(c, dev, REG_RESOLVE_PTE, pte);
    } else {
        soc.mmio_store(c, dev, REG_RESOLVE_RETRY, 1);
    }
    soc.faults_handled += 1;
}

/// A push that never spins (for software that interleaves several queues
/// or cores): false, after one re-read of the read index, when the queue is
/// still full.
pub fn try_push(soc: &mut Soc, c: usize, q: &mut Fifo, v: u64) -> bool {
    if q.pushed - q.cached_read >= q.length {
        q.cached_read = soc.load(c, q.read_index);
        soc.exec(c, POLL_INSTRUCTIONS - 1);
        if q.pushed - q.cached_read >= q.length {
            return false;
        }
    }
    push(soc, c, q, v);
    true
}

/// A pop that never spins: `None`, after one re-read of the write index,
/// when the queue is still empty.
pub fn try_pop(soc: &mut Soc, c: usize, q: &mut Fifo) -> Option<u64> {
    if q.popped >= q.cached_write {
        q.cached_write = soc.load(c, q.write_index);
        soc.exec(c, POLL_INSTRUCTIONS - 1);
        if q.popped >= q.cached_write {
            return None;
        }
    }
    Some(pop(soc, c, q))
}

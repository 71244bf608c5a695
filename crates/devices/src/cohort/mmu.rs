//! RISC-V Sv39 address translation (RISC-V Privileged ISA §4.4): the page
//! tables as real bytes in the SoC's memory, the process's
//! [`AddressSpace`] that the "kernel" builds them with, and the Cohort
//! engine's MMU ([`Mmu`]): a 16-entry TLB (Cohort §5: "The Cohort TLB has
//! 16 entries") in front of a page-table walker that reads the tables with
//! coherent loads (Cohort §4.2.4).
//!
//! Sv39: a 39-bit virtual address is three 9-bit VPN fields and a 12-bit
//! offset; `satp.PPN` names the root table; each level's 8-byte PTE holds
//! V, R, W, X, U, G, A, D in bits 0–7 and the PPN in bits 10–53; a PTE with
//! R or X set is a leaf (at level 2 or 1: a 1 GiB or 2 MiB superpage).

use std::collections::VecDeque;

use super::{PhysMem, World};

/// Bytes of a base page.
pub const PAGE: u64 = 4096;
/// PTE bits (Privileged ISA §4.4.1, Fig. 4.21).
pub const PTE_V: u64 = 1 << 0;
/// Readable.
pub const PTE_R: u64 = 1 << 1;
/// Writable.
pub const PTE_W: u64 = 1 << 2;
/// User-accessible.
pub const PTE_U: u64 = 1 << 4;
/// Accessed.
pub const PTE_A: u64 = 1 << 6;
/// Dirty.
pub const PTE_D: u64 = 1 << 7;
/// A leaf PTE for a user data page.
pub const LEAF_RW: u64 = PTE_V | PTE_R | PTE_W | PTE_U | PTE_A | PTE_D;

/// Entries of the Cohort MMU's TLB (Cohort §5).
pub const TLB_ENTRIES: usize = 16;

/// The VPN field of `va` at `level` (2: the root's).
fn vpn(va: u64, level: u32) -> u64 {
    (va >> (12 + 9 * level)) & 0x1ff
}

/// The outcome of a walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Walk {
    /// The PTE addresses read, root first.
    pub reads: Vec<u64>,
    /// The leaf PTE and its level, or `None` on a page fault.
    pub leaf: Option<(u64, u32)>,
}

/// Walks the Sv39 tables rooted at page `root_ppn` for `va`, reading the
/// PTEs from `mem`.
pub fn walk(mem: &PhysMem, root_ppn: u64, va: u64) -> Walk {
    let mut table = root_ppn * PAGE;
    let mut reads = Vec::with_capacity(3);
    for level in (0..3).rev() {
        let addr = table + vpn(va, level) * 8;
        reads.push(addr);
        let pte = mem.read_u64(addr);
        if pte & PTE_V == 0 || (pte & PTE_R == 0 && pte & PTE_W != 0) {
            return Walk { reads, leaf: None };
        }
        if pte & (PTE_R | 1 << 3) != 0 {
            // A superpage's PPN must be aligned to its size (else a fault).
            let ppn = pte >> 10;
            if level > 0 && ppn & ((1 << (9 * level)) - 1) != 0 {
                return Walk { reads, leaf: None };
            }
            return Walk {
                reads,
                leaf: Some((pte, level)),
            };
        }
        table = (pte >> 10) * PAGE;
    }
    Walk { reads, leaf: None }
}

/// The physical address of `va` under leaf `pte` at `level`.
pub fn apply(pte: u64, level: u32, va: u64) -> u64 {
    let span = 12 + 9 * level;
    ((pte >> 10) << 12) & !((1u64 << span) - 1) | (va & ((1u64 << span) - 1))
}

/// A process's address space: its Sv39 tables in memory, built by the
/// "kernel" with frames from a bump allocator. Pages can be reserved
/// without a mapping (a page the first touch faults in, as Linux's lazy
/// allocation), which the page-fault handler maps.
#[derive(Debug, Clone)]
pub struct AddressSpace {
    /// The root table's page number (`satp.PPN`).
    pub root_ppn: u64,
    next_frame: u64,
    /// Reserved, not yet mapped pages (virtual page numbers).
    pub lazy: Vec<u64>,
}

impl AddressSpace {
    /// An empty address space whose frames come from `first_frame` up.
    pub fn new(first_frame: u64) -> AddressSpace {
        AddressSpace {
            root_ppn: first_frame,
            next_frame: first_frame + 1,
            lazy: Vec::new(),
        }
    }

    /// A fresh zeroed frame.
    pub fn alloc_frame(&mut self) -> u64 {
        self.next_frame += 1;
        self.next_frame - 1
    }

    /// The leaf PTE's address for `va`, creating the intermediate tables.
    fn leaf_slot(&mut self, mem: &mut PhysMem, va: u64) -> u64 {
        let mut table = self.root_ppn * PAGE;
        for level in [2, 1] {
            let addr = table + vpn(va, level) * 8;
            let pte = mem.read_u64(addr);
            table = if pte & PTE_V != 0 {
                (pte >> 10) * PAGE
            } else {
                let frame = self.alloc_frame();
                mem.write_u64(addr, frame << 10 | PTE_V);
                frame * PAGE
            };
        }
        table + vpn(va, 0) * 8
    }

    /// Maps the page of `va` to frame `ppn` (read-write, user).
    pub fn map(&mut self, mem: &mut PhysMem, va: u64, ppn: u64) {
        let slot = self.leaf_slot(mem, va);
        mem.write_u64(slot, ppn << 10 | LEAF_RW);
        self.lazy.retain(|&p| p != va / PAGE);
    }

    /// Maps `bytes` from `va` (page-aligned) to fresh frames, except the
    /// pages in `lazy_pages` (indices from the first), which are only
    /// reserved.
    pub fn map_range(&mut self, mem: &mut PhysMem, va: u64, bytes: u64, lazy_pages: &[u64]) {
        for (i, page) in (va / PAGE..(va + bytes).div_ceil(PAGE)).enumerate() {
            if lazy_pages.contains(&(i as u64)) {
                self.lazy.push(page);
            } else {
                let frame = self.alloc_frame();
                self.map(mem, page * PAGE, frame);
            }
        }
    }

    /// The leaf PTE address of `va`, if its tables exist.
    pub fn pte_addr(&self, mem: &PhysMem, va: u64) -> Option<u64> {
        let w = walk(mem, self.root_ppn, va);
        (w.reads.len() == 3).then(|| w.reads[2])
    }

    /// The physical address of `va` (the core's translation: its own TLB
    /// is assumed to hit), or `None` when unmapped.
    pub fn translate(&self, mem: &PhysMem, va: u64) -> Option<u64> {
        walk(mem, self.root_ppn, va)
            .leaf
            .map(|(pte, level)| apply(pte, level, va))
    }
}

/// A TLB entry: a virtual page and its leaf PTE with its level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TlbEntry {
    vpn: u64,
    level: u32,
    pte: u64,
}

/// The Cohort engine's MMU: a fully associative TLB with LRU replacement
/// (assumed) and the page-table walker's bookkeeping; the walk's loads are
/// timed by the engine, which issues them through the coherence system.
#[derive(Debug, Clone, Default)]
pub struct Mmu {
    /// `satp.PPN` of the registered process.
    pub root_ppn: u64,
    /// Entries, least recently used first.
    tlb: VecDeque<TlbEntry>,
    /// TLB hits, misses (walks), page faults, flushes.
    pub hits: u64,
    /// Walks.
    pub walks: u64,
    /// Page faults raised.
    pub faults: u64,
    /// Flushes honoured.
    pub flushes: u64,
}

impl Mmu {
    /// The TLB's translation of `va`, if it holds one (counts a hit).
    pub fn lookup(&mut self, va: u64) -> Option<u64> {
        let i = self.tlb.iter().position(|e| {
            let span = 12 + 9 * e.level;
            va >> span == e.vpn >> (9 * e.level)
        })?;
        let e = self.tlb.remove(i).expect("found");
        self.tlb.push_back(e);
        self.hits += 1;
        Some(apply(e.pte, e.level, va))
    }

    /// Fills the TLB with `va`'s leaf, evicting the least recently used.
    pub fn fill(&mut self, va: u64, pte: u64, level: u32) {
        if self.tlb.len() == TLB_ENTRIES {
            self.tlb.pop_front();
        }
        self.tlb.push_back(TlbEntry {
            vpn: va >> 12,
            level,
            pte,
        });
    }

    /// Empties the TLB (the flush register).
    pub fn flush(&mut self) {
        self.tlb.clear();
        self.flushes += 1;
    }

    /// Entries held.
    pub fn entries(&self) -> usize {
        self.tlb.len()
    }

    /// Translates `va` at `at` for `agent`: a TLB hit costs nothing extra;
    /// a miss walks the tables with one coherent load per level, in
    /// sequence. Returns the physical address (or `None`: a page fault)
    /// and when the translation is known.
    pub fn translate(
        &mut self,
        world: &mut World,
        agent: usize,
        va: u64,
        at: u64,
    ) -> (Option<u64>, u64) {
        if let Some(pa) = self.lookup(va) {
            return (Some(pa), at);
        }
        self.walks += 1;
        let w = walk(&world.mem, self.root_ppn, va);
        let mut t = at;
        for &pte_addr in &w.reads {
            t = world.coherent(agent, pte_addr, super::Access::Read, t);
        }
        match w.leaf {
            Some((pte, level)) => {
                self.fill(va, pte, level);
                (Some(apply(pte, level, va)), t)
            }
            None => {
                self.faults += 1;
                (None, t)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_real_tables_and_faults_on_a_reserved_page() {
        let mut mem = PhysMem::default();
        let mut space = AddressSpace::new(0x100);
        let va = 0x40_0000_0000 - 3 * PAGE;
        space.map_range(&mut mem, va, 3 * PAGE, &[1]);
        let pa0 = space.translate(&mem, va + 8).unwrap();
        assert_eq!(pa0 % PAGE, 8);
        assert_eq!(space.translate(&mem, va + PAGE), None);
        assert_eq!(space.lazy, vec![(va + PAGE) / PAGE]);
        // The walk read three PTEs, root first.
        let w = walk(&mem, space.root_ppn, va + 2 * PAGE);
        assert_eq!(w.reads.len(), 3);
        assert_eq!(w.reads[0], space.root_ppn * PAGE + vpn(va, 2) * 8);
        space.map(&mut mem, va + PAGE, 0x999);
        assert_eq!(
            space.translate(&mem, va + PAGE + 16),
            Some(0x999 * PAGE + 16)
        );
        assert!(space.lazy.is_empty());
    }

    #[test]
    fn tlb_holds_sixteen_entries_least_recently_used_out() {
        let mut mmu = Mmu::default();
        for p in 0..17u64 {
            mmu.fill(p * PAGE, (0x500 + p) << 10 | LEAF_RW, 0);
        }
        assert_eq!(mmu.entries(), TLB_ENTRIES);
        assert_eq!(mmu.lookup(0), None, "page 0 was the least recently used");
        assert_eq!(mmu.lookup(16 * PAGE + 4), Some((0x500 + 16) * PAGE + 4));
        mmu.flush();
        assert_eq!(mmu.lookup(16 * PAGE), None);
    }
}

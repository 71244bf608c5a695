//! The host IOMMU a device's ATS requests reach (on the N1-SDP an Arm
//! SMMU): translation tables stored as bytes in simulated memory, the
//! walker that reads them, and the TLB in front of it.
//!
//! * **Translation tables** ([`TranslationTables`]): AArch64 VMSAv8-64
//!   stage 1, 4 KiB granule, 48-bit input addresses, four levels (Arm ARM
//!   D8.2): level 0 indexes VA\[47:39\], level 1 VA\[38:30\], level 2
//!   VA\[29:21\], level 3 VA\[20:12\], 512 eight-byte descriptors a table.
//!   A table descriptor (bits\[1:0\] = 0b11 at levels 0–2) points to the next
//!   table; a block descriptor (0b01) maps 1 GiB at level 1 or 2 MiB at
//!   level 2; a page descriptor (0b11 at level 3) maps 4 KiB. The
//!   Contiguous bit (bit 52) on 16 adjacent, aligned entries lets one TLB
//!   entry cover 16 of them: 64 KiB from level-3 pages, 32 MiB from level-2
//!   blocks. These are the page sizes the N1-SDP boots with (CCIX §IV
//!   Exp. 2: "64KB, 2MB, 32MB, and 1GB", besides Linux's 4 KiB).
//! * **Walk** ([`walk`]): reads one descriptor per level from the memory,
//!   little-endian, until a block or page; an invalid descriptor is a
//!   translation fault naming the level.
//! * **SMMU** ([`Smmu`]): a TLB of `tlb_entries` (LRU), looked up in
//!   `tlb_ns`; a miss walks, `walk_read_ns` per descriptor read, on one
//!   walker. After a walk it **pre-translates** the next `prefetch_pages`
//!   pages into the TLB (CCIX §IV Exp. 2: "We assume that this is due to
//!   pre-translations being performed by the host-IOMMU for the sequential
//!   accesses"), so a later request for them hits, waiting at most for the
//!   walk still under way.
//!
//! ```
//! use ccsim_pcie::smmu::{walk, PageSize, TranslationTables};
//! let mut t = TranslationTables::new(0x8000_0000);
//! t.map(0x4000_0000_0000 >> 4, 0x1_2345_6000, PageSize::K4).unwrap();
//! let w = walk(t.memory(), t.root(), (0x4000_0000_0000 >> 4) + 0x123).unwrap();
//! assert_eq!(w.pa, 0x1_2345_6123);
//! assert_eq!(w.reads.len(), 4); // one descriptor per level
//! ```

use ccsim_kernel::prelude::*;

use crate::memory::SparseMemory;
use crate::util::ns_to_ps;

/// The translation granule (bytes).
pub const GRANULE: u64 = 4096;

/// Bits of a descriptor that hold an output (or next-table) address.
const OA_MASK: u64 = 0x0000_FFFF_FFFF_F000;
/// Descriptor type bits: valid, and table (levels 0–2) or page (level 3).
const VALID: u64 = 1;
const TABLE_OR_PAGE: u64 = 0b11;
const BLOCK: u64 = 0b01;
/// Access flag (bit 10): set, so no access-flag fault.
const AF: u64 = 1 << 10;
/// The Contiguous hint (bit 52).
const CONTIGUOUS: u64 = 1 << 52;
/// Entries a contiguous run spans with the 4 KiB granule.
const CONTIGUOUS_ENTRIES: u64 = 16;

/// A page (or block) size the tables can map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PageSize {
    /// 4 KiB: a level-3 page descriptor.
    K4,
    /// 64 KiB: 16 contiguous level-3 pages.
    K64,
    /// 2 MiB: a level-2 block.
    M2,
    /// 32 MiB: 16 contiguous level-2 blocks.
    M32,
    /// 1 GiB: a level-1 block.
    G1,
}

impl PageSize {
    /// Every size, with its parameter spelling.
    pub const ALL: [(&'static str, PageSize); 5] = [
        ("4k", PageSize::K4),
        ("64k", PageSize::K64),
        ("2m", PageSize::M2),
        ("32m", PageSize::M32),
        ("1g", PageSize::G1),
    ];

    /// The size named `s` (`4k`, `64k`, `2m`, `32m`, `1g`).
    pub fn parse(s: &str) -> Option<PageSize> {
        Self::ALL.iter().find(|(n, _)| *n == s).map(|(_, p)| *p)
    }

    /// Bytes mapped.
    pub fn bytes(self) -> u64 {
        match self {
            PageSize::K4 => 4 << 10,
            PageSize::K64 => 64 << 10,
            PageSize::M2 => 2 << 20,
            PageSize::M32 => 32 << 20,
            PageSize::G1 => 1 << 30,
        }
    }

    /// The level whose descriptors map it.
    fn leaf_level(self) -> usize {
        match self {
            PageSize::K4 | PageSize::K64 => 3,
            PageSize::M2 | PageSize::M32 => 2,
            PageSize::G1 => 1,
        }
    }

    /// Whether it is a run of contiguous descriptors.
    fn contiguous(self) -> bool {
        matches!(self, PageSize::K64 | PageSize::M32)
    }
}

/// Bytes one descriptor maps at `level` (4 KiB granule).
fn level_bytes(level: usize) -> u64 {
    GRANULE << (9 * (3 - level))
}

/// The index of `va` in a table of `level`.
fn index(va: u64, level: usize) -> u64 {
    (va >> (12 + 9 * (3 - level))) & 0x1FF
}

/// A translation's result: the output address, the size of the page it
/// lies in, and the descriptor addresses the walk read (one per level).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Walk {
    /// The physical address `va` maps to.
    pub pa: u64,
    /// The size of the (possibly contiguous) page or block.
    pub size: PageSize,
    /// Descriptor addresses read, level 0 first.
    pub reads: Vec<u64>,
}

/// Walks the tables rooted at `root` (a TTBR's table address) for `va`:
/// one descriptor read per level from `mem`. Errors name the fault.
pub fn walk(mem: &SparseMemory, root: u64, va: u64) -> Result<Walk, String> {
    if va >> 48 != 0 {
        return Err(format!(
            "translation fault: VA {va:#x} is beyond the 48-bit input range"
        ));
    }
    let mut table = root;
    let mut reads = Vec::with_capacity(4);
    for level in 0..=3 {
        let at = table + 8 * index(va, level);
        reads.push(at);
        let d = u64::from_le_bytes(mem.read(at, 8).try_into().expect("8 bytes"));
        if d & VALID == 0 {
            return Err(format!(
                "translation fault at level {level}: VA {va:#x} has an invalid descriptor at {at:#x}"
            ));
        }
        let leaf = if level == 3 {
            d & TABLE_OR_PAGE == TABLE_OR_PAGE
        } else {
            d & TABLE_OR_PAGE == BLOCK
        };
        if leaf {
            if level == 0 {
                return Err(format!(
                    "translation fault at level 0: VA {va:#x} has a block descriptor (none at level 0 with a 4 KiB granule)"
                ));
            }
            let bytes = level_bytes(level);
            let size = match (level, d & CONTIGUOUS != 0) {
                (3, false) => PageSize::K4,
                (3, true) => PageSize::K64,
                (2, false) => PageSize::M2,
                (2, true) => PageSize::M32,
                _ => PageSize::G1,
            };
            let pa = (d & OA_MASK & !(bytes - 1)) | (va & (bytes - 1));
            return Ok(Walk { pa, size, reads });
        }
        if level == 3 {
            return Err(format!(
                "translation fault at level 3: VA {va:#x} has a reserved descriptor at {at:#x}"
            ));
        }
        table = d & OA_MASK;
    }
    unreachable!("level 3 returns")
}

/// Translation tables built in a [`SparseMemory`]: the root table at
/// `root`, further tables allocated upwards from it, one granule each.
#[derive(Debug, Clone)]
pub struct TranslationTables {
    mem: SparseMemory,
    root: u64,
    next_table: u64,
}

impl TranslationTables {
    /// Empty tables with the root table at `root` (granule-aligned).
    pub fn new(root: u64) -> TranslationTables {
        assert_eq!(root % GRANULE, 0, "the root table is granule-aligned");
        TranslationTables {
            mem: SparseMemory::new(),
            root,
            next_table: root + GRANULE,
        }
    }

    /// The memory holding the tables.
    pub fn memory(&self) -> &SparseMemory {
        &self.mem
    }

    /// The root table's address (what a TTBR holds).
    pub fn root(&self) -> u64 {
        self.root
    }

    /// Tables allocated, the root included.
    pub fn tables(&self) -> u64 {
        (self.next_table - self.root) / GRANULE
    }

    fn descriptor(&self, at: u64) -> u64 {
        u64::from_le_bytes(self.mem.read(at, 8).try_into().expect("8 bytes"))
    }

    /// Maps the page of `size` holding `va` to the one holding `pa` (both
    /// aligned down to the size), writing the descriptors (16 of them for a
    /// contiguous size). Errors when either is misaligned for the size or
    /// the range is already mapped differently.
    pub fn map(&mut self, va: u64, pa: u64, size: PageSize) -> Result<(), String> {
        let bytes = size.bytes();
        if va % bytes != 0 || pa % bytes != 0 {
            return Err(format!(
                "map {va:#x} -> {pa:#x}: both must be aligned to the page size ({bytes:#x})"
            ));
        }
        if va >> 48 != 0 || pa & !OA_MASK != 0 {
            return Err(format!("map {va:#x} -> {pa:#x}: beyond 48-bit addresses"));
        }
        let leaf = size.leaf_level();
        let (entries, step, extra) = if size.contiguous() {
            (CONTIGUOUS_ENTRIES, level_bytes(leaf), CONTIGUOUS)
        } else {
            (1, bytes, 0)
        };
        let kind = if leaf == 3 { TABLE_OR_PAGE } else { BLOCK };
        for e in 0..entries {
            let (v, p) = (va + e * step, pa + e * step);
            let mut table = self.root;
            for level in 0..leaf {
                let at = table + 8 * index(v, level);
                let d = self.descriptor(at);
                table = if d & VALID == 0 {
                    let t = self.next_table;
                    self.next_table += GRANULE;
                    self.mem.write(at, &(t | TABLE_OR_PAGE).to_le_bytes());
                    t
                } else if d & TABLE_OR_PAGE == TABLE_OR_PAGE {
                    d & OA_MASK
                } else {
                    return Err(format!(
                        "map {va:#x}: a block at level {level} already maps it"
                    ));
                };
            }
            let at = table + 8 * index(v, leaf);
            let want = p | AF | extra | kind;
            match self.descriptor(at) {
                0 => self.mem.write(at, &want.to_le_bytes()),
                d if d == want => {}
                _ => return Err(format!("map {va:#x}: already mapped differently")),
            }
        }
        Ok(())
    }
}

/// A cached translation: the page's VA and PA bases and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Translation {
    /// The page's virtual base.
    pub va: u64,
    /// The page's physical base.
    pub pa: u64,
    /// Its size.
    pub size: PageSize,
}

impl Translation {
    /// Whether it covers `va`.
    pub fn covers(&self, va: u64) -> bool {
        va & !(self.size.bytes() - 1) == self.va
    }

    /// The physical address of `va` (which it covers).
    pub fn apply(&self, va: u64) -> u64 {
        self.pa | (va & (self.size.bytes() - 1))
    }

    /// From a walk of `va`.
    pub fn of(va: u64, w: &Walk) -> Translation {
        let mask = !(w.size.bytes() - 1);
        Translation {
            va: va & mask,
            pa: w.pa & mask,
            size: w.size,
        }
    }
}

/// A fully associative translation cache with LRU replacement, each entry
/// a page of any size (a TLB, or a device's ATC), each usable from the
/// time its translation arrives.
#[derive(Debug, Clone)]
pub struct TranslationCache {
    capacity: usize,
    /// Least recently used first: (translation, usable from).
    entries: Vec<(Translation, Tick)>,
    /// Lookups that hit and that missed.
    pub hits: u64,
    /// See [`TranslationCache::hits`].
    pub misses: u64,
}

impl TranslationCache {
    /// An empty cache of `capacity` entries (at least one).
    pub fn new(capacity: usize) -> TranslationCache {
        TranslationCache {
            capacity: capacity.max(1),
            entries: Vec::new(),
            hits: 0,
            misses: 0,
        }
    }

    /// The entry covering `va` (made most recently used) and the time it is
    /// usable from, counting a hit or a miss.
    pub fn lookup(&mut self, va: u64) -> Option<(Translation, Tick)> {
        match self.entries.iter().position(|(t, _)| t.covers(va)) {
            Some(i) => {
                let e = self.entries.remove(i);
                self.entries.push(e);
                self.hits += 1;
                Some(e)
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    /// Whether an entry covers `va` (no LRU update, not counted).
    pub fn holds(&self, va: u64) -> bool {
        self.peek(va).is_some()
    }

    /// The entry covering `va` and when it is usable (no LRU update, not
    /// counted).
    pub fn peek(&self, va: u64) -> Option<(Translation, Tick)> {
        self.entries.iter().find(|(t, _)| t.covers(va)).copied()
    }

    /// Inserts `t`, usable from `at`, evicting the least recently used
    /// entry when full (an entry for the same page is replaced).
    pub fn insert(&mut self, t: Translation, at: Tick) {
        self.entries
            .retain(|(e, _)| e.va != t.va || e.size != t.size);
        if self.entries.len() == self.capacity {
            self.entries.remove(0);
        }
        self.entries.push((t, at));
    }

    /// Drops every entry (the hit and miss counts stay).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The declaration of `smmu`.
pub static SMMU: ComponentSpec = ComponentSpec {
    type_name: "smmu",
    description: "The host IOMMU answering ATS translation requests (an Arm SMMU on the N1-SDP): a TLB, and a walker reading AArch64 4 KiB-granule translation tables from memory, pre-translating the next pages after a walk. In a run (ccix_ctg) it answers Translation Requests on its io port.",
    params: &[
        ParamSpec { name: "tlb_entries", kind: ParamKind::Int, default: ParamDefault::Int(128), unit: "entries", range: ParamRange::between(1.0, 1_048_576.0), from: "assumed", description: "TLB entries (fully associative, LRU; one per page of any size)." },
        ParamSpec { name: "tlb_ns", kind: ParamKind::Float, default: ParamDefault::Float(10.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed", description: "A TLB lookup, hit or miss." },
        ParamSpec { name: "walk_read_ns", kind: ParamKind::Float, default: ParamDefault::Float(80.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed", description: "One descriptor read of a walk, from memory." },
        ParamSpec { name: "prefetch_pages", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "pages", range: ParamRange::between(0.0, 64.0), from: "CCIX §IV Exp. 2: pre-translations by the host IOMMU for sequential accesses", description: "Pages after a walked one that the walker pre-translates into the TLB (0: none)." },
    ],
    ports: &[PortSpec { name: "io", description: "PCIe VC0 from the device's ATS switch: Translation Requests in, Translation Completions out.", required: false }],
    stats: &[],
    check: None,
};

/// The SMMU's answer to one translation request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmmuAnswer {
    /// The translation.
    pub translation: Translation,
    /// When the answer leaves the SMMU.
    pub done: Tick,
    /// Whether the TLB held it (possibly still being pre-translated).
    pub tlb_hit: bool,
}

/// The host IOMMU: TLB, walker and tables.
#[derive(Debug, Clone)]
pub struct Smmu {
    tables: TranslationTables,
    /// Its TLB.
    pub tlb: TranslationCache,
    tlb_time: Tick,
    read_time: Tick,
    prefetch_pages: u64,
    /// When the walker is free.
    walker_free: Tick,
    /// Walks done (demand and pre-translation) and descriptors read.
    pub walks: u64,
    /// See [`Smmu::walks`].
    pub descriptor_reads: u64,
}

impl Smmu {
    /// An SMMU with the `smmu` parameters `p` over `tables`.
    pub fn new(p: &Params, tables: TranslationTables) -> Smmu {
        Smmu {
            tables,
            tlb: TranslationCache::new(p.uint("tlb_entries") as usize),
            tlb_time: ns_to_ps(p.float("tlb_ns")),
            read_time: ns_to_ps(p.float("walk_read_ns")),
            prefetch_pages: p.uint("prefetch_pages"),
            walker_free: 0,
            walks: 0,
            descriptor_reads: 0,
        }
    }

    /// The tables it walks.
    pub fn tables(&self) -> &TranslationTables {
        &self.tables
    }

    /// Walks `va` on the walker from `at`: the translation and when it is
    /// known.
    fn timed_walk(&mut self, va: u64, at: Tick) -> Result<(Translation, Tick), String> {
        let w = walk(self.tables.memory(), self.tables.root(), va)?;
        let start = at.max(self.walker_free);
        let done = start + w.reads.len() as Tick * self.read_time;
        self.walker_free = done;
        self.walks += 1;
        self.descriptor_reads += w.reads.len() as u64;
        Ok((Translation::of(va, &w), done))
    }

    /// Answers a translation request for `va` arriving at `at`, then
    /// pre-translates the `prefetch_pages` pages after it that the TLB
    /// does not hold (walked after the answer, which does not wait for
    /// them; an unmapped page is simply not pre-translated). A request for
    /// a pre-translated page thus hits, and moves the walker on to the
    /// pages after it: a sequential stream keeps ahead of its requests.
    pub fn translate(&mut self, va: u64, at: Tick) -> Result<SmmuAnswer, String> {
        let looked = at + self.tlb_time;
        let (t, done, tlb_hit) = match self.tlb.lookup(va) {
            Some((t, ready)) => (t, looked.max(ready), true),
            None => {
                let (t, done) = self.timed_walk(va, looked)?;
                self.tlb.insert(t, done);
                (t, done, false)
            }
        };
        let mut next = t.va + t.size.bytes();
        for _ in 0..self.prefetch_pages {
            if let Some((p, _)) = self.tlb.peek(next) {
                next = p.va + p.size.bytes();
                continue;
            }
            match self.timed_walk(next, done) {
                Ok((p, ready)) => {
                    self.tlb.insert(p, ready);
                    next = p.va + p.size.bytes();
                }
                Err(_) => break,
            }
        }
        Ok(SmmuAnswer {
            translation: t,
            done,
            tlb_hit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VA: u64 = 0x0000_7F12_0000_0000;
    const PA: u64 = 0x0000_0008_4000_0000;

    #[test]
    fn walks_return_the_mapped_pa_for_every_page_size() {
        for (name, size) in PageSize::ALL {
            let mut t = TranslationTables::new(0x1000_0000);
            let va = VA + 3 * size.bytes();
            let pa = PA + 5 * size.bytes().max(1 << 30);
            t.map(va, pa, size).unwrap();
            let offset = size.bytes() - 8;
            let w = walk(t.memory(), t.root(), va + offset).unwrap();
            assert_eq!(w.pa, pa + offset, "{name}");
            assert_eq!(w.size, size, "{name}");
            // Levels 0..=leaf, one read each.
            assert_eq!(w.reads.len(), size.leaf_level() + 1, "{name}");
            // Just past the page: unmapped (a fault) for single pages.
            assert!(walk(t.memory(), t.root(), va + size.bytes()).is_err());
        }
    }

    #[test]
    fn descriptors_are_bytes_in_memory() {
        let mut t = TranslationTables::new(0x1000_0000);
        t.map(VA, PA, PageSize::K4).unwrap();
        let w = walk(t.memory(), t.root(), VA).unwrap();
        let last = w.reads[3];
        let d = u64::from_le_bytes(t.memory().read(last, 8).try_into().unwrap());
        assert_eq!(d & OA_MASK, PA);
        assert_eq!(d & 0b11, 0b11, "a level-3 page descriptor");
        assert_eq!(t.tables(), 4, "root and one table per lower level");
        // A second page in the same 2 MiB shares every table.
        t.map(VA + GRANULE, PA + 7 * GRANULE, PageSize::K4).unwrap();
        assert_eq!(t.tables(), 4);
        assert_eq!(
            walk(t.memory(), t.root(), VA + GRANULE + 1).unwrap().pa,
            PA + 7 * GRANULE + 1
        );
    }

    #[test]
    fn faults_and_misalignment_are_errors() {
        let mut t = TranslationTables::new(0x1000_0000);
        assert!(t.map(VA + 4096, PA, PageSize::M2).is_err());
        let e = walk(t.memory(), t.root(), VA).unwrap_err();
        assert!(e.contains("level 0"), "{e}");
        t.map(VA, PA, PageSize::M2).unwrap();
        assert!(t.map(VA, PA, PageSize::K4).is_err(), "a block maps it");
    }

    #[test]
    fn tlb_hits_and_evicts_least_recently_used() {
        let page = |i: u64| Translation {
            va: VA + i * GRANULE,
            pa: PA + i * GRANULE,
            size: PageSize::K4,
        };
        let mut c = TranslationCache::new(2);
        c.insert(page(0), 0);
        c.insert(page(1), 0);
        assert!(c.lookup(VA + 5).is_some()); // page 0 now most recent
        c.insert(page(2), 0); // evicts page 1
        assert!(c.lookup(VA + GRANULE).is_none());
        assert!(c.lookup(VA + 2 * GRANULE + 9).is_some());
        assert!(c.lookup(VA).is_some());
        assert_eq!((c.hits, c.misses), (3, 1));
        // A 2 MiB entry covers every 4 KiB inside it.
        let mut big = TranslationCache::new(1);
        big.insert(
            Translation {
                va: VA,
                pa: PA,
                size: PageSize::M2,
            },
            0,
        );
        assert_eq!(
            big.lookup(VA + 0x1F_F000).unwrap().0.apply(VA + 0x1F_F000),
            PA + 0x1F_F000
        );
    }

    fn smmu(prefetch: i64) -> Smmu {
        let mut t = TranslationTables::new(0x1000_0000);
        for i in 0..4 {
            t.map(VA + i * GRANULE, PA + (9 - i) * GRANULE, PageSize::K4)
                .unwrap();
        }
        let p = Params::new()
            .with("tlb_entries", ParamValue::Int(8), "test")
            .with("tlb_ns", ParamValue::Float(10.0), "test")
            .with("walk_read_ns", ParamValue::Float(100.0), "test")
            .with("prefetch_pages", ParamValue::Int(prefetch), "test");
        Smmu::new(&p, t)
    }

    #[test]
    fn smmu_walks_on_a_miss_and_hits_after() {
        let mut s = smmu(0);
        let a = s.translate(VA + 0x10, 0).unwrap();
        assert!(!a.tlb_hit);
        assert_eq!(a.translation.apply(VA + 0x10), PA + 9 * GRANULE + 0x10);
        assert_eq!(a.done, ns_to_ps(10.0 + 4.0 * 100.0));
        let b = s.translate(VA + 0x20, a.done).unwrap();
        assert!(b.tlb_hit);
        assert_eq!(b.done - a.done, ns_to_ps(10.0));
        // Without pre-translation the next page walks.
        assert!(!s.translate(VA + GRANULE, b.done).unwrap().tlb_hit);
    }

    #[test]
    fn pre_translation_turns_the_next_page_into_a_hit() {
        let mut s = smmu(1);
        let a = s.translate(VA, 0).unwrap();
        assert_eq!(s.walks, 2, "the page and its successor");
        // Arriving after the pre-translation finished: a plain hit.
        let late = a.done + ns_to_ps(1000.0);
        let b = s.translate(VA + GRANULE, late).unwrap();
        assert!(b.tlb_hit);
        assert_eq!(b.done, late + ns_to_ps(10.0));
        assert_eq!(b.translation.apply(VA + GRANULE), PA + 8 * GRANULE);
        // Arriving at once: waits for the walk under way, not a new one.
        let mut s = smmu(1);
        let a = s.translate(VA, 0).unwrap();
        let b = s.translate(VA + GRANULE, a.done).unwrap();
        assert!(b.tlb_hit);
        assert_eq!(b.done, a.done + ns_to_ps(400.0));
    }
}

//! Where a decoded message lives in memory: C++-style objects and string
//! buffers placed by a size-class allocator, and the line-level plans the
//! NIC models issue from them.
//!
//! A protobuf C++ object holds a header (vtable pointer and has-bits), one
//! slot per set field (a scalar in 8 bytes, a nested message as a pointer
//! to its own object) and, for a string or bytes field, one of two
//! [`StringLayout`]s:
//!
//! * [`StringLayout::Inline`]: a 32-byte `std::string` in the slot itself,
//!   its characters inline up to 15 bytes and in a heap buffer beyond (the
//!   model before; protobuf's `InlinedStringField` has this shape, but
//!   generated code uses it only for fields marked with an internal option).
//! * [`StringLayout::StdString`]: what protobuf's generated C++ holds for
//!   every singular string/bytes field: an `ArenaStringPtr`, one tagged
//!   pointer (8 bytes) to a `std::string` allocated apart
//!   (protocolbuffers/protobuf `src/google/protobuf/arenastring.h`,
//!   `TaggedStringPtr`: `NewString` does `new std::string(...)`, or
//!   `Arena::Create<std::string>` on an arena). That object is libstdc++'s
//!   32-byte `basic_string` (gcc `libstdc++-v3/include/bits/basic_string.h`,
//!   GCC 14: `_M_dataplus._M_p`, `_M_string_length`, and a union of
//!   `_M_local_buf[_S_local_capacity + 1]` with `_M_allocated_capacity`,
//!   `_S_local_capacity = 15 / sizeof(_CharT)`): up to 15 characters in the
//!   object, longer ones in a buffer of length + 1 bytes it allocates. So a
//!   string costs one allocation (two if long) and one more dependent read
//!   than inline: slot -> `std::string` -> buffer.
//!
//! Objects, `std::string`s and buffers come from a malloc with size classes (assumed: 64 B classes up to 1 KiB, 4 KiB
//! classes beyond, each class its own 1 MiB region, bump-allocated), so
//! on a fresh heap objects of one size lie at a regular stride: the
//! streams the RPC prefetcher can learn (Cohet §V-B2). Freed blocks go
//! onto LIFO per-class free lists ([`Allocator::free`], [`Layout::free`]),
//! so on a server's heap, after earlier requests were destroyed, a new
//! message's objects take those blocks in the order they were freed and
//! are mostly not neighbours. Who builds the objects decides
//! their order: the NIC's decoder in wire order ([`Layout::place`]), the
//! CPU's construction code in its own order of setting the fields
//! ([`Layout::place_constructed`]), which the serializer's walk does not
//! follow.
//!
//! * [`Layout::write_plan`]: the lines deserialization writes, each with
//!   the field whose decoding completes it (the NIC pushes a line once it
//!   is complete).
//! * [`Layout::read_plan`]: the lines serialization reads in the order the
//!   serializer walks the fields, each with the earlier read it depends on
//!   (an object's lines need the parent line holding the pointer; a string
//!   buffer needs the line holding its `std::string`).

use std::collections::BTreeMap;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::bench::FieldKind;
use super::wire::{Decoded, Value, WorkItem};

/// Cache line size (bytes) of the host and the device.
pub const LINE: u64 = 64;
const HEADER: u64 = 16;
const SLOT: u64 = 8;
const STRING_SLOT: u64 = 32;
const SSO_MAX: usize = 15;
/// libstdc++'s `sizeof(std::string)` on a 64-bit target.
pub const STD_STRING: u64 = 32;

/// How a string/bytes field is held by its message object (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StringLayout {
    /// A 32-byte `std::string` inline in the object's slot.
    #[default]
    Inline,
    /// An 8-byte pointer in the slot to a `std::string` allocated apart
    /// (protobuf's `ArenaStringPtr`).
    StdString,
}

impl StringLayout {
    /// The layout named `name` (`inline` or `std_string`).
    pub fn parse(name: &str) -> Result<StringLayout, String> {
        match name {
            "inline" => Ok(StringLayout::Inline),
            "std_string" => Ok(StringLayout::StdString),
            other => Err(format!(
                "string_layout {other:?} is not inline or std_string"
            )),
        }
    }

    /// Bytes of a string field's slot in its object.
    fn slot(self) -> u64 {
        match self {
            StringLayout::Inline => STRING_SLOT,
            StringLayout::StdString => SLOT,
        }
    }
}
const REGION: u64 = 1 << 20;

/// A size-class allocator over `base`, or an arena.
///
/// Freed blocks of the size-class allocator go onto their class's free
/// list, and a later allocation of the class takes the block freed last
/// (LIFO), before it bumps the region: the per-size-class free lists of
/// tcmalloc (gperftools' design notes: "a singly linked list of free
/// objects per size-class", allocation pops its head, a free pushes onto
/// it) and of glibc's tcache and fastbins. A long-running server's
/// requests so reuse the blocks of earlier requests in the order those
/// were destroyed, not in address order ([`Layout::free`]).
#[derive(Debug, Clone)]
pub struct Allocator {
    base: u64,
    next: BTreeMap<u64, u64>,
    /// Per size class, the freed blocks, the last freed at the end.
    free: BTreeMap<u64, Vec<u64>>,
    /// An arena's next free byte.
    arena: Option<u64>,
}

impl Allocator {
    /// An allocator whose regions start at `base`.
    pub fn new(base: u64) -> Allocator {
        Allocator {
            base,
            next: BTreeMap::new(),
            free: BTreeMap::new(),
            arena: None,
        }
    }

    /// An arena from `base`: every block right after the previous one,
    /// 16-byte aligned (RpcNIC's temp buffer, filled in decode order).
    pub fn arena(base: u64) -> Allocator {
        Allocator {
            base,
            next: BTreeMap::new(),
            free: BTreeMap::new(),
            arena: Some(base),
        }
    }

    /// The size class of a block of `bytes` (64 B classes up to 1 KiB,
    /// 4 KiB ones beyond) and its region's index.
    fn class_of(bytes: u64) -> (u64, u64) {
        let class = if bytes <= 1024 {
            bytes.div_ceil(64).max(1) * 64
        } else {
            bytes.div_ceil(4096) * 4096
        };
        let index = if class <= 1024 {
            class / 64 - 1
        } else {
            15 + class / 4096
        };
        (class, index)
    }

    /// Returns the block at `addr` of `bytes` to its class's free list
    /// (an arena frees nothing block by block: it is dropped whole).
    pub fn free(&mut self, addr: u64, bytes: u64) {
        if self.arena.is_none() {
            let (class, _) = Allocator::class_of(bytes);
            self.free.entry(class).or_default().push(addr);
        }
    }

    /// The address of a new block of `bytes`.
    pub fn alloc(&mut self, bytes: u64) -> u64 {
        if let Some(at) = self.arena.as_mut() {
            let addr = *at;
            *at += bytes.div_ceil(16) * 16;
            return addr;
        }
        let (class, index) = Allocator::class_of(bytes);
        if let Some(addr) = self.free.get_mut(&class).and_then(|l| l.pop()) {
            return addr;
        }
        let region = self.base + index * REGION;
        let at = self.next.entry(class).or_insert(region);
        let addr = *at;
        *at += class;
        assert!(*at <= region + REGION, "allocator region {index} full");
        addr
    }
}

/// One object of a decoded message.
#[derive(Debug, Clone)]
pub struct Object {
    /// Address.
    pub addr: u64,
    /// Bytes.
    pub bytes: u64,
    /// Parent object and the offset of the pointer slot in it.
    pub parent: Option<(usize, u64)>,
    /// Heap string buffers: (slot offset in this object, address, bytes).
    pub strings: Vec<(u64, u64, u64)>,
    /// The fields in wire order: (slot offset, kind, child object index
    /// for a message, string index for an out-of-line string).
    pub slots: Vec<(u64, FieldKind, Option<usize>, Option<usize>)>,
    /// [`StringLayout::StdString`]: per string field, (slot offset, address
    /// of its `std::string` object); a long string's buffer (in `strings`)
    /// is then pointed to by that object, not by the slot.
    pub std_strings: Vec<(u64, u64)>,
}

impl Object {
    /// The address of the `std::string` object of the string field at
    /// slot `offset`, if it is allocated apart.
    pub fn std_string_at(&self, offset: u64) -> Option<u64> {
        self.std_strings.iter().find(|s| s.0 == offset).map(|s| s.1)
    }
}

/// The objects of one message, root first, in the order the wire walk
/// starts them.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// Objects.
    pub objects: Vec<Object>,
    /// How string fields are held.
    pub string_layout: StringLayout,
}

/// One line a plan touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineOp {
    /// Line address.
    pub line: u64,
    /// Deserialization: the work item whose decoding completes the line.
    /// Serialization: the earlier read it depends on.
    pub after: Option<usize>,
    /// Serialization: the work item (encoder step) that consumes the line.
    pub item: usize,
}

/// `plan` (a [`Layout::read_plan`]) reordered level by level of its
/// pointer chains: the reads that need no pointer first, then those whose
/// pointer is in a first-level line, and so on, each level in walk order,
/// the dependencies renumbered. A fetch unit that issues a read as soon as
/// the line holding its pointer has arrived (decoupled from the encoder,
/// which still takes the fields in wire order) issues in this order, so a
/// read waits for its own pointer only; issued in walk order by an
/// in-order requester, a read would also wait behind every dependent read
/// of the sibling subtrees walked before it.
pub fn by_pointer_level(plan: &[LineOp]) -> Vec<LineOp> {
    let mut level = vec![0usize; plan.len()];
    for (i, op) in plan.iter().enumerate() {
        level[i] = op.after.map_or(0, |j| level[j] + 1);
    }
    let mut order: Vec<usize> = (0..plan.len()).collect();
    order.sort_by_key(|&i| (level[i], i));
    let mut new_index = vec![0usize; plan.len()];
    for (k, &i) in order.iter().enumerate() {
        new_index[i] = k;
    }
    order
        .iter()
        .map(|&i| LineOp {
            after: plan[i].after.map(|j| new_index[j]),
            ..plan[i]
        })
        .collect()
}

fn lines_of(addr: u64, bytes: u64) -> impl Iterator<Item = u64> {
    let first = addr / LINE;
    let last = (addr + bytes.max(1) - 1) / LINE;
    (first..=last).map(|l| l * LINE)
}

impl Layout {
    /// Places `d`'s objects and buffers with `alloc`, strings inline.
    pub fn place(d: &Decoded, alloc: &mut Allocator) -> Layout {
        Layout::place_with(d, alloc, StringLayout::Inline)
    }

    /// Places `d`'s objects and buffers with `alloc` as the decoder builds
    /// them, in wire order: an object when its message starts, a string's
    /// `std::string` (with `strings = StdString`) and then its buffer when
    /// its field is decoded (protobuf's parser: `mutable_fN()` allocates
    /// the string, its assignment the buffer).
    pub fn place_with(d: &Decoded, alloc: &mut Allocator, strings: StringLayout) -> Layout {
        let mut l = Layout {
            objects: Vec::new(),
            string_layout: strings,
        };
        l.add(d, None, alloc);
        l
    }

    /// Places `d`'s objects and buffers as the CPU's construction code
    /// allocates them: each object's fields are set in a seeded order
    /// unrelated to their numbers, a sub-message allocated when its field
    /// is first set (`mutable_fN()`, its own fields set right then) and a
    /// long string's buffer when its field is set. HyperProtoBench's
    /// generated construction code does this: in `bench1/benchmark.inc`
    /// (google/HyperProtoBench@3ff7f5f), `M19_Set_F1` sets `f12, f2, f3,
    /// f11, f13`, then allocates `f6`'s sub-message, ..., then `f10`'s and
    /// inside it `f1`'s; every `MN_Set_F1` of the four stored benches
    /// orders its fields so. The serializer walks fields in number order,
    /// so consecutive nested objects it reads were not allocated one after
    /// the other. Object indices stay the wire walk's (as [`Layout::place`]).
    pub fn place_constructed(d: &Decoded, alloc: &mut Allocator, seed: u64) -> Layout {
        Layout::place_constructed_with(d, alloc, seed, StringLayout::Inline)
    }

    /// [`Layout::place_constructed`] with string fields held as `strings`
    /// (a `std::string` allocated when its field is set, then its buffer:
    /// `set_fN(v)` runs `new std::string(v)`).
    pub fn place_constructed_with(
        d: &Decoded,
        alloc: &mut Allocator,
        seed: u64,
        strings: StringLayout,
    ) -> Layout {
        // The structure (object indices, slots, sizes) from a walk-order
        // placement; the addresses are then allocated in construction order.
        let mut l = Layout::place_with(d, &mut Allocator::arena(0), strings);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5345_545f);
        l.construct(0, alloc, &mut rng);
        l
    }

    fn construct(&mut self, o: usize, alloc: &mut Allocator, rng: &mut Xoshiro256PlusPlus) {
        self.objects[o].addr = alloc.alloc(self.objects[o].bytes);
        // A seeded permutation of the object's fields (Fisher-Yates).
        let n = self.objects[o].slots.len();
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        for k in order {
            let (offset, _, child, string) = self.objects[o].slots[k];
            if let Some(i) = self.objects[o]
                .std_strings
                .iter()
                .position(|s| s.0 == offset)
            {
                self.objects[o].std_strings[i].1 = alloc.alloc(STD_STRING);
            }
            if let Some(s) = string {
                let n = self.objects[o].strings[s].2;
                self.objects[o].strings[s].1 = alloc.alloc(n);
            }
            if let Some(c) = child {
                self.construct(c, alloc, rng);
            }
        }
    }

    fn add(&mut self, d: &Decoded, parent: Option<(usize, u64)>, alloc: &mut Allocator) -> usize {
        let bytes = HEADER
            + d.fields
                .iter()
                .map(|(_, v)| match v {
                    Value::Bytes(_) => self.string_layout.slot(),
                    _ => SLOT,
                })
                .sum::<u64>();
        let me = self.objects.len();
        self.objects.push(Object {
            addr: alloc.alloc(bytes),
            bytes,
            parent,
            strings: Vec::new(),
            slots: Vec::new(),
            std_strings: Vec::new(),
        });
        let mut offset = HEADER;
        for (_, v) in &d.fields {
            let (kind, child, string, size) = match v {
                Value::Varint(_) => (FieldKind::Varint, None, None, SLOT),
                Value::Fixed64(_) => (FieldKind::Fixed64, None, None, SLOT),
                Value::Fixed32(_) => (FieldKind::Fixed32, None, None, SLOT),
                Value::Bytes(b) => {
                    if self.string_layout == StringLayout::StdString {
                        let at = alloc.alloc(STD_STRING);
                        self.objects[me].std_strings.push((offset, at));
                    }
                    let s = (b.len() > SSO_MAX).then(|| {
                        let n = b.len() as u64 + 1;
                        let o = &mut self.objects[me];
                        o.strings.push((offset, alloc.alloc(n), n));
                        o.strings.len() - 1
                    });
                    (FieldKind::Bytes, None, s, self.string_layout.slot())
                }
                Value::Message(m) => {
                    let c = self.add(m, Some((me, offset)), alloc);
                    (FieldKind::Message, Some(c), None, SLOT)
                }
            };
            self.objects[me].slots.push((offset, kind, child, string));
            offset += size;
        }
        me
    }

    /// Bytes of every object and buffer.
    pub fn bytes(&self) -> u64 {
        self.objects
            .iter()
            .map(|o| {
                o.bytes
                    + o.strings.iter().map(|s| s.2).sum::<u64>()
                    + STD_STRING * o.std_strings.len() as u64
            })
            .sum()
    }

    /// Blocks the message takes from its heap: its objects, `std::string`
    /// objects allocated apart and long strings' buffers.
    pub fn allocations(&self) -> u64 {
        self.objects
            .iter()
            .map(|o| 1 + o.strings.len() + o.std_strings.len())
            .sum::<usize>() as u64
    }

    /// Of [`Layout::allocations`], the long strings' character buffers:
    /// `std::string`'s own allocations (its `_M_create`), which come from
    /// the heap's `operator new` even when the message and its
    /// `std::string` objects live on an arena (protobuf `arenastring.h`,
    /// `TaggedStringPtr` kMutableArena: the instance on the arena, its
    /// contents owned by the `std::string`).
    pub fn buffer_allocations(&self) -> u64 {
        self.objects.iter().map(|o| o.strings.len()).sum::<usize>() as u64
    }

    /// The blocks the decoding of each work item of `items` (the walk of
    /// the same message) allocates: a nested message's field its object,
    /// a string field its `std::string` (held apart) and its buffer (a
    /// long string); the root object goes with the first item. They sum to
    /// [`Layout::allocations`].
    pub fn item_allocations(&self, items: &[WorkItem]) -> Vec<u64> {
        let mut fields: Vec<Vec<usize>> = vec![Vec::new(); self.objects.len()];
        for (i, it) in items.iter().enumerate() {
            fields[it.object as usize].push(i);
        }
        let mut blocks = vec![0u64; items.len()];
        if let Some(first) = blocks.first_mut() {
            *first += 1;
        }
        for (o, obj) in self.objects.iter().enumerate() {
            for (k, &(offset, _, child, string)) in obj.slots.iter().enumerate() {
                let i = fields[o][k];
                blocks[i] += u64::from(child.is_some())
                    + u64::from(string.is_some())
                    + u64::from(obj.std_string_at(offset).is_some());
            }
        }
        blocks
    }

    /// Frees every object and buffer of the message in the order its C++
    /// destructor does (protobuf's generated `SharedDtor`: each field in
    /// declaration order, a string's buffer released, a sub-message
    /// deleted, which runs its own destructor first; the object's own
    /// block last, by the `delete` that ran the destructor).
    pub fn free(&self, alloc: &mut Allocator) {
        self.free_object(0, alloc);
    }

    fn free_object(&self, o: usize, alloc: &mut Allocator) {
        let obj = &self.objects[o];
        for &(offset, _, child, string) in &obj.slots {
            // `delete` of a std::string: its destructor frees the buffer,
            // then the object's own block.
            if let Some(s) = string {
                let (_, addr, n) = obj.strings[s];
                alloc.free(addr, n);
            }
            if let Some(at) = obj.std_string_at(offset) {
                alloc.free(at, STD_STRING);
            }
            if let Some(c) = child {
                self.free_object(c, alloc);
            }
        }
        alloc.free(obj.addr, obj.bytes);
    }

    /// The lines deserialization writes: every line of every object and
    /// buffer, each with the work item (of `items`, the walk of the same
    /// message) after whose decoding it is complete. A line shared by two
    /// blocks appears once, with the later item.
    pub fn write_plan(&self, items: &[WorkItem]) -> Vec<LineOp> {
        // Per object, the work items of its fields in order.
        let mut fields: Vec<Vec<usize>> = vec![Vec::new(); self.objects.len()];
        for (i, it) in items.iter().enumerate() {
            fields[it.object as usize].push(i);
        }
        let mut done: BTreeMap<u64, usize> = BTreeMap::new();
        let mut order: Vec<u64> = Vec::new();
        let mut mark = |line: u64, item: usize, order: &mut Vec<u64>| {
            let e = done.entry(line).or_insert_with(|| {
                order.push(line);
                item
            });
            *e = (*e).max(item);
        };
        for (o, obj) in self.objects.iter().enumerate() {
            // The object's header line is complete with its first field
            // (or at once, for an empty object: item 0).
            let first = fields[o].first().copied().unwrap_or(0);
            mark(obj.addr / LINE * LINE, first, &mut order);
            for (k, &(offset, kind, _, string)) in obj.slots.iter().enumerate() {
                let item = fields[o][k];
                let size = if kind == FieldKind::Bytes {
                    self.string_layout.slot()
                } else {
                    SLOT
                };
                for line in lines_of(obj.addr + offset, size) {
                    mark(line, item, &mut order);
                }
                if let Some(at) = obj.std_string_at(offset) {
                    for line in lines_of(at, STD_STRING) {
                        mark(line, item, &mut order);
                    }
                }
                if let Some(s) = string {
                    let (_, addr, n) = obj.strings[s];
                    for line in lines_of(addr, n) {
                        mark(line, item, &mut order);
                    }
                }
            }
        }
        let mut plan: Vec<LineOp> = order
            .into_iter()
            .map(|line| LineOp {
                line,
                after: Some(done[&line]),
                item: done[&line],
            })
            .collect();
        plan.sort_by_key(|op| (op.item, op.line));
        plan
    }

    /// The lines serialization reads, in the serializer's walk order, each
    /// with the earlier read (an index into the plan) that yields its
    /// address, and the work item that consumes it. A line read before is
    /// not read again.
    pub fn read_plan(&self, items: &[WorkItem]) -> Vec<LineOp> {
        let mut fields: Vec<Vec<usize>> = vec![Vec::new(); self.objects.len()];
        for (i, it) in items.iter().enumerate() {
            fields[it.object as usize].push(i);
        }
        let mut plan: Vec<LineOp> = Vec::new();
        let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
        self.read_object(0, None, &fields, &mut plan, &mut seen);
        plan
    }

    fn read_object(
        &self,
        o: usize,
        pointer_read: Option<usize>,
        fields: &[Vec<usize>],
        plan: &mut Vec<LineOp>,
        seen: &mut BTreeMap<u64, usize>,
    ) {
        let obj = &self.objects[o];
        let first_item = fields[o].first().copied().unwrap_or(0);
        fn push(
            seen: &mut BTreeMap<u64, usize>,
            plan: &mut Vec<LineOp>,
            line: u64,
            after: Option<usize>,
            item: usize,
        ) -> usize {
            *seen.entry(line).or_insert_with(|| {
                plan.push(LineOp { line, after, item });
                plan.len() - 1
            })
        }
        // The object's own lines: the serializer knows its size from the
        // schema once it has the pointer.
        let mut line_read: BTreeMap<u64, usize> = BTreeMap::new();
        for line in lines_of(obj.addr, obj.bytes) {
            let i = push(seen, plan, line, pointer_read, first_item);
            line_read.insert(line, i);
        }
        for (k, &(offset, _, child, string)) in obj.slots.iter().enumerate() {
            let item = fields[o][k];
            let mut slot_read = line_read[&((obj.addr + offset) / LINE * LINE)];
            // A std::string apart: its object after the slot's line, its
            // buffer after the object's first line (`_M_p` at offset 0).
            if let Some(at) = obj.std_string_at(offset) {
                let mut first = None;
                for line in lines_of(at, STD_STRING) {
                    let i = push(seen, plan, line, Some(slot_read), item);
                    first.get_or_insert(i);
                }
                slot_read = first.expect("a std::string has a line");
            }
            if let Some(s) = string {
                let (_, addr, n) = obj.strings[s];
                for line in lines_of(addr, n) {
                    push(seen, plan, line, Some(slot_read), item);
                }
            }
            if let Some(c) = child {
                self.read_object(c, Some(slot_read), fields, plan, seen);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{bench, wire};
    use super::*;

    /// Level by level: every read after the one holding its pointer, the
    /// levels in order, each level in walk order, the same reads.
    #[test]
    fn reads_by_pointer_level_keep_their_pointers_first() {
        let op = |line, after, item| LineOp { line, after, item };
        // Walk order: root, child A (after root), A's child (after A),
        // child B (after root).
        let plan = vec![
            op(0x0, None, 0),
            op(0x40, Some(0), 1),
            op(0x80, Some(1), 2),
            op(0xc0, Some(0), 3),
        ];
        let by_level = by_pointer_level(&plan);
        assert_eq!(
            by_level,
            vec![
                op(0x0, None, 0),
                op(0x40, Some(0), 1),
                op(0xc0, Some(0), 3),
                op(0x80, Some(1), 2),
            ]
        );
        for p in &bench::PROFILES {
            for r in bench::generate(p, 5, 3) {
                let (items, tree) = wire::walk(&bench::encode(&r)).unwrap();
                let plan = Layout::place(&tree, &mut Allocator::new(0)).read_plan(&items);
                let b = by_pointer_level(&plan);
                assert_eq!(b.len(), plan.len(), "{}", p.name);
                let mut lines: Vec<u64> = b.iter().map(|o| o.line).collect();
                lines.sort_unstable();
                let mut want: Vec<u64> = plan.iter().map(|o| o.line).collect();
                want.sort_unstable();
                assert_eq!(lines, want, "{}", p.name);
                for (i, o) in b.iter().enumerate() {
                    if let Some(j) = o.after {
                        assert!(j < i, "{}: read {i} before its pointer {j}", p.name);
                        // The pointer's line is the one the walk named.
                        let orig = plan.iter().position(|x| x.line == o.line).unwrap();
                        assert_eq!(b[j].line, plan[plan[orig].after.unwrap()].line);
                    }
                }
            }
        }
    }

    /// Each work item's blocks sum to the message's, on every bench and
    /// in both string layouts.
    #[test]
    fn item_allocations_sum_to_the_messages_allocations() {
        for p in &crate::rpc::bench::PROFILES {
            for r in crate::rpc::bench::generate(p, 5, 3) {
                let (items, tree) = crate::rpc::wire::walk(&crate::rpc::bench::encode(&r)).unwrap();
                for strings in [StringLayout::Inline, StringLayout::StdString] {
                    let l = Layout::place_with(&tree, &mut Allocator::new(0), strings);
                    let blocks = l.item_allocations(&items);
                    assert_eq!(blocks.len(), items.len());
                    assert_eq!(blocks.iter().sum::<u64>(), l.allocations(), "{}", p.name);
                    assert!(l.buffer_allocations() < l.allocations());
                }
            }
        }
    }

    #[test]
    fn allocator_keeps_size_classes_apart_at_a_stride() {
        let mut a = Allocator::new(0x1000_0000);
        let x = a.alloc(40);
        let y = a.alloc(64);
        let z = a.alloc(100);
        assert_eq!(y - x, 64, "40 and 64 B share the 64 B class");
        assert_eq!(z, 0x1000_0000 + REGION, "128 B class: the next region");
        assert_eq!(a.alloc(5000) % 4096, 0);
        let mut arena = Allocator::arena(0x100);
        assert_eq!(
            (arena.alloc(40), arena.alloc(1), arena.alloc(8)),
            (0x100, 0x130, 0x140)
        );
    }

    /// Freed blocks go back to their class's free list and the class's
    /// next allocation takes the one freed last; an arena frees nothing.
    #[test]
    fn freed_blocks_are_reused_last_freed_first() {
        let mut a = Allocator::new(0x1000_0000);
        let (x, y) = (a.alloc(40), a.alloc(64));
        let big = a.alloc(200);
        a.free(x, 40);
        a.free(y, 64);
        a.free(big, 200);
        assert_eq!(a.alloc(50), y, "the 64 B class's last freed block");
        assert_eq!(a.alloc(64), x);
        assert_eq!(a.alloc(64), y + 64, "the list is empty: the region again");
        assert_eq!(a.alloc(256), big);
        let mut arena = Allocator::arena(0x100);
        let b = arena.alloc(40);
        arena.free(b, 40);
        assert_eq!(arena.alloc(40), 0x130);
    }

    /// A sub-message holding one scalar field (`f1 = v`).
    fn leaf_record(v: u64) -> bench::Record {
        bench::Record {
            f1: Some(v as i64),
            ..Default::default()
        }
    }

    /// A message is freed as its C++ destructor frees it: each field in
    /// declaration order, a sub-message's blocks before its parent's, so
    /// the root's block is freed last and is the next one handed out.
    #[test]
    fn a_message_is_freed_in_its_destructors_order() {
        let r = bench::Record {
            f8: Some(Box::new(leaf_record(1))),
            f15: Some(Box::new(leaf_record(2))),
            ..Default::default()
        };
        let (_, tree) = wire::walk(&bench::encode(&r)).unwrap();
        let mut a = Allocator::new(1 << 32);
        let l = Layout::place(&tree, &mut a);
        let (root, c1, c2) = (l.objects[0].addr, l.objects[1].addr, l.objects[2].addr);
        l.free(&mut a);
        // Root, f8's and f15's objects share the 64 B class here: freed
        // f8, f15, then the root, handed out in the reverse order.
        assert_eq!(l.objects[0].bytes.div_ceil(64), 1);
        assert_eq!((a.alloc(64), a.alloc(64), a.alloc(64)), (root, c2, c1));
    }

    /// The CPU's construction order moves the addresses, not the
    /// structure: the same objects, slots and sizes as the walk-order
    /// placement, but a sub-message set before an earlier-numbered one is
    /// allocated before it (so its address no longer follows the
    /// serializer's order).
    #[test]
    fn construction_order_reorders_allocations_not_structure() {
        let r = bench::Record {
            f8: Some(Box::new(leaf_record(1))),
            f15: Some(Box::new(leaf_record(2))),
            f21: vec![leaf_record(3), leaf_record(4)],
            ..Default::default()
        };
        let (items, tree) = wire::walk(&bench::encode(&r)).unwrap();
        let wire_order = Layout::place(&tree, &mut Allocator::new(1 << 32));
        let addrs = |l: &Layout| l.objects.iter().map(|o| o.addr).collect::<Vec<_>>();
        // In wire order the four 64 B children sit one after the other.
        let w = addrs(&wire_order);
        assert!(w[1..].windows(2).all(|x| x[1] == x[0] + 64), "{w:x?}");
        let mut reordered = 0;
        for seed in 0..16 {
            let c = Layout::place_constructed(&tree, &mut Allocator::new(1 << 32), seed);
            assert_eq!(c.objects.len(), wire_order.objects.len());
            for (a, b) in c.objects.iter().zip(&wire_order.objects) {
                assert_eq!((a.bytes, a.parent, &a.slots), (b.bytes, b.parent, &b.slots));
            }
            // The same set of child slots, in another order for most seeds.
            let mut got = addrs(&c)[1..].to_vec();
            if got != w[1..] {
                reordered += 1;
            }
            got.sort();
            assert_eq!(got, w[1..].to_vec(), "seed {seed}");
            assert_eq!(
                c.read_plan(&items).len(),
                wire_order.read_plan(&items).len()
            );
        }
        // Four children in a seeded order: the wire's order 1 time in 24.
        assert!(reordered >= 12, "{reordered} of 16 seeds reorder");
    }

    /// With `StringLayout::StdString` a string field's slot is an 8-byte
    /// pointer to a 32-byte std::string allocated apart: the decoder
    /// allocates it before a long string's buffer, the serializer reads it
    /// after the slot's line and the buffer after it (one more pointer
    /// level than inline), the decoder writes its line, and the
    /// destructor frees the buffer before the object.
    #[test]
    fn a_std_string_apart_is_one_more_allocation_and_one_more_level() {
        let long = "a string longer than fifteen bytes";
        let r = bench::Record {
            f1: Some(7),
            f2: Some(long.into()),
            f22: Some("short".into()),
            ..Default::default()
        };
        let (items, tree) = wire::walk(&bench::encode(&r)).unwrap();
        let base = 1u64 << 32;
        let inline = Layout::place_with(&tree, &mut Allocator::new(base), StringLayout::Inline);
        let mut a = Allocator::new(base);
        let apart = Layout::place_with(&tree, &mut a, StringLayout::StdString);
        let root = &apart.objects[0];
        // Header, a scalar and two 8-byte string pointers; inline two
        // 32-byte std::strings.
        assert_eq!(root.bytes, 16 + 3 * 8);
        assert_eq!(inline.objects[0].bytes, 16 + 8 + 2 * 32);
        assert_eq!(root.std_strings.len(), 2);
        assert_eq!(
            (inline.allocations(), apart.allocations()),
            (2, 4),
            "root + long buffer; + two std::strings"
        );
        // The 32 B std::string and the 35 B buffer share the 64 B class:
        // the long string's object first, then its buffer, then the short
        // string's object.
        let long_obj = root.std_string_at(root.slots[1].0).unwrap();
        let short_obj = root.std_string_at(root.slots[2].0).unwrap();
        let buffer = root.strings[0].1;
        assert_eq!((buffer - long_obj, short_obj - buffer), (64, 64));
        let level = |plan: &[LineOp], line: u64| {
            let mut i = plan.iter().position(|o| o.line == line).unwrap();
            let mut n = 0;
            while let Some(j) = plan[i].after {
                i = j;
                n += 1;
            }
            n
        };
        let reads = apart.read_plan(&items);
        assert_eq!(level(&reads, long_obj), 1, "after the root's slot");
        assert_eq!(level(&reads, short_obj), 1);
        assert_eq!(level(&reads, buffer), 2, "after its std::string");
        let inline_reads = inline.read_plan(&items);
        assert_eq!(level(&inline_reads, inline.objects[0].strings[0].1), 1);
        // Deserialization writes the std::strings' lines too, each with
        // its field's item.
        let writes = apart.write_plan(&items);
        for (line, k) in [(long_obj, 1), (buffer, 1), (short_obj, 2)] {
            let op = writes.iter().find(|o| o.line == line).unwrap();
            assert_eq!(op.item, k, "{line:#x}");
        }
        // `delete` of each std::string: its buffer, then its object; the
        // root last. LIFO: the root, the short one's object, the long one's
        // object, its buffer.
        apart.free(&mut a);
        let got: Vec<u64> = (0..4).map(|_| a.alloc(64)).collect();
        assert_eq!(got, vec![root.addr, short_obj, long_obj, buffer]);
        // Construction allocates a std::string when its field is set.
        let c = Layout::place_constructed_with(
            &tree,
            &mut Allocator::new(base),
            3,
            StringLayout::StdString,
        );
        assert_eq!(c.allocations(), 4);
        assert_eq!(c.read_plan(&items).len(), reads.len());
    }

    #[test]
    fn plans_cover_every_line_once_and_depend_on_earlier_reads() {
        for p in &bench::PROFILES {
            for r in bench::generate(p, 11, 4) {
                let (items, tree) = wire::walk(&bench::encode(&r)).unwrap();
                let layout = Layout::place(&tree, &mut Allocator::new(1 << 32));
                assert_eq!(layout.objects.len(), bench::object_count(&r));
                let writes = layout.write_plan(&items);
                let reads = layout.read_plan(&items);
                let mut w: Vec<u64> = writes.iter().map(|o| o.line).collect();
                let mut rd: Vec<u64> = reads.iter().map(|o| o.line).collect();
                w.sort();
                rd.sort();
                assert_eq!(w, rd, "{}: the same lines written and read", p.name);
                assert!(w.windows(2).all(|x| x[0] < x[1]), "{}: once each", p.name);
                assert!(layout.bytes() >= w.len() as u64 * LINE / 2);
                for (i, op) in reads.iter().enumerate() {
                    assert!(op.after.is_none_or(|j| j < i), "{}", p.name);
                }
                assert_eq!(reads[0].after, None);
                // Every nested object waits for a read.
                let roots = reads.iter().filter(|o| o.after.is_none()).count();
                assert_eq!(
                    roots as u64,
                    lines_of(layout.objects[0].addr, layout.objects[0].bytes).count() as u64
                );
            }
        }
    }
}

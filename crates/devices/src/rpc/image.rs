//! The bytes RpcNIC's DMAs carry (Cohet §V-B1, Fig. 10), and the CXL-NIC's
//! NC-P pushes and CXL.cache / CXL.mem reads (Fig. 11: [`objects`] at the
//! objects' host or device addresses).
//!
//! * [`objects`]: deserialization's output, the decoded objects as the
//!   temp buffer holds them and the one-shot DMA writes them to host
//!   memory: each object's header (zero), one 8-byte slot per scalar
//!   (little-endian), a 32-byte `std::string` slot (pointer, length, and
//!   the characters inline up to 15 bytes), the heap buffers, and a nested
//!   message's slot holding its object's address, every block at the
//!   address [`Layout`] gave it, relative to the image's `base`.
//! * [`preserialized`] / [`encode_preserialized`]: serialization's input,
//!   the DMA-safe buffer the CPU's copy engine fills ("iteratively copy
//!   noncontiguous fields into a pre-allocated DMA-safe buffer"): per field
//!   in wire order an 8-byte descriptor (field number u16, kind u8, depth
//!   u8, value length u32) and the value (a scalar's 8- or 4-byte slot, a
//!   string's bytes; a nested message's descriptor opens it). The NIC's
//!   serializer encodes the wire bytes from this buffer alone, so a test
//!   can check that what the DMA delivered re-encodes to the original.

use super::bench::FieldKind;
use super::layout::Layout;
use super::wire::{self, Decoded, Value};

/// The decoded objects of `tree` placed by `layout` (the same message), as
/// bytes from `base` (the lowest address the layout used is at least
/// `base`).
pub fn objects(tree: &Decoded, layout: &Layout, base: u64) -> Vec<u8> {
    let end = layout
        .objects
        .iter()
        .flat_map(|o| {
            std::iter::once(o.addr + o.bytes)
                .chain(o.strings.iter().map(|s| s.1 + s.2))
                .chain(o.std_strings.iter().map(|s| s.1 + 32))
        })
        .max()
        .unwrap_or(base);
    let mut img = vec![0u8; (end - base) as usize];
    let mut next = 0usize;
    fill(tree, layout, base, &mut next, &mut img);
    img
}

fn put(img: &mut [u8], at: u64, base: u64, bytes: &[u8]) {
    let i = (at - base) as usize;
    img[i..i + bytes.len()].copy_from_slice(bytes);
}

fn fill(d: &Decoded, layout: &Layout, base: u64, next: &mut usize, img: &mut [u8]) {
    let me = *next;
    *next += 1;
    let obj = layout.objects[me].clone();
    for (k, (_, v)) in d.fields.iter().enumerate() {
        let (offset, _, _, string) = obj.slots[k];
        let slot = obj.addr + offset;
        match v {
            Value::Varint(x) | Value::Fixed64(x) => put(img, slot, base, &x.to_le_bytes()),
            Value::Fixed32(x) => put(img, slot, base, &(*x as u64).to_le_bytes()),
            Value::Bytes(b) => {
                // The std::string: in the slot, or apart with the slot
                // holding its address (protobuf's ArenaStringPtr).
                let at = match obj.std_string_at(offset) {
                    Some(at) => {
                        put(img, slot, base, &at.to_le_bytes());
                        at
                    }
                    None => slot,
                };
                let mut s = [0u8; 32];
                s[8..16].copy_from_slice(&(b.len() as u64).to_le_bytes());
                match string {
                    Some(i) => {
                        let (_, addr, _) = obj.strings[i];
                        s[..8].copy_from_slice(&addr.to_le_bytes());
                        put(img, addr, base, b);
                    }
                    None => {
                        s[..8].copy_from_slice(&(at + 16).to_le_bytes());
                        s[16..16 + b.len()].copy_from_slice(b);
                    }
                }
                put(img, at, base, &s);
            }
            Value::Message(m) => {
                let child_addr = layout.objects[*next].addr;
                put(img, slot, base, &child_addr.to_le_bytes());
                fill(m, layout, base, next, img);
            }
        }
    }
}

const KIND_VARINT: u8 = 0;
const KIND_FIXED64: u8 = 1;
const KIND_FIXED32: u8 = 2;
const KIND_BYTES: u8 = 3;
const KIND_MESSAGE: u8 = 4;

/// The DMA-safe buffer of `tree` (see the module docs).
pub fn preserialized(tree: &Decoded) -> Vec<u8> {
    let mut out = Vec::new();
    pre(tree, 0, &mut out);
    out
}

fn descriptor(out: &mut Vec<u8>, field: u32, kind: u8, depth: u8, len: usize) {
    out.extend_from_slice(&(field as u16).to_le_bytes());
    out.push(kind);
    out.push(depth);
    out.extend_from_slice(&(len as u32).to_le_bytes());
}

fn pre(d: &Decoded, depth: u8, out: &mut Vec<u8>) {
    for (field, v) in &d.fields {
        match v {
            Value::Varint(x) => {
                descriptor(out, *field, KIND_VARINT, depth, 8);
                out.extend_from_slice(&x.to_le_bytes());
            }
            Value::Fixed64(x) => {
                descriptor(out, *field, KIND_FIXED64, depth, 8);
                out.extend_from_slice(&x.to_le_bytes());
            }
            Value::Fixed32(x) => {
                descriptor(out, *field, KIND_FIXED32, depth, 4);
                out.extend_from_slice(&x.to_le_bytes());
            }
            Value::Bytes(b) => {
                descriptor(out, *field, KIND_BYTES, depth, b.len());
                out.extend_from_slice(b);
            }
            Value::Message(m) => {
                descriptor(out, *field, KIND_MESSAGE, depth, 0);
                pre(m, depth + 1, out);
            }
        }
    }
}

/// The wire bytes the NIC's serializer encodes from a DMA-safe buffer, or
/// an error naming the offset of a malformed descriptor.
pub fn encode_preserialized(buf: &[u8]) -> Result<Vec<u8>, String> {
    // Open messages: (field number that opened it, its fields so far).
    let mut stack: Vec<(u32, Decoded)> = vec![(0, Decoded::default())];
    let mut at = 0usize;
    while at < buf.len() {
        let head = buf
            .get(at..at + 8)
            .ok_or_else(|| format!("byte {at}: truncated descriptor"))?;
        let field = u16::from_le_bytes([head[0], head[1]]) as u32;
        let (kind, depth) = (head[2], head[3] as usize);
        let len = u32::from_le_bytes(head[4..8].try_into().expect("4")) as usize;
        if depth + 1 > stack.len() {
            return Err(format!("byte {at}: depth {depth} skips a level"));
        }
        while stack.len() > depth + 1 {
            let (f, m) = stack.pop().expect("open");
            stack
                .last_mut()
                .expect("parent")
                .1
                .fields
                .push((f, Value::Message(m)));
        }
        let value = buf
            .get(at + 8..at + 8 + len)
            .ok_or_else(|| format!("byte {at}: value runs past the end"))?;
        let u64_of = |v: &[u8]| u64::from_le_bytes(v.try_into().unwrap_or([0; 8]));
        let v = match kind {
            KIND_VARINT => Some(Value::Varint(u64_of(value))),
            KIND_FIXED64 => Some(Value::Fixed64(u64_of(value))),
            KIND_FIXED32 => Some(Value::Fixed32(u32::from_le_bytes(
                value
                    .try_into()
                    .map_err(|_| format!("byte {at}: fixed32 of {len} bytes"))?,
            ))),
            KIND_BYTES => Some(Value::Bytes(value.to_vec())),
            KIND_MESSAGE => None,
            other => return Err(format!("byte {at}: unknown kind {other}")),
        };
        match v {
            Some(v) => stack.last_mut().expect("open").1.fields.push((field, v)),
            None => stack.push((field, Decoded::default())),
        }
        at += 8 + len;
    }
    while stack.len() > 1 {
        let (f, m) = stack.pop().expect("open");
        stack
            .last_mut()
            .expect("parent")
            .1
            .fields
            .push((f, Value::Message(m)));
    }
    Ok(wire::encode(&stack.pop().expect("root").1))
}

/// The descriptor kind of a schema kind (for tests and reports).
pub fn kind_code(kind: FieldKind) -> u8 {
    match kind {
        FieldKind::Varint => KIND_VARINT,
        FieldKind::Fixed64 => KIND_FIXED64,
        FieldKind::Fixed32 => KIND_FIXED32,
        FieldKind::Bytes => KIND_BYTES,
        FieldKind::Message => KIND_MESSAGE,
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::{Allocator, StringLayout, LINE};
    use super::super::{bench, wire};
    use super::*;

    #[test]
    fn the_dma_safe_buffer_re_encodes_to_the_original_bytes() {
        for p in &bench::PROFILES {
            for r in bench::generate(p, 5, 4) {
                let bytes = bench::encode(&r);
                let (items, tree) = wire::walk(&bytes).unwrap();
                let buf = preserialized(&tree);
                assert_eq!(encode_preserialized(&buf).unwrap(), bytes, "{}", p.name);
                let scalars = items
                    .iter()
                    .filter(|i| i.kind != FieldKind::Message)
                    .count();
                assert!(buf.len() >= 8 * items.len() + 4 * scalars, "{}", p.name);
            }
        }
        assert!(encode_preserialized(&[1, 0, 9, 0, 0, 0, 0, 0])
            .unwrap_err()
            .contains("unknown kind 9"));
        assert!(encode_preserialized(&[1, 0, 0, 3, 8, 0, 0, 0])
            .unwrap_err()
            .contains("skips a level"));
    }

    #[test]
    fn the_object_image_holds_every_value_at_its_slot() {
        let r = bench::Record {
            f1: Some(300),
            f2: Some("a string longer than fifteen bytes".into()),
            f8: Some(Box::new(bench::Record {
                f13: Some(7),
                f22: Some("short".into()),
                ..Default::default()
            })),
            ..Default::default()
        };
        let (_, tree) = wire::walk(&bench::encode(&r)).unwrap();
        let base = 1 << 32;
        let layout = Layout::place(&tree, &mut Allocator::new(base));
        let img = objects(&tree, &layout, base);
        let at = |addr: u64| (addr - base) as usize;
        let root = &layout.objects[0];
        let u64_at = |i: usize| u64::from_le_bytes(img[i..i + 8].try_into().unwrap());
        assert_eq!(u64_at(at(root.addr + root.slots[0].0)), 300);
        // The long string: a pointer to its heap buffer and its length.
        let s = at(root.addr + root.slots[1].0);
        let (_, buf, _) = root.strings[0];
        assert_eq!(u64_at(s), buf);
        assert_eq!(u64_at(s + 8), 34);
        assert_eq!(
            &img[at(buf)..at(buf) + 34],
            b"a string longer than fifteen bytes"
        );
        // The nested message's slot points at its object, whose short
        // string is inline.
        let child = &layout.objects[1];
        assert_eq!(u64_at(at(root.addr + root.slots[2].0)), child.addr);
        assert_eq!(u64_at(at(child.addr + child.slots[0].0)), 7);
        let cs = at(child.addr + child.slots[1].0);
        assert_eq!(&img[cs + 16..cs + 21], b"short");
        assert!(img.len() as u64 >= LINE);
    }

    /// The message read back from an object image by following its
    /// pointers (a sub-message's slot to its object, a string's slot to
    /// its `std::string` when apart, the `std::string`'s `_M_p` to its
    /// characters), with `shape` (the same message) giving only the field
    /// numbers and kinds, as the schema does.
    fn read_back(
        shape: &Decoded,
        obj_addr: u64,
        layout: &Layout,
        img: &[u8],
        base: u64,
    ) -> Decoded {
        let u64_at = |a: u64| {
            let i = (a - base) as usize;
            u64::from_le_bytes(img[i..i + 8].try_into().unwrap())
        };
        let obj = layout
            .objects
            .iter()
            .find(|o| o.addr == obj_addr)
            .expect("a slot points at an object of the layout");
        let mut out = Decoded::default();
        for (k, (field, v)) in shape.fields.iter().enumerate() {
            let slot = obj_addr + obj.slots[k].0;
            let value = match v {
                Value::Varint(_) => Value::Varint(u64_at(slot)),
                Value::Fixed64(_) => Value::Fixed64(u64_at(slot)),
                Value::Fixed32(_) => Value::Fixed32(u64_at(slot) as u32),
                Value::Bytes(_) => {
                    let s = match layout.string_layout {
                        StringLayout::Inline => slot,
                        StringLayout::StdString => u64_at(slot),
                    };
                    let (p, n) = (u64_at(s), u64_at(s + 8) as usize);
                    let i = (p - base) as usize;
                    Value::Bytes(img[i..i + n].to_vec())
                }
                Value::Message(m) => Value::Message(read_back(m, u64_at(slot), layout, img, base)),
            };
            out.fields.push((*field, value));
        }
        out
    }

    /// In either string layout, on a fresh, recycled or arena heap, the
    /// image of every bench's messages reads back (pointers followed) to a
    /// message that re-encodes to the original bytes; with std_string
    /// every string field's slot holds the address of a 32-byte
    /// std::string apart, short ones' characters inside it.
    #[test]
    fn both_string_layouts_read_back_to_the_original_bytes() {
        let base = 1 << 32;
        for strings in [StringLayout::Inline, StringLayout::StdString] {
            for p in &bench::PROFILES {
                for r in bench::generate(p, 3, 3) {
                    let bytes = bench::encode(&r);
                    let (_, tree) = wire::walk(&bytes).unwrap();
                    for arena in [false, true] {
                        let mut a = if arena {
                            Allocator::arena(base)
                        } else {
                            Allocator::new(base)
                        };
                        let layout = Layout::place_with(&tree, &mut a, strings);
                        let img = objects(&tree, &layout, base);
                        let back = read_back(&tree, layout.objects[0].addr, &layout, &img, base);
                        assert_eq!(wire::encode(&back), bytes, "{} {strings:?}", p.name);
                        let strings_set = layout
                            .objects
                            .iter()
                            .flat_map(|o| &o.slots)
                            .filter(|s| s.1 == bench::FieldKind::Bytes)
                            .count();
                        let apart: usize = layout.objects.iter().map(|o| o.std_strings.len()).sum();
                        let want = if strings == StringLayout::StdString {
                            strings_set
                        } else {
                            0
                        };
                        assert_eq!(apart, want, "{}", p.name);
                    }
                }
            }
        }
    }
}

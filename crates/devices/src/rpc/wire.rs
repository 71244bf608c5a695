//! The hardware (de)serializer's view of a message: a walk over the real
//! wire bytes, field by field.
//!
//! A protobuf message on the wire is a sequence of fields, each a *tag*
//! (a varint `field_number << 3 | wire_type`) and a value: a varint (wire
//! type 0), 8 bytes (1), a varint length and that many bytes (2), or 4
//! bytes (5) (protobuf.dev, "Encoding"). A length-delimited value is a
//! string, bytes or a nested message; only the schema tells which. The
//! walker does what the NIC's deserializer does (Cohet §V-B1, Fig. 10
//! step 1): it decodes each tag, looks the field up in the schema table
//! ([`RECORD_SCHEMA`]), decodes the value, and descends into a nested
//! message by pushing the end of the enclosing one on a stack. Every field
//! becomes a [`WorkItem`] (its wire bytes, payload bytes, nesting depth and
//! kind), so the NIC models' time follows the real sizes and nesting; the
//! decoded values form a [`Decoded`] tree that re-encodes to the same bytes.

use super::bench::{FieldKind, RECORD_SCHEMA};

/// One field the (de)serializer handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkItem {
    /// Field number.
    pub field: u32,
    /// The schema's kind of the field.
    pub kind: FieldKind,
    /// Nesting depth of the message holding the field (the root is 0).
    pub depth: u32,
    /// Bytes of the tag (and of the length prefix for wire type 2).
    pub header_bytes: u32,
    /// Bytes of the value (a nested message's whole encoding).
    pub payload_bytes: u32,
    /// Offset of the tag in the request.
    pub offset: u32,
    /// Index of the object (root = 0, nested messages in the order they
    /// start) that holds the field.
    pub object: u32,
}

/// A decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 5.
    Fixed32(u32),
    /// Wire type 2, string or bytes.
    Bytes(Vec<u8>),
    /// Wire type 2, a nested message.
    Message(Decoded),
}

/// A decoded message: its fields in wire order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Decoded {
    /// (field number, value).
    pub fields: Vec<(u32, Value)>,
}

fn varint(b: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for i in 0..10 {
        let Some(&byte) = b.get(*at) else {
            return Err(format!("truncated varint at byte {}", *at));
        };
        *at += 1;
        v |= ((byte & 0x7f) as u64) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(format!(
        "varint longer than 10 bytes ending at byte {}",
        *at
    ))
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn schema_kind(field: u32) -> Option<FieldKind> {
    RECORD_SCHEMA.iter().find(|s| s.0 == field).map(|s| s.1)
}

/// Walks `bytes` (a [`super::bench::Record`]'s encoding): the work items in
/// wire order and the decoded tree. Errors name the byte offset of a
/// malformed field or a field the schema does not have.
pub fn walk(bytes: &[u8]) -> Result<(Vec<WorkItem>, Decoded), String> {
    let mut items = Vec::new();
    let mut objects = 1u32;
    // The stack of open messages: (end offset, object index, decoded so
    // far, the field number that opened it).
    let mut stack: Vec<(usize, u32, Decoded, u32)> = vec![(bytes.len(), 0, Decoded::default(), 0)];
    let mut at = 0usize;
    loop {
        // Close every message that ends here.
        while stack.len() > 1 && at == stack.last().expect("open").0 {
            let (_, _, done, field) = stack.pop().expect("open");
            stack
                .last_mut()
                .expect("parent")
                .2
                .fields
                .push((field, Value::Message(done)));
        }
        let (end, object) = {
            let top = stack.last().expect("root");
            (top.0, top.1)
        };
        if at > end {
            return Err(format!("a nested message overruns its length at byte {at}"));
        }
        if at == end {
            break;
        }
        let start = at;
        let tag = varint(bytes, &mut at)?;
        let field = (tag >> 3) as u32;
        let wire = tag & 7;
        let kind = schema_kind(field)
            .ok_or_else(|| format!("byte {start}: field {field} is not in the schema"))?;
        let depth = stack.len() as u32 - 1;
        let mut item = WorkItem {
            field,
            kind,
            depth,
            header_bytes: (at - start) as u32,
            payload_bytes: 0,
            offset: start as u32,
            object,
        };
        let expected = match kind {
            FieldKind::Varint => 0,
            FieldKind::Fixed64 => 1,
            FieldKind::Fixed32 => 5,
            FieldKind::Bytes | FieldKind::Message => 2,
        };
        if wire != expected {
            return Err(format!(
                "byte {start}: field {field} has wire type {wire}, the schema says {expected}"
            ));
        }
        let take = |at: &mut usize, n: usize| -> Result<&[u8], String> {
            let s = bytes
                .get(*at..*at + n)
                .ok_or_else(|| format!("byte {start}: field {field} runs past the end"))?;
            *at += n;
            Ok(s)
        };
        let value = match kind {
            FieldKind::Varint => {
                let before = at;
                let v = varint(bytes, &mut at)?;
                item.payload_bytes = (at - before) as u32;
                Some(Value::Varint(v))
            }
            FieldKind::Fixed64 => {
                let s = take(&mut at, 8)?;
                item.payload_bytes = 8;
                Some(Value::Fixed64(u64::from_le_bytes(s.try_into().expect("8"))))
            }
            FieldKind::Fixed32 => {
                let s = take(&mut at, 4)?;
                item.payload_bytes = 4;
                Some(Value::Fixed32(u32::from_le_bytes(s.try_into().expect("4"))))
            }
            FieldKind::Bytes => {
                let n = varint(bytes, &mut at)? as usize;
                item.header_bytes = (at - start) as u32;
                item.payload_bytes = n as u32;
                Some(Value::Bytes(take(&mut at, n)?.to_vec()))
            }
            FieldKind::Message => {
                let n = varint(bytes, &mut at)? as usize;
                item.header_bytes = (at - start) as u32;
                item.payload_bytes = n as u32;
                if at + n > end {
                    return Err(format!(
                        "byte {start}: nested message of {n} bytes overruns its parent"
                    ));
                }
                stack.push((at + n, objects, Decoded::default(), field));
                objects += 1;
                None
            }
        };
        items.push(item);
        if let Some(v) = value {
            stack.last_mut().expect("open").2.fields.push((field, v));
        }
    }
    let (_, _, root, _) = stack.pop().expect("root");
    Ok((items, root))
}

/// The wire bytes of a decoded message: what the hardware serializer
/// emits (minimal varints, lengths computed from the encoded children).
pub fn encode(d: &Decoded) -> Vec<u8> {
    let mut out = Vec::new();
    for (field, v) in &d.fields {
        let wire = match v {
            Value::Varint(_) => 0,
            Value::Fixed64(_) => 1,
            Value::Fixed32(_) => 5,
            Value::Bytes(_) | Value::Message(_) => 2,
        };
        put_varint(&mut out, ((*field as u64) << 3) | wire);
        match v {
            Value::Varint(x) => put_varint(&mut out, *x),
            Value::Fixed64(x) => out.extend_from_slice(&x.to_le_bytes()),
            Value::Fixed32(x) => out.extend_from_slice(&x.to_le_bytes()),
            Value::Bytes(b) => {
                put_varint(&mut out, b.len() as u64);
                out.extend_from_slice(b);
            }
            Value::Message(m) => {
                let inner = encode(m);
                put_varint(&mut out, inner.len() as u64);
                out.extend_from_slice(&inner);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::bench::{self, PROFILES};
    use super::*;

    #[test]
    fn walk_then_encode_gives_the_original_bytes_for_every_bench() {
        for p in &PROFILES {
            for r in bench::generate(p, 3, 6) {
                let bytes = bench::encode(&r);
                let (items, tree) = walk(&bytes).unwrap();
                assert_eq!(encode(&tree), bytes, "{}", p.name);
                assert_eq!(bench::decode(&encode(&tree)).unwrap(), r, "{}", p.name);
                // The items cover the top level's bytes exactly.
                let top: u32 = items
                    .iter()
                    .filter(|i| i.depth == 0)
                    .map(|i| i.header_bytes + i.payload_bytes)
                    .sum();
                assert_eq!(top as usize, bytes.len(), "{}", p.name);
                // One object per nested-message item, plus the root.
                let nested = items
                    .iter()
                    .filter(|i| i.kind == FieldKind::Message)
                    .count();
                assert_eq!(nested + 1, bench::object_count(&r), "{}", p.name);
                let deepest = items.iter().map(|i| i.depth).max().unwrap_or(0) as usize;
                assert!(deepest <= bench::depth(&r), "{}", p.name);
            }
        }
    }

    #[test]
    fn walk_matches_prost_on_a_known_message() {
        let r = bench::Record {
            f1: Some(300),
            f2: Some("hi".into()),
            f8: Some(Box::new(bench::Record {
                f7: Some(5),
                ..Default::default()
            })),
            ..Default::default()
        };
        let bytes = bench::encode(&r);
        // f1: tag 0x08, 300 = ac 02; f2: tag 0x12, len 2, "hi";
        // f8: tag 0x42, len 9, { tag 0x39, 8 bytes }.
        assert_eq!(&bytes[..3], &[0x08, 0xac, 0x02]);
        let (items, _) = walk(&bytes).unwrap();
        let shape: Vec<(u32, u32, u32, u32)> = items
            .iter()
            .map(|i| (i.field, i.depth, i.header_bytes, i.payload_bytes))
            .collect();
        assert_eq!(
            shape,
            vec![(1, 0, 1, 2), (2, 0, 2, 2), (8, 0, 2, 9), (7, 1, 1, 8)]
        );
        assert_eq!(items[3].object, 1);
    }

    #[test]
    fn malformed_input_is_an_error_naming_the_byte() {
        assert!(walk(&[0x08]).unwrap_err().contains("truncated varint"));
        assert!(walk(&[0xc8, 0x01, 0x00])
            .unwrap_err()
            .contains("field 25 is not in the schema"));
        assert!(walk(&[0x09, 0x01])
            .unwrap_err()
            .contains("field 1 has wire type 1"));
        assert!(walk(&[0x42, 0x05, 0x08]).unwrap_err().contains("overruns"));
    }
}

//! The (de)serializer pipeline's cycles per field: the part of both NICs
//! that is the same accelerator (Cohet §V-B: the CXL-NIC reuses RpcNIC's
//! field-by-field decoder and encoder; only the memory side differs).
//!
//! Per field (assumed, a ProtoAcc-like pipeline, Karandikar et al.
//! MICRO'21 §5, one field per cycle in its steady state): the tag decode
//! and the schema-table lookup, one cycle each; a scalar value one cycle;
//! a string or bytes value one cycle per `datapath_bytes` (assumed 16 B);
//! entering a nested message `nest_cycles` (assumed 2: push the stack and
//! switch the schema entry). A decoder also allocates the C++ objects it
//! fills (a nested message's object, a string's `std::string` and its
//! buffer): `alloc_cycles` per block (assumed 1: a bump pointer over a
//! region the host hands the NIC, as RpcNIC's temp buffer is filled from
//! its start; [`Pipeline::decode_finish_times`]).

use super::bench::FieldKind;
use super::wire::WorkItem;

/// The pipeline's costs.
#[derive(Debug, Clone, Copy)]
pub struct Pipeline {
    /// Clock (MHz).
    pub clock_mhz: f64,
    /// Bytes of a string the datapath moves per cycle.
    pub datapath_bytes: u32,
    /// Cycles to enter a nested message.
    pub nest_cycles: u32,
    /// Cycles the decoder spends per block it allocates.
    pub alloc_cycles: u32,
}

impl Default for Pipeline {
    fn default() -> Self {
        Pipeline {
            clock_mhz: 400.0,
            datapath_bytes: 16,
            nest_cycles: 2,
            alloc_cycles: 1,
        }
    }
}

impl Pipeline {
    /// Cycles of one field.
    pub fn cycles(&self, item: &WorkItem) -> u64 {
        let value = match item.kind {
            FieldKind::Varint | FieldKind::Fixed32 | FieldKind::Fixed64 => 1,
            FieldKind::Bytes => item.payload_bytes.div_ceil(self.datapath_bytes).max(1),
            FieldKind::Message => self.nest_cycles,
        };
        2 + value as u64
    }

    /// Picoseconds of one cycle.
    pub fn cycle_ps(&self) -> u64 {
        (1e6 / self.clock_mhz).round() as u64
    }

    /// When each field is done (ps from the start), fields back to back.
    pub fn finish_times(&self, items: &[WorkItem]) -> Vec<u64> {
        // The decode's schedule with nothing allocated.
        self.decode_finish_times(items, &vec![0; items.len()])
    }

    /// When each field is decoded (ps from the start), fields back to
    /// back, each with its own cycles and `alloc_cycles` per block its
    /// decoding allocates (`blocks`, one per item: the layout's
    /// `item_allocations`). The encoder allocates nothing:
    /// [`Pipeline::finish_times`].
    pub fn decode_finish_times(&self, items: &[WorkItem], blocks: &[u64]) -> Vec<u64> {
        assert_eq!(items.len(), blocks.len(), "one block count per item");
        let mut t = 0;
        items
            .iter()
            .zip(blocks)
            .map(|(i, &b)| {
                t += (self.cycles(i) + b * self.alloc_cycles as u64) * self.cycle_ps();
                t
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::wire::walk;
    use super::*;

    #[test]
    fn cycles_follow_the_real_sizes() {
        // f1 = 300 (varint), f2 = 40 bytes of text.
        let mut bytes = vec![0x08, 0xac, 0x02, 0x12, 40];
        bytes.extend(std::iter::repeat_n(b'x', 40));
        let (items, _) = walk(&bytes).unwrap();
        let p = Pipeline::default();
        assert_eq!(p.cycles(&items[0]), 3);
        assert_eq!(p.cycles(&items[1]), 2 + 3, "40 B at 16 B per cycle");
        assert_eq!(p.cycle_ps(), 2500);
        assert_eq!(p.finish_times(&items), vec![7500, 20000]);
        // Decoding the root object (with the first field) and the long
        // string's std::string and buffer: a cycle each.
        assert_eq!(p.decode_finish_times(&items, &[1, 2]), vec![10000, 27500]);
    }
}

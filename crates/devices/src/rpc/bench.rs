//! Six HyperProtoBench-shaped benches of real Protocol Buffers messages.
//!
//! HyperProtoBench (google/HyperProtoBench, the suite of Karandikar et al.,
//! "A Hardware Accelerator for Protocol Buffers", MICRO'21) ships six
//! benches `bench0`–`bench5`, each a `benchmark.proto` of ten message types
//! (fields `f1`, `f2`, ...) and a generated `benchmark.inc` that sets them.
//! Cohet §VI-E names Bench1 ("with small-field messages"), Bench2 ("a
//! large number of deeply nested messages") and Bench5 ("large string
//! fields"); assumed: its BenchN is the suite's `benchN` (bench2, with 300
//! message-typed fields in its `benchmark.proto`, is the deeply nested
//! one). The suite's own generated messages
//! are C++; here each bench is a seeded generator of [`Record`] messages
//! (one recursive prost type whose 24 fields interleave the wire types)
//! with the bench's published shape:
//!
//! * **Field-type mix**: the counts of each bench's eight most common field
//!   types in its `benchmark.proto` (google/HyperProtoBench@3ff7f5f,
//!   `benchN/benchmark.proto`), grouped by wire type (varint: int32, int64,
//!   uint32, uint64, bool, enums; 64-bit: fixed64, double; 32-bit: fixed32,
//!   float; length-delimited: string, bytes; message). See [`PROFILES`].
//! * **String/bytes lengths**: the three length classes (at most 16 B,
//!   17–256 B, longer) of the literals `benchmark.inc` sets, for bench0,
//!   bench1, bench3 and bench4 (same commit). bench2's and bench5's
//!   `benchmark.inc` are not in the stored snapshot: bench2's eight most
//!   common types hold no string (assumed: short strings only), bench5's
//!   lengths are assumed from Cohet §VI-E ("Bench5's large string fields").
//! * **Long strings are capped** at [`LONG_MAX`] bytes (assumed: the suite's
//!   long literals reach hundreds of KB; the cap keeps a request within a
//!   few 4 KB DMA buffers and the experiment under a minute).
//! * **Message size and nesting** from each bench's own message types
//!   (`benchN/benchmark.proto`, same commit): a bench is ten top-level
//!   message types, and its `benchmark.inc` builds one message of each
//!   setting every field of the type's tree once (bench1: 159 schema
//!   fields, 171 set calls counting repeated adds). So a request is one
//!   such tree: the root's fields in the range of the ten top-level types'
//!   own counts ([`BenchProfile::root_fields`]), a nested object's around
//!   the mean of the nested types' ([`BenchProfile::fields_per_object`]),
//!   at most as many objects as the largest tree ([`BenchProfile::max_objects`])
//!   and its depth ([`BenchProfile::max_depth`]). Per tree (objects,
//!   fields, depth): bench0 4-9, 16-45, 2; bench1 2-4, 6-30, 1-2 (the
//!   smallest); bench2 25-36, 90-162, 13 (every type nests 13 levels:
//!   Cohet's "deeply nested" Bench2); bench3 2-5, 5-23, 1; bench4 4-6,
//!   13-34, 3; bench5 4-11, 8-53, 2-5. Which field of an object is a
//!   sub-message is drawn with the bench's message share, so the trees
//!   are random ones of the bench's size, not the ten types themselves;
//!   a draw into a wire group whose [`Record`] slots are full sets
//!   nothing, so the trees carry 65-95% of the real field counts (mean
//!   fields per request, bench0-5: 23.5, 13.1, 99.9, 12.1, 21.5, 28.4
//!   against 32.7, 15.9, 136.8, 14.8, 22.9, 34.7).

use prost::Message;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The recursive message every bench is made of: 24 fields whose wire
/// types interleave as HyperProtoBench's `fN` fields do (tags ascend, so
/// the encoding order is the tag order).
#[derive(Clone, PartialEq, Message)]
#[allow(missing_docs)]
pub struct Record {
    #[prost(int64, optional, tag = "1")]
    pub f1: Option<i64>,
    #[prost(string, optional, tag = "2")]
    pub f2: Option<String>,
    #[prost(int32, optional, tag = "3")]
    pub f3: Option<i32>,
    #[prost(float, optional, tag = "4")]
    pub f4: Option<f32>,
    #[prost(bool, optional, tag = "5")]
    pub f5: Option<bool>,
    #[prost(bytes = "vec", optional, tag = "6")]
    pub f6: Option<Vec<u8>>,
    #[prost(fixed64, optional, tag = "7")]
    pub f7: Option<u64>,
    #[prost(message, optional, boxed, tag = "8")]
    pub f8: Option<Box<Record>>,
    #[prost(uint32, optional, tag = "9")]
    pub f9: Option<u32>,
    #[prost(int64, optional, tag = "10")]
    pub f10: Option<i64>,
    #[prost(string, optional, tag = "11")]
    pub f11: Option<String>,
    #[prost(double, optional, tag = "12")]
    pub f12: Option<f64>,
    #[prost(fixed32, optional, tag = "13")]
    pub f13: Option<u32>,
    #[prost(int32, optional, tag = "14")]
    pub f14: Option<i32>,
    #[prost(message, optional, boxed, tag = "15")]
    pub f15: Option<Box<Record>>,
    #[prost(bool, optional, tag = "16")]
    pub f16: Option<bool>,
    #[prost(int64, optional, tag = "17")]
    pub f17: Option<i64>,
    #[prost(bytes = "vec", optional, tag = "18")]
    pub f18: Option<Vec<u8>>,
    #[prost(float, optional, tag = "19")]
    pub f19: Option<f32>,
    #[prost(uint64, optional, tag = "20")]
    pub f20: Option<u64>,
    #[prost(message, repeated, tag = "21")]
    pub f21: Vec<Record>,
    #[prost(string, optional, tag = "22")]
    pub f22: Option<String>,
    #[prost(int32, optional, tag = "23")]
    pub f23: Option<i32>,
    #[prost(fixed64, optional, tag = "24")]
    pub f24: Option<u64>,
}

/// A field's wire-level kind, as the NIC's schema table records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// Wire type 0 (int32, int64, uint32, uint64, bool, enum).
    Varint,
    /// Wire type 1 (fixed64, double).
    Fixed64,
    /// Wire type 5 (fixed32, float).
    Fixed32,
    /// Wire type 2 holding bytes (string, bytes).
    Bytes,
    /// Wire type 2 holding a nested [`Record`] (repeated when the schema
    /// says so).
    Message,
}

/// [`Record`]'s schema: (field number, kind, repeated), what the host's
/// protobuf compiler stores in the NIC's schema table (Cohet §V-B1).
pub const RECORD_SCHEMA: [(u32, FieldKind, bool); 24] = {
    use FieldKind::*;
    [
        (1, Varint, false),
        (2, Bytes, false),
        (3, Varint, false),
        (4, Fixed32, false),
        (5, Varint, false),
        (6, Bytes, false),
        (7, Fixed64, false),
        (8, Message, false),
        (9, Varint, false),
        (10, Varint, false),
        (11, Bytes, false),
        (12, Fixed64, false),
        (13, Fixed32, false),
        (14, Varint, false),
        (15, Message, false),
        (16, Varint, false),
        (17, Varint, false),
        (18, Bytes, false),
        (19, Fixed32, false),
        (20, Varint, false),
        (21, Message, true),
        (22, Bytes, false),
        (23, Varint, false),
        (24, Fixed64, false),
    ]
};

/// The longest generated string or bytes field (assumed, see the module
/// docs).
pub const LONG_MAX: usize = 4096;

/// One bench's shape.
#[derive(Debug, Clone, Copy)]
pub struct BenchProfile {
    /// `bench0` ... `bench5`.
    pub name: &'static str,
    /// Field counts by wire group: varint, 64-bit, 32-bit, bytes, message
    /// (the eight most common types of `benchmark.proto`).
    pub type_counts: [u32; 5],
    /// String/bytes length classes: at most 16 B, 17–256 B, longer.
    pub length_classes: [u32; 3],
    /// Where `length_classes` comes from.
    pub lengths_from: &'static str,
    /// Deepest nesting (the root is depth 0).
    pub max_depth: u32,
    /// Most objects (the root and nested messages) in one request.
    pub max_objects: u32,
    /// Fields set in the root object: uniformly in [min, max], the range
    /// of the bench's ten top-level message types' own field counts
    /// (`benchN/benchmark.proto`).
    pub root_fields: (u32, u32),
    /// Fields set per nested object: uniformly in [min, max], around the
    /// mean field count of the bench's nested message types.
    pub fields_per_object: (u32, u32),
}

/// The six benches (see the module docs for each number's source).
pub const PROFILES: [BenchProfile; 6] = [
    BenchProfile {
        name: "bench0",
        // int64 85, bool 24, int32 15 | fixed64 31 | fixed32 12 | bytes 69, string 16 | message 47
        type_counts: [124, 31, 12, 85, 47],
        length_classes: [4, 19, 54],
        lengths_from: "HyperProtoBench bench0/benchmark.inc: 77 string literals",
        max_depth: 2,
        max_objects: 9,
        root_fields: (8, 17),
        fields_per_object: (1, 7),
    },
    BenchProfile {
        name: "bench1",
        // int32 43, bool 14, int64 9 | fixed64 6 | float 24 | string 20, bytes 9 | message 16
        type_counts: [66, 6, 24, 29, 16],
        length_classes: [12, 4, 12],
        lengths_from: "HyperProtoBench bench1/benchmark.inc: 28 string literals",
        max_depth: 2,
        max_objects: 4,
        root_fields: (5, 14),
        fields_per_object: (1, 5),
    },
    BenchProfile {
        name: "bench2",
        // int32 208, E1 179, uint32 125, bool 88, int64 85, E2 75 | - | float 159 | - | message 300
        type_counts: [760, 0, 159, 0, 300],
        length_classes: [1, 0, 0],
        lengths_from: "assumed: bench2's eight most common types hold no string",
        max_depth: 13,
        max_objects: 36,
        root_fields: (9, 15),
        fields_per_object: (1, 7),
    },
    BenchProfile {
        name: "bench3",
        // int32 38, int64 21, bool 11, uint64 9 | fixed64 7 | - | bytes 19, string 11 | message 20
        type_counts: [79, 7, 0, 30, 20],
        length_classes: [2, 1, 27],
        lengths_from: "HyperProtoBench bench3/benchmark.inc: 30 string literals",
        max_depth: 1,
        max_objects: 5,
        root_fields: (3, 14),
        fields_per_object: (1, 4),
    },
    BenchProfile {
        name: "bench4",
        // int32 41, bool 28, int64 15, uint64 12 | fixed64 15 | - | string 49, bytes 10 | message 36
        type_counts: [96, 15, 0, 59, 36],
        length_classes: [10, 26, 23],
        lengths_from: "HyperProtoBench bench4/benchmark.inc: 59 string literals",
        max_depth: 3,
        max_objects: 6,
        root_fields: (5, 13),
        fields_per_object: (1, 7),
    },
    BenchProfile {
        name: "bench5",
        // int32 99, E1 18, uint64 16, int64 15 | - | float 31 | string 36, bytes 18 | message 85
        type_counts: [148, 0, 31, 54, 85],
        length_classes: [1, 2, 7],
        lengths_from: "assumed from Cohet §VI-E (\"Bench5's large string fields\")",
        max_depth: 5,
        max_objects: 11,
        root_fields: (4, 14),
        fields_per_object: (1, 5),
    },
];

/// The profile named `name` (`bench0` ... `bench5`), or an error listing
/// the names.
pub fn profile(name: &str) -> Result<&'static BenchProfile, String> {
    PROFILES.iter().find(|p| p.name == name).ok_or_else(|| {
        format!(
            "unknown bench {name:?}: expected one of {}",
            PROFILES.map(|p| p.name).join(", ")
        )
    })
}

/// The profile of bench number `i` (0 ... 5).
pub fn profile_at(i: usize) -> Result<&'static BenchProfile, String> {
    PROFILES
        .get(i)
        .ok_or_else(|| format!("bench index {i}: expected 0 to 5"))
}

struct Gen<'a> {
    rng: Xoshiro256PlusPlus,
    profile: &'a BenchProfile,
    objects: u32,
}

impl Gen<'_> {
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.rng.next_u64() % n
        }
    }
    fn pick(&mut self, weights: &[u32]) -> usize {
        let total: u32 = weights.iter().sum();
        let mut r = self.below(total as u64) as u32;
        for (i, &w) in weights.iter().enumerate() {
            if r < w {
                return i;
            }
            r -= w;
        }
        weights.len() - 1
    }
    fn length(&mut self) -> usize {
        match self.pick(&self.profile.length_classes.clone()) {
            0 => 1 + self.below(16) as usize,
            1 => 17 + self.below(240) as usize,
            _ => 257 + self.below((LONG_MAX - 256) as u64) as usize,
        }
    }
    fn text(&mut self) -> String {
        let n = self.length();
        (0..n)
            .map(|_| (b'a' + self.below(26) as u8) as char)
            .collect()
    }
    fn bytes(&mut self) -> Vec<u8> {
        let n = self.length();
        (0..n).map(|_| self.rng.next_u64() as u8).collect()
    }
    /// A varint value of a realistic spread of sizes (1 to 10 bytes).
    fn wide(&mut self) -> u64 {
        let bits = 1 + self.below(64);
        self.rng.next_u64() >> (64 - bits)
    }

    fn record(&mut self, depth: u32) -> Record {
        self.objects += 1;
        let mut r = Record::default();
        let (lo, hi) = if depth == 0 {
            self.profile.root_fields
        } else {
            self.profile.fields_per_object
        };
        let n = lo + self.below((hi - lo + 1) as u64) as u32;
        for _ in 0..n {
            let mut group = self.pick(&self.profile.type_counts.clone());
            if group == 4
                && (depth >= self.profile.max_depth || self.objects >= self.profile.max_objects)
            {
                group = 0;
            }
            self.set_one(&mut r, group, depth);
        }
        r
    }

    /// Sets the first unset field of wire group `group` (a varint when the
    /// group's fields are all set; the repeated message field takes more).
    fn set_one(&mut self, r: &mut Record, group: usize, depth: u32) {
        match group {
            1 => {
                if r.f7.is_none() {
                    r.f7 = Some(self.rng.next_u64());
                } else if r.f12.is_none() {
                    r.f12 = Some(f64::from_bits(self.rng.next_u64() & !(0x7ffu64 << 52)));
                } else if r.f24.is_none() {
                    r.f24 = Some(self.rng.next_u64());
                }
            }
            2 => {
                if r.f4.is_none() {
                    r.f4 = Some(self.below(1 << 20) as f32 / 7.0);
                } else if r.f13.is_none() {
                    r.f13 = Some(self.rng.next_u64() as u32);
                } else if r.f19.is_none() {
                    r.f19 = Some(self.below(1 << 20) as f32 / 3.0);
                }
            }
            3 => {
                if r.f2.is_none() {
                    r.f2 = Some(self.text());
                } else if r.f6.is_none() {
                    r.f6 = Some(self.bytes());
                } else if r.f11.is_none() {
                    r.f11 = Some(self.text());
                } else if r.f18.is_none() {
                    r.f18 = Some(self.bytes());
                } else if r.f22.is_none() {
                    r.f22 = Some(self.text());
                }
            }
            4 => {
                let child = self.record(depth + 1);
                if r.f8.is_none() {
                    r.f8 = Some(Box::new(child));
                } else if r.f15.is_none() {
                    r.f15 = Some(Box::new(child));
                } else {
                    r.f21.push(child);
                }
            }
            _ => {
                let v = self.wide();
                if r.f1.is_none() {
                    r.f1 = Some(v as i64);
                } else if r.f3.is_none() {
                    r.f3 = Some(v as i32);
                } else if r.f5.is_none() {
                    r.f5 = Some(v & 1 == 1);
                } else if r.f9.is_none() {
                    r.f9 = Some(v as u32);
                } else if r.f10.is_none() {
                    r.f10 = Some(v as i64);
                } else if r.f14.is_none() {
                    r.f14 = Some(v as i32);
                } else if r.f16.is_none() {
                    r.f16 = Some(v & 2 == 2);
                } else if r.f17.is_none() {
                    r.f17 = Some(v as i64);
                } else if r.f20.is_none() {
                    r.f20 = Some(v);
                } else if r.f23.is_none() {
                    r.f23 = Some(v as i32);
                }
            }
        }
    }
}

/// `count` requests of bench `profile`, generated from `seed`: the same
/// seed gives the same messages.
pub fn generate(profile: &BenchProfile, seed: u64, count: usize) -> Vec<Record> {
    let mut g = Gen {
        rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5250_4300),
        profile,
        objects: 0,
    };
    (0..count)
        .map(|_| {
            g.objects = 0;
            g.record(0)
        })
        .collect()
}

/// The wire bytes of `r` (prost's encoder).
pub fn encode(r: &Record) -> Vec<u8> {
    r.encode_to_vec()
}

/// `bytes` decoded by prost.
pub fn decode(bytes: &[u8]) -> Result<Record, String> {
    Record::decode(bytes).map_err(|e| format!("protobuf decode: {e}"))
}

/// Objects (the root and its nested messages) in `r`.
pub fn object_count(r: &Record) -> usize {
    1 + r
        .f8
        .iter()
        .chain(r.f15.iter())
        .map(|c| object_count(c))
        .sum::<usize>()
        + r.f21.iter().map(object_count).sum::<usize>()
}

/// Deepest nesting level in `r` (the root is 0).
pub fn depth(r: &Record) -> usize {
    r.f8.iter()
        .chain(r.f15.iter())
        .map(|c| 1 + depth(c))
        .chain(r.f21.iter().map(|c| 1 + depth(c)))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_seeded_and_shaped() {
        for p in &PROFILES {
            let a = generate(p, 7, 4);
            assert_eq!(a, generate(p, 7, 4), "{}", p.name);
            assert_ne!(a, generate(p, 8, 4), "{}", p.name);
            for r in &a {
                assert!(depth(r) as u32 <= p.max_depth, "{}", p.name);
                assert!(object_count(r) as u32 <= p.max_objects + 14, "{}", p.name);
                assert_eq!(&decode(&encode(r)).unwrap(), r);
            }
        }
        // bench2 nests deepest, bench5 carries the most string bytes per request.
        let deep = |i: usize| {
            generate(&PROFILES[i], 1, 16)
                .iter()
                .map(depth)
                .max()
                .unwrap()
        };
        assert!(deep(2) > deep(1), "bench2 deeper than bench1");
        // The sizes of the suite's own trees: bench1 the smallest (fewest
        // objects and fields per request), bench2 the deepest and the
        // most objects (see the module docs).
        let mean = |i: usize, f: &dyn Fn(&Record) -> usize| {
            let rs = generate(&PROFILES[i], 1, 32);
            rs.iter().map(f).sum::<usize>() as f64 / rs.len() as f64
        };
        let fields = |r: &Record| crate::rpc::wire::walk(&encode(r)).unwrap().0.len();
        let objects: Vec<f64> = (0..6).map(|i| mean(i, &object_count)).collect();
        let sizes: Vec<f64> = (0..6).map(|i| mean(i, &fields)).collect();
        for i in [0, 2, 3, 4, 5] {
            assert!(objects[1] < objects[i], "objects per request {objects:?}");
        }
        assert!(
            sizes[1] < sizes[0] && sizes[1] < sizes[2] && sizes[1] < sizes[5],
            "fields {sizes:?}"
        );
        assert!(objects.iter().all(|&o| o <= objects[2]), "{objects:?}");
        assert!(deep(2) >= 10, "bench2 nests {} levels", deep(2));
        assert!(profile("bench9").unwrap_err().contains("bench0, bench1"));
    }
}

//! The CXL-NIC's RPC prefetcher in the DCOH (Cohet §V-B2): "a multi-stride
//! prefetcher, which records cache-miss addresses to identify data streams
//! with various stride patterns and issues prefetches accordingly".
//!
//! A table of `entries` streams (assumed: 16), each the misses inside one
//! 1 MiB region (assumed: region-indexed, as the device has no load PC to
//! index by), keeps the last miss address and stride and a confidence. A
//! miss whose delta from its stream's last miss equals the stream's stride
//! raises the confidence; at `confirm` (assumed: 1 repeat) the stream
//! issues prefetches of the next `degree` lines along the stride (assumed:
//! 4), ahead of those it already issued. A different delta retrains the
//! stride. Streams are replaced least recently used. Several streams with
//! different strides run at once: the multi-stride part.

use super::layout::LINE;

/// The prefetcher's parameters.
#[derive(Debug, Clone, Copy)]
pub struct PrefetcherParams {
    /// Streams tracked.
    pub entries: usize,
    /// Lines prefetched ahead on a confirmed stride.
    pub degree: u64,
    /// Repeats of a stride before it issues.
    pub confirm: u32,
    /// log2 of a stream's region.
    pub region_bits: u32,
}

impl Default for PrefetcherParams {
    fn default() -> Self {
        PrefetcherParams {
            entries: 16,
            degree: 4,
            confirm: 1,
            region_bits: 20,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Stream {
    region: u64,
    last: u64,
    stride: i64,
    confidence: u32,
    /// The furthest address prefetched along the stride.
    ahead: u64,
    used: u64,
}

/// The multi-stride prefetcher.
#[derive(Debug, Clone)]
pub struct MultiStridePrefetcher {
    p: PrefetcherParams,
    streams: Vec<Stream>,
    clock: u64,
    /// Prefetches issued.
    pub issued: u64,
}

impl MultiStridePrefetcher {
    /// An empty table.
    pub fn new(p: PrefetcherParams) -> MultiStridePrefetcher {
        MultiStridePrefetcher {
            p,
            streams: Vec::new(),
            clock: 0,
            issued: 0,
        }
    }

    /// Records a miss on `line` (a line address); returns the lines to
    /// prefetch.
    pub fn on_miss(&mut self, line: u64) -> Vec<u64> {
        self.clock += 1;
        let region = line >> self.p.region_bits;
        let Some(i) = self.streams.iter().position(|s| s.region == region) else {
            let s = Stream {
                region,
                last: line,
                stride: 0,
                confidence: 0,
                ahead: line,
                used: self.clock,
            };
            if self.streams.len() < self.p.entries {
                self.streams.push(s);
            } else {
                let lru = (0..self.streams.len())
                    .min_by_key(|&i| self.streams[i].used)
                    .expect("entries > 0");
                self.streams[lru] = s;
            }
            return Vec::new();
        };
        let s = &mut self.streams[i];
        s.used = self.clock;
        let delta = line as i64 - s.last as i64;
        s.last = line;
        if delta == 0 {
            return Vec::new();
        }
        if delta == s.stride {
            s.confidence += 1;
        } else {
            s.stride = delta;
            s.confidence = 0;
            s.ahead = line;
        }
        if s.confidence < self.p.confirm {
            return Vec::new();
        }
        // Issue up to `degree` strides beyond this miss, skipping those
        // already issued.
        let mut out = Vec::new();
        let forward = s.stride > 0;
        for k in 1..=self.p.degree as i64 {
            let target = line as i64 + k * s.stride;
            if target < 0 || (target as u64 >> self.p.region_bits) != region {
                break;
            }
            let t = target as u64;
            let beyond = if forward { t > s.ahead } else { t < s.ahead };
            if beyond {
                out.push(t);
                s.ahead = t;
            }
        }
        self.issued += out.len() as u64;
        out
    }
}

/// gem5 Ruby's stream prefetcher (`src/mem/ruby/structures/RubyPrefetcher.{py,cc}`,
/// gem5 v23.1, on which SimCXL builds its Ruby HMC, Cohet §VI-A2): the
/// prefetcher a Ruby cache controller such as the DCOH's HMC carries.
/// It observes misses and detects three kinds of stride: a unit filter
/// (the next line), a negative unit filter (the previous line), each a
/// circular queue of `filter` expected addresses, and a non-unit filter
/// of `filter` entries, one per 4 KiB page, holding the page's last miss
/// and its delta. A unit stride confirmed `train_misses` times (4), or a
/// non-unit one more than `train_misses` times within a page, allocates
/// one of `streams` (4) stream entries (least recently used replaced),
/// which prefetches `startup` line(s) (1) along the stride; each demand
/// for a line the stream prefetched (a hit, or a miss merging with the
/// prefetch in flight) extends the stream by one more stride. Streams
/// and strides never cross a page (`cross_page = False`). Its defaults
/// are gem5's; Cohet states none of its own prefetcher's.
#[derive(Debug, Clone)]
pub struct RubyStreamPrefetcher {
    p: RubyParams,
    /// Expected next line addresses (+1 line), oldest first.
    unit: Vec<FilterEntry>,
    /// Expected next line addresses (-1 line), oldest first.
    negative: Vec<FilterEntry>,
    /// Per page: last miss, delta (bytes), repeats; oldest first.
    nonunit: Vec<NonUnitEntry>,
    streams: Vec<RubyStream>,
    clock: u64,
    /// Prefetches issued.
    pub issued: u64,
}

/// [`RubyStreamPrefetcher`]'s parameters (gem5's `RubyPrefetcher.py`).
#[derive(Debug, Clone, Copy)]
pub struct RubyParams {
    /// `num_streams`: stream entries (gem5: 4).
    pub streams: usize,
    /// `unit_filter` and `nonunit_filter`: entries of each filter (gem5: 8).
    pub filter: usize,
    /// `train_misses`: confirmations before a stream is allocated (gem5: 4).
    pub train_misses: u32,
    /// `num_startup_pfs`: lines prefetched when a stream starts (gem5: 1).
    pub startup: u64,
    /// `page_shift`: log2 of the page no stream or stride crosses (gem5: 12).
    pub page_shift: u32,
}

impl Default for RubyParams {
    fn default() -> Self {
        RubyParams {
            streams: 4,
            filter: 8,
            train_misses: 4,
            startup: 1,
            page_shift: 12,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct FilterEntry {
    expect: u64,
    hits: u32,
}

#[derive(Debug, Clone, Copy)]
struct NonUnitEntry {
    last: u64,
    delta: i64,
    hits: u32,
}

#[derive(Debug, Clone, Copy)]
struct RubyStream {
    /// The last line prefetched.
    last: u64,
    /// Stride in bytes (a multiple of the line).
    stride: i64,
    used: u64,
}

impl RubyStreamPrefetcher {
    /// Empty filters and no stream.
    pub fn new(p: RubyParams) -> RubyStreamPrefetcher {
        assert!(
            p.streams > 0 && p.filter > 0,
            "a Ruby prefetcher needs streams and filters"
        );
        RubyStreamPrefetcher {
            p,
            unit: Vec::new(),
            negative: Vec::new(),
            nonunit: Vec::new(),
            streams: Vec::new(),
            clock: 0,
            issued: 0,
        }
    }

    fn page(&self, line: u64) -> u64 {
        line >> self.p.page_shift
    }

    /// `line + stride`, if it stays on `line`'s page.
    fn next_on_page(&self, line: u64, stride: i64) -> Option<u64> {
        let t = line as i64 + stride;
        (t >= 0 && self.page(t as u64) == self.page(line)).then_some(t as u64)
    }

    /// A circular queue's push: the oldest entry goes when it is full
    /// (gem5's `CircularQueue::push_back`).
    fn push<T>(queue: &mut Vec<T>, entry: T, cap: usize) {
        if queue.len() == cap {
            queue.remove(0);
        }
        queue.push(entry);
    }

    /// Allocates a stream at `line` with `stride` (bytes) and returns its
    /// start-up prefetches (`initializeStream`).
    fn start_stream(&mut self, line: u64, stride: i64) -> Vec<u64> {
        self.clock += 1;
        let mut out = Vec::new();
        let mut at = line;
        for _ in 0..self.p.startup {
            match self.next_on_page(at, stride) {
                Some(t) => {
                    out.push(t);
                    at = t;
                }
                // gem5 deallocates the stream at the page's end.
                None => return self.issue(out),
            }
        }
        let s = RubyStream {
            last: at,
            stride,
            used: self.clock,
        };
        if self.streams.len() < self.p.streams {
            self.streams.push(s);
        } else {
            let lru = (0..self.streams.len())
                .min_by_key(|&i| self.streams[i].used)
                .expect("streams > 0");
            self.streams[lru] = s;
        }
        self.issue(out)
    }

    fn issue(&mut self, out: Vec<u64>) -> Vec<u64> {
        self.issued += out.len() as u64;
        out
    }

    /// The stream whose outstanding prefetches include `line`
    /// (`getPrefetchEntry`).
    fn stream_of(&self, line: u64) -> Option<usize> {
        self.streams.iter().position(|s| {
            (0..self.p.startup as i64).any(|j| s.last as i64 - s.stride * j == line as i64)
        })
    }

    /// A demand for `line`, which a prefetch requested (a hit, or a miss
    /// merging with it in flight): its stream, if it still has one, runs
    /// one stride further (`observePfHit`, `observePfMiss`).
    pub fn on_prefetch_hit(&mut self, line: u64) -> Vec<u64> {
        let Some(i) = self.stream_of(line) else {
            return Vec::new();
        };
        self.clock += 1;
        let s = self.streams[i];
        match self.next_on_page(s.last, s.stride) {
            Some(t) => {
                self.streams[i].last = t;
                self.streams[i].used = self.clock;
                self.issue(vec![t])
            }
            None => {
                self.streams.remove(i);
                Vec::new()
            }
        }
    }

    /// Records a demand miss on `line` (`observeMiss`); returns the lines
    /// to prefetch.
    pub fn on_miss(&mut self, line: u64) -> Vec<u64> {
        if self.stream_of(line).is_some() {
            return self.on_prefetch_hit(line);
        }
        let cap = self.p.filter;
        for (queue, stride) in [(0, LINE as i64), (1, -(LINE as i64))] {
            let q = if queue == 0 {
                &mut self.unit
            } else {
                &mut self.negative
            };
            if let Some(e) = q.iter_mut().find(|e| e.expect == line) {
                e.expect = (line as i64 + stride) as u64;
                e.hits += 1;
                if e.hits >= self.p.train_misses {
                    return self.start_stream(line, stride);
                }
                return Vec::new();
            }
            let next = line as i64 + stride;
            if next >= 0 {
                Self::push(
                    q,
                    FilterEntry {
                        expect: next as u64,
                        hits: 0,
                    },
                    cap,
                );
            }
        }
        let page = self.page(line);
        let shift = self.p.page_shift;
        if let Some(e) = self.nonunit.iter_mut().find(|e| e.last >> shift == page) {
            let delta = line as i64 - e.last as i64;
            if delta == 0 {
                return Vec::new();
            }
            // The entry keeps this miss and its delta; a stride seen more
            // than `train_misses` times in a row starts a stream and the
            // count again.
            let start = if delta == e.delta {
                e.hits += 1;
                e.hits > self.p.train_misses
            } else {
                false
            };
            if start || delta != e.delta {
                e.hits = 0;
            }
            e.last = line;
            e.delta = delta;
            return if start {
                self.start_stream(line, delta)
            } else {
                Vec::new()
            };
        }
        Self::push(
            &mut self.nonunit,
            NonUnitEntry {
                last: line,
                delta: 0,
                hits: 0,
            },
            cap,
        );
        Vec::new()
    }
}

/// The DCOH's RPC prefetcher, either design.
#[derive(Debug, Clone)]
pub enum RpcPrefetcher {
    /// [`MultiStridePrefetcher`]: region-indexed streams (assumed table).
    Region(MultiStridePrefetcher),
    /// [`RubyStreamPrefetcher`]: gem5 Ruby's unit, negative and non-unit
    /// stride filters and streams.
    Ruby(RubyStreamPrefetcher),
}

impl RpcPrefetcher {
    /// A demand miss on `line`; the lines to prefetch.
    pub fn on_miss(&mut self, line: u64) -> Vec<u64> {
        match self {
            RpcPrefetcher::Region(p) => p.on_miss(line),
            RpcPrefetcher::Ruby(p) => p.on_miss(line),
        }
    }

    /// A demand for a line a prefetch requested; the lines to prefetch
    /// (the region design does not see it: it trains on misses only).
    pub fn on_prefetch_hit(&mut self, line: u64) -> Vec<u64> {
        match self {
            RpcPrefetcher::Region(_) => Vec::new(),
            RpcPrefetcher::Ruby(p) => p.on_prefetch_hit(line),
        }
    }

    /// Prefetches issued so far.
    pub fn issued(&self) -> u64 {
        match self {
            RpcPrefetcher::Region(p) => p.issued,
            RpcPrefetcher::Ruby(p) => p.issued,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stride_repeated_once_issues_degree_lines_ahead() {
        let mut p = MultiStridePrefetcher::new(PrefetcherParams::default());
        assert!(p.on_miss(0x1000).is_empty(), "first miss: a new stream");
        assert!(p.on_miss(0x1040).is_empty(), "one delta: trains");
        assert_eq!(p.on_miss(0x1080), vec![0x10c0, 0x1100, 0x1140, 0x1180]);
        // The next miss along the stride adds only the line beyond.
        assert_eq!(p.on_miss(0x10c0), vec![0x11c0]);
        assert_eq!(p.issued, 5);
    }

    #[test]
    fn streams_in_two_regions_keep_their_own_strides() {
        let mut p = MultiStridePrefetcher::new(PrefetcherParams::default());
        let a = 0x10_0000u64;
        let b = 0x20_0000u64;
        for k in 0..2 {
            p.on_miss(a + k * 0x80);
            p.on_miss(b + k * 0x140);
        }
        assert_eq!(p.on_miss(a + 0x100)[0], a + 0x180);
        assert_eq!(p.on_miss(b + 0x280)[0], b + 0x3c0);
    }

    #[test]
    fn irregular_deltas_issue_nothing_and_retrain() {
        let mut p = MultiStridePrefetcher::new(PrefetcherParams::default());
        for line in [0x0u64, 0x40, 0x100, 0x140, 0x400, 0x480] {
            assert!(p.on_miss(line).is_empty(), "{line:#x}");
        }
        assert_eq!(p.issued, 0);
        // A stream stops at its region's end.
        let mut p = MultiStridePrefetcher::new(PrefetcherParams::default());
        p.on_miss(0xf_ff00);
        p.on_miss(0xf_ff40);
        assert_eq!(p.on_miss(0xf_ff80), vec![0xf_ffc0]);
    }

    #[test]
    fn the_least_recently_used_stream_is_replaced() {
        let mut p = MultiStridePrefetcher::new(PrefetcherParams {
            entries: 2,
            ..Default::default()
        });
        p.on_miss(0x0);
        p.on_miss(0x40);
        p.on_miss(0x10_0000);
        p.on_miss(0x20_0000); // replaces region 0, the least recent
        assert!(p.on_miss(0x80).is_empty(), "region 0 retrains from scratch");
    }

    #[test]
    fn ruby_unit_stride_trains_on_four_repeats_and_runs_one_line_ahead() {
        let mut p = RubyStreamPrefetcher::new(RubyParams::default());
        for line in [0x1000u64, 0x1040, 0x1080, 0x10c0] {
            assert!(p.on_miss(line).is_empty(), "{line:#x}: training");
        }
        // The fourth confirmation of +1 line starts a stream: one line.
        assert_eq!(p.on_miss(0x1100), vec![0x1140]);
        // Demanding the prefetched line extends the stream by one.
        assert_eq!(p.on_prefetch_hit(0x1140), vec![0x1180]);
        assert_eq!(p.on_prefetch_hit(0x1180), vec![0x11c0]);
        // A line no stream prefetched extends nothing.
        assert!(p.on_prefetch_hit(0x9000).is_empty());
        assert_eq!(p.issued, 3);
        // Descending lines train the negative filter the same way.
        let mut p = RubyStreamPrefetcher::new(RubyParams::default());
        for line in [0x2200u64, 0x21c0, 0x2180, 0x2140] {
            assert!(p.on_miss(line).is_empty());
        }
        assert_eq!(p.on_miss(0x2100), vec![0x20c0]);
    }

    #[test]
    fn ruby_streams_and_strides_stay_on_their_page() {
        let mut p = RubyStreamPrefetcher::new(RubyParams::default());
        // +1 line up to the page's last line: no prefetch past it.
        for line in [0xec0u64, 0xf00, 0xf40, 0xf80] {
            assert!(p.on_miss(line).is_empty());
        }
        assert!(p.on_miss(0xfc0).is_empty(), "0x1000 is the next page");
        assert_eq!(p.issued, 0);
        // A non-unit stride (0x100) repeated five times in one page.
        let mut p = RubyStreamPrefetcher::new(RubyParams::default());
        for k in 0..6u64 {
            assert!(p.on_miss(0x4000 + k * 0x100).is_empty(), "k = {k}");
        }
        assert_eq!(p.on_miss(0x4600), vec![0x4700]);
        // The same stride across pages (objects 4 KiB apart) never trains.
        let mut p = RubyStreamPrefetcher::new(RubyParams::default());
        for k in 0..16u64 {
            assert!(p.on_miss(0x10_0000 + k * 0x1040).is_empty());
        }
        assert_eq!(p.issued, 0);
    }
}

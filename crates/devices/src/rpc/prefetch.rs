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
}

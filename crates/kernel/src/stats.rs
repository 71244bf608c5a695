//! Statistics: counters and HdrHistogram percentiles, named by dotted
//! instance path (`system.pcie.tlps_sent`, `system.dma.latency_ns`).
//!
//! Slots are allocated at build time, one per declared [`StatSpec`] of every
//! component and three per link direction, so the hot path is an indexed add.
//!
//! [`StatSpec`]: crate::component::StatSpec

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::component::StatKind;

/// The value of one statistic at the end of (or during) a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum StatValue {
    /// A counter.
    Counter(u64),
    /// A histogram summary.
    Histogram(HistogramSummary),
}

/// Percentiles of a histogram.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistogramSummary {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min: u64,
    /// Mean of the samples.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest sample (P100).
    pub max: u64,
}

/// Every statistic of a run, by dotted path, in sorted order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StatsReport(pub BTreeMap<String, StatValue>);

impl StatsReport {
    /// The counter at `path`, if it is one.
    pub fn counter(&self, path: &str) -> Option<u64> {
        match self.0.get(path) {
            Some(StatValue::Counter(v)) => Some(*v),
            _ => None,
        }
    }
    /// The histogram at `path`, if it is one.
    pub fn histogram(&self, path: &str) -> Option<&HistogramSummary> {
        match self.0.get(path) {
            Some(StatValue::Histogram(h)) => Some(h),
            _ => None,
        }
    }
    /// Flattens to `path -> number`; histograms become `path.count`,
    /// `path.mean`, `path.p50`, … so a DataFrame can hold them.
    pub fn flatten(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for (k, v) in &self.0 {
            match v {
                StatValue::Counter(c) => {
                    out.insert(k.clone(), *c as f64);
                }
                StatValue::Histogram(h) => {
                    for (suffix, x) in [
                        ("count", h.count as f64),
                        ("min", h.min as f64),
                        ("mean", h.mean),
                        ("p50", h.p50 as f64),
                        ("p95", h.p95 as f64),
                        ("p99", h.p99 as f64),
                        ("max", h.max as f64),
                    ] {
                        out.insert(format!("{k}.{suffix}"), x);
                    }
                }
            }
        }
        out
    }
}

/// The statistics of one simulation.
pub struct Stats {
    names: Vec<String>,
    counters: Vec<u64>,
    histograms: Vec<Option<Hist>>,
}

/// A histogram slot: HdrHistogram for percentiles (3 significant digits),
/// plus the exact extremes and sum, which HdrHistogram only keeps rounded.
struct Hist {
    h: Histogram<u64>,
    min: u64,
    max: u64,
    sum: u128,
    /// A run of equal samples not yet in `h` (value, count): latencies of a
    /// steady stream mostly repeat, and one `record_n` per run costs what
    /// one `record` does. Runs go in in the order they started, so `h`
    /// resizes exactly as with one `record` per sample.
    run: (u64, u64),
}

impl Hist {
    /// Puts `n` samples of `value` into `h`.
    fn put(h: &mut Histogram<u64>, value: u64, n: u64) {
        // `record_n` grows an auto-resizing histogram;
        // `saturating_record_n` would clamp to the initial range instead.
        if n > 0 && h.record_n(value, n).is_err() {
            h.saturating_record_n(value, n)
        }
    }
}

impl Default for Stats {
    fn default() -> Self {
        Self::new()
    }
}

impl Stats {
    /// No statistics yet.
    pub fn new() -> Self {
        Stats {
            names: Vec::new(),
            counters: Vec::new(),
            histograms: Vec::new(),
        }
    }
    /// Allocates a slot named `path`; returns its index.
    pub fn register(&mut self, path: String, kind: StatKind) -> usize {
        self.names.push(path);
        self.counters.push(0);
        self.histograms.push(match kind {
            StatKind::Counter => None,
            // 3 significant digits, auto-resizing: exact enough for
            // percentiles of nanosecond latencies across six decades.
            StatKind::Histogram => Some(Hist {
                h: Histogram::new(3).expect("valid sigfig"),
                min: u64::MAX,
                max: 0,
                sum: 0,
                run: (0, 0),
            }),
        });
        self.names.len() - 1
    }
    /// Number of slots allocated so far (the index the next one will get).
    pub fn len_hint(&self) -> usize {
        self.names.len()
    }
    /// Adds `n` to counter `slot`.
    #[inline]
    pub fn add(&mut self, slot: usize, n: u64) {
        self.counters[slot] += n;
    }
    /// Records `value` in histogram `slot`.
    #[inline]
    pub fn record(&mut self, slot: usize, value: u64) {
        match &mut self.histograms[slot] {
            Some(x) => {
                if x.run.0 == value {
                    x.run.1 += 1;
                } else {
                    Hist::put(&mut x.h, x.run.0, x.run.1);
                    x.run = (value, 1);
                }
                x.min = x.min.min(value);
                x.max = x.max.max(value);
                x.sum += value as u128;
            }
            None => panic!("stat {} is a counter, not a histogram", self.names[slot]),
        }
    }
    /// A snapshot of every statistic.
    pub fn report(&self) -> StatsReport {
        self.report_with(&[])
    }
    /// A snapshot of every statistic, with the counters of `overrides`
    /// (`(slot, value)`) taken from there: counters that their owner keeps
    /// elsewhere while it runs (the links' per-direction counters).
    pub(crate) fn report_with(&self, overrides: &[(usize, u64)]) -> StatsReport {
        let mut counters = self.counters.clone();
        for &(slot, value) in overrides {
            counters[slot] = value;
        }
        let mut map = BTreeMap::new();
        for (i, name) in self.names.iter().enumerate() {
            // A histogram with its pending run put in (on a copy: reports
            // are rare, records are not).
            let with_run;
            let hist = match &self.histograms[i] {
                Some(x) if x.run.1 > 0 => {
                    let mut h = x.h.clone();
                    Hist::put(&mut h, x.run.0, x.run.1);
                    with_run = h;
                    Some((x, &with_run))
                }
                Some(x) => Some((x, &x.h)),
                None => None,
            };
            let v = match hist {
                None => StatValue::Counter(counters[i]),
                Some((_, h)) if h.is_empty() => StatValue::Histogram(HistogramSummary {
                    count: 0,
                    min: 0,
                    mean: 0.0,
                    p50: 0,
                    p95: 0,
                    p99: 0,
                    max: 0,
                }),
                Some((x, h)) => StatValue::Histogram(HistogramSummary {
                    count: h.len(),
                    min: x.min,
                    mean: x.sum as f64 / h.len() as f64,
                    // Percentiles are exact to 3 significant digits; clamp
                    // them into the exact range so P100 equals max.
                    p50: h.value_at_quantile(0.50).clamp(x.min, x.max),
                    p95: h.value_at_quantile(0.95).clamp(x.min, x.max),
                    p99: h.value_at_quantile(0.99).clamp(x.min, x.max),
                    max: x.max,
                }),
            };
            map.insert(name.clone(), v);
        }
        StatsReport(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_percentiles() {
        let mut s = Stats::new();
        let c = s.register("sys.a.count".into(), StatKind::Counter);
        let h = s.register("sys.a.lat".into(), StatKind::Histogram);
        s.add(c, 3);
        s.add(c, 4);
        for v in 1..=100 {
            s.record(h, v);
        }
        let r = s.report();
        assert_eq!(r.counter("sys.a.count"), Some(7));
        let hs = r.histogram("sys.a.lat").unwrap();
        assert_eq!(
            (hs.count, hs.min, hs.p50, hs.p99, hs.max),
            (100, 1, 50, 99, 100)
        );
        let flat = r.flatten();
        assert_eq!(flat["sys.a.lat.p95"], 95.0);
        assert_eq!(flat["sys.a.count"], 7.0);
    }

    #[test]
    fn runs_of_equal_samples_report_as_single_records() {
        // Runs (and a pending run at report time, twice) against a plain
        // HdrHistogram fed one sample at a time.
        let samples = [5, 5, 5, 0, 0, 7_000_000, 7_000_000, 5, 3, 3, 3, 3];
        let mut s = Stats::new();
        let h = s.register("sys.a.lat".into(), StatKind::Histogram);
        let mut plain = Histogram::<u64>::new(3).expect("valid sigfig");
        for (k, &v) in samples.iter().enumerate() {
            s.record(h, v);
            plain.record(v).expect("auto-resizing");
            let r = s.report();
            let got = r.histogram("sys.a.lat").expect("a histogram");
            let seen = &samples[..=k];
            assert_eq!(got.count, plain.len());
            assert_eq!(got.min, *seen.iter().min().expect("samples"));
            assert_eq!(got.max, *seen.iter().max().expect("samples"));
            for (q, p) in [(0.5, got.p50), (0.95, got.p95), (0.99, got.p99)] {
                assert_eq!(p, plain.value_at_quantile(q).clamp(got.min, got.max));
            }
        }
    }
}

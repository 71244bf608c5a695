//! What the CXL-NIC's serializer reads and what its RPC prefetcher sees
//! (Cohet §V-B2): for one response per bench, its lines in issue order
//! (`serializer_fetch`), each with its pointer level and the delta from
//! the previous miss, and both prefetcher designs' verdicts on the
//! stream.
//!
//! ```text
//! cargo run --release -q -p ccsim-experiments --example rpc_walk -- [heap] [serializer_fetch] [message]
//! ```
//! heap: recycled (default), size_classes or arena; serializer_fetch:
//! by_pointer (default) or in_order; message: which of the point's ten
//! (default 0).

use ccsim_devices::rpc::prefetch::{
    MultiStridePrefetcher, PrefetcherParams, RubyParams, RubyStreamPrefetcher,
};
use ccsim_experiments::rpc::serializer_reads;
use ccsim_kernel::component::{ParamValue, Params};
use ccsim_platform::Platform;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let heap = args.first().map_or("recycled", String::as_str);
    let fetch = args.get(1).map_or("by_pointer", String::as_str);
    let which: usize = args.get(2).map_or(Ok(0), |s| s.parse())?;
    let platform = Platform::load("cohet")?;
    let mut params = Params::new();
    params.set("heap", ParamValue::Str(heap.into()), "rpc_walk");
    params.set(
        "serializer_fetch",
        ParamValue::Str(fetch.into()),
        "rpc_walk",
    );
    for bench in 0..6 {
        let walks =
            serializer_reads(&platform, bench as f64, &params, 0).map_err(|e| format!("{e:?}"))?;
        let plan = &walks[which.min(walks.len() - 1)];
        let mut level = vec![0usize; plan.len()];
        for (i, op) in plan.iter().enumerate() {
            level[i] = op.after.map_or(0, |j| level[j] + 1);
        }
        let mut region = MultiStridePrefetcher::new(PrefetcherParams::default());
        let mut ruby = RubyStreamPrefetcher::new(RubyParams::default());
        let levels = level.iter().max().map_or(0, |l| l + 1);
        let mut per_level = vec![0usize; levels];
        for &l in &level {
            per_level[l] += 1;
        }
        println!(
            "bench{bench}: {} lines, {levels} pointer levels (lines per level {per_level:?}), heap {heap}, fetch {fetch}",
            plan.len()
        );
        println!("  #   level  line          delta      region-pf  ruby-pf");
        let mut prev: Option<u64> = None;
        for (i, op) in plan.iter().enumerate() {
            let delta = prev.map_or(String::from("-"), |p| {
                format!("{:+}", op.line as i64 - p as i64)
            });
            let a = region.on_miss(op.line);
            let b = ruby.on_miss(op.line);
            println!(
                "  {i:<3} {:<6} {:#012x}  {delta:<10} {:<10} {}",
                level[i],
                op.line,
                if a.is_empty() {
                    String::new()
                } else {
                    format!("{}", a.len())
                },
                if b.is_empty() {
                    String::new()
                } else {
                    format!("{}", b.len())
                },
            );
            prev = Some(op.line);
        }
        println!(
            "  prefetches issued on this stream: region {}, ruby {}\n",
            region.issued, ruby.issued
        );
    }
    Ok(())
}
